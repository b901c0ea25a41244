"""The provider's own explanation of a cache miss, read from a response, and how it compares with cachelint's.

cachelint's diff is an inference from bytes; the provider's diagnosis is the provider's word, coarser (a section
and an estimate of the tokens after the divergence). Both are kept on the row side by side and compared:

- Anthropic (cache diagnostics, beta `cache-diagnosis-2026-04-07`): a request opts in with
  `diagnostics: {"previous_message_id": <id or null>}`; the response (JSON, or the `message_start` event's
  message when streaming) carries `diagnostics`: null (not asked, first turn, or no divergence found),
  `{"cache_miss_reason": null}` (the comparison was still running: inconclusive), or
  `{"cache_miss_reason": {"type": ..., "cache_missed_input_tokens": N}}` with type one of `model_changed`,
  `system_changed`, `tools_changed`, `messages_changed` (those four carry the estimate),
  `previous_message_not_found`, `unavailable`.
- OpenAI Responses (GPT-5.6+): a request sets `prompt_cache_options.comparison_response_id`; the response (JSON, or
  the response inside `response.completed`) carries `prompt_cache_diagnostics` with `type` `cache_hit`,
  `cache_miss` (`reason`, `cache_missed_tokens`, `comparison_reusable_tokens`), `comparison_response_not_found`
  or `unavailable`.

The normalized form (the row's `brk["provider_diagnosis"]`) is
`{"source": "anthropic"|"openai", "type": str|None, "missed_input_tokens": int|None, "pending": bool}`: `type` is
the Anthropic reason type, the OpenAI miss `reason` (or the OpenAI outcome type when it is not a miss), `"none"`
when the provider compared the two requests and found no divergence, None (with `pending` True) while its
comparison was still running. Sources: docs/provider-truth.md.
"""

from __future__ import annotations

import json
from typing import Any

from cachelint.sse import parse_events

Diagnosis = dict[str, Any]

# the provider's word that it compared the two requests and found the prefix unchanged
NO_DIVERGENCE = frozenset({"none", "cache_hit"})
# the provider could not compare (no fingerprint, expired, other workspace, horizon): not evidence either way
INCONCLUSIVE = frozenset({"previous_message_not_found", "comparison_response_not_found"})

# cachelint's causes (cachelint.diff.explain.CAUSES plus the timing causes) -> the provider types that say the same
AGREEING_TYPES: dict[str, frozenset[str]] = {
    "model_changed": frozenset({"model_changed"}),
    "tools_changed": frozenset({"tools_changed"}),
    "system_changed": frozenset({"system_changed", "input_changed"}),
    "messages_changed": frozenset({"messages_changed", "input_changed"}),
    "compaction": frozenset({"messages_changed", "system_changed", "context_compacted", "input_changed"}),
    # request parameters folded into the prefix: Anthropic reports them as `unavailable`, OpenAI names them
    "params_changed": frozenset({
        "unavailable", "text_format_changed", "reasoning_effort_changed", "verbosity_changed",
        "prompt_cache_key_changed", "service_tier_changed",
    }),
    # the bytes did not change: the provider, comparing structure, finds no divergence (or lost the fingerprint,
    # which an expiry also explains)
    "ttl_expired": frozenset({"none", "cache_hit", "previous_message_not_found", "comparison_response_not_found"}),
    "provider_side": frozenset({"none", "cache_hit"}),
}
CACHELINT_BREAKS = frozenset(AGREEING_TYPES)


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _asked(request_body: Any, provider: str) -> bool | None:
    """Whether the request named an earlier response to compare with (None: the request is unknown)."""
    if not isinstance(request_body, dict):
        return None
    if provider == "anthropic":
        asked = request_body.get("diagnostics")
        return isinstance(asked, dict) and isinstance(asked.get("previous_message_id"), str)
    options = request_body.get("prompt_cache_options")
    return isinstance(options, dict) and isinstance(options.get("comparison_response_id"), str)


def from_anthropic(message: dict[str, Any], request_body: Any = None) -> Diagnosis | None:
    """The diagnosis in an Anthropic message object (a JSON response, or `message_start`'s message)."""
    if "diagnostics" not in message:
        return None
    diagnostics = message["diagnostics"]
    if diagnostics is None:
        # null: not asked, the first turn, or no divergence. Only the request tells which
        if _asked(request_body, "anthropic"):
            return {"source": "anthropic", "type": "none", "missed_input_tokens": None, "pending": False}
        return None
    if not isinstance(diagnostics, dict):
        return None
    reason = diagnostics.get("cache_miss_reason")
    if reason is None:
        return {"source": "anthropic", "type": None, "missed_input_tokens": None, "pending": True}
    if not isinstance(reason, dict) or not isinstance(reason.get("type"), str):
        return None
    return {"source": "anthropic", "type": reason["type"],
            "missed_input_tokens": _count(reason.get("cache_missed_input_tokens")), "pending": False}


