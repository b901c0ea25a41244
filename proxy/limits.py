"""Bounds on clients: a connection that has not completed a request is closed after a while.

mitmproxy closes a connection only after 10 minutes of silence, and (with its default eager strategy) opens an
upstream connection for every client that connects, so a few hundred idle or half-sent requests used to hold
every file descriptor. `cachelint proxy` connects upstream lazily (run.py) and adds this addon: a client that
has no request in flight is closed once it has been silent for `idle` seconds, or has spent `10 * idle` seconds
without completing a request however slowly it trickles. A request in flight (the body complete, waiting on the
upstream or streaming its answer) is never cut, and neither is a WebSocket or a raw TCP tunnel.
"""

from __future__ import annotations

import asyncio
import contextlib
import resource
import time

IDLE_SECONDS = 60.0


def raise_file_limit() -> int:
    """Lift the soft limit on open files to the hard one (1,024 is the default soft limit on many systems)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if hard != resource.RLIM_INFINITY else max(soft, 65536)
    if soft != resource.RLIM_INFINITY and soft < target:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


class IdleGuard:
    def __init__(self, idle: float = IDLE_SECONDS) -> None:
        self.idle = idle
        self.waiting: dict[str, float] = {}  # client id -> when it started waiting for a complete request
        self.in_flight: dict[str, int] = {}  # client id -> complete requests not answered yet
        self.closed = 0
        self._task: asyncio.Task | None = None

    def running(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._watch())

    def done(self) -> None:
        if self._task is not None:
            self._task.cancel()

    def client_connected(self, client) -> None:
        self.waiting[client.id] = time.time()

    def client_disconnected(self, client) -> None:
        self.waiting.pop(client.id, None)
        self.in_flight.pop(client.id, None)

    def request(self, flow) -> None:
        client = flow.client_conn.id  # complete: the upstream and the stream set the pace now
        self.in_flight[client] = self.in_flight.get(client, 0) + 1
        self.waiting.pop(client, None)

    def response(self, flow) -> None:
        client = flow.client_conn.id
        left = self.in_flight.get(client, 1) - 1
        self.in_flight[client] = max(0, left)
        if left <= 0 and flow.websocket is None:
            self.waiting[client] = time.time()  # keep-alive: waiting for the next request (HTTP/2: for any)

    def error(self, flow) -> None:
        if flow.request.timestamp_end is not None:  # a complete request ended; a partial one never counted
            self.response(flow)

    def websocket_start(self, flow) -> None:
        self.waiting.pop(flow.client_conn.id, None)

    def tcp_start(self, flow) -> None:
        self.waiting.pop(flow.client_conn.id, None)  # a raw tunnel (forward mode): mitmproxy's own timeout applies

    async def _watch(self) -> None:
        from mitmproxy import ctx

        while True:
            await asyncio.sleep(min(1.0, self.idle / 4))
            server = ctx.master.addons.get("proxyserver")
            now = time.time()
            for client_id, since in list(self.waiting.items()):
                handler = server.connections.get(client_id) if server is not None else None
                if handler is None:
                    self.waiting.pop(client_id, None)
                    continue
                silent = now - handler.timeout_watchdog.last_activity
                if silent > self.idle or now - since > 10 * self.idle:
                    self.waiting.pop(client_id, None)
                    self._close(handler)

    def _close(self, handler) -> None:
        io = handler.transports.get(handler.client)
        if io is not None and io.handler is not None:
            self.closed += 1
            io.handler.cancel("idle: no complete request")
