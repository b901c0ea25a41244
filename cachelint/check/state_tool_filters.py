"""Tools narrowed on each step by what the conversation has done so far (CL202).

Agent runtimes with tool rules, skills or states decide which tools the next request offers from the state of the
run: `solver.get_allowed_tool_names(last_function_response=self.last_function_response)` (the tools allowed after
the last call), `filter_tools_by_group_and_state(tools, current_state=request.state)` (a state machine that moves
after each tool call). The tool list then changes between the steps of one conversation, and the tools open the
prefix: every change prefills the whole conversation again.

Found by the call's name, which says it narrows tools (`filter_tools`, `get_allowed_tool_names`,
`visible_tools`), and by what it is given: a value named for the run's state (`state`, `current_state`, the last
function's response, the step, the turn, the history). A filter given only settings, permissions or groups (the
same for every step of a conversation) is not one, nor one run as an object is set up (`__init__`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from cachelint.check.module import ModuleContext, called_name, descendants

# the callee's name narrows a tool list: `filter_tools`, `filter_tools_by_group_and_state`, `get_allowed_tool_names`,
# `visible_tools`, `tools_allowed_for` (not `_filter_tool_parameters`: a tool's own arguments)
NARROWS = re.compile(r"^_?(?:get_|compute_|select_)?(?:filter(?:ed)?|allowed|visible|permitted|available)_tools?(?:_names?)?(?:_(?:by|for)_\w+)?$"
                     r"|^_?(?:get_)?tools?_(?:allowed|visible|permitted)(?:_\w+)?$", re.I)
# what the run has done so far: its state, the last call's result, the step or the turn, the history
RUN_STATE = re.compile(r"(?:^|_)(?:state|last_function_response|last_tool\w*|last_call\w*|previous_tool\w*|tool_call_history|step|"
                       r"turn|iteration|messages|history|called_tools|used_tools)$", re.I)
SETUP = frozenset({"__init__", "__post_init__", "setup", "_setup", "build", "configure"})


@dataclass(frozen=True, slots=True)
class StateFilter:
    node: cst.Call  # the narrowing call
    callee: str  # its name, as written
    reads: str  # the value of the run's state it is given


def state_filtered_tools(ctx: ModuleContext) -> Iterator[StateFilter]:
    for call in ctx.nodes(cst.Call):
        name = called_name(call)
        if not name or NARROWS.search(name) is None:
            continue
        function = ctx.enclosing_function(call)
        if function is None or function.name.value in SETUP or ctx.is_test:
            continue
        reads = _run_state(ctx, call)
        if reads is not None:
            yield StateFilter(_narrowing(ctx, function, call), ctx.code(call.func), reads)


def _narrowing(ctx: ModuleContext, function: cst.FunctionDef, call: cst.Call) -> cst.CSTNode:
    """Where the tool list is narrowed: the comprehension that keeps the tools whose names the call allowed
    (`allowed = solver.get_allowed_tool_names(...)`, then `[f for f in schemas if f["name"] in allowed]`), or the
    call itself when it returns the tools."""
    parent = ctx.parent(call)
    if not (isinstance(parent, cst.Assign) and len(parent.targets) == 1 and isinstance(parent.targets[0].target, cst.Name)):
        return call
    name = parent.targets[0].target.value
    after = ctx.span(call).row
    for node in descendants(function.body):
        if isinstance(node, (cst.ListComp, cst.GeneratorExp)) and ctx.span(node).row > after \
                and any(isinstance(n, cst.Name) and n.value == name for clause in _conditions(node) for n in descendants(clause)):
            return node
    return call


def _conditions(comprehension: cst.ListComp | cst.GeneratorExp) -> list[cst.BaseExpression]:
    found = []
    clause = comprehension.for_in
    while clause is not None:
        found.extend(i.test for i in clause.ifs)
        clause = clause.inner_for_in
    return found


def _run_state(ctx: ModuleContext, call: cst.Call) -> str | None:
    """The first argument (or keyword) that names the run's state: `current_state=request.state`,
    `last_function_response=self.last_function_response`, `getattr(request, "state", None)`."""
    for arg in call.args:
        if arg.keyword is not None and RUN_STATE.search(arg.keyword.value):
            return ctx.code(arg.value)
        for node in (arg.value, *descendants(arg.value)):
            last = node.attr.value if isinstance(node, cst.Attribute) else node.value if isinstance(node, cst.Name) else None
            if last is None and isinstance(node, cst.SimpleString) and isinstance(ctx.parent(node), cst.Arg):
                owner = ctx.parent(ctx.parent(node))
                if isinstance(owner, cst.Call) and called_name(owner) == "getattr":
                    last = node.evaluated_value if isinstance(node.evaluated_value, str) else None
            if last is not None and RUN_STATE.search(last):
                return ctx.code(arg.value)
    return None
