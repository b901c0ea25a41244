"""Anthropic Messages adapter: request body -> ordered prefix blocks.

Prefix order (Anthropic's prompt-caching docs): tools -> system -> messages. `cache_control` may sit on any
block and at the top level; it is recorded, never treated as content.

A plain string `system` or message `content` is, as the Messages API reference documents, "shorthand for an
array of one content block of type text": it is the same prefix as `[{"type": "text", "text": ...}]`, so both
become the same Block (only the pointer tells them apart). Claude Code sends the newest user message as one
text block with a breakpoint and the same message as a string a request later; that is no change.
"""

from __future__ import annotations

from typing import Any

from cachelint.errors import CachelintError
from cachelint.prompt.model import Block
from cachelint.prompt.pointer import join

# Request parameters that change the cache key or part of it (cache diagnostics: "prompt-affecting").
# stream, max_tokens, temperature, top_p, top_k, stop_sequences, metadata, service_tier are not among them.
KEY_PARAMS = ("tool_choice", "thinking", "context_management", "output_config", "output_format", "speed")


def strip_cache_control(block: Any) -> tuple[Any, dict[str, Any] | None]:
    """A content block without its cache_control marker (also inside tool_result content), and the marker."""
    if not isinstance(block, dict):
        return block, None
    marker = block.get("cache_control")
    stripped = {k: v for k, v in block.items() if k != "cache_control"}
    if isinstance(stripped.get("content"), list):
        stripped["content"] = [strip_cache_control(inner)[0] for inner in stripped["content"]]
    return stripped, marker if isinstance(marker, dict) else None


def _content_blocks(items: Any, pointer: str, section: str, role: str | None, message: int | None) -> list[Block]:
    if isinstance(items, str):
        return [Block(section, "text", pointer, items, role=role, message=message, shape="block")]  # type: ignore[arg-type]
    if not isinstance(items, list):
        raise CachelintError(f"{pointer or '/'} must be a string or a list of content blocks")
    blocks = []
    for j, raw in enumerate(items):
        at = join(pointer, j)
        if not isinstance(raw, dict) or not isinstance(raw.get("type"), str):
            raise CachelintError(f"{at} is not a content block (an object with a \"type\")")
        stripped, marker = strip_cache_control(raw)
        kind = raw["type"]
        if kind == "text" and isinstance(raw.get("text"), str) and set(stripped) <= {"type", "text"}:
            blocks.append(Block(section, "text", join(at, "text"), raw["text"], role, message, "block", marker))  # type: ignore[arg-type]
        else:
            blocks.append(Block(section, kind, at, stripped, role, message, "block", marker))  # type: ignore[arg-type]
    return blocks


HEAD_FIELDS = ("tools", "system")  # what comes before the messages


def blocks(body: dict[str, Any], start: int = 0) -> list[Block]:
    """The blocks of the request; with `start`, only those of messages[start:] (the caller has the rest)."""
    out: list[Block] = []
    tools = body.get("tools") or []
    if not isinstance(tools, list):
        raise CachelintError("/tools must be a list")
    if start == 0:
        for i, tool in enumerate(tools):
            stripped, marker = strip_cache_control(tool)
            out.append(Block("tools", "tool", join("", "tools", i), stripped, cache_control=marker))
        if body.get("system") is not None:
            out += _content_blocks(body["system"], "/system", "system", None, None)
    messages = body.get("messages")
    if not isinstance(messages, list):
        raise CachelintError("/messages must be a list")
    for i in range(start, len(messages)):
        msg = messages[i]
        at = join("", "messages", i)
        if not isinstance(msg, dict) or "content" not in msg:
            raise CachelintError(f"{at} is not a message (an object with \"role\" and \"content\")")
        out += _content_blocks(msg["content"], join(at, "content"), "messages", str(msg.get("role")), i)
    return out


def key_params(body: dict[str, Any], headers: dict[str, str] | None) -> dict[str, Any]:
    params = {name: body[name] for name in KEY_PARAMS if name in body}
    if headers is not None:
        beta = {k.lower(): v for k, v in headers.items()}.get("anthropic-beta")
        if beta:
            params["anthropic-beta"] = sorted(v.strip() for v in beta.split(",") if v.strip())
    return params


def top_level_cache_control(body: dict[str, Any]) -> dict[str, Any] | None:
    marker = body.get("cache_control")
    return marker if isinstance(marker, dict) else None
