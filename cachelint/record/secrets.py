"""What is never written to disk: credentials in headers and URLs.

A header is a credential when its name says so: it contains key, token (not "tokens": rate-limit counters stay),
secret, auth, signature, cookie, password or credential, whatever the case and the vendor prefix. That covers
the providers (`x-api-key`, `authorization`), Azure (`api-key`), the gateways (`x-portkey-api-key`,
`helicone-auth`, `x-litellm-api-key`, `cf-aig-authorization`) and whatever the next gateway calls its key. Query
parameters (and a URL fragment, where OAuth puts tokens) are judged by the same words plus `sig` and `code`.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

SECRET_HEADERS = frozenset({
    "authorization", "proxy-authorization", "x-api-key", "api-key", "anthropic-api-key", "openai-api-key",
    "cookie", "set-cookie", "openai-organization", "openai-project", "x-goog-api-key", "x-amz-security-token",
    "x-anthropic-admin-key",
})
SECRET_QUERY_KEYS = frozenset({"key", "api_key", "api-key", "apikey", "token", "access_token", "sig", "signature", "code"})
REDACTED = "[redacted]"
_SECRET_WORDS = re.compile(r"key|token(?!s)|secret|auth|signature|cookie|passw|credential|session-token", re.IGNORECASE)


def is_secret_header(name: str) -> bool:
    lowered = name.lower()
    return lowered in SECRET_HEADERS or _SECRET_WORDS.search(lowered) is not None


def is_secret_query_key(name: str) -> bool:
    lowered = name.lower()
    return lowered in SECRET_QUERY_KEYS or _SECRET_WORDS.search(lowered) is not None or lowered.endswith("sig")


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


def _clean_query(query: str) -> str:
    if not query:
        return query
    return urlencode([(k, REDACTED if is_secret_query_key(k) else v) for k, v in parse_qsl(query, keep_blank_values=True)])


def clean_url(url: str) -> str:
    """A URL without credentials in its user info, query string or fragment (a URL that cannot be parsed is
    replaced whole: it is only ever shown, never followed)."""
    try:
        parts = urlsplit(url)
        netloc = parts.netloc.rsplit("@", 1)[-1]
        fragment = _clean_query(parts.fragment) if "=" in parts.fragment else parts.fragment
        return urlunsplit((parts.scheme, netloc, parts.path, _clean_query(parts.query), fragment))
    except ValueError:
        return "[unparsable URL]"
