"""Hardening the proxy (issue 18): stop with a backlog, the upstream down, odd bytes, decompression bombs, slow
clients, secrets in every corner, forward-mode recognition, terminal safety and one huge exchange.

The real `cachelint proxy` runs as a subprocess in front of tests/upstream.py (the providers' stand-in) or, for
bombs, a tiny raw server in this file that sends prepared bytes. Figures are counts and bytes, never timings.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from upstream import Upstream

API_KEY = "sk-ant-test-SECRET-KEY-0123456789"
HEADERS = {"x-api-key": API_KEY, "anthropic-version": "2023-06-01", "content-type": "application/json"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Proxy:
    """`cachelint proxy --no-dashboard` in a subprocess; `stop()` sends SIGTERM and returns (rc, stdout, stderr)."""

    def __init__(self, db: Path, *args: str, upstream: str | None = None, env: dict[str, str] | None = None) -> None:
        self.port = free_port()
        self.db = db
        self.url = f"http://127.0.0.1:{self.port}"
        command = [sys.executable, "-m", "cachelint", "proxy", "--port", str(self.port), "--db", str(db), "--no-dashboard", *args]
        if upstream is not None:
            command += ["--upstream", upstream]
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                        env={**os.environ, **(env or {})})
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return
            except OSError:
                if self.process.poll() is not None:
                    raise RuntimeError(self.process.stderr.read())
                time.sleep(0.1)
        raise RuntimeError("the proxy did not listen")

    def stop(self, sig: int = signal.SIGTERM) -> tuple[int, str, str]:
        self.process.send_signal(sig)
        out, err = self.process.communicate(timeout=180)
        return self.process.returncode, out, err

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.communicate(timeout=30)

    def rss_peak_kib(self) -> int:
        """The proxy's peak resident set (VmHWM) so far, from /proc."""
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
        raise AssertionError("no VmHWM")


def rows(db: Path) -> list[sqlite3.Row]:
    with sqlite3.connect(db) as conn:
        conn.row_factory = sqlite3.Row
        return conn.execute("SELECT * FROM exchanges ORDER BY id").fetchall()


@pytest.fixture
def upstream():
    with Upstream(event_delay=0.0) as server:
        yield server


# 1. stop with a backlog -------------------------------------------------------------------------------------------

def test_sigterm_with_a_backlog_records_every_completed_exchange(upstream, tmp_path):
    """30 requests with big prompts answered fast: the recorder lags behind; SIGTERM must drain its queue (given
    the time: on a busy machine the default minute may not be enough, which the next test covers)."""
    proxy = Proxy(tmp_path / "db.sqlite", "--drain-timeout", "900", upstream=upstream.url)
    try:
        def send(i: int) -> int:
            messages = [{"role": ("user", "assistant")[n % 2], "content": f"request {i} turn {n}"} for n in range(60_001)]
            body = {"model": "claude-sonnet-4-5", "max_tokens": 5, "messages": messages}
            return httpx.post(proxy.url + "/v1/messages", json=body, headers=HEADERS, timeout=120).status_code

        with ThreadPoolExecutor(10) as pool:
            statuses = list(pool.map(send, range(30)))
        completed = statuses.count(200)
        rc, out, err = proxy.stop()
    finally:
        proxy.kill()
    assert completed == 30
    recorded = len(rows(proxy.db))
    print(f"sent {completed}, recorded {recorded}; stderr: {err[-600:]!r}")
    assert recorded == completed
    assert rc == 0, err
    assert "Traceback" not in err and "CancelledError" not in err


def test_a_second_signal_gives_up_and_says_how_many_were_not_written(upstream, tmp_path):
    import re

    proxy = Proxy(tmp_path / "db.sqlite", upstream=upstream.url)
    try:
        def send(i: int) -> int:
            messages = [{"role": ("user", "assistant")[n % 2], "content": f"request {i} turn {n}"} for n in range(60_001)]
            body = {"model": "claude-sonnet-4-5", "max_tokens": 5, "messages": messages}
            return httpx.post(proxy.url + "/v1/messages", json=body, headers=HEADERS, timeout=120).status_code

        with ThreadPoolExecutor(4) as pool:
            completed = list(pool.map(send, range(12))).count(200)
        proxy.process.send_signal(signal.SIGINT)
        time.sleep(0.5)
        rc, out, err = proxy.stop(signal.SIGINT)
    finally:
        proxy.kill()
    lost = re.search(r"cachelint: error: (\d+) exchanges? could not be written", err)
    assert lost is not None and rc == 2, err
    recorded = len(rows(proxy.db))
    print(f"sent {completed}, recorded {recorded}, reported not written {lost.group(1)}")
    assert recorded + int(lost.group(1)) == completed == 12
    assert "Traceback" not in err


