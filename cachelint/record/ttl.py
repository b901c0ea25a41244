"""Cache lifetimes: how long the provider keeps what a request wrote, and what a longer lifetime would have
saved or cost on recorded traffic (the TTL advisor).

Lifetimes (docs/provider-truth.md; providers.md §1.6, §2.1, §2.2):

- Anthropic: 5 minutes by default, 1 hour with `cache_control.ttl: "1h"`, measured from the start of the request
  that wrote or last read the entry (a read refreshes it). Which one applied is read from usage's
  `cache_creation` split first (a 1-hour request silently downgraded to 5 minutes shows up there), else from the
  request's breakpoints.
- OpenAI: in memory, "typically" 5-10 minutes idle and at most 1 hour (the lower end, 5 minutes, is the lifetime
  cachelint relies on); `prompt_cache_retention: "24h"` (the default from gpt-5.5 on) keeps it 24 hours;
  GPT-5.6+ breakpoint entries live at least 30 minutes.

The advisor (`advise`) replays each session's recorded rows in order and prices two what-ifs:

- Anthropic 1-hour TTL: every write becomes a 1-hour write (2x input instead of 1.25x), and every miss that was a
  5-minute expiry after an idle gap of at most an hour becomes a read instead of a write.
- OpenAI extended retention (`prompt_cache_retention: "24h"`): OpenAI documents the same price for both retention
  policies, so it costs nothing more; every miss that was an in-memory expiry after a gap of at most 24 hours
  becomes a cached read. Models that already default to 24h gain nothing. (Extended retention is not eligible for
  Zero Data Retention: the advice says so.)
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from cachelint import pricing
from cachelint.simulate.models import (
    ANTHROPIC_TTL_SECONDS,
    OPENAI_BREAKPOINT_TTL_SECONDS,
    OPENAI_EXTENDED_SECONDS,
    OPENAI_IN_MEMORY_MIN_IDLE_SECONDS,
    openai_default_retention,
    openai_uses_breakpoints,
)

ONE_HOUR = ANTHROPIC_TTL_SECONDS["1h"]
FIVE_MINUTES = ANTHROPIC_TTL_SECONDS["5m"]


# --- lifetimes -----------------------------------------------------------------------------------------------------


def _marker_ttls(body: Any) -> list[str]:
    """The `ttl` of every cache_control marker of an Anthropic request body, in prefix order (tools, system,
    messages), then the top-level one (which lands on the last block)."""
    found: list[str] = []

    def visit(blocks: Any) -> None:
        if isinstance(blocks, list):
            for block in blocks:
                if isinstance(block, dict):
                    marker = block.get("cache_control")
                    if isinstance(marker, dict):
                        found.append("1h" if marker.get("ttl") == "1h" else "5m")
                    if block.get("type") in ("tool_result",) and isinstance(block.get("content"), list):
                        visit(block["content"])

    if not isinstance(body, dict):
        return found
    visit(body.get("tools"))
    visit(body.get("system"))
    for message in body.get("messages") or []:
        if isinstance(message, dict):
            visit(message.get("content"))
    top = body.get("cache_control")
    if isinstance(top, dict):
        found.append("1h" if top.get("ttl") == "1h" else "5m")
    return found


def anthropic_ttl_seconds(body: Any, write_5m: int | None = None, write_1h: int | None = None) -> float:
    """The lifetime of the deepest entry an Anthropic request wrote or read: what the provider reported in
    usage's cache_creation split when it wrote something, else the last breakpoint's `ttl`."""
    if write_5m or write_1h:
        return FIVE_MINUTES if write_5m else ONE_HOUR
    marks = _marker_ttls(body)
    return ANTHROPIC_TTL_SECONDS[marks[-1]] if marks else FIVE_MINUTES


def lost_entry_ttl_seconds(provider: str | None, model: str | None, body: Any, previous: Any, read_now: int,
                           slack: float = 0.0) -> float:
    """The lifetime that matters for a miss: a request that wrote 1-hour entries (tools, system) ahead of 5-minute
    ones (the conversation) keeps the 1-hour part after five minutes idle, so a miss that reaches into that part
    is judged against the hour, one that only lost the tail against five minutes. `previous` is the previous
    request's `Usage`; `read_now` what this request read."""
    if provider != "anthropic":
        return openai_ttl_seconds(model, body)
    w5, w1 = previous.cache_write_5m_tokens, previous.cache_write_1h_tokens
    if w5 and w1:
        one_hour_part = previous.cache_read_tokens + w1
        return ONE_HOUR if read_now < one_hour_part - slack else FIVE_MINUTES
    if not (w5 or w1):
        marks = _marker_ttls(body)
        if "1h" in marks and "5m" in marks:
            return ONE_HOUR if read_now <= slack else FIVE_MINUTES
    return anthropic_ttl_seconds(body, w5, w1)


