"""A local stand-in for the Anthropic and OpenAI APIs, for tests of `cachelint proxy`.

The real `anthropic` / `openai` SDK clients talk to it (directly or through the proxy) over plain HTTP/1.1:

    with Upstream(event_delay=0.01) as up:
        client = anthropic.Anthropic(base_url=up.url, api_key="x", max_retries=0)
        client.messages.create(...)
        up.requests[-1].json, up.responses[-1].raw, up.responses[-1].usage

Routes (anything else: 404 with the provider's error JSON):

- ``POST /v1/messages`` (with or without ``?beta=true``): Anthropic Messages, JSON or SSE (``"stream": true``).
- ``POST /v1/messages/count_tokens``: ``{"input_tokens": N}`` (Claude Code calls it through a gateway).
- ``POST /v1/chat/completions``: OpenAI Chat Completions, JSON or SSE.
- ``POST /v1/responses``: OpenAI Responses, JSON or SSE.
- ``GET /v1/responses`` with ``Upgrade: websocket``: OpenAI Responses over WebSocket (RFC 6455, no extensions),
  as Codex speaks it: each client text message ``{"type": "response.create", ...request fields}`` is answered with
  the same events as the SSE stream, one JSON text message each. ``previous_response_id`` names an earlier
  response *of the same connection*; its input and output items come before the new ``input`` (the full input is
  what is counted and cached, and what ``requests[i].json`` holds, with ``previous_response_id`` kept beside it).
  ``"generate": false`` (a prewarm) is answered with an empty output. Each message is a ``requests`` entry of
  method ``WS``; the handshake itself is not recorded.

A body that is not JSON, not an object, or misses a required field gets a 400 in the provider's shape:
Anthropic ``{"type":"error","error":{"type":"invalid_request_error","message":...},"request_id":...}``,
OpenAI ``{"error":{"message":...,"type":"invalid_request_error","param":...,"code":...}}``.

Tokens
------
Deterministic, no tokenizer: a prompt is cut into *pieces* and each piece is UTF-8 encoded and cut into
4-byte tokens, so a piece of ``b`` bytes is ``ceil(b / 4)`` tokens (``estimate_tokens``). Pieces:

- Anthropic: every tool definition, every system block and every message content block (a plain string
  ``system`` or ``content`` is one text block). A text block counts its ``text``; any other block (and a
  tool) counts its canonical JSON with ``cache_control`` removed. No per-message overhead.
- OpenAI Chat: every tool, the ``response_format``, every message's string content or each content part
  (text parts count their ``text``, others their canonical JSON), and an assistant's ``tool_calls``.
- OpenAI Responses: every tool, ``text.format``, ``instructions``, and the ``input`` string or items (message
  content string or parts as above; other items such as ``function_call_output`` as canonical JSON).

Canonical JSON is ``json.dumps(obj, ensure_ascii=False, separators=(",", ":"))`` with the key order as
sent: like the real services, reordering keys changes the prefix. Output tokens: ``ceil(len(reply)/4)``.

Prompt cache (kept per model and per cache key; ``clear_cache()`` empties it)
------------------------------------------------------------------------------
- Anthropic, as documented: the prefix is tools -> system -> messages. Entries are written only at
  breakpoints (``cache_control`` on a block, or a top-level ``cache_control`` that lands on the last
  cacheable block), each under a cumulative SHA-256 of the blocks up to it (canonical JSON of each block,
  with its section, message index and role, ``cache_control`` removed). A breakpoint reads the newest
  entry an earlier request wrote, looking back at most ``anthropic_lookback`` (20) positions from itself
  (a run of consecutive ``tool_use`` or ``tool_result`` blocks is one position). The cache key is the
  model plus the set of ``anthropic-beta`` values; ``tool_choice``, ``thinking``, ``output_config``,
  ``output_format`` and ``context_management`` are folded into the hash where the messages start and
  ``speed`` where the system starts (the invalidation table). Usage: ``cache_read_input_tokens`` = A, the
  tokens up to the longest hit; 1h writes = B - A (B: the last 1h breakpoint after A), 5m writes = C - B
  (C: the last breakpoint); ``input_tokens`` = total - max(A, C). So total = input + writes + reads.
  Breakpoints below ``anthropic_min_tokens`` (default 0, real models 1024-4096) write nothing. TTL 5m/1h
  from the request start, refreshed on a read (``clock`` is injectable). More than 4 breakpoints, an
  unknown TTL, or a 1h breakpoint after a 5m one -> 400, as the API does.
- OpenAI (Chat and Responses, separate caches): automatic. The longest common token prefix with an earlier
  request of the same model, ``prompt_cache_key`` and reasoning effort, floored to 1024 + k*128, and only
  for prompts of at least 1024 tokens, is ``cached_tokens``. Entries idle longer than ``openai_ttl``
  (600 s) are dropped.

Cache diagnostics (only when the request opts in, as the providers document them)
-------------------------------------------------------------------------------
- Anthropic: a request with ``"diagnostics": {"previous_message_id": ...}`` gets a ``diagnostics`` key in its
  message (the JSON response, or ``message_start``'s message when streaming); a request without it gets none and
  leaves no fingerprint. ``null`` on the first turn (``previous_message_id: null``) and when no divergence was found;
  ``{"cache_miss_reason": {"type": "previous_message_not_found"}}`` when the id names no fingerprint (unknown, a
  request that did not opt in, older than ``fingerprint_ttl``); otherwise the earliest divergence in the order
  model, tools, system (``speed`` included), then the prompt-affecting parameters and the ``anthropic-beta`` set
  (``unavailable``), then messages: ``model_changed`` / ``tools_changed`` / ``system_changed`` /
  ``messages_changed`` with ``cache_missed_input_tokens`` = the tokens from the divergence to the end.
  The fault ``diagnosis-pending`` answers ``{"cache_miss_reason": null}`` (the comparison still running).
- OpenAI Responses: every response leaves a fingerprint; a request with
  ``prompt_cache_options.comparison_response_id`` gets ``prompt_cache_diagnostics`` on its response (JSON, and the
  response of ``response.completed``): ``comparison_response_not_found``; ``cache_miss`` with ``reason``
  (``model_changed``, ``prompt_cache_key_changed``, ``service_tier_changed``, ``tools_changed``,
  ``text_format_changed``, ``reasoning_effort_changed``, ``verbosity_changed``, ``input_changed``, checked in that
  order), ``cache_missed_tokens`` and ``comparison_reusable_tokens``; or ``cache_hit``.

Faults
------
Per instance (``Upstream(fault="gzip")``, the ``fault`` attribute, a callable ``RecordedRequest -> str | None``),
per request (header ``x-upstream-fault: status=429``), or queued for the next requests
(``queue_faults("status=529", None)``); the header wins over the queue, the queue over the instance.
Several faults are joined with commas (``"drip,gzip"``). Names:

- ``status=NNN``: that status with the provider's error body (429 rate_limit_error + ``retry-after``,
  500 api_error / server_error, 529 overloaded_error, ...); for a stream too, before any event.
- ``status=500-nobody``: a 500 with no body at all (``content-length: 0``).
- ``invalid-json``: 200 and a truncated JSON body (a stream: the first event's data is truncated).
- ``close-midstream``: about half of the SSE events (or half of a JSON body), then the connection is closed.
- ``error-midstream``: half of the events, then the provider's in-stream error event, then the end.
- ``drip`` or ``drip=SECONDS``: the body goes out one byte per chunk (optional delay between bytes).
- ``no-usage``: no usage anywhere (no ``usage`` key in JSON, none in the events, no include_usage chunk).
- ``big`` or ``big=BYTES``: the reply text is ``big_size`` (default 4 MiB) bytes, ignoring max tokens.
- ``diagnosis-pending``: an Anthropic request that asked for diagnostics gets ``{"cache_miss_reason": null}``.
- ``gzip`` (``content-encoding: gzip`` when the client's ``accept-encoding`` allows it) or ``gzip=force``
  (always). Streams are compressed incrementally (a sync flush per event). Without this fault the
  server never compresses.

Records
-------
``requests[i]`` (``RecordedRequest``) and ``responses[i]`` (``RecordedResponse``) share the index ``i``;
a response record is appended before its first byte is written and every byte is recorded before it is
sent. A client can have all it reads before the server's last write (an SSE client stops at ``[DONE]``,
ahead of the gzip trailer and the last chunk): ``responses[i].wait()`` returns once the server is done.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import http
import itertools
import json
import re
import socket
import threading
import time
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self
from urllib.parse import urlsplit

__all__ = [
    "FAULTS",
    "RecordedRequest",
    "RecordedResponse",
    "Upstream",
    "WebSocketClient",
    "canonical",
    "estimate_tokens",
]

FAULTS = (
    "status",
    "invalid-json",
    "close-midstream",
    "error-midstream",
    "drip",
    "no-usage",
    "big",
    "gzip",
    "diagnosis-pending",
)

TTL_SECONDS = {"5m": 300.0, "1h": 3600.0}
ANTHROPIC_MESSAGE_PARAMS = ("tool_choice", "thinking", "output_config", "output_format", "context_management")
ANTHROPIC_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}
ANTHROPIC_ERROR_MESSAGES = {429: "Number of request tokens has exceeded your per-minute rate limit", 529: "Overloaded"}


def canonical(obj: Any) -> str:
    """Compact JSON with the key order as sent (the identity of a block or tool)."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def estimate_tokens(text: str) -> int:
    """ceil(UTF-8 bytes / 4)."""
    return -(-len(text.encode("utf-8")) // 4)


def _dump(obj: Any) -> bytes:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


# --------------------------------------------------------------------------------------------------------
# records


@dataclass
class RecordedRequest:
    index: int
    method: str
    path: str  # with the query string
    headers: dict[str, str]  # lower-case names; repeated headers joined with ", "
    raw_headers: list[tuple[str, str]]  # as received, in order
    body: bytes
    json: Any = None  # the parsed body, or None when it is not JSON
    fault: str | None = None  # the fault spec in effect for this request
    received_at: float = 0.0  # time.monotonic()

    @property
    def route(self) -> str:
        return urlsplit(self.path).path

    @property
    def query(self) -> str:
        return urlsplit(self.path).query

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())


