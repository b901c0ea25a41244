"""Where a request is normalized: input files -> recorded exchanges -> canonical prompts.

An input file is either a bare request body or a recorded exchange as the proxy writes it:

    {"request": {"method": "POST", "path": "/v1/messages?beta=true", "headers": {...}, "body": {...}},
     "response": {"status": 200, "headers": {...}, "body": {...} or "<raw SSE text>"}}

`request` may also be the bare body itself. The provider is taken from the path when there is one, else
from the body's shape.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from cachelint.errors import CachelintError
from cachelint.prompt import anthropic, openai
from cachelint.prompt.model import Block, Prompt, Provider, same_json
from cachelint.prompt.usage import Usage, from_response_body
from cachelint.tokens import TokenCounter, counter_for

_ANTHROPIC_ONLY_BLOCKS = {"tool_use", "tool_result", "thinking", "redacted_thinking", "document"}
_OPENAI_ROLES = {"system", "developer", "tool", "function"}


@dataclass(slots=True)
class Exchange:
    """One recorded request (and its response, when recorded)."""

    body: dict[str, Any]
    path: str | None = None
    headers: dict[str, str] | None = None
    response_body: Any = None
    response_status: int | None = None


@dataclass(slots=True)
class LoadedRequest:
    prompt: Prompt
    usage: Usage | None
    exchange: Exchange


def _is_request_body(value: Any) -> bool:
    return isinstance(value, dict) and ("messages" in value or "input" in value)


def exchange_from_json(data: Any, source: str = "input") -> Exchange:
    """A bare request body or a recorded exchange."""
    if _is_request_body(data):
        return Exchange(body=data)
    if isinstance(data, dict) and isinstance(data.get("request"), dict):
        request = data["request"]
        body = request.get("body", request if _is_request_body(request) else None)
        if isinstance(body, str):
            try:
                body = json.loads(body)
            except ValueError:
                raise CachelintError(f"{source}: the recorded request body is not JSON") from None
        if not _is_request_body(body):
            raise CachelintError(f"{source}: the recorded request is no known request shape")
        response = data.get("response") if isinstance(data.get("response"), dict) else {}
        headers = request.get("headers")
        return Exchange(
            body=body,
            path=request.get("path") or request.get("url"),
            headers={str(k): str(v) for k, v in headers.items()} if isinstance(headers, dict) else None,
            response_body=response.get("body"),
            response_status=response.get("status") if isinstance(response.get("status"), int) else None,
        )
    kind = type(data).__name__ if not isinstance(data, dict) else "object"
    raise CachelintError(
        f"{source}: no known request shape (a JSON {kind}; expected an Anthropic Messages, OpenAI Chat "
        "Completions or Responses body, or a recorded exchange with \"request\")"
    )


def read_json(path: str | Path) -> Any:
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CachelintError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise CachelintError(f"{path}: is a directory, not a JSON file") from None
    except UnicodeDecodeError:
        raise CachelintError(f"{path}: not UTF-8 text") from None
    except OSError as exc:
        raise CachelintError(f"{path}: {exc.strerror}") from None
    return parse_json(text, str(path))


def parse_json(text: str, source: str) -> Any:
    """JSON text from `source` (a path, "standard input"), or one line saying where it is invalid."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise CachelintError(f"{source}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    except (ValueError, RecursionError) as exc:
        raise CachelintError(f"{source}: cannot read this JSON: {exc}") from None


def detect_provider(body: dict[str, Any], path: str | None = None) -> Provider:
    if path:
        route = path.split("?", 1)[0].rstrip("/")
        if route.endswith("/chat/completions"):
            return "openai-chat"
        if route.endswith("/responses"):
            return "openai-responses"
        if route.endswith("/messages") or route.endswith("/messages/count_tokens"):
            return "anthropic"
    if "messages" not in body:
        return "openai-responses"
    model = str(body.get("model", "")).lower()
    if "system" in body or "anthropic_version" in body or "cache_control" in body or model.startswith("claude"):
        return "anthropic"
    for msg in body.get("messages") or []:
        if not isinstance(msg, dict):
            continue
        if msg.get("role") in _OPENAI_ROLES or "tool_calls" in msg:
            return "openai-chat"
        content = msg.get("content")
        if isinstance(content, list) and any(
            isinstance(b, dict) and b.get("type") in _ANTHROPIC_ONLY_BLOCKS for b in content
        ):
            return "anthropic"
    return "openai-chat"


