"""A captured exchange as the proxy (or an import) hands it over: raw, before any analysis."""

from __future__ import annotations

import gzip
import json
import zlib
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


def decode_body(data: bytes, encoding: str | None) -> bytes:
    """Undo a content-encoding for analysis only (the bytes sent on are never touched)."""
    encoding = (encoding or "").lower().strip()
    if not data or encoding in ("", "identity"):
        return data
    if encoding in ("gzip", "x-gzip"):
        return gzip.decompress(data)
    if encoding == "deflate":
        try:
            return zlib.decompress(data)
        except zlib.error:
            return zlib.decompress(data, -zlib.MAX_WBITS)
    if encoding == "br":
        import brotli

        return brotli.decompress(data)
    if encoding == "zstd":
        import zstandard

        return zstandard.ZstdDecompressor().decompressobj().decompress(data)
    raise ValueError(f"unknown content-encoding {encoding!r}")


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
        """The request body with its content-encoding undone, or None when it cannot be decoded."""
        try:
            return decode_body(self.request_body, self.header(self.request_headers, "content-encoding"))
        except (ValueError, OSError, zlib.error):
            return None

    def request_json(self, decoded: bytes | None = None) -> Any:
        """The request body parsed from its bytes (a BOM or UTF-16 detected, invalid UTF-8 refused), or None."""
        decoded = decoded if decoded is not None else self.request_decoded()
        try:
            return json.loads(decoded) if decoded is not None else None
        except (ValueError, RecursionError):
            return None

    def response_text(self) -> str | None:
        try:
            raw = decode_body(self.response_body, self.header(self.response_headers, "content-encoding"))
        except (ValueError, OSError, zlib.error) as exc:
            self.error = self.error or f"cannot decode the response body: {exc}"
            return None
        return raw.decode("utf-8", "replace")
