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
    text = screen(dashboard.render())
    t = recorder.totals["demo-session"]
    assert "total (1 session)" in text
    total_line = next(line for line in text.splitlines() if "total (1 session)" in line)
    assert f"{t.cache_read_tokens:,}" in total_line and f"${t.wasted_cost:,.4f}" in total_line and f"${t.cost:,.4f}" in total_line
    assert "$" in next(line for line in text.splitlines() if "demo-session" in line and "claude-sonnet-4-5" in line)
    assert QUIT_HINT in text


def test_the_log_scrolls_and_names_each_break(recorded):
    _, dashboard, rows = recorded
    text = screen(dashboard.render())
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
    Console(file=coloured, force_terminal=True, color_system="truecolor", width=220).print(dashboard.render())
    assert ANSI_COLOUR.search(coloured.getvalue())  # the break and the hit rate are coloured
    monkeypatch.setenv("NO_COLOR", "1")
    plain = io.StringIO()
    Console(file=plain, force_terminal=True, color_system="truecolor", width=220).print(dashboard.render())
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
    Console(file=raw, force_terminal=True, color_system="truecolor", width=300).print(dashboard.render())
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
    text = screen(Dashboard(totals, "x").render())
    assert "s29" in text and "s0 " not in text and "total (30 sessions)" in text and "the 20 latest of 30 sessions" in text
    total_line = next(line for line in text.splitlines() if "total (30 sessions)" in line)
    assert " 30 " in total_line and "1,500" in total_line and "50%" in total_line
