"""`cachelint proxy` end to end: the real anthropic / openai SDK clients, through the real mitmproxy with the
cachelint addon, to a local upstream that speaks the providers' wire formats (tests/upstream.py)."""

from __future__ import annotations

import asyncio
import json
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import anthropic
import httpx
import openai
import pytest

from upstream import Upstream

API_KEY = "sk-ant-test-SECRET-KEY-0123456789"
OPENAI_KEY = "sk-proj-SECRET-OPENAI-0123456789"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port: int, process: subprocess.Popen, seconds: float = 60) -> None:
    """Until something listens on the port; a process that exits first fails with its stderr."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            if process.poll() is not None:
                raise RuntimeError(process.stderr.read())
            time.sleep(0.1)
    raise RuntimeError(f"nothing listens on port {port}")


class Proxy:
    def __init__(self, upstream_url: str, db: Path, *extra: str) -> None:
        self.port = free_port()
        self.db = db
        self.url = f"http://127.0.0.1:{self.port}"
        self.process = subprocess.Popen(
            [sys.executable, "-m", "cachelint", "proxy", "--upstream", upstream_url, "--port", str(self.port), "--db", str(db), "--no-dashboard", *extra],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        wait_for_port(self.port, self.process)

    def stop(self) -> tuple[str, str]:
        self.process.send_signal(signal.SIGTERM)
        out, err = self.process.communicate(timeout=60)
        return out, err


@pytest.fixture
def upstream():
    with Upstream(event_delay=0.002) as server:
        yield server


@pytest.fixture
def proxy(upstream, tmp_path):
    p = Proxy(upstream.url, tmp_path / "cachelint.db")
    yield p
    if p.process.poll() is None:
        p.stop()


def report(db: Path, *args: str) -> dict:
    out = subprocess.run([sys.executable, "-m", "cachelint", "report", "--db", str(db), "--format", "json", *args],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


SYSTEM = "You are a coding agent. Work carefully, explain briefly, and run the tests before you finish. " * 20
TOOLS = [
    {"name": "bash", "description": "Run a shell command.", "input_schema": {"type": "object", "properties": {"cmd": {"type": "string"}}}},
    {"name": "read", "description": "Read a file.", "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}},
]


def agent_turns(client, turns: int, stamp_from: int, stream: bool) -> list:
    """A growing conversation whose app stamps the minute into its system prompt: the minute ticks over at
    turn `stamp_from`."""
    messages, usages = [], []
    for turn in range(1, turns + 1):
        minute = 31 if turn < stamp_from else 32
        system = [{"type": "text", "text": f"Current time: 2026-11-29T10:{minute}Z\n" + SYSTEM, "cache_control": {"type": "ephemeral"}}]
        for m in messages:
            if isinstance(m["content"], list):
                for block in m["content"]:
                    block.pop("cache_control", None)
        messages.append({"role": "user", "content": [{"type": "text", "text": f"step {turn}: continue the task", "cache_control": {"type": "ephemeral"}}]})
        kwargs = dict(model="claude-sonnet-4-5", max_tokens=64, system=system, tools=TOOLS, messages=messages,
                      extra_headers={"x-claude-code-session-id": "sess-main"})
        if stream:
            with client.messages.stream(**kwargs) as s:
                final = s.get_final_message()
        else:
            final = client.messages.create(**kwargs)
        usages.append(final.usage)
        messages.append({"role": "assistant", "content": [{"type": "text", "text": final.content[0].text}]})
    return usages


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_agent_session_break_is_recorded_with_cause_place_and_waste(proxy, stream):
    client = anthropic.Anthropic(api_key=API_KEY, base_url=proxy.url, max_retries=0)
    usages = agent_turns(client, 12, 7, stream)
    proxy.stop()
    data = report(proxy.db)
    main = next(s for s in data["sessions"] if s["session"].startswith("sess-main"))
    assert main["requests"] == 12
    assert [b["request"] for b in main["breaks"]] == [7]
    brk = main["breaks"][0]
    assert (brk["cause"], brk["detail"], brk["rule"], brk["pointer"]) == ("system_changed", "volatile_value", "CL101", "/system/0/text")
    assert brk["reprefilled_tokens"] > 0
    assert main["wasted_prefill_tokens"] == brk["reprefilled_tokens"]  # only the break wasted prefill
    reported = [(u.cache_read_input_tokens or 0) for u in usages]
    assert [t["cache_read_tokens"] for t in main["turns"]] == reported
    total = sum((u.cache_read_input_tokens or 0) + (u.cache_creation_input_tokens or 0) + u.input_tokens for u in usages)
    assert main["hit_rate"] == pytest.approx(sum(reported) / total, abs=1e-3)


def test_bytes_pass_through_unchanged(proxy, upstream):
    body = {"model": "claude-sonnet-4-5", "max_tokens": 10, "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    headers = {"x-api-key": API_KEY, "anthropic-version": "2023-06-01", "content-type": "application/json"}
    for fault in ("", "gzip"):
        h = dict(headers, **({"x-upstream-fault": fault, "accept-encoding": "gzip"} if fault else {}))
        with httpx.Client() as http:
            with http.stream("POST", proxy.url + "/v1/messages", json=body, headers=h) as response:
                received = b"".join(response.iter_raw())
                status = response.status_code
        sent = upstream.responses[-1]
        assert status == sent.status
        assert received == sent.body


def test_first_token_is_not_delayed(tmp_path):
    with Upstream(event_delay=0.2) as slow:
        p = Proxy(slow.url, tmp_path / "db.sqlite")
        try:
            client = anthropic.Anthropic(api_key=API_KEY, base_url=p.url, max_retries=0)
            start = time.perf_counter()
            with client.messages.stream(model="claude-sonnet-4-5", max_tokens=10, messages=[{"role": "user", "content": "hi"}]) as s:
                first = None
                for _ in s.text_stream:
                    first = first or time.perf_counter() - start
            total = time.perf_counter() - start
        finally:
            p.stop()
    assert first is not None and first < total - 0.3, (first, total)


def test_openai_chat_and_responses_sync_and_async(proxy):
    client = openai.OpenAI(api_key=OPENAI_KEY, base_url=proxy.url + "/v1", max_retries=0)
    long = "You translate support tickets into English and keep the tone. " * 120
    for _ in range(2):
        client.chat.completions.create(model="gpt-4.1", messages=[{"role": "system", "content": long}, {"role": "user", "content": "Hola"}])
    chunks = list(client.chat.completions.create(model="gpt-4.1", stream=True, stream_options={"include_usage": True},
                                                 messages=[{"role": "system", "content": long}, {"role": "user", "content": "Hola"}]))
    assert chunks[-1].usage.prompt_tokens_details.cached_tokens > 0

    async def responses() -> None:
        aclient = openai.AsyncOpenAI(api_key=OPENAI_KEY, base_url=proxy.url + "/v1", max_retries=0)
        await aclient.responses.create(model="gpt-5", instructions=long, input="first")
        stream = await aclient.responses.create(model="gpt-5", instructions=long, input="second", stream=True)
        async for _ in stream:
            pass

    asyncio.run(responses())
    proxy.stop()
    data = report(proxy.db)
    by_model = {s["model"]: s for s in data["sessions"]}
    assert by_model["gpt-4.1"]["requests"] == 3 and by_model["gpt-4.1"]["cache_read_tokens"] > 0
    assert by_model["gpt-5"]["requests"] == 2


def test_claude_code_side_calls_are_their_own_session(proxy, upstream):
    client = anthropic.Anthropic(api_key=API_KEY, base_url=proxy.url, max_retries=0)
    headers = {"x-claude-code-session-id": "cc-42", "anthropic-beta": "claude-code-20250219,interleaved-thinking-2025-05-14"}
    messages = []
    for turn in range(3):
        messages.append({"role": "user", "content": f"turn {turn}"})
        client.beta.messages.create(model="claude-sonnet-4-5", max_tokens=20, system=[{"type": "text", "text": SYSTEM, "cache_control": {"type": "ephemeral"}}],
                                    tools=TOOLS, messages=messages, extra_headers=headers)
        client.messages.create(model="claude-haiku-4-5", max_tokens=1, messages=[{"role": "user", "content": "quota"}], extra_headers=headers)
        messages.append({"role": "assistant", "content": "ok"})
    proxy.stop()
    data = report(proxy.db)
    sessions = {s["session"]: s for s in data["sessions"]}
    # the conversation is Claude Code's own id; the quota probes (no tools, their own prompt) are kept apart
    assert set(sessions) == {"cc-42", "cc-42/side-claude-haiku-4-5"}
    assert sessions["cc-42"]["requests"] == 3 and sessions["cc-42"]["breaks"] == []
    assert sessions["cc-42/side-claude-haiku-4-5"]["requests"] == 3 and sessions["cc-42/side-claude-haiku-4-5"]["breaks"] == []
    assert sum(r.path.endswith("?beta=true") for r in upstream.requests) == 3  # client.beta.* adds ?beta=true


@pytest.mark.parametrize("fault, status", [("status=429", 429), ("status=500", 500), ("status=529", 529), ("status=500-nobody", 500), ("invalid-json", 200)])
def test_upstream_faults_pass_through_and_are_recorded(proxy, upstream, fault, status):
    headers = {"x-api-key": API_KEY, "anthropic-version": "2023-06-01", "x-upstream-fault": fault}
    body = {"model": "claude-sonnet-4-5", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]}
    response = httpx.post(proxy.url + "/v1/messages", json=body, headers=headers, timeout=30)
    sent = upstream.responses[-1]
    assert response.status_code == status == sent.status
    assert response.content == sent.body
    ok = httpx.post(proxy.url + "/v1/messages", json=body, headers={"x-api-key": API_KEY, "anthropic-version": "2023-06-01"}, timeout=30)
    assert ok.status_code == 200  # the proxy goes on serving
    proxy.stop()
    data = report(proxy.db)
    assert data["totals"]["requests"] == 2
    assert data["totals"]["errors"] == 1


def test_client_side_faults_and_unknown_paths(proxy, upstream):
    headers = {"x-api-key": API_KEY, "anthropic-version": "2023-06-01", "content-type": "application/json"}
    bad = httpx.post(proxy.url + "/v1/messages", content=b"{not json", headers=headers, timeout=30)
    assert bad.status_code == upstream.responses[-1].status == 400
    other = httpx.get(proxy.url + "/v1/models", headers=headers, timeout=30)
    assert other.status_code == upstream.responses[-1].status
    cut = {"model": "claude-sonnet-4-5", "max_tokens": 10, "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    with httpx.Client() as http:
        with http.stream("POST", proxy.url + "/v1/messages", json=cut, headers=dict(headers, **{"x-upstream-fault": "close-midstream"}), timeout=30) as r:
            with pytest.raises(httpx.HTTPError):
                for _ in r.iter_raw():
                    pass
    assert httpx.post(proxy.url + "/v1/messages", json={**cut, "stream": False}, headers=headers, timeout=30).status_code == 200
    proxy.stop()
    data = report(proxy.db)
    assert data["totals"]["requests"] == 3  # the GET /v1/models was not recorded
    assert data["totals"]["errors"] == 2


def test_no_credential_reaches_the_disk(proxy, tmp_path):
    client = anthropic.Anthropic(api_key=API_KEY, base_url=proxy.url, max_retries=0, default_headers={"authorization": "Bearer " + OPENAI_KEY, "cookie": "session=SECRET-COOKIE"})
    client.messages.create(model="claude-sonnet-4-5", max_tokens=10, messages=[{"role": "user", "content": "hi"}])
    oai = openai.OpenAI(api_key=OPENAI_KEY, base_url=proxy.url + "/v1", organization="org-SECRETORG", project="proj_SECRETPROJ", max_retries=0)
    oai.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])
    httpx.post(proxy.url + "/v1/chat/completions?key=SECRET-QUERY-KEY", json={"model": "gpt-4o", "messages": [{"role": "user", "content": "x"}]}, timeout=30)
    proxy.stop()
    html_out = tmp_path / "report.html"
    subprocess.run([sys.executable, "-m", "cachelint", "report", "--db", str(proxy.db), "--format", "html", "-o", str(html_out)], check=True)
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert proxy.db in written and html_out in written
    for path in written:
        data = path.read_bytes()
        for secret in (API_KEY, OPENAI_KEY, "SECRET-COOKIE", "SECRETORG", "SECRETPROJ", "SECRET-QUERY-KEY"):
            assert secret.encode() not in data, (path.name, secret)


def test_listen_host_warning_and_bad_arguments(tmp_path):
    out = subprocess.run([sys.executable, "-m", "cachelint", "proxy", "--db", str(tmp_path / "x.db")], capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "--upstream" in out.stderr
    out = subprocess.run([sys.executable, "-m", "cachelint", "proxy", "--upstream", "ftp://x", "--db", str(tmp_path / "x.db")], capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "http:// or https://" in out.stderr
    missing = subprocess.run([sys.executable, "-m", "cachelint", "report", "--db", str(tmp_path / "none.db")], capture_output=True, text=True, timeout=60)
    assert missing.returncode == 2 and "no such store" in missing.stderr


def test_client_leaving_mid_stream_is_recorded_and_the_proxy_goes_on(tmp_path):
    with Upstream(event_delay=0.05) as slow:
        p = Proxy(slow.url, tmp_path / "db.sqlite")
        try:
            body = {"model": "claude-sonnet-4-5", "max_tokens": 10, "stream": True, "messages": [{"role": "user", "content": "tell me a long story please"}]}
            headers = {"x-api-key": API_KEY, "anthropic-version": "2023-06-01"}
            with httpx.Client() as http:
                with http.stream("POST", p.url + "/v1/messages", json=body, headers=headers, timeout=30) as response:
                    next(response.iter_raw())  # the first bytes, then leave
            ok = httpx.post(p.url + "/v1/messages", json={**body, "stream": False}, headers=headers, timeout=30)
            assert ok.status_code == 200
        finally:
            p.stop()
    data = report(tmp_path / "db.sqlite")
    assert data["totals"]["requests"] == 2
    assert data["totals"]["errors"] == 1  # the abandoned stream, recorded with its error


def test_hashes_mode_metrics_and_dynamic_rules(upstream, tmp_path):
    metrics_port = free_port()
    p = Proxy(upstream.url, tmp_path / "db.sqlite", "--store", "hashes", "--metrics-port", str(metrics_port))
    try:
        client = anthropic.Anthropic(api_key=API_KEY, base_url=p.url, max_retries=0)
        marker = {"type": "ephemeral"}
        client.messages.create(model="claude-haiku-4-5", max_tokens=5, messages=[{"role": "user", "content": "UNIQUE-BODY-TEXT"}],
                               system=[{"type": "text", "text": "Be brief.", "cache_control": marker}])
        deadline = time.time() + 10
        while time.time() < deadline:
            text = httpx.get(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5).text
            if 'model="claude-haiku-4-5"' in text:
                break
            time.sleep(0.2)
        assert any(line.startswith("cachelint_requests_total{") and 'model="claude-haiku-4-5"' in line and line.endswith(" 1.0")
                   for line in text.splitlines())
    finally:
        p.stop()
    assert b"UNIQUE-BODY-TEXT" not in (tmp_path / "db.sqlite").read_bytes()
    data = report(tmp_path / "db.sqlite")
    [turn] = data["sessions"][0]["turns"]
    assert [f["code"] for f in turn["findings"]] == ["CL504"]  # a breakpoint below Haiku's minimum


def test_forward_mode(upstream, tmp_path):
    """--mode regular: the client sends through the proxy as HTTP_PROXY (plain HTTP here; HTTPS needs mitmproxy's CA)."""
    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", "cachelint", "proxy", "--mode", "regular", "--port", str(port), "--db", str(tmp_path / "fwd.db"), "--no-dashboard"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for_port(port, process)
        http_client = httpx.Client(proxy=f"http://127.0.0.1:{port}")
        client = anthropic.Anthropic(api_key=API_KEY, base_url=upstream.url, http_client=http_client, max_retries=0)
        client.messages.create(model="claude-sonnet-4-5", max_tokens=5, messages=[{"role": "user", "content": "via HTTP_PROXY"}])
    finally:
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=60)
    assert report(tmp_path / "fwd.db")["totals"]["requests"] == 1


