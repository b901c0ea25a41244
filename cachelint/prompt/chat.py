"""A canonical prompt as OpenAI-style chat messages: what a local engine's chat template renders.

Used for exact token counts with `--tokenizer` and by the replay on vLLM. Anthropic system blocks become
one system message; text, tool_use and tool_result blocks become text, tool-call and tool messages;
tools become OpenAI function tools.
"""

from __future__ import annotations

import json
from typing import Any

from cachelint.prompt.model import Block, Prompt


def _tool(block: Block) -> dict[str, Any]:
    value = block.value if isinstance(block.value, dict) else {}
    if value.get("type") == "function" and isinstance(value.get("function"), dict):
        return value
    if "input_schema" in value or "name" in value and "parameters" not in value:
        return {
            "type": "function",
            "function": {
                "name": value.get("name", ""),
                "description": value.get("description", ""),
                "parameters": value.get("input_schema", {"type": "object", "properties": {}}),
            },
        }
    return {"type": "function", "function": {k: v for k, v in value.items() if k != "type"}}


def _text(block: Block) -> str:
    if isinstance(block.value, str):
        return block.value
    value = block.value if isinstance(block.value, dict) else {}
    if block.kind in ("thinking",):
        return str(value.get("thinking", ""))
    if block.kind == "tool_result":
        content = value.get("content")
        if isinstance(content, list):
            return "\n".join(str(c.get("text", json.dumps(c, sort_keys=True))) for c in content if isinstance(c, dict))
        return str(content if content is not None else "")
    return block.text


def to_chat(prompt: Prompt) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(messages, tools) in OpenAI Chat form."""
    tools = [_tool(b) for b in prompt.blocks if b.section == "tools"]
    messages: list[dict[str, Any]] = []
    system = [_text(b) for b in prompt.blocks if b.section == "system"]
    if system:
        messages.append({"role": "system", "content": "\n\n".join(system)})
    current: dict[str, Any] | None = None
    current_index: int | None = None
    for b in prompt.blocks:
        if b.section != "messages":
            continue
        role = {"developer": "system", "function": "tool"}.get(b.role or "user", b.role or "user")
        if b.kind == "tool_result":
            value = b.value if isinstance(b.value, dict) else {}
            messages.append({"role": "tool", "tool_call_id": str(value.get("tool_use_id", "")), "content": _text(b)})
            current = None
            continue
        if current is None or current_index != b.message or current["role"] != role:
            current = {"role": role, "content": ""}
            messages.append(current)
            current_index = b.message
        if b.kind in ("tool_use", "tool_call", "function_call"):
            value = b.value if isinstance(b.value, dict) else {}
            fn = value.get("function") if isinstance(value.get("function"), dict) else value
            arguments = fn.get("arguments", fn.get("input", {}))
            current.setdefault("tool_calls", []).append(
                {
                    "id": str(value.get("id") or value.get("call_id") or ""),
                    "type": "function",
                    "function": {
                        "name": str(fn.get("name", "")),
                        "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments),
                    },
                }
            )
        elif b.kind not in ("message_fields", "empty", "redacted_thinking"):
            current["content"] += ("\n" if current["content"] else "") + _text(b)
    return messages, tools
