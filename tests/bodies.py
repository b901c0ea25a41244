"""Realistic request bodies for the tests, built fresh for each use so tests can mutate them."""

from __future__ import annotations

import copy
import json
from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures"


def claude_code_exchange() -> dict:
    """A Claude Code-shaped recorded exchange: two system blocks, cache_control, tools, ?beta=true."""
    return json.loads((FIXTURES / "claude_code_turn.json").read_text())


def claude_code_body() -> dict:
    return claude_code_exchange()["request"]["body"]


def anthropic_body() -> dict:
    return {
        "model": "claude-sonnet-4-5",
        "max_tokens": 1024,
        "system": [
            {"type": "text", "text": "You are a support agent for Acme. Answer briefly and cite the manual.", "cache_control": {"type": "ephemeral"}},
            {"type": "text", "text": "Session started 2026-11-29T10:31:07Z. Request id 3f2b9c1e-8a4d-4e6f-9b1a-2c3d4e5f6a7b."},
        ],
        "tools": [
            {"name": "lookup_order", "description": "Look up an order by id.", "input_schema": {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]}},
            {"name": "refund", "description": "Refund an order.", "input_schema": {"type": "object", "properties": {"order_id": {"type": "string"}, "amount": {"type": "number"}}, "required": ["order_id"]}},
            {"name": "search_manual", "description": "Search the product manual.", "input_schema": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}},
        ],
        "messages": [
            {"role": "user", "content": "Where is my order 1234?"},
            {"role": "assistant", "content": [
                {"type": "text", "text": "Let me check that order."},
                {"type": "tool_use", "id": "toolu_1", "name": "lookup_order", "input": {"order_id": "1234"}},
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "{\"status\": \"shipped\", \"carrier\": \"UPS\"}"},
            ]},
            {"role": "assistant", "content": "It shipped with UPS."},
            {"role": "user", "content": [{"type": "text", "text": "Thanks! Can I still change the address?", "cache_control": {"type": "ephemeral"}}]},
        ],
    }


def openai_chat_body() -> dict:
    return {
        "model": "gpt-4.1",
        "temperature": 0.2,
        "tools": [
            {"type": "function", "function": {"name": "get_weather", "description": "Weather for a city.", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}},
            {"type": "function", "function": {"name": "get_time", "description": "Local time in a city.", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}},
        ],
        "messages": [
            {"role": "system", "content": "You are a travel assistant. Be brief."},
            {"role": "developer", "content": "Prefer metric units."},
            {"role": "user", "content": "What's the weather in Oslo?"},
            {"role": "assistant", "content": None, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\", \"unit\": \"C\"}"}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": "{\"temp\": 3, \"sky\": \"snow\"}"},
            {"role": "assistant", "content": "It is 3 °C and snowing in Oslo."},
            {"role": "user", "content": [{"type": "text", "text": "And tomorrow?"}]},
        ],
    }


def openai_responses_body() -> dict:
    return {
        "model": "gpt-5",
        "instructions": "You are a code reviewer. Point out bugs first.",
        "tools": [{"type": "function", "name": "read_file", "description": "Read a file.", "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}],
        "reasoning": {"effort": "medium"},
        "input": [
            {"role": "user", "content": [{"type": "input_text", "text": "Review app.py please."}]},
            {"type": "function_call", "call_id": "fc_1", "name": "read_file", "arguments": "{\"path\": \"app.py\"}"},
            {"type": "function_call_output", "call_id": "fc_1", "output": "print('hi')"},
            {"role": "assistant", "content": [{"type": "output_text", "text": "Looks fine."}]},
            {"role": "user", "content": "Anything else?"},
        ],
    }


def clone(body: dict) -> dict:
    return copy.deepcopy(body)
