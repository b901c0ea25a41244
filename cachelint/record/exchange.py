"""A captured exchange as the proxy (or an import) hands it over: raw, before any analysis."""

from __future__ import annotations

import json
import re
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

# Routes whose exchanges are recorded; everything else passes through unrecorded.
ROUTES = {
    "/v1/messages": "anthropic",
    "/messages": "anthropic",
    "/v1/chat/completions": "openai-chat",
    "/chat/completions": "openai-chat",
    "/v1/responses": "openai-responses",
    "/responses": "openai-responses",
}


def route_provider(path: str) -> str | None:
    """The API a request path belongs to, or None for anything cachelint does not record."""
    route = urlsplit(path).path.rstrip("/")
    for suffix, provider in ROUTES.items():
        if route.endswith(suffix):
            return provider
    return None


MAX_DECODED = 64 * 1024 * 1024  # decoded bytes kept for analysis (the stream tap keeps as much on the wire)
MAX_RATIO = 1000  # decoded / encoded above this (past the first MiB) is a decompression bomb, not an API body
_STEP = 64 * 1024  # decoded bytes asked of a decoder at a time


class TooLarge(ValueError):
    """A body whose decoded size passes the cap: recorded as too large to analyze, passed through untouched."""


# Hosts that serve LLM APIs (and the common gateways in front of them): in forward mode, a request to one of these on
# an API route is recorded. Any other host is recorded only when its body is clearly an LLM request.
LLM_HOSTS = ("api.anthropic.com", "api.openai.com", "openrouter.ai", "gateway.ai.cloudflare.com", "api.portkey.ai",
             "ai-gateway.helicone.ai", "oai.helicone.ai", "anthropic.helicone.ai", "api.deepseek.com", "api.x.ai",
             "api.mistral.ai", "api.groq.com", "api.together.xyz", "api.fireworks.ai", "generativelanguage.googleapis.com")
LLM_HOST_SUFFIXES = (".openai.azure.com", ".services.ai.azure.com", ".cognitiveservices.azure.com", ".openrouter.ai",
                     ".helicone.ai", ".portkey.ai")
# Paths of unrelated APIs that end like an LLM route on an LLM host (OpenAI Assistants threads).
_NOT_LLM_PATH = re.compile(r"/threads/[^/]+/messages$|/threads/[^/]+/runs")
SHAPE_PARSE_LIMIT = 8 * 1024 * 1024  # bodies larger than this are judged by their first bytes


def is_llm_host(host: str) -> bool:
    host = host.lower().rstrip(".")
    return host in LLM_HOSTS or host.endswith(LLM_HOST_SUFFIXES)


def looks_like_llm_request(body: bytes) -> bool:
    """A JSON object with a string `model` and a list `messages` or an `input` (Messages, Chat, Responses): what
    an MCP server, Discord or Graph posts to their own `/messages` is not."""
    if len(body) > SHAPE_PARSE_LIMIT:
        head = body[:65536]
        return head.lstrip()[:1] == b"{" and b'"model"' in head and (b'"messages"' in head or b'"input"' in head)
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        return False
    return (isinstance(data, dict) and isinstance(data.get("model"), str)
            and (isinstance(data.get("messages"), list) or "input" in data))


def is_llm_exchange(host: str, path: str, body: bytes | Callable[[], bytes], trusted: bool) -> bool:
    """Whether a POST is an LLM API call to record. In reverse mode the upstream was named by the user (trusted):
    the route decides. In forward mode the host and the body's shape must say so too, never the path alone.
    `body` may be a function that decodes it: called only when the host does not decide."""
    if route_provider(path) is None:
        return False
    if trusted:
        return True
    route = urlsplit(path).path.rstrip("/")
    if is_llm_host(host) and not _NOT_LLM_PATH.search(route):
        return True
    return looks_like_llm_request(body() if callable(body) else body)


