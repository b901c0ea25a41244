"""LangGraph-style research agent: each node takes the graph state and returns an update."""
from __future__ import annotations

import operator
from datetime import datetime, timezone
from typing import Annotated, Any, TypedDict

import anthropic

client = anthropic.Anthropic()
MODEL = "claude-sonnet-4-5"

TOOL_REGISTRY: dict[str, dict[str, Any]] = {}
HANDLERS: dict[str, Any] = {}


def register(name: str, description: str, schema: dict[str, Any]):
    def wrap(fn):
        TOOL_REGISTRY[name] = {"name": name, "description": description, "input_schema": schema}
        HANDLERS[name] = fn
        return fn
    return wrap


@register("web_search", "Search the web.", {"type": "object", "properties": {"q": {"type": "string"}}})
def web_search(q: str) -> str:
    return f"results for {q}"


@register("fetch_page", "Fetch a URL.", {"type": "object", "properties": {"url": {"type": "string"}}})
def fetch_page(url: str) -> str:
    return f"<html>{url}</html>"


class AgentState(TypedDict):
    messages: Annotated[list[dict[str, Any]], operator.add]
    question: str
    steps: int


def build_system() -> str:
    now = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M")  # expect: CL101
    return (
        "You are a meticulous research assistant. Cite every claim.\n"
        f"The current UTC time is {now}."
    )


def call_model(state: AgentState) -> dict[str, Any]:
    tools = list(TOOL_REGISTRY.values())  # expect: CL201
    if state["steps"] >= 8:
        tools = [t for t in tools if t["name"] != "web_search"]  # expect: CL202
    response = client.messages.create(
        model=MODEL,
        max_tokens=2048,
        system=build_system(),
        tools=tools,
        messages=state["messages"],
    )
    return {"messages": [{"role": "assistant", "content": response.content}], "steps": state["steps"] + 1}


def run_tools(state: AgentState) -> dict[str, Any]:
    last = state["messages"][-1]
    results = []
    for block in last["content"]:
        if getattr(block, "type", None) == "tool_use":
            output = HANDLERS[block.name](**block.input)
            results.append({"type": "tool_result", "tool_use_id": block.id, "content": output})
    return {"messages": [{"role": "user", "content": results}]}


def should_continue(state: AgentState) -> str:
    last = state["messages"][-1]
    if state["steps"] >= 12:
        return "end"
    if any(getattr(b, "type", None) == "tool_use" for b in last["content"]):
        return "tools"
    return "end"


def run_graph(question: str) -> list[dict[str, Any]]:
    state: AgentState = {"messages": [{"role": "user", "content": question}], "question": question, "steps": 0}
    node = "agent"
    while node != "end":
        if node == "agent":
            update = call_model(state)
        else:
            update = run_tools(state)
        state["messages"] = state["messages"] + update["messages"]
        state["steps"] = update.get("steps", state["steps"])
        if len(state["messages"]) > 16:
            state["messages"] = state["messages"][-16:]  # expect: CL301
        node = should_continue(state) if node == "agent" else "agent"
    return state["messages"]
