"""`cachelint import`: recorded traffic from other tools into the store, through the proxy's own pipeline.

Formats (detected from the content):
- HAR 1.2 (mitmproxy's savehar, browser devtools): `log.entries[]`.
- JSONL of exchanges as cachelint writes them: `{"request": {"method", "url" or "path", "headers", "body"},
  "response": {"status", "headers", "body"}}`, optionally with `started_at` (epoch seconds).
- claude-trace logs (JSONL): `{"request": {"timestamp", "method", "url", "headers", "body"},
  "response": {"timestamp", "status_code", "headers", "body" or "body_raw"}}`.
Credentials in the input are dropped on the way in, as for live traffic.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from cachelint.errors import CachelintError
from cachelint.record.exchange import Captured, route_provider


def _headers(value: Any) -> list[tuple[str, str]]:
    if isinstance(value, dict):
        return [(str(k), str(v)) for k, v in value.items()]
    if isinstance(value, list):
        return [(str(h.get("name", "")), str(h.get("value", ""))) for h in value if isinstance(h, dict)]
    return []


def _body_bytes(value: Any) -> bytes:
    if value is None:
        return b""
    if isinstance(value, (dict, list)):
        return json.dumps(value).encode()
    return str(value).encode()


def _time(value: Any, default: float) -> float:
    if isinstance(value, (int, float)):
        return float(value) / (1000.0 if value > 1e11 else 1.0)
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return default
    return default


def _without_encoding(headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Bodies in HAR and trace files are already decoded: drop the content-encoding that described the wire."""
    return [(k, v) for k, v in headers if k.lower() not in ("content-encoding", "content-length")]


def from_har(data: dict[str, Any]) -> Iterator[Captured]:
    for i, entry in enumerate(data.get("log", {}).get("entries", [])):
        request, response = entry.get("request", {}), entry.get("response", {})
        started = _time(entry.get("startedDateTime"), float(i))
        content = response.get("content", {}) or {}
        text = content.get("text") or ""
        body = base64.b64decode(text) if content.get("encoding") == "base64" else text.encode()
        wait = (entry.get("timings") or {}).get("wait")
        yield Captured(
            started_at=started,
            method=request.get("method", "POST"),
            url=request.get("url", ""),
            request_headers=_without_encoding(_headers(request.get("headers"))),
            request_body=((request.get("postData") or {}).get("text") or "").encode(),
            status=response.get("status"),
            response_headers=_without_encoding(_headers(response.get("headers"))),
            response_body=body,
            first_byte_at=started + wait / 1000.0 if isinstance(wait, (int, float)) and wait >= 0 else None,
            ended_at=started + (entry.get("time") or 0) / 1000.0,
        )


def from_exchange(data: dict[str, Any], index: int) -> Captured:
    request, response = data.get("request") or {}, data.get("response") or {}
    started = _time(data.get("started_at") or request.get("timestamp"), float(index))
    body = response.get("body", response.get("body_raw"))
    url = request.get("url") or ("https://recorded" + (request.get("path") or "/v1/messages"))
    return Captured(
        started_at=started,
        method=request.get("method", "POST"),
        url=url,
        request_headers=_without_encoding(_headers(request.get("headers"))),
        request_body=_body_bytes(request.get("body")),
        status=response.get("status", response.get("status_code")) if response else None,
        response_headers=_without_encoding(_headers(response.get("headers"))),
        response_body=_body_bytes(body),
        first_byte_at=_time(response.get("timestamp"), started) if response.get("timestamp") else None,
        ended_at=_time(response.get("timestamp"), started) if response.get("timestamp") else None,
    )


def read(path: str | Path) -> list[Captured]:
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CachelintError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise CachelintError(f"{path}: cannot read: {exc}") from None
    stripped = text.lstrip()
    if stripped.startswith("{") and '"log"' in stripped[:2000]:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise CachelintError(f"{path}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
        if isinstance(data, dict) and isinstance(data.get("log"), dict):
            return [c for c in from_har(data) if route_provider(c.path)]
    captured = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            raise CachelintError(f"{path}:{number}: invalid JSON: {exc.msg} (expected HAR 1.2 or one exchange per line)") from None
        if not isinstance(data, dict) or not isinstance(data.get("request"), dict):
            raise CachelintError(f"{path}:{number}: not an exchange (an object with \"request\")")
        exchange = from_exchange(data, number)
        if route_provider(exchange.path):
            captured.append(exchange)
    return captured
