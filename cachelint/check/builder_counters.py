"""A step or turn counter that a system prompt's builder takes and writes into the prompt (CL101).

`def get_system_prompt(target, current_step=0): ... parts.append(f"Current step: {current_step}")`, called again as
the run goes on (a hook that rebuilds the prompt every few steps, an agent loop that updates its system prompt each
iteration): the system prompt sits ahead of the whole conversation, so each new count changes the prefix and
nothing after it is read from cache. Found by names: a function named for the system prompt or the instructions
it builds (`get_system_prompt`, `update_system_prompt`, `build_instructions`), a parameter named for a counter of
the run's progress (`current_step`, `iteration`, `turn_count`, `remaining_steps`; not `max_steps`), and that
parameter written into text the function builds (an f-string's value, or a `.format(...)` keyword).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from cachelint.check.module import ModuleContext, descendants

# a function named for the system prompt or the instructions it builds
SYSTEM_TEXT_BUILDER = re.compile(r"(?:^|_)(?:system_?(?:prompt|message|msg|instructions?)|sys_?prompt|instructions)(?:$|_)", re.I)
# a counter of the run's progress, by its name
PROGRESS_COUNTER = re.compile(r"^(?:step|step_number|step_num|step_no|step_index|step_idx|step_count|current_step|n_step|"
                              r"iteration|iteration_count|current_iteration|iteration_number|turn|turn_number|turn_count|"
                              r"current_turn|round|round_number|current_round|remaining_steps|steps_remaining|steps_left)$")


@dataclass(frozen=True, slots=True)
class BuilderCounter:
    node: cst.CSTNode  # where the counter is written into the text
    counter: str  # the parameter
    builder: str  # the function


def counters_in_system_builders(ctx: ModuleContext) -> Iterator[BuilderCounter]:
    for function in ctx.nodes(cst.FunctionDef):
        if not SYSTEM_TEXT_BUILDER.search(function.name.value):
            continue
        params = function.params
        counters = {p.name.value for p in [*params.params, *params.kwonly_params] if PROGRESS_COUNTER.match(p.name.value)
                    and _a_number(ctx, p)}
        if not counters or _built_once(ctx, function):
            continue
        for node in descendants(function.body):
            written = None
            if isinstance(node, cst.FormattedStringExpression) and _reads(node.expression, counters):
                written = node
            elif isinstance(node, cst.Arg) and node.keyword is not None and isinstance(ctx.parent(node), cst.Call) \
                    and isinstance(ctx.parent(node).func, cst.Attribute) and ctx.parent(node).func.attr.value == "format" \
                    and _reads(node.value, counters):
                written = node.value
            elif isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Modulo) and _text(node.left) \
                    and any(_reads(n, counters) for n in ([e.value for e in node.right.elements] if isinstance(node.right, cst.Tuple) else [node.right])):
                written = node.right  # "Current step: %d" % current_step
            elif isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "str" and node.args \
                    and _reads(node.args[0].value, counters) and isinstance(ctx.parent(node), cst.BinaryOperation):
                written = node  # "Iteration " + str(iteration)
            if written is not None and ctx.enclosing_function(node) is function:
                named = {n.value for n in [written, *descendants(written)] if isinstance(n, cst.Name)}
                yield BuilderCounter(written, min(counters & named or counters), function.name.value)
                break  # one place a builder: the first count it writes changes the prompt from there on


def _a_number(ctx: ModuleContext, param: cst.Param) -> bool:
    """The parameter is a count: annotated `int` (or `Optional[int]`, `int | None`), or not annotated with a text, a
    mode or another type (`turn: str` is whose turn it is: "white" or "black")."""
    if param.annotation is None:
        return not isinstance(param.default, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString))
    return re.search(r"\bint\b", ctx.code(param.annotation.annotation)) is not None


def _built_once(ctx: ModuleContext, function: cst.FunctionDef) -> bool:
    """Every call of the builder in this module is at the module's top level (`PROMPTS = [build_system_prompt(role,
    step=i + 1) for i, role in enumerate(ROLES)]`): built once per process, the count fixed for every request."""
    calls = ctx.calls_by_name.get(function.name.value, [])
    return bool(calls) and all(ctx.enclosing_function(call) is None for call in calls)


def _text(node: cst.BaseExpression) -> bool:
    return isinstance(node, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString))


def _reads(node: cst.CSTNode, names: set[str]) -> bool:
    """The counter itself or an arithmetic on it (`{current_step + 1}`, `{step}/{max_steps}`), not a test on it."""
    if isinstance(node, cst.Name):
        return node.value in names
    if isinstance(node, cst.BinaryOperation):
        return _reads(node.left, names) or _reads(node.right, names)
    if isinstance(node, cst.FormattedStringExpression):
        return _reads(node.expression, names)
    return False
