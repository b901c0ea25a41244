"""State observed anew on every turn, rendered into the system prompt ahead of the history (CL104).

Agents that act on an environment (a browser, a game, a shell, a document) often show the model its current state
in the system prompt: `page = browser.snapshot()` then `system = f"{BASE}\\nCurrent URL: {page.url}..."`, sent with
the conversation after it. The state changes with every action, so the system prompt differs on every turn and
none of the history behind it is read from cache. Show the state in the newest message instead.

Recognized in the loop that sends the requests and appends to the history it sends: the system prompt (`system=`,
`instructions=`, or a system message that opens the list) reads a name bound in that loop from a method that reads
the current state (`snapshot`, `get_state`, `screenshot`, `current_url`; not `get_schema` or `describe_tools`, which
describe what stays the same) of an object the loop also acts on (`browser.snapshot()` beside `browser.run(call)`),
or from a value bound in the loop itself (the model's reply, a tool's result). A value computed in the loop from settings alone is the same every turn and
is quiet; a clock or a random value is CL101's, and text looked up for the turn is reported as retrieved.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from cachelint.check.callsites import CallSite
from cachelint.check.class_state import system_and_history
from cachelint.check.history import grows_a_conversation
from cachelint.check.module import ModuleContext, descendants
from cachelint.check.retrieved import retrieval_call
from cachelint.check.values import VOLATILE_NAMES

MAX_HOPS = 3  # names built from names built from the observed state
# a method that reads the environment's current state (`snapshot()`, `get_state()`, `screenshot()`, `current_url()`) ...
OBSERVES = re.compile(r"snapshot|screenshot|observ|state|status|screen|page|dom|html|view|current|render|look|scan|capture|perceive"
                      r"|frame|board|inventory|position|url|title|cwd|diff", re.I)
# ... not one that describes what stays the same (`get_schema()`, `describe_tools()`, `help()`)
DESCRIBES = re.compile(r"schema|describe|description|tool|definition|spec|help|doc|config|setting|capabilit|instruction|prompt", re.I)


@dataclass(frozen=True, slots=True)
class TurnState:
    node: cst.CSTNode  # where the state is observed (the binding in the loop)
    name: str  # the name the system prompt reads
    how: str  # `browser.snapshot()`, or the loop's own value it comes from
    site: CallSite


def turn_state_in_system(ctx: ModuleContext, sites: list[CallSite]) -> Iterator[TurnState]:
    seen: set[int] = set()
    for site in sites:
        if not isinstance(site.node, cst.Call):
            continue
        loops = ctx.loops_around(site.node)
        loop = next((candidate for candidate in loops if grows_a_conversation(ctx, candidate)), None)
        if loop is None:
            continue
        for system, _history in system_and_history(ctx, site):
            found = _observed(ctx, system, loop, 0)
            if found is not None and id(found[0]) not in seen:
                seen.add(id(found[0]))
                yield TurnState(found[0], found[1], found[2], site)


def _observed(ctx: ModuleContext, expr: cst.BaseExpression, loop: cst.CSTNode, hops: int) -> tuple[cst.CSTNode, str, str] | None:
    if hops > MAX_HOPS:
        return None
    for name, binding, value in _bound_in(ctx, expr, loop):
        if value is None or any(isinstance(c, cst.Call) and (ctx.qualified_name_in(c.func, VOLATILE_NAMES) or retrieval_call(c))
                                for c in [value, *descendants(value)]):
            continue  # CL101's clock, or text retrieved for the turn (reported as such)
        how = _acted_on_call(ctx, value, loop) or _from_the_loop(ctx, value, loop, binding)
        if how is not None:
            return ctx.statement_of(binding), name.value, how
        deeper = _observed(ctx, value, loop, hops + 1)
        if deeper is not None:
            return deeper
    return None


def _bound_in(ctx: ModuleContext, expr: cst.BaseExpression, loop: cst.CSTNode) -> Iterator[tuple[cst.Name, cst.CSTNode, cst.BaseExpression | None]]:
    """(name, binding, value) for each name `expr` reads (not the attribute part of `x.attr`) that `loop` binds."""
    for name in [n for n in [expr, *descendants(expr)] if isinstance(n, cst.Name)]:
        parent = ctx.parent(name)
        if isinstance(parent, cst.Attribute) and parent.attr is name:
            continue
        for binding, value in ctx.assigned_values(name):
            if ctx.contains(loop, binding):
                yield name, binding, value


def _acted_on_call(ctx: ModuleContext, value: cst.BaseExpression, loop: cst.CSTNode) -> str | None:
    """`browser.snapshot()` where the loop also calls another method of `browser` (it acts on what it observes)."""
    for call in [n for n in [value, *descendants(value)] if isinstance(n, cst.Call)]:
        func = call.func
        if not isinstance(func, cst.Attribute):
            continue
        receiver = ctx.code(func.value)
        if receiver in ("self", "cls") or receiver.startswith(("self.client", "client")) or not OBSERVES.search(func.attr.value) \
                or DESCRIBES.search(func.attr.value):
            continue
        for other in (n for n in descendants(loop) if isinstance(n, cst.Call) and n is not call):
            if isinstance(other.func, cst.Attribute) and ctx.code(other.func.value) == receiver \
                    and other.func.attr.value != func.attr.value and not ctx.contains(value, other):
                return f"{receiver}.{func.attr.value}()"
    return None


def _from_the_loop(ctx: ModuleContext, value: cst.BaseExpression, loop: cst.CSTNode, own: cst.CSTNode) -> str | None:
    """The value reads a name the loop binds from the model's reply or a tool's result (`obs = env.step(action)`,
    where `action` comes from the reply): it is new on every turn."""
    for name, binding, bound in _bound_in(ctx, value, loop):
        if binding is not own and isinstance(bound, cst.BaseExpression) and any(
                isinstance(n, cst.Attribute) and n.attr.value in REPLY_PARTS for n in [bound, *descendants(bound)]):
            return f"`{name.value}`, from the model's reply in this loop"
    return None


REPLY_PARTS = frozenset({"choices", "content", "output", "tool_calls"})
