"""What-if variants: fixed copies of recorded traffic, to measure what a fix buys.

Each variant rewrites the chat requests of every session in order, always against the session's previous
request *as already fixed*, so one fix carries through the whole session:

- `freeze-volatile`: when a request appends to the previous one and every message or tool of the part they
  share that differs, differs only in volatile values (timestamps, dates, ids, counters;
  `cachelint.diff.classify.volatile_kind`), those take the previous values, so every volatile span keeps its
  first value in the session.
- `sort-tools`: tools in a stable order (by name).
- `keep-history`: a request whose history dropped earlier messages (truncation, summarised-away turns) gets
  the previous request's full history back, followed by what is new.
- `all`: the three together (tools sorted, the history restored, then the volatile values frozen).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

from cachelint.diff.classify import volatile_kind
from cachelint.errors import CachelintError
from cachelint.replay.convert import ChatRequest

Fix = Callable[[ChatRequest | None, ChatRequest], ChatRequest]


def _text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _frozen(before: list[Any], after: list[Any]) -> list[Any] | None:
    """`after` with the volatile values of the part it shares with `before` put back, or None when that part
    differs in anything else (then the lists are not aligned: a truncated or edited history, another tool set)."""
    shared = min(len(before), len(after))
    fixed = list(after)
    for i in range(shared):
        if before[i] == after[i]:
            continue
        if not volatile_kind(_text(before[i]), _text(after[i])):
            return None
        fixed[i] = before[i]
    return fixed


def freeze_volatile(previous: ChatRequest | None, current: ChatRequest) -> ChatRequest:
    """Messages and tools are compared place by place, and only when every difference in the part both requests
    share is a volatile value, and (messages) only when the request appends to the previous one: after a
    truncation the places no longer line up, and "step 2" against "step 1" is not a clock."""
    if previous is None:
        return current
    fixed = copy.copy(current)
    for key in ("tools", "messages"):
        before, after = previous.get(key) or [], current.get(key) or []
        if key == "messages" and len(after) <= len(before):
            continue  # not an append (truncated, compacted, regenerated): the places do not line up
        frozen = _frozen(before, after)
        if frozen is not None:
            fixed[key] = frozen
    return fixed


def _tool_name(tool: Any) -> str:
    if isinstance(tool, dict):
        fn = tool.get("function") if isinstance(tool.get("function"), dict) else tool
        return str(fn.get("name", ""))
    return ""


def sort_tools(previous: ChatRequest | None, current: ChatRequest) -> ChatRequest:
    tools = current.get("tools") or []
    return {**current, "tools": sorted(tools, key=_tool_name)} if tools else current


def _is_subsequence(short: list[Any], long: list[Any]) -> bool:
    it = iter(long)
    return all(any(item == candidate for candidate in it) for item in short)


def keep_history(previous: ChatRequest | None, current: ChatRequest) -> ChatRequest:
    if previous is None:
        return current
    before, after = previous["messages"], current["messages"]
    if after[: len(before)] == before or not before:
        return current
    anchor = next((t for t in range(len(after) - 1, -1, -1) if after[t] == before[-1]), None)
    if anchor is None:
        return current
    lead_b = 1 if before[0].get("role") == "system" else 0
    lead_a = 1 if after and after[0].get("role") == "system" else 0
    kept = after[lead_a : anchor + 1]
    if len(kept) >= len(before) - lead_b or not _is_subsequence(kept, before[lead_b:]):
        return current  # edited, not dropped: not this fix's business
    return {**current, "messages": after[:lead_a] + before[lead_b:] + after[anchor + 1 :]}


def _all(previous: ChatRequest | None, current: ChatRequest) -> ChatRequest:
    """Tools in order, the history restored, then the volatile values frozen (on aligned messages)."""
    return freeze_volatile(previous, keep_history(previous, sort_tools(previous, current)))


VARIANTS: dict[str, Fix] = {
    "freeze-volatile": freeze_volatile,
    "sort-tools": sort_tools,
    "keep-history": keep_history,
    "all": _all,
}


def parse_variants(spec: str | None) -> list[str]:
    if not spec:
        return []
    names = [n.strip() for n in spec.split(",") if n.strip()]
    unknown = [n for n in names if n not in VARIANTS]
    if unknown:
        raise CachelintError(f"unknown what-if variant {unknown[0]!r} (choose from {', '.join(VARIANTS)})")
    return list(dict.fromkeys(names))


def apply(variant: str, sessions: dict[str, list[ChatRequest]]) -> dict[str, list[ChatRequest]]:
    """Every session's requests with the variant's fix applied in order."""
    fix = VARIANTS[variant]
    fixed: dict[str, list[ChatRequest]] = {}
    for session, requests in sessions.items():
        previous: ChatRequest | None = None
        out = []
        for request in requests:
            previous = fix(previous, request)
            out.append(previous)
        fixed[session] = out
    return fixed