def build_prompt(
    exchange: Exchange, counter: TokenCounter | None = None, tokenizer_path: str | None = None, previous: Prompt | None = None
) -> Prompt:
    """Adapt a request body to the canonical model and count each block's tokens.

    `previous`, an earlier prompt of the same conversation, makes the next request cost what is new in it: its
    blocks are reused (token counts, text and digest included) wherever the new request has the same block at
    the same place, so the token counter only sees new text. Bodies must not be changed in place once built;
    objects the two bodies share are never taken as unchanged."""
    try:
        return _build_prompt(exchange, counter, tokenizer_path, previous)
    except CachelintError:
        raise
    except (TypeError, AttributeError, KeyError, ValueError) as exc:
        raise CachelintError(f"the request body has a value of an unexpected type ({type(exc).__name__}: {exc})") from None


def _build_prompt(exchange: Exchange, counter: TokenCounter | None, tokenizer_path: str | None, previous: Prompt | None) -> Prompt:
    body = exchange.body
    provider = detect_provider(body, exchange.path)
    model = body.get("model") if isinstance(body.get("model"), str) else None
    counter = counter or counter_for(provider, model, tokenizer_path)
    if previous is not None and (previous.provider != provider or previous.tokenizer != counter.name):
        previous = None
    kept, start = _kept_messages(provider, body, previous)
    if kept and previous is not None:
        body = _sharing(body, previous.body, provider, start)
    if provider == "anthropic":
        blocks = anthropic.blocks(body, start)
        params = anthropic.key_params(body, exchange.headers)
        top = anthropic.top_level_cache_control(body)
    elif provider == "openai-chat":
        leading = not kept or kept[-1].section == "system"
        blocks, params, top = openai.chat_blocks(body, start, leading), openai.chat_key_params(body), None
    else:
        blocks, params, top = openai.responses_blocks(body), openai.responses_key_params(body), None
    reusable = previous.blocks[len(kept):] if previous is not None else ()
    counted = kept + [
        reusable[i] if i < len(reusable) and b.same_place_and_value(reusable[i]) else _with_tokens(b, counter)
        for i, b in enumerate(blocks)
    ]
    return Prompt(provider, model, params, counted, body, counter.name, top)


_HEAD_FIELDS = {"anthropic": anthropic.HEAD_FIELDS, "openai-chat": openai.CHAT_HEAD_FIELDS}


def _sharing(body: dict[str, Any], old: dict[str, Any], provider: str, start: int) -> dict[str, Any]:
    """A shallow copy of `body` whose unchanged head fields and first `start` messages are the previous body's
    objects (the same bytes): a conversation's history is then held once, not once per request kept. The
    caller's own dict is left as it is."""
    shared = dict(body)
    for name in _HEAD_FIELDS[provider]:
        if name in old:
            shared[name] = old[name]
    shared["messages"] = old["messages"][:start] + body["messages"][start:]
    return shared


def _kept_messages(provider: str, body: dict[str, Any], previous: Prompt | None) -> tuple[list[Block], int]:
    """The previous prompt's blocks for what this request repeats unchanged (everything before the messages and
    its leading equal messages), and the index of the first message to adapt anew. Equal means the same bytes
    once serialized (`same_json`); the values are compared as parsed, so this costs far less than adapting."""
    head = _HEAD_FIELDS.get(provider)
    old = previous.body if previous is not None else None
    if head is None or not isinstance(old, dict):
        return [], 0
    if any(not same_json(body.get(name), old.get(name)) for name in head):
        return [], 0
    new_messages, old_messages = body.get("messages"), old.get("messages")
    if not isinstance(new_messages, list) or not isinstance(old_messages, list):
        return [], 0
    if len(new_messages) > len(old_messages) and same_json(new_messages[: len(old_messages)], old_messages):
        start = len(old_messages)  # an append, the common case: the whole history in one comparison
    else:
        start = 0
        for new, before in zip(new_messages, old_messages):
            if not same_json(new, before):
                break
            start += 1
    if start == 0:
        return [], 0
    blocks = previous.blocks  # in message order: the blocks of messages[start:] are a suffix
    cut = len(blocks)
    while cut and blocks[cut - 1].section in ("messages", "system") and (blocks[cut - 1].message or 0) >= start:
        cut -= 1
    return blocks[:cut], start


def _with_tokens(block: Block, counter: TokenCounter) -> Block:
    return replace(block, tokens=counter.count(block.text))


def load_request(path: str | Path, tokenizer_path: str | None = None) -> LoadedRequest:
    exchange = exchange_from_json(read_json(path), str(path))
    prompt = build_prompt(exchange, tokenizer_path=tokenizer_path)
    usage = from_response_body(prompt.provider, exchange.response_body) if exchange.response_body else None
    return LoadedRequest(prompt, usage, exchange)
