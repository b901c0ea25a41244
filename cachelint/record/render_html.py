"""`cachelint report --format html`: one self-contained page (inline CSS and SVG; no script, no font, no network).

What it shows, top to bottom: the totals; hit rate and tokens over time for all sessions; the breaks ranked by
what they cost; then per session a time chart, its breaks (explanation, fix, the before / after excerpts with
the change highlighted) and a table of every request. Every number comes from the report dict, and the
elements that hold the headline numbers carry `data-key` attributes so a test can read them back.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from datetime import datetime
from typing import Any

from cachelint.record.report import SOURCE_WORDS, cost_text, money, plural

READ, WRITE, FRESH, HIT, BREAK = "#2e7d32", "#f9a825", "#c62828", "#1565c0", "#c62828"

STYLE = """
:root{color-scheme:light}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;padding:1.5em 2em;color:#1b1b1b}
h1{margin:.2em 0}h2{margin:1.6em 0 .4em;border-bottom:1px solid #ddd;padding-bottom:.2em}h3{margin:1em 0 .3em}
.muted{color:#666}.cards{display:flex;flex-wrap:wrap;gap:.8em;margin:1em 0}
.card{border:1px solid #ddd;border-radius:6px;padding:.5em .9em;min-width:9em}.card b{display:block;font-size:1.4em}
.grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(34em,1fr));gap:1.2em;align-items:start}
table{border-collapse:collapse;width:100%}td,th{border:1px solid #ddd;padding:3px 8px;text-align:right;white-space:nowrap}
th{background:#f4f4f4;position:sticky;top:0}.l{text-align:left;white-space:normal}
tr.brk td{background:#fdecea}tr.err td{background:#fff4e5}
code,pre{background:#f4f4f4;padding:1px 4px;border-radius:3px;font:12px ui-monospace,Menlo,Consolas,monospace}
pre{padding:6px 8px;white-space:pre-wrap;word-break:break-all;margin:.2em 0}
mark.del{background:#ffcdd2}mark.ins{background:#c8e6c9}
.brkbox{border-left:4px solid #c62828;padding:.2em .9em;margin:.8em 0;background:#fffafa}
.legend span{margin-right:1.2em}.sw{display:inline-block;width:.8em;height:.8em;margin-right:.3em;vertical-align:middle}
svg text{font:11px system-ui,sans-serif;fill:#444}
"""


def render_html(report: dict[str, Any]) -> str:
    t = report["totals"]
    out = ["<!doctype html><html lang='en'><head><meta charset='utf-8'>",
           "<meta name='viewport' content='width=device-width, initial-scale=1'>",
           "<title>cachelint report</title><style>" + STYLE + "</style></head><body>",
           "<h1>cachelint report</h1>",
           f"<p class='muted'>{_e(t['started_at'] or '')} to {_e(t['ended_at'] or '')} (UTC) · generated {_e(report.get('generated_at') or '')}"
           + _filters(report.get("filters") or {}) + "</p>",
           _cards(t), _legend()]
    out.append("<h2>All sessions over time</h2>")
    out.append(timeline_chart(report.get("timeline") or {}))
    out.append("<h2>Breaks by what they cost</h2>")
    out.append(ranked_table(report.get("ranked_breaks") or []))
    if report.get("sources") is not None:
        out.append("<h2>Where the breaks come from</h2>" + sources_table(report))
    if report.get("ttl_advice"):
        out.append("<h2>Cache lifetime</h2>" + _advice(report["ttl_advice"]))
    for s in report["sessions"]:
        out.append(session_section(s))
    out.append("</body></html>")
    return "\n".join(out)


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _filters(filters: dict[str, Any]) -> str:
    used = [f"{k} {v}" for k, v in filters.items() if v]
    return (" · filtered: " + _e(", ".join(used))) if used else ""


def _card(label: str, key: str, shown: str, raw: Any) -> str:
    return f"<div class='card'><span class='muted'>{_e(label)}</span><b data-key='{key}' data-value='{_e(raw)}'>{_e(shown)}</b></div>"


def _cards(t: dict[str, Any]) -> str:
    agreement = t.get("agreement") or {}
    cards = [
        _card("requests", "requests", f"{t['requests']:,}", t["requests"]),
        _card("sessions", "sessions", f"{t['sessions']:,}", t["sessions"]),
        _card("hit rate", "hit_rate", f"{t['hit_rate']:.1%}", t["hit_rate"]),
        _card("breaks", "breaks", f"{t['breaks']:,}", t["breaks"]),
        _card("tokens prefilled again", "wasted_prefill_tokens", f"{t['wasted_prefill_tokens']:,}", t["wasted_prefill_tokens"]),
        _card("wasted", "wasted_cost", money(t["wasted_cost"]), t["wasted_cost"]),
        _card("cost", "cost", cost_text(t), t["cost"]),
        _card("read from cache", "cache_read_tokens", f"{t['cache_read_tokens']:,}", t["cache_read_tokens"]),
        _card("written to cache", "cache_write_tokens", f"{t['cache_write_tokens']:,}", t["cache_write_tokens"]),
        _card("errors", "errors", f"{t['errors']:,}", t["errors"]),
    ]
    if any(agreement.values()):
        shown = ", ".join(f"{v} {k}" for k, v in agreement.items())
        cards.append(f"<div class='card'><span class='muted'>cachelint vs provider</span><b data-key='agreement'>{_e(shown)}</b></div>")
    return "<div class='cards'>" + "".join(cards) + "</div>"


def _legend() -> str:
    return ("<p class='legend muted'>" + "".join(f"<span><i class='sw' style='background:{c}'></i>{n}</span>" for n, c in
            (("read from cache", READ), ("written to cache", WRITE), ("fresh input", FRESH), ("hit rate (right axis)", HIT)))
            + "<span>▼ a break</span> · hover a bar for its numbers</p>")


# --- charts -----------------------------------------------------------------------------------------------------

W, H, LEFT, RIGHT, TOP, BOTTOM = 960, 220, 64, 48, 18, 34


def _tokens_axis(peak: int) -> tuple[int, list[int]]:
    """A round top for the token axis and its ticks."""
    if peak <= 0:
        return 1, [0, 1]
    magnitude = 10 ** (len(str(peak)) - 1)
    top = next(m * magnitude for m in (1, 2, 4, 8, 10) if m * magnitude >= peak)
    top = int(top)
    return top, [round(top * i / 4) for i in range(5)]


def _k(n: int) -> str:
    return f"{n / 1e6:.1f}M" if n >= 1_000_000 else f"{n / 1e3:.0f}k" if n >= 10_000 else f"{n / 1e3:.1f}k" if n >= 1000 else str(n)


def _svg(points: list[dict[str, Any]], label: str, time_key: str, caption: Callable[[dict[str, Any]], str], x_title: str) -> str:
    """Stacked token bars per point (read / written / fresh), the hit rate as a line, breaks marked, both axes
    labelled, a tooltip (<title>) on every bar."""
    if not points:
        return "<p class='muted'>no requests</p>"
    top, ticks = _tokens_axis(max(p["prompt_tokens"] or 0 for p in points))
    plot_w, plot_h = W - LEFT - RIGHT, H - TOP - BOTTOM
    step = plot_w / len(points)
    bar = max(1.0, min(28.0, step * 0.7))
    parts = [f"<svg viewBox='0 0 {W} {H}' width='100%' role='img' aria-label='{_e(label)}' data-points='{len(points)}'>"]
    for tick in ticks:
        y = TOP + plot_h - plot_h * tick / top
        parts.append(f"<line x1='{LEFT}' x2='{W - RIGHT}' y1='{y:.1f}' y2='{y:.1f}' stroke='#eee'/>"
                     f"<text x='{LEFT - 6}' y='{y + 4:.1f}' text-anchor='end'>{_k(tick)}</text>")
    for pct in (0, 50, 100):
        y = TOP + plot_h - plot_h * pct / 100
        parts.append(f"<text x='{W - RIGHT + 6}' y='{y + 4:.1f}' fill='{HIT}'>{pct}%</text>")
    parts.append(f"<text x='12' y='{TOP + plot_h / 2:.0f}' transform='rotate(-90 12 {TOP + plot_h / 2:.0f})' text-anchor='middle'>prompt tokens</text>")
    segments: list[list[str]] = [[]]
    label_every = max(1, len(points) // 8)
    days = len({(p[time_key] or "")[:10] for p in points}) > 1
    for i, p in enumerate(points):
        x = LEFT + i * step + (step - bar) / 2
        y = TOP + plot_h
        fresh = p["input_tokens"] or 0  # the report computed it (turns and timeline buckets alike)
        tip = (f"{caption(p)}\n{p[time_key]} UTC\nprompt {p['prompt_tokens'] or 0:,} tokens: "
               f"read {p['cache_read_tokens'] or 0:,}, written {p['cache_write_tokens'] or 0:,}, fresh {fresh:,}\n"
               + (f"hit rate {p['hit_rate']:.0%}" if p["hit_rate"] is not None else "no tokens reported"))
        parts.append(f"<g><title>{_e(tip.strip())}</title>")
        for value, color in ((p["cache_read_tokens"] or 0, READ), (p["cache_write_tokens"] or 0, WRITE), (fresh, FRESH)):
            h = plot_h * value / top
            y -= h
            parts.append(f"<rect x='{x:.1f}' y='{y:.1f}' width='{bar:.1f}' height='{h:.1f}' fill='{color}'/>")
        parts.append("</g>")
        cx = x + bar / 2
        if p["hit_rate"] is None:  # no tokens in this slice: the line stops and starts again
            segments.append([])
        else:
            segments[-1].append(f"{cx:.1f},{TOP + plot_h - plot_h * p['hit_rate']:.1f}")
        marks = p.get("breaks") or (1 if p.get("break") else 0)
        if marks:
            parts.append(f"<text x='{cx:.1f}' y='{TOP - 4}' text-anchor='middle' fill='{BREAK}'>▼{marks if marks > 1 else ''}</text>")
        if i % label_every == 0:
            parts.append(f"<text x='{cx:.1f}' y='{H - BOTTOM + 14}' text-anchor='middle'>{_e(_short_time(p[time_key], days))}</text>")
    for line in segments:
        if len(line) > 1:
            parts.append(f"<polyline points='{' '.join(line)}' fill='none' stroke='{HIT}' stroke-width='2'/>")
        for point in line:
            cx, cy = point.split(",")
            parts.append(f"<circle cx='{cx}' cy='{cy}' r='2.5' fill='{HIT}'/>")
    parts.append(f"<text x='{LEFT + plot_w / 2:.0f}' y='{H - 4}' text-anchor='middle'>{_e(x_title)}</text></svg>")
    return "".join(parts)


def _short_time(stamp: str | None, days: bool) -> str:
    """An axis label: the time of day, with the date when the chart spans more than one day."""
    if not stamp:
        return ""
    at = datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ")
    return at.strftime("%m-%d %H:%M" if days else "%H:%M:%S")


def timeline_chart(timeline: dict[str, Any]) -> str:
    buckets = timeline.get("buckets") or []
    width = timeline.get("bucket_seconds") or 0
    chart = _svg(buckets, "tokens and hit rate over time, all sessions", "start",
                 lambda b: f"{plural(b['requests'], 'request')}, {plural(b['breaks'], 'break')} in {width:g} s", "time (UTC)")
    return f"<p class='muted'>each bar: {width:g} s of traffic from all sessions</p>" + chart


def session_chart(s: dict[str, Any]) -> str:
    return _svg(s["turns"], f"tokens and hit rate per request, {s['session']}", "at",
                lambda t: f"request {t['request']}" + (f" · break: {t['break']}" if t.get("break") else ""), "requests in order (time UTC)")


# --- tables and breaks ---------------------------------------------------------------------------------------------

def _anchor(session: str, request: int) -> str:
    return "b-" + "".join(c if c.isalnum() else "-" for c in session) + f"-{request}"


def ranked_table(breaks: list[dict[str, Any]]) -> str:
    if not breaks:
        return "<p>No cache breaks.</p>"
    rows = ["<table id='ranked'><tr><th>#</th><th class='l'>session</th><th>request</th><th>time (UTC)</th><th class='l'>cause</th>"
            "<th>tokens prefilled again</th><th>wasted</th></tr>"]
    for rank, b in enumerate(breaks, start=1):
        rows.append(f"<tr><td>{rank}</td><td class='l'>{_e(b['session'])}</td><td><a href='#{_anchor(b['session'], b['request'])}'>{b['request']}</a></td>"
                    f"<td>{_e(b['at'])}</td><td class='l'>{_e(b['cause'])}/{_e(b['detail'])} {_e(b['rule'] or '')}</td>"
                    f"<td data-key='ranked_wasted_prefill_tokens'>{b['wasted_prefill_tokens']:,}</td><td>{_e(money(b['wasted_cost']))}</td></tr>")
    return "".join(rows) + "</table>"


def place_link(file: Any, line: Any) -> str:
    """file:line as a link that opens the line in the editor (VS Code's `vscode://file/` scheme; the path made
    absolute from where the report is written, as `--source` named it)."""
    import os
    from urllib.parse import quote

    shown = f"{file}:{line}"
    if not file:
        return f"<code>{_e(shown)}</code>"
    target = quote(os.path.abspath(str(file))) + f":{int(line) if str(line).isdigit() else 1}"
    return f"<a class='place' href='vscode://file{_e(target)}'><code>{_e(shown)}</code></a>"


def sources_table(report: dict[str, Any]) -> str:
    """The places of the source tree (`report --source DIR`) ranked by the prefill their breaks wasted."""
    places = report.get("sources") or []
    rows = ["<table id='sources'><tr><th>#</th><th class='l'>place</th><th class='l'>rule</th><th class='l'>what</th>"
            "<th>breaks</th><th>tokens prefilled again</th><th>share</th><th>wasted</th><th class='l'>how sure</th></tr>"]
    for rank, p in enumerate(places, start=1):
        rows.append(f"<tr><td>{rank}</td><td class='l'>{place_link(p.get('file'), p.get('line'))}</td><td class='l'>{_e(p.get('rule') or '')}</td>"
                    f"<td class='l'>{_e(p.get('message') or '')}</td><td>{p['breaks']:,}</td>"
                    f"<td data-key='source_wasted_prefill_tokens'>{p['wasted_prefill_tokens']:,}</td><td>{p.get('share') or 0:.0%}</td>"
                    f"<td>{_e(money(p.get('wasted_cost')))}</td><td class='l'>{_e(p.get('confidence') or '')}</td></tr>")
    table = "".join(rows) + "</table>" if places else "<p>No break was traced to a line of the source tree.</p>"
    for key, words in (("sources_unmatched", "not found in the source tree"), ("sources_not_code", "not a code change (cache expired, provider side)")):
        rest = report.get(key) or {}
        if rest.get("breaks"):
            table += f"<p class='muted'>{plural(rest['breaks'], 'break')} {words}: {rest.get('wasted_prefill_tokens', 0):,} tokens prefilled again.</p>"
    return table


def session_section(s: dict[str, Any]) -> str:
    models = ", ".join(s.get("models") or []) or str(s["model"])
    head = (f"<section class='session' data-session='{_e(s['session'])}'><h2>{_e(s['session'])} <small class='muted'>{_e(models)}</small></h2>"
            f"<p><span class='muted'>{_e(s['started_at'])} to {_e(s['ended_at'])} UTC</span> · "
            f"<span data-key='requests'>{s['requests']:,}</span> requests · hit rate <b data-key='hit_rate' data-value='{s['hit_rate']}'>{s['hit_rate']:.1%}</b> · "
            f"<span data-key='breaks'>{len(s['breaks'])}</span> {'break' if len(s['breaks']) == 1 else 'breaks'} · "
            f"wasted <span data-key='wasted_prefill_tokens'>{s['wasted_prefill_tokens']:,}</span> tokens ({_e(money(s['wasted_cost']))}) · "
            f"cost {_e(cost_text(s))}"
            + (f" · time to first token p50 {s['ttft_p50_s']:.2f} s" if s.get("ttft_p50_s") is not None else "")
            + (f" · {plural(s['errors'], 'error')}" if s["errors"] else "") + "</p>")
    breaks = "".join(break_box(s["session"], b) for b in s["breaks"])
    return (head + session_chart(s) + "<div class='grid'>" + (breaks or "<p>No cache breaks.</p>") + "</div>"
            + "<h3>Requests</h3>" + turns_table(s) + "</section>")


def turns_table(s: dict[str, Any]) -> str:
    rows = ["<table class='turns'><tr><th>#</th><th>time (UTC)</th><th>prompt</th><th>read</th><th>written</th><th>fresh</th>"
            "<th>output</th><th>hit</th><th>TTFT</th><th>cost</th><th class='l'>note</th></tr>"]
    for t in s["turns"]:
        kind = "brk" if t.get("break") else "err" if t["error"] or (t["status"] or 0) >= 400 else ""
        ttft = f"{t['ttft_s']:.2f} s" if t.get("ttft_s") is not None else "-"
        rows.append(f"<tr class='{kind}'><td>{t['request']}</td><td>{_e(t['at'])}</td><td>{_n(t['prompt_tokens'])}</td>"
                    f"<td>{_n(t['cache_read_tokens'])}</td><td>{_n(t['cache_write_tokens'])}</td><td>{_n(t['input_tokens'])}</td>"
                    f"<td>{_n(t['output_tokens'])}</td><td>{'-' if t['hit_rate'] is None else format(t['hit_rate'], '.0%')}</td>"
                    f"<td>{ttft}</td><td>{_e(money(t['cost']))}</td><td class='l'>{_e(t['note'])}</td></tr>")
    return "".join(rows) + "</table>"


def _n(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def highlight(before: str, after: str) -> tuple[str, str]:
    """The two excerpts, escaped, with the part that differs marked (the common start and end left plain)."""
    start = 0
    while start < min(len(before), len(after)) and before[start] == after[start]:
        start += 1
    end = 0
    while end < min(len(before), len(after)) - start and before[-1 - end] == after[-1 - end]:
        end += 1

    def mark(text: str, cls: str) -> str:
        middle = text[start:len(text) - end]
        return _e(text[:start]) + (f"<mark class='{cls}'>{_e(middle)}</mark>" if middle else "") + _e(text[len(text) - end:])

    return mark(before, "del"), mark(after, "ins")


def break_box(session: str, b: dict[str, Any]) -> str:
    cause = f"{b['cause']} / {b['detail']}" if b.get("detail") else str(b["cause"])
    at = f"<code>{_e(b['pointer'])}</code>" if b.get("pointer") is not None else (f"header <code>{_e(b['header'])}</code>" if b.get("header") else "the request")
    parts = [f"<div class='brkbox' id='{_anchor(session, b['request'])}' data-request='{b['request']}'>",
             f"<h3>Break at request {b['request']} <small class='muted'>{_e(b['at'])} UTC</small></h3>",
             f"<p><b>{_e(cause)}</b> {_e(b['rule'] or '')} at {at}: <b data-key='break_wasted_prefill_tokens'>{b['wasted_prefill_tokens']:,}</b> tokens "
             f"prefilled again (per {_e(SOURCE_WORDS[b['wasted_source']])}), {_e(money(b['wasted_cost']))}"]
    if b.get("estimated_reprefilled_tokens") is not None and b["estimated_reprefilled_tokens"] != b["wasted_prefill_tokens"]:
        parts.append(f"; cachelint's diff estimates {b['estimated_reprefilled_tokens']:,} tokens after the change")
    parts.append("</p>")
    diagnosis = b.get("provider_diagnosis") or {}
    if diagnosis.get("type"):
        missed = diagnosis.get("missed_input_tokens")
        parts.append(f"<p>Provider's diagnosis: <b>{_e(diagnosis['type'])}</b>" + (f", {missed:,} tokens missed" if isinstance(missed, int) else "")
                     + (f" · {_e(b['agreement'])}" if b.get("agreement") else "") + "</p>")
    parts.append(f"<p>{_e(b['explanation'])}</p>")
    if b.get("before") or b.get("after"):
        before, after = highlight(str(b.get("before") or ""), str(b.get("after") or ""))
        parts.append(f"<div class='muted'>before</div><pre>{before}</pre><div class='muted'>after</div><pre>{after}</pre>")
    for d in b.get("divergences") or []:
        if not d.get("first"):
            where = (d.get("location") or {}).get("pointer") or d.get("header") or ""
            parts.append(f"<p class='muted'>also: {_e(d['cause'])} / {_e(d['detail'])} at <code>{_e(where)}</code></p>")
    parts.append(f"<p><b>Fix:</b> {_e(b['fix'])}</p>")
    for src in b.get("source") or []:
        parts.append(f"<p class='muted'>source: {place_link(src.get('file'), src.get('line'))} {_e(src.get('rule') or '')} {_e(src.get('message') or '')}</p>")
    return "".join(parts) + "</div>"


def _advice(advice: Any) -> str:
    """The cache-lifetime advice (cachelint.record.ttl) as a table of what-ifs and a list of verdicts."""
    if not isinstance(advice, dict):
        return f"<p>{_e(advice)}</p>"
    if advice.get("error"):
        return f"<p class='muted'>no advice ({_e(advice['error'])})</p>"
    rows = ["<table class='advice'><tr><th class='l'>what if</th><th>sessions</th><th>tokens read instead of written</th>"
            "<th>saved</th><th>more on writes</th><th>net</th></tr>"]
    for option, t in (advice.get("total") or {}).items():
        if isinstance(t, dict) and t.get("sessions"):
            rows.append(f"<tr><td class='l'>{_e(option.replace('_', ' '))}</td><td>{t['sessions']:,}</td><td>{t.get('rescued_tokens', 0):,}</td>"
                        f"<td>{_e(money(t.get('saved_cost')))}</td><td>{_e(money(t.get('extra_write_cost')))}</td><td>{_e(money(t.get('net_saving')))}</td></tr>")
    verdicts = "".join(f"<li>{_e(name)}: {_e(s['verdict'])}</li>" for name, s in (advice.get("sessions") or {}).items()
                       if isinstance(s, dict) and s.get("verdict"))
    notes = "".join(f"<li class='muted'>{_e(n)}</li>" for n in advice.get("notes") or [])
    dated = f"<p class='muted'>prices as of {_e(advice['prices_as_of'])}</p>" if advice.get("prices_as_of") else ""
    return dated + "".join(rows) + "</table>" + (f"<ul>{verdicts}{notes}</ul>" if verdicts or notes else "")
