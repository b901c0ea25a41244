"""The catalog's codes and names: one registry shared by `check`, `diff` and the proxy.

The linter's rule modules (rules/) carry the full docs, examples and fixes for each code; this table is
what every other part needs to name a mistake.
"""

from __future__ import annotations

NAMES: dict[str, str] = {
    "CL101": "volatile-value-in-prefix",
    "CL102": "unsorted-json-in-prefix",
    "CL103": "unordered-iteration-in-prefix",
    "CL104": "per-request-data-in-system-prompt",
    "CL201": "unordered-tools",
    "CL202": "per-request-tool-list",
    "CL301": "rewritten-history",
    "CL401": "param-change-mid-conversation",
    "CL501": "missing-cache-control",
    "CL502": "cache-control-on-volatile-block",
    "CL503": "too-many-cache-breakpoints",
    "CL504": "cache-breakpoint-below-minimum",
    "CL505": "ttl-order",
}

# How `diff` names the mistake behind a break. Details not listed (text_edited, tool_edited, ...) are
# changes cachelint cannot attribute to a known mistake.
_DETAIL_RULES = {
    "volatile_value": "CL101",
    "json_key_order": "CL102",
    "tools_reordered": "CL201",
    "tool_added": "CL202",
    "tool_removed": "CL202",
    "history_truncated": "CL301",
    "message_removed": "CL301",
    "message_edited": "CL301",
}


def rule_for_detail(cause: str, detail: str | None) -> str | None:
    if cause in ("model_changed", "params_changed"):
        return "CL401"
    if cause == "messages_changed" and detail in ("content_shape", "whitespace"):
        return "CL301"  # an earlier message re-serialized differently is rewritten history
    return _DETAIL_RULES.get(detail or "")