def decode_body(data: bytes, encoding: str | None, limit: int = MAX_DECODED) -> bytes:
    """Undo a content-encoding for analysis only (the bytes sent on are never touched).

    Decoding is streamed and stops at `limit` decoded bytes or at MAX_RATIO times the encoded size, so a
    megabyte that inflates to gigabytes costs at most `limit` of memory (TooLarge is raised, nothing more kept).
    """
    encoding = (encoding or "").lower().strip()
    if not data or encoding in ("", "identity"):
        return data
    cap = min(limit, max(1024 * 1024, len(data) * MAX_RATIO))
    if encoding in ("gzip", "x-gzip"):
        return _inflate(data, 16 + zlib.MAX_WBITS, cap)
    if encoding == "deflate":
        try:
            return _inflate(data, zlib.MAX_WBITS, cap)
        except zlib.error:
            return _inflate(data, -zlib.MAX_WBITS, cap)
    if encoding == "br":
        return _unbrotli(data, cap)
    if encoding == "zstd":
        return _unzstd(data, cap)
    raise ValueError(f"unknown content-encoding {encoding!r}")


def _too_large(cap: int, wire: int) -> TooLarge:
    return TooLarge(f"the body decodes to more than {cap:,} bytes ({wire:,} on the wire): too large to analyze")


def _inflate(data: bytes, wbits: int, cap: int) -> bytes:
    """zlib / gzip (several gzip members too), at most `cap` bytes out."""
    out = bytearray()
    pending = data
    while pending:
        decoder = zlib.decompressobj(wbits)
        chunk = decoder.decompress(pending, _STEP)
        while True:
            out += chunk
            if len(out) > cap:
                raise _too_large(cap, len(data))
            if decoder.eof or not decoder.unconsumed_tail and not chunk:
                break
            chunk = decoder.decompress(decoder.unconsumed_tail, _STEP)
        if not decoder.eof:
            out += decoder.flush(_STEP)
            if len(out) > cap:
                raise _too_large(cap, len(data))
            break
        pending = decoder.unused_data if wbits > 16 else b""
        if pending.strip(b"\0") == b"":
            break
    return bytes(out)


def _unbrotli(data: bytes, cap: int) -> bytes:
    """brotli, fed four input bytes at a time: Brotli 1.1 (mitmproxy's pin) has no output limit, and a few bytes of a
    bomb can expand to megabytes, so the cap is checked after every few bytes."""
    import brotli

    decoder = brotli.Decompressor()
    out = bytearray()
    step = 4
    for start in range(0, len(data), step):
        out += decoder.process(data[start:start + step])
        if len(out) > cap:
            raise _too_large(cap, len(data))
    if not decoder.is_finished():
        raise ValueError("truncated brotli body")
    return bytes(out)


def _unzstd(data: bytes, cap: int) -> bytes:
    import io

    import zstandard

    out = bytearray()
    with zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data), read_across_frames=True) as reader:
        while chunk := reader.read(_STEP):
            out += chunk
            if len(out) > cap:
                raise _too_large(cap, len(data))
    return bytes(out)


_SURROGATE = re.compile("[\ud800-\udfff]")


def escape_text(text: str) -> str:
    """A string that can be written as UTF-8: a byte that was not UTF-8 (kept by surrogateescape) becomes `\\xNN`,
    a lone surrogate (a JSON `\\ud800`) becomes `\\uXXXX`; everything else is unchanged."""
    if not _SURROGATE.search(text):
        return text
    return _SURROGATE.sub(lambda m: f"\\x{ord(m.group()) - 0xDC00:02x}" if 0xDC80 <= ord(m.group()) <= 0xDCFF else f"\\u{ord(m.group()):04x}", text)


def escape_json(value: Any) -> Any:
    """A parsed JSON value with every string (keys too) passed through escape_text; iterative (no recursion limit)."""
    if isinstance(value, str):
        return escape_text(value)
    if not isinstance(value, (dict, list)):
        return value
    root: list[Any] = [value]
    stack: list[tuple[Any, Any]] = [(root, 0)]
    while stack:
        parent, key = stack.pop()
        item = parent[key]
        if isinstance(item, str):
            parent[key] = escape_text(item)
        elif isinstance(item, list):
            stack.extend((item, i) for i in range(len(item)))
        elif isinstance(item, dict):
            if any(isinstance(k, str) and _SURROGATE.search(k) for k in item):
                item = parent[key] = {escape_text(k): v for k, v in item.items()}
            stack.extend((item, k) for k in item)
    return root[0]


