"""`cachelint report` as text: per session its numbers, every break with when, what, how much and the fix, every
error; then the totals. Everything printed comes from the report dict (cachelint.record.report)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from cachelint.record.report import AGREEMENTS, SOURCE_WORDS, cost_text, money, plural


def render_text(report: dict[str, Any]) -> Iterable[str]:
    for s in report["sessions"]:
        yield from session_lines(s)
    yield from totals_lines(report["totals"])
    if report.get("sources") is not None:
        from cachelint.link import render_sources_text

        yield "where the breaks come from:"
        yield from ("  " + line for line in render_sources_text(report) or ["no break was traced to a line of the source tree"])
    if report.get("ttl_advice"):
        yield from advice_lines(report["ttl_advice"])


def session_lines(s: dict[str, Any]) -> Iterable[str]:
    yield (f"{s['session']}  {s['model']}  {s['started_at']} .. {s['ended_at']}  {plural(s['requests'], 'request')}  "
           f"hit rate {s['hit_rate']:.0%}  read {s['cache_read_tokens']:,}  written {s['cache_write_tokens']:,}  "
           f"fresh {s['input_tokens']:,}  wasted {s['wasted_prefill_tokens']:,} tokens ({money(s['wasted_cost'])})  "
           f"cost {cost_text(s)}")
    extra = []
    if len(s.get("models") or []) > 1:
        extra.append("models " + ", ".join(s["models"]))
    if s.get("ttft_p50_s") is not None:
        extra.append(f"time to first token p50 {s['ttft_p50_s']:.2f} s")
    if s["errors"]:
        extra.append(plural(s["errors"], "error"))
    if s.get("unpriced_requests"):
        extra.append(f"{plural(s['unpriced_requests'], 'request')} without a known price")
    if extra:
        yield "  " + "; ".join(extra)
    for b in s["breaks"]:
        yield from break_lines(b)
    for t in s["turns"]:
        if t["error"] or (t["status"] or 0) >= 400:
            yield f"  error at request {t['request']} ({t['at']}): {t['error'] or 'HTTP ' + str(t['status'])}"


def where(b: dict[str, Any]) -> str:
    if b.get("pointer") is not None:
        return str(b["pointer"])
    return f"header {b['header']}" if b.get("header") else "(the request)"


def break_lines(b: dict[str, Any]) -> Iterable[str]:
    cause = f"{b['cause']}/{b['detail']}" if b.get("detail") else str(b["cause"])
    yield (f"  break at request {b['request']} ({b['at']}): {cause} {b['rule'] or ''} at {where(b)}  "
           f"({b['wasted_prefill_tokens']:,} tokens prefilled again per {SOURCE_WORDS[b['wasted_source']]}, {money(b['wasted_cost'])})")
    if b.get("estimated_reprefilled_tokens") is not None and b["estimated_reprefilled_tokens"] != b["wasted_prefill_tokens"]:
        yield (f"    cachelint's diff estimates {b['estimated_reprefilled_tokens']:,} tokens after the change; "
               f"{SOURCE_WORDS[b['wasted_source']]} counts what was really prefilled again")
    diagnosis = b.get("provider_diagnosis") or {}
    if diagnosis.get("type"):
        missed = diagnosis.get("missed_input_tokens")
        yield (f"    provider's diagnosis: {diagnosis['type']}" + (f", {missed:,} tokens missed" if isinstance(missed, int) else "")
               + (f" ({diagnosis['source']})" if diagnosis.get("source") else "") + (f"; {b['agreement']}" if b.get("agreement") else ""))
    yield f"    {b['explanation']}"
    for d in b.get("divergences") or []:
        if not d.get("first"):
            at = (d.get("location") or {}).get("pointer") or (f"header {d['header']}" if d.get("header") else "")
            yield f"    also: {d['cause']}/{d['detail']} {d.get('rule') or ''} at {at}"
    if b.get("before") or b.get("after"):
        yield f"    before: {_one_line(b.get('before'))}"
        yield f"    after:  {_one_line(b.get('after'))}"
    yield f"    fix: {b['fix']}"
    for src in b.get("source") or []:
        yield f"    source: {src.get('file')}:{src.get('line')} {src.get('rule') or ''} {src.get('message') or ''}".rstrip()


def _one_line(text: Any) -> str:
    return str(text or "").replace("\n", "⏎")


def totals_lines(t: dict[str, Any]) -> Iterable[str]:
    line = (f"total: {plural(t['requests'], 'request')} in {plural(t['sessions'], 'session')}, hit rate {t['hit_rate']:.0%}, "
            f"{plural(t['breaks'], 'break')}, {t['wasted_prefill_tokens']:,} tokens prefilled again ({money(t['wasted_cost'])}), "
            f"cost {cost_text(t)}")
    if t["errors"]:
        line += f", {plural(t['errors'], 'error')}"
    yield line
    agreement = t.get("agreement") or {}
    if any(agreement.get(k) for k in AGREEMENTS):
        yield "  cachelint and the provider: " + ", ".join(f"{agreement[k]} {k}" for k in AGREEMENTS)


def advice_lines(advice: Any) -> Iterable[str]:
    """The cache-lifetime advice (cachelint.record.ttl): the what-ifs over all sessions, each session's verdict."""
    if not isinstance(advice, dict):
        yield f"cache lifetime: {advice}"
        return
    if advice.get("error"):
        yield f"cache lifetime: no advice ({advice['error']})"
        return
    yield "cache lifetime" + (f" (prices as of {advice['prices_as_of']})" if advice.get("prices_as_of") else "") + ":"
    for option, t in (advice.get("total") or {}).items():
        if isinstance(t, dict) and t.get("sessions"):
            yield (f"  {option.replace('_', ' ')} over {plural(t['sessions'], 'session')}: {t.get('rescued_tokens', 0):,} tokens read instead "
                   f"of written again, {money(t.get('saved_cost'))} saved, {money(t.get('extra_write_cost'))} more on writes, "
                   f"net {money(t.get('net_saving'))}")
    for name, s in (advice.get("sessions") or {}).items():
        if isinstance(s, dict) and s.get("verdict"):
            yield f"  {name}: {s['verdict']}" + (f" (net {money(s.get('net_saving'))})" if "net_saving" in s else "")
