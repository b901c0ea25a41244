"""Usage as providers report it, normalized: how much of a prompt was read from cache, written, or fresh.

- Anthropic: total input = input_tokens + cache_creation_input_tokens + cache_read_input_tokens
  (`input_tokens` is only what comes after the last breakpoint).
- OpenAI Chat: prompt_tokens includes prompt_tokens_details.cached_tokens. Responses: input_tokens includes
  input_tokens_details.cached_tokens. GPT-5.6+ adds cache_write_tokens.
- Streams: Anthropic message_start then message_delta (the last value of each field wins); OpenAI Chat's
  final chunk with `usage` (only with stream_options.include_usage); Responses' response.completed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from cachelint.sse import Event, parse_events


@dataclass(frozen=True, slots=True)
class Usage:
    prompt_tokens: int  # every input token, cached or not
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cache_write_5m_tokens: int | None = None
    cache_write_1h_tokens: int | None = None
    output_tokens: int | None = None

    @property
    def uncached_tokens(self) -> int:
        """Input tokens prefilled this request (written to cache or not)."""
        return self.prompt_tokens - self.cache_read_tokens

    @property
    def hit_rate(self) -> float:
        return self.cache_read_tokens / self.prompt_tokens if self.prompt_tokens else 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "prompt_tokens": self.prompt_tokens,
            "cache_read_tokens": self.cache_read_tokens,
            "cache_write_tokens": self.cache_write_tokens,
            "cache_write_5m_tokens": self.cache_write_5m_tokens,
            "cache_write_1h_tokens": self.cache_write_1h_tokens,
            "output_tokens": self.output_tokens,
            "hit_rate": round(self.hit_rate, 4),
        }


def token_count(value: Any) -> int | None:
    """A token count as reported, or None when it is missing or not a count (a string, a bool, negative)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _int(value: Any) -> int:
    return token_count(value) or 0


def from_anthropic(usage: dict[str, Any]) -> Usage | None:
    if not isinstance(usage, dict) or "input_tokens" not in usage:
        return None
    read = _int(usage.get("cache_read_input_tokens"))
    write = _int(usage.get("cache_creation_input_tokens"))
    split = usage.get("cache_creation") if isinstance(usage.get("cache_creation"), dict) else {}
    return Usage(
        prompt_tokens=_int(usage.get("input_tokens")) + read + write,
        cache_read_tokens=read,
        cache_write_tokens=write,
        cache_write_5m_tokens=token_count(split.get("ephemeral_5m_input_tokens")) if split else None,
        cache_write_1h_tokens=token_count(split.get("ephemeral_1h_input_tokens")) if split else None,
        output_tokens=token_count(usage.get("output_tokens")),
    )


def from_openai(usage: dict[str, Any]) -> Usage | None:
    if not isinstance(usage, dict):
        return None
    if "prompt_tokens" in usage:  # Chat Completions
        total, details, output = usage["prompt_tokens"], usage.get("prompt_tokens_details"), "completion_tokens"
    elif "input_tokens" in usage:  # Responses
        total, details, output = usage["input_tokens"], usage.get("input_tokens_details"), "output_tokens"
    else:
        return None
    details = details if isinstance(details, dict) else {}
    return Usage(
        prompt_tokens=_int(total),
        cache_read_tokens=_int(details.get("cached_tokens")),
        cache_write_tokens=_int(details.get("cache_write_tokens")),
        output_tokens=token_count(usage.get(output)),
    )


def _event_json(event: Event) -> dict[str, Any] | None:
    if event.data.strip() == "[DONE]":
        return None
    try:
        data = json.loads(event.data)
    except (ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


class StreamUsage:
    """Usage read from a provider's SSE events as they arrive (the proxy feeds it chunk by chunk)."""

    def __init__(self, provider: str) -> None:
        self.provider = provider
        self._anthropic: dict[str, Any] = {}
        self._openai: Usage | None = None

    def add(self, event: Event) -> None:
        data = _event_json(event)
        if data is None:
            return
        kind = str(data.get("type", ""))
        if self.provider == "anthropic":
            if kind == "message_start" and isinstance(data.get("message"), dict):
                usage = data["message"].get("usage")
                if isinstance(usage, dict):
                    self._anthropic.update(usage)
            elif kind == "message_delta" and isinstance(data.get("usage"), dict):  # the last value of a field wins
                self._anthropic.update({k: v for k, v in data["usage"].items() if v is not None})
            return
        if isinstance(data.get("usage"), dict):  # Chat: the final chunk
            self._openai = from_openai(data["usage"]) or self._openai
        response = data.get("response")
        if kind.startswith("response.") and isinstance(response, dict) and isinstance(response.get("usage"), dict):
            self._openai = from_openai(response["usage"]) or self._openai  # response.completed / incomplete

    @property
    def usage(self) -> Usage | None:
        if self.provider == "anthropic":
            return from_anthropic(self._anthropic) if self._anthropic else None
        return self._openai


def from_response_body(provider: str, body: Any) -> Usage | None:
    """Usage from a recorded response body: a JSON object, or the raw text of an SSE stream."""
    if isinstance(body, (str, bytes)):
        text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
        stripped = text.lstrip()
        if stripped.startswith("{"):
            try:
                return from_response_body(provider, json.loads(stripped))
            except (ValueError, RecursionError):
                return None
        stream = StreamUsage(provider)
        for event in parse_events(text.encode("utf-8", "replace")):
            stream.add(event)
        return stream.usage
    if not isinstance(body, dict) or not isinstance(body.get("usage"), dict):
        return None
    return from_anthropic(body["usage"]) if provider == "anthropic" else from_openai(body["usage"])


def estimate_error(estimated_prompt_tokens: int, usage: Usage | None) -> dict[str, Any] | None:
    """How far cachelint's token estimate is from what the provider reported."""
    if usage is None or not usage.prompt_tokens:
        return None
    delta = estimated_prompt_tokens - usage.prompt_tokens
    return {
        "estimated_prompt_tokens": estimated_prompt_tokens,
        "reported_prompt_tokens": usage.prompt_tokens,
        "error_tokens": delta,
        "error_pct": round(100.0 * delta / usage.prompt_tokens, 1),
    }
