"""What the proxy tells about real agent conversations, on request bodies the real CLIs sent (Claude Code 2.1.332,
Codex 0.171.0, captured through `cachelint proxy`: tests/fixtures/agents/, headers cut to those that matter, no
key). Fast: the recorder is fed directly; tests/test_agents.py drives the CLIs themselves."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cachelint.diff import explain
from cachelint.prompt import Exchange, build_prompt
from cachelint.record.analyze import Recorder
from cachelint.record.exchange import Captured
from cachelint.record.store import Store
from cachelint.tokens import counter_for

FIXTURES = Path(__file__).parent / "fixtures" / "agents"
CLAUDE = ["claude-code-2.1.332-p", "claude-code-2.1.332-c-p", "claude-code-2.1.332-c-p-haiku"]
CODEX = ["codex-0.171.0-turn1", "codex-0.171.0-compaction1", "codex-0.171.0-turn2", "codex-0.171.0-compaction2", "codex-0.171.0-turn3-mini"]
CLAUDE_SESSION = "34855e15-623b-4fb0-b103-0806a5494027"
CODEX_THREAD = "01a23044-feee-7453-a252-87d0fd0e689a"


def fixture(name: str) -> dict:
    return json.loads((FIXTURES / f"{name}.json").read_text())["request"]


def anthropic_response(prompt_tokens: int, read: int, write: int) -> bytes:
    usage = {"input_tokens": prompt_tokens - read - write, "cache_read_input_tokens": read, "cache_creation_input_tokens": write, "output_tokens": 5}
    return json.dumps({"id": "msg_1", "type": "message", "role": "assistant", "content": [{"type": "text", "text": "ok"}], "usage": usage}).encode()


def responses_sse(prompt_tokens: int, read: int) -> bytes:
    done = {"type": "response.completed", "response": {"id": "resp_1", "status": "completed", "output": [],
            "usage": {"input_tokens": prompt_tokens, "input_tokens_details": {"cached_tokens": read}, "output_tokens": 3}}}
    return f"event: response.completed\ndata: {json.dumps(done)}\n\n".encode()


def captured(request: dict, body: dict | None = None, response: bytes = b"", status: int = 200, error: str | None = None, at: float | None = None) -> Captured:
    raw = json.dumps(body if body is not None else request["body"]).encode()
    headers = list(request["headers"].items()) + [("x-api-key", "sk-ant-test-SECRET")]
    return Captured(at or time.time(), "POST", "http://127.0.0.1:1" + request["path"], headers, raw, status=status,
                    response_body=response, error=error, ended_at=time.time())


# What the provider reports for each request of CLAUDE / CODEX, as it would: a turn that extends the previous
# one reads its prefix; a model switch reads nothing (another model's cache); the compaction calls are side calls.
USAGE = {
    "claude-code-2.1.332-p": (20000, 0, 20000), "claude-code-2.1.332-c-p": (20300, 20000, 300),
    "claude-code-2.1.332-c-p-haiku": (20000, 0, 20000),
    "codex-0.171.0-turn1": (9000, 0), "codex-0.171.0-compaction1": (9000, 0), "codex-0.171.0-turn2": (9000, 8960),
    "codex-0.171.0-compaction2": (9000, 8960), "codex-0.171.0-turn3-mini": (9000, 0),
}


def record_all(recorder: Recorder, names: list[str], provider: str):
    rows = []
    for name in names:
        req = fixture(name)
        response = anthropic_response(*USAGE[name]) if provider == "anthropic" else responses_sse(*USAGE[name])
        rows.append(recorder.record(captured(req, response=response)))
    return rows


def test_claude_code_model_switch_is_a_break_of_the_same_conversation(tmp_path):
    rows = record_all(Recorder(Store(tmp_path / "s.db")), CLAUDE, "anthropic")
    assert {r.session for r in rows} == {CLAUDE_SESSION}  # one conversation, named by Claude Code's own id
    assert [r.seq for r in rows] == [1, 2, 3]
    assert rows[1].brk["cause"] == "none"  # `-c -p`: the history appended to, blocks and strings alike
    assert (rows[2].brk["cause"], rows[2].brk["rule"], rows[2].model) == ("model_changed", "CL401", "claude-haiku-4-5")
    assert rows[2].wasted_prefill_tokens == 20000  # from the usage: nothing read, all of it again


def test_claude_code_newest_message_as_block_then_string_is_no_break():
    first = fixture(CLAUDE[0])["body"]
    before = copy.deepcopy(first)
    before["messages"] = [{"role": "user", "content": [{"type": "text", "text": "fix the failing test", "cache_control": {"type": "ephemeral"}}]}]
    after = copy.deepcopy(before)
    after["messages"][0]["content"] = "fix the failing test"  # the same message a request later, as a string
    after["messages"] += [{"role": "assistant", "content": [{"type": "text", "text": "Done."}]},
                          {"role": "user", "content": [{"type": "text", "text": "thanks", "cache_control": {"type": "ephemeral"}}]}]
    b, a = build_prompt(Exchange(before)), build_prompt(Exchange(after))
    brk = explain(b, a, counter_for(a.provider, a.model))
    assert (brk.cause, brk.rule, brk.reprefilled_tokens) == ("none", None, 0)


def title_call(main: dict, text: str) -> dict:
    """Claude Code's side call for a title: its own small prompt on a small model, no tools, no breakpoint; the
    billing header block (system/0) differs per call."""
    return {"model": "claude-haiku-4-5", "max_tokens": 512, "metadata": main["metadata"],
            "system": [{"type": "text", "text": f"x-anthropic-billing-header: cc_version=2.1.332.{text[:3]}; cc_entrypoint=cli;"},
                       {"type": "text", "text": "Summarize this coding conversation in under 50 characters as a title."}],
            "messages": [{"role": "user", "content": text}]}


def test_side_calls_below_the_minimum_are_kept_apart_and_waste_nothing(tmp_path):
    recorder = Recorder(Store(tmp_path / "s.db"))
    main = fixture(CLAUDE[0])
    rows = [recorder.record(captured(main, response=anthropic_response(20000, 0, 20000)))]
    for text in ("fix the failing test", "why is CI red"):
        side = title_call(main["body"], text)
        rows.append(recorder.record(captured(main, body=side, response=anthropic_response(420, 0, 0))))
    follow = fixture(CLAUDE[1])
    rows.append(recorder.record(captured(follow, response=anthropic_response(20300, 20000, 300))))
    assert [r.session for r in rows] == [CLAUDE_SESSION, f"{CLAUDE_SESSION}/side-claude-haiku-4-5", f"{CLAUDE_SESSION}/side-claude-haiku-4-5", CLAUDE_SESSION]
    # the second title call differs from the first (its billing block), but the first was never cached
    assert (rows[2].brk["cause"], rows[2].brk["not_cacheable"]) == ("none", "no cache_control breakpoint")
    assert [r.wasted_prefill_tokens for r in rows] == [0, 0, 0, 0]
    assert rows[3].seq == 2 and rows[3].brk["cause"] == "none"  # the side calls did not touch the main line


def test_every_divergence_is_listed_in_prefix_order_with_its_pointer():
    req = fixture(CLAUDE[1])
    after_body = copy.deepcopy(req["body"])
    after_body["tools"][1]["description"] += " Prefer rg."
    after_body["system"][2]["text"] = after_body["system"][2]["text"].replace("agent", "assistant", 1)
    headers = dict(req["headers"])
    b = build_prompt(Exchange(req["body"], path=req["path"], headers=headers))
    a = build_prompt(Exchange(after_body, path=req["path"], headers=dict(headers, **{"anthropic-beta": headers["anthropic-beta"] + ",fast-mode-2026-01-01"})))
    data = explain(b, a, counter_for(a.provider, a.model)).to_json()
    assert (data["cause"], data["detail"], data["header"]) == ("params_changed", "anthropic-beta", "anthropic-beta")
    found = [(d["cause"], d["location"]["pointer"], d["first"]) for d in data["divergences"]]
    assert found == [("tools_changed", "/tools/1/description", False), ("system_changed", "/system/2/text", False),
                     ("params_changed", None, True)]
    assert data["divergences"][-1]["header"] == "anthropic-beta"


def test_codex_conversation_is_one_session_with_compaction_and_model_switch(tmp_path):
    rows = record_all(Recorder(Store(tmp_path / "s.db")), CODEX, "openai-responses")
    main = [r for r in rows if r.session == CODEX_THREAD]
    side = [r for r in rows if r.session != CODEX_THREAD]
    assert [r.seq for r in main] == [1, 2, 3]  # the three turns, named by Codex's thread id
    assert {r.session for r in side} == {f"{CODEX_THREAD}/side-compaction"}
    assert main[1].brk["cause"] == "none"  # the compacted history still starts with the first turn's prompt
    brk = main[2].brk
    assert (brk["cause"], brk["rule"]) == ("model_changed", "CL401")
    causes = [d["cause"] for d in brk["divergences"]]
    assert "compaction" in causes and "model_changed" in causes
    assert not [d for d in brk["divergences"] if d["rule"] in ("CL101", "CL301")]  # the summary is no edited history
    assert next(d for d in brk["divergences"] if d["cause"] == "compaction")["location"]["pointer"].startswith("/input/")
    assert all(r.error is None for r in rows)  # complete streams


def test_codex_compaction_without_a_model_switch_is_named_compaction(tmp_path):
    recorder = Recorder(Store(tmp_path / "s.db"))
    names = ["codex-0.171.0-turn2", "codex-0.171.0-compaction2", "codex-0.171.0-turn3-mini"]
    rows = []
    for name in names:
        req = fixture(name)
        body = dict(req["body"], model="gpt-5.1-codex")
        rows.append(recorder.record(captured(req, body=body, response=responses_sse(9000, 0))))
    brk = rows[2].brk
    assert (brk["cause"], brk["detail"], brk["rule"]) == ("compaction", "history_summarized", None)
    assert [(d["cause"], d["first"]) for d in brk["divergences"]] == [("compaction", True)]
    assert rows[2].wasted_prefill_tokens > 0  # it is what a compaction costs, reported as such


def codex_additional_tools(body: dict) -> dict:
    """Codex's other layout: the tools as a leading `additional_tools` input item, the top-level list empty."""
    out = copy.deepcopy(body)
    out["input"] = [{"type": "additional_tools", "tools": out.pop("tools")}] + out["input"]
    out["tools"] = []
    return out