@dataclass
class RecordedResponse:
    index: int
    status: int = 0
    reason: str = ""
    headers: list[tuple[str, str]] = field(default_factory=list)
    content: bytearray = field(default_factory=bytearray)  # the entity before content-encoding
    body: bytearray = field(default_factory=bytearray)  # as sent: after content-encoding, without chunk framing
    raw: bytearray = field(default_factory=bytearray)  # every byte written to the socket, head included
    chunks: list[bytes] = field(default_factory=list)  # the body pieces as written (after content-encoding)
    chunk_times: list[float] = field(default_factory=list)  # time.monotonic() of each piece
    stream: bool = False  # an SSE response
    chunked: bool = False  # Transfer-Encoding: chunked
    complete: bool = False  # the whole response went out
    aborted: bool = False  # the server closed the connection mid-response (close-midstream)
    client_gone: bool = False  # the client went away while we were writing
    fault: str | None = None
    usage: dict[str, Any] | None = None  # the usage object the server computed (also when not sent)
    events: list[dict[str, Any]] = field(default_factory=list)  # the SSE events planned: {"event", "data"}
    settled: threading.Event = field(default_factory=threading.Event, repr=False)  # the server is done with it

    def wait(self, timeout: float = 10.0) -> RecordedResponse:
        """Wait until the server has written its last byte (a client may stop reading a stream before the
        end: an SSE client stops at ``[DONE]`` while the gzip trailer and the last chunk are still to come)."""
        if not self.settled.wait(timeout):
            raise TimeoutError(f"response {self.index} not settled after {timeout} s")
        return self

    def header(self, name: str) -> str | None:
        values = [v for k, v in self.headers if k.lower() == name.lower()]
        return ", ".join(values) if values else None

    @property
    def text(self) -> str:
        return bytes(self.content).decode("utf-8", "replace")

    @property
    def json(self) -> Any:
        try:
            return json.loads(bytes(self.content))
        except ValueError:
            return None


# --------------------------------------------------------------------------------------------------------
# faults


@dataclass
class _Faults:
    spec: str | None = None
    status: int | None = None
    nobody: bool = False
    invalid_json: bool = False
    close_midstream: bool = False
    error_midstream: bool = False
    drip: bool = False
    drip_delay: float | None = None
    no_usage: bool = False
    big: bool = False
    big_size: int | None = None
    gzip: bool = False
    gzip_force: bool = False
    diagnosis_pending: bool = False


def parse_faults(spec: str | None) -> _Faults:
    """Parse ``"status=429,gzip"``; raises ValueError on an unknown name or a bad value."""
    faults = _Faults(spec=spec or None)
    if not spec:
        return faults
    for item in spec.split(","):
        item = item.strip()
        if not item or item.lower() == "none":
            continue
        name, _, value = item.partition("=")
        name, value = name.strip().lower(), value.strip()
        if name == "status":
            match = re.fullmatch(r"(\d{3})(-nobody)?", value)
            if not match:
                raise ValueError(
                    f"bad status fault {item!r}: use status=429, status=500, status=529 or status=500-nobody"
                )
            faults.status, faults.nobody = int(match.group(1)), bool(match.group(2))
        elif name == "invalid-json" and not value:
            faults.invalid_json = True
        elif name == "close-midstream" and not value:
            faults.close_midstream = True
        elif name == "error-midstream" and not value:
            faults.error_midstream = True
        elif name == "drip":
            faults.drip, faults.drip_delay = True, float(value) if value else None
        elif name == "no-usage" and not value:
            faults.no_usage = True
        elif name == "big":
            faults.big, faults.big_size = True, int(value) if value else None
        elif name == "gzip" and value in ("", "force"):
            faults.gzip, faults.gzip_force = True, value == "force"
        elif name == "diagnosis-pending" and not value:
            faults.diagnosis_pending = True
        else:
            raise ValueError(f"unknown upstream fault {item!r}; known: {', '.join(FAULTS)}")
    return faults


def _accepts_gzip(accept_encoding: str | None) -> bool:
    for item in (accept_encoding or "").split(","):
        coding, _, params = item.strip().partition(";")
        if coding.strip().lower() in ("gzip", "x-gzip", "*"):
            q = re.search(r"q\s*=\s*([0-9.]+)", params)
            if not q or float(q.group(1)) > 0:
                return True
    return False


# --------------------------------------------------------------------------------------------------------
# errors raised while reading a request


class _BadRequest(Exception):
    def __init__(self, message: str, param: str | None = None, code: str | None = None):
        super().__init__(message)
        self.message, self.param, self.code = message, param, code


# --------------------------------------------------------------------------------------------------------
# prompt models


@dataclass
class _ABlock:
    key: str
    tokens: int
    cache_control: Any
    kind: str
    cacheable: bool


def _text_blocks(content: Any) -> list[Any]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return content
    return []


def _strip_cc(block: Any) -> tuple[Any, Any]:
    """The block without cache_control, and its cache_control (also one nested in tool_result content)."""
    if not isinstance(block, dict):
        return block, None
    cc = block.get("cache_control")
    out = {k: v for k, v in block.items() if k != "cache_control"}
    if out.get("type") == "tool_result" and isinstance(out.get("content"), list):
        inner = []
        for sub in out["content"]:
            sub, sub_cc = _strip_cc(sub)
            inner.append(sub)
            cc = cc or sub_cc
        out["content"] = inner
    return out, cc


def _block_tokens(block: Any) -> int:
    if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
        return estimate_tokens(block["text"])
    return estimate_tokens(canonical(block))


def _anthropic_layout(body: dict[str, Any]) -> list[tuple[str, Any]]:
    """The prompt in prefix order: ("mix", data) markers and ("block", _ABlock) entries."""
    out: list[tuple[str, Any]] = []
    for i, tool in enumerate(body.get("tools") or []):
        stripped, cc = _strip_cc(tool)
        out.append(
            (
                "block",
                _ABlock(canonical(["tools", i, stripped]), estimate_tokens(canonical(stripped)), cc, "tool", True),
            )
        )
    out.append(("mix", ["speed", body.get("speed")]))
    for i, block in enumerate(_text_blocks(body.get("system"))):
        stripped, cc = _strip_cc(block)
        out.append(
            (
                "block",
                _ABlock(canonical(["system", i, stripped]), _block_tokens(stripped), cc, "text", _cacheable(stripped)),
            )
        )
    out.append(("mix", ["params", {k: body.get(k) for k in ANTHROPIC_MESSAGE_PARAMS}]))
    for m, message in enumerate(body.get("messages") or []):
        role = message.get("role") if isinstance(message, dict) else None
        content = message.get("content") if isinstance(message, dict) else None
        for j, block in enumerate(_text_blocks(content)):
            stripped, cc = _strip_cc(block)
            kind = stripped.get("type", "") if isinstance(stripped, dict) else ""
            key = canonical(["messages", m, role, j, stripped])
            out.append(("block", _ABlock(key, _block_tokens(stripped), cc, kind, _cacheable(stripped))))
    return out


def _cacheable(block: Any) -> bool:
    if not isinstance(block, dict):
        return False
    if block.get("type") in ("thinking", "redacted_thinking"):
        return False
    return not (block.get("type") == "text" and not block.get("text"))


