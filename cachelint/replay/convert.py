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


# Fields of a recorded Messages request that are the sender's business, not the prompt's, and that the replay
# sets itself (what is measured is prefill: one output token, greedy, streamed).
_MESSAGES_OWN = ("model", "max_tokens", "stream", "temperature", "top_p", "top_k", "stop_sequences", "tool_choice", "cache_salt")


def messages_body(recorded: dict[str, Any], model: str, *, max_tokens: int = 1, cache_salt: str | None = None) -> dict[str, Any]:
    """A recorded Anthropic request for vLLM's own `/v1/messages`, as recorded: system blocks, tools,
    messages and their `cache_control` marks go unchanged (vLLM caches every prefix and ignores the marks).
    With tools, `tool_choice: none` keeps them in the prompt without the server's tool-call parser."""
    body = {k: copy.deepcopy(v) for k, v in recorded.items() if k not in _MESSAGES_OWN}
    body.update(model=model, max_tokens=max_tokens, stream=True, temperature=0)
    thinking = body.get("thinking")
    if isinstance(thinking, dict) and thinking.get("type") == "enabled":
        # vLLM wants budget_tokens below max_tokens; an enabled budget only caps decoding (the prompt renders
        # the same), as does "adaptive", which needs no budget: prefill stays what was recorded
        body["thinking"] = {"type": "adaptive"}
    if body.get("tools"):
        body["tool_choice"] = {"type": "none"}
    if cache_salt:
        body["cache_salt"] = cache_salt
    return body


def count_tokens_body(recorded: dict[str, Any], model: str) -> dict[str, Any]:
    """The probe for `/v1/messages/count_tokens`: the prompt of a recorded request, nothing else."""
    body = {k: copy.deepcopy(v) for k, v in recorded.items() if k in ("system", "messages", "tools")}
    body["model"] = model
    if body.get("tools"):
        body["tool_choice"] = {"type": "none"}
    return body


BILLING_HEADER = "x-anthropic-billing-header"  # Claude Code's first system block: a per-request hash


def as_vllm_renders_messages(request: ChatRequest, recorded: dict[str, Any]) -> ChatRequest:
    """The chat request vLLM's /v1/messages makes of a recorded Anthropic request, as far as it differs from
    cachelint's conversion: the system blocks joined with nothing between them (cachelint puts a blank line),
    Claude Code's billing-header block left out. Used to tokenize (predict) what the native path runs; any other
    difference shows as a prompt token count the engine reports differently from /tokenize (`--check`)."""
    system = recorded.get("system")
    if isinstance(system, str):
        parts = [system]
    elif isinstance(system, list):
        parts = [str(b.get("text")) for b in system if isinstance(b, dict) and b.get("type") == "text" and b.get("text")
                 and not str(b.get("text")).startswith(BILLING_HEADER)]
    else:
        return request
    messages = [m for m in request["messages"] if not (m is request["messages"][0] and m.get("role") == "system")]
    if parts:
        messages.insert(0, {"role": "system", "content": "".join(parts)})
    return {**request, "messages": messages}
