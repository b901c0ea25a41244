"""A recorded multi-session agent trace, as `cachelint import` reads it (one exchange per line).

Four sessions, interleaved in time as an agent host would send them:
- `ts`      Anthropic, Claude Code-style: a timestamp near the top of the system prompt changes from turn 3 on.
- `tools`   Anthropic: the tool list comes back in another order from turn 3 on (an MCP reconnect).
- `trunc`   OpenAI Chat with tool calls: from turn 4 the client drops the oldest turns to save tokens.
- `clean`   OpenAI Chat: only appends; the control.

Shaped like what agents send: Anthropic requests carry Claude Code's breakpoints (the system prompt and the
newest message), prompts are over the minimum cacheable length, and usage counts the request's size (about
four bytes a token), so the proxy's analysis sees prefixes a provider would have cached.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

T0 = 1_796_000_000.0

_RULES = [
    "Read the files you change before you change them, and keep each change small and reviewed.",
    "Run the test suite after every change; a red test is a stop, not a suggestion to work around.",
    "Never print secrets, tokens or credentials, and never write them to files in the repository.",
    "Prefer the standard library; add a dependency only when a well-kept package beats hand-written code.",
    "Explain what you did in plain words, name the files you touched, and say what you left undone.",
    "When a command fails, read its output in full before you try anything else.",
]


def _system(name: str, repeat: int = 3) -> str:
    return f"You are {name}, a careful software engineering agent working in a Python repository.\n" + "\n".join(
        f"{i + 1}. {rule}" for i, rule in enumerate(_RULES * repeat)
    )


def _anthropic_tools() -> list[dict[str, Any]]:
    return [
        {"name": name, "description": desc, "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}
        for name, desc in (
            ("read_file", "Read a file of the repository and return its text with line numbers."),
            ("run_tests", "Run the test suite, or the tests under a path, and return the summary."),
            ("edit_file", "Replace one exact string in a file by another; fails when the string is not unique."),
            ("search_code", "Search the repository for a regular expression and return matching lines."),
        )
    ]


def _openai_tools() -> list[dict[str, Any]]:
    return [
        {"type": "function", "function": {"name": t["name"], "description": t["description"], "parameters": t["input_schema"]}}
        for t in _anthropic_tools()
    ]


def _file_text(turn: int) -> str:
    return "\n".join(f"{n:4d}  def handler_{turn}_{n}(request):  # returns the parsed body of the request" for n in range(12))


def _prompt_tokens(body: dict[str, Any]) -> int:
    return len(json.dumps(body)) // 4


def _with_breakpoint(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The history with Claude Code's breakpoint on the newest message's last block (moved every turn)."""
    *older, newest = messages
    content = newest["content"]
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else [dict(b) for b in content]
    blocks[-1]["cache_control"] = {"type": "ephemeral"}
    return [*older, {**newest, "content": blocks}]


def _exchange(path: str, headers: dict[str, str], body: dict[str, Any], usage: dict[str, Any], at: float) -> dict[str, Any]:
    if path.endswith("/messages"):
        response = {"id": "msg", "type": "message", "role": "assistant", "model": body["model"],
                    "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn", "usage": usage}
    else:
        response = {"id": "chatcmpl", "object": "chat.completion", "model": body["model"],
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}], "usage": usage}
    return {
        "started_at": at,
        "request": {"method": "POST", "url": "https://api.example.test" + path, "headers": {"content-type": "application/json", **headers}, "body": body},
        "response": {"status": 200, "headers": {"content-type": "application/json"}, "body": response},
    }


def _anthropic_session(kind: str, turns: int) -> list[dict[str, Any]]:
    tools = _anthropic_tools()
    messages: list[dict[str, Any]] = []
    out = []
    for turn in range(1, turns + 1):
        stamp = "2026-11-29T10:00:00Z" if kind != "ts" or turn < 3 else f"2026-11-29T10:{turn * 7:02d}:{turn * 13 % 60:02d}Z"
        system = [{"type": "text", "text": f"Session started {stamp}.\n" + _system("Ada" if kind == "ts" else "Grace", repeat=5),
                   "cache_control": {"type": "ephemeral"}}]
        turn_tools = list(reversed(tools)) if kind == "tools" and turn >= 3 else tools
        if turn > 1:
            call_id = f"toolu_{kind}_{turn - 1}"
            messages.append({"role": "assistant", "content": [
                {"type": "text", "text": f"I will read the handlers of step {turn - 1}."},
                {"type": "tool_use", "id": call_id, "name": "read_file", "input": {"path": f"app/handlers_{turn - 1}.py"}},
            ]})
            messages.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": call_id, "content": _file_text(turn - 1)}]})
        else:
            messages.append({"role": "user", "content": "Find why the request handlers return the wrong body, and fix it."})
        body = {"model": "claude-sonnet-4-5", "max_tokens": 1024, "system": system, "tools": turn_tools, "messages": _with_breakpoint(messages)}
        out.append(_exchange("/v1/messages", {"x-claude-code-session-id": f"sess-{kind}"}, body,
                             {"input_tokens": _prompt_tokens(body), "output_tokens": 40, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}, 0.0))
    return out


