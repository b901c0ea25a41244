"""Generate the bundled demo session: a Claude Code-shaped agent conversation whose turn 4 breaks the cache.

The app behind it stamps "Current time" at the top of its system prompt, at minute precision (a pattern reported in
several agent projects). Turns 1-3 happen within one minute and share their prefix; turn 4 crosses into the
next minute, so its whole prefix is prefilled again.

Run from the repository root:  python examples/make_demo_session.py
It writes cachelint/demo/data/turn-N.json (recorded exchanges, request side only).
"""

from __future__ import annotations

import json
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "cachelint" / "demo" / "data"

INSTRUCTIONS = """You are an interactive CLI tool that helps users with software engineering tasks. Use the instructions below and the tools available to you to assist the user.

# Tone and style
Be concise, direct, and to the point. When you run a non-trivial bash command, explain what the command does and why you are running it. Your output will be displayed on a command line interface. Responses can use GitHub-flavored markdown for formatting. Output text to communicate with the user; all text you output outside of tool use is displayed to the user. Only use tools to complete tasks.

# Proactiveness
You are allowed to be proactive, but only when the user asks you to do something. Strike a balance between doing the right thing when asked, including taking actions and follow-up actions, and not surprising the user with actions you take without asking.

# Following conventions
When making changes to files, first understand the file's code conventions. Mimic code style, use existing libraries and utilities, and follow existing patterns. Never assume that a given library is available, even if it is well known. Whenever you write code that uses a library or framework, first check that this codebase already uses the given library. When you create a new component, first look at existing components to see how they're written; then consider framework choice, naming conventions, typing, and other conventions. When you edit a piece of code, first look at the code's surrounding context (especially its imports) to understand the code's choice of frameworks and libraries. Always follow security best practices. Never introduce code that exposes or logs secrets and keys. Never commit secrets or keys to the repository.

# Doing tasks
The user will primarily request you perform software engineering tasks. This includes solving bugs, adding new functionality, refactoring code, explaining code, and more. For these tasks the following steps are recommended:
- Use the available search tools to understand the codebase and the user's query. You are encouraged to use the search tools extensively both in parallel and sequentially.
- Implement the solution using all tools available to you.
- Verify the solution if possible with tests. NEVER assume specific test framework or test script. Check the README or search the codebase to determine the testing approach.
- When you have completed a task, you MUST run the lint and typecheck commands (eg. npm run lint, npm run typecheck, ruff, etc.) if they were provided to you to ensure your code is correct.
NEVER commit changes unless the user explicitly asks you to. It is VERY IMPORTANT to only commit when explicitly asked, otherwise the user will feel that you are being too proactive.

# Tool usage policy
- When doing file search, prefer to use the Task tool in order to reduce context usage.
- You have the capability to call multiple tools in a single response. When multiple independent pieces of information are requested, batch your tool calls together for optimal performance.
- When making multiple bash tool calls, you MUST send a single message with multiple tools calls to run the calls in parallel.

# Code References
When referencing specific functions or pieces of code include the pattern `file_path:line_number` to allow the user to easily navigate to the source code location.
"""


def environment(minute: str) -> str:
    return (
        "Here is useful information about the environment you are running in:\n<env>\n"
        "Working directory: /home/dev/shop-api\nIs directory a git repo: Yes\nPlatform: linux\n"
        "OS Version: Linux 6.8.0\n"
        f"Current time: 2026-11-29T10:{minute}\n"
        "</env>\nYou are powered by the model named Sonnet 4.5. The exact model ID is claude-sonnet-4-5.\n"
    )


def tool(name: str, description: str, properties: dict, required: list[str]) -> dict:
    return {
        "name": name,
        "description": description,
        "input_schema": {
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": False,
            "$schema": "http://json-schema.org/draft-07/schema#",
        },
    }


TOOLS = [
    tool("Bash", "Executes a given bash command in a persistent shell session with optional timeout, ensuring proper handling and security measures. Before executing the command, verify the parent directory exists; always quote file paths that contain spaces; avoid using search commands like find and grep and use the Grep and Glob tools instead.",
         {"command": {"type": "string", "description": "The command to execute"}, "timeout": {"type": "number", "description": "Optional timeout in milliseconds (max 600000)"}, "description": {"type": "string", "description": "Clear, concise description of what this command does in 5-10 words"}}, ["command"]),
    tool("Glob", "Fast file pattern matching tool that works with any codebase size. Supports glob patterns like **/*.js or src/**/*.ts. Returns matching file paths sorted by modification time.",
         {"pattern": {"type": "string", "description": "The glob pattern to match files against"}, "path": {"type": "string", "description": "The directory to search in. Defaults to the current working directory."}}, ["pattern"]),
    tool("Grep", "A powerful search tool built on ripgrep. Supports full regex syntax, filtering files with the glob parameter or the type parameter, and output modes content, files_with_matches and count.",
         {"pattern": {"type": "string", "description": "The regular expression pattern to search for in file contents"}, "path": {"type": "string", "description": "File or directory to search in"}, "glob": {"type": "string", "description": "Glob pattern to filter files"}, "output_mode": {"type": "string", "enum": ["content", "files_with_matches", "count"]}}, ["pattern"]),
    tool("Read", "Reads a file from the local filesystem. The file_path parameter must be an absolute path. By default, it reads up to 2000 lines starting from the beginning of the file; you can optionally specify a line offset and limit.",
         {"file_path": {"type": "string", "description": "The absolute path to the file to read"}, "offset": {"type": "number", "description": "The line number to start reading from"}, "limit": {"type": "number", "description": "The number of lines to read"}}, ["file_path"]),
    tool("Edit", "Performs exact string replacements in files. You must use the Read tool at least once in the conversation before editing. The edit will fail if old_string is not unique in the file; provide a larger string with more surrounding context or use replace_all.",
         {"file_path": {"type": "string", "description": "The absolute path to the file to modify"}, "old_string": {"type": "string", "description": "The text to replace"}, "new_string": {"type": "string", "description": "The text to replace it with"}, "replace_all": {"type": "boolean", "default": False}}, ["file_path", "old_string", "new_string"]),
]

