"""A conversation gathered from the newest message back, stopped at a message count (CL301).

Chat bots rebuild the conversation from a reply chain on every message: `while msg is not None and len(messages) <
max_messages: messages.append(...); msg = node.parent_msg`, then send `messages[::-1]`. Once the chain is longer than
the cap, each new message pushes the oldest one out: the first message of the prompt changes on every turn, a window
that slides, and nothing the previous request cached is read.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from cachelint.check.module import ModuleContext, descendants

# what a list of a conversation's messages is called
MESSAGES = re.compile(r"(?:^|_)(?:messages|msgs|history|turns|chain|conversation)$", re.I)
# what the cursor of a walk back through a chain steps to
STEPS_BACK = re.compile(r"parent|reference|previous|prev|reply_to|replied|in_reply|before", re.I)


@dataclass(frozen=True, slots=True)
class ChainWindow:
    node: cst.While
    messages: str  # the list the walk fills
    cap: str  # what it stops at


def capped_chain_walks(ctx: ModuleContext) -> Iterator[ChainWindow]:
    for loop in ctx.nodes(cst.While):
        cap = _count_cap(ctx, loop.test)
        if cap is None:
            continue
        listed, limit = cap
        if not MESSAGES.search(listed.split(".")[-1]):
            continue
        body = list(descendants(loop.body))
        fills = any(isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute) and n.func.attr.value in ("append", "insert", "appendleft")
                    and ctx.code(n.func.value) == listed for n in body)
        steps = _cursors(loop.test) & {t.target.value for n in body if isinstance(n, cst.Assign) and _steps_back(ctx, n.value)
                                        for t in n.targets if isinstance(t.target, cst.Name)}
        if fills and steps:
            yield ChainWindow(loop, listed, limit)


def _count_cap(ctx: ModuleContext, test: cst.BaseExpression) -> tuple[str, str] | None:
    """(list, limit) of `len(messages) < max_messages` in the loop's test (joined by `and`)."""
    parts = [test]
    while parts and isinstance(parts[0], cst.BooleanOperation):
        operation = parts.pop(0)
        if not isinstance(operation.operator, cst.And):
            return None
        parts += [operation.left, operation.right]
    from cachelint.check.history import count_bound

    for part in parts:
        found = count_bound(ctx, part, above=False, budgets_too=True)
        if found is not None:
            listed, limit = found
            if isinstance(limit, cst.Integer) and int(limit.value.replace("_", ""), 0) <= 2:
                continue  # (0x10, 1_000: Python's own integer syntax)
            return listed, ctx.code(limit)
    return None


def _cursors(test: cst.BaseExpression) -> set[str]:
    """Names the test checks for a next item: `msg is not None`, `msg != None`, `msg`."""
    found = set()
    for node in (test, *descendants(test)):
        if isinstance(node, cst.Comparison) and isinstance(node.left, cst.Name) and any(
                isinstance(c.comparator, cst.Name) and c.comparator.value == "None" for c in node.comparisons):
            found.add(node.left.value)
        elif isinstance(node, cst.BooleanOperation):
            found |= {side.value for side in (node.left, node.right) if isinstance(side, cst.Name)}
    return found


def _steps_back(ctx: ModuleContext, value: cst.BaseExpression) -> bool:
    """`node.parent_msg`, `msg.reference`, `await fetch(msg.reference.message_id)`: the message before."""
    return any(isinstance(n, cst.Attribute) and STEPS_BACK.search(n.attr.value) for n in (value, *descendants(value)))
