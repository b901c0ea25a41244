"""The upstream cannot be reached: the client gets a 502 in its provider's error format, not a bare close.

mitmproxy answers a failed upstream connection with an HTML 502 page written by its HTTP/1 server layer, which
no addon hook can replace (the `error` hook runs before it, and a response set there is ignored). So `cachelint
proxy` wraps that layer's `send` once (`install`): for a recognized LLM route it writes a one-line JSON error the
SDKs parse (`anthropic.APIStatusError`, `openai.APIStatusError` with the message), for any other path mitmproxy's
own page is kept. The addon records the same body with the exchange.
"""

from __future__ import annotations

import json

from cachelint.record.exchange import route_provider, safe_text


def unreachable_message(host: str, port: int, reason: str) -> str:
    reason = " ".join(str(reason).split())
    return f"the upstream {safe_text(host)}:{port} cannot be reached ({safe_text(reason)}): check --upstream and the network"


def provider_error_body(path: str, message: str) -> bytes | None:
    """The error body the provider's SDK expects on this route, or None for a route cachelint does not know."""
    provider = route_provider(path)
    if provider is None:
        return None
    message = f"cachelint proxy: {message}"
    if provider == "anthropic":
        data: dict = {"type": "error", "error": {"type": "api_error", "message": message}}
    else:
        data = {"error": {"message": message, "type": "server_error", "param": None, "code": "upstream_unreachable"}}
    return json.dumps(data).encode()


def install() -> None:
    """Answer a failed upstream connection on an LLM route with the provider's JSON error (HTTP/1 clients)."""
    from mitmproxy import http
    from mitmproxy.connection import ConnectionState
    from mitmproxy.net.http import http1
    from mitmproxy.proxy import commands
    from mitmproxy.proxy.layers.http import _http1
    from mitmproxy.proxy.layers.http._events import ResponseProtocolError

    original = _http1.Http1Server.send
    if getattr(original, "cachelint", False):
        return

    def send(self, event):
        request = getattr(self, "request", None)
        if (isinstance(event, ResponseProtocolError) and event.code == 502 and self.response is None and request is not None
                and self.conn.state & ConnectionState.CAN_WRITE):
            body = provider_error_body(request.path, unreachable_message(request.pretty_host, request.port, event.message))
            if body is not None:
                response = http.Response.make(502, body, {"content-type": "application/json", "connection": "close"})
                yield commands.SendData(self.conn, http1.assemble_response(response))
                yield commands.CloseConnection(self.conn)
                return
        yield from original(self, event)

    send.cachelint = True  # type: ignore[attr-defined]
    _http1.Http1Server.send = send
