"""Autonomous bug-fixing agent that escalates to a stronger model and to extended thinking when stuck."""

from __future__ import annotations

import subprocess

import anthropic

client = anthropic.Anthropic()
CHEAP = "claude-haiku-4-5"
STRONG = "claude-opus-4-5"
SYSTEM = "You fix failing tests in the repository. State your plan in one paragraph, then use the tools."
TOOLS = [
    {"name": "run_tests", "description": "Run the test suite and return the failures.",
     "input_schema": {"type": "object", "properties": {}}},
    {"name": "apply_patch", "description": "Apply a unified diff to the working tree.",
     "input_schema": {"type": "object", "properties": {"diff": {"type": "string"}}, "required": ["diff"]}},
]


def execute(name: str, arguments: dict) -> str:
    if name == "run_tests":
        return subprocess.run(["pytest", "-x", "-q"], capture_output=True, text=True).stdout[-8000:]
    done = subprocess.run(["git", "apply", "-"], input=arguments["diff"], capture_output=True, text=True)
    return done.stderr or "applied"


def model_for(failures: int) -> str:
    return STRONG if failures >= 3 else CHEAP


def fix_tests(task: str) -> None:
    messages = [{"role": "user", "content": task}]
    failures = 0
    model = CHEAP
    for turn in range(30):
        if failures >= 3:
            model = STRONG  # expect: CL401
        thinking = {"type": "enabled", "budget_tokens": 8000} if failures else {"type": "disabled"}  # expect: CL401
        response = client.messages.create(  # expect: CL501
            model=model,
            max_tokens=16000 if failures else 4000,
            temperature=1.0,
            thinking=thinking,
            system=SYSTEM,
            tools=TOOLS,
            messages=messages,
        )
        messages.append({"role": "assistant", "content": response.content})
        if response.stop_reason != "tool_use":
            return
        results = []
        for block in response.content:
            if block.type == "tool_use":
                output = execute(block.name, block.input)
                failures += "FAILED" in output
                results.append({"type": "tool_result", "tool_use_id": block.id, "content": output})
        messages.append({"role": "user", "content": results})


def review_diffs(diffs: list[str]) -> list[str]:
    messages: list[dict] = []
    notes = []
    failures = 0
    for diff in diffs:
        messages.append({"role": "user", "content": f"Review this diff:\n{diff}"})
        response = client.beta.messages.create(  # expect: CL501
            model=model_for(failures),  # expect: CL401
            max_tokens=2000,
            betas=["context-management-2025-06-27"] if len(messages) > 40 else [],  # expect: CL401
            system=SYSTEM,
            messages=messages,
        )
        text = response.content[0].text
        failures += "REJECT" in text
        notes.append(text)
        messages.append({"role": "assistant", "content": text})
    return notes
