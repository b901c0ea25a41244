"""`cachelint replay` without an engine: sources, conversion, what-if variants, metrics, errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from replay_trace import write_trace

from cachelint.errors import CachelintError
from cachelint.record.analyze import Recorder, RecorderOptions
from cachelint.record.importers import read
from cachelint.record.store import Store
from cachelint.replay import whatif
from cachelint.replay.convert import chat_request, engine_body, tokenize_body
from cachelint.replay.engine import Engine, parse_metrics, root_url
from cachelint.replay.launch import VllmServer, server_command, server_env
from cachelint.replay.run import Summary, percentile, sessions_of
from cachelint.replay.source import load

SYS = {"role": "system", "content": "You are terse."}


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cachelint", *args], capture_output=True, text=True, timeout=120, check=False)


@pytest.fixture(scope="module")
def trace(tmp_path_factory) -> Path:
    return write_trace(tmp_path_factory.mktemp("trace") / "trace.jsonl")


# --- source ---------------------------------------------------------------------------------------------------


def test_a_trace_file_loads_in_recorded_order_with_the_proxys_sessions(trace):
    recorded = load(trace)
    assert len(recorded) == 20
    assert [r.started_at for r in recorded] == sorted(r.started_at for r in recorded)
    sessions = list(dict.fromkeys(r.session for r in recorded))
    assert len(sessions) == 4 and "sess-ts" in sessions
    causes = {(r.session.split("/")[0], r.seq): r.cause for r in recorded}
    assert causes[("sess-ts", 3)] == "system_changed"
    assert causes[("sess-tools", 3)] == "tools_changed"


def test_a_store_loads_one_session_and_names_the_others_when_it_is_missing(trace, tmp_path):
    store = Store(tmp_path / "c.db")
    recorder = Recorder(store)
    for captured in read(trace):
        recorder.record(captured)
    store.close()
    only = load(tmp_path / "c.db", "sess-tools")
    assert len(only) == 5 and {r.session for r in only} == {"sess-tools"}
    with pytest.raises(CachelintError, match=r"no session 'nope' \(sessions: sess-ts"):
        load(tmp_path / "c.db", "nope")


def test_a_store_without_bodies_says_there_is_nothing_to_replay(trace, tmp_path):
    store = Store(tmp_path / "h.db")
    recorder = Recorder(store, RecorderOptions(store_bodies=False))
    for captured in read(trace):
        recorder.record(captured)
    store.close()
    with pytest.raises(CachelintError, match="recorded without bodies"):
        load(tmp_path / "h.db")


def test_bad_sources_are_one_line_errors(tmp_path):
    with pytest.raises(CachelintError, match="no such file"):
        load(tmp_path / "missing.jsonl")
    with pytest.raises(CachelintError, match="is a directory"):
        load(tmp_path)
    (tmp_path / "empty.jsonl").write_text("")
    with pytest.raises(CachelintError, match="no recorded LLM requests"):
        load(tmp_path / "empty.jsonl")


# --- conversion -----------------------------------------------------------------------------------------------


def test_anthropic_requests_become_chat_requests_with_tool_calls_and_results(trace):
    recorded = load(trace)
    turn2 = next(r for r in recorded if r.session.startswith("sess-ts") and r.seq == 2)
    request = chat_request(turn2.prompt)
    roles = [m["role"] for m in request["messages"]]
    assert roles == ["system", "user", "assistant", "tool"]
    assert request["messages"][0]["content"].startswith("Session started 2026-11-29T10:00:00Z.")
    call = request["messages"][2]["tool_calls"][0]
    assert call["function"]["name"] == "read_file" and json.loads(call["function"]["arguments"]) == {"path": "app/handlers_1.py"}
    assert request["messages"][3]["tool_call_id"] == call["id"]
    assert [t["function"]["name"] for t in request["tools"]] == ["read_file", "run_tests", "edit_file", "search_code"]


def test_openai_requests_go_as_they_are(trace):
    recorded = load(trace)
    r = next(r for r in recorded if r.prompt.provider == "openai-chat" and r.seq == 3)
    assert chat_request(r.prompt) == {"messages": r.prompt.body["messages"], "tools": r.prompt.body["tools"]}


def test_the_engine_body_measures_prefill_and_keeps_tools_in_the_prompt():
    body = engine_body({"messages": [SYS], "tools": [{"type": "function", "function": {"name": "a"}}]}, "m", cache_salt="s1")
    assert body["max_tokens"] == 1 and body["temperature"] == 0 and body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["tool_choice"] == "none" and body["cache_salt"] == "s1"
    plain = engine_body({"messages": [SYS], "tools": []}, "m")
    assert "tools" not in plain and "tool_choice" not in plain and "cache_salt" not in plain
    assert tokenize_body({"messages": [SYS], "tools": []}, "m") == {"model": "m", "messages": [SYS], "add_generation_prompt": True}


# --- what-if --------------------------------------------------------------------------------------------------


def _req(system: str, *messages: str, tools: tuple[str, ...] = ("a", "b")) -> dict:
    return {
        "messages": [{"role": "system", "content": system}, *({"role": "user" if i % 2 == 0 else "assistant", "content": m} for i, m in enumerate(messages))],
        "tools": [{"type": "function", "function": {"name": n}} for n in tools],
    }


def test_freeze_volatile_keeps_the_first_timestamp_of_the_session_and_leaves_real_edits():
    requests = [
        _req("Now: 2026-11-29T10:00:00Z. Be terse.", "q1"),
        _req("Now: 2026-11-29T10:05:00Z. Be terse.", "q1", "a1", "q2"),
        _req("Now: 2026-11-29T10:09:30Z. Be terse.", "q1", "a1", "q2", "a2", "q3"),
        _req("Now: 2026-11-29T10:09:30Z. Be verbose.", "q1", "a1", "q2", "a2", "q3", "a3", "q4"),
    ]
    fixed = whatif.apply("freeze-volatile", {"s": requests})["s"]
    assert [r["messages"][0]["content"] for r in fixed[:3]] == ["Now: 2026-11-29T10:00:00Z. Be terse."] * 3
    assert fixed[3]["messages"][0]["content"] == "Now: 2026-11-29T10:09:30Z. Be verbose."  # an edit, not a volatile value
    assert fixed[2]["messages"][1:] == requests[2]["messages"][1:]
    assert requests[1]["messages"][0]["content"].endswith("10:05:00Z. Be terse.")  # the recorded copy is untouched


def test_sort_tools_gives_every_request_the_same_order():
    requests = [_req("s", "q1", tools=("b", "a", "c")), _req("s", "q1", "a1", "q2", tools=("c", "b", "a"))]
    fixed = whatif.apply("sort-tools", {"s": requests})["s"]
    assert [[t["function"]["name"] for t in r["tools"]] for r in fixed] == [["a", "b", "c"]] * 2


def test_keep_history_restores_dropped_turns_and_keeps_what_is_new():
    full = _req("s", "q1", "a1", "q2", "a2", "q3")
    truncated = _req("s", "q2", "a2", "q3", "a3", "q4")  # q1, a1 dropped
    fixed = whatif.apply("keep-history", {"s": [full, truncated]})["s"]
    assert [m["content"] for m in fixed[1]["messages"]] == ["s", "q1", "a1", "q2", "a2", "q3", "a3", "q4"]
    edited = _req("s", "q1 (edited)", "a1", "q2", "a2", "q3", "a3", "q4")  # an edit is not a truncation
    assert whatif.apply("keep-history", {"s": [full, edited]})["s"][1] == edited


def test_all_combines_the_fixes_and_unknown_variants_are_refused():
    requests = [
        _req("t=2026-11-29T10:00:00Z", "q1", "a1", "q2", tools=("b", "a")),
        _req("t=2026-11-29T10:01:00Z", "q2", "a2", "q3", tools=("a", "b")),  # q1, a1 dropped
    ]
    fixed = whatif.apply("all", {"s": requests})["s"][1]
    assert fixed["messages"][0]["content"] == "t=2026-11-29T10:00:00Z"
    assert [m["content"] for m in fixed["messages"][1:]] == ["q1", "a1", "q2", "a2", "q3"]
    assert [t["function"]["name"] for t in fixed["tools"]] == ["a", "b"]
    assert whatif.parse_variants("sort-tools, all,sort-tools") == ["sort-tools", "all"]
    with pytest.raises(CachelintError, match="unknown what-if variant 'sort'"):
        whatif.parse_variants("sort")


# --- engine protocol ------------------------------------------------------------------------------------------

METRICS = """\
# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig
# TYPE vllm:cache_config_info gauge
vllm:cache_config_info{block_size="128",enable_prefix_caching="True",num_gpu_blocks="8192",prefix_caching_hash_algo="sha256"} 1.0
vllm:prefix_cache_queries_total{engine="0",model_name="tiny"} 1932.0
vllm:prefix_cache_hits_total{engine="0",model_name="tiny"} 640.0
vllm:prefix_cache_hits_total{engine="0",model_name="other"} 5.0
"""


def test_metrics_give_block_size_block_count_and_the_models_counters():
    engine = Engine("http://127.0.0.1:9/v1", "tiny")
    parsed = parse_metrics(METRICS)
    config = engine.cache_config(parsed)
    assert (config.block_size, config.num_blocks, config.hash_algo) == (128, 8192, "sha256")
    counters = engine.prefix_counters(parsed)
    assert (counters.queries, counters.hits) == (1932.0, 640.0)


def test_a_server_without_prefix_caching_or_without_cache_info_is_refused():
    engine = Engine("http://127.0.0.1:9", "tiny")
    with pytest.raises(CachelintError, match="without prefix caching: start it with --enable-prefix-caching"):
        engine.cache_config(parse_metrics(METRICS.replace('enable_prefix_caching="True"', 'enable_prefix_caching="False"')))
    with pytest.raises(CachelintError, match="no vllm:cache_config_info"):
        engine.cache_config(parse_metrics("vllm:prefix_cache_hits_total 1.0\n"))


def test_base_url_takes_the_root_or_the_v1_url():
    assert root_url("http://h:8000") == root_url("http://h:8000/v1/") == "http://h:8000"
    with pytest.raises(CachelintError, match="expected an http"):
        root_url("h:8000")


def test_summary_numbers():
    assert percentile([5, 1, 3, 2, 4], 50) == 3 and percentile([1.0] * 99 + [100.0], 99) == 1.0
    assert percentile([1.0] * 98 + [100.0, 100.0], 99) == 100.0 and percentile([], 50) is None
    assert Summary.of([]).agreement == 1.0


def test_sessions_group_requests_in_order(trace):
    sessions = sessions_of(load(trace))
    assert [len(v) for v in sessions.values()] == [5, 5, 5, 5]


# --- launch and CLI errors ------------------------------------------------------------------------------------


def test_the_launched_server_has_prefix_caching_details_and_stable_hashes(tmp_path):
    command = server_command("py", "/m", "tiny", 8123, ["--max-model-len", "4096"])
    assert command[:3] == ["py", "-m", "vllm.entrypoints.openai.api_server"]
    assert {"--enable-prefix-caching", "--enable-prompt-tokens-details"} <= set(command)
    assert command[command.index("--host") + 1] == "127.0.0.1" and command[-2:] == ["--max-model-len", "4096"]
    env = server_env({"PATH": "/bin"})
    assert env["PYTHONHASHSEED"] == "0" and env["HF_HUB_OFFLINE"] == "1"
    assert server_env({"PYTHONHASHSEED": "7"})["PYTHONHASHSEED"] == "7"
    with pytest.raises(CachelintError, match="no such model directory"):
        VllmServer(str(tmp_path / "nope"), "x")


def test_launch_with_a_python_without_vllm_is_one_line(trace, tmp_path):
    result = cli("replay", str(trace), "--launch", str(tmp_path), "--vllm-python", sys.executable)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1].endswith("cannot import vllm: pass --vllm-python (or set CACHELINT_VLLM_PYTHON) to a Python with vLLM installed")
    assert "Traceback" not in result.stderr


def test_an_unreachable_server_is_one_line_and_exit_2(trace):
    result = cli("replay", str(trace), "--base-url", "http://127.0.0.1:9/v1", "--model", "m")
    assert result.returncode == 2
    assert result.stderr.startswith("cachelint: error: cannot reach the vLLM server at http://127.0.0.1:9")
    assert len(result.stderr.strip().splitlines()) == 1


def test_cli_usage_errors(trace):
    assert cli("replay", str(trace)).returncode == 2
    both = cli("replay", str(trace), "--base-url", "http://x", "--launch", ".")
    assert both.returncode == 2 and "not both" in both.stderr
    bad = cli("replay", str(trace), "--base-url", "http://127.0.0.1:9", "--what-if", "sort")
    assert bad.returncode == 2 and "unknown what-if variant 'sort'" in bad.stderr


def test_a_server_that_is_not_vllm_is_one_line(trace, tmp_path):
    import socket
    import time

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1", "--directory", str(tmp_path)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        result = cli("replay", str(trace), "--base-url", f"http://127.0.0.1:{port}", "--model", "m")
    finally:
        server.terminate()
        server.wait(10)
    assert result.returncode == 2
    assert result.stderr.strip() == f"cachelint: error: http://127.0.0.1:{port}/v1/models answered HTTP 404: not an OpenAI-compatible server"


def test_freeze_volatile_leaves_a_truncated_history_alone():
    """After the oldest turns are dropped, "run step 2 of 5" sits where "run step 1 of 5" was: not a clock."""
    previous = _req("sys", "run step 1 of 5", "done 1", "run step 2 of 5")
    truncated = _req("sys", "run step 2 of 5", "done 2", "run step 3 of 5")
    assert whatif.apply("freeze-volatile", {"s": [previous, truncated]})["s"][1] == truncated
    fixed = whatif.apply("all", {"s": [previous, truncated]})["s"][1]  # keep-history first, then nothing to freeze
    assert [m["content"] for m in fixed["messages"]][-2:] == ["done 2", "run step 3 of 5"]
    edited = _req("sys (edited)", "q1", "a1", "q2")
    assert whatif.apply("freeze-volatile", {"s": [_req("sys", "q1"), edited]})["s"][1] == edited


def test_a_server_without_tokenize_is_one_line(trace):
    """/v1/models and /metrics answer, /tokenize does not: the prediction is impossible; say so, exit 2."""
    import http.server
    import threading

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = {"/v1/models": b'{"data": [{"id": "m"}]}',
                    "/metrics": b'vllm:cache_config_info{block_size="16",enable_prefix_caching="True",num_gpu_blocks="100"} 1.0\n'}.get(self.path)
            self.send_response(200 if body else 404)
            self.end_headers()
            self.wfile.write(body or b"")

        def do_POST(self):
            self.send_response(404)
            self.end_headers()

        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        result = cli("replay", str(trace), "--base-url", f"http://127.0.0.1:{httpd.server_port}/v1", "--model", "m")
    finally:
        httpd.shutdown()
    assert result.returncode == 2
    assert result.stderr.strip().startswith(f"cachelint: error: http://127.0.0.1:{httpd.server_port}/tokenize answered HTTP 404: the replay needs vLLM's /tokenize")
    assert len(result.stderr.strip().splitlines()) == 1


# --- a server that misbehaves: every engine call is bounded in time and size (issue 18) -----------------------

_MODELS = b'{"data": [{"id": "m"}]}'
_METRICS = b'vllm:cache_config_info{block_size="16",enable_prefix_caching="True",num_gpu_blocks="100"} 1.0\n'


def _misbehaving_server(behaviour: str):
    """A small HTTP server that answers /v1/models (and, for the chat cases, /metrics and /tokenize) the way
    `behaviour` says. Every endless answer stops by itself after 60 s or when the client hangs up."""
    import http.server
    import threading
    import time

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def _send(self, body: bytes, content_type: str = "application/json") -> None:
            self.send_response(200)
            self.send_header("content-type", content_type)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _endless(self, piece: bytes, pause: float, headers: dict[str, str] | None = None) -> None:
            self.send_response(200)
            for name, value in (headers or {"content-type": "application/json"}).items():
                self.send_header(name, value)
            self.send_header("connection", "close")
            self.end_headers()
            self.wfile.write(b'{"data": [')  # a JSON answer that never closes
            stop = time.monotonic() + 60
            try:
                while time.monotonic() < stop:
                    self.wfile.write(piece)
                    self.wfile.flush()
                    if pause:
                        time.sleep(pause)
            except OSError:  # the client hung up: what the test expects
                pass
            self.close_connection = True

        def do_GET(self):
            if self.path == "/metrics":
                return self._send(_METRICS, "text/plain")
            if behaviour == "models-trickle":
                return self._endless(b" ", 0.1)
            if behaviour == "models-endless":
                return self._endless(b'{"id": "m"},' * 5000, 0.0)
            if behaviour == "models-stall":
                self.send_response(200)
                self.send_header("content-length", "100")
                self.end_headers()
                self.wfile.flush()
                time.sleep(30)
                return None
            if behaviour == "models-huge-length":
                self.send_response(200)
                self.send_header("content-length", str(10**12))
                self.end_headers()
                return None
            if behaviour == "models-gzip":
                import gzip

                body = gzip.compress(b" " * 50_000_000)
                self.send_response(200)
                self.send_header("content-encoding", "gzip")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return None
            return self._send(_MODELS)

        def do_POST(self):
            self.rfile.read(int(self.headers.get("content-length", 0)))
            if self.path == "/tokenize":
                return self._send(b'{"tokens": [1, 2, 3, 4, 5]}')
            if self.path == "/v1/messages/count_tokens" or self.path == "/v1/messages/render":  # no --enable-scale-out
                if not behaviour.startswith("messages-") or self.path.endswith("/render"):
                    self.send_response(404)
                    self.send_header("content-length", "0")
                    self.end_headers()
                    return None
                return self._send(b'{"input_tokens": 5}')
            event = b'data: {"choices": [{"delta": {"content": "x"}}]}\n\n'
            if behaviour in ("messages-ok", "messages-no-details"):
                usage = {"input_tokens": 5, "output_tokens": 1}
                if behaviour == "messages-ok":
                    usage |= {"cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}
                events = [{"type": "message_start", "message": {"usage": {"input_tokens": 5, "output_tokens": 0}}},
                          {"type": "message_delta", "delta": {"stop_reason": "max_tokens"}, "usage": usage}, {"type": "message_stop"}]
                return self._send(b"".join(b"event: %s\ndata: %s\n\n" % (e["type"].encode(), json.dumps(e).encode()) for e in events),
                                  "text/event-stream")
            if behaviour == "messages-forever":
                return self._endless(b'event: ping\ndata: {"type": "ping"}\n\n', 0.05, {"content-type": "text/event-stream"})
            if behaviour == "chat-forever":
                return self._endless(event, 0.05, {"content-type": "text/event-stream"})
            if behaviour == "chat-one-endless-line":
                return self._endless(b"data: " + b"x" * 65536, 0.0, {"content-type": "text/event-stream"})
            return self._send(b"{}")

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd


def _replay_with_peak_rss(trace: Path, url: str, *args: str) -> tuple[subprocess.CompletedProcess[str], int]:
    """Run the CLI in a child and return its result and its peak resident memory in MiB."""
    probe = (
        "import resource, subprocess, sys\n"
        "r = subprocess.run(sys.argv[1:], capture_output=True, text=True, timeout=110)\n"
        "sys.stdout.write(r.stdout); sys.stderr.write(r.stderr)\n"
        "print('PEAK_RSS_KIB', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr)\n"
        "sys.exit(r.returncode)\n"
    )
    command = [sys.executable, "-c", probe, sys.executable, "-m", "cachelint", "replay", str(trace), "--base-url", url, "--model", "m", *args]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    lines = result.stderr.strip().splitlines()
    peak = int(lines[-1].split()[-1]) // 1024
    return subprocess.CompletedProcess(result.args, result.returncode, result.stdout, "\n".join(lines[:-1]) + "\n"), peak


@pytest.mark.parametrize(
    ("behaviour", "says"),
    [
        ("models-trickle", "/v1/models was still sending after 2 s (--timeout): a server that trickles or never ends its answer"),
        ("models-endless", "/v1/models sent more than 16 MiB and was still sending: not a vLLM server, or a broken one"),
        ("models-stall", "/v1/models did not answer within 2 s (--timeout): is the server overloaded or hung?"),
        ("models-huge-length", "/v1/models announced 1,000,000,000,000 bytes, more than the 16 MiB a vLLM answer needs"),
        ("models-gzip", "/v1/models answered with content-encoding 'gzip' though none was asked for: not a vLLM server"),
        ("chat-forever", "/v1/chat/completions was still sending after 2 s (--timeout)"),
        ("chat-one-endless-line", "/v1/chat/completions sent more than 4 MiB and was still sending"),
        ("messages-forever", "/v1/messages was still sending after 2 s (--timeout)"),
    ],
)
def test_a_server_that_trickles_or_never_ends_cannot_hang_the_replay_or_grow_its_memory(trace, behaviour, says):
    httpd = _misbehaving_server(behaviour)
    url = f"http://127.0.0.1:{httpd.server_port}"
    try:
        result, peak_mib = _replay_with_peak_rss(trace, url, "--timeout", "2", "--session", "sess-ts", "--format", "json")
    finally:
        httpd.shutdown()
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"cachelint: error: {url}{says}"), result.stderr
    assert result.stdout == ""
    assert peak_mib < 400, f"peak RSS {peak_mib} MiB"  # the old client read an endless answer into memory


# --- Anthropic requests on vLLM's own Messages API ------------------------------------------------------------


def test_a_recorded_anthropic_request_goes_to_v1_messages_as_recorded(trace):
    from cachelint.replay.convert import as_vllm_renders_messages, count_tokens_body, messages_body

    recorded = next(r for r in load(trace) if r.prompt.provider == "anthropic" and r.seq == 2)
    body = messages_body(recorded.prompt.body, "tiny", cache_salt="s1")
    original = recorded.prompt.body
    assert body["system"] == original["system"] and body["messages"] == original["messages"] and body["tools"] == original["tools"]
    assert body["system"][0]["cache_control"] == {"type": "ephemeral"}  # the marks travel (vLLM ignores them)
    assert (body["model"], body["max_tokens"], body["stream"], body["temperature"]) == ("tiny", 1, True, 0)
    assert body["tool_choice"] == {"type": "none"} and body["cache_salt"] == "s1"
    assert original["model"] == "claude-sonnet-4-5" and "cache_salt" not in original  # the recording is untouched
    assert set(count_tokens_body(original, "tiny")) == {"model", "system", "messages", "tools", "tool_choice"}
    thinking = messages_body({**original, "thinking": {"type": "enabled", "budget_tokens": 31999}}, "tiny")
    assert thinking["thinking"] == {"type": "adaptive"}  # a budget above max_tokens (1) is refused; the prompt is the same
    assert messages_body({**original, "thinking": {"type": "disabled"}}, "tiny")["thinking"] == {"type": "disabled"}
    # what vLLM makes of the system blocks: joined with nothing, Claude Code's billing header left out
    blocks = {"system": [{"type": "text", "text": "x-anthropic-billing-header: cc_version=2; cch=1a2b3;"},
                         {"type": "text", "text": "You are Claude Code."}, {"type": "text", "text": "Be terse."}]}
    request = {"messages": [{"role": "system", "content": "You are Claude Code.\n\nBe terse."}, {"role": "user", "content": "hi"}], "tools": []}
    assert as_vllm_renders_messages(request, blocks)["messages"] == [
        {"role": "system", "content": "You are Claude Code.Be terse."}, {"role": "user", "content": "hi"}]


def test_api_messages_on_a_server_without_it_is_one_line(trace):
    httpd = _misbehaving_server("well-behaved")
    url = f"http://127.0.0.1:{httpd.server_port}"
    try:
        result = cli("replay", str(trace), "--base-url", url, "--model", "m", "--api", "messages", "--timeout", "5")
        with_whatif = cli("replay", str(trace), "--base-url", url, "--model", "m", "--api", "messages", "--what-if", "all")
    finally:
        httpd.shutdown()
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1] == f"cachelint: error: the server at {url} has no /v1/messages (the Anthropic Messages API): use --api chat"
    assert with_whatif.returncode == 2 and "use --api chat with --what-if" in with_whatif.stderr


def test_the_messages_path_reads_its_usage_from_the_anthropic_stream(trace):
    """A stand-in with vLLM's Messages stream: the prompt is input + cache reads + cache writes of message_delta;
    without the cache fields (prompt token details off) the replay says how to start the server."""
    results = {}
    for behaviour in ("messages-ok", "messages-no-details"):
        httpd = _misbehaving_server(behaviour)
        try:
            results[behaviour] = cli("replay", str(trace), "--base-url", f"http://127.0.0.1:{httpd.server_port}", "--model", "m",
                                     "--session", "sess-ts", "--api", "messages", "--format", "json", "--timeout", "10")
        finally:
            httpd.shutdown()
    ok = results["messages-ok"]
    assert ok.returncode == 0, ok.stderr
    data = json.loads(ok.stdout)
    assert data["engine"]["api"] == "messages" and data["summary"]["agreement"] == 1.0
    assert [(r["prompt_tokens"], r["cached_tokens"]) for r in data["requests"]] == [(5, 0)] * 5
    off = results["messages-no-details"]
    assert off.returncode == 2 and off.stderr.strip().endswith("reports no prompt_tokens_details: start it with --enable-prompt-tokens-details")