def test_sigterm_with_an_open_stream_exits_cleanly_and_records_it(tmp_path):
    with Upstream(event_delay=0.3) as slow:
        proxy = Proxy(tmp_path / "db.sqlite", upstream=slow.url)
        try:
            started = threading.Event()

            def stream() -> None:
                body = {"model": "claude-sonnet-4-5", "max_tokens": 50, "stream": True, "messages": [{"role": "user", "content": "a long story"}]}
                try:
                    with httpx.stream("POST", proxy.url + "/v1/messages", json=body, headers=HEADERS, timeout=60) as r:
                        for _ in r.iter_raw():
                            started.set()
                except httpx.HTTPError:
                    pass

            client = threading.Thread(target=stream)
            client.start()
            assert started.wait(30)
            idle = socket.create_connection(("127.0.0.1", proxy.port))  # an open client that sent nothing
            rc, out, err = proxy.stop()
            idle.close()
            client.join(30)
        finally:
            proxy.kill()
    assert "Traceback" not in err and "CancelledError" not in err, err
    assert rc == 0, err
    [row] = rows(proxy.db)
    assert row["error"]  # cut short by the stop, recorded with its reason


def test_drain_reports_what_could_not_be_written(tmp_path):
    """The bounded drain: what is still queued when the time is up is counted, never silently dropped."""
    from cachelint.proxy.addon import CacheLintAddon
    from cachelint.record.analyze import Recorder
    from cachelint.record.exchange import Captured
    from cachelint.record.store import Store

    store = Store(tmp_path / "db.sqlite")
    addon = CacheLintAddon(Recorder(store))
    addon.start_worker()
    prompt = " ".join(f"w{n}" for n in range(200_000))
    for i in range(20):
        body = json.dumps({"model": "claude-sonnet-4-5", "max_tokens": 5, "messages": [{"role": "user", "content": f"{i} {prompt}"}]})
        addon.queue.put(Captured(time.time(), "POST", "http://127.0.0.1/v1/messages", [("content-type", "application/json")], body.encode(), status=200))
    written, dropped = addon.drain(timeout=0.01)
    assert dropped > 0 and written + dropped == 20
    time.sleep(0.5)
    store.close()


# a raw upstream: prepared bytes, counted connections ------------------------------------------------------------

ANTHROPIC_OK = json.dumps({"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5", "content": [{"type": "text", "text": "ok"}],
                           "stop_reason": "end_turn", "usage": {"input_tokens": 12, "output_tokens": 1, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}}).encode()


