"""The mitmproxy addon: hooks that capture LLM exchanges and hand them to the recorder.

The hooks only capture: streaming is switched on for recognized responses in `responseheaders` (so tokens
are forwarded as they arrive, never buffered), chunks are copied by a tap, and the finished exchange is
queued. Analysis and the database write happen on a worker thread, off mitmproxy's event loop.

What is recognized: in reverse mode the upstream was named by the user, so the API route decides; in forward
mode the host (a known LLM API or gateway) or the body's shape (a model and messages / input) must say so too,
so an MCP server's or Discord's `/messages` is passed through and never stored.

WebSocket connections to the Responses API (Codex's default transport) are followed message by message
(`websocket_message`): each `response.create` and the events answering it become one exchange
(cachelint.record.websocket); the messages themselves pass unchanged.

Nothing completed is lost silently: on a stop the queue is drained (bounded, with progress and a count of what
could not be written), an exchange the analysis fails on is stored without its analysis, and every line this
addon prints has its URL cleaned of credentials and its wire text escaped.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
import time
from collections.abc import Callable

from mitmproxy import ctx, http
from mitmproxy.proxy import mode_specs

from cachelint.proxy.shed import Shedder, unanalyzed_row
from cachelint.proxy.tap import Budget, StreamTap
from cachelint.proxy.upstream_errors import provider_error_body, unreachable_message
from cachelint.record.analyze import DEFAULT_KV_MODEL, Recorder, RecorderOptions
from cachelint.record.exchange import (
    SHAPE_PARSE_LIMIT,
    Captured,
    decode_body,
    escape_text,
    is_llm_exchange,
    route_provider,
    safe_text,
)
from cachelint.record.secrets import clean_url
from cachelint.record.store import Store, default_path
from cachelint.record.websocket import ResponsesSocket

log = logging.getLogger("cachelint.proxy")
_STOP = object()
DRAIN_SECONDS = 60.0  # the longest a stop waits for queued exchanges to be written, by default (--drain-timeout)
MAX_QUEUED_BYTES = 1024 * 1024 * 1024  # bodies waiting for the recorder; past it an exchange is queued without them


def _trusted(flow: http.HTTPFlow) -> bool:
    """Reverse mode: the user named the upstream, so its API routes are LLM traffic."""
    return isinstance(getattr(flow.client_conn, "proxy_mode", None), mode_specs.ReverseMode)


def _request_bytes(request: http.Request) -> bytes:
    raw = request.raw_content or b""
    try:
        return decode_body(raw, request.headers.get("content-encoding"), limit=SHAPE_PARSE_LIMIT)
    except Exception:  # a bomb or a broken encoding: judged by the host only
        return b""


def is_recorded(flow: http.HTTPFlow) -> bool:
    """An LLM API call to record (decided once per flow, when the request is complete)."""
    if flow.request.method != "POST":
        return False
    known = flow.metadata.get("cachelint_llm")
    if known is None:
        known = is_llm_exchange(flow.request.pretty_host, flow.request.path, lambda: _request_bytes(flow.request), trusted=_trusted(flow))
        flow.metadata["cachelint_llm"] = known
    return known


def is_recorded_socket(flow: http.HTTPFlow) -> bool:
    return flow.websocket is not None and route_provider(flow.request.path) == "openai-responses"


def _headers(headers: http.Headers) -> list[tuple[str, str]]:
    """Headers as text that can be stored: bytes that were not UTF-8 are escaped (`\\xff`), never dropped."""
    return [(escape_text(k), escape_text(v)) for k, v in headers.items(multi=True)]


def never_connected(flow: http.HTTPFlow) -> bool:
    """The upstream could not be reached (refused, no such host, TLS failed): no response, and no connection
    (or no TLS session where one was needed, e.g. https:// in --upstream for a plain-HTTP server)."""
    if flow.response is not None or flow.error is None:
        return False
    server = flow.server_conn
    return server.timestamp_tcp_setup is None or (server.tls and server.timestamp_tls_setup is None)


def capture(flow: http.HTTPFlow, tap: StreamTap | None) -> Captured:
    """Everything cachelint needs from a finished flow, as plain data."""
    request, response = flow.request, flow.response
    captured = Captured(
        started_at=request.timestamp_start,
        method=request.method,
        url=escape_text(request.pretty_url),
        request_headers=_headers(request.headers),
        request_body=request.raw_content or b"",
    )
    if request.stream:
        captured.error = "the request body was too large to keep (streamed through, not analyzed)"
    if response is not None:
        captured.status = response.status_code
        captured.response_headers = _headers(response.headers)
        captured.response_body = tap.body if tap is not None else (response.raw_content or b"")
        captured.streamed = tap is not None
        captured.first_byte_at = (tap.first_chunk_at if tap is not None else None) or response.timestamp_start
        captured.ended_at = (tap.ended_at if tap is not None else None) or response.timestamp_end or time.time()
        if tap is not None and tap.truncated:
            captured.error = f"response body {tap.reason}: only the first {tap.size:,} bytes were kept and analyzed ({tap.seen:,} passed through)"
    if flow.error is not None:
        captured.error = flow.error.msg
        captured.ended_at = captured.ended_at or time.time()
        if never_connected(flow):
            # what the client got: a 502 in the provider's error format (cachelint.proxy.upstream_errors)
            message = unreachable_message(flow.request.pretty_host, flow.request.port, flow.error.msg)
            body = provider_error_body(flow.request.path, message)
            if body is not None:
                captured.status = 502
                captured.response_headers = [("content-type", "application/json")]
                captured.response_body = body
            captured.error = message
    return captured


class CacheLintAddon:
    def __init__(self, recorder: Recorder | None = None, on_row=None, on_notice: Callable[[str], None] | None = None,
                 drain_seconds: float = DRAIN_SECONDS) -> None:
        self.recorder = recorder
        self.drain_seconds = drain_seconds  # the longest a stop waits for queued exchanges to be written
        self.on_row = on_row
        self.on_notice = on_notice
        self.queue: queue.Queue = queue.Queue()
        self.worker: threading.Thread | None = None
        self.shedder = Shedder(self.notice)
        self.written = 0  # rows stored
        self.failed = 0  # exchanges that could not be stored at all
        self.dropped = 0  # exchanges still queued when the drain's time ran out
        self._hurry = threading.Event()  # a second stop signal: stop draining now
        self._live: dict[str, http.HTTPFlow] = {}  # recognized flows not finished yet (recorded as cut short on a stop)
        self.max_queued_bytes = MAX_QUEUED_BYTES
        self.tap_budget = Budget()  # what the streams in flight may keep together
        self._queued_bytes = 0
        self._bytes_lock = threading.Lock()

    # --- lifecycle ----------------------------------------------------------------------------------------------

    def load(self, loader) -> None:
        loader.add_option("cachelint_db", str, str(default_path()), "SQLite store for recorded exchanges.")
        loader.add_option("cachelint_store", str, "full", "What to keep: full (bodies) or hashes.")
        loader.add_option("cachelint_kv_model", str, DEFAULT_KV_MODEL, "Model config for the simulated KV cost.")

    def running(self) -> None:
        if self.recorder is None:
            store = Store(ctx.options.cachelint_db)
            options = RecorderOptions(store_bodies=ctx.options.cachelint_store != "hashes", kv_model=ctx.options.cachelint_kv_model)
            self.recorder = Recorder(store, options)
        self.start_worker()

    def start_worker(self) -> None:
        self.worker = threading.Thread(target=self._work, name="cachelint-recorder", daemon=True)
        self.worker.start()

    async def done(self) -> None:
        """Drain the queue: every exchange that completed is recorded before the proxy exits (bounded)."""
        self._record_cut_short()
        if self.worker is None:
            return
        backlog = self.queue.qsize()
        if backlog:
            self.notice(f"writing {backlog} queued exchange{'s' if backlog != 1 else ''}... (up to {self.drain_seconds:.0f} s; stop again to give up)")
        deadline = time.monotonic() + self.drain_seconds
        self.queue.put(_STOP)
        last = time.monotonic()
        while self.worker.is_alive() and time.monotonic() < deadline and not self._hurry.is_set():
            await asyncio.sleep(0.05)
            if time.monotonic() - last >= 5:
                last = time.monotonic()
                self.notice(f"writing {self.queue.qsize()} queued exchanges...")
        self._finish_drain()

    def drain(self, timeout: float) -> tuple[int, int]:
        """The same drain, blocking (for callers outside mitmproxy's loop): (rows written, exchanges dropped)."""
        self.queue.put(_STOP)
        if self.worker is not None:
            self.worker.join(timeout)
        self._finish_drain()
        return self.written, self.dropped

    def hurry(self) -> None:
        """A second stop signal: give up on what is still queued (it is counted and reported)."""
        self._hurry.set()

    def _finish_drain(self) -> None:
        self._hurry.set()  # the worker stops after the exchange it is writing
        if self.worker is not None:
            self.worker.join(10)
        left = 0
        while True:
            try:
                item = self.queue.get_nowait()
            except queue.Empty:
                break
            if item is not _STOP:
                left += 1
        if self.worker is not None and self.worker.is_alive():
            left += 1  # the one it is still analyzing
        self.dropped += left
        if left:
            self.notice(f"{left} exchange{'s' if left != 1 else ''} could not be written before the stop (the store has {self.written} from this run)", failure=True)

    def _record_cut_short(self) -> None:
        """Flows still streaming when the proxy stops: recorded with what arrived, as cut short."""
        for flow in list(self._live.values()):
            if not flow.metadata.get("cachelint_queued"):
                flow.metadata["cachelint_queued"] = True
                captured = self._capture(flow)
                captured.error = captured.error or "the proxy stopped before the response completed"
                captured.status = captured.status or None
                self.enqueue(captured)
        self._live.clear()

    # --- HTTP ---------------------------------------------------------------------------------------------------

    def request(self, flow: http.HTTPFlow) -> None:
        if is_recorded(flow):
            self._live[flow.id] = flow

    def responseheaders(self, flow: http.HTTPFlow) -> None:
        if is_recorded(flow) and flow.response is not None:
            tap = StreamTap(budget=self.tap_budget)
            flow.response.stream = tap  # forward each chunk as it arrives; copy it on the side
            flow.metadata["cachelint_tap"] = tap

    def response(self, flow: http.HTTPFlow) -> None:
        self._finish(flow)

    def error(self, flow: http.HTTPFlow) -> None:
        self._finish(flow)

    def server_connect_error(self, data) -> None:
        """One line per failed upstream connection (a mistyped --upstream, the API down, no network)."""
        server = data.server
        host, port = (server.address or ("?", 0))[:2]
        self.notice(unreachable_message(host, port, server.error or "connection failed"), failure=True)

    def tls_failed_server(self, data) -> None:
        """One line when TLS with the upstream fails (a plain-HTTP server named with https://, a bad certificate)."""
        server = data.conn
        host, port = (server.address or ("?", 0))[:2]
        self.notice(unreachable_message(host, port, f"TLS failed: {server.error or 'handshake failed'}"), failure=True)

    def websocket_message(self, flow: http.HTTPFlow) -> None:
        if not is_recorded_socket(flow):
            return
        socket = flow.metadata.get("cachelint_socket")
        if socket is None:
            socket = flow.metadata["cachelint_socket"] = ResponsesSocket(escape_text(flow.request.pretty_url), _headers(flow.request.headers))
        message = flow.websocket.messages[-1]  # type: ignore[union-attr]
        text = message.content.decode("utf-8", "replace")
        at = message.timestamp or time.time()
        done = socket.client_message(text, at) if message.from_client else socket.server_message(text, at)
        if done is not None:
            self.enqueue(done)

    def websocket_end(self, flow: http.HTTPFlow) -> None:
        socket = flow.metadata.get("cachelint_socket")
        if socket is not None:
            done = socket.close(time.time(), flow.error.msg if flow.error is not None else None)
            if done is not None:
                self.enqueue(done)

    def _finish(self, flow: http.HTTPFlow) -> None:
        self._live.pop(flow.id, None)
        if flow.request.timestamp_end is None:
            return  # the client never finished sending it (closed, or cut off as idle): nothing was forwarded
        if is_recorded(flow) and not flow.metadata.get("cachelint_queued"):
            flow.metadata["cachelint_queued"] = True  # once per exchange, even if it also errors
            self.enqueue(self._capture(flow))

    def _capture(self, flow: http.HTTPFlow) -> Captured:
        tap = flow.metadata.get("cachelint_tap")
        captured = capture(flow, tap)
        if tap is not None:
            tap.release()  # its bytes are now the queue's (bounded by max_queued_bytes)
        return captured

    # --- the recorder thread ------------------------------------------------------------------------------------

    def enqueue(self, captured: Captured) -> None:
        """Queue an exchange for the recorder. The queue's bodies are bounded in bytes: past the bound an exchange
        is queued without its bodies (its row is still written, saying so), never dropped."""
        size = len(captured.request_body) + len(captured.response_body)
        with self._bytes_lock:
            keep = self._queued_bytes + size <= self.max_queued_bytes
            if keep:
                self._queued_bytes += size
        if not keep:
            note = f"bodies not kept: the recorder's queue held over {self.max_queued_bytes:,} bytes of bodies"
            self.notice(f"{note} ({safe_text(clean_url(captured.url))})", failure=True)
            captured.request_body, captured.response_body = b"", b""
            captured.error = f"{captured.error}; {note}" if captured.error else note
        self.queue.put(captured)

    def _dequeued(self, captured: Captured) -> None:
        with self._bytes_lock:
            self._queued_bytes = max(0, self._queued_bytes - len(captured.request_body) - len(captured.response_body))

    def notice(self, text: str, failure: bool = False) -> None:
        """One line for the user: the terminal under `cachelint proxy`, mitmproxy's log when loaded into mitmdump
        (failures at error level, so `mitmdump -q` still shows them)."""
        if self.on_notice is not None:
            self.on_notice(text)
        else:
            log.log(logging.ERROR if failure else logging.WARNING, "cachelint: %s", text)

    def _work(self) -> None:
        while not (self._hurry.is_set() and self.queue.empty()):
            item = self.queue.get()
            if item is _STOP:
                return
            if self._hurry.is_set():
                self.queue.put(item)  # counted as dropped by _finish_drain
                return
            self._dequeued(item)
            self._record(item)

    def _record(self, item: Captured) -> None:
        recorder = self.recorder
        assert recorder is not None
        reason = self.shedder.reason(item, self.queue.qsize())
        try:
            row = recorder.record(item) if reason is None else self._store_unanalyzed(item, reason)
        except Exception as exc:  # never let one bad exchange stop the recorder: store it without its analysis
            self.notice(f"could not analyze {safe_text(clean_url(item.url))}: {type(exc).__name__}: {safe_text(exc)}; stored without analysis", failure=True)
            try:
                row = self._store_unanalyzed(item, f"not analyzed: {type(exc).__name__}: {exc}")
            except Exception as again:
                self.failed += 1
                self.notice(f"could not record {safe_text(clean_url(item.url))}: {type(again).__name__}: {safe_text(again)}", failure=True)
                return
        self.written += 1
        if self.on_row is not None:
            try:
                self.on_row(row)
            except Exception as exc:
                self.notice(f"could not show an exchange: {type(exc).__name__}: {safe_text(exc)}")

    def _store_unanalyzed(self, item: Captured, reason: str):
        recorder = self.recorder
        assert recorder is not None
        row = unanalyzed_row(item, reason, recorder.options.store_bodies)
        if recorder.store is not None:
            row.seq = recorder.store.last_seq(row.session) + 1
            recorder.store.add(row)
        return row


addons = [CacheLintAddon()]
