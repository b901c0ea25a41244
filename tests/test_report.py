"""`cachelint report` as a user runs it: text, JSON and HTML from a real store filled by `cachelint import`
(the proxy's own pipeline), filters, timestamps, plurals, unknown costs, the provider's diagnosis, -o."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest

from cachelint.record.report import Filters, build_report, money, plural
from cachelint.record.store import Row, Store

ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
DEMO_START = 1795952451  # the bundled traffic's first request: 2026-11-29T11:40:51Z


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cachelint", *args], capture_output=True, text=True, timeout=120)


def traffic_lines() -> list[dict]:
    path = resources.files("cachelint.demo").joinpath("data", "traffic.jsonl")
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def make_traffic(path: Path) -> None:
    """The bundled six-request session, then a second session an hour later (first four requests again, one a
    minute apart, and an overloaded 529 at the end), and a third on another model a day later."""
    lines = traffic_lines()
    out = list(lines)
    for i, line in enumerate(lines[:4]):
        copy = json.loads(json.dumps(line))
        copy["started_at"] += 3600 + i * 60
        copy["request"]["headers"]["x-claude-code-session-id"] = "second-session"
        out.append(copy)
    failed = json.loads(json.dumps(lines[0]))
    failed["started_at"] += 3900
    failed["request"]["headers"]["x-claude-code-session-id"] = "second-session"
    failed["response"] = {"status": 529, "headers": {"content-type": "application/json"},
                          "body": {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}}
    out.append(failed)
    for i, line in enumerate(lines[:2]):
        copy = json.loads(json.dumps(line))
        copy["started_at"] += 86400 + i * 30
        copy["request"]["headers"]["x-claude-code-session-id"] = "haiku-session"
        copy["request"]["body"]["model"] = "claude-haiku-4-5"
        out.append(copy)
    path.write_text("\n".join(json.dumps(x) for x in out) + "\n")


@pytest.fixture(scope="module")
def db(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("report")
    make_traffic(folder / "traffic.jsonl")
    done = cli("import", str(folder / "traffic.jsonl"), "--db", str(folder / "db.sqlite"))
    assert done.returncode == 0, done.stderr
    return folder / "db.sqlite"


def report_json(db: Path, *args: str) -> dict:
    done = cli("report", "--db", str(db), "--format", "json", *args)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_json_rows_carry_utc_timestamps_notes_and_ranked_breaks(db):
    data = report_json(db)
    assert [s["session"] for s in data["sessions"]] == ["demo-session", "second-session", "haiku-session"]
    demo = data["sessions"][0]
    assert demo["started_at"] == "2026-11-29T11:40:51Z" and ISO.match(demo["ended_at"])
    assert all(ISO.match(t["at"]) for s in data["sessions"] for t in s["turns"])
    assert all(t["note"] for s in data["sessions"] for t in s["turns"])  # the note column is never empty
    [brk] = demo["breaks"]
    assert brk["request"] == 4 and ISO.match(brk["at"]) and brk["cause"] == "system_changed" and brk["rule"] == "CL101"
    # the two numbers of one break, each named: the provider's usage (what was really prefilled) and the diff's estimate
    assert brk["wasted_prefill_tokens"] == 2126 and brk["wasted_source"] == "provider_usage"
    assert brk["estimated_reprefilled_tokens"] == 1037
    assert brk["explanation"] and brk["fix"] and "10:31" in brk["before"] and "10:32" in brk["after"]
    assert demo["turns"][3]["note"].startswith("break: system_changed/volatile_value (CL101)")
    ranked = data["ranked_breaks"]
    assert len(ranked) == data["totals"]["breaks"] == sum(len(s["breaks"]) for s in data["sessions"])
    costs = [(b["wasted_cost"] or 0.0, b["wasted_prefill_tokens"]) for b in ranked]
    assert costs == sorted(costs, reverse=True)
    buckets = data["timeline"]["buckets"]
    assert sum(b["requests"] for b in buckets) == data["totals"]["requests"] == 13
    assert sum(b["cache_read_tokens"] for b in buckets) == data["totals"]["cache_read_tokens"]
    assert all(ISO.match(b["start"]) for b in buckets)


def test_text_report_shows_errors_ttft_breaks_with_fix_and_plurals(db):
    done = cli("report", "--db", str(db))
    assert done.returncode == 0, done.stderr
    text = done.stdout
    assert "error at request 5 (2026-11-29T12:45:51Z): HTTP 529 overloaded_error: Overloaded" in text
    assert "1 error" in text and "1 errors" not in text
    assert "break at request 4 (2026-11-29T11:40:52Z): system_changed/volatile_value CL101 at /system/1/text" in text
    assert "2,126 tokens prefilled again per the provider's usage" in text
    assert "cachelint's diff estimates 1,037 tokens after the change" in text
    assert "fix: Move the value out of the cached prefix" in text
    assert "before: …inux 6.8.0⏎Current time: 2026-11-29T10:31" in text
    assert "total: 13 requests in 3 sessions" in text and "1 break " not in text.splitlines()[-1]
    assert plural(1, "break") == "1 break" and plural(2, "break") == "2 breaks" and plural(1_000, "request") == "1,000 requests"


def test_ttft_is_shown_when_recorded(tmp_path):
    store = Store(tmp_path / "db.sqlite")
    for seq, ttft in ((1, 0.42), (2, 0.61), (3, 0.5)):
        store.add(Row(session="s", seq=seq, started_at=DEMO_START + seq, model="gpt-4o", ttft=ttft, prompt_tokens=2000,
                      cache_read_tokens=1024 if seq > 1 else 0, cache_write_tokens=0, output_tokens=5, cost=0.001))
    store.close()
    done = cli("report", "--db", str(tmp_path / "db.sqlite"))
    assert "time to first token p50 0.50 s" in done.stdout
    data = report_json(tmp_path / "db.sqlite")
    assert [t["ttft_s"] for t in data["sessions"][0]["turns"]] == [0.42, 0.61, 0.5]


def test_filters_by_session_model_and_date_range(db):
    only = report_json(db, "--session", "second-session")
    assert [s["session"] for s in only["sessions"]] == ["second-session"] and only["totals"]["requests"] == 5
    haiku = report_json(db, "--model", "claude-haiku-4-5")
    assert [s["session"] for s in haiku["sessions"]] == ["haiku-session"] and haiku["filters"]["model"] == "claude-haiku-4-5"
    day_one = report_json(db, "--since", "2026-11-29", "--until", "2026-11-29T12:00")
    assert [s["session"] for s in day_one["sessions"]] == ["demo-session"]
    assert day_one["filters"]["since"] == "2026-11-29T00:00:00Z" and day_one["filters"]["until"] == "2026-11-29T12:00:00Z"
    later = report_json(db, "--since", "2026-11-30T00:00:00Z")
    assert [s["session"] for s in later["sessions"]] == ["haiku-session"]
    nothing = report_json(db, "--since", "1h")  # the recorded traffic is older than an hour ago
    assert nothing["sessions"] == [] and nothing["totals"]["requests"] == 0
    bad = cli("report", "--db", str(db), "--since", "yesterday-ish")
    assert bad.returncode == 2 and bad.stderr.startswith("cachelint: error: --since 'yesterday-ish': not a date") and "Traceback" not in bad.stderr
    backwards = cli("report", "--db", str(db), "--since", "2026-11-30", "--until", "2026-11-29")
    assert backwards.returncode == 2 and "--until must be later than --since" in backwards.stderr
    missing = cli("report", "--db", str(db), "--session", "second-session", "--model", "gpt-4o")
    assert missing.returncode == 2 and "within the filters" in missing.stderr


def test_output_file_is_announced_and_a_missing_folder_is_one_line(db, tmp_path):
    out = tmp_path / "r.html"
    done = cli("report", "--db", str(db), "--format", "html", "-o", str(out))
    assert done.returncode == 0 and done.stdout == ""
    assert done.stderr.strip() == f"cachelint: wrote {out} ({out.stat().st_size:,} bytes)"
    missing = cli("report", "--db", str(db), "-o", str(tmp_path / "no" / "such" / "r.txt"))
    assert missing.returncode == 2 and missing.stdout == ""
    assert missing.stderr.strip().splitlines() == [f"cachelint: error: cannot write {tmp_path / 'no' / 'such' / 'r.txt'}: the folder {tmp_path / 'no' / 'such'} does not exist"]


def test_html_report_has_axes_tooltips_highlighted_excerpts_and_no_network(db, tmp_path):
    out = tmp_path / "r.html"
    assert cli("report", "--db", str(db), "--format", "html", "-o", str(out)).returncode == 0
    page = out.read_text()
    assert "<script" not in page and "http://" not in page.replace("http://www.w3.org", "") and "https://" not in page
    assert page.count("<svg") == 1 + 3  # the timeline and one chart per session
    assert "time (UTC)" in page and "prompt tokens" in page and "100%" in page  # axis titles and the hit-rate axis
    assert "<title>request 4 · break: system_changed\n2026-11-29T11:40:52Z UTC\nprompt 2,211 tokens" in page
    assert "Current time: 2026-11-29T10:3<mark class='del'>1</mark>" in page
    assert "Current time: 2026-11-29T10:3<mark class='ins'>2</mark>" in page
    assert "Fix:</b> Move the value out of the cached prefix" in page
    assert page.index("id='ranked'") < page.index("data-session='demo-session'")


def provider_rows() -> list[Row]:
    """A session as H3's recorder writes it: the provider's diagnosis beside cachelint's cause, one miss only the
    provider saw (the entry expired), one row whose model has no price."""
    base = {"location": {"pointer": "/system/0/text", "char": 3}, "before": "ab 1 cd", "after": "ab 2 cd", "common_prefix_tokens": 10,
            "before_prompt_tokens": 2000, "after_prompt_tokens": 2000, "reprefilled_tokens": 1990, "section": "system"}
    agree = {**base, "cause": "system_changed", "detail": "volatile_value", "rule": "CL101", "value_kind": "timestamp",
             "provider_diagnosis": {"source": "anthropic", "type": "system_changed", "missed_input_tokens": 1990, "pending": False},
             "agreement": "agree"}
    provider_only = {"cause": "none", "agreement": "provider-only",
                     "provider_diagnosis": {"source": "anthropic", "type": "messages_changed", "missed_input_tokens": 1500, "pending": False}}
    no_miss = {"cause": "none", "provider_diagnosis": {"source": "anthropic", "type": "none", "missed_input_tokens": None, "pending": False}}
    expired = {"cause": "ttl_expired", "detail": "idle", "rule": None, "idle_seconds": 420.0, "ttl_seconds": 300, "agreement": "cachelint-only",
               "source": [{"file": "app/bot.py", "line": 12, "rule": "CL101", "message": "datetime.now() in the system prompt", "confidence": "high"}]}
    rows = [Row(session="diag", seq=1, started_at=DEMO_START, model="claude-sonnet-4-5", prompt_tokens=2000, cache_read_tokens=0,
                cache_write_tokens=2000, cost=0.0075, wasted_cost=0.0)]
    for seq, brk, model, cost in ((2, agree, "claude-sonnet-4-5", 0.0075), (3, provider_only, "claude-sonnet-4-5", 0.006),
                                  (4, no_miss, "claude-sonnet-4-5", 0.0007), (5, expired, "mystery-model", None)):
        rows.append(Row(session="diag", seq=seq, started_at=DEMO_START + seq * 60, model=model, prompt_tokens=2000, cache_read_tokens=0,
                        cache_write_tokens=2000, brk=brk, wasted_prefill_tokens=1990, cost=cost, wasted_cost=0.006 if cost else None))
    return rows


def test_provider_diagnosis_beside_cachelint_and_agreements_counted(tmp_path):
    store = Store(tmp_path / "db.sqlite")
    for row in provider_rows():
        store.add(row)
    data = build_report(store, filters=Filters())
    store.close()
    [s] = data["sessions"]
    assert [b["request"] for b in s["breaks"]] == [2, 3, 5]  # the provider's "none" is no break
    assert data["totals"]["agreement"] == {"agree": 1, "disagree": 0, "provider-only": 1, "cachelint-only": 1}
    assert s["breaks"][0]["provider_diagnosis"]["type"] == "system_changed" and s["breaks"][0]["agreement"] == "agree"
    assert "provider reports a cache miss of 1,500 tokens" in s["breaks"][1]["explanation"]
    assert s["breaks"][2]["idle_seconds"] == 420.0 and "420 s passed" in s["breaks"][2]["explanation"]
    assert s["breaks"][2]["source"][0]["file"] == "app/bot.py"
    assert s["unpriced_requests"] == 1 and s["breaks"][2]["wasted_cost"] is None
    text = cli("report", "--db", str(tmp_path / "db.sqlite")).stdout
    assert "provider's diagnosis: system_changed, 1,990 tokens missed (anthropic); agree" in text
    assert "cachelint and the provider: 1 agree, 0 disagree, 1 provider-only, 1 cachelint-only" in text
    assert "source: app/bot.py:12 CL101 datetime.now() in the system prompt" in text
    assert "1 request without a known price" in text and ", unknown)" in text  # an unknown cost is never $0
    assert "cost ≥$0.0217" in text  # a lower bound where some requests had no price
    html_page = cli("report", "--db", str(tmp_path / "db.sqlite"), "--format", "html").stdout
    assert "Provider's diagnosis: <b>messages_changed</b>, 1,500 tokens missed · provider-only" in html_page


def test_unknown_cost_is_none_not_zero(tmp_path):
    store = Store(tmp_path / "db.sqlite")
    store.add(Row(session="x", seq=1, started_at=DEMO_START, model="mystery-model", prompt_tokens=100, cache_read_tokens=0, cache_write_tokens=0))
    data = build_report(store)
    store.close()
    assert data["sessions"][0]["cost"] is None and data["totals"]["cost"] is None
    assert money(None) == "unknown" and money(0.0) == "$0.0000" and money(-0.5) == "-$0.5000"
    assert "cost unknown" in cli("report", "--db", str(tmp_path / "db.sqlite")).stdout


def test_demo_names_both_numbers_of_its_break():
    """The demo's one break has two numbers; each is said to be what it is, and the money uses the billed one."""
    out = cli("demo")
    assert out.returncode == 0, out.stderr
    text = " ".join(out.stdout.split())
    assert "1,037 is cachelint's diff estimate" in text
    assert "The provider's usage, recorded by the proxy, says 2,126 were prefilled again" in text
    assert "(/system/0/text) closes a prefix of about 738 tokens, below the 1,024-token minimum" in text
    assert "2,126 tokens written to cache again instead of read (the provider's usage)" in text
    assert "2,126 tokens prefilled again (the provider's usage; the diff's estimate: 1,037)" in text
    data = json.loads(cli("demo", "--format", "json").stdout)
    [brk] = data["proxy"]["breaks"]
    assert (brk["wasted_prefill_tokens"], brk["wasted_source"], brk["estimated_reprefilled_tokens"]) == (2126, "provider_usage", 1037)
    assert data["breaks"][0]["readable_prefix"] == {"breakpoint": "/system/0/text", "prefix_tokens": 738, "minimum_tokens": 1024}
    assert data["wasted_prefill_source"].startswith("cachelint's diff estimate")


def test_html_escapes_what_came_off_the_wire(tmp_path):
    store = Store(tmp_path / "db.sqlite")
    hostile = "<script>alert(1)</script>"
    store.add(Row(session=hostile, seq=1, started_at=DEMO_START, model="m' onload='x", status=500, error=hostile,
                  prompt_tokens=10, cache_read_tokens=0, cache_write_tokens=0))
    store.add(Row(session=hostile, seq=2, started_at=DEMO_START + 1, model="m", prompt_tokens=10, cache_read_tokens=0, cache_write_tokens=0,
                  brk={"cause": "system_changed", "detail": "text_edited", "location": {"pointer": hostile}, "before": hostile, "after": hostile + "!"}))
    store.close()
    page = cli("report", "--db", str(tmp_path / "db.sqlite"), "--format", "html").stdout
    assert "<script" not in page and "onload='x" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
