"""`cachelint import` (HAR, JSONL exchanges, claude-trace) and `cachelint sessions` (Claude Code transcripts)."""

from __future__ import annotations

import json
import subprocess
import sys

from bodies import anthropic_body, clone

KEY = "sk-ant-IMPORT-SECRET-999"


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cachelint", *args], capture_output=True, text=True, timeout=120)


def usage(read: int, write: int, fresh: int) -> dict:
    return {"input_tokens": fresh, "cache_read_input_tokens": read, "cache_creation_input_tokens": write, "output_tokens": 5}


def turns() -> list[dict]:
    first = anthropic_body()
    second = clone(first)
    second["messages"].append({"role": "assistant", "content": "Yes, until it ships."})
    third = clone(second)
    third["system"][1]["text"] = third["system"][1]["text"].replace("10:31:07", "10:45:00")
    return [first, second, third]


def test_import_jsonl_exchanges_and_report(tmp_path):
    usages = [usage(0, 300, 10), usage(300, 20, 5), usage(12, 330, 5)]
    lines = [json.dumps({"started_at": 1000 + i, "request": {"method": "POST", "path": "/v1/messages", "headers": {"x-api-key": KEY, "x-claude-code-session-id": "abc"}, "body": body},
                         "response": {"status": 200, "body": {"type": "message", "usage": u}}}) for i, (body, u) in enumerate(zip(turns(), usages))]
    source = tmp_path / "traffic.jsonl"
    source.write_text("\n".join(lines) + "\n")
    db = tmp_path / "store.db"
    out = run("import", str(source), "--db", str(db))
    assert out.returncode == 0, out.stderr
    assert "3 exchanges imported" in out.stdout
    data = json.loads(run("report", "--db", str(db), "--format", "json").stdout)
    [session] = data["sessions"]
    assert session["requests"] == 3 and session["cache_read_tokens"] == 312
    assert [(b["request"], b["cause"], b["detail"], b["rule"]) for b in session["breaks"]] == [(3, "system_changed", "volatile_value", "CL101")]
    assert KEY.encode() not in db.read_bytes()


def test_import_har(tmp_path):
    body = anthropic_body()
    har = {"log": {"version": "1.2", "entries": [
        {"startedDateTime": "2026-11-29T10:00:00.000Z", "time": 120, "timings": {"wait": 80},
         "request": {"method": "POST", "url": "https://api.anthropic.com/v1/messages?beta=true",
                     "headers": [{"name": "x-api-key", "value": KEY}], "postData": {"mimeType": "application/json", "text": json.dumps(body)}},
         "response": {"status": 200, "headers": [{"name": "content-type", "value": "application/json"}, {"name": "content-encoding", "value": "gzip"}],
                      "content": {"mimeType": "application/json", "text": json.dumps({"usage": usage(0, 200, 4)})}}},
        {"startedDateTime": "2026-11-29T10:00:01.000Z", "time": 10, "request": {"method": "GET", "url": "https://api.anthropic.com/v1/models", "headers": []},
         "response": {"status": 200, "headers": [], "content": {"text": "{}"}}},
    ]}}
    source = tmp_path / "s.har"
    source.write_text(json.dumps(har))
    db = tmp_path / "store.db"
    assert "1 exchanges imported" in run("import", str(source), "--db", str(db)).stdout
    data = json.loads(run("report", "--db", str(db), "--format", "json").stdout)
    assert data["totals"]["requests"] == 1 and data["totals"]["cache_write_tokens"] == 200


def test_import_claude_trace_strips_every_kind_of_key(tmp_path):
    """claude-trace logs keep request headers as sent: the keys must not reach the store or any report."""
    bearer, query_key = "sk-ant-oat01-TRACE-BEARER-777", "sk-TRACE-QUERY-555"
    lines = []
    for i, (body, u) in enumerate(zip(turns(), [usage(0, 300, 10), usage(300, 20, 5), usage(12, 330, 5)])):
        lines.append(json.dumps({
            "request": {"timestamp": 1_796_000_000 + i, "method": "POST", "url": f"https://api.anthropic.com/v1/messages?beta=true&key={query_key}",
                        "headers": {"authorization": f"Bearer {bearer}", "x-api-key": KEY, "anthropic-version": "2023-06-01",
                                    "openai-organization": "org-TRACE-ORG-1", "x-claude-code-session-id": "trace-1"},
                        "body": body},
            "response": {"timestamp": 1_796_000_000 + i + 0.5, "status_code": 200, "headers": {"content-type": "application/json"},
                         "body": {"type": "message", "usage": u}},
        }))
    source = tmp_path / "claude-trace.jsonl"
    source.write_text("\n".join(lines) + "\n")
    db = tmp_path / "store.db"
    out = run("import", str(source), "--db", str(db))
    assert out.returncode == 0 and "3 exchanges imported" in out.stdout, out.stderr
    html, js = tmp_path / "r.html", tmp_path / "r.json"
    assert run("report", "--db", str(db), "--format", "html", "-o", str(html)).returncode == 0
    assert run("report", "--db", str(db), "--format", "json", "-o", str(js)).returncode == 0
    assert json.loads(js.read_text())["totals"]["requests"] == 3
    written = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.is_file() and p != source)
    for secret in (KEY, bearer, query_key, "org-TRACE-ORG-1"):
        assert secret.encode() not in written, secret


