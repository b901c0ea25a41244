"""The HTML report in a real headless Chromium (Debian's `chromium`): it renders, logs nothing to the console, and
the numbers it shows equal the JSON report's.

Without a chromium on PATH the tests skip with the reason, unless CACHELINT_REQUIRE_BROWSER is set (CI sets it
after `apt-get install -y chromium`), where a missing browser fails them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from test_report import make_traffic

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run",
         "--disable-extensions", "--disable-sync", "--enable-logging=stderr", "--v=0"]


def chromium() -> str:
    found = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)
    if found is None:
        if os.environ.get("CACHELINT_REQUIRE_BROWSER"):
            pytest.fail("CACHELINT_REQUIRE_BROWSER is set and no chromium is on PATH (apt-get install -y chromium)")
        pytest.skip("no chromium on PATH (apt-get install -y chromium); set CACHELINT_REQUIRE_BROWSER to make this a failure")
    return found


def browse(page: Path, tmp: Path, *action: str) -> subprocess.CompletedProcess:
    """Chromium on a file with a fresh profile; `action` is --dump-dom or --screenshot=FILE."""
    profile = tmp / f"profile-{len(list(tmp.glob('profile-*')))}"
    return subprocess.run([chromium(), *FLAGS, f"--user-data-dir={profile}", "--window-size=1600,2400", *action, page.as_uri()],
                          capture_output=True, text=True, timeout=120)


def console_messages(stderr: str) -> list[str]:
    """What the page wrote to the console (Chromium logs each message as `...:CONSOLE(line)] "text", source: ...`)."""
    return [line for line in stderr.splitlines() if ":CONSOLE" in line]


class Keyed(HTMLParser):
    """The text and attributes of the elements that carry data-key, in document order, with their section's session."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[dict] = []
        self.session: str | None = None
        self.open: list[dict] = []
        self.counts = {"turn_rows": {}, "ranked_rows": 0, "svg_points": []}
        self.table: str | None = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "section" and "data-session" in a:
            self.session = a["data-session"]
        if tag == "table":
            self.table = "turns" if "turns" in (a.get("class") or "") else a.get("id")
        if tag == "tr" and self.table == "turns":
            self.counts["turn_rows"][self.session] = self.counts["turn_rows"].get(self.session, 0) + 1
        if tag == "tr" and self.table == "ranked":
            self.counts["ranked_rows"] += 1
        if tag == "svg":
            self.counts["svg_points"].append(int(a["data-points"]))
        if "data-key" in a:
            item = {"key": a["data-key"], "value": a.get("data-value"), "text": "", "session": self.session}
            self.found.append(item)
            self.open.append(item)

    def handle_data(self, data):
        for item in self.open:
            item["text"] += data

    def handle_endtag(self, tag):
        if self.open and tag in ("b", "span", "td"):
            self.open.pop()


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("browser")
    make_traffic(tmp / "traffic.jsonl")
    db = tmp / "db.sqlite"
    subprocess.run([sys.executable, "-m", "cachelint", "import", str(tmp / "traffic.jsonl"), "--db", str(db)], check=True, capture_output=True, timeout=120)
    page = tmp / "report.html"
    subprocess.run([sys.executable, "-m", "cachelint", "report", "--db", str(db), "--format", "html", "-o", str(page)], check=True, capture_output=True, timeout=120)
    data = json.loads(subprocess.run([sys.executable, "-m", "cachelint", "report", "--db", str(db), "--format", "json"],
                                     check=True, capture_output=True, text=True, timeout=120).stdout)
    return tmp, page, data


def test_the_console_check_can_fail(tmp_path):
    """The console check sees a page's errors (else a quiet report would prove nothing)."""
    bad = tmp_path / "bad.html"
    bad.write_text("<!doctype html><html><body><script>console.error('cachelint-probe'); missingFunction();</script></body></html>")
    done = browse(bad, tmp_path, "--dump-dom")
    messages = console_messages(done.stderr)
    assert any("cachelint-probe" in m for m in messages) and any("missingFunction" in m for m in messages)


def test_report_renders_without_console_errors_and_shows_the_json_numbers(rendered):
    tmp, page, data = rendered
    done = browse(page, tmp, "--dump-dom")
    assert done.returncode == 0, done.stderr[-2000:]
    assert console_messages(done.stderr) == []
    dom = done.stdout
    assert "<h1>cachelint report</h1>" in dom
    parser = Keyed()
    parser.feed(dom)
    cards = {f["key"]: f for f in parser.found if f["session"] is None and not f["key"].startswith(("ranked_", "break_"))}
    t = data["totals"]
    for key in ("requests", "sessions", "breaks", "wasted_prefill_tokens", "cache_read_tokens", "cache_write_tokens", "errors"):
        assert int(cards[key]["text"].replace(",", "")) == t[key], key
        assert int(cards[key]["value"]) == t[key], key
    assert float(cards["hit_rate"]["value"]) == t["hit_rate"] and cards["hit_rate"]["text"] == f"{t['hit_rate']:.1%}"
    assert cards["cost"]["text"] == f"${t['cost']:.4f}" and cards["wasted_cost"]["text"] == f"${t['wasted_cost']:.4f}"
    for s in data["sessions"]:
        mine = {f["key"]: f for f in parser.found if f["session"] == s["session"] and not f["key"].startswith("break_")}
        assert int(mine["requests"]["text"].replace(",", "")) == s["requests"]
        assert float(mine["hit_rate"]["value"]) == s["hit_rate"]
        assert int(mine["breaks"]["text"]) == len(s["breaks"])
        assert int(mine["wasted_prefill_tokens"]["text"].replace(",", "")) == s["wasted_prefill_tokens"]
        shown = [int(f["text"].replace(",", "")) for f in parser.found if f["session"] == s["session"] and f["key"] == "break_wasted_prefill_tokens"]
        assert shown == [b["wasted_prefill_tokens"] for b in s["breaks"]]
        assert parser.counts["turn_rows"][s["session"]] == 1 + s["requests"]  # the header row and one per request
    ranked = [int(f["text"].replace(",", "")) for f in parser.found if f["key"] == "ranked_wasted_prefill_tokens"]
    assert ranked == [b["wasted_prefill_tokens"] for b in data["ranked_breaks"]]
    assert parser.counts["ranked_rows"] == 1 + len(data["ranked_breaks"])
    assert parser.counts["svg_points"] == [len(data["timeline"]["buckets"])] + [s["requests"] for s in data["sessions"]]


def test_report_screenshot(rendered):
    tmp, page, _ = rendered
    shot = tmp / "report.png"
    done = browse(page, tmp, f"--screenshot={shot}")
    assert done.returncode == 0, done.stderr[-2000:]
    assert console_messages(done.stderr) == []
    png = shot.read_bytes()
    assert png.startswith(b"\x89PNG") and len(png) > 50_000  # a page of charts and tables, not a blank one
