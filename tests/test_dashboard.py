"""The proxy's live view: the bundled traffic through the recorder's real pipeline into the dashboard; totals
row, money with "$", the scrolling log with each break's cause, NO_COLOR, text off the wire printed as text, the
quit key on a real pseudo-terminal, and the summary printed on exit."""

from __future__ import annotations

import io
import os
import pty
import re
import termios
import threading
from importlib import resources

import pytest
from rich.console import Console

from cachelint.proxy.dashboard import QUIT_HINT, Dashboard, QuitKey, clean, exchange_line, log_text, summary_lines
from cachelint.record.analyze import Recorder, Totals
from cachelint.record.importers import read
from cachelint.record.store import Row

ANSI_COLOUR = re.compile(r"\x1b\[[0-9;]*(3[0-9]|4[0-9]|9[0-7])[0-9;]*m")


@pytest.fixture(scope="module")
def recorded():
    """The bundled session recorded by the recorder (as the proxy does), each row passed to the dashboard."""
    path = resources.files("cachelint.demo").joinpath("data", "traffic.jsonl")
    with resources.as_file(path) as file:
        captured = sorted(read(file), key=lambda c: c.started_at)
    recorder = Recorder(store=None)
    dashboard = Dashboard(recorder.totals, "http://127.0.0.1:8082", lines=4)
    rows = []
    for item in captured:
        row = recorder.record(item)
        dashboard.on_row(row)
        rows.append(row)
    return recorder, dashboard, rows


def screen(renderable, width: int = 220, **console) -> str:
    out = Console(record=True, width=width, file=io.StringIO(), **console)
    out.print(renderable)
    return out.export_text()


def test_table_has_a_totals_row_and_dollars(recorded):
    recorder, dashboard, rows = recorded
    text = screen(dashboard)
    t = recorder.totals["demo-session"]
    assert "total (1 session)" in text
    total_line = next(line for line in text.splitlines() if "total (1 session)" in line)
    assert f"{t.cache_read_tokens:,}" in total_line and f"${t.wasted_cost:,.4f}" in total_line and f"${t.cost:,.4f}" in total_line
    assert "$" in next(line for line in text.splitlines() if "demo-session" in line and "claude-sonnet-4-5" in line)
    assert QUIT_HINT in text


def test_the_log_scrolls_and_names_each_break(recorded):
    _, dashboard, rows = recorded
    text = screen(dashboard)
    log = text[text.index("latest requests"):]
    assert "#1 " not in log and "#2 " not in log  # 6 requests, 4 lines: the oldest scrolled away
    assert all(f"demo-session #{n} " in log for n in (3, 4, 5, 6))
    assert "BREAK system_changed/volatile_value CL101 /system/1/text 2,126 tokens prefilled again ($0.0073)" in log
    assert dashboard.breaks == 1


def test_summary_on_exit(recorded):
    recorder, dashboard, _ = recorded
    first, second = dashboard.summary("/tmp/x.db")
    assert first == ("cachelint proxy stopped: 6 requests in 1 session, hit rate 65%, 2,126 tokens prefilled again ($0.0073), "
                     f"cost ${recorder.totals['demo-session'].cost:,.4f}, 1 break")
    assert second.strip().startswith("details: cachelint report --db /tmp/x.db")
    assert summary_lines({}, "/tmp/x.db") == ["cachelint proxy stopped: no LLM requests recorded (store: /tmp/x.db)"]


def test_colour_and_no_color(recorded, monkeypatch):
    _, dashboard, _ = recorded
    monkeypatch.delenv("NO_COLOR", raising=False)
    coloured = io.StringIO()
    Console(file=coloured, force_terminal=True, color_system="truecolor", width=220).print(dashboard)
    assert ANSI_COLOUR.search(coloured.getvalue())  # the break and the hit rate are coloured
    monkeypatch.setenv("NO_COLOR", "1")
    plain = io.StringIO()
    Console(file=plain, force_terminal=True, color_system="truecolor", width=220).print(dashboard)
    assert not ANSI_COLOUR.search(plain.getvalue()) and "BREAK system_changed" in plain.getvalue()