def test_import_bad_file_is_one_line(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"request": {"body": {}}}\nnot json\n')
    out = run("import", str(bad), "--db", str(tmp_path / "x.db"))
    assert out.returncode == 2 and "bad.jsonl:2: invalid JSON" in out.stderr and "Traceback" not in out.stderr
    assert not (tmp_path / "x.db").exists()


def test_sessions_from_claude_code_transcripts(tmp_path):
    project = tmp_path / "projects" / "-home-dev-app"
    project.mkdir(parents=True)
    lines = []
    for i, (read, write) in enumerate([(0, 5000), (5000, 200), (5200, 150)]):
        message = {"id": f"msg_{i}", "model": "claude-sonnet-4-5", "usage": {"input_tokens": 3, "cache_read_input_tokens": read, "cache_creation_input_tokens": write, "output_tokens": 40}}
        for block in range(2):  # one response split over several lines repeating its usage
            lines.append(json.dumps({"type": "assistant", "sessionId": "s-1", "requestId": f"req_{i}", "message": message}))
        lines.append(json.dumps({"type": "user", "sessionId": "s-1", "message": {"role": "user", "content": "next"}}))
    (project / "s-1.jsonl").write_text("\n".join(lines) + "\n")
    out = run("sessions", str(tmp_path / "projects"), "--format", "json")
    assert out.returncode == 0, out.stderr
    [s] = json.loads(out.stdout)
    assert s["requests"] == 3 and s["cache_read_tokens"] == 10200 and s["cache_write_tokens"] == 5350
    assert s["hit_rate"] == round(10200 / (10200 + 5350 + 9), 4)
    text = run("sessions", str(tmp_path / "projects")).stdout
    assert "cannot be named here" in text
    assert run("sessions", str(tmp_path / "nowhere")).returncode == 2


def test_sessions_of_an_unknown_model_say_the_cost_is_unknown_not_zero(tmp_path):
    project = tmp_path / "projects" / "-home-dev-app"
    project.mkdir(parents=True)
    message = {"id": "msg_0", "model": "claude-future-9", "usage": {"input_tokens": 3, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 5000, "output_tokens": 40}}
    (project / "s-2.jsonl").write_text(json.dumps({"type": "assistant", "sessionId": "s-2", "requestId": "req_0", "message": message}) + "\n")
    [s] = json.loads(run("sessions", str(tmp_path / "projects"), "--format", "json").stdout)
    assert (s["cost"], s["unpriced_models"]) == (None, ["claude-future-9"])
    text = run("sessions", str(tmp_path / "projects")).stdout
    assert "cost unknown (no price for claude-future-9)" in text and "$0.0000" not in text


def test_sessions_skip_a_bad_line_and_a_fifo_and_say_so(tmp_path):
    import os

    project = tmp_path / "projects" / "-home-dev-app"
    project.mkdir(parents=True)
    good = {"id": "msg_1", "model": "claude-sonnet-4-5", "usage": {"input_tokens": 3, "cache_read_input_tokens": 100, "cache_creation_input_tokens": 0, "output_tokens": 4}}
    odd = {"id": "msg_2", "model": ["claude-sonnet-4-5"], "usage": {"input_tokens": 3, "output_tokens": 4}}  # a model that is no string
    lines = [json.dumps({"type": "assistant", "sessionId": "s-1", "requestId": "req_1", "message": good}),
             "[" * 100_000,  # deeper than any JSON parser goes
             json.dumps({"type": "assistant", "sessionId": "s-1", "requestId": "req_2", "message": odd}),
             json.dumps({"type": "assistant", "sessionId": "s-1", "requestId": "req_3", "message": dict(good, id="msg_3")})]
    (project / "s-1.jsonl").write_text("\n".join(lines) + "\n")
    os.mkfifo(project / "pipe.jsonl")  # nothing ever writes it: reading it would block forever
    out = subprocess.run([sys.executable, "-m", "cachelint", "sessions", str(tmp_path / "projects"), "--format", "json"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    [s] = json.loads(out.stdout)
    assert s["requests"] == 2 and s["cache_read_tokens"] == 200
    assert "pipe.jsonl: not a regular file" in out.stderr
    assert "skipped 2 transcript lines" in out.stderr and "internal error" not in out.stderr
