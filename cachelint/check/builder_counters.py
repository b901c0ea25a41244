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
        counters = {p.name.value for p in [*params.params, *params.kwonly_params] if PROGRESS_COUNTER.match(p.name.value)}
        if not counters:
            continue
        for node in descendants(function.body):
            written = None
            if isinstance(node, cst.FormattedStringExpression) and _reads(node.expression, counters):
                written = node
            elif isinstance(node, cst.Arg) and node.keyword is not None and isinstance(ctx.parent(node), cst.Call) \
                    and isinstance(ctx.parent(node).func, cst.Attribute) and ctx.parent(node).func.attr.value == "format" \
                    and _reads(node.value, counters):
                written = node.value
            if written is not None and ctx.enclosing_function(node) is function:
                yield BuilderCounter(written, next(n for n in sorted(counters) if _reads(written, {n})), function.name.value)
                break  # one place a builder: the first count it writes changes the prompt from there on


def _reads(node: cst.CSTNode, names: set[str]) -> bool:
    """The counter itself or an arithmetic on it (`{current_step + 1}`, `{step}/{max_steps}`), not a test on it."""
    if isinstance(node, cst.Name):
        return node.value in names
    if isinstance(node, cst.BinaryOperation):
        return _reads(node.left, names) or _reads(node.right, names)
    if isinstance(node, cst.FormattedStringExpression):
        return _reads(node.expression, names)
    return False
