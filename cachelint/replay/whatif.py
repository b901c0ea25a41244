"""What-if variants: fixed copies of recorded traffic, to measure what a fix buys.

Each variant rewrites the chat requests of every session in order, always against the session's previous
request *as already fixed*, so one fix carries through the whole session:

- `freeze-volatile`: a message or tool that differs from the one at the same place in the previous request only
  in volatile values (timestamps, dates, ids, counters; `cachelint.diff.classify.volatile_kind`) takes the
  previous value, so every volatile span keeps its first value in the session.
- `sort-tools`: tools in a stable order (by name).
- `keep-history`: a request whose history dropped earlier messages (truncation, summarised-away turns) gets
  the previous request's full history back, followed by what is new.
- `all`: the three together.
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


def freeze_volatile(previous: ChatRequest | None, current: ChatRequest) -> ChatRequest:
    if previous is None:
        return current
    fixed = copy.copy(current)
    for key in ("tools", "messages"):
        before, after = previous.get(key) or [], list(current.get(key) or [])
        for i in range(min(len(before), len(after))):
            if before[i] != after[i] and volatile_kind(_text(before[i]), _text(after[i])):
                after[i] = before[i]
        fixed[key] = after
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
    return keep_history(previous, freeze_volatile(previous, sort_tools(previous, current)))


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