def codex_diff(before: dict, after: dict):
    b, a = build_prompt(Exchange(before, path="/v1/responses")), build_prompt(Exchange(after, path="/v1/responses"))
    return explain(b, a, counter_for(a.provider, a.model)), b


def test_codex_additional_tools_are_the_tools_section():
    body = codex_additional_tools(fixture(CODEX[0])["body"])
    prompt = build_prompt(Exchange(body, path="/v1/responses"))
    assert [b.section for b in prompt.blocks[:10]] == ["tools"] * 9 + ["system"]
    swapped = copy.deepcopy(body)
    tools = swapped["input"][0]["tools"]
    tools[0], tools[1] = tools[1], tools[0]
    brk, _ = codex_diff(body, swapped)
    assert (brk.cause, brk.detail, brk.rule) == ("tools_changed", "tools_reordered", "CL201")
    edited = copy.deepcopy(body)
    edited["input"][1]["content"][0]["text"] += "\nAlways answer in French."
    brk, _ = codex_diff(body, edited)
    assert (brk.cause, brk.detail, brk.pointer) == ("system_changed", "text_edited", "/input/1/content/0/text")


def test_codex_item_ids_minted_again_are_no_change():
    before = fixture(CODEX[2])["body"]
    after = copy.deepcopy(before)
    for i, item in enumerate(after["input"]):
        item["id"] = f"msg_reminted_{i}"
    after["input"].append({"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "shell", "arguments": "{}"})
    before2 = copy.deepcopy(after)
    before2["input"][-1]["id"] = "fc_other"
    assert codex_diff(before, after)[0].cause == "none"
    assert codex_diff(before2, after)[0].cause == "none"


def test_a_complete_stream_is_not_an_error_when_the_client_disconnects(tmp_path):
    recorder = Recorder(Store(tmp_path / "s.db"))
    req = fixture(CODEX[0])
    whole = recorder.record(captured(req, response=responses_sse(9000, 0), error="Client disconnected."))
    cut = recorder.record(captured(req, response=b"event: response.created\ndata: {\"type\":\"response.created\"}\n\n", error="Client disconnected."))
    assert whole.error is None and whole.prompt_tokens == 9000
    assert cut.error == "Client disconnected."


def test_session_ids_do_not_collide_across_restarts(tmp_path):
    db = tmp_path / "s.db"
    body = {"model": "gpt-5.1", "input": [{"role": "user", "content": "hello " * 50}]}
    req = {"path": "/v1/responses", "headers": {}, "body": body}
    first = Recorder(Store(db))
    first.sessions.run = "run1"
    one = first.record(captured(req, response=responses_sse(100, 0)))
    second = Recorder(Store(db))
    second.sessions.run = "run2"
    stranger = {"path": "/v1/responses", "headers": {}, "body": {"model": "gpt-5.1", "input": [{"role": "user", "content": "bonjour " * 50}]}}
    two = second.record(captured(stranger, response=responses_sse(100, 0)))
    assert one.session != two.session  # another conversation after a restart gets a name of its own
    goes_on = dict(req, body=dict(body, input=body["input"] + [{"role": "assistant", "content": "hi"}, {"role": "user", "content": "more"}]))
    three = second.record(captured(goes_on, response=responses_sse(120, 100)))
    assert (three.session, three.seq) == (one.session, 2)  # the stored conversation, carried on, goes on
    # a conversation with its own id goes on where the store left it
    keyed = fixture(CODEX[0])
    a = Recorder(Store(db)).record(captured(keyed, response=responses_sse(9000, 0)))
    b = Recorder(Store(db)).record(captured(fixture(CODEX[2]), response=responses_sse(9000, 0)))
    assert (a.session, a.seq, b.session, b.seq) == (CODEX_THREAD, 1, CODEX_THREAD, 2)


def test_lineage_follows_a_conversation_onto_another_model_but_keeps_strangers_apart(tmp_path):
    recorder = Recorder(Store(tmp_path / "s.db"))
    tools = [{"type": "function", "name": "shell", "parameters": {"type": "object", "properties": {}}}]

    def body(model, system, turns):
        return {"model": model, "tools": tools, "instructions": system, "input": [{"role": "user", "content": t} for t in turns]}

    def rec(b):
        return recorder.record(captured({"path": "/v1/responses", "headers": {}, "body": b}, response=responses_sse(2000, 0)))

    a1 = rec(body("gpt-5.1", "You fix bugs. " * 200, ["first task"]))
    b1 = rec(body("gpt-5.1-mini", "You write docs. " * 200, ["first task"]))  # shares only the tools
    a2 = rec(body("gpt-5.1-mini", "You fix bugs. " * 200, ["first task", "go on"]))  # a1's history, another model
    assert a1.session != b1.session and a2.session == a1.session
    assert (a2.seq, a2.brk["cause"], a2.brk["rule"]) == (2, "model_changed", "CL401")


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cachelint", *args], capture_output=True, text=True, timeout=120)


def test_report_session_takes_the_id_sessions_prints(tmp_path):
    db = tmp_path / "s.db"
    record_all(Recorder(Store(db)), CODEX, "openai-responses")
    printed = json.loads(run("sessions", str(FIXTURES / "codex-sessions"), "--format", "json").stdout)
    [s] = printed
    assert (s["session"], s["agent"], s["requests"]) == (CODEX_THREAD, "codex", 5)
    out = run("report", "--db", str(db), "--session", s["session"], "--format", "json")
    assert out.returncode == 0, out.stderr
    names = [x["session"] for x in json.loads(out.stdout)["sessions"]]
    assert names == [CODEX_THREAD, f"{CODEX_THREAD}/side-compaction"]
    text = run("report", "--db", str(db), "--session", s["session"]).stdout
    assert "model_changed/model CL401" in text and "fix: " in text and "also: compaction" in text


def test_codex_rollout_usage_is_read():
    from cachelint.record.transcripts import read_sessions

    [s] = read_sessions(FIXTURES / "codex-sessions")
    # the rollout's token_usage_record lines, one per response, as the stand-in reported them
    assert (s.requests, s.prompt_tokens, s.cache_read_tokens) == (5, 43581, 9472)
    assert s.models == {"gpt-5.1-codex", "gpt-5.1-codex-mini"}


def test_synthetic_entries_are_not_responses(tmp_path):
    from cachelint.record.transcripts import read_sessions

    project = tmp_path / "-home-dev-app"
    project.mkdir()
    real = {"type": "assistant", "sessionId": "s-1", "requestId": "req_1",
            "message": {"id": "msg_1", "model": "claude-sonnet-4-5", "usage": {"input_tokens": 3, "cache_read_input_tokens": 900, "cache_creation_input_tokens": 100, "output_tokens": 4}}}
    synthetic = {"type": "assistant", "sessionId": "s-1",
                 "message": {"id": "msg_2", "model": "<synthetic>", "usage": {"input_tokens": 0, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0, "output_tokens": 0}}}
    (project / "s-1.jsonl").write_text(json.dumps(real) + "\n" + json.dumps(synthetic) + "\n")
    [s] = read_sessions(tmp_path)
    assert (s.requests, s.models, s.low_hit_responses if hasattr(s, "low_hit_responses") else s.misses) == (1, {"claude-sonnet-4-5"}, 0)


@pytest.mark.parametrize("name", CLAUDE + CODEX)
def test_fixtures_hold_no_key(name):
    request = fixture(name)
    assert not {"x-api-key", "authorization"} & {h.lower() for h in request["headers"]}
    assert "dummy-KEY" not in (FIXTURES / f"{name}.json").read_text()  # the key the CLIs were given


def test_websocket_requests_are_rebuilt_from_the_connections_earlier_responses():
    from cachelint.record.websocket import ResponsesSocket

    socket = ResponsesSocket("http://127.0.0.1:1/v1/responses", [("session-id", CODEX_THREAD)])
    turn = fixture(CODEX[0])["body"]
    assert socket.client_message(json.dumps({"type": "response.create", **turn}), 1.0) is None
    reply = {"id": "msg_9", "type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "hi"}]}
    done = {"type": "response.completed", "response": {"id": "resp_9", "output": [reply], "usage": {"input_tokens": 9000, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 1}}}
    assert socket.server_message(json.dumps({"type": "response.created"}), 1.1) is None
    first = socket.server_message(json.dumps(done), 1.2)
    assert (first.method, first.status, first.error, first.first_byte_at) == ("WS", 200, None, 1.1)
    new = [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "and again"}]}]
    socket.client_message(json.dumps({"type": "response.create", **dict(turn, input=new), "previous_response_id": "resp_9"}), 2.0)
    second = socket.close(2.5, None)  # the connection dropped before the answer
    body = json.loads(second.request_body)
    assert body["input"] == turn["input"] + [reply] + new
    assert second.error == "the connection closed before the response completed"
    socket.client_message(json.dumps({"type": "response.create", **dict(turn, input=new), "previous_response_id": "resp_older"}), 3.0)
    third = socket.server_message(json.dumps(done), 3.1)
    assert "was not seen on this connection" in third.error and json.loads(third.request_body)["input"] == new
