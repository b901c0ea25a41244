"""Benchmark how `cachelint check` scales with the requests of one function.

Usage: python bench/scaling.py [--sizes 25,200] [--repeat N] [--shape agent-loop|cut-loop|prompt-tables|all]
An agent that makes many requests on one history in one loop (a generated client, a long scripted
conversation, a test module) is where pairwise analyses go quadratic or worse: before round 21 a function
with 100 such requests took about a minute, and 600 more than five. The file below grows by one request and
one append per step (cut-loop: and a cut of the history after each; prompt-tables: a prompt module with many small
dicts beside a table of prompt variables); the time per unit of the largest size is compared with the smallest's, measured in
this run (in process, so the interpreter's start does not hide the growth). Target: the largest size costs at
most 2x per request what the smallest does (linear work gives about 1x; quadratic gives the ratio of sizes).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cachelint.check.engine import lint_source  # noqa: E402


def agent_loop(requests: int) -> str:
    """One function: a loop that sends the same growing history `requests` times, with tools and a model."""
    lines = [
        "from openai import OpenAI",
        "",
        "client = OpenAI()",
        "TOOLS = [{'type': 'function', 'function': {'name': 'search', 'parameters': {'type': 'object'}}}]",
        "",
        "",
        "def run(task: str) -> list[dict]:",
        "    history = [{'role': 'system', 'content': 'You are a careful research agent.'}, {'role': 'user', 'content': task}]",
        "    for _ in range(10):",
    ]
    for i in range(requests):
        lines.append(f"        reply{i} = client.chat.completions.create(model='gpt-4o', messages=history, tools=TOOLS)")
        lines.append(f"        history.append({{'role': 'assistant', 'content': reply{i}.choices[0].message.content}})")
    lines.append("    return history")
    return "\n".join(lines) + "\n"


def cut_loop(requests: int) -> str:
    """One function: each request followed by a cut of the history it sends (every cut a finding)."""
    lines = ["from openai import OpenAI", "", "client = OpenAI()", "", "", "def run(task: str) -> list[dict]:",
             "    history = [{'role': 'system', 'content': 'You are a careful research agent.'}, {'role': 'user', 'content': task}]",
             "    for _ in range(10):"]
    for i in range(requests):
        lines.append(f"        reply{i} = client.chat.completions.create(model='gpt-4o', messages=history)")
        lines.append(f"        history.append({{'role': 'assistant', 'content': reply{i}.choices[0].message.content}})")
        lines.append("        if len(history) > 30:")
        lines.append("            del history[1:3]")
    lines.append("    return history")
    return "\n".join(lines) + "\n"


def prompt_tables(requests: int) -> str:
    """A prompt module with one table of prompt variables and many small dicts (one per `requests`)."""
    lines = ["import time", "", "", "def get_system_prompt():", "    return 'You are helpful. ' + time.strftime('%H:%M')", "",
             "", "def replace_variables(text):", "    return text.replace('{DATE}', time.strftime('%H:%M %Y-%m-%d'))", "", "",
             "def rows():", "    out = []"]
    for i in range(requests):
        lines.append(f"    out.append({{'id': {i}, 'name': 'row{i}', 'kind': 'item'}})")
    lines.append("    return out")
    return "\n".join(lines) + "\n"


SHAPES = {"agent-loop": agent_loop, "cut-loop": cut_loop, "prompt-tables": prompt_tables}


def seconds(source: str, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        lint_source(source, "agent_loop.py")
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="25,200", help="requests in the function, smallest first (comma-separated)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--shape", choices=[*SHAPES, "all"], default="all", help="the code that grows (default: all)")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    lint_source(agent_loop(2), "warm.py")  # rules and metadata imported before anything is timed
    met = True
    for shape, make in SHAPES.items():
        if args.shape not in (shape, "all"):
            continue
        per_request = {}
        print(f"{shape}\n{'size':>9} {'seconds':>9} {'ms/unit':>11}")
        for n in sizes:
            took = seconds(make(n), args.repeat)
            per_request[n] = took / n
            print(f"{n:>9} {took:>9.2f} {1000 * took / n:>11.1f}")
        ratio = per_request[sizes[-1]] / per_request[sizes[0]]
        met = met and ratio <= 2
        print(f"headline {shape}: per-unit cost at {sizes[-1]} / at {sizes[0]} = {ratio:.2f}x (target <= 2x): "
              f"{'met' if ratio <= 2 else 'NOT met'}")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