def from_openai(response: dict[str, Any]) -> Diagnosis | None:
    """The diagnosis in an OpenAI Responses `response` object."""
    diagnostics = response.get("prompt_cache_diagnostics")
    if not isinstance(diagnostics, dict) or not isinstance(diagnostics.get("type"), str):
        return None
    kind = diagnostics["type"]
    if kind == "cache_miss":
        reason = diagnostics.get("reason")
        return {"source": "openai", "type": reason if isinstance(reason, str) else "cache_miss",
                "missed_input_tokens": _count(diagnostics.get("cache_missed_tokens")), "pending": False}
    return {"source": "openai", "type": kind, "missed_input_tokens": None, "pending": False}


def _events(text: str) -> list[dict[str, Any]]:
    out = []
    for event in parse_events(text.encode("utf-8", "replace")):
        try:
            data = json.loads(event.data)
        except (ValueError, RecursionError):
            continue
        if isinstance(data, dict):
            out.append(data)
    return out


def parse_diagnosis(provider: str, response_text: str | bytes | None, request_body: Any = None) -> Diagnosis | None:
    """The provider's diagnosis in a recorded response body (JSON or the raw SSE text), or None when it said
    nothing. `provider` is "anthropic", "openai-responses" (or "openai"); Chat Completions has no diagnostics.
    `request_body` (the parsed request) tells a null Anthropic `diagnostics` that means "no divergence" from one
    that means "not asked" or "first turn"."""
    if not response_text:
        return None
    text = response_text.decode("utf-8", "replace") if isinstance(response_text, bytes) else response_text
    if "diagnostics" not in text:  # both providers' fields name it: most responses are never parsed again here
        return None
    stripped = text.lstrip()
    anthropic = provider == "anthropic"
    if not anthropic and provider not in ("openai-responses", "openai"):
        return None
    if stripped.startswith("{"):
        try:
            body = json.loads(stripped)
        except (ValueError, RecursionError):
            return None
        if not isinstance(body, dict):
            return None
        return from_anthropic(body, request_body) if anthropic else from_openai(body)
    found: Diagnosis | None = None
    for data in _events(text):
        if anthropic and data.get("type") == "message_start" and isinstance(data.get("message"), dict):
            found = from_anthropic(data["message"], request_body) or found
        elif not anthropic and str(data.get("type", "")).startswith("response.") and isinstance(data.get("response"), dict):
            found = from_openai(data["response"]) or found  # response.completed carries the final word
    return found


SECTION_TYPES = {"tools": "tools_changed", "system": "system_changed", "messages": "messages_changed"}


def compare(brk_cause: str | None, diagnosis: Diagnosis | None, section: str | None = None) -> str | None:
    """How cachelint's cause for a request and the provider's diagnosis relate:

    - `agree`: cachelint names a break (or a lost entry: `ttl_expired`, `provider_side`) and the provider's type
      is one that cause maps to (`AGREEING_TYPES`; for a lost entry, the provider's "no divergence"), or names the
      section cachelint's break invalidated first (`section`: a `speed` change is cachelint's `params_changed`
      in section `system`, the provider's `system_changed`).
    - `disagree`: both gave a conclusive answer and they differ (another section; or one says a break and the other
      says the prefix was unchanged).
    - `provider-only`: the provider names a break cachelint did not see (no comparison, or cause "none").
    - `cachelint-only`: cachelint names a break and the provider said nothing, was still comparing, or could not
      compare (`previous_message_not_found`, `comparison_response_not_found`).
    - None: neither names a break (both saying "unchanged" is no miss to compare), or nothing conclusive.
    """
    cachelint_break = brk_cause in CACHELINT_BREAKS
    kind = diagnosis.get("type") if diagnosis else None
    conclusive = bool(diagnosis) and not diagnosis.get("pending") and kind is not None and kind not in INCONCLUSIVE
    if cachelint_break:
        agreeing = AGREEING_TYPES[brk_cause]  # type: ignore[index]
        if kind in agreeing or (kind is not None and kind == SECTION_TYPES.get(section or "")):
            return "agree"
        return "disagree" if conclusive else "cachelint-only"
    if not conclusive:
        return None
    if kind in NO_DIVERGENCE:
        return None
    return "provider-only" if brk_cause in (None, "none") else "disagree"


__all__ = ["AGREEING_TYPES", "Diagnosis", "compare", "from_anthropic", "from_openai", "parse_diagnosis"]