ROUTES = '''from fastapi import APIRouter, HTTPException

from .db import get_session
from .models import Order

router = APIRouter(prefix="/orders")


@router.get("/{order_id}")
def get_order(order_id: int):
    with get_session() as session:
        order = session.get(Order, order_id)
        if order is None:
            raise HTTPException(status_code=404, detail="order not found")
        return order.to_dict()


@router.post("/")
def create_order(payload: dict):
    with get_session() as session:
        order = Order(**payload)
        session.add(order)
        session.commit()
        return {"id": order.id}
'''

CONVERSATION = [
    ("user", [{"type": "text", "text": "<system-reminder>\nAs you answer the user's questions, you can use the following context: the project uses FastAPI and SQLAlchemy; tests run with pytest.\n</system-reminder>"},
              {"type": "text", "text": "The GET /orders/{id} endpoint returns 500 for orders without items. Can you find out why?"}]),
    ("assistant", [{"type": "text", "text": "I'll look at the order routes first."},
                   {"type": "tool_use", "id": "toolu_01", "name": "Grep", "input": {"pattern": "def get_order", "path": "/home/dev/shop-api"}}]),
    ("user", [{"type": "tool_result", "tool_use_id": "toolu_01", "content": "/home/dev/shop-api/app/routes.py:10:def get_order(order_id: int):"}]),
    ("assistant", [{"type": "tool_use", "id": "toolu_02", "name": "Read", "input": {"file_path": "/home/dev/shop-api/app/routes.py"}}]),
    ("user", [{"type": "tool_result", "tool_use_id": "toolu_02", "content": ROUTES}]),
    ("assistant", [{"type": "tool_use", "id": "toolu_03", "name": "Grep", "input": {"pattern": "def to_dict", "path": "/home/dev/shop-api/app/models.py", "output_mode": "content"}}]),
    ("user", [{"type": "tool_result", "tool_use_id": "toolu_03", "content": "42:    def to_dict(self):\n43:        return {\"id\": self.id, \"total\": sum(i.price for i in self.items) / len(self.items)}"}]),
    ("assistant", [{"type": "text", "text": "Found it: `Order.to_dict` divides by `len(self.items)`, which is zero for an order without items. I'll guard it."},
                   {"type": "tool_use", "id": "toolu_04", "name": "Edit", "input": {"file_path": "/home/dev/shop-api/app/models.py", "old_string": "sum(i.price for i in self.items) / len(self.items)", "new_string": "sum(i.price for i in self.items)"}}]),
    ("user", [{"type": "tool_result", "tool_use_id": "toolu_04", "content": "The file /home/dev/shop-api/app/models.py has been updated."}]),
    ("assistant", [{"type": "tool_use", "id": "toolu_05", "name": "Bash", "input": {"command": "pytest -q tests/test_orders.py", "description": "Run the order tests"}}]),
    ("user", [{"type": "tool_result", "tool_use_id": "toolu_05", "content": "....                                                   [100%]\n4 passed in 0.41s"}]),
]

# (turn, messages sent, minute stamped into the system prompt)
TURNS = [(1, 1, "31"), (2, 3, "31"), (3, 5, "31"), (4, 7, "32"), (5, 9, "32"), (6, 11, "32")]


def request(messages: int, minute: str) -> dict:
    convo = json.loads(json.dumps([{"role": r, "content": c} for r, c in CONVERSATION[:messages]]))
    convo[-1]["content"][-1]["cache_control"] = {"type": "ephemeral"}  # Claude Code moves it every turn
    return {
        "model": "claude-sonnet-4-5",
        "max_tokens": 32000,
        "stream": True,
        "system": [
            {"type": "text", "text": "You are Claude Code, Anthropic's official CLI for Claude.", "cache_control": {"type": "ephemeral"}},
            {"type": "text", "text": environment(minute) + "\n" + INSTRUCTIONS, "cache_control": {"type": "ephemeral"}},
        ],
        "tools": TOOLS,
        "messages": convo,
        "metadata": {"user_id": "user_demo_session_0001"},
    }


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for turn, messages, minute in TURNS:
        exchange = {
            "request": {
                "method": "POST",
                "path": "/v1/messages?beta=true",
                "headers": {"anthropic-version": "2023-06-01", "anthropic-beta": "claude-code-20250219,interleaved-thinking-2025-05-14"},
                "body": request(messages, minute),
            }
        }
        (OUT / f"turn-{turn}.json").write_text(json.dumps(exchange, indent=2, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
