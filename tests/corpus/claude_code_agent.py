"""A small Claude Code-style coding agent: registered tools, an environment block, a tool loop."""

from __future__ import annotations

import os
import platform
import subprocess
import time
from datetime import date
from pathlib import Path

import anthropic

MODEL = "claude-sonnet-4-5"
client = anthropic.Anthropic()

TOOLS: dict[str, dict] = {}
HANDLERS: dict[str, object] = {}


def tool(description: str, schema: dict):
    def register(fn):
        TOOLS[fn.__name__] = {"name": fn.__name__, "description": description, "input_schema": schema}
        HANDLERS[fn.__name__] = fn
        return fn
    return register


@tool("Run a shell command in the project and return its output.",
      {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]})
def bash(command: str) -> str:
    done = subprocess.run(command, shell=True, capture_output=True, text=True, timeout=120)
    return (done.stdout + done.stderr)[-20000:]


@tool("Read a text file.", {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]})
def read_file(path: str) -> str:
    return Path(path).read_text(errors="replace")


@tool("Replace one exact string in a file.",
      {"type": "object", "properties": {"path": {"type": "string"}, "old": {"type": "string"}, "new": {"type": "string"}},
       "required": ["path", "old", "new"]})
def edit_file(path: str, old: str, new: str) -> str:
    text = Path(path).read_text()
    if text.count(old) != 1:
        return "error: `old` must occur exactly once"
    Path(path).write_text(text.replace(old, new))
    return "ok"


INSTRUCTIONS = """You are an interactive CLI tool that helps users with software engineering tasks.
Use the tools to inspect the repository before you change it. Keep answers short.
Never commit, push or delete files unless the user asks you to."""


def environment_block() -> str:
    skills = ", ".join(p.stem for p in Path(".agent/skills").iterdir())  # expect: CL103
    return (
        "<env>\n"
        f"Working directory: {os.getcwd()}\n"
        f"Platform: {platform.system()} {platform.release()}\n"
        f"Today's date: {date.today().isoformat()}\n"  # a date: one prefix a day, not a cache break (no finding)
        f"Available skills: {skills}\n"
        "</env>"
    )


def run(task: str, max_turns: int = 40) -> str:
    tools = sorted(TOOLS.values(), key=lambda t: t["name"])
    messages = [{"role": "user", "content": [{"type": "text", "text": task}]}]
    for turn in range(max_turns):
        system = [{"type": "text", "text": INSTRUCTIONS}, {"type": "text", "text": environment_block()}]
        for message in messages:  # move the breakpoint: drop the old marker first
            for block in message["content"]:
                block.pop("cache_control", None)
        messages[-1]["content"][-1]["cache_control"] = {"type": "ephemeral"}
        started = time.monotonic()
        response = client.messages.create(model=MODEL, max_tokens=8192, system=system, tools=tools, messages=messages)
        usage = response.usage
        print(f"turn {turn}: {time.monotonic() - started:.1f}s "
              f"read={usage.cache_read_input_tokens} wrote={usage.cache_creation_input_tokens}")
        messages.append({"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in response.content]})
        if response.stop_reason != "tool_use":
            return "".join(b.text for b in response.content if b.type == "text")
        results = []
        for block in response.content:
            if block.type == "tool_use":
                output = HANDLERS[block.name](**block.input)
                results.append({"type": "tool_result", "tool_use_id": block.id, "content": output})
        messages.append({"role": "user", "content": results})
    return "(turn limit reached)"
