"""OpenAI adapters (Chat Completions and Responses): request body -> ordered prefix blocks.

OpenAI documents no exact serialization, so the order is an assumption, stated here and in the README:
tools first, then the structured-output schema, then the system / developer instructions, then the
conversation. Codex's layout is read the same way: tools sent as a leading `additional_tools` input item are the
tools section, its leading developer messages the system prompt, and item ids (re-minted on every resume or
compaction) are never content. OpenAI's caching guide says tools and images "must be identical between requests", and its
cookbook says tools and schemas "get injected before developer instructions" and that the schema "serves
as a prefix to the system message". Leading system / developer messages (Chat) and `instructions`
(Responses) form the system prompt; later system messages are part of the conversation.

`tool_choice` is deliberately not a cache-key parameter for OpenAI: the cookbook recommends restricting
tools per turn through `tool_choice` (allowed_tools) precisely because it leaves the prefix intact.
"""

from __future__ import annotations

from typing import Any

from cachelint.errors import CachelintError
from cachelint.prompt.model import Block
from cachelint.prompt.pointer import join

CHAT_KEY_PARAMS = ("reasoning_effort", "prompt_cache_key")
_SYSTEM_ROLES = {"system", "developer"}
_TEXT_PARTS = {"text", "input_text", "output_text"}
_MESSAGE_FIELDS = ("name", "tool_call_id")


def _tools(body: dict[str, Any], key: str) -> list[Block]:
    tools = body.get(key) or []
    if not isinstance(tools, list):
        raise CachelintError(f"/{key} must be a list")
    return [Block("tools", "tool", join("", key, i), tool) for i, tool in enumerate(tools)]


def _parts(content: Any, pointer: str, section: str, role: str | None, message: int) -> list[Block]:
    if isinstance(content, str):
        return [Block(section, "text", pointer, content, role, message, "string")]  # type: ignore[arg-type]
    if content is None:
        return []
    if not isinstance(content, list):
        raise CachelintError(f"{pointer} must be a string or a list of content parts")
    out = []
    for j, part in enumerate(content):
        at = join(pointer, j)
        if not isinstance(part, dict):
            raise CachelintError(f"{at} is not a content part (an object with a \"type\")")
        kind = str(part.get("type", "text"))
        if kind in _TEXT_PARTS and isinstance(part.get("text"), str) and set(part) <= {"type", "text"}:
            out.append(Block(section, "text", join(at, "text"), part["text"], role, message, "block"))  # type: ignore[arg-type]
        else:
            out.append(Block(section, kind, at, part, role, message, "block"))  # type: ignore[arg-type]
    return out


def _message(msg: Any, at: str, index: int, section: str) -> list[Block]:
    if not isinstance(msg, dict) or not isinstance(msg.get("role"), str):
        raise CachelintError(f"{at} is not a message (an object with a \"role\")")
    role = msg["role"]
    out: list[Block] = []
    fields = {k: msg[k] for k in _MESSAGE_FIELDS if k in msg}
    if fields:
        out.append(Block(section, "message_fields", at, fields, role, index))  # type: ignore[arg-type]
    out += _parts(msg.get("content"), join(at, "content"), section, role, index)
    calls = msg.get("tool_calls") or []
    if not isinstance(calls, list):
        raise CachelintError(f"{at}/tool_calls must be a list")
    for k, call in enumerate(calls):
        out.append(Block(section, "tool_call", join(at, "tool_calls", k), call, role, index))  # type: ignore[arg-type]
    if not out:  # keep the turn itself visible: its role is part of the prefix
        out.append(Block(section, "empty", at, None, role, index))  # type: ignore[arg-type]
    return out


CHAT_HEAD_FIELDS = ("tools", "functions", "response_format")  # what comes before the messages


def chat_blocks(body: dict[str, Any], start: int = 0, leading: bool = True) -> list[Block]:
    """The blocks of the request; with `start`, only those of messages[start:] (the caller has the rest), and
    `leading` says whether messages[:start] were all system / developer messages."""
    out: list[Block] = []
    if start == 0:
        out = _tools(body, "tools") + _tools(body, "functions")
        if body.get("response_format") is not None:
            out.append(Block("schema", "response_format", "/response_format", body["response_format"]))
    messages = body.get("messages")
    if not isinstance(messages, list):
        raise CachelintError("/messages must be a list")
    for i in range(start, len(messages)):
        msg = messages[i]
        leading = leading and isinstance(msg, dict) and msg.get("role") in _SYSTEM_ROLES
        out += _message(msg, join("", "messages", i), i, "system" if leading else "messages")
    return out


def responses_blocks(body: dict[str, Any]) -> list[Block]:
    out = _tools(body, "tools")
    text = body.get("text")
    if isinstance(text, dict) and text.get("format") is not None:
        out.append(Block("schema", "response_format", "/text/format", text["format"]))
    instructions = body.get("instructions")
    if isinstance(instructions, str):
        out.append(Block("system", "text", "/instructions", instructions, "developer", None, "string"))
    elif instructions is not None:
        out += _parts(instructions, "/instructions", "system", "developer", -1)
    items = body.get("input")
    if isinstance(items, str):
        return out + [Block("messages", "text", "/input", items, "user", 0, "string")]
    if not isinstance(items, list):
        raise CachelintError("/input must be a string or a list of input items")
    leading = True
    for i, item in enumerate(items):
        at = join("", "input", i)
        if not isinstance(item, dict):
            raise CachelintError(f"{at} is not an input item (an object)")
        kind = item.get("type", "message")
        if kind == TOOLS_ITEM and leading and isinstance(item.get("tools"), list):
            # Codex's tools as a leading input item: the tools section, one block a tool (or namespace)
            out += [Block("tools", "tool", join(at, "tools", j), tool) for j, tool in enumerate(item["tools"])]
            continue
        is_message = kind == "message"
        leading = leading and is_message and item.get("role") in _SYSTEM_ROLES
        section = "system" if leading else "messages"
        if is_message:
            out += _message(item, at, i, section)
        else:
            role = "tool" if str(item.get("type", "")).endswith("_output") else "assistant"
            out.append(Block(section, str(item["type"]), at, item_content(item), role, i))  # type: ignore[arg-type]
    return out


TOOLS_ITEM = "additional_tools"
# Fields of an input item that name it rather than say anything to the model. Messages were always compared by
# role and content alone; every other item (function_call, reasoning, ...) is compared the same way, without its
# id and status, so ids minted again (after a compaction, or a resumed session) are not taken for new content.
ITEM_IDENTITY_FIELDS = ("id", "status")


def item_content(item: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in item.items() if k not in ITEM_IDENTITY_FIELDS}


def chat_key_params(body: dict[str, Any]) -> dict[str, Any]:
    return {name: body[name] for name in CHAT_KEY_PARAMS if name in body}


def responses_key_params(body: dict[str, Any]) -> dict[str, Any]:
    params = {}
    reasoning = body.get("reasoning")
    if isinstance(reasoning, dict) and "effort" in reasoning:
        params["reasoning.effort"] = reasoning["effort"]
    if "prompt_cache_key" in body:
        params["prompt_cache_key"] = body["prompt_cache_key"]
    return params
