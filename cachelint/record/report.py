"""`cachelint report`: sessions from the store as text, JSON (a contract) or one self-contained HTML file."""

from __future__ import annotations

import html
import json
from collections.abc import Iterable
from typing import Any

from cachelint.record.store import Row, Store


def session_report(session: str, rows: list[Row]) -> dict[str, Any]:
    prompt = sum(r.prompt_tokens or 0 for r in rows)
    read = sum(r.cache_read_tokens or 0 for r in rows)
    write = sum(r.cache_write_tokens or 0 for r in rows)
    breaks = [_break(i, r) for i, r in enumerate(rows, start=1) if r.brk and r.brk.get("cause") != "none"]
    return {
        "session": session,
        "model": rows[-1].model if rows else None,
        "requests": len(rows),
        "hit_rate": round(read / prompt, 4) if prompt else 0.0,
        "cache_read_tokens": read,
        "cache_write_tokens": write,
        "input_tokens": max(0, prompt - read - write),
        "prompt_tokens": prompt,
        "output_tokens": sum(r.output_tokens or 0 for r in rows),
        "wasted_prefill_tokens": sum(r.wasted_prefill_tokens or 0 for r in rows),
        "cost": round(sum(r.cost or 0.0 for r in rows), 6),
        "wasted_cost": round(sum(r.wasted_cost or 0.0 for r in rows), 6),
        "kv_bytes_peak": max((r.kv_bytes or 0 for r in rows), default=0),
        "errors": sum(1 for r in rows if r.error or (r.status or 0) >= 400),
        "breaks": breaks,
        "models": sorted({r.model for r in rows if r.model}),
        "ttft_p50_s": _median([r.ttft for r in rows if r.ttft is not None]),
        "turns": [
            {"request": i, "model": r.model, "prompt_tokens": r.prompt_tokens, "cache_read_tokens": r.cache_read_tokens,
             "cache_write_tokens": r.cache_write_tokens, "hit_rate": r.hit_rate, "status": r.status, "error": r.error,
             "mismatch": r.mismatch, "ttft_s": round(r.ttft, 4) if r.ttft is not None else None, "findings": r.findings,
             "not_cacheable": (r.brk or {}).get("not_cacheable")}
            for i, r in enumerate(rows, start=1)
        ],
    }


