"""`cachelint report`: the recorded sessions as data (a JSON contract), which render_text and render_html show.

Every number the HTML and text reports print comes from this dict, so the JSON report is what a test (or a
user's script) checks them against. Times are ISO 8601 in UTC; a cost that cannot be priced is None
("unknown" on screen), never 0.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from cachelint.record.diagnosis import INCONCLUSIVE, NO_DIVERGENCE
from cachelint.record.store import Row, Store
from cachelint.record.ttl import advise

AGREEMENTS = ("agree", "disagree", "provider-only", "cachelint-only")
TIMELINE_BUCKETS = 48
# provider diagnosis types that report no miss (the prefix unchanged) or no comparison: not a break on their own
NOT_A_MISS = NO_DIVERGENCE | INCONCLUSIVE | {"unavailable"}  # provider diagnoses that name no miss


@dataclass(slots=True)
class Filters:
    """What a user narrows a report to: a session (and its side calls), a model, a time range (epoch seconds)."""

    session: str | None = None
    model: str | None = None
    since: float | None = None
    until: float | None = None

    def keeps(self, row: Row) -> bool:
        if self.model and row.model != self.model:
            return False
        if self.since is not None and row.started_at < self.since:
            return False
        return self.until is None or row.started_at < self.until

    def to_json(self) -> dict[str, Any]:
        return {"session": self.session, "model": self.model, "since": iso(self.since), "until": iso(self.until)}


def iso(at: float | None) -> str | None:
    """An epoch time as ISO 8601 UTC to the second (`2026-11-29T10:31:05Z`)."""
    if at is None:
        return None
    return datetime.fromtimestamp(at, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def is_break(row: Row) -> bool:
    """A row to report as a break: cachelint's diff found a cause, or the provider diagnosed a miss itself."""
    brk = row.brk or {}
    return brk.get("cause") not in (None, "none") or provider_miss(brk) is not None


def provider_miss(brk: dict[str, Any]) -> str | None:
    """The type of miss the provider diagnosed itself, or None (no diagnosis, no miss, or no comparison made)."""
    kind = (brk.get("provider_diagnosis") or {}).get("type")
    return kind if kind and kind not in NOT_A_MISS else None


def counted_cause(brk: dict[str, Any]) -> str | None:
    """The cause a break is counted under (metrics, OTLP): cachelint's, else `provider_miss` when only the
    provider saw a miss; None for no break."""
    cause = brk.get("cause")
    if cause not in (None, "none"):
        return str(cause)
    return "provider_miss" if provider_miss(brk) else None


def known_sum(values: Iterable[float | None]) -> float | None:
    """The sum of the known values; None when none is known (an unknown cost is not $0)."""
    known = [v for v in values if v is not None]
    return round(sum(known), 6) if known else None


def session_report(session: str, rows: list[Row]) -> dict[str, Any]:
    prompt = sum(r.prompt_tokens or 0 for r in rows)
    read = sum(r.cache_read_tokens or 0 for r in rows)
    write = sum(r.cache_write_tokens or 0 for r in rows)
    breaks = [_break(i, r, rows[i - 2] if i > 1 else None) for i, r in enumerate(rows, start=1) if is_break(r)]
    priced = [r for r in rows if r.prompt_tokens is not None]
    return {
        "session": session,
        "model": rows[-1].model if rows else None,
        "started_at": iso(rows[0].started_at) if rows else None,
        "ended_at": iso(max(r.started_at + (r.duration or 0.0) for r in rows)) if rows else None,
        "requests": len(rows),
        "hit_rate": round(read / prompt, 4) if prompt else 0.0,
        "cache_read_tokens": read,
        "cache_write_tokens": write,
        "input_tokens": max(0, prompt - read - write),
        "prompt_tokens": prompt,
        "output_tokens": sum(r.output_tokens or 0 for r in rows),
        "wasted_prefill_tokens": sum(r.wasted_prefill_tokens or 0 for r in rows),
        "cost": known_sum(r.cost for r in rows),
        "unpriced_requests": sum(1 for r in priced if r.cost is None),
        "wasted_cost": known_sum(r.wasted_cost for r in rows),
        "kv_bytes_peak": max((r.kv_bytes or 0 for r in rows), default=0),
        "errors": sum(1 for r in rows if _failed(r)),
        "breaks": breaks,
        "agreement": _agreement(breaks),
        "models": sorted({r.model for r in rows if r.model}),
        "ttft_p50_s": _median([r.ttft for r in rows if r.ttft is not None]),
        "turns": [_turn(i, r) for i, r in enumerate(rows, start=1)],
    }


