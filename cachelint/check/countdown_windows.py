"""A part of each past entry kept only on the newest few, counted down in a walk back (CL301).

Agent harnesses render their history anew on every step and keep the costly parts (images, reasoning, long
observations) on the newest entries only: `needed = self.max_image_history`, then `for event in reversed(events):
if needed > 0 and event.get("image"): needed -= 1 else: event["include_image"] = False`. Once a newer entry
arrives, the oldest one that kept its part loses it, and the prompt changes there: every request after it prefills
the history from that entry on, although nothing was added before it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from cachelint.check.module import ModuleContext, descendants, last_name

# a walk back over a history: `for event in reversed(self._events):`
QUICK = re.compile(r"\bfor\s+\w+\s+in\s+reversed\(\s*[\w.]+\s*\)\s*:")
HISTORY_WORD = re.compile(r"event|message|history|observation|turn|step|trajector|memor|msgs|convo|conversation|transcript", re.I)
EMPTY = frozenset({"None", "False"})


@dataclass(frozen=True, slots=True)
class CountdownWindow:
    node: cst.CSTNode  # the assignment that takes the part off the older entries
    history: str  # what is walked: `self._events`
    part: str  # what they lose: `event["include_image"]`, `event["reasoning"]`


def countdown_windows(ctx: ModuleContext) -> Iterator[CountdownWindow]:
    if not QUICK.search(ctx.source):
        return
    for loop in ctx.nodes(cst.For):
        walked = _reversed_history(loop)
        if walked is None or not isinstance(loop.target, cst.Name) or not _rendered_after(ctx, loop, walked):
            continue
        entry = loop.target.value
        for branch in (n for n in descendants(loop.body) if isinstance(n, cst.If) and isinstance(n.orelse, cst.Else)):
            counter = _counted_down(branch)
            if counter is None:
                continue
            for node in descendants(branch.orelse.body):
                part = _emptied(ctx, node, entry)
                if part is not None:
                    yield CountdownWindow(node, ctx.code(walked), part)
                    break


def _rendered_after(ctx: ModuleContext, walk: cst.For, walked: cst.BaseExpression) -> bool:
    """The function goes on to make messages of the same list and hands them on: a prompt, not a view that folds its
    older items (`message.collapsed = True`) or a save to disk."""
    from cachelint.check.history import messages_made_of

    function = ctx.enclosing_function(walk)
    return function is not None and messages_made_of(ctx, function, ctx.code(walked), besides=walk)


def _reversed_history(loop: cst.For) -> cst.BaseExpression | None:
    """`reversed(self._events)`: the walked list, where it is named for a history."""
    it = loop.iter
    if not (isinstance(it, cst.Call) and isinstance(it.func, cst.Name) and it.func.value == "reversed" and len(it.args) == 1):
        return None
    walked = it.args[0].value
    return walked if HISTORY_WORD.search(last_name(walked) or "") else None


def _counted_down(branch: cst.If) -> str | None:
    """`if needed > 0 and ...:` whose body says `needed -= 1`: a count of the newest entries still to keep."""
    tested = {n.left.value for n in (branch.test, *descendants(branch.test)) if isinstance(n, cst.Comparison)
              and isinstance(n.left, cst.Name) and len(n.comparisons) == 1
              and isinstance(n.comparisons[0].operator, (cst.GreaterThan, cst.NotEqual))
              and isinstance(n.comparisons[0].comparator, cst.Integer) and n.comparisons[0].comparator.value == "0"}
    for node in descendants(branch.body):
        if isinstance(node, cst.AugAssign) and isinstance(node.operator, cst.SubtractAssign) \
                and isinstance(node.target, cst.Name) and node.target.value in tested:
            return node.target.value
    return None


def _emptied(ctx: ModuleContext, node: cst.CSTNode, entry: str) -> str | None:
    """`event["reasoning"] = None`, `event.image = None`, `event["include_text"] = False`: a part of the walked entry
    taken off (or flagged off for the rendering that follows)."""
    if not (isinstance(node, cst.Assign) and len(node.targets) == 1 and isinstance(node.value, cst.Name)
            and node.value.value in EMPTY):
        return None
    target = node.targets[0].target
    holder = target.value if isinstance(target, (cst.Subscript, cst.Attribute)) else None
    if isinstance(holder, cst.Name) and holder.value == entry:
        return ctx.code(target)
    return None
