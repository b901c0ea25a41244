"""The session sweep as one self-contained HTML page: the concurrency cliff (hit rate and TTFT p99 against the
number of concurrent sessions) beside `cachelint kv`'s prediction. Inline SVG and CSS, no script, no network.

It is drawn from the sweep's JSON (`SweepResult.to_json()`), so a saved JSON renders the same page."""

from __future__ import annotations

import html
from typing import Any

WIDTH, HEIGHT = 860, 360
LEFT, RIGHT, TOP, BOTTOM = 64, 72, 24, 48
STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:24px;color:#1b1f24;max-width:1100px}
h1{font-size:22px;margin:0 0 4px} .muted{color:#57606a}
table{border-collapse:collapse;margin-top:16px;width:100%} th,td{padding:4px 10px;border-bottom:1px solid #d0d7de;text-align:right}
th.l,td.l{text-align:left} tr.past td{color:#a40e26}
svg text{font:12px system-ui,sans-serif;fill:#57606a}
.hit{stroke:#0969da;stroke-width:2.5;fill:none} .sim{stroke:#8250df;stroke-width:1.5;fill:none;stroke-dasharray:5 4}
.p99{fill:#fb8f44;opacity:.55} .kv{stroke:#1a7f37;stroke-width:2;stroke-dasharray:6 4} .knee{stroke:#a40e26;stroke-width:2}
.grid{stroke:#eaeef2}
"""


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def render_sweep_html(data: dict[str, Any]) -> str:
    series, knee, kv = data["series"], data["knee"], data.get("kv") or {}
    engine = data.get("engine") or {}
    head = (f"<h1>The concurrency cliff: {_e(engine.get('model', ''))}</h1>"
            f"<p class='muted'>{_e(engine.get('num_blocks'))} KV blocks of {_e(engine.get('block_size'))} tokens at "
            f"{_e(engine.get('base_url'))}; the recording's {_e(data.get('recorded_sessions'))} session(s) replayed as N concurrent "
            f"sessions. <b>kv</b> predicts <b id='predicted'>{_e(knee.get('predicted'))}</b> sessions fit; the hit rate was measured "
            f"to hold up to <b id='measured'>{_e(knee.get('measured') if knee.get('measured') is not None else 'every N tried')}</b>"
            + (f", to fall at {_e(knee['falls_at'])}" if knee.get("falls_at") is not None else "")
            + (f" and to collapse at {_e(knee['collapses_at'])}" if knee.get("collapses_at") is not None else "") + ".</p>")
    legend = ("<p class='muted'><span style='color:#0969da'>━</span> measured hit rate · <span style='color:#8250df'>╍</span> "
              "simulated hit rate · <span style='color:#fb8f44'>■</span> TTFT p99 (right axis) · <span style='color:#1a7f37'>╍</span> "
              "kv's prediction · <span style='color:#a40e26'>│</span> measured knee</p>")
    notes = "".join(f"<li>{_e(n)}</li>" for n in kv.get("notes") or [])
    return ("<!doctype html><html lang='en'><head><meta charset='utf-8'><title>cachelint replay: session sweep</title>"
            f"<style>{STYLE}</style></head><body>" + head + cliff_svg(series, knee) + legend + points_table(data)
            + (f"<ul class='muted'>{notes}</ul>" if notes else "") + f"<p class='muted'>{_e(knee.get('rule', ''))}</p></body></html>")


def cliff_svg(series: dict[str, list], knee: dict[str, Any]) -> str:
    counts = series["sessions"]
    if not counts:
        return "<p>No points.</p>"
    lo, hi = min(counts), max(counts)
    span = max(hi - lo, 1)
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x(n: float) -> float:
        return LEFT + (n - lo) / span * plot_w if hi > lo else LEFT + plot_w / 2

    def y(rate: float) -> float:
        return TOP + (1 - max(0.0, min(1.0, rate))) * plot_h

    p99 = [v for v in series.get("ttft_p99_ms") or [] if v is not None]
    top_ms = max(p99, default=0) or 1
    out = [f"<svg id='cliff' width='100%' viewBox='0 0 {WIDTH} {HEIGHT}' role='img' aria-label='hit rate and TTFT p99 by concurrent sessions'>"]
    for tick in (0, 0.25, 0.5, 0.75, 1):
        out.append(f"<line class='grid' x1='{LEFT}' x2='{WIDTH - RIGHT}' y1='{y(tick):.1f}' y2='{y(tick):.1f}'/>"
                   f"<text x='{LEFT - 8}' y='{y(tick) + 4:.1f}' text-anchor='end'>{tick:.0%}</text>")
        out.append(f"<text x='{WIDTH - RIGHT + 8}' y='{y(tick) + 4:.1f}'>{tick * top_ms:,.0f} ms</text>")
    bar = max(4.0, plot_w / max(len(counts), 1) * 0.35)
    for n, ms in zip(counts, series.get("ttft_p99_ms") or []):
        if ms is not None:
            h = ms / top_ms * plot_h
            out.append(f"<rect class='p99' x='{x(n) - bar / 2:.1f}' y='{TOP + plot_h - h:.1f}' width='{bar:.1f}' height='{h:.1f}'>"
                       f"<title>{n} sessions: TTFT p99 {ms:,.0f} ms</title></rect>")
    for n in counts:
        out.append(f"<text x='{x(n):.1f}' y='{HEIGHT - BOTTOM + 18}' text-anchor='middle'>{n}</text>")
    out.append(f"<text x='{LEFT + plot_w / 2:.1f}' y='{HEIGHT - 8}' text-anchor='middle'>concurrent sessions</text>")
    for key, css in (("predicted_hit_rate", "sim"), ("hit_rate", "hit")):
        values = series.get(key) or []
        points = " ".join(f"{x(n):.1f},{y(v):.1f}" for n, v in zip(counts, values) if v is not None)
        if points:
            out.append(f"<polyline class='{css}' data-series='{key}' points='{points}'/>")
    for n, v in zip(counts, series.get("hit_rate") or []):
        if v is not None:
            out.append(f"<circle class='point' cx='{x(n):.1f}' cy='{y(v):.1f}' r='4' fill='#0969da'><title>{n} sessions: hit rate {v:.1%}</title></circle>")
    predicted = knee.get("predicted")
    if predicted is not None:
        px = x(min(max(predicted, lo), hi))
        out.append(f"<line class='kv' x1='{px:.1f}' x2='{px:.1f}' y1='{TOP}' y2='{TOP + plot_h}'><title>kv: {predicted} sessions fit</title></line>"
                   f"<text x='{px + 4:.1f}' y='{TOP + 12}' fill='#1a7f37'>kv: {predicted}</text>")
    if knee.get("measured") is not None:
        mx = x(knee["measured"])
        out.append(f"<line class='knee' x1='{mx:.1f}' x2='{mx:.1f}' y1='{TOP}' y2='{TOP + plot_h}'><title>measured knee: {knee['measured']} sessions</title></line>"
                   f"<text x='{mx + 4:.1f}' y='{TOP + 28}' fill='#a40e26'>knee: {knee['measured']}</text>")
    out.append("</svg>")
    return "".join(out)


def points_table(data: dict[str, Any]) -> str:
    falls = (data.get("knee") or {}).get("falls_at")
    rows = ["<table id='points'><tr><th>sessions</th><th>hit rate</th><th>simulated</th><th>prefill tokens</th><th>TTFT p50</th>"
            "<th>TTFT p99</th><th>preemptions</th><th>blocks evicted</th><th class='l'>kv</th></tr>"]

    def ms(v: Any) -> str:
        return "" if v is None else f"{v:,.0f} ms"

    def num(v: Any) -> str:
        return "" if v is None else f"{v:,.0f}"

    for p in data.get("points") or []:
        past = falls is not None and p["sessions"] >= falls
        rows.append(f"<tr class='{'past' if past else ''}'><td>{p['sessions']}</td><td data-key='hit_rate'>{p['hit_rate']:.1%}</td>"
                    f"<td>{'' if p.get('predicted_hit_rate') is None else format(p['predicted_hit_rate'], '.1%')}</td>"
                    f"<td>{num(p.get('prefill_tokens'))}</td><td>{ms(p.get('ttft_p50_ms'))}</td><td>{ms(p.get('ttft_p99_ms'))}</td>"
                    f"<td>{num(p.get('preemptions'))}</td><td>{num(p.get('engine_evictions'))}</td>"
                    f"<td class='l'>{'fits' if p.get('fits') else 'past the prediction'}</td></tr>")
    return "".join(rows) + "</table>"
