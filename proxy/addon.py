"""The mitmproxy addon: hooks that capture LLM exchanges and hand them to the recorder.

The hooks only capture: streaming is switched on for recognized responses in `responseheaders` (so tokens
are forwarded as they arrive, never buffered), chunks are copied by a tap, and the finished exchange is
queued. Analysis and the database write happen on a worker thread, off mitmproxy's event loop.

WebSocket connections to the Responses API (Codex's default transport) are followed message by message
(`websocket_message`): each `response.create` and the events answering it become one exchange
(cachelint.record.websocket); the messages themselves pass unchanged.
"""

from __future__ import annotations

import logging
import queue
import threading
import time

from mitmproxy import ctx, http

from cachelint.proxy.tap import StreamTap
from cachelint.record.analyze import DEFAULT_KV_MODEL, Recorder, RecorderOptions
from cachelint.record.exchange import Captured, route_provider
from cachelint.record.store import Store, default_path
from cachelint.record.websocket import ResponsesSocket

log = logging.getLogger("cachelint.proxy")
_STOP = object()


def is_recorded(flow: http.HTTPFlow) -> bool:
    return flow.request.method == "POST" and route_provider(flow.request.path) is not None


def is_recorded_socket(flow: http.HTTPFlow) -> bool:
    return flow.websocket is not None and route_provider(flow.request.path) == "openai-responses"


def capture(flow: http.HTTPFlow, tap: StreamTap | None) -> Captured:
    """Everything cachelint needs from a finished flow, as plain data."""
    request, response = flow.request, flow.response
    captured = Captured(
        started_at=request.timestamp_start,
        method=request.method,
        url=request.pretty_url,
        request_headers=list(request.headers.items(multi=True)),
        request_body=request.raw_content or b"",
    )
    if response is not None:
        captured.status = response.status_code
        captured.response_headers = list(response.headers.items(multi=True))
        captured.response_body = tap.body if tap is not None else (response.raw_content or b"")
        captured.streamed = tap is not None
        captured.first_byte_at = (tap.first_chunk_at if tap is not None else None) or response.timestamp_start
        captured.ended_at = (tap.ended_at if tap is not None else None) or response.timestamp_end or time.time()
        if tap is not None and tap.truncated:
            captured.error = f"response body over {tap.limit} bytes: only the first part was analyzed"
    if flow.error is not None:
        captured.error = flow.error.msg
        captured.ended_at = captured.ended_at or time.time()
    return captured


class CacheLintAddon:
    def __init__(self, recorder: Recorder | None = None, on_row=None) -> None:
        self.recorder = recorder
        self.on_row = on_row
        self.queue: queue.Queue = queue.Queue()
        self.worker: threading.Thread | None = None

    def load(self, loader) -> None:
        loader.add_option("cachelint_db", str, str(default_path()), "SQLite store for recorded exchanges.")
        loader.add_option("cachelint_store", str, "full", "What to keep: full (bodies) or hashes.")
        loader.add_option("cachelint_kv_model", str, DEFAULT_KV_MODEL, "Model config for the simulated KV cost.")

    def running(self) -> None:
        if self.recorder is None:
            store = Store(ctx.options.cachelint_db)
            options = RecorderOptions(store_bodies=ctx.options.cachelint_store != "hashes", kv_model=ctx.options.cachelint_kv_model)
            self.recorder = Recorder(store, options)
        self.worker = threading.Thread(target=self._work, name="cachelint-recorder", daemon=True)
        self.worker.start()

    def responseheaders(self, flow: http.HTTPFlow) -> None:
        if is_recorded(flow) and flow.response is not None:
            tap = StreamTap()
            flow.response.stream = tap  # forward each chunk as it arrives; copy it on the side
            flow.metadata["cachelint_tap"] = tap

    def response(self, flow: http.HTTPFlow) -> None:
        self._finish(flow)

    def error(self, flow: http.HTTPFlow) -> None:
        self._finish(flow)

    def websocket_message(self, flow: http.HTTPFlow) -> None:
        if not is_recorded_socket(flow):
            return
        socket = flow.metadata.get("cachelint_socket")
        if socket is None:
            socket = flow.metadata["cachelint_socket"] = ResponsesSocket(flow.request.pretty_url, list(flow.request.headers.items(multi=True)))
        message = flow.websocket.messages[-1]  # type: ignore[union-attr]
        text = message.content.decode("utf-8", "replace")
        at = message.timestamp or time.time()
        done = socket.client_message(text, at) if message.from_client else socket.server_message(text, at)
        if done is not None:
            self.queue.put(done)

    def websocket_end(self, flow: http.HTTPFlow) -> None:
        socket = flow.metadata.get("cachelint_socket")
        if socket is not None:
            done = socket.close(time.time(), flow.error.msg if flow.error is not None else None)
            if done is not None:
                self.queue.put(done)

    def _finish(self, flow: http.HTTPFlow) -> None:
        if is_recorded(flow) and not flow.metadata.get("cachelint_queued"):
            flow.metadata["cachelint_queued"] = True  # once per exchange, even if it also errors
            self.queue.put(capture(flow, flow.metadata.get("cachelint_tap")))

    def done(self) -> None:
        """Drain the queue: every exchange that completed is recorded before the proxy exits."""
        if self.worker is not None:
            self.queue.put(_STOP)
            self.worker.join(timeout=30)

    def _work(self) -> None:
        while True:
            item = self.queue.get()
            if item is _STOP:
                return
            try:
                row = self.recorder.record(item)  # type: ignore[union-attr]
                if self.on_row is not None:
                    self.on_row(row)
            except Exception:  # never let one bad exchange stop the recorder
                log.exception("cachelint: could not record %s", item.url)


addons = [CacheLintAddon()]