def _failed(r: Row) -> bool:
    return bool(r.error) or (r.status or 0) >= 400


def _turn(i: int, r: Row) -> dict[str, Any]:
    brk = r.brk or {}
    return {
        "request": i, "seq": r.seq, "at": iso(r.started_at), "model": r.model, "prompt_tokens": r.prompt_tokens,
        "cache_read_tokens": r.cache_read_tokens, "cache_write_tokens": r.cache_write_tokens,
        "input_tokens": _fresh(r), "output_tokens": r.output_tokens, "hit_rate": r.hit_rate, "status": r.status,
        "error": error_text(r), "mismatch": r.mismatch, "ttft_s": round(r.ttft, 4) if r.ttft is not None else None,
        "duration_s": round(r.duration, 4) if r.duration is not None else None, "cost": r.cost,
        "wasted_prefill_tokens": r.wasted_prefill_tokens or 0, "findings": r.findings,
        "not_cacheable": brk.get("not_cacheable"), "break": brk.get("cause") if is_break(r) else None,
        "note": note(i, r),
    }


def error_text(r: Row) -> str | None:
    """What went wrong on a request: the recorder's error, else the provider's error body (type: message)."""
    if r.error or (r.status or 0) < 400:
        return r.error
    try:
        body = json.loads(r.response_body or "")
    except ValueError:
        body = None
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        found = ": ".join(str(error[k]) for k in ("type", "message") if error.get(k))
        return f"HTTP {r.status}" + (f" {found}" if found else "")
    return f"HTTP {r.status}"


def _fresh(r: Row) -> int | None:
    if r.prompt_tokens is None:
        return None
    return max(0, r.prompt_tokens - (r.cache_read_tokens or 0) - (r.cache_write_tokens or 0))


def note(i: int, r: Row) -> str:
    """What happened on one request, in words: the note column of the report's table (never empty)."""
    brk = r.brk or {}
    parts = []
    if _failed(r):
        parts.append(f"error: {error_text(r)}")
    if is_break(r):
        cause = brk.get("cause")
        if cause in (None, "none"):
            parts.append(f"provider reports a miss: {(brk.get('provider_diagnosis') or {}).get('type')}")
        else:
            parts.append(f"break: {cause}/{brk.get('detail')}" + (f" ({brk['rule']})" if brk.get("rule") else ""))
    if brk.get("not_cacheable"):
        parts.append(f"not cacheable: {brk['not_cacheable']}")
    if r.mismatch:
        parts.append(f"usage differs from the simulated cache: {r.mismatch}")
    codes = sorted({f.get("code") for f in r.findings or [] if f.get("code")})
    if codes:
        parts.append("findings " + ", ".join(codes))
    if not parts:
        if i == 1:
            parts.append("first request: the prefix is written to the cache")
        elif r.prompt_tokens is None:
            parts.append("no usage reported")
        elif r.cache_read_tokens:
            parts.append("prefix read from cache")
        else:
            parts.append("nothing read from cache")
    return "; ".join(parts)


