"""Ops assistant: built-in tools registered by decorator, more tools from installed plugins (OpenAI)."""

from __future__ import annotations

import json
from importlib.metadata import entry_points
from typing import Callable

from openai import OpenAI

client = OpenAI()
MODEL = "gpt-4.1"
REGISTRY: dict[str, dict] = {}
HANDLERS: dict[str, Callable[..., object]] = {}
READ_ONLY = ("get_metrics", "list_incidents", "search_runbooks")
SYSTEM = "You are an SRE assistant. Investigate with read-only tools first; change nothing before the user approves."


def register(name: str, description: str, parameters: dict):
    def wrap(fn):
        REGISTRY[name] = {"type": "function", "function": {"name": name, "description": description, "parameters": parameters}}
        HANDLERS[name] = fn
        return fn
    return wrap


def load_plugins() -> None:
    for ep in entry_points(group="opsbot.tools"):
        spec, handler = ep.load()()
        REGISTRY[spec["function"]["name"]] = spec
        HANDLERS[spec["function"]["name"]] = handler


@register("get_metrics", "Run a PromQL query.", {"type": "object", "properties": {"query": {"type": "string"}}})
def get_metrics(query: str) -> dict:
    return {"query": query, "value": 0.0}


@register("list_incidents", "List open incidents.", {"type": "object", "properties": {}})
def list_incidents() -> dict:
    return {"incidents": []}


@register("restart_service", "Restart a service.", {"type": "object", "properties": {"service": {"type": "string"}}})
def restart_service(service: str) -> dict:
    return {"restarted": service}


def run_conversation(question: str) -> list[dict]:
    load_plugins()
    all_tools = list(REGISTRY.values())  # expect: CL201
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": question}]
    approved = False
    for _ in range(12):
        tools = all_tools if approved else [t for t in all_tools if t["function"]["name"] in READ_ONLY]  # expect: CL202
        response = client.chat.completions.create(model=MODEL, messages=messages, tools=tools)
        message = response.choices[0].message
        messages.append(message.model_dump(exclude_none=True))
        if not message.tool_calls:
            reply = input(f"{message.content}\n> ")
            approved = approved or reply.strip().lower() in ("approve", "yes", "go ahead")
            messages.append({"role": "user", "content": reply})
            continue
        for call in message.tool_calls:
            result = HANDLERS[call.function.name](**json.loads(call.function.arguments))
            messages.append({"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)})
    return messages