def _median(values: list[float]) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[len(ordered) // 2], 4)


def _break(i: int, r: Row) -> dict[str, Any]:
    from cachelint.diff.explain import break_from_json
    from cachelint.diff.render import describe, fix

    brk = r.brk or {}
    words = break_from_json(brk)
    return {
        "request": i,
        "seq": r.seq,
        "cause": brk["cause"],
        "detail": brk.get("detail"),
        "rule": brk.get("rule"),
        "pointer": (brk.get("location") or {}).get("pointer"),
        "header": brk.get("header"),
        "reprefilled_tokens": r.wasted_prefill_tokens,
        "before": brk.get("before"),
        "after": brk.get("after"),
        "explanation": describe(words),
        "fix": fix(words),
        "divergences": brk.get("divergences") or [],
    }


def session_names(store: Store, session: str | None) -> list[str]:
    """The sessions to report: all, or the one named and its side calls (`NAME/side-...`). A name is what
    `cachelint report` prints, or what `cachelint sessions` prints for the same conversation (the agent's id)."""
    names = store.sessions()
    if not session:
        return names
    return [n for n in names if n == session or n.startswith(session + "/")]


def build_report(store: Store, session: str | None = None) -> dict[str, Any]:
    sessions = session_names(store, session)
    reports = []
    for name in sessions:
        rows = list(store.rows(name))
        if rows:
            reports.append(session_report(name, rows))
    keys = ("requests", "cache_read_tokens", "cache_write_tokens", "input_tokens", "prompt_tokens", "output_tokens", "wasted_prefill_tokens", "errors")
    totals: dict[str, Any] = {k: sum(r[k] for r in reports) for k in keys}
    totals["hit_rate"] = round(totals["cache_read_tokens"] / totals["prompt_tokens"], 4) if totals["prompt_tokens"] else 0.0
    totals["cost"] = round(sum(r["cost"] for r in reports), 6)
    totals["wasted_cost"] = round(sum(r["wasted_cost"] for r in reports), 6)
    totals["breaks"] = sum(len(r["breaks"]) for r in reports)
    return {"sessions": reports, "totals": totals}


def render_text(report: dict[str, Any]) -> Iterable[str]:
    for s in report["sessions"]:
        yield (f"{s['session']}  {s['model']}  {_n(s['requests'], 'request')}  hit rate {s['hit_rate']:.0%}  read {s['cache_read_tokens']:,}  "
               f"written {s['cache_write_tokens']:,}  fresh {s['input_tokens']:,}  wasted {s['wasted_prefill_tokens']:,} tokens (${s['wasted_cost']:.4f})")
        extra = []
        if len(s.get("models") or []) > 1:
            extra.append("models " + ", ".join(s["models"]))
        if s.get("ttft_p50_s") is not None:
            extra.append(f"time to first token p50 {s['ttft_p50_s']:.2f} s")
        if s["errors"]:
            extra.append(f"{s['errors']} errors")
        if extra:
            yield "  " + "; ".join(extra)
        for b in s["breaks"]:
            where = b["pointer"] if b["pointer"] is not None else (f"header {b['header']}" if b.get("header") else "(the request)")
            yield f"  break at request {b['request']}: {b['cause']}/{b['detail']} {b['rule'] or ''} at {where}  ({b['reprefilled_tokens']:,} tokens prefilled again)"
            yield f"    {b['explanation']}"
            others = [d for d in b.get("divergences") or [] if not d.get("first")]
            for d in others:
                at = (d.get("location") or {}).get("pointer") or (f"header {d['header']}" if d.get("header") else "")
                yield f"    also: {d['cause']}/{d['detail']} {d.get('rule') or ''} at {at}"
            yield f"    fix: {b['fix']}"
        for t in s["turns"]:
            if t["error"] or (t["status"] or 0) >= 400:
                yield f"  error at request {t['request']}: status {t['status']}, {t['error'] or 'HTTP error'}"
    t = report["totals"]
    yield (f"total: {_n(t['requests'], 'request')}, hit rate {t['hit_rate']:.0%}, {_n(t['breaks'], 'break')}, {t['wasted_prefill_tokens']:,} tokens "
           f"prefilled again (${t['wasted_cost']:.4f}), cost ${t['cost']:.4f}")


def _bars(turns: list[dict[str, Any]], breaks: set[int]) -> str:
    """Stacked bars (read / written / fresh) per request, with break markers; inline SVG, no scripts."""
    width, height, pad = 640, 180, 24
    peak = max((t["prompt_tokens"] or 0 for t in turns), default=0) or 1
    step = (width - 2 * pad) / max(1, len(turns))
    parts = [f'<svg viewBox="0 0 {width} {height + 30}" width="100%" role="img" aria-label="tokens per request">']
    for i, t in enumerate(turns):
        x = pad + i * step
        y = height
        for value, color in ((t["cache_read_tokens"] or 0, "#2e7d32"), (t["cache_write_tokens"] or 0, "#f9a825"),
                             (max(0, (t["prompt_tokens"] or 0) - (t["cache_read_tokens"] or 0) - (t["cache_write_tokens"] or 0)), "#c62828")):
            h = (height - pad) * value / peak
            y -= h
            parts.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{max(1.0, step * 0.8):.1f}" height="{h:.1f}" fill="{color}"/>')
        if t["request"] in breaks:
            parts.append(f'<text x="{x:.1f}" y="{pad - 6}" font-size="12" fill="#c62828">▼</text>')
        parts.append(f'<text x="{x:.1f}" y="{height + 16}" font-size="10">{t["request"]}</text>')
    parts.append("</svg>")
    return "".join(parts)


def render_html(report: dict[str, Any]) -> str:
    e = html.escape
    t = report["totals"]
    out = [
        "<!doctype html><html><head><meta charset='utf-8'><title>cachelint report</title>",
        "<style>body{font:14px system-ui,sans-serif;margin:2em;max-width:60em}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}th{background:#f4f4f4}.l{text-align:left}"
        "code{background:#f4f4f4;padding:1px 3px}.brk{border-left:4px solid #c62828;padding-left:8px;margin:8px 0}</style></head><body>",
        "<h1>cachelint report</h1>",
        f"<p>{_n(t['requests'], 'request')}, hit rate <b>{t['hit_rate']:.0%}</b>, {_n(t['breaks'], 'break')}, "
        f"{t['wasted_prefill_tokens']:,} tokens prefilled again (${t['wasted_cost']:.4f}), cost ${t['cost']:.4f}.</p>",
        "<p>Bars per request: <span style='color:#2e7d32'>read from cache</span>, <span style='color:#f9a825'>written</span>, "
        "<span style='color:#c62828'>fresh</span>; ▼ marks a break.</p>",
    ]
    for s in report["sessions"]:
        out.append(f"<h2>{e(s['session'])} <small>{e(str(s['model']))}</small></h2>")
        out.append(f"<p>{_n(s['requests'], 'request')}, hit rate <b>{s['hit_rate']:.0%}</b>, wasted {s['wasted_prefill_tokens']:,} tokens (${s['wasted_cost']:.4f})</p>")
        out.append(_bars(s["turns"], {b["request"] for b in s["breaks"]}))
        out.append("<table><tr><th>#</th><th>prompt</th><th>read</th><th>written</th><th>hit</th><th class='l'>note</th></tr>")
        for turn in s["turns"]:
            note = turn["error"] or turn["mismatch"] or ""
            out.append(f"<tr><td>{turn['request']}</td><td>{turn['prompt_tokens'] or 0:,}</td><td>{turn['cache_read_tokens'] or 0:,}</td>"
                       f"<td>{turn['cache_write_tokens'] or 0:,}</td><td>{(turn['hit_rate'] or 0):.0%}</td><td class='l'>{e(str(note))}</td></tr>")
        out.append("</table>")
        for b in s["breaks"]:
            out.append(f"<div class='brk'><b>Break at request {b['request']}</b>: {e(b['cause'])} / {e(str(b['detail']))} "
                       f"{e(b['rule'] or '')} at <code>{e(str(b['pointer']))}</code>, {b['reprefilled_tokens']:,} tokens prefilled again"
                       f"<br>{e(b['explanation'])}"
                       + "".join(f"<br>also: {e(str(d['cause']))} / {e(str(d['detail']))} at <code>{e(str((d.get('location') or {}).get('pointer') or d.get('header') or ''))}</code>"
                                 for d in b.get("divergences") or [] if not d.get("first"))
                       + f"<br>fix: {e(b['fix'])}"
                       f"<br>before: <code>{e(str(b['before']))}</code><br>after: <code>{e(str(b['after']))}</code></div>")
    out.append("</body></html>")
    return "\n".join(out)


def dumps(report: dict[str, Any]) -> str:
    return json.dumps(report, indent=2, ensure_ascii=False)


def _n(count: int, noun: str) -> str:
    """`1 break`, `2 breaks`: a count with its noun in the right number."""
    return f"{count:,} {noun}{'' if count == 1 else 's'}"