def _median(values: list[float]) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[len(ordered) // 2], 4)


def _break(i: int, r: Row, previous: Row | None) -> dict[str, Any]:
    brk = r.brk or {}
    explanation, fix_text = words(brk)
    from_usage = r.prompt_tokens is not None and previous is not None and previous.prompt_tokens is not None
    found = {
        "request": i,
        "seq": r.seq,
        "at": iso(r.started_at),
        "model": r.model,
        "cause": brk.get("cause"),
        "detail": brk.get("detail"),
        "rule": brk.get("rule"),
        "pointer": (brk.get("location") or {}).get("pointer"),
        "header": brk.get("header"),
        "section": brk.get("section"),
        # the tokens prefilled again: from the provider's usage where both requests report it, else the estimate
        "reprefilled_tokens": r.wasted_prefill_tokens,
        "wasted_prefill_tokens": r.wasted_prefill_tokens,
        "wasted_source": "provider_usage" if from_usage else "cachelint_estimate",
        # cachelint's diff alone: the previous request's tokens after the change, counted with its tokenizer
        "estimated_reprefilled_tokens": brk.get("reprefilled_tokens"),
        "wasted_cost": r.wasted_cost,
        "before": brk.get("before"),
        "after": brk.get("after"),
        "explanation": explanation,
        "fix": fix_text,
        "divergences": brk.get("divergences") or [],
        "provider_diagnosis": brk.get("provider_diagnosis"),
        "agreement": brk.get("agreement"),
    }
    for key in ("idle_seconds", "ttl_seconds", "source"):
        if brk.get(key) is not None:
            found[key] = brk[key]
    return found


def words(brk: dict[str, Any]) -> tuple[str, str]:
    """The explanation and the fix of a stored break (cachelint's words; the provider's when only it saw a miss)."""
    from cachelint.diff.explain import break_from_json
    from cachelint.diff.render import describe, fix

    cause = brk.get("cause")
    if cause in (None, "none"):
        diagnosis = brk.get("provider_diagnosis") or {}
        missed = diagnosis.get("missed_input_tokens")
        amount = f" of {missed:,} tokens" if isinstance(missed, int) else ""
        return (f"The provider reports a cache miss{amount} ({diagnosis.get('type')}) that cachelint's diff of the two requests "
                "does not show: the prefix was identical, so the entry was lost on the provider's side.",
                "Nothing in the request to change; if it repeats, keep requests within the cache's lifetime and check the provider's status.")
    if cause == "ttl_expired":
        idle, ttl = brk.get("idle_seconds"), brk.get("ttl_seconds")
        gap = f" {idle:,.0f} s passed since the previous request" if isinstance(idle, int | float) else " too long passed since the previous request"
        limit = f", longer than the cache's {ttl:,.0f} s lifetime" if isinstance(ttl, int | float) else ", longer than the cache's lifetime"
        return (f"The prefix was unchanged but{gap}{limit}: the cache entry had expired.",
                "Send requests within the cache's lifetime, or use a longer TTL (Anthropic's 1-hour cache_control ttl) for slow sessions.")
    if cause == "provider_side":
        return ("The prefix was unchanged and within the cache's lifetime, yet the provider read nothing: a miss on the provider's side.",
                "Nothing in the request to change; if it repeats, report it to the provider with the request ids.")
    parsed = break_from_json(brk)
    return describe(parsed), fix(parsed)


def _agreement(breaks: list[dict[str, Any]]) -> dict[str, int]:
    counted = Counter(b["agreement"] for b in breaks if b.get("agreement"))
    return {k: counted.get(k, 0) for k in AGREEMENTS}


def session_names(store: Store, session: str | None) -> list[str]:
    """The sessions to report: all, or the one named and its side calls (`NAME/side-...`). A name is what
    `cachelint report` prints, or what `cachelint sessions` prints for the same conversation (the agent's id)."""
    names = store.sessions()
    if not session:
        return names
    return [n for n in names if n == session or n.startswith(session + "/")]


def build_report(store: Store, session: str | None = None, filters: Filters | None = None) -> dict[str, Any]:
    filters = filters or Filters(session=session)
    sessions: dict[str, list[Row]] = {}
    for name in session_names(store, filters.session or session):
        rows = [r for r in store.rows(name) if filters.keeps(r)]
        if rows:
            sessions[name] = rows
    return report_from_rows(sessions, filters)


def report_from_rows(sessions: dict[str, list[Row]], filters: Filters | None = None) -> dict[str, Any]:
    """The report of sessions already read (name -> rows in time order)."""
    reports = [session_report(name, rows) for name, rows in sessions.items()]
    report: dict[str, Any] = {
        "generated_at": iso(datetime.now(timezone.utc).timestamp()),
        "filters": (filters or Filters()).to_json(),
        "sessions": reports,
        "totals": totals(reports),
        "ranked_breaks": ranked_breaks(reports),
        "timeline": timeline([r for rows in sessions.values() for r in rows]),
    }
    advice = ttl_advice(sessions)
    if advice is not None:
        report["ttl_advice"] = advice
    return report


def totals(reports: list[dict[str, Any]]) -> dict[str, Any]:
    keys = ("requests", "cache_read_tokens", "cache_write_tokens", "input_tokens", "prompt_tokens", "output_tokens",
            "wasted_prefill_tokens", "errors", "unpriced_requests")
    found: dict[str, Any] = {k: sum(r[k] for r in reports) for k in keys}
    found["hit_rate"] = round(found["cache_read_tokens"] / found["prompt_tokens"], 4) if found["prompt_tokens"] else 0.0
    found["cost"] = known_sum(r["cost"] for r in reports)
    found["wasted_cost"] = known_sum(r["wasted_cost"] for r in reports)
    found["breaks"] = sum(len(r["breaks"]) for r in reports)
    found["sessions"] = len(reports)
    found["agreement"] = {k: sum(r["agreement"][k] for r in reports) for k in AGREEMENTS}
    found["started_at"] = min((r["started_at"] for r in reports), default=None)
    found["ended_at"] = max((r["ended_at"] for r in reports), default=None)
    return found


def ranked_breaks(reports: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every break of every session, the costliest first (money, then tokens prefilled again)."""
    found = [{"session": s["session"], "request": b["request"], "at": b["at"], "cause": b["cause"], "detail": b["detail"],
              "rule": b["rule"], "wasted_prefill_tokens": b["wasted_prefill_tokens"], "wasted_cost": b["wasted_cost"]}
             for s in reports for b in s["breaks"]]
    return sorted(found, key=lambda b: (-(b["wasted_cost"] or 0.0), -(b["wasted_prefill_tokens"] or 0), b["at"] or ""))


def timeline(rows: list[Row], buckets: int = TIMELINE_BUCKETS) -> dict[str, Any]:
    """All sessions' tokens and hit rate over time, in at most `buckets` equal slices of the recorded span."""
    if not rows:
        return {"bucket_seconds": 0, "buckets": []}
    first, last = min(r.started_at for r in rows), max(r.started_at for r in rows)
    width = max(1.0, (last - first) / buckets)
    width = float(_round_up(width))
    slots: dict[int, dict[str, Any]] = {}
    for r in rows:
        slot = int((r.started_at - first) // width)
        b = slots.setdefault(slot, {"start": iso(first + slot * width), "requests": 0, "prompt_tokens": 0,
                                    "cache_read_tokens": 0, "cache_write_tokens": 0, "wasted_prefill_tokens": 0, "breaks": 0})
        b["requests"] += 1
        b["prompt_tokens"] += r.prompt_tokens or 0
        b["cache_read_tokens"] += r.cache_read_tokens or 0
        b["cache_write_tokens"] += r.cache_write_tokens or 0
        b["wasted_prefill_tokens"] += r.wasted_prefill_tokens or 0
        b["breaks"] += 1 if is_break(r) else 0
    # every slice from the first to the last, empty ones included, so that the x axis is proportional to time
    ordered = [slots.get(k) or {"start": iso(first + k * width), "requests": 0, "prompt_tokens": 0, "cache_read_tokens": 0,
                                "cache_write_tokens": 0, "wasted_prefill_tokens": 0, "breaks": 0} for k in range(max(slots) + 1)]
    for b in ordered:
        b["input_tokens"] = max(0, b["prompt_tokens"] - b["cache_read_tokens"] - b["cache_write_tokens"])
        b["hit_rate"] = round(b["cache_read_tokens"] / b["prompt_tokens"], 4) if b["prompt_tokens"] else None
    return {"bucket_seconds": width, "buckets": ordered}


def _round_up(seconds: float) -> int:
    """A bucket width a reader can think in: 1, 5, 15, 30 s, 1, 5, 15, 30 min, 1, 3, 6, 12 h, 1 day, or days."""
    for step in (1, 5, 15, 30, 60, 300, 900, 1800, 3600, 10800, 21600, 43200, 86400):
        if seconds <= step:
            return step
    return int(-(-seconds // 86400) * 86400)


def ttl_advice(sessions: dict[str, list[Row]]) -> Any:
    """The cache-lifetime advice (cachelint.record.ttl)."""
    try:
        return advise(sessions)
    except Exception as exc:  # the advice is an extra: a fault in it must not cost the user the report
        return {"error": f"{type(exc).__name__}: {exc}"}


def dumps(report: dict[str, Any]) -> str:
    return json.dumps(report, indent=2, ensure_ascii=False)


SOURCE_WORDS = {"provider_usage": "the provider's usage", "cachelint_estimate": "cachelint's estimate"}


def plural(count: int, noun: str) -> str:
    """`1 break`, `2 breaks`: a count with its noun in the right number."""
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


def cost_text(part: dict[str, Any]) -> str:
    """A session's or the totals' cost: "unknown" when nothing was priced, "≥$x" when some requests had no price."""
    if part["cost"] is not None and part.get("unpriced_requests"):
        return "≥" + money(part["cost"])
    return money(part["cost"])


def money(value: float | None, digits: int = 4) -> str:
    """Dollars, or "unknown" for a cost that could not be priced (never $0)."""
    if value is None:
        return "unknown"
    return f"{'-' if value < 0 else ''}${abs(value):,.{digits}f}"