def _pieces_from_content(tag: tuple, content: Any) -> list[tuple[tuple, bytes]]:
    if isinstance(content, str):
        return [(tag + (0,), content.encode("utf-8"))]
    pieces = []
    if isinstance(content, list):
        for j, part in enumerate(content):
            if (
                isinstance(part, dict)
                and isinstance(part.get("text"), str)
                and part.get("type")
                in (
                    "text",
                    "input_text",
                    "output_text",
                )
            ):
                text = part["text"]
            else:
                text = canonical(part)
            pieces.append((tag + (j,), text.encode("utf-8")))
    return pieces


def _chat_pieces(body: dict[str, Any]) -> list[tuple[tuple, bytes]]:
    pieces: list[tuple[tuple, bytes]] = []
    for i, tool in enumerate(body.get("tools") or []):
        pieces.append((("tool", i), canonical(tool).encode("utf-8")))
    if body.get("response_format") is not None:
        pieces.append((("response_format",), canonical(body["response_format"]).encode("utf-8")))
    for i, message in enumerate(body.get("messages") or []):
        tag = ("message", i, message.get("role"), message.get("name"), message.get("tool_call_id"))
        pieces += _pieces_from_content(tag, message.get("content"))
        for key in ("tool_calls", "function_call"):
            if message.get(key):
                pieces.append((tag + (key,), canonical(message[key]).encode("utf-8")))
    return pieces


def _responses_pieces(body: dict[str, Any]) -> list[tuple[tuple, bytes]]:
    pieces: list[tuple[tuple, bytes]] = []
    for i, tool in enumerate(body.get("tools") or []):
        pieces.append((("tool", i), canonical(tool).encode("utf-8")))
    text_format = (body.get("text") or {}).get("format") if isinstance(body.get("text"), dict) else None
    if text_format is not None:
        pieces.append((("text.format",), canonical(text_format).encode("utf-8")))
    for section in ("instructions", "input"):
        value = body.get(section)
        if isinstance(value, str):
            pieces.append(((section, 0, "user" if section == "input" else "developer"), value.encode("utf-8")))
        elif isinstance(value, list):
            for i, item in enumerate(value):
                if isinstance(item, dict) and "content" in item and item.get("type", "message") == "message":
                    pieces += _pieces_from_content((section, i, item.get("role")), item.get("content"))
                else:
                    pieces.append(((section, i, "item"), canonical(item).encode("utf-8")))
    return pieces


