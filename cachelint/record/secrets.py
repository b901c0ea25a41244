"""What is never written to disk: credentials in headers and URLs."""

from __future__ import annotations

from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

SECRET_HEADERS = frozenset({
    "authorization", "proxy-authorization", "x-api-key", "api-key", "anthropic-api-key", "openai-api-key",
    "cookie", "set-cookie", "openai-organization", "openai-project", "x-goog-api-key", "x-amz-security-token",
    "x-anthropic-admin-key",
})
SECRET_QUERY_KEYS = frozenset({"key", "api_key", "api-key", "apikey", "token", "access_token", "sig", "signature"})
REDACTED = "[redacted]"


def is_secret_header(name: str) -> bool:
    lowered = name.lower()
    return lowered in SECRET_HEADERS or "api-key" in lowered or lowered.endswith(("-token", "-secret"))


def clean_headers(headers: list[tuple[str, str]] | dict[str, str]) -> dict[str, str]:
    """Headers without credentials (dropped, not masked: not even their length is kept)."""
    items = headers.items() if isinstance(headers, dict) else headers
    out: dict[str, str] = {}
    for name, value in items:
        if is_secret_header(name):
            continue
        key = name.lower()
        out[key] = f"{out[key]}, {value}" if key in out else value
    return out


def clean_url(url: str) -> str:
    """A URL without credentials in its user info or query string."""
    parts = urlsplit(url)
    netloc = parts.netloc.rsplit("@", 1)[-1]
    query = urlencode([(k, REDACTED if k.lower() in SECRET_QUERY_KEYS else v) for k, v in parse_qsl(parts.query, keep_blank_values=True)])
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
