"""OpenAI Responses over WebSocket (Codex's default transport) as exchanges the recorder can analyze.

One connection to `/v1/responses` carries many requests: the client sends `{"type": "response.create", ...}` text
messages (the request fields at the top level), the server answers each with the events the SSE stream would carry,
one JSON message each, ending with `response.completed` (or `response.incomplete` / `response.failed` / `error`).
A request may name `previous_response_id` and send only the new input items; the full input the model sees (and the
provider caches) is then that response's full input, its output items, and the new items. This module keeps those
per connection and turns each request into a `Captured` whose body is the reconstructed full request (method `WS`)
and whose response is the events as SSE text, so usage, breaks, the simulators, reports and replay see it like
HTTP traffic. A `previous_response_id` the proxy never saw (the connection opened before it) cannot be filled in:
that exchange keeps only the new items and says so in its error.
"""

from __future__ import annotations

import json
from typing import Any

from cachelint.record.exchange import Captured

FINAL_EVENTS = {"response.completed": 200, "response.incomplete": 200, "response.failed": 500, "error": 400}
MAX_REMEMBERED = 64  # responses a connection may still continue from
MAX_EVENTS_BYTES = 16 * 1024 * 1024  # event text kept per request (as the HTTP stream tap); the final event always is


class ResponsesSocket:
    """The state of one WebSocket connection: earlier responses and the request in flight."""

    def __init__(self, url: str, headers: list[tuple[str, str]]) -> None:
        self.url, self.headers = url, headers
        self._earlier: dict[str, list[Any]] = {}  # response id -> full input + output items
        self._pending: Captured | None = None
        self._events: list[str] = []
        self._size = 0  # bytes of event text kept for the request in flight
        self._skipped = 0  # events not kept (over MAX_EVENTS_BYTES): an endless stream costs bounded memory
        self._input: list[Any] = []

    def client_message(self, text: str, at: float) -> Captured | None:
        """A message from the client; returns an exchange it cut short (a new request before the last one ended)."""
        try:
            data = json.loads(text)
        except ValueError:
            return None
        if not isinstance(data, dict) or data.get("type") != "response.create":
            return None
        cut = self._finish(at, error="a new request was sent before this one completed") if self._pending else None
        body = {k: v for k, v in data.items() if k != "type"}
        if isinstance(body.get("response"), dict):  # the nested form: {"type": "response.create", "response": {...}}
            body = body["response"]
        new_input = body.get("input")
        new_items = new_input if isinstance(new_input, list) else ([{"role": "user", "content": new_input}] if isinstance(new_input, str) else [])
        previous = body.get("previous_response_id")
        error = None
        base: list[Any] = []
        if isinstance(previous, str):
            if previous in self._earlier:
                base = self._earlier[previous]
            else:
                error = f"previous_response_id {previous} was not seen on this connection: the input is only the new items"
        self._input = base + list(new_items)
        full = dict(body, input=self._input)
        self._pending = Captured(at, "WS", self.url, self.headers, json.dumps(full, ensure_ascii=False).encode("utf-8", "backslashreplace"), streamed=True, error=error)
        self._events, self._size, self._skipped = [], 0, 0
        return cut

    def server_message(self, text: str, at: float) -> Captured | None:
        """A message from the server; returns the exchange it completed, if any."""
        if self._pending is None:
            return None
        if self._pending.first_byte_at is None:
            self._pending.first_byte_at = at
        try:
            data = json.loads(text)
        except ValueError:
            data = None
        kind = data.get("type") if isinstance(data, dict) else None
        event = f"event: {kind}\ndata: {text}\n\n" if kind else f"data: {text}\n\n"
        if kind in FINAL_EVENTS or self._size + len(event) <= MAX_EVENTS_BYTES:
            self._events.append(event)
            self._size += len(event)
        else:
            self._skipped += 1
        if kind not in FINAL_EVENTS:
            return None
        response = data.get("response") if isinstance(data.get("response"), dict) else {}
        if kind in ("response.completed", "response.incomplete") and isinstance(response.get("id"), str):
            self._earlier[response["id"]] = self._input + [item for item in response.get("output") or [] if isinstance(item, dict)]
            while len(self._earlier) > MAX_REMEMBERED:
                self._earlier.pop(next(iter(self._earlier)))
        status = FINAL_EVENTS[kind]
        if kind == "error" and isinstance(data.get("status"), int):
            status = data["status"]
        return self._finish(at, status=status)

    def close(self, at: float, error: str | None) -> Captured | None:
        """The connection ended: a request still in flight is recorded as cut short."""
        if self._pending is None:
            return None
        return self._finish(at, error=error or "the connection closed before the response completed")

    def _finish(self, at: float, status: int | None = None, error: str | None = None) -> Captured:
        captured, self._pending = self._pending, None
        assert captured is not None
        captured.status = status if status is not None else 200
        captured.response_headers = [("content-type", "text/event-stream")]
        captured.response_body = "".join(self._events).encode("utf-8", "backslashreplace")
        captured.ended_at = at
        if self._skipped and not error:
            error = f"{self._skipped:,} events over {MAX_EVENTS_BYTES:,} bytes were passed on but not kept (the final event was)"
        captured.error = captured.error or error
        self._events, self._size, self._skipped = [], 0, 0
        return captured