def test_addon_loads_into_plain_mitmdump(upstream, tmp_path):
    import cachelint.proxy.addon as addon_module

    port = free_port()
    mitmdump = Path(sys.executable).with_name("mitmdump")
    process = subprocess.Popen([str(mitmdump), "-q", "-s", addon_module.__file__, "--mode", f"reverse:{upstream.url}", "--listen-host", "127.0.0.1",
                                "--listen-port", str(port), "--set", f"cachelint_db={tmp_path / 'm.db'}"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for_port(port, process)
        client = anthropic.Anthropic(api_key=API_KEY, base_url=f"http://127.0.0.1:{port}", max_retries=0)
        client.messages.create(model="claude-sonnet-4-5", max_tokens=5, messages=[{"role": "user", "content": "hi"}])
    finally:
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=60)
    assert report(tmp_path / "m.db")["totals"]["requests"] == 1


def test_dashboard_renders_sessions_and_breaks():
    from rich.console import Console

    from cachelint.proxy.dashboard import session_table
    from cachelint.record.analyze import Totals

    totals = {"cc-1/claude-sonnet-4-5": Totals(requests=7, prompt_tokens=10_000, cache_read_tokens=8_000, cache_write_tokens=1_500,
                                              wasted_prefill_tokens=1_200, wasted_cost=0.0041, model="claude-sonnet-4-5",
                                              last_break={"seq": 7, "cause": "system_changed", "detail": "volatile_value", "rule": "CL101",
                                                          "location": {"pointer": "/system/1/text"}})}
    console = Console(record=True, width=200)
    console.print(session_table(totals, "http://127.0.0.1:8082"))
    text = console.export_text()
    assert "cc-1/claude-sonnet-4-5" in text and "80%" in text and "8,000" in text and "1,200" in text
    assert "#7 system_changed/volatile_value CL101 /system/1/text" in text
    empty = Console(record=True, width=200)
    empty.print(session_table({}, "x"))
    assert "waiting for traffic" in empty.export_text()


def test_stream_faults_drip_no_usage_and_a_50mb_body(tmp_path):
    with Upstream(event_delay=0.0, big_size=50 * 1024 * 1024) as upstream:
        p = Proxy(upstream.url, tmp_path / "db.sqlite")
        try:
            body = {"model": "claude-sonnet-4-5", "max_tokens": 10, "stream": True, "messages": [{"role": "user", "content": "hi"}]}
            for fault in ("drip", "no-usage", "big"):
                headers = {"x-api-key": API_KEY, "anthropic-version": "2023-06-01", "x-upstream-fault": fault}
                with httpx.Client() as http:
                    with http.stream("POST", p.url + "/v1/messages", json=body, headers=headers, timeout=120) as response:
                        received = b"".join(response.iter_raw())
                assert received == upstream.responses[-1].wait().body, fault
        finally:
            p.stop()
    rows = {t["request"]: t for t in report(tmp_path / "db.sqlite")["sessions"][0]["turns"]}
    assert rows[1]["cache_write_tokens"] is not None and rows[1]["error"] is None  # drip: parsed like any stream
    assert rows[2]["error"] == "no usage in the response"
    assert len(rows) == 3


def test_responses_over_websocket_are_recorded_as_exchanges(proxy, upstream):
    """Codex's default transport: a WebSocket to /v1/responses; each response.create is one exchange, with the full
    input rebuilt from previous_response_id, and the messages pass through unchanged."""
    from cachelint.record.store import Store
    from upstream import WebSocketClient

    ws = WebSocketClient(proxy.url + "/v1/responses", headers={"session-id": "thread-7", "authorization": f"Bearer {OPENAI_KEY}"})
    base = {"model": "gpt-5.1-codex", "instructions": SYSTEM * 3, "tools": [{"type": "function", "name": "shell", "parameters": {"type": "object"}}]}
    first = [{"role": "user", "content": "fix the failing test"}]
    ws.send_json({"type": "response.create", **base, "input": first, "generate": False})
    ws.until("response.completed")
    ws.send_json({"type": "response.create", **base, "input": first})
    one = ws.until("response.completed")
    ws.send_json({"type": "response.create", **base, "previous_response_id": one[-1]["response"]["id"], "input": [{"role": "user", "content": "and again"}]})
    two = ws.until("response.completed")
    edited = dict(base, instructions="Today is 2026-12-01.\n" + SYSTEM * 3)
    full = [*first, one[-1]["response"]["output"][0], {"role": "user", "content": "and again"}, two[-1]["response"]["output"][0], {"role": "user", "content": "third"}]
    ws.send_json({"type": "response.create", **edited, "input": full})
    three = ws.until("response.completed")
    ws.close()
    assert two[-1] == upstream.responses[2].events[-1]["data"]  # what the server sent is what the client got
    assert three[-1]["response"]["usage"] == upstream.responses[3].usage
    proxy.stop()
    data = report(proxy.db)
    sessions = {s["session"]: s for s in data["sessions"]}
    assert set(sessions) == {"thread-7", "thread-7/side-prewarm"}
    main = sessions["thread-7"]
    assert main["requests"] == 3 and main["errors"] == 0
    assert [(b["request"], b["cause"], b["pointer"]) for b in main["breaks"]] == [(3, "system_changed", "/instructions")]
    assert data["totals"]["prompt_tokens"] == sum(r.usage["input_tokens"] for r in upstream.responses)
    assert data["totals"]["cache_read_tokens"] == sum(r.usage["input_tokens_details"]["cached_tokens"] for r in upstream.responses)
    rows = list(Store(proxy.db, readonly=True).rows("thread-7"))
    assert [r.method for r in rows] == ["WS", "WS", "WS"]
    assert json.loads(rows[1].request_body)["input"] == upstream.requests[2].json["input"]  # rebuilt as the server did
    assert OPENAI_KEY.encode() not in proxy.db.read_bytes()
