"""Ask Anthropic why a cache missed: an opt-in addon that turns on cache diagnostics for the conversations passing
through the proxy (`cachelint proxy --ask-diagnostics`).

For each Anthropic `/v1/messages` request of a conversation it adds, to the JSON body,
`"diagnostics": {"previous_message_id": <the id of the conversation's previous response>}` (`null` on the first
request it sees, which opts in) and the beta `cache-diagnosis-2026-04-07` to `anthropic-beta` (appended to the
value the client sent). The provider then answers with `diagnostics.cache_miss_reason`, which the recorder reads
and sets beside cachelint's own cause. A request that already carries `diagnostics` (the client asks itself) is
never touched.

What it changes, and what that costs (docs/provider-truth.md):
- The body gains one member at its end; every other byte stays as the client sent it (the member is spliced in
  before the closing brace, not re-serialized). `diagnostics` is not part of the prompt: it does not enter the
  cache key, so a changing `previous_message_id` breaks nothing.
- The beta header: the set of active `anthropic-beta` values is part of the prompt cache key. Added from the
  first request of a conversation on, it is the same on every request and costs nothing; when the proxy starts
  in the middle of a conversation whose client did not send it, the first proxied request misses once (the
  provider's diagnosis for it says `unavailable`). Claude Code logged in with a subscription already sends it.
- The provider keeps a fingerprint (hashes and token estimates, no prompt text) of each request that carries
  `diagnostics`, for a limited time, in the organization's workspace.

Conversations are told apart by the agent's own id (Claude Code's session header, `metadata.user_id`, ...), else
by a hash of the start of the prompt (system and first message); within one, by the set of tool names, so an
agent's sub-agents and side calls (titles, summaries: no tools) keep their own chains and never become the main
line's "previous" (a reordered tool list stays on its chain: that is a break the provider should name).
The previous id is learned in `responseheaders`/`response`: from a JSON body's `id`, or from the first
`message_start` event of a stream, read as the chunks pass (nothing is held back).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from mitmproxy import http

from cachelint.record.exchange import route_provider
from cachelint.record.sessions import conversation_key

BETA = "cache-diagnosis-2026-04-07"
MAX_CONVERSATIONS = 2000
_SCAN_LIMIT = 64 * 1024  # bytes of a stream searched for the message id
_MESSAGE_ID = re.compile(rb'"type"\s*:\s*"message_start".*?"id"\s*:\s*"([^"\\]+)"', re.S)
_KEY = "cachelint_diagnostics_conversation"


# --- plain functions ----------------------------------------------------------------------------------------------


def is_messages_request(flow: http.HTTPFlow) -> bool:
    """An Anthropic Messages call (not count_tokens, not batches)."""
    return flow.request.method == "POST" and route_provider(flow.request.path) == "anthropic"


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:16]


def chain_key(headers: dict[str, str], body: dict[str, Any]) -> str:
    """Which chain of previous ids a request belongs to: its conversation, and within it the set of tool names
    (order ignored, so a reordered tool list stays on its chain and the provider names it): an agent's sub-agents
    and side calls (titles, summaries: no tools) carry other sets and keep their own chains."""
    conversation = conversation_key(headers, body)
    if conversation is None:
        conversation = "prefix:" + _digest([body.get("system"), (body.get("messages") or [None])[0]])
    tools = body.get("tools") if isinstance(body.get("tools"), list) else []
    names = sorted(str(t.get("name")) for t in tools if isinstance(t, dict))
    return f"{conversation}|{_digest(names) if names else 'no-tools'}"


def with_diagnostics(raw: bytes, previous_id: str | None, body: Any = None) -> bytes | None:
    """The body with `"diagnostics": {"previous_message_id": ...}` spliced in as its last member, every other byte
    kept; None when it is not a JSON object or already has `diagnostics`. `body`: `raw` already parsed."""
    if body is None:
        try:
            body = json.loads(raw)
        except (ValueError, RecursionError):
            return None
    if not isinstance(body, dict) or "diagnostics" in body:
        return None
    stripped = raw.rstrip()
    if not stripped.endswith(b"}"):
        return None
    inner = stripped[:-1].rstrip()
    member = b'"diagnostics":' + json.dumps({"previous_message_id": previous_id}, separators=(",", ":")).encode()
    separator = b"" if inner.endswith(b"{") else b","
    return inner + separator + member + b"}" + raw[len(stripped):]


def with_beta(values: list[str], beta: str = BETA) -> list[str]:
    """The `anthropic-beta` header values with `beta` appended to the last one (or as the only one)."""
    present = {v.strip() for value in values for v in value.split(",")}
    if beta in present:
        return values
    if not values:
        return [beta]
    return [*values[:-1], f"{values[-1]},{beta}" if values[-1].strip() else beta]


def message_id(body: bytes) -> str | None:
    """The id of a Messages response: a JSON body's `id`, or the first `message_start` event's message id."""
    stripped = body.lstrip()
    if stripped.startswith(b"{"):
        try:
            data = json.loads(stripped)
        except (ValueError, RecursionError):
            return None
        return data.get("id") if isinstance(data, dict) and isinstance(data.get("id"), str) else None
    found = _MESSAGE_ID.search(body[:_SCAN_LIMIT])
    return found.group(1).decode("utf-8", "replace") if found else None


class _IdScanner:
    """Wraps a flow's stream function (or none): passes every chunk on at once, unchanged, and reads the message id
    from the first bytes."""

    def __init__(self, inner: Callable[[bytes], Any] | None, found: Callable[[str], None]) -> None:
        self.inner, self.found = inner, found
        self.head = b""
        self.done = False

    def __call__(self, data: bytes) -> Any:
        out = self.inner(data) if self.inner is not None else data
        if not self.done and data:
            self.head += data
            identifier = message_id(self.head)
            if identifier is not None or len(self.head) >= _SCAN_LIMIT:
                self.done = True
                self.head = b""
                if identifier is not None:
                    self.found(identifier)
        return out


# --- the addon -------------------------------------------------------------------------------------------------------


class AskDiagnostics:
    """mitmproxy addon: opt Anthropic conversations into cache diagnostics. Add it after the cachelint addon (its
    `responseheaders` wraps the stream function that addon sets)."""

    def __init__(self, beta: str | None = BETA) -> None:
        self.beta = beta  # None: the body field only (the GA docs no longer require the header)
        self.previous: OrderedDict[str, str | None] = OrderedDict()  # chain -> the latest response id
        self.asked = 0  # requests given `diagnostics`

    def request(self, flow: http.HTTPFlow) -> None:
        if not is_messages_request(flow):
            return
        raw = flow.request.content  # content-encoding undone; setting it back re-encodes
        if not raw:
            return
        try:
            body = json.loads(raw)
        except (ValueError, RecursionError):
            return
        if not isinstance(body, dict) or "diagnostics" in body:
            return  # not ours to touch: the client asks for diagnostics itself
        headers = {k.lower(): v for k, v in flow.request.headers.items(multi=True)}
        key = chain_key(headers, body)
        changed = with_diagnostics(raw, self.previous.get(key), body)
        if changed is None:
            return
        flow.request.content = changed
        if self.beta:
            flow.request.headers.set_all("anthropic-beta", with_beta(flow.request.headers.get_all("anthropic-beta"), self.beta))
        flow.metadata[_KEY] = key
        self.previous.setdefault(key, None)
        self.previous.move_to_end(key)
        while len(self.previous) > MAX_CONVERSATIONS:
            self.previous.popitem(last=False)
        self.asked += 1

    def responseheaders(self, flow: http.HTTPFlow) -> None:
        key = flow.metadata.get(_KEY)
        if key is None or flow.response is None or flow.response.status_code >= 400:
            return
        if "text/event-stream" in (flow.response.headers.get("content-type") or ""):
            stream = flow.response.stream
            inner = stream if callable(stream) else None
            flow.response.stream = _IdScanner(inner, lambda identifier: self._learn(key, identifier))

    def response(self, flow: http.HTTPFlow) -> None:
        key = flow.metadata.get(_KEY)
        if key is None or flow.response is None or flow.response.status_code >= 400:
            return
        if isinstance(flow.response.stream, _IdScanner):
            return  # learned from the stream
        body = flow.response.content or b""
        tap = flow.metadata.get("cachelint_tap")  # streamed by the cachelint addon added after this one
        if not body and tap is not None:
            body = getattr(tap, "body", b"")
        identifier = message_id(body)
        if identifier is not None:
            self._learn(key, identifier)

    def _learn(self, key: str, identifier: str) -> None:
        self.previous[key] = identifier
        self.previous.move_to_end(key)