def test_text_off_the_wire_is_printed_as_text():
    evil_model = "[bold red]pwned[/] \x1b[2J\x1b]0;title\x07\u202emodel"
    totals = {"s[/]x\x1b[31m": Totals(requests=1, prompt_tokens=10, model=evil_model,
                                      last_break={"seq": 1, "cause": "[blink]x", "detail": "y\n", "rule": None, "location": {"pointer": "/a\x1b"}})}
    dashboard = Dashboard(totals, "http://127.0.0.1:1")
    row = Row(session="s[/]x\x1b[31m", seq=1, started_at=0.0, model=evil_model, status=500, error="boom\x1b[0m[red]",
              brk={"cause": "[blink]x", "detail": "y", "location": {"pointer": "/a"}})
    dashboard.on_row(row)
    raw = io.StringIO()
    Console(file=raw, force_terminal=True, color_system="truecolor", width=300).print(dashboard)
    out = raw.getvalue()
    assert "[bold red]pwned[/]" in out and "[blink]x" in out and "boom?[0m[red]" in out  # markup printed, not applied
    assert "\x1b[2J" not in out and "\x1b]0;" not in out and "\u202e" not in out  # no escape sequence from the wire
    assert "\x1b" not in exchange_line(row) and "\x1b" not in log_text(row).plain
    assert clean("a\nb\tc\x00") == "a?b?c?" and clean("x" * 300, 10) == "x" * 9 + "…"


def test_quit_key_on_a_terminal():
    master, slave = pty.openpty()
    try:
        before = termios.tcgetattr(slave)
        pressed = threading.Event()
        with os.fdopen(os.dup(slave), "rb", buffering=0) as stream:
            key = QuitKey(pressed.set, stream=stream)
            assert key.start()
            assert not termios.tcgetattr(slave)[3] & termios.ICANON  # cbreak: one key, no Enter
            os.write(master, b"x")
            assert not pressed.wait(0.5)
            os.write(master, b"q")
            assert pressed.wait(10)
            key.stop()
            assert termios.tcgetattr(slave) == before  # the terminal is left as it was
    finally:
        os.close(master)
        os.close(slave)


def test_quit_key_is_off_without_a_terminal():
    with open(os.devnull, "rb") as stream:
        assert QuitKey(lambda: None, stream=stream).start() is False


def test_many_sessions_show_the_latest_and_count_all():
    totals = {f"s{i}": Totals(requests=1, prompt_tokens=100, cache_read_tokens=50, model="gpt-4o") for i in range(30)}
    text = screen(Dashboard(totals, "x"))
    assert "s29" in text and "s0 " not in text and "total (30 sessions)" in text and "the 20 latest of 30 sessions" in text
    total_line = next(line for line in text.splitlines() if "total (30 sessions)" in line)
    assert " 30 " in total_line and "1,500" in total_line and "50%" in total_line


# --- Prometheus metrics (--metrics-port) ------------------------------------------------------------------------


class FakeRecorder:
    """Only the attribute the collector reads: the recorder's live totals per session."""

    def __init__(self) -> None:
        self.totals: dict[str, Totals] = {}


def scrape(collector) -> dict[str, list]:
    """The collector served over real HTTP by prometheus_client and parsed back: family name -> samples."""
    import socket
    import urllib.request

    from prometheus_client import CollectorRegistry, start_http_server
    from prometheus_client.parser import text_string_to_metric_families

    registry = CollectorRegistry()
    registry.register(collector)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server, thread = start_http_server(port, addr="127.0.0.1", registry=registry)
    try:
        text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30).read().decode()
    finally:
        server.shutdown()
        thread.join(timeout=30)
    return {f.name: f.samples for f in text_string_to_metric_families(text)}


def test_metrics_have_no_session_label_and_stay_bounded_with_many_sessions_and_models():
    from cachelint.proxy.metrics import OTHER, TotalsCollector

    recorder = FakeRecorder()
    collector = TotalsCollector(recorder, max_models=8)
    for i in range(5000):  # many sessions, three models
        model = ("claude-sonnet-4-5", "gpt-4o", "claude-haiku-4-5")[i % 3]
        recorder.totals[f"session-{i}"] = Totals(requests=2, prompt_tokens=1000, cache_read_tokens=600, cache_write_tokens=100,
                                                 wasted_prefill_tokens=10, wasted_cost=0.001, cost=0.002, model=model)
        collector.on_row(Row(session=f"session-{i}", seq=2, started_at=0.0, model=model,
                             brk={"cause": "system_changed" if i % 2 else "made_up_cause"}))
    for i in range(200):  # then 200 distinct model names off the wire
        recorder.totals[f"odd-{i}"] = Totals(requests=1, prompt_tokens=10, model=f"model-{i}")
        collector.on_row(Row(session=f"odd-{i}", seq=1, started_at=0.0, model=f"model-{i}", brk={"cause": "tools_changed"}))
    families = scrape(collector)
    series = [s for samples in families.values() for s in samples]
    assert all("session" not in s.labels for s in series)
    models = {s.labels["model"] for s in series if "model" in s.labels}
    assert len(models) == 8 + 1 and OTHER in models and {"claude-sonnet-4-5", "gpt-4o", "claude-haiku-4-5"} <= models
    assert len(series) < 200  # bounded: models x families, models x causes, not sessions
    requests = {s.labels["model"]: s.value for s in families["cachelint_requests"] if s.name == "cachelint_requests_total"}
    assert sum(requests.values()) == 5000 * 2 + 200 and requests["gpt-4o"] == 1667 * 2
    assert {s.labels["cause"] for s in families["cachelint_breaks"] if s.name.endswith("_total")} == {"system_changed", "other", "tools_changed"}
    hit = {s.labels["model"]: s.value for s in families["cachelint_hit_rate"]}
    assert hit["gpt-4o"] == pytest.approx(0.6)
    assert families["cachelint_sessions"][0].value == 5200