class RawUpstream:
    """A minimal HTTP/1.1 server that answers every request with what `answer(head, body)` returns: (headers, body
    bytes or an iterable of chunks sent chunked). It reads bodies by content-length and counts connections."""

    def __init__(self, answer) -> None:
        self.answer = answer
        self.server = socket.create_server(("127.0.0.1", 0), backlog=512)
        self.port = self.server.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.connections = 0
        self.sent: list[bytes] = []  # the body bytes of each answer, as sent (after content-encoding)
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            data = b""
            while b"\r\n\r\n" not in data:
                more = conn.recv(65536)
                if not more:
                    return
                data += more
                if data[:1] == b"\x16":  # a TLS ClientHello: answer as a plain HTTP server does
                    conn.sendall(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
                    return
            head, body = data.split(b"\r\n\r\n", 1)
            length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")), 0)
            while len(body) < length:
                more = conn.recv(1 << 20)
                if not more:
                    return
                body += more
            headers, content = self.answer(head.decode("latin-1"), body)
            try:
                if isinstance(content, bytes):
                    self.sent.append(content)
                    lines = "".join(f"{k}: {v}\r\n" for k, v in headers) + f"content-length: {len(content)}\r\nconnection: close\r\n"
                    conn.sendall(b"HTTP/1.1 200 OK\r\n" + lines.encode() + b"\r\n" + content)
                else:
                    lines = "".join(f"{k}: {v}\r\n" for k, v in headers) + "transfer-encoding: chunked\r\nconnection: close\r\n"
                    conn.sendall(b"HTTP/1.1 200 OK\r\n" + lines.encode() + b"\r\n")
                    total = 0
                    for chunk in content:
                        total += len(chunk)
                        conn.sendall(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                    conn.sendall(b"0\r\n\r\n")
                    self.sent.append(str(total).encode())
            except OSError:
                pass

    def close(self) -> None:
        self.server.close()


def post_raw(url: str, path: str, body: bytes, headers: dict[str, str]) -> tuple[int, bytes]:
    """POST and return the status and the body bytes exactly as they came (no decoding)."""
    with httpx.Client(timeout=120) as client:
        with client.stream("POST", url + path, content=body, headers=headers) as response:
            return response.status_code, b"".join(response.iter_raw())


# 2. the upstream down -------------------------------------------------------------------------------------------

def test_upstream_down_answers_502_in_the_providers_format_and_is_recorded(tmp_path):
    import anthropic
    import openai

    dead = f"http://127.0.0.1:{free_port()}"  # nothing listens there: a mistyped --upstream
    proxy = Proxy(tmp_path / "db.sqlite", upstream=dead)
    try:
        body = {"model": "claude-sonnet-4-5", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}
        a = httpx.post(proxy.url + "/v1/messages", json=body, headers=HEADERS, timeout=30)
        assert a.status_code == 502 and a.headers["content-type"] == "application/json"
        assert a.content.count(b"\n") == 0 and a.json()["type"] == "error" and a.json()["error"]["type"] == "api_error"
        assert "cannot be reached" in a.json()["error"]["message"]
        o = httpx.post(proxy.url + "/v1/chat/completions", json={"model": "gpt-4.1", "messages": [{"role": "user", "content": "hi"}]}, timeout=30)
        assert o.status_code == 502 and o.json()["error"]["type"] == "server_error" and "cannot be reached" in o.json()["error"]["message"]
        with pytest.raises(anthropic.APIStatusError) as sdk_a:
            anthropic.Anthropic(api_key=API_KEY, base_url=proxy.url, max_retries=0).messages.create(**body)
        assert sdk_a.value.status_code == 502 and "cannot be reached" in sdk_a.value.message
        with pytest.raises(openai.APIStatusError) as sdk_o:
            openai.OpenAI(api_key="sk-x", base_url=proxy.url + "/v1", max_retries=0).chat.completions.create(model="gpt-4.1", messages=[{"role": "user", "content": "hi"}])
        assert sdk_o.value.status_code == 502 and "cannot be reached" in str(sdk_o.value)
        rc, out, err = proxy.stop()
    finally:
        proxy.kill()
    lines = [line for line in err.splitlines() if "cannot be reached" in line]
    assert len(lines) == 4 and all(line.startswith("cachelint: ") for line in lines), err
    recorded = rows(proxy.db)
    assert len(recorded) == 4
    assert all(r["status"] == 502 and "cannot be reached" in r["error"] for r in recorded)
    assert rc == 0 and "Traceback" not in err


def test_https_upstream_that_speaks_plain_http_is_a_502_with_the_reason(tmp_path):
    plain = RawUpstream(lambda head, body: ([("content-type", "application/json")], ANTHROPIC_OK))
    proxy = Proxy(tmp_path / "db.sqlite", upstream=plain.url.replace("http://", "https://"))  # the scheme mistyped
    try:
        body = {"model": "claude-sonnet-4-5", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}
        a = httpx.post(proxy.url + "/v1/messages", json=body, headers=HEADERS, timeout=30)
        rc, out, err = proxy.stop()
    finally:
        proxy.kill()
        plain.close()
    assert a.status_code == 502 and a.json()["error"]["type"] == "api_error" and "TLS" in a.json()["error"]["message"], a.text
    assert len([line for line in err.splitlines() if line.startswith("cachelint: the upstream")]) == 1, err
    [row] = rows(proxy.db)
    assert row["status"] == 502 and "cannot be reached" in row["error"]


# 3. odd bytes: recorded, escaped --------------------------------------------------------------------------------

def test_non_utf8_header_and_lone_surrogate_model_are_recorded_escaped(upstream, tmp_path):
    proxy = Proxy(tmp_path / "db.sqlite", upstream=upstream.url)
    try:
        bodies = [b'{"model": "claude-\\ud800-odd", "max_tokens": 5, "messages": [{"role": "user", "content": "hi \\udcff"}]}',
                  json.dumps({"model": "claude-sonnet-4-5", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}).encode()]
        for body, extra in zip(bodies, (b"", b"x-note: caf\xe9\xff\r\n")):
            with socket.create_connection(("127.0.0.1", proxy.port), timeout=30) as s:
                s.sendall(b"POST /v1/messages HTTP/1.1\r\nhost: x\r\nx-api-key: " + API_KEY.encode() + b"\r\nanthropic-version: 2023-06-01\r\n"
                          b"content-type: application/json\r\nconnection: close\r\n" + extra + b"content-length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
                answer = b""
                while chunk := s.recv(65536):
                    answer += chunk
            assert answer.startswith(b"HTTP/1.1 ")
        rc, out, err = proxy.stop()
    finally:
        proxy.kill()
    recorded = rows(proxy.db)
    assert len(recorded) == 2, err
    assert recorded[0]["model"] == "claude-\\ud800-odd"
    assert json.loads(recorded[1]["request_headers"])["x-note"] == "caf\\xe9\\xff"
    assert "Traceback" not in err and rc == 0


# 4. decompression bombs and endless streams ---------------------------------------------------------------------

GIB = 1024 ** 3


@pytest.fixture(scope="module")
def bombs() -> dict[str, bytes]:
    """About 1 MB (gzip, deflate) or less (br, zstd) on the wire, 1-2 GiB of zeros once decoded."""
    import brotli
    import zlib

    import zstandard

    zeros = bytes(16 * 1024 * 1024)
    out = {}
    for name, wbits in (("gzip", 31), ("deflate", 15)):
        c = zlib.compressobj(9, zlib.DEFLATED, wbits)
        out[name] = b"".join([c.compress(zeros) for _ in range(GIB // len(zeros))] + [c.flush()])
    c = brotli.Compressor(quality=5)
    out["br"] = b"".join([c.process(zeros) for _ in range(2 * GIB // len(zeros))] + [c.finish()])
    z = zstandard.ZstdCompressor(level=3).compressobj()
    out["zstd"] = b"".join([z.compress(zeros) for _ in range(2 * GIB // len(zeros))] + [z.flush()])
    return out


def test_decompression_bombs_pass_through_untouched_in_bounded_memory(tmp_path, bombs):
    def answer(head: str, body: bytes):
        encoding = next((line.split(":", 1)[1].strip() for line in head.split("\r\n") if line.lower().startswith("x-bomb:")), "")
        if encoding:
            return [("content-type", "application/json"), ("content-encoding", encoding)], bombs[encoding]
        return [("content-type", "application/json")], ANTHROPIC_OK

    upstream = RawUpstream(answer)
    proxy = Proxy(tmp_path / "db.sqlite", upstream=upstream.url)
    body = json.dumps({"model": "claude-sonnet-4-5", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}).encode()
    try:
        assert post_raw(proxy.url, "/v1/messages", body, HEADERS)[0] == 200
        time.sleep(1)
        before = proxy.rss_peak_kib()
        for encoding, bomb in bombs.items():
            status, received = post_raw(proxy.url, "/v1/messages", body, dict(HEADERS, **{"x-bomb": encoding}))
            assert status == 200 and received == bomb, encoding  # byte for byte, still encoded
            # the same bomb as a request body
            status, _ = post_raw(proxy.url, "/v1/messages", bomb, dict(HEADERS, **{"content-encoding": encoding}))
            assert status == 200
        deadline = time.time() + 120
        while len(rows(proxy.db)) < 9 and time.time() < deadline:
            time.sleep(0.2)
        after = proxy.rss_peak_kib()
        rc, out, err = proxy.stop()
    finally:
        proxy.kill()
        upstream.close()
    extra_mib = (after - before) / 1024
    print(f"peak RSS {before / 1024:.0f} MiB before the bombs, {after / 1024:.0f} MiB after (+{extra_mib:.0f} MiB)")
    assert extra_mib < 500
    recorded = rows(proxy.db)
    assert len(recorded) == 9
    assert sum("too large to analyze" in (r["error"] or "") for r in recorded) == 8
    assert rc == 0, err


def test_an_endless_stream_is_passed_through_and_kept_only_up_to_the_limit(tmp_path):
    from cachelint.proxy.tap import MAX_KEPT

    event = b'event: ping\ndata: {"type": "ping"}\n\n' * 4096
    total = MAX_KEPT + 32 * 1024 * 1024
    upstream = RawUpstream(lambda head, body: ([("content-type", "text/event-stream")], (event for _ in range(total // len(event)))))
    proxy = Proxy(tmp_path / "db.sqlite", upstream=upstream.url)
    try:
        body = json.dumps({"model": "claude-sonnet-4-5", "max_tokens": 5, "stream": True, "messages": [{"role": "user", "content": "hi"}]}).encode()
        status, received = post_raw(proxy.url, "/v1/messages", body, HEADERS)
        rc, out, err = proxy.stop()
    finally:
        proxy.kill()
        upstream.close()
    assert status == 200 and len(received) == (total // len(event)) * len(event)
    [row] = rows(proxy.db)
    import re

    kept = re.search(rf"response body over {MAX_KEPT:,} bytes: only the first ([\d,]+) bytes were kept and analyzed \(([\d,]+) passed through\)", row["error"])
    assert kept is not None, row["error"]
    assert int(kept.group(1).replace(",", "")) == len(row["response_body"]) <= MAX_KEPT
    assert int(kept.group(2).replace(",", "")) == len(received)


def test_streams_in_flight_share_a_bounded_budget():
    from cachelint.proxy.tap import Budget, StreamTap

    budget = Budget(total=1000)
    first, second = StreamTap(limit=800, budget=budget), StreamTap(limit=800, budget=budget)
    for _ in range(8):
        assert first(b"x" * 100) == b"x" * 100 and second(b"y" * 100) == b"y" * 100  # every chunk passes on
    assert (first.size, first.truncated) == (500, True) and (second.size, second.truncated) == (500, True)
    assert "in flight were in use" in first.reason and first.seen == 800
    first(b"z" * 10)
    assert first.size == 500  # once it stopped keeping, it keeps nothing more: no copy with a hole in it
    first.release()
    first.release()  # once only
    assert budget.used == 500
    third = StreamTap(limit=800, budget=budget)
    third(b"w" * 500)
    assert third.size == 500 and not third.truncated


# 5. slow clients ------------------------------------------------------------------------------------------------

def test_idle_partial_requests_are_closed_and_do_not_starve_others(tmp_path):
    upstream = RawUpstream(lambda head, body: ([("content-type", "application/json")], ANTHROPIC_OK))
    proxy = Proxy(tmp_path / "db.sqlite", "--idle-timeout", "2", upstream=upstream.url)
    idle = []
    try:
        for i in range(200):
            s = socket.create_connection(("127.0.0.1", proxy.port), timeout=60)
            s.sendall(b"POST /v1/messages HTTP/1.1\r\nhost: x\r\ncontent-length: 100\r\n\r\n{" if i % 2 else b"POST /v1/mess")
            idle.append(s)
        body = json.dumps({"model": "claude-sonnet-4-5", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}).encode()
        assert post_raw(proxy.url, "/v1/messages", body, HEADERS)[0] == 200  # served while 200 clients sit idle
        closed = 0
        for s in idle:  # every idle client is disconnected by the proxy (EOF, or a reset); a timeout is not that
            s.settimeout(30)
            try:
                closed += s.recv(65536) == b""
            except TimeoutError:
                pass
            except OSError:
                closed += 1
        upstream_connections = upstream.connections
        rc, out, err = proxy.stop()
    finally:
        for s in idle:
            s.close()
        proxy.kill()
        upstream.close()
    assert closed == 200
    assert upstream_connections == 1  # none opened for the idle clients
    assert len(rows(proxy.db)) == 1 and rc == 0, err


# 6. secrets in every corner -------------------------------------------------------------------------------------

GATEWAY_SECRETS = {
    "api-key": "AZURE-SECRET-0001",
    "x-portkey-api-key": "PORTKEY-SECRET-0002",
    "helicone-auth": "Bearer HELICONE-SECRET-0003",
    "x-litellm-api-key": "LITELLM-SECRET-0004",
    "authorization": "Bearer OPENROUTER-SECRET-0005",
    "cf-aig-authorization": "Bearer CLOUDFLARE-SECRET-0006",
    "x-custom-gateway-token": "TOKEN-SECRET-0007",
    "x-signature": "SIGNATURE-SECRET-0008",
    "X-Client-Secret": "CLIENT-SECRET-0009",
}
QUERY_SECRETS = {"key": "QUERY-KEY-0010", "api_key": "QUERY-KEY-0011", "access_token": "QUERY-TOKEN-0012", "sig": "QUERY-SIG-0013",
                 "X-Amz-Signature": "QUERY-SIG-0014", "auth": "QUERY-AUTH-0015"}


def secret_values() -> list[bytes]:
    values = [v.split()[-1] for v in GATEWAY_SECRETS.values()] + list(QUERY_SECRETS.values()) + [API_KEY]
    return [v.encode() for v in values]


def test_gateway_credentials_never_reach_disk_reports_or_terminal(upstream, tmp_path):
    from urllib.parse import urlencode

    dead = Proxy(tmp_path / "dead.sqlite", upstream=f"http://127.0.0.1:{free_port()}")
    proxy = Proxy(tmp_path / "db.sqlite", upstream=upstream.url)
    try:
        query = "?" + urlencode(QUERY_SECRETS)
        body = {"model": "claude-sonnet-4-5", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}
        for target in (proxy, dead):
            for path in ("/v1/messages", "/v1/chat/completions"):
                payload = body if path == "/v1/messages" else {"model": "gpt-4.1", "messages": body["messages"]}
                httpx.post(target.url + path + query, json=payload, headers={**HEADERS, **GATEWAY_SECRETS}, timeout=30)
        pasted = {"model": "claude-sonnet-4-5", "max_tokens": 5, "messages": [{"role": "user", "content": "my key is sk-ant-PASTED-IN-PROMPT-42"}]}
        httpx.post(proxy.url + "/v1/messages", json=pasted, headers=HEADERS, timeout=30)
        outputs = [*proxy.stop()[1:], *dead.stop()[1:]]
    finally:
        proxy.kill()
        dead.kill()
    assert len(rows(proxy.db)) == 3 and len(rows(dead.db)) == 2
    assert b"PASTED-IN-PROMPT-42" in proxy.db.read_bytes()  # the user's prompt is kept as sent
    assert "PASTED-IN-PROMPT-42" not in "".join(outputs)  # but never printed
    for db in (proxy.db, dead.db):
        with sqlite3.connect(db) as conn:
            outputs.append("\n".join(conn.iterdump()))
        for kind in ("json", "html"):
            out = subprocess.run([sys.executable, "-m", "cachelint", "report", "--db", str(db), "--format", kind], capture_output=True, text=True, timeout=120)
            assert out.returncode == 0, out.stderr
            outputs += [out.stdout, out.stderr]
    on_disk = [p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()]
    found = [(secret, i) for secret in secret_values() for i, blob in enumerate([o.encode() for o in outputs] + on_disk) if secret in blob]
    print(f"credential bytes found: {len(found)} over {len(outputs)} outputs and {len(on_disk)} files")
    assert found == []


def test_addon_in_plain_mitmdump_never_logs_a_key_from_the_url(tmp_path):
    import cachelint.proxy.addon as addon_module

    port = free_port()
    mitmdump = Path(sys.executable).with_name("mitmdump")
    process = subprocess.Popen([str(mitmdump), "-q", "-s", addon_module.__file__, "--mode", f"reverse:http://127.0.0.1:{free_port()}",
                                "--listen-host", "127.0.0.1", "--listen-port", str(port), "--set", f"cachelint_db={tmp_path / 'm.db'}",
                                "--set", "connection_strategy=lazy"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                time.sleep(0.1)
        body = {"model": "claude-sonnet-4-5", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}
        response = httpx.post(f"http://127.0.0.1:{port}/v1/messages?key=URL-KEY-SECRET-77", json=body, headers=HEADERS, timeout=30)
        assert response.status_code == 502
    finally:
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=60)
    assert "cannot be reached" in out + err  # the line is there, without the key
    assert "URL-KEY-SECRET-77" not in out + err
    assert b"URL-KEY-SECRET-77" not in (tmp_path / "m.db").read_bytes()


# 7. forward mode: LLM APIs by host and shape --------------------------------------------------------------------

def test_forward_mode_records_llm_calls_and_never_unrelated_messages_apis(upstream, tmp_path):
    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", "cachelint", "proxy", "--mode", "regular", "--port", str(port), "--db", str(tmp_path / "fwd.db"), "--no-dashboard"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    unrelated = [
        ("/messages?sessionId=mcp-1", {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "read", "arguments": {"path": "MCP-BODY-SECRET"}}}),
        ("/api/v10/channels/42/messages", {"content": "DISCORD-BODY-SECRET", "tts": False}),
        ("/v1.0/me/chats/7/messages", {"body": {"content": "GRAPH-BODY-SECRET"}}),
        ("/v1/threads/thread_1/messages", {"role": "user", "content": "ASSISTANTS-BODY-SECRET"}),
        ("/v1/responses", {"event": "push", "payload": "WEBHOOK-BODY-SECRET"}),
    ]
    try:
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                time.sleep(0.1)
        with httpx.Client(proxy=f"http://127.0.0.1:{port}", timeout=30) as client:
            llm = client.post(upstream.url + "/v1/messages", json={"model": "claude-sonnet-4-5", "max_tokens": 5, "messages": [{"role": "user", "content": "LLM-BODY"}]}, headers=HEADERS)
            assert llm.status_code == 200
            for path, payload in unrelated:
                client.post(upstream.url + path, json=payload)
    finally:
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=60)
    recorded = rows(tmp_path / "fwd.db")
    assert [r["url"].split("127.0.0.1:")[1].split("/", 1)[1] for r in recorded] == ["v1/messages"]
    data = (tmp_path / "fwd.db").read_bytes()
    assert b"LLM-BODY" in data
    for _, payload in unrelated:
        marker = json.dumps(payload).split("BODY-SECRET")[0].rsplit('"', 1)[-1] + "BODY-SECRET"
        assert marker.encode() not in data, marker


def test_llm_hosts_and_shapes():
    from cachelint.record.exchange import is_llm_exchange

    llm = json.dumps({"model": "gpt-4.1", "messages": []}).encode()
    assert is_llm_exchange("api.anthropic.com", "/v1/messages", b"not json", trusted=False)  # a known host: recorded even when odd
    assert is_llm_exchange("my-resource.openai.azure.com", "/openai/deployments/gpt/chat/completions?api-version=2024-10-21", b"{}", trusted=False)
    assert not is_llm_exchange("api.openai.com", "/v1/threads/thread_1/messages", b'{"role": "user", "content": "x"}', trusted=False)
    assert not is_llm_exchange("discord.com", "/api/v10/channels/1/messages", b'{"content": "x"}', trusted=False)
    assert is_llm_exchange("litellm.internal", "/v1/chat/completions", llm, trusted=False)  # an unknown host, an LLM body
    assert is_llm_exchange("mcp.internal", "/messages", b'{"jsonrpc": "2.0"}', trusted=True)  # reverse mode: the upstream is trusted
    assert not is_llm_exchange("api.openai.com", "/v1/models", b"", trusted=True)


# 8. terminal safety ---------------------------------------------------------------------------------------------

def test_wire_text_is_escaped_before_it_reaches_the_terminal(upstream, tmp_path):
    evil = "claude-\x1b]0;pwned\x07\x1b[2J[bold red]x[/]\u202e"
    proxy = Proxy(tmp_path / "db.sqlite", upstream=upstream.url)
    try:
        body = {"model": evil, "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}
        httpx.post(proxy.url + "/v1/messages", json=body, headers=dict(HEADERS, **{"x-claude-code-session-id": "s\x1b[31m-1"}), timeout=30)
        rc, out, err = proxy.stop()
    finally:
        proxy.kill()
    assert len(rows(proxy.db)) == 1
    assert "\x1b" not in out + err and "\x07" not in out + err and "\u202e" not in out + err
    assert "claude-\\x1b]0;pwned\\x07\\x1b[2J[bold red]x[/]\\u202e" in out  # shown, escaped, in the exchange line


def test_safe_text_escapes_controls_surrogates_and_markup():
    from cachelint.record.exchange import safe_text

    assert safe_text("a\x1b[2Jb\x07\x9b\u202e\ud800\udcff") == "a\\x1b[2Jb\\x07\\x9b\\u202e\\ud800\\xff"
    assert safe_text("[bold]x[/]", markup=True) == "\\[bold]x\\[/]"
    assert safe_text("x" * 500, limit=10) == "x" * 10 + "..."


# 9. one huge exchange does not hold up the others ---------------------------------------------------------------

def test_a_huge_exchange_is_stored_without_analysis_and_the_others_are_analyzed(tmp_path):
    from cachelint.proxy.shed import MAX_OBJECTS

    upstream = RawUpstream(lambda head, body: ([("content-type", "application/json")], ANTHROPIC_OK))
    proxy = Proxy(tmp_path / "db.sqlite", upstream=upstream.url)
    try:
        huge = {"model": "claude-sonnet-4-5", "max_tokens": 5, "messages": [{"role": ("user", "assistant")[n % 2], "content": f"t{n}"} for n in range(MAX_OBJECTS + 1001)]}
        small = {"model": "claude-sonnet-4-5", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}
        with ThreadPoolExecutor(4) as pool:
            statuses = list(pool.map(lambda b: httpx.post(proxy.url + "/v1/messages", json=b, headers=HEADERS, timeout=120).status_code, [huge] + [small] * 5))
        rc, out, err = proxy.stop()
    finally:
        proxy.kill()
        upstream.close()
    assert statuses == [200] * 6
    recorded = rows(proxy.db)
    assert len(recorded) == 6  # every row stored
    [big] = [r for r in recorded if "not analyzed" in (r["error"] or "")]
    assert f"{MAX_OBJECTS + 1002:,} JSON objects" in big["error"] and big["model"] == "claude-sonnet-4-5"
    assert all(r["prompt_tokens"] == 12 for r in recorded if r["id"] != big["id"])  # the others analyzed
    assert "stored without analysis" in err and rc == 0


def test_a_backlog_sheds_analysis_and_says_so_once():
    from cachelint.proxy.shed import SHED_BACKLOG, Shedder
    from cachelint.record.exchange import Captured

    notices: list[str] = []
    shedder = Shedder(notices.append)
    item = Captured(time.time(), "POST", "http://x/v1/messages", [], b'{"model": "m", "messages": []}')
    assert shedder.reason(item, 3) is None
    reasons = [shedder.reason(item, SHED_BACKLOG + 10 - i) for i in range(5)]
    assert all(r and "the row is kept" in r for r in reasons) and len(notices) == 1
    assert shedder.reason(item, 0) is None and len(notices) == 2 and "caught up (5 exchanges" in notices[1]


def test_an_endless_websocket_response_is_kept_only_up_to_the_limit():
    from cachelint.record.websocket import MAX_EVENTS_BYTES, ResponsesSocket

    socket_ = ResponsesSocket("http://127.0.0.1/v1/responses", [])
    socket_.client_message(json.dumps({"type": "response.create", "model": "gpt-5", "input": "hi"}), 1.0)
    delta = json.dumps({"type": "response.output_text.delta", "delta": "x" * 1000})
    sent = 0
    while sent <= 2 * MAX_EVENTS_BYTES:
        assert socket_.server_message(delta, 2.0) is None
        sent += len(delta)
    done = socket_.server_message(json.dumps({"type": "response.completed", "response": {"id": "r1", "output": [], "usage": {"input_tokens": 3}}}), 3.0)
    assert done is not None and len(done.response_body) < MAX_EVENTS_BYTES + 64 * 1024
    assert b"response.completed" in done.response_body and "were passed on but not kept" in done.error


def test_a_huge_request_body_is_streamed_through_not_held(tmp_path):
    received: list[int] = []

    def answer(head: str, body: bytes):
        received.append(len(body))
        return [("content-type", "application/json")], ANTHROPIC_OK

    upstream = RawUpstream(answer)
    proxy = Proxy(tmp_path / "db.sqlite", upstream=upstream.url)
    try:
        small = json.dumps({"model": "claude-sonnet-4-5", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}).encode()
        assert post_raw(proxy.url, "/v1/messages", small, HEADERS)[0] == 200
        time.sleep(1)
        before = proxy.rss_peak_kib()
        big = json.dumps({"model": "claude-sonnet-4-5", "max_tokens": 5, "messages": [{"role": "user", "content": "x" * (100 * 1024 * 1024)}]}).encode()
        assert post_raw(proxy.url, "/v1/messages", big, HEADERS)[0] == 200
        del big
        after = proxy.rss_peak_kib()
        rc, out, err = proxy.stop()
    finally:
        proxy.kill()
        upstream.close()
    assert received[-1] > 100 * 1024 * 1024  # all of it reached the upstream
    print(f"peak RSS {before / 1024:.0f} MiB before a 100 MiB request body, {after / 1024:.0f} MiB after")
    assert (after - before) / 1024 < 64  # mitmproxy alone used to hold the whole body
    recorded = rows(proxy.db)
    assert len(recorded) == 2 and "too large to keep" in recorded[1]["error"]


def test_the_queue_holds_bounded_bytes_of_bodies_and_never_drops_a_row(tmp_path):
    from cachelint.proxy.addon import CacheLintAddon
    from cachelint.record.analyze import Recorder
    from cachelint.record.exchange import Captured
    from cachelint.record.store import Store

    store = Store(tmp_path / "db.sqlite")
    notices: list[str] = []
    addon = CacheLintAddon(Recorder(store), on_notice=notices.append)
    addon.max_queued_bytes = 3 * 1024 * 1024
    for i in range(5):  # queued while the recorder is not running: 1 MiB each, room for 2
        body = json.dumps({"model": "claude-sonnet-4-5", "max_tokens": 5, "messages": [{"role": "user", "content": f"{i} " + "x" * 1024 * 1024}]})
        addon.enqueue(Captured(time.time(), "POST", "http://127.0.0.1/v1/messages?key=QUEUE-KEY", [], body.encode(), status=200, response_body=ANTHROPIC_OK))
    addon.start_worker()
    written, dropped = addon.drain(timeout=120)
    recorded = rows(tmp_path / "db.sqlite")
    store.close()
    assert (written, dropped, len(recorded)) == (5, 0, 5)
    assert sum("bodies not kept" in (r["error"] or "") for r in recorded) == 3
    assert len(notices) == 3 and not any("QUEUE-KEY" in n for n in notices)
