"""A history kept to the messages younger than a span of time (CL301).

Chat bots rebuild the conversation from the platform on every message and drop what is older than a day:
`for m in past_messages: if time.time() - float(m["ts"]) < 86400: context.append(m)`. As time passes, the oldest
message falls out and the first message of the prompt changes, so a request after that reads nothing of the cache
the previous one wrote: a window that slides with the clock instead of with the turn count.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from cachelint.check.module import ModuleContext, descendants, last_name

CLOCKS = frozenset({"time.time", "datetime.datetime.now", "datetime.datetime.utcnow", "time.monotonic"})
# a list of a conversation's messages, as a platform or a store gives them
MESSAGES_NAME = re.compile(r"messages|history|replies|conversation|turns|chat|msgs", re.I)


@dataclass(frozen=True, slots=True)
class AgeWindow:
    node: cst.CSTNode  # the loop or comprehension that keeps the young messages
    history: str  # what it walks
    kept: str  # the list it keeps them in


def age_windows(ctx: ModuleContext) -> Iterator[AgeWindow]:
    if not any(word in ctx.source for word in ("time()", "now()", "utcnow()", "monotonic()")):
        return
    for loop in ctx.nodes(cst.For):
        walked = last_name(loop.iter) or ""
        if not MESSAGES_NAME.search(walked) or not isinstance(loop.target, cst.Name):
            continue
        element = loop.target.value
        for branch in (n for n in descendants(loop.body) if isinstance(n, cst.If)):
            if not _age_test(ctx, branch.test, loop):
                continue
            kept = _appended(branch.body, element)
            if kept is not None and _passed_on(ctx, loop, kept):
                yield AgeWindow(loop, ctx.code(loop.iter), kept)
                break
    for comp in ctx.nodes(cst.ListComp):
        walked = last_name(comp.for_in.iter) or ""
        holder = ctx.parent(comp)
        if MESSAGES_NAME.search(walked) and any(_age_test(ctx, test.test, comp) for test in comp.for_in.ifs) \
                and isinstance(holder, cst.Assign):
            yield AgeWindow(comp, ctx.code(comp.for_in.iter), ctx.code(holder.targets[0].target))


def _age_test(ctx: ModuleContext, test: cst.BaseExpression, scope: cst.CSTNode) -> bool:
    """`time.time() - float(m["ts"]) < 86400` (or `now - ts <= window`, with `now` read from a clock in the same
    function): the age of the message against a span of time, true for the young ones."""
    for comparison in (n for n in (test, *descendants(test)) if isinstance(n, cst.Comparison)):
        if len(comparison.comparisons) != 1:
            continue
        operator = comparison.comparisons[0].operator
        left, right = comparison.left, comparison.comparisons[0].comparator
        if isinstance(operator, (cst.LessThan, cst.LessThanEqual)) and _age(ctx, left, scope):
            return True
        if isinstance(operator, (cst.GreaterThan, cst.GreaterThanEqual)) and _age(ctx, right, scope):
            return True
    return False


def _age(ctx: ModuleContext, expr: cst.BaseExpression, scope: cst.CSTNode, depth: int = 0) -> bool:
    """`clock() - stamp`, where the clock is a call or a name the function bound to one; or a name bound to such an
    age in the loop (`seconds = time.time() - float(m["ts"])`, then `if seconds < 86400:`)."""
    if isinstance(expr, cst.Name) and depth == 0:
        return any(value is not None and ctx.contains(scope, binding) and _age(ctx, value, scope, 1)
                   for binding, value in ctx.assigned_values(expr))
    while isinstance(expr, cst.Call) and expr.args and last_name(expr.func) in ("abs", "float", "int"):
        expr = expr.args[0].value
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "total_seconds":
        expr = expr.func.value
    if not (isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Subtract)):
        return False
    return _clock(ctx, expr.left)


def _clock(ctx: ModuleContext, expr: cst.BaseExpression) -> bool:
    if isinstance(expr, cst.Call):
        return ctx.qualified_name_in(expr.func, set(CLOCKS)) is not None
    if isinstance(expr, cst.Name):
        return any(value is not None and isinstance(value, cst.Call) and ctx.qualified_name_in(value.func, set(CLOCKS)) is not None
                   for _, value in ctx.assigned_values(expr))
    return False


def _passed_on(ctx: ModuleContext, loop: cst.For, kept: str) -> bool:
    """The kept messages go on after the loop (turned into messages, returned, handed to a call), not only counted
    (`if len(recent) > 5:` in a rate limiter)."""
    from cachelint.check.history import handed_on

    function = ctx.enclosing_function(loop)
    return function is not None and handed_on(ctx, descendants(function.body), {kept}, ctx.span(loop).row, outside=loop, comprehended=True)


def _appended(body: cst.CSTNode, element: str) -> str | None:
    for node in descendants(body):
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "append" and node.args \
                and isinstance(node.args[0].value, cst.Name) and node.args[0].value.value == element:
            return last_name(node.func.value) or "a list"
    return None