def test_grafana_dashboard_queries_only_metrics_the_proxy_exports():
    import json
    from pathlib import Path

    from cachelint.proxy.metrics import TotalsCollector

    recorder = FakeRecorder()
    recorder.totals["s"] = Totals(requests=1, prompt_tokens=10, model="gpt-4o")
    collector = TotalsCollector(recorder)
    collector.on_row(Row(session="s", seq=1, started_at=0.0, model="gpt-4o", brk={"cause": "tools_changed"}))
    families = scrape(collector)
    exported = {s.name for samples in families.values() for s in samples}
    labels = {k for samples in families.values() for s in samples for k in s.labels} | {"instance", "job"}
    dashboard = json.loads((Path(__file__).parent.parent / "docs" / "grafana-dashboard.json").read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    exprs += [v["query"] for v in dashboard["templating"]["list"] if v["type"] == "query"]
    assert len(exprs) >= 12
    used = {m for e in exprs for m in re.findall(r"\b(cachelint_[a-z_]+)\b", e)}
    assert used and used <= exported, used - exported
    grouped = {label for e in exprs for label in re.findall(r"by \(([a-z_]+)\)", e)}
    assert grouped <= labels and not any(re.search(r"\bsession\b", e) for e in exprs)


def test_a_narrow_terminal_keeps_every_number_whole(recorded):
    """At 80 columns (and with soft_wrap, as `cachelint proxy`'s console has) the table leaves columns out rather
    than cut a number, and the log's lines wrap instead of being cropped."""
    recorder, dashboard, _ = recorded
    out = Console(record=True, width=80, soft_wrap=True, file=io.StringIO())
    out.print(dashboard)
    text = out.export_text()
    t = recorder.totals["demo-session"]
    assert all(len(line) <= 80 for line in text.splitlines())
    assert f"${t.cost:,.4f}" in text and f"${t.wasted_cost:,.4f}" in text and f"{t.cache_read_tokens:,}" in text and "…" not in text.split("session")[1][:40]
    assert "2,126 tokens prefilled again" in " ".join(text.split()) and "written" not in text.split("latest requests")[0]
    wide = Console(record=True, width=200, file=io.StringIO())
    wide.print(dashboard)
    shown = wide.export_text()
    assert "written" in shown and "claude-sonnet-4-5" in shown.split("latest requests")[0]


def test_unpriced_money_is_never_shown_as_zero_and_agreements_are_summed():
    from cachelint.proxy.metrics import TotalsCollector

    totals = {"a": Totals(requests=2, prompt_tokens=100, model="mystery", unpriced=2, agreements={"agree": 1}),
              "b": Totals(requests=2, prompt_tokens=100, cost=0.5, model="gpt-4o", unpriced=1, agreements={"agree": 2, "provider-only": 1})}
    text = screen(Dashboard(totals, "x"))
    row_a = next(line for line in text.splitlines() if line.startswith("│ a "))
    row_b = next(line for line in text.splitlines() if line.startswith("│ b "))
    assert "unknown" in row_a and "$0.0000" not in row_a
    assert "≥$0.5000" in row_b
    [first, _] = summary_lines(totals, "db")
    assert "cost ≥$0.5000" in first and "cachelint and the provider: 3 agree, 1 provider-only" in first
    recorder = FakeRecorder()
    recorder.totals.update(totals)
    families = scrape(TotalsCollector(recorder))
    agreements = {s.labels["agreement"]: s.value for s in families["cachelint_agreements"] if s.name.endswith("_total")}
    assert agreements == {"agree": 3, "disagree": 0, "provider-only": 1, "cachelint-only": 0}
    unpriced = {s.labels["model"]: s.value for s in families["cachelint_unpriced_requests"] if s.name.endswith("_total")}
    assert unpriced == {"mystery": 2, "gpt-4o": 1}
