"""Tools narrowed on each step by what the conversation has done so far (CL202).

Agent runtimes with tool rules, skills or states decide which tools the next request offers from the state of the
run: `solver.get_allowed_tool_names(last_function_response=self.last_function_response)` (the tools allowed after
the last call), `filter_tools_by_group_and_state(tools, current_state=request.state)` (a state machine that moves
after each tool call). The tool list then changes between the steps of one conversation, and the tools open the
prefix: every change prefills the whole conversation again.

Found by the call's name, which says it narrows tools (`filter_tools`, `get_allowed_tool_names`,
`visible_tools`), by what it is given: a value named for the run's state (`state`, `current_state`, the last
function's response, the step, the turn, the history; read by its last name, so `request.state.user` or
`self.settings.state` is not one), and by where its answer goes: the tools handed on (`tools=`, `functions=`, a
returned list). A filter given only settings, permissions or groups, one run as an object is set up (`__init__`,
`setup_tools`, a classmethod), one whose answer only checks a call as it comes in or picks `tool_choice` (the tools
sent stay the same: that is the fix), and one in a test are not reported.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from cachelint.check.module import ModuleContext, bound_name, called_name, comprehension_clauses, descendants

# the callee's name narrows a tool list: `filter_tools`, `filter_tools_by_group_and_state`, `get_allowed_tool_names`,
# `visible_tools`, `tools_allowed_for` (not `_filter_tool_parameters`: a tool's own arguments)
NARROWS = re.compile(r"^_?(?:get_|compute_|select_)?(?:filter(?:ed)?|allowed|visible|permitted|available)_tools?(?:_names?)?(?:_(?:by|for)_\w+)?$"
                     r"|^_?(?:get_)?tools?_(?:allowed|visible|permitted|for_state)(?:_\w+)?$", re.I)
# what the run has done so far: its state, the last call's result, the step or the turn, the history
RUN_STATE = re.compile(r"(?:^|_)(?:state|last_function_response|last_tool\w*|last_call\w*|previous_tool\w*|tool_call_history|step|"
                       r"turn|iteration|messages|history|called_tools|used_tools)$", re.I)
FIXED_STATE = re.compile(r"^(?:initial|default|start|base|config|configured)_", re.I)  # `initial_state`: where a run starts
SETTINGS_OWNER = re.compile(r"(?:^|_)(?:settings|config|configuration|options|opts|env)$", re.I)
SETUP = re.compile(r"__init__|__post_init__|_?(?:setup|init|initialize|configure|build|register)(?:_\w+)?")
# where narrowed tools go out: the keyword a sender or an agent takes them by (not `tool_choice`)
TOOLS_KEYWORD = re.compile(r"^(?:\w+_)?(?:tools|functions|tool_list|tool_schemas|tool_definitions)$")
MAX_HOPS = 4  # names followed from the call's answer to where the tools go
THROUGH = (cst.BooleanOperation, cst.Await)  # `names = solver.allowed(...) or all_names`, `tools = await registry.visible(...)`


@dataclass(frozen=True, slots=True)
class StateFilter:
    node: cst.CSTNode  # where the tools are narrowed
    callee: str  # the narrowing call, as written
    reads: str  # the value of the run's state it is given


def state_filtered_tools(ctx: ModuleContext) -> Iterator[StateFilter]:
    if ctx.is_test:
        return
    for call in ctx.nodes(cst.Call):
        name = called_name(call)
        if not name or NARROWS.search(name) is None:
            continue
        function = ctx.enclosing_function(call)
        if function is None or SETUP.fullmatch(function.name.value) or _made_once(function):
            continue
        reads = _run_state(ctx, call)
        if reads is None:
            continue
        reaching = _names_reaching_tools(ctx, function, call)
        if reaching is not None:
            yield StateFilter(_narrowing(ctx, function, call, reaching), ctx.code(call.func), reads)


def _made_once(function: cst.FunctionDef) -> bool:
    """A classmethod or staticmethod (`from_config`): it makes the object, once."""
    return any(isinstance(d.decorator, cst.Name) and d.decorator.value in ("classmethod", "staticmethod") for d in function.decorators)


def _run_state(ctx: ModuleContext, call: cst.Call) -> str | None:
    """The first argument that is the run's state, by its keyword (`current_state=...`) or by its last name
    (`self.last_function_response`, `getattr(request, "state", None)`); not a setting's (`self.settings.state`), a
    starting point (`initial_state`) or what a state holds besides (`request.state.user`)."""
    for arg in call.args:
        value = arg.value
        last, owner = _last_names(ctx, value)
        if last is None or FIXED_STATE.match(last) or (owner is not None and SETTINGS_OWNER.search(owner)):
            continue
        if RUN_STATE.search(last) or (arg.keyword is not None and RUN_STATE.search(arg.keyword.value)
                                      and not FIXED_STATE.match(arg.keyword.value) and not isinstance(value, (cst.SimpleString, cst.Integer))):
            return ctx.code(value)
    return None


def _last_names(ctx: ModuleContext, value: cst.BaseExpression) -> tuple[str | None, str | None]:
    """(the last name, the one before it) of `a.b.c` (`c`, `b`), of `getattr(request, "state", None)` (`state`,
    `request`), of a name (`step`, None)."""
    if isinstance(value, cst.Call) and called_name(value) == "getattr" and len(value.args) >= 2 \
            and isinstance(value.args[1].value, cst.SimpleString) and isinstance(value.args[1].value.evaluated_value, str):
        owner = value.args[0].value
        return value.args[1].value.evaluated_value, _last_names(ctx, owner)[0]
    if isinstance(value, cst.Attribute):
        inner = value.value
        return value.attr.value, inner.attr.value if isinstance(inner, cst.Attribute) else inner.value if isinstance(inner, cst.Name) else None
    if isinstance(value, cst.Name):
        return value.value, None
    return None, None


def _names_reaching_tools(ctx: ModuleContext, function: cst.FunctionDef, call: cst.Call) -> set[str] | None:
    """The names that carry the call's answer on to where the tools go out (a `tools=` keyword, a list named for tools
    handed to a call, `self.react(question, tools)`, a returned list),
    a few assignments deep; None when it never gets there (it only checks a call, or picks `tool_choice`)."""
    start = bound_name(ctx, call, THROUGH)
    carried = {start} if start is not None else set()
    assigns = [n for n in descendants(function.body) if isinstance(n, cst.Assign) and len(n.targets) == 1
               and isinstance(n.targets[0].target, cst.Name)]
    for _ in range(MAX_HOPS):
        grown = {a.targets[0].target.value for a in assigns  # type: ignore[attr-defined]
                 if _mentions(a.value, carried) or ctx.contains(a.value, call)}
        if grown <= carried:
            break
        carried |= grown
    sinks = [sink for node in descendants(function.body) if (sink := _tools_going_out(node, call)) is not None]
    if any(sink is call or ctx.contains(sink, call) for sink in sinks):
        return carried
    need = {n.value for sink in sinks for n in (sink, *descendants(sink)) if isinstance(n, cst.Name) and n.value in carried}
    if not need:
        return None
    for _ in range(MAX_HOPS):  # back from where the tools go out to the call: the names on that path
        more = {n.value for a in assigns if a.targets[0].target.value in need  # type: ignore[attr-defined]
                for n in descendants(a.value) if isinstance(n, cst.Name) and n.value in carried}
        if more <= need:
            break
        need |= more
    return need


def _tools_going_out(node: cst.CSTNode, call: cst.Call) -> cst.BaseExpression | None:
    """What `node` sends out as tools: a `tools=` keyword's value, a list named for tools handed to a call
    (`self.react(question, tools)`), a returned list (not a request sent with it), or the call's own answer returned."""
    if isinstance(node, cst.Arg):
        if node.keyword is not None:
            return node.value if TOOLS_KEYWORD.match(node.keyword.value) else None
        return node.value if isinstance(node.value, cst.Name) and TOOLS_KEYWORD.match(node.value.value) else None
    if isinstance(node, cst.Return) and node.value is not None and (not isinstance(node.value, (cst.Call, cst.Await)) or node.value is call):
        return node.value
    return None


def _mentions(expr: cst.CSTNode, names: set[str]) -> bool:
    return any(isinstance(n, cst.Name) and n.value in names for n in (expr, *descendants(expr)))


def _narrowing(ctx: ModuleContext, function: cst.FunctionDef, call: cst.Call, reaching: set[str]) -> cst.CSTNode:
    """Where the tool list is narrowed: the comprehension that keeps the tools whose names the call allowed
    (`allowed = solver.get_allowed_tool_names(...)`, then `tools = [f for f in schemas if f["name"] in allowed]`),
    the one whose list goes out before any other; or the call itself when it returns the tools."""
    name = bound_name(ctx, call, THROUGH)
    if name is None:
        return call
    after = ctx.span(call).row
    found = [node for node in descendants(function.body) if isinstance(node, (cst.ListComp, cst.GeneratorExp))
             and ctx.span(node).row > after and any(_mentions(i.test, {name}) for clause in comprehension_clauses(node) for i in clause.ifs)]
    going_out = [node for node in found if bound_name(ctx, node, THROUGH) in reaching - {name}]
    return (going_out or found or [call])[0]