def _pieces_tokens(pieces: list[tuple[tuple, bytes]]) -> int:
    return sum(-(-len(b) // 4) for _, b in pieces)


def _common_prefix_tokens(a: list[tuple[tuple, bytes]], b: list[tuple[tuple, bytes]]) -> int:
    tokens = 0
    for (tag_a, bytes_a), (tag_b, bytes_b) in zip(a, b):
        if tag_a == tag_b and bytes_a == bytes_b:
            tokens += -(-len(bytes_a) // 4)
            continue
        if tag_a == tag_b:
            n = 0
            limit = min(len(bytes_a), len(bytes_b))
            while n < limit and bytes_a[n] == bytes_b[n]:
                n += 1
            tokens += n // 4
        break
    return tokens


def _last_user_text(messages: Any) -> str:
    if isinstance(messages, str):
        return messages
    if not isinstance(messages, list):
        return ""
    for message in reversed(messages):
        if not isinstance(message, dict) or message.get("role", "user") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            return content
        if isinstance(content, list):
            texts = [p.get("text") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)]
            return " ".join(texts)
        return ""
    return ""


def _split_text(text: str) -> list[str]:
    """Deltas: words (with their leading space), or 16 KiB slices of a long text."""
    if len(text) > 4096:
        return [text[i : i + 16384] for i in range(0, len(text), 16384)]
    return re.findall(r"\s*\S+\s*$|\s*\S+", text) or ([text] if text else [])


def _truncate_tokens(text: str, max_tokens: int) -> str:
    return text.encode("utf-8")[: max(0, max_tokens) * 4].decode("utf-8", "ignore")


# --------------------------------------------------------------------------------------------------------
# cache diagnostics: fingerprints and comparisons


def _anthropic_fingerprint(body: dict[str, Any], headers: dict[str, str]) -> dict[str, Any]:
    """Per section, each block's identity and tokens (no content is needed to compare)."""
    sections: dict[str, list[tuple[str, int]]] = {"tools": [], "system": [], "messages": []}
    for kind, entry in _anthropic_layout(body):
        if kind == "block":
            section = json.loads(entry.key)[0]
            digest = hashlib.sha256(entry.key.encode("utf-8")).hexdigest()
            sections[section].append((digest, entry.tokens))
    betas = sorted({b.strip() for b in (headers.get("anthropic-beta") or "").split(",") if b.strip()})
    return {
        "model": body.get("model"),
        "speed": body.get("speed"),
        "params": canonical([{k: body.get(k) for k in ANTHROPIC_MESSAGE_PARAMS}, betas]),
        **sections,
    }


def _tokens_from(fp: dict[str, Any], section: str, index: int) -> int:
    order = ("tools", "system", "messages")
    tokens = sum(t for _, t in fp[section][index:])
    return tokens + sum(t for later in order[order.index(section) + 1:] for _, t in fp[later])


def _first_difference(before: list[tuple[str, int]], after: list[tuple[str, int]], *, extends: bool) -> int | None:
    """The first block where AFTER departs from BEFORE (`extends`: AFTER may add blocks at the end)."""
    for i, block in enumerate(before):
        if i >= len(after) or after[i][0] != block[0]:
            return i
    if not extends and len(after) != len(before):
        return len(before)
    return None


def _anthropic_miss_reason(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any] | None:
    """The earliest divergence of AFTER from BEFORE, as cache diagnostics reports it; None when none."""
    if before["model"] != after["model"]:
        return {"type": "model_changed", "cache_missed_input_tokens": _tokens_from(after, "tools", 0)}
    at = _first_difference(before["tools"], after["tools"], extends=False)
    if at is not None:
        return {"type": "tools_changed", "cache_missed_input_tokens": _tokens_from(after, "tools", at)}
    at = _first_difference(before["system"], after["system"], extends=False)
    if at is None and before["speed"] != after["speed"]:
        at = 0
    if at is not None:
        return {"type": "system_changed", "cache_missed_input_tokens": _tokens_from(after, "system", at)}
    if before["params"] != after["params"]:
        return {"type": "unavailable"}
    at = _first_difference(before["messages"], after["messages"], extends=True)
    if at is not None:
        return {"type": "messages_changed", "cache_missed_input_tokens": _tokens_from(after, "messages", at)}
    return None


def _openai_fingerprint(body: dict[str, Any], pieces: list[tuple[tuple, bytes]]) -> dict[str, Any]:
    text = body.get("text") if isinstance(body.get("text"), dict) else {}
    reasoning = body.get("reasoning") if isinstance(body.get("reasoning"), dict) else {}
    return {
        "model": body.get("model"),
        "prompt_cache_key": body.get("prompt_cache_key"),
        "service_tier": body.get("service_tier") or "auto",
        "tools": canonical(body.get("tools") or []),
        "text_format": canonical(text.get("format")),
        "reasoning_effort": reasoning.get("effort"),
        "verbosity": text.get("verbosity"),
        "input": [piece for piece in pieces if piece[0][0] in ("instructions", "input")],
        "pieces": pieces,
    }


OPENAI_MISS_ORDER = (
    ("model", "model_changed"),
    ("prompt_cache_key", "prompt_cache_key_changed"),
    ("service_tier", "service_tier_changed"),
    ("tools", "tools_changed"),
    ("text_format", "text_format_changed"),
    ("reasoning_effort", "reasoning_effort_changed"),
    ("verbosity", "verbosity_changed"),
)


def _openai_diagnostics(before: dict[str, Any] | None, after: dict[str, Any]) -> dict[str, Any]:
    if before is None:
        return {"type": "comparison_response_not_found"}
    reusable = _common_prefix_tokens(before["pieces"], after["pieces"])
    total = _pieces_tokens(after["pieces"])
    for key, reason in OPENAI_MISS_ORDER:
        if before[key] != after[key]:
            return {"type": "cache_miss", "reason": reason, "cache_missed_tokens": total,
                    "comparison_reusable_tokens": _pieces_tokens(before["pieces"])}
    if reusable < _pieces_tokens(before["pieces"]):
        return {"type": "cache_miss", "reason": "input_changed", "cache_missed_tokens": total - reusable,
                "comparison_reusable_tokens": reusable}
    return {"type": "cache_hit"}


# --------------------------------------------------------------------------------------------------------
# the HTTP side


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    upstream: Upstream


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    timeout = 60
    server: _Server

    def setup(self) -> None:
        super().setup()
        self.server.upstream._track(self.connection, add=True)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.upstream._track(self.connection, add=False)

    def _dispatch(self) -> None:
        self.server.upstream._handle(self)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = _dispatch

    def log_message(self, format: str, *args: Any) -> None:
        pass


class _Responder:
    """Writes one response and records every byte before it is sent."""

    def __init__(self, handler: _Handler, record: RecordedResponse, *, gzip_on: bool, drip: bool, drip_delay: float):
        self.handler, self.record = handler, record
        self.gzip_on, self.drip, self.drip_delay = gzip_on, drip, drip_delay
        self._compressor = zlib.compressobj(6, zlib.DEFLATED, 31) if gzip_on else None

    def _write(self, data: bytes) -> None:
        self.record.raw += data
        try:
            self.handler.wfile.write(data)
            self.handler.wfile.flush()
        except OSError:
            self.record.client_gone = True
            self.handler.close_connection = True
            raise

    def start(self, status: int, headers: list[tuple[str, str]], *, length: int | None) -> None:
        headers = list(headers)
        if self.gzip_on:
            headers.append(("content-encoding", "gzip"))
            headers.append(("vary", "accept-encoding"))
        if length is None:
            headers.append(("transfer-encoding", "chunked"))
            self.record.chunked = True
        else:
            headers.append(("content-length", str(length)))
        if self.handler.close_connection:
            headers.append(("connection", "close"))
        try:
            reason = http.HTTPStatus(status).phrase
        except ValueError:
            reason = {529: "Site Overloaded"}.get(status, "Unknown")
        self.record.status, self.record.reason, self.record.headers = status, reason, headers
        head = f"HTTP/1.1 {status} {reason}\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers) + "\r\n"
        self._write(head.encode("latin-1"))

    def _emit(self, data: bytes) -> None:
        if not data:
            return
        pieces: Iterable[bytes] = (data[i : i + 1] for i in range(len(data))) if self.drip else (data,)
        for piece in pieces:
            self.record.body += piece
            self.record.chunks.append(piece)
            self.record.chunk_times.append(time.monotonic())
            self._write(b"%x\r\n%s\r\n" % (len(piece), piece) if self.record.chunked else piece)
            if self.drip and self.drip_delay:
                time.sleep(self.drip_delay)

    def write(self, content: bytes) -> None:
        """One piece of a streamed entity (an SSE event): compressed with a sync flush when gzip is on."""
        self.record.content += content
        if self._compressor is not None:
            content = self._compressor.compress(content) + self._compressor.flush(zlib.Z_SYNC_FLUSH)
        self._emit(content)

    def end(self) -> None:
        if self._compressor is not None:
            self._emit(self._compressor.flush(zlib.Z_FINISH))
            self._compressor = None
        self.record.complete = True
        if self.record.chunked:
            self._write(b"0\r\n\r\n")

    def send_full(self, status: int, headers: list[tuple[str, str]], content: bytes, *, cut: bool = False) -> None:
        """A whole (non-streamed) body; with ``cut`` only half of it goes out before the connection closes."""
        encoded = gzip.compress(content, mtime=0) if self.gzip_on else content
        self._compressor = None
        self.record.content += content
        chunked = self.drip and bool(encoded)
        self.start(status, headers, length=None if chunked else len(encoded))
        if cut:
            self._emit(encoded[: len(encoded) // 2])
            self.abort()
            return
        self._emit(encoded)
        self.record.complete = True
        if chunked:
            self._write(b"0\r\n\r\n")

    def abort(self) -> None:
        self.record.aborted, self.record.complete = True, False
        self.handler.close_connection = True
        try:
            self.handler.wfile.flush()
            self.handler.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


# --------------------------------------------------------------------------------------------------------
# the server


_WS_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


class _WebSocketConn:
    """RFC 6455 framing on the handler's socket: masked client frames in, unmasked server frames out; no
    extensions are negotiated, so frames are never compressed. Pings are answered, fragments joined."""

    def __init__(self, h: _Handler) -> None:
        self.rfile, self.wfile = h.rfile, h.wfile
        self._send_lock = threading.Lock()

    def _read(self, n: int) -> bytes:
        data = self.rfile.read(n)
        if len(data) < n:
            raise OSError("connection closed")
        return data

    def receive(self) -> str | None:
        """The next text (or binary, decoded) message, or None once the client closed."""
        parts: list[bytes] = []
        while True:
            b0, b1 = self._read(2)
            opcode, fin = b0 & 0x0F, b0 & 0x80
            length = b1 & 0x7F
            if length == 126:
                length = int.from_bytes(self._read(2), "big")
            elif length == 127:
                length = int.from_bytes(self._read(8), "big")
            mask = self._read(4) if b1 & 0x80 else b"\0\0\0\0"
            payload = bytes(c ^ mask[i % 4] for i, c in enumerate(self._read(length)))
            if opcode == 0x8:
                self._frame(0x8, payload[:2])
                return None
            if opcode == 0x9:
                self._frame(0xA, payload)
                continue
            if opcode == 0xA:
                continue
            parts.append(payload)
            if fin:
                return b"".join(parts).decode("utf-8", "replace")

    def _frame(self, opcode: int, payload: bytes) -> None:
        head = bytes([0x80 | opcode])
        n = len(payload)
        head += bytes([n]) if n < 126 else bytes([126]) + n.to_bytes(2, "big") if n < 65536 else bytes([127]) + n.to_bytes(8, "big")
        with self._send_lock:
            self.wfile.write(head + payload)
            self.wfile.flush()

    def send_json(self, data: Any) -> None:
        self._frame(0x1, _dump(data))


class WebSocketClient:
    """A minimal RFC 6455 client for tests (masked frames, no extensions): ``WebSocketClient(url)``, then
    ``send_json`` / ``recv_json`` / ``close``. ``url`` is ``http://host:port/path`` (upgraded) or ``ws://...``."""

    def __init__(self, url: str, headers: dict[str, str] | None = None, timeout: float = 30) -> None:
        parts = urlsplit(url)
        self.sock = socket.create_connection((parts.hostname, parts.port or 80), timeout=timeout)
        key = base64.b64encode(hashlib.sha1(url.encode()).digest()[:16]).decode()
        extra = "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
        self.sock.sendall(
            f"GET {parts.path or '/'} HTTP/1.1\r\nHost: {parts.netloc}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n{extra}\r\n".encode()
        )
        self.rfile = self.sock.makefile("rb")
        status = self.rfile.readline()
        while self.rfile.readline() not in (b"\r\n", b"\n", b""):
            pass
        if b" 101 " not in status:
            raise OSError(f"no WebSocket upgrade: {status!r}")

    def send_json(self, data: Any) -> None:
        payload = _dump(data)
        mask = hashlib.sha1(payload).digest()[:4]
        n = len(payload)
        head = bytes([0x81]) + (bytes([0x80 | n]) if n < 126 else bytes([0x80 | 126]) + n.to_bytes(2, "big") if n < 65536 else bytes([0x80 | 127]) + n.to_bytes(8, "big"))
        self.sock.sendall(head + mask + bytes(c ^ mask[i % 4] for i, c in enumerate(payload)))

    def recv_json(self) -> Any:
        b0, b1 = self.rfile.read(2)
        length = b1 & 0x7F
        if length == 126:
            length = int.from_bytes(self.rfile.read(2), "big")
        elif length == 127:
            length = int.from_bytes(self.rfile.read(8), "big")
        return json.loads(self.rfile.read(length))

    def until(self, *kinds: str) -> list[Any]:
        """Messages up to and including the first of one of these types."""
        out = []
        while True:
            out.append(self.recv_json())
            if out[-1].get("type") in kinds:
                return out

    def close(self) -> None:
        try:
            mask = b"\0\0\0\0"
            self.sock.sendall(bytes([0x88, 0x80 | 2]) + mask + (1000).to_bytes(2, "big"))
        except OSError:
            pass
        self.sock.close()


class _WebSocketOut:
    """Where `_responses` sends its events for a WebSocket request: one text message per event."""

    prewarm = False

    def __init__(self, conn: _WebSocketConn, record: RecordedResponse) -> None:
        self.conn, self.record = conn, record
        self.final_response: dict[str, Any] | None = None

    def send_events(self, events: list[tuple[str | None, Any]], delay: float) -> None:
        self.record.status = 101
        for i, (_name, data) in enumerate(events):
            if i and delay:
                time.sleep(delay)
            payload = _dump(data)
            self.record.content += payload + b"\n"
            self.conn._frame(0x1, payload)
            if isinstance(data, dict) and data.get("type") in ("response.completed", "response.incomplete"):
                self.final_response = data.get("response")
        self.record.complete = True


class Upstream:
    """A threaded HTTP/1.1 server on 127.0.0.1 that answers like the Anthropic and OpenAI APIs.

    Args:
        event_delay: seconds between SSE events.
        fault: a fault spec for every request (see the module doc), or a callable that returns one per request.
        big_size: bytes of reply text for the ``big`` fault.
        drip_delay: seconds between bytes for the ``drip`` fault.
        retry_after: the ``retry-after`` value sent with a 429.
        reply: the reply text, or a callable ``(api, body) -> str`` with api one of "anthropic", "openai-chat",
            "openai-responses"; default
            ``"ok: " + the first 8 words of the last user message`` (``"ok"`` when there are none).
        anthropic_min_tokens: the minimum cacheable prefix; an int, or a callable ``model -> int``.
        anthropic_lookback: positions a breakpoint looks back for an entry.
        openai_min_tokens, openai_step: cached_tokens = 0 or openai_min_tokens + k * openai_step.
        openai_ttl: seconds an OpenAI prefix stays cached after its last use.
        clock: the time source for cache expiry (default time.monotonic).
        fingerprint_ttl: seconds a cache-diagnostics fingerprint is kept (by ``clock``).
        created: the base of the deterministic ``created`` timestamps (created + request index).
    """

    def __init__(
        self,
        *,
        event_delay: float = 0.0,
        fault: str | Callable[[RecordedRequest], str | None] | None = None,
        big_size: int = 4 * 1024 * 1024,
        drip_delay: float = 0.0,
        retry_after: str = "1",
        reply: str | Callable[[str, dict[str, Any]], str] | None = None,
        anthropic_min_tokens: int | Callable[[str], int] = 0,
        anthropic_lookback: int = 20,
        openai_min_tokens: int = 1024,
        openai_step: int = 128,
        openai_ttl: float = 600.0,
        clock: Callable[[], float] = time.monotonic,
        fingerprint_ttl: float = 24 * 3600.0,
        created: int = 1_700_000_000,
        host: str = "127.0.0.1",
        port: int = 0,
    ):
        if isinstance(fault, str):
            parse_faults(fault)
        self.event_delay, self.fault, self.big_size, self.drip_delay = event_delay, fault, big_size, drip_delay
        self.retry_after, self.reply = retry_after, reply
        self.anthropic_min_tokens, self.anthropic_lookback = anthropic_min_tokens, anthropic_lookback
        self.openai_min_tokens, self.openai_step, self.openai_ttl = openai_min_tokens, openai_step, openai_ttl
        self.clock, self.created = clock, created
        self.fingerprint_ttl = fingerprint_ttl
        self._fingerprints: dict[str, tuple[float, dict[str, Any]]] = {}  # response id -> (stored at, fingerprint)
        self.host, self._port = host, port
        self.requests: list[RecordedRequest] = []
        self.responses: list[RecordedResponse] = []
        self._queue: list[str | None] = []
        self._lock = threading.RLock()
        self._anthropic_cache: dict[str, tuple[float, float]] = {}  # hash -> (expires_at, ttl seconds)
        self._openai_cache: dict[tuple, list[list[Any]]] = {}  # scope -> [[pieces, last_used], ...]
        self._connections: set[socket.socket] = set()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # lifecycle ------------------------------------------------------------------------------------------

    def start(self) -> Upstream:
        if self._server is not None:
            return self
        server = _Server((self.host, self._port), _Handler)
        server.upstream = self
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.name = f"upstream:{self.port}"
        self._thread.start()
        return self

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        server.shutdown()
        with self._lock:
            connections = list(self._connections)
        for conn in connections:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("the upstream is not running")
        return self._server.server_address[1]

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    # state ---------------------------------------------------------------------------------------------

    @property
    def last_request(self) -> RecordedRequest:
        return self.requests[-1]

    @property
    def last_response(self) -> RecordedResponse:
        return self.responses[-1]

    def queue_faults(self, *specs: str | None) -> None:
        """The next len(specs) requests get these faults, in order (None: no fault)."""
        for spec in specs:
            parse_faults(spec)
        with self._lock:
            self._queue.extend(specs)

    def clear_cache(self) -> None:
        with self._lock:
            self._anthropic_cache.clear()
            self._openai_cache.clear()

    def reset(self) -> None:
        """Forget records, queued faults and the cache; ids start again at 1."""
        with self._lock:
            self.requests.clear()
            self.responses.clear()
            self._queue.clear()
            self._fingerprints.clear()
        self.clear_cache()

    def _track(self, conn: socket.socket, *, add: bool) -> None:
        with self._lock:
            (self._connections.add if add else self._connections.discard)(conn)

    # request handling ------------------------------------------------------------------------------------

    def _read_body(self, h: _Handler) -> bytes:
        if "chunked" in (h.headers.get("transfer-encoding") or "").lower():
            data = bytearray()
            while True:
                size = int(h.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while h.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return bytes(data)
                data += h.rfile.read(size)
                h.rfile.readline()
        length = int(h.headers.get("content-length") or 0)
        return h.rfile.read(length) if length else b""

    def _handle(self, h: _Handler) -> None:
        if h.command == "GET" and (h.headers.get("upgrade") or "").lower() == "websocket":
            self._websocket(h)
            return
        body = self._read_body(h)
        raw_headers = list(h.headers.items())
        headers: dict[str, str] = {}
        for k, v in raw_headers:
            headers[k.lower()] = f"{headers[k.lower()]}, {v}" if k.lower() in headers else v
        try:
            parsed = json.loads(body) if body else None
        except ValueError:
            parsed = None
        with self._lock:
            index = len(self.requests)
            split = urlsplit(h.path)  # origin-form, or absolute-form from a forward proxy
            path = (split.path or "/") + (f"?{split.query}" if split.query else "")
            request = RecordedRequest(
                index, h.command, path, headers, raw_headers, body, parsed, None, time.monotonic()
            )
            spec: str | None
            if "x-upstream-fault" in headers:
                spec = headers["x-upstream-fault"]
            elif self._queue:
                spec = self._queue.pop(0)
            else:
                spec = self.fault(request) if callable(self.fault) else self.fault
            request.fault = spec
            record = RecordedResponse(index, fault=spec)
            self.requests.append(request)
            self.responses.append(record)
        route = request.route.rstrip("/")
        provider = self._provider(route, headers)
        try:
            faults = parse_faults(spec)
        except ValueError as exc:
            faults = _Faults()
            responder = _Responder(h, record, gzip_on=False, drip=False, drip_delay=0)
            try:
                self._send_error(responder, provider, index, 400, str(exc))
            finally:
                record.settled.set()
            return
        gzip_on = faults.gzip and (faults.gzip_force or _accepts_gzip(headers.get("accept-encoding")))
        drip_delay = faults.drip_delay if faults.drip_delay is not None else self.drip_delay
        responder = _Responder(h, record, gzip_on=gzip_on, drip=faults.drip, drip_delay=drip_delay)
        try:
            self._route(h, responder, request, route, provider, faults)
        except OSError:
            record.client_gone = True
            h.close_connection = True
        finally:
            record.settled.set()

    # websocket (Responses) ---------------------------------------------------------------------------------

    def _websocket(self, h: _Handler) -> None:
        route = urlsplit(h.path).path.rstrip("/")
        key = h.headers.get("sec-websocket-key")
        if route != "/v1/responses" or not key:
            h.send_error(404 if route != "/v1/responses" else 400)
            return
        accept = base64.b64encode(hashlib.sha1((key + _WS_GUID).encode()).digest()).decode()
        h.wfile.write(
            b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + f"Sec-WebSocket-Accept: {accept}\r\n\r\n".encode()
        )
        h.wfile.flush()
        h.close_connection = True
        raw_headers = list(h.headers.items())
        headers = {k.lower(): v for k, v in raw_headers}
        conn = _WebSocketConn(h)
        earlier: dict[str, list[Any]] = {}  # response id -> the full input and the output items of that response
        while True:
            try:
                message = conn.receive()
            except (OSError, ValueError):
                return
            if message is None:
                return
            try:
                data = json.loads(message)
            except ValueError:
                data = None
            if not isinstance(data, dict) or data.get("type") != "response.create":
                conn.send_json({"type": "error", "status": 400, "error": {"type": "invalid_request_error", "code": "unknown_message",
                                                                           "message": "expected a response.create message"}})
                continue
            body = {k: v for k, v in data.items() if k != "type"}
            previous = body.get("previous_response_id")
            new_input = body.get("input") if isinstance(body.get("input"), list) else []
            if previous is not None and previous not in earlier:
                conn.send_json({"type": "error", "status": 400, "error": {"type": "invalid_request_error", "code": "previous_response_not_found",
                                                                           "message": f"Previous response with id '{previous}' not found.", "param": "previous_response_id"}})
                continue
            full = dict(body, input=(earlier[previous] if previous else []) + list(new_input), stream=True)
            with self._lock:
                index = len(self.requests)
                request = RecordedRequest(index, "WS", "/v1/responses", headers, raw_headers, _dump(full), full, None, time.monotonic())
                record = RecordedResponse(index)
                self.requests.append(request)
                self.responses.append(record)
            out = _WebSocketOut(conn, record)
            try:
                payload = self._validate("responses", request)
                if body.get("generate") is False:
                    payload = dict(payload)
                    out.prewarm = True
                self._responses(out, request, payload, _Faults())  # type: ignore[arg-type]
            except _BadRequest as exc:
                conn.send_json({"type": "error", "status": 400, "error": {"type": "invalid_request_error", "message": exc.message, "param": exc.param}})
                continue
            except OSError:
                record.client_gone = True
                return
            finally:
                record.settled.set()
            final = out.final_response or {}
            if final.get("id"):
                earlier[final["id"]] = full["input"] + [dict(item) for item in final.get("output") or []]

    @staticmethod
    def _provider(route: str, headers: dict[str, str]) -> str:
        if route.startswith("/v1/messages"):
            return "anthropic"
        if route.startswith(("/v1/chat", "/v1/responses")):
            return "openai"
        return "anthropic" if "anthropic-version" in headers or "x-api-key" in headers else "openai"

    def _route(
        self, h: _Handler, out: _Responder, req: RecordedRequest, route: str, provider: str, faults: _Faults
    ) -> None:
        api = {
            "/v1/messages": "messages",
            "/v1/messages/count_tokens": "count_tokens",
            "/v1/chat/completions": "chat",
            "/v1/responses": "responses",
        }.get(route)
        if api is None or h.command != "POST":
            message = "Not Found" if provider == "anthropic" else f"Invalid URL ({h.command} {req.route})"
            self._send_error(out, provider, req.index, 404, message)
            return
        try:
            body = self._validate(api, req)
        except _BadRequest as exc:
            self._send_error(out, provider, req.index, 400, exc.message, exc.param, exc.code)
            return
        if faults.status is not None:
            if faults.nobody:
                out.send_full(faults.status, self._headers(provider, req.index, None), b"")
            else:
                self._send_error(out, provider, req.index, faults.status, None)
            return
        try:
            if api == "count_tokens":
                total = sum(e.tokens for kind, e in _anthropic_layout(body) if kind == "block")
                self._send_json(out, provider, req.index, {"input_tokens": total}, faults)
            elif api == "messages":
                self._messages(out, req, body, faults)
            elif api == "chat":
                self._chat(out, req, body, faults)
            else:
                self._responses(out, req, body, faults)
        except _BadRequest as exc:
            self._send_error(out, provider, req.index, 400, exc.message, exc.param, exc.code)

    # validation ------------------------------------------------------------------------------------------

    @staticmethod
    def _validate(api: str, req: RecordedRequest) -> dict[str, Any]:
        if req.json is None:
            if api in ("messages", "count_tokens"):
                raise _BadRequest("There was an error parsing the body of your request: invalid JSON")
            raise _BadRequest(
                "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your "
                "HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON.)"
            )
        body = req.json
        if not isinstance(body, dict):
            raise _BadRequest("request body: Input should be an object")
        required = {
            "messages": ("model", "max_tokens", "messages"),
            "count_tokens": ("model", "messages"),
            "chat": ("model", "messages"),
            "responses": ("model",),
        }[api]
        for name in required:
            if name not in body:
                if api in ("messages", "count_tokens"):
                    raise _BadRequest(f"{name}: Field required")
                raise _BadRequest(f"Missing required parameter: '{name}'.", name, "missing_required_parameter")
        if not isinstance(body["model"], str):
            raise _BadRequest("model: Input should be a valid string", "model", "invalid_type")
        if api == "messages" and (not isinstance(body["max_tokens"], int) or body["max_tokens"] < 0):
            raise _BadRequest("max_tokens: Input should be a valid integer")
        if "messages" in required:
            messages = body["messages"]
            if not isinstance(messages, list) or not all(isinstance(m, dict) and "role" in m for m in messages):
                raise _BadRequest("messages: Input should be a valid list of messages", "messages", "invalid_type")
            if not messages and api != "count_tokens":
                if api == "messages":
                    raise _BadRequest("messages: at least one message is required")
                raise _BadRequest(
                    "Invalid 'messages': empty array. Expected an array with minimum length 1.",
                    "messages",
                    "empty_array",
                )
        for name in ("tools", "system") if api in ("messages", "count_tokens") else ("tools",):
            if name in body and not isinstance(body[name], (list, str) if name == "system" else list):
                raise _BadRequest(f"{name}: Input should be a valid list", name, "invalid_type")
        return body

    # responses ---------------------------------------------------------------------------------------------

    @staticmethod
    def _headers(provider: str, index: int, content_type: str | None) -> list[tuple[str, str]]:
        headers = [("date", formatdate(usegmt=True))]
        if content_type:
            headers.append(("content-type", content_type))
        if provider == "anthropic":
            headers.append(("request-id", f"req_{index + 1:06d}"))
        else:
            headers += [
                ("x-request-id", f"req_{index + 1:06d}"),
                ("openai-version", "2020-10-01"),
                ("openai-processing-ms", "1"),
            ]
        headers.append(("server", "cachelint-upstream"))
        if content_type and content_type.startswith("text/event-stream"):
            headers.append(("cache-control", "no-cache"))
        return headers

    def _send_error(
        self,
        out: _Responder,
        provider: str,
        index: int,
        status: int,
        message: str | None,
        param: str | None = None,
        code: str | None = None,
    ) -> None:
        headers = self._headers(provider, index, "application/json")
        if status == 429:
            headers.append(("retry-after", self.retry_after))
        if provider == "anthropic":
            kind = ANTHROPIC_ERROR_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")
            text = message or ANTHROPIC_ERROR_MESSAGES.get(status, "Internal server error")
            payload: dict[str, Any] = {
                "type": "error",
                "error": {"type": kind, "message": text},
                "request_id": f"req_{index + 1:06d}",
            }
        else:
            if status == 429:
                kind, code = "requests", code or "rate_limit_exceeded"
                text = message or "Rate limit reached for requests. Please try again in 1s."
            elif status >= 500:
                kind = "server_error"
                text = message or "The server had an error while processing your request. Sorry about that!"
            else:
                kind, text = "invalid_request_error", message or "Invalid request"
            payload = {"error": {"message": text, "type": kind, "param": param, "code": code}}
        out.send_full(status, headers, _dump(payload))

    def _send_json(self, out: _Responder, provider: str, index: int, payload: dict[str, Any], faults: _Faults) -> None:
        content = _dump(payload)
        if faults.invalid_json:
            content = content[: max(1, len(content) // 2)]
        out.send_full(200, self._headers(provider, index, "application/json"), content, cut=faults.close_midstream)

    def _send_stream(
        self,
        out: _Responder,
        provider: str,
        index: int,
        events: list[tuple[str | None, Any]],
        faults: _Faults,
        error_event: tuple[str | None, Any],
    ) -> None:
        """events: (event name or None, data: a JSON-able object or a raw string)."""
        if isinstance(out, _WebSocketOut):
            out.record.stream = True
            out.record.events = [{"event": name, "data": data} for name, data in events]
            out.send_events(events, self.event_delay)
            return
        record = out.record
        record.stream = True
        record.events = [{"event": name, "data": data} for name, data in events]
        if faults.error_midstream:
            events = events[: max(1, len(events) // 2)] + [error_event]
        cut = max(2, len(events) // 2) if faults.close_midstream else None
        out.start(200, self._headers(provider, index, "text/event-stream; charset=utf-8"), length=None)
        for i, (name, data) in enumerate(events):
            if cut is not None and i == cut:
                out.abort()
                return
            if i and self.event_delay:
                time.sleep(self.event_delay)
            payload = data if isinstance(data, str) else _dump(data).decode("utf-8")
            if faults.invalid_json and i == 0:
                payload = payload[: max(1, len(payload) // 2)]
            text = (f"event: {name}\n" if name else "") + f"data: {payload}\n\n"
            out.write(text.encode("utf-8"))
        out.end()

    def _reply_text(self, api: str, body: dict[str, Any], user_text: str, faults: _Faults) -> str:
        if faults.big:
            size = faults.big_size or self.big_size
            unit = "lorem ipsum dolor sit amet "
            return (unit * (size // len(unit) + 1))[:size]
        if callable(self.reply):
            return self.reply(api, body)
        if isinstance(self.reply, str):
            return self.reply
        words = user_text.split()[:8]
        return "ok: " + " ".join(words) if words else "ok"

    # anthropic ------------------------------------------------------------------------------------------

    def _min_tokens(self, model: str) -> int:
        m = self.anthropic_min_tokens
        return int(m(model)) if callable(m) else int(m)

    def anthropic_usage(self, body: dict[str, Any], headers: dict[str, str]) -> dict[str, int]:
        """Run one request through the Anthropic prefix cache (reads, then writes) and return the input usage."""
        layout = _anthropic_layout(body)
        betas = sorted({b.strip() for b in (headers.get("anthropic-beta") or "").split(",") if b.strip()})
        h = hashlib.sha256(canonical(["scope", body.get("model"), betas]).encode("utf-8")).digest()
        blocks: list[_ABlock] = []
        hashes: list[str] = []
        positions: list[int] = []
        cumulative: list[int] = []
        total, pos = 0, -1
        for kind, entry in layout:
            h = hashlib.sha256(h + canonical(entry if kind == "mix" else entry.key).encode("utf-8")).digest()
            if kind == "mix":
                continue
            if not (entry.kind in ("tool_use", "tool_result") and blocks and blocks[-1].kind == entry.kind):
                pos += 1
            total += entry.tokens
            blocks.append(entry)
            hashes.append(h.hex())
            positions.append(pos)
            cumulative.append(total)
        breakpoints: list[tuple[int, str]] = []
        for i, block in enumerate(blocks):
            if block.cache_control is not None:
                breakpoints.append((i, self._ttl(block.cache_control)))
        if body.get("cache_control") is not None:
            ttl = self._ttl(body["cache_control"])
            last = next((i for i in range(len(blocks) - 1, -1, -1) if blocks[i].cacheable), None)
            explicit = dict(breakpoints)
            if last is not None and last in explicit:
                if explicit[last] != ttl:
                    raise _BadRequest("cache_control: the last block already has a cache_control with a different ttl")
            elif last is not None:
                if len(breakpoints) >= 4:
                    raise _BadRequest("A maximum of 4 blocks with cache_control may be provided. Found 5.")
                breakpoints.append((last, ttl))
                breakpoints.sort()
        if len(breakpoints) > 4:
            raise _BadRequest(f"A maximum of 4 blocks with cache_control may be provided. Found {len(breakpoints)}.")
        for (_, before), (_, after) in itertools.pairwise(breakpoints):
            if before == "5m" and after == "1h":
                raise _BadRequest(
                    "A `ttl='1h'` cache_control block must not come after a `ttl='5m'` cache_control block."
                )
        minimum = self._min_tokens(str(body.get("model")))
        now = self.clock()
        with self._lock:
            cache = self._anthropic_cache
            for key in [k for k, (expires, _) in cache.items() if expires <= now]:
                del cache[key]
            read = 0
            for j, _ in breakpoints:
                i = j
                while i >= 0 and positions[j] - positions[i] < self.anthropic_lookback:
                    hit = cache.get(hashes[i])
                    if hit is not None:
                        cache[hashes[i]] = (now + hit[1], hit[1])
                        read = max(read, cumulative[i])
                        break
                    i -= 1
            written = [(j, ttl) for j, ttl in breakpoints if cumulative[j] >= minimum and cumulative[j] > read]
            for j, ttl in breakpoints:
                if cumulative[j] >= minimum:
                    old = cache.get(hashes[j])
                    seconds = max(TTL_SECONDS[ttl], old[1] if old else 0.0)
                    cache[hashes[j]] = (max(now + TTL_SECONDS[ttl], old[0] if old else 0.0), seconds)
        if written:
            last_cum = cumulative[written[-1][0]]
            one_hour = [cumulative[j] for j, ttl in written if ttl == "1h"]
            b = one_hour[-1] if one_hour else read
            w1h, w5m, covered = b - read, last_cum - b, last_cum
        else:
            w1h = w5m = 0
            covered = read
        return {
            "input_tokens": total - covered,
            "cache_creation_input_tokens": w1h + w5m,
            "cache_read_input_tokens": read,
            "cache_creation": {"ephemeral_5m_input_tokens": w5m, "ephemeral_1h_input_tokens": w1h},
        }

    def _fingerprint(self, response_id: str) -> dict[str, Any] | None:
        now = self.clock()
        with self._lock:
            for key in [k for k, (at, _) in self._fingerprints.items() if now - at > self.fingerprint_ttl]:
                del self._fingerprints[key]
            found = self._fingerprints.get(response_id)
        return found[1] if found else None

    def _keep_fingerprint(self, response_id: str, fingerprint: dict[str, Any]) -> None:
        with self._lock:
            self._fingerprints[response_id] = (self.clock(), fingerprint)

    def anthropic_diagnostics(
        self, body: dict[str, Any], headers: dict[str, str], message_id: str, faults: _Faults
    ) -> tuple[bool, Any]:
        """(whether the request opted in, the ``diagnostics`` value for its response); stores its fingerprint."""
        asked = body.get("diagnostics")
        if not isinstance(asked, dict):
            return False, None
        fingerprint = _anthropic_fingerprint(body, headers)
        previous_id = asked.get("previous_message_id")
        before = self._fingerprint(previous_id) if isinstance(previous_id, str) else None
        self._keep_fingerprint(message_id, fingerprint)
        if not isinstance(previous_id, str):
            return True, None  # the first turn: opted in, nothing to compare
        if faults.diagnosis_pending:
            return True, {"cache_miss_reason": None}
        if before is None:
            return True, {"cache_miss_reason": {"type": "previous_message_not_found"}}
        reason = _anthropic_miss_reason(before, fingerprint)
        return True, ({"cache_miss_reason": reason} if reason is not None else None)

    def openai_diagnostics(self, body: dict[str, Any], pieces: list[tuple[tuple, bytes]], response_id: str) -> Any:
        """The ``prompt_cache_diagnostics`` for a Responses request (None when it did not ask); stores its fingerprint."""
        fingerprint = _openai_fingerprint(body, pieces)
        options = body.get("prompt_cache_options")
        compared = options.get("comparison_response_id") if isinstance(options, dict) else None
        result = None
        if isinstance(compared, str):
            result = _openai_diagnostics(self._fingerprint(compared), fingerprint)
        self._keep_fingerprint(response_id, fingerprint)
        return result

    @staticmethod
    def _ttl(cache_control: Any) -> str:
        ttl = cache_control.get("ttl", "5m") if isinstance(cache_control, dict) else "5m"
        if ttl not in TTL_SECONDS:
            raise _BadRequest(f"cache_control.ttl: Input should be '5m' or '1h', got {ttl!r}")
        return ttl

    def _messages(self, out: _Responder, req: RecordedRequest, body: dict[str, Any], faults: _Faults) -> None:
        n = req.index + 1
        usage_in = self.anthropic_usage(body, req.headers)
        text = self._reply_text("anthropic", body, _last_user_text(body.get("messages")), faults)
        stop_reason = "end_turn"
        if not faults.big and estimate_tokens(text) > body["max_tokens"]:
            text, stop_reason = _truncate_tokens(text, body["max_tokens"]), "max_tokens"
        output_tokens = estimate_tokens(text)
        usage = {**usage_in, "output_tokens": output_tokens, "service_tier": "standard"}
        out.record.usage = usage
        model = body["model"]
        message_id = f"msg_{n:06d}"
        asked, diagnostics = self.anthropic_diagnostics(body, req.headers, message_id, faults)
        if not body.get("stream"):
            message: dict[str, Any] = {
                "id": message_id,
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [{"type": "text", "text": text}] if text else [],
                "stop_reason": stop_reason,
                "stop_sequence": None,
                "usage": usage,
            }
            if asked:
                message["diagnostics"] = diagnostics
            if faults.no_usage:
                del message["usage"]
            self._send_json(out, "anthropic", req.index, message, faults)
            return
        start = {
            "id": message_id,
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {**usage, "output_tokens": min(1, output_tokens)},
        }
        if asked:
            start["diagnostics"] = diagnostics
        delta_usage = {
            k: usage_in[k] for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
        }
        delta_usage["output_tokens"] = output_tokens
        message_delta: dict[str, Any] = {
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason, "stop_sequence": None},
            "usage": delta_usage,
        }
        if faults.no_usage:
            del start["usage"], message_delta["usage"]
        events: list[tuple[str | None, Any]] = [
            ("message_start", {"type": "message_start", "message": start}),
            (
                "content_block_start",
                {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
            ),
            ("ping", {"type": "ping"}),
        ]
        for piece in _split_text(text):
            events.append(
                (
                    "content_block_delta",
                    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": piece}},
                )
            )
        events += [
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            ("message_delta", message_delta),
            ("message_stop", {"type": "message_stop"}),
        ]
        error = (
            "error",
            {
                "type": "error",
                "error": {"type": "overloaded_error", "message": "Overloaded"},
                "request_id": f"req_{n:06d}",
            },
        )
        self._send_stream(out, "anthropic", req.index, events, faults, error)

    # openai ---------------------------------------------------------------------------------------------------

    def openai_cached_tokens(self, api: str, body: dict[str, Any], pieces: list[tuple[tuple, bytes]]) -> int:
        """Run one request through the OpenAI prefix cache and return cached_tokens."""
        total = _pieces_tokens(pieces)
        effort = body.get("reasoning_effort") if api == "chat" else (body.get("reasoning") or {}).get("effort")
        scope = (api, body.get("model"), body.get("prompt_cache_key"), effort)
        now = self.clock()
        with self._lock:
            entries = self._openai_cache.setdefault(scope, [])
            entries[:] = [e for e in entries if now - e[1] <= self.openai_ttl]
            best, best_entry = 0, None
            for entry in entries:
                common = _common_prefix_tokens(pieces, entry[0])
                if common > best:
                    best, best_entry = common, entry
            cached = 0
            if total >= self.openai_min_tokens and best >= self.openai_min_tokens:
                cached = self.openai_min_tokens + (best - self.openai_min_tokens) // self.openai_step * self.openai_step
                assert best_entry is not None
                best_entry[1] = now
            if total >= self.openai_min_tokens:
                same = next((e for e in entries if e[0] == pieces), None)
                if same is not None:
                    same[1] = now
                else:
                    entries.append([pieces, now])
                    del entries[:-256]
        return cached

    def _chat(self, out: _Responder, req: RecordedRequest, body: dict[str, Any], faults: _Faults) -> None:
        n = req.index + 1
        pieces = _chat_pieces(body)
        prompt_tokens = _pieces_tokens(pieces)
        cached = self.openai_cached_tokens("chat", body, pieces)
        text = self._reply_text("openai-chat", body, _last_user_text(body.get("messages")), faults)
        finish = "stop"
        limit = body.get("max_completion_tokens", body.get("max_tokens"))
        if not faults.big and isinstance(limit, int) and estimate_tokens(text) > limit:
            text, finish = _truncate_tokens(text, limit), "length"
        completion_tokens = estimate_tokens(text)
        usage = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
            "prompt_tokens_details": {"cached_tokens": cached, "audio_tokens": 0},
            "completion_tokens_details": {
                "reasoning_tokens": 0,
                "audio_tokens": 0,
                "accepted_prediction_tokens": 0,
                "rejected_prediction_tokens": 0,
            },
        }
        out.record.usage = usage
        base = {
            "id": f"chatcmpl-{n:06d}",
            "object": "chat.completion",
            "created": self.created + n,
            "model": body["model"],
        }
        if not body.get("stream"):
            completion = {
                **base,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": text, "refusal": None, "annotations": []},
                        "logprobs": None,
                        "finish_reason": finish,
                    }
                ],
                "usage": usage,
                "service_tier": "default",
                "system_fingerprint": "fp_upstream",
            }
            if faults.no_usage:
                del completion["usage"]
            self._send_json(out, "openai", req.index, completion, faults)
            return
        include_usage = bool((body.get("stream_options") or {}).get("include_usage")) and not faults.no_usage
        chunk_base = {
            **base,
            "object": "chat.completion.chunk",
            "service_tier": "default",
            "system_fingerprint": "fp_upstream",
        }

        def chunk(delta: dict[str, Any], finish_reason: str | None) -> dict[str, Any]:
            c = {
                **chunk_base,
                "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}],
            }
            if include_usage:
                c["usage"] = None
            return c

        events: list[tuple[str | None, Any]] = [
            (None, chunk({"role": "assistant", "content": "", "refusal": None}, None))
        ]
        events += [(None, chunk({"content": piece}, None)) for piece in _split_text(text)]
        events.append((None, chunk({}, finish)))
        if include_usage:
            events.append((None, {**chunk_base, "choices": [], "usage": usage}))
        events.append((None, "[DONE]"))
        error = (
            None,
            {
                "error": {
                    "message": "The server had an error while processing your request. Sorry about that!",
                    "type": "server_error",
                    "param": None,
                    "code": None,
                }
            },
        )
        self._send_stream(out, "openai", req.index, events, faults, error)

    def _responses(self, out: _Responder, req: RecordedRequest, body: dict[str, Any], faults: _Faults) -> None:
        n = req.index + 1
        pieces = _responses_pieces(body)
        input_tokens = _pieces_tokens(pieces)
        cached = self.openai_cached_tokens("responses", body, pieces)
        text = "" if getattr(out, "prewarm", False) else self._reply_text("openai-responses", body, _last_user_text(body.get("input")), faults)
        incomplete = False
        limit = body.get("max_output_tokens")
        if not faults.big and isinstance(limit, int) and estimate_tokens(text) > limit:
            text, incomplete = _truncate_tokens(text, limit), True
        output_tokens = estimate_tokens(text)
        usage = {
            "input_tokens": input_tokens,
            "input_tokens_details": {"cached_tokens": cached, "cache_write_tokens": 0},
            "output_tokens": output_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": input_tokens + output_tokens,
        }
        out.record.usage = usage
        item_id = f"msg_{n:06d}"
        part = {"type": "output_text", "text": text, "annotations": [], "logprobs": []}
        item = {
            "id": item_id,
            "type": "message",
            "status": "incomplete" if incomplete else "completed",
            "role": "assistant",
            "content": [part],
        }
        reasoning = body.get("reasoning") if isinstance(body.get("reasoning"), dict) else {}
        diagnostics = self.openai_diagnostics(body, pieces, f"resp_{n:06d}")
        response: dict[str, Any] = {
            "id": f"resp_{n:06d}",
            "object": "response",
            "created_at": self.created + n,
            "status": "incomplete" if incomplete else "completed",
            "background": False,
            "completed_at": None if incomplete else self.created + n,
            "error": None,
            "incomplete_details": {"reason": "max_output_tokens"} if incomplete else None,
            "instructions": body.get("instructions"),
            "max_output_tokens": limit,
            "model": body["model"],
            "output": [item],
            "parallel_tool_calls": body.get("parallel_tool_calls", True),
            "previous_response_id": body.get("previous_response_id"),
            "prompt_cache_key": body.get("prompt_cache_key"),
            "reasoning": {"effort": reasoning.get("effort"), "summary": reasoning.get("summary")},
            "service_tier": "default",
            "store": body.get("store", True),
            "temperature": body.get("temperature", 1.0),
            "text": body.get("text") or {"format": {"type": "text"}},
            "tool_choice": body.get("tool_choice", "auto"),
            "tools": body.get("tools") or [],
            "top_p": body.get("top_p", 1.0),
            "truncation": body.get("truncation", "disabled"),
            "usage": None if faults.no_usage else usage,
            "user": None,
            "metadata": body.get("metadata") or {},
        }
        if diagnostics is not None:
            response["prompt_cache_options"] = body.get("prompt_cache_options")
            response["prompt_cache_diagnostics"] = diagnostics
        if not body.get("stream"):
            if faults.no_usage:
                del response["usage"]
            self._send_json(out, "openai", req.index, response, faults)
            return
        seq = iter(range(1_000_000))
        pending = {
            **response,
            "status": "in_progress",
            "completed_at": None,
            "incomplete_details": None,
            "output": [],
            "usage": None,
        }
        pending.pop("prompt_cache_diagnostics", None)  # the comparison is on the final response only

        def event(kind: str, **data: Any) -> tuple[str, dict[str, Any]]:
            return kind, {"type": kind, "sequence_number": next(seq), **data}

        where = {"item_id": item_id, "output_index": 0, "content_index": 0}
        events: list[tuple[str | None, Any]] = [
            event("response.created", response=pending),
            event("response.in_progress", response=pending),
            event("response.output_item.added", output_index=0, item={**item, "status": "in_progress", "content": []}),
            event("response.content_part.added", **where, part={**part, "text": ""}),
        ]
        events += [
            event("response.output_text.delta", **where, delta=piece, logprobs=[]) for piece in _split_text(text)
        ]
        events += [
            event("response.output_text.done", **where, text=text, logprobs=[]),
            event("response.content_part.done", **where, part=part),
            event("response.output_item.done", output_index=0, item=item),
            event("response.incomplete" if incomplete else "response.completed", response=response),
        ]
        error = event(
            "error", code="server_error", message="The server had an error while processing your request.", param=None
        )
        self._send_stream(out, "openai", req.index, events, faults, error)