_ESCAPES = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}".encode())


def safe_text(value: object, limit: int = 200, markup: bool = False) -> str:
    """Text that came off the wire, safe to print on a terminal: control characters, escape sequences and
    bidirectional overrides are shown as `\\xNN` / `\\uNNNN`, lone surrogates too, and it is cut at `limit`.
    With `markup` (for rich renderables) `[` is escaped as well, so `[bold` cannot be taken for markup."""
    text = escape_text(str(value))
    if len(text) > limit:
        text = text[:limit] + "..."
    out = []
    for ch in text:
        code = ord(ch)
        if code < 0x20 or code == 0x7F or 0x80 <= code < 0xA0 or ch in "\u2028\u2029\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069":
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")
        else:
            out.append(ch)
    if markup:
        from rich.markup import escape

        return escape("".join(out))
    return "".join(out)


@dataclass(slots=True)
class Captured:
    """What crossed the proxy for one request."""

    started_at: float
    method: str
    url: str
    request_headers: list[tuple[str, str]]
    request_body: bytes
    status: int | None = None
    response_headers: list[tuple[str, str]] = field(default_factory=list)
    response_body: bytes = b""  # as received (possibly content-encoded)
    first_byte_at: float | None = None
    ended_at: float | None = None
    streamed: bool = False
    error: str | None = None
    # the decoded request body, once decoded (the shedder counts its objects, the recorder parses it): (bytes or None,)
    _decoded: tuple[bytes | None] | None = field(default=None, repr=False, compare=False)

    @property
    def path(self) -> str:
        parts = urlsplit(self.url)
        return parts.path + (f"?{parts.query}" if parts.query else "")

    def header(self, headers: list[tuple[str, str]], name: str) -> str | None:
        for key, value in headers:
            if key.lower() == name:
                return value
        return None

    def request_decoded(self) -> bytes | None:
        """The request body with its content-encoding undone, or None when it cannot be decoded (or decodes to
        more than MAX_DECODED: the exchange is then recorded as too large to analyze). Decoded once; later calls
        get the same bytes."""
        if self._decoded is None:
            self._decoded = (self._decode_request(),)
        return self._decoded[0]

    def _decode_request(self) -> bytes | None:
        try:
            return decode_body(self.request_body, self.header(self.request_headers, "content-encoding"))
        except TooLarge as exc:
            self.error = self.error or f"request: {exc}"
            return None
        except (ValueError, OSError, zlib.error, EOFError, MemoryError) as exc:
            self.error = self.error or f"cannot decode the request body: {exc}"
            return None
        except Exception as exc:  # brotli.error / zstandard.ZstdError are neither ValueError nor OSError
            self.error = self.error or f"cannot decode the request body: {exc}"
            return None

    def request_json(self, decoded: bytes | None = None) -> Any:
        """The request body parsed from its bytes (a BOM or UTF-16 detected, invalid UTF-8 refused), or None.
        Lone surrogates (`"\\ud800"` in a model name) are escaped so the exchange can be stored."""
        decoded = decoded if decoded is not None else self.request_decoded()
        try:
            value = json.loads(decoded) if decoded is not None else None
        except (ValueError, RecursionError):
            return None
        if decoded is not None and _ESCAPES.search(decoded):
            value = escape_json(value)
        return value

    def response_text(self) -> str | None:
        try:
            raw = decode_body(self.response_body, self.header(self.response_headers, "content-encoding"))
        except TooLarge as exc:
            self.error = self.error or f"response: {exc}"
            return None
        except Exception as exc:  # zlib.error, brotli.error, zstandard.ZstdError, OSError, ValueError
            self.error = self.error or f"cannot decode the response body: {exc}"
            return None
        return raw.decode("utf-8", "replace")