def openai_ttl_seconds(model: str | None, body: Any) -> float:
    """The shortest lifetime OpenAI may give a prefix of this request."""
    retention = body.get("prompt_cache_retention") if isinstance(body, dict) else None
    if retention is None:
        retention = openai_default_retention(model)
    if retention == "24h":
        return OPENAI_EXTENDED_SECONDS
    if openai_uses_breakpoints(model):
        return OPENAI_BREAKPOINT_TTL_SECONDS
    return OPENAI_IN_MEMORY_MIN_IDLE_SECONDS


def entry_ttl_seconds(provider: str | None, model: str | None, body: Any, write_5m: int | None = None,
                      write_1h: int | None = None) -> float:
    """How long what this request wrote or read stays cached, from the request's start."""
    if provider == "anthropic":
        return anthropic_ttl_seconds(body, write_5m, write_1h)
    return openai_ttl_seconds(model, body)


# --- the advisor ---------------------------------------------------------------------------------------------------


def _rescued_tokens(row: Any, horizon: float) -> int:
    """Tokens a row prefilled again because an entry expired after an idle gap of at most `horizon` seconds (a
    longer lifetime would have kept them), from the row's own break analysis."""
    brk = row.brk if isinstance(getattr(row, "brk", None), dict) else None
    if not brk or brk.get("cause") != "ttl_expired":
        return 0
    idle = brk.get("idle_seconds")
    if not isinstance(idle, (int, float)) or idle > horizon:
        return 0
    lost = brk.get("missed_tokens")
    if not isinstance(lost, int):
        lost = row.wasted_prefill_tokens or 0
    return max(int(lost), 0)


def _money(value: float | None) -> float | None:
    return None if value is None else round(value, 8)


def _anthropic_session(rows: list[Any], table: pricing.PriceTable | None) -> dict[str, Any]:
    writes_5m = rescued = expired = 0
    extra = saved = 0.0
    priced = True
    for row in rows:
        w5 = row.cache_write_5m_tokens
        if w5 is None and row.cache_write_1h_tokens is None:
            w5 = row.cache_write_tokens or 0  # an unsplit write is a 5-minute write
        w5 = w5 or 0
        tokens = _rescued_tokens(row, ONE_HOUR)
        kept = max(w5 - tokens, 0)  # what is still written under the 1-hour TTL
        writes_5m += w5
        rescued += tokens
        expired += 1 if tokens else 0
        price = pricing.lookup(row.model, table)
        if price is None:
            priced = priced and not (w5 or tokens)
            continue
        price = price.band(row.prompt_tokens or 0)
        extra += kept * (price.cache_write_1h - price.cache_write_5m) / pricing.MTOK
        saved += pricing.wasted_prefill_usd(tokens, row.model, table, prompt_tokens=row.prompt_tokens or 0) or 0.0
    return {
        "option": "anthropic_1h_ttl",
        "requests": len(rows),
        "writes_5m_tokens": writes_5m,
        "expired_within_1h": expired,
        "rescued_tokens": rescued,
        "extra_write_cost": _money(extra) if priced else None,
        "saved_cost": _money(saved) if priced else None,
        "net_saving": _money(saved - extra) if priced else None,
    }


