"""Anthropic's server-side context editing set so that it moves the start of the cache on every turn (CL301).

`context_management={"edits": [{"type": "clear_tool_uses_20250919", ...}]}` has the API replace the oldest tool
results with a placeholder once the prompt passes a trigger. Clearing invalidates the cached prefix from the first
cleared result on, and Anthropic's guide pairs it with `clear_at_least`: without it, each request past the trigger
may clear just the result or two that fell out of `keep`, so every turn pays a cache write for the whole history
after that point. An edit with `clear_at_least` clears a large step at once, and many turns then read the cache.
"""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from cachelint.check.module import ModuleContext
from cachelint.check.values import dict_entries, string_value

TOOL_RESULT_CLEARING = "clear_tool_uses_"


def clearing_without_a_minimum(ctx: ModuleContext) -> Iterator[cst.Dict]:
    """Each edit of tool-result clearing (a dict literal whose `type` names it) that sets no `clear_at_least`."""
    if TOOL_RESULT_CLEARING not in ctx.source or "clear_at_least" in ctx.source:
        return  # a module that sets a minimum anywhere (a key added later, a dict merged in) is not judged by its literals
    for node in ctx.nodes(cst.Dict):
        entries = dict(dict_entries(node))
        kind = string_value(entries.get("type"))
        if kind is None or not kind.startswith(TOOL_RESULT_CLEARING) or "clear_at_least" in entries:
            continue
        if any(isinstance(e, cst.StarredDictElement) for e in node.elements):
            continue  # {**defaults, "type": ...}: the minimum may come from the spread
        yield node