def _openai_session(kind: str, turns: int, model: str) -> list[dict[str, Any]]:
    system = {"role": "system", "content": _system("Lin" if kind == "trunc" else "Mae")}
    history: list[dict[str, Any]] = [{"role": "user", "content": "Add input validation to every handler and run the tests."}]
    out = []
    for turn in range(1, turns + 1):
        if turn > 1:
            call_id = f"call_{kind}_{turn - 1}"
            history.append({"role": "assistant", "content": None, "tool_calls": [
                {"id": call_id, "type": "function", "function": {"name": "read_file", "arguments": json.dumps({"path": f"app/h{turn - 1}.py"})}}]})
            history.append({"role": "tool", "tool_call_id": call_id, "content": _file_text(turn - 1)})
        kept = history[-3:] if kind == "trunc" and turn >= 4 else history
        body = {"model": model, "messages": [system, *kept], "tools": _openai_tools()}
        tokens = _prompt_tokens(body)
        out.append(_exchange("/v1/chat/completions", {}, body, {"prompt_tokens": tokens, "completion_tokens": 40, "total_tokens": tokens + 40,
                                                                "prompt_tokens_details": {"cached_tokens": 0}}, 0.0))
    return out


def build_trace(turns: int = 5) -> list[dict[str, Any]]:
    sessions = [
        _anthropic_session("ts", turns),
        _anthropic_session("tools", turns),
        _openai_session("trunc", turns, "gpt-4.1"),
        _openai_session("clean", turns, "gpt-4.1-mini"),
    ]
    trace = []
    for turn in range(turns):
        for s in sessions:
            exchange = s[turn]
            exchange["started_at"] = T0 + len(trace) * 0.5
            trace.append(exchange)
    return trace


def write_trace(path: Path, turns: int = 5) -> Path:
    path.write_text("".join(json.dumps(e) + "\n" for e in build_trace(turns)), encoding="utf-8")
    return path


if __name__ == "__main__":
    import sys

    print(write_trace(Path(sys.argv[1] if len(sys.argv) > 1 else "trace.jsonl")))


def build_agent_sessions(sessions: int = 1, turns: int = 6, file_lines: int = 120) -> list[dict[str, Any]]:
    """Agent sessions that only append (no breaks), for the session sweep: a long fixed prefix (the system
    prompt and a file the agent read) and small turns after it, so a session's length changes little over its
    life and the concurrency cliff is sharp. Each session is its own Claude Code session id and system prompt."""
    out: list[dict[str, Any]] = []
    for s in range(sessions):
        body_file = "\n".join(f"{n:4d}  def route_{s}_{n}(request):  # parses, validates and answers request {n}" for n in range(file_lines))
        messages: list[dict[str, Any]] = [{"role": "user", "content": "Here is app/routes.py; find the route that skips validation.\n" + body_file}]
        for turn in range(1, turns + 1):
            if turn > 1:
                call_id = f"toolu_{s}_{turn - 1}"
                messages.append({"role": "assistant", "content": [
                    {"type": "tool_use", "id": call_id, "name": "run_tests", "input": {"path": f"tests/test_routes_{turn - 1}.py"}}]})
                messages.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": call_id, "content": f"{turn} passed, 1 failed"}]})
            system = [{"type": "text", "text": _system(f"Agent {s}", repeat=1), "cache_control": {"type": "ephemeral"}}]
            body = {"model": "claude-sonnet-4-5", "max_tokens": 1024, "system": system, "tools": _anthropic_tools(), "messages": _with_breakpoint(messages)}
            usage = {"input_tokens": _prompt_tokens(body), "output_tokens": 20, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}
            exchange = _exchange("/v1/messages", {"x-claude-code-session-id": f"agent-{s}"}, body, usage, T0 + turn * 10 + s)
            out.append(exchange)
    return sorted(out, key=lambda e: e["started_at"])


def write_agent_sessions(path: Path, sessions: int = 1, turns: int = 6, file_lines: int = 120) -> Path:
    path.write_text("".join(json.dumps(e) + "\n" for e in build_agent_sessions(sessions, turns, file_lines)), encoding="utf-8")
    return path
