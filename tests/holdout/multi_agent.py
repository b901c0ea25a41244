"""Planner / researcher / writer orchestrator sharing one conversation transcript."""
from __future__ import annotations

import glob
from dataclasses import dataclass

import anthropic

client = anthropic.Anthropic()
PLANNER_MODEL = "claude-opus-4-1"
WORKER_MODEL = "claude-sonnet-4-5"

ALL_TOOLS = [
    {"name": "search_docs", "description": "Search internal docs.",
     "input_schema": {"type": "object", "properties": {"q": {"type": "string"}}}},
    {"name": "read_file", "description": "Read a repository file.",
     "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}},
    {"name": "write_section", "description": "Write a report section.",
     "input_schema": {"type": "object", "properties": {"title": {"type": "string"}, "body": {"type": "string"}}}},
]


@dataclass
class Agent:
    name: str
    role: str
    allowed: frozenset[str]


AGENTS = [
    Agent("planner", "Break the task into steps and decide who acts next.", frozenset({"search_docs"})),
    Agent("researcher", "Gather facts with the tools.", frozenset({"search_docs", "read_file"})),
    Agent("writer", "Write the final report.", frozenset({"write_section"})),
]


def shared_context() -> str:
    briefs = [open(p).read() for p in glob.glob("briefs/*.md")]  # expect: CL103
    return "Project briefs:\n" + "\n\n".join(briefs)


def act(agent: Agent, transcript: list[dict]) -> str:
    tools = [t for t in ALL_TOOLS if t["name"] in agent.allowed]  # expect: CL202
    model = PLANNER_MODEL if agent.name == "planner" else WORKER_MODEL  # known miss: the model is chosen in a helper called from the loop (CL401)
    resp = client.messages.create(  # expect: CL501
        model=model,
        max_tokens=2048,
        system=f"{shared_context()}\n\nYou are the {agent.name}. {agent.role}",
        tools=tools,
        messages=transcript,
    )
    return "".join(b.text for b in resp.content if b.type == "text")


def orchestrate(task: str, rounds: int = 6) -> list[dict]:
    transcript = [{"role": "user", "content": task}]
    for turn in range(rounds):
        agent = AGENTS[turn % len(AGENTS)]
        text = act(agent, transcript)
        transcript.append({"role": "assistant", "content": f"[{agent.name}] {text}"})
        transcript.append({"role": "user", "content": "Continue."})
        if turn and turn % 3 == 0:
            transcript.insert(1, {"role": "user", "content": "Reminder: stay within the task."})  # expect: CL301
    return transcript


if __name__ == "__main__":
    for message in orchestrate("Write a migration plan for moving our billing service to Postgres 16."):
        print(message["role"], ":", message["content"][:200])
