"""A recorded request as the engine is sent it: an OpenAI Chat body for vLLM's chat template.

Anthropic and Responses requests go through the canonical prompt (`cachelint.prompt.chat.to_chat`: system
blocks become one system message, tool_use / tool_result blocks become tool calls and tool messages, tools
become function tools). OpenAI Chat requests keep their own messages and tools as they are.
"""

from __future__ import annotations

import copy
from typing import Any

from cachelint.prompt.chat import to_chat
from cachelint.prompt.model import Prompt

ChatRequest = dict[str, Any]  # {"messages": [...], "tools": [...]}


def chat_request(prompt: Prompt) -> ChatRequest:
    body = prompt.body if isinstance(prompt.body, dict) else {}
    if prompt.provider == "openai-chat" and isinstance(body.get("messages"), list):
        tools = body.get("tools") if isinstance(body.get("tools"), list) else []
        return {"messages": copy.deepcopy(body["messages"]), "tools": copy.deepcopy(tools)}
    messages, tools = to_chat(prompt)
    return {"messages": messages, "tools": tools}


def engine_body(request: ChatRequest, model: str, *, max_tokens: int = 1, cache_salt: str | None = None) -> dict[str, Any]:
    """The body sent to /v1/chat/completions. Prefill is what is measured: one output token, greedy, streamed
    (for the time to first token) with usage in the last chunk. With tools, `tool_choice: "none"` keeps them in
    the prompt (the chat template renders them) without needing the server's tool-call parser."""
    body: dict[str, Any] = {
        "model": model,
        "messages": request["messages"],
        "max_tokens": max_tokens,
        "temperature": 0,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if request.get("tools"):
        body["tools"] = request["tools"]
        body["tool_choice"] = "none"
    if cache_salt:
        body["cache_salt"] = cache_salt
    return body


def tokenize_body(request: ChatRequest, model: str) -> dict[str, Any]:
    """The body for vLLM's /tokenize: the same messages and tools, through the same chat template."""
    body: dict[str, Any] = {"model": model, "messages": request["messages"], "add_generation_prompt": True}
    if request.get("tools"):
        body["tools"] = request["tools"]
    return body