def _openai_session(rows: list[Any], table: pricing.PriceTable | None) -> dict[str, Any]:
    rescued = expired = 0
    saved = 0.0
    priced = True
    rest = [row for row in rows if _retention(row) != "24h"]  # each body parsed once
    already = bool(rows) and not rest
    for row in rest:
        tokens = _rescued_tokens(row, OPENAI_EXTENDED_SECONDS)
        rescued += tokens
        expired += 1 if tokens else 0
        cost = pricing.wasted_prefill_usd(tokens, row.model, table, prompt_tokens=row.prompt_tokens or 0)
        if cost is None:
            priced = priced and not tokens
            continue
        saved += cost
    return {
        "option": "openai_extended_retention",
        "requests": len(rows),
        "already_extended": already,
        "expired_within_24h": expired,
        "rescued_tokens": rescued,
        "extra_write_cost": 0.0 if priced else None,  # OpenAI: "the same price for both retention policies"
        "saved_cost": _money(saved) if priced else None,
        "net_saving": _money(saved) if priced else None,
    }


def _retention(row: Any) -> str:
    body = _request_json(row)
    retention = body.get("prompt_cache_retention") if isinstance(body, dict) else None
    return retention if isinstance(retention, str) else openai_default_retention(row.model)


def _request_json(row: Any) -> Any:
    text = getattr(row, "request_body", None)
    if not text:
        return None
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def _verdict(session: dict[str, Any]) -> str:
    net = session["net_saving"]
    if net is None:
        return "unknown: a model of this session has no price"
    if session.get("already_extended"):
        return "already on 24h retention"
    if not session["rescued_tokens"]:
        return "no expiry a longer lifetime would have prevented"
    return "worth it" if net > 0 else "not worth it"


def _total(sessions: Iterable[dict[str, Any]], option: str) -> dict[str, Any]:
    chosen = [s for s in sessions if s["option"] == option]
    total: dict[str, Any] = {"sessions": len(chosen)}
    for key in ("requests", "rescued_tokens"):
        total[key] = sum(s[key] for s in chosen)
    for key in ("extra_write_cost", "saved_cost", "net_saving"):
        values = [s[key] for s in chosen]
        total[key] = None if any(v is None for v in values) else _money(sum(values))
    total["unpriced_sessions"] = sum(1 for s in chosen if s["net_saving"] is None)
    return total


def advise(sessions: dict[str, list[Any]], table: pricing.PriceTable | None = None) -> dict[str, Any]:
    """What a longer cache lifetime would have saved or cost on recorded traffic, per session and in total
    (JSON-able). `sessions` maps a session id to its rows (`cachelint.record.store.Row`), in any order.

    Per session: the option that applies to its provider (`anthropic_1h_ttl` or `openai_extended_retention`), the
    expiries it would have prevented, the tokens read instead of prefilled again, the extra write cost, the
    saving, the net (saving - extra: positive means worth it) and a one-line verdict. Money is None ("unknown")
    when a model of the session has no price; the totals are None if any session's is."""
    out: dict[str, Any] = {}
    for sid, rows in sessions.items():
        ordered = sorted(rows, key=lambda r: (r.seq, r.started_at))
        provider = next((r.provider for r in ordered if r.provider), None)
        if provider is None:
            continue
        if provider == "anthropic":
            report = _anthropic_session(ordered, table)
        else:
            report = _openai_session(ordered, table)
        report["provider"] = provider
        report["models"] = sorted({r.model for r in ordered if r.model})
        report["verdict"] = _verdict(report)
        out[sid] = report
    return {
        "prices_as_of": (table or pricing.BUNDLED).as_of,
        "sessions": out,
        "total": {option: _total(out.values(), option) for option in ("anthropic_1h_ttl", "openai_extended_retention")},
        "notes": [
            "anthropic_1h_ttl: every write billed as a 1-hour write (2x input instead of 1.25x); a miss after an "
            "idle gap of 5 to 60 minutes read instead of written again",
            "openai_extended_retention: prompt_cache_retention \"24h\", the same price as in-memory per OpenAI; a miss "
            "after an in-memory expiry within 24 hours read at the cached price; not eligible for Zero Data Retention",
        ],
    }


__all__ = ["advise", "anthropic_ttl_seconds", "entry_ttl_seconds", "lost_entry_ttl_seconds", "openai_ttl_seconds"]
