"""Benchmark the per-request analysis `cachelint proxy` runs, on one conversation that grows to ~200k tokens.

Usage: python bench/analysis.py [--turns 100] [--tokens 200000] [--repeat 7] [--profile]
One Anthropic Messages conversation (tools, a long system prompt with a breakpoint, a breakpoint that moves to
the newest user message) grows by a user and an assistant text every turn. Each turn is analyzed as the proxy
does it: parse the body, build the prompt model (adapter + token counts; blocks equal to the previous turn's
at the same place are reused, as the proxy's recorder does), `cachelint.diff.explain` against the previous turn, and the Anthropic cache simulator's `record`. Every repeat
is a fresh conversation (new text, a fresh simulator), so only the turns before it are in the token cache.
The garbage collector is off while a turn is timed (it runs between turns), as timeit does.
Prints a table (medians over the repeats), then one line with the headline ratio. Measured in this run only.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import json
import pstats
import random
import re
import statistics
import time
from pathlib import Path

from cachelint.diff import explain
from cachelint.prompt import build_prompt, exchange_from_json
from cachelint.prompt import anthropic as anthropic_adapter
from cachelint.simulate import AnthropicCacheSimulator
from cachelint.tokens import counter_for

ROOT = Path(__file__).resolve().parent.parent
MODEL = "claude-sonnet-4-5"
PATH = "/v1/messages?beta=true"
HEADERS = {"anthropic-version": "2023-06-01", "anthropic-beta": "claude-code-20250219", "x-claude-code-session-id": "bench"}
EPHEMERAL = {"type": "ephemeral"}
STEPS = ("parse", "adapter", "prompt+tokens", "explain", "simulate")


def vocabulary() -> list[str]:
    """Real words (English and identifiers) from the README, so token counts look like real text."""
    words = re.findall(r"[A-Za-z][A-Za-z_'-]{1,15}", (ROOT / "README.md").read_text(encoding="utf-8"))
    return sorted(set(words))


def text(rng: random.Random, words: list[str], n: int) -> str:
    out = []
    for i in range(n):
        out.append(rng.choice(words))
        if i % 17 == 16:
            out.append(".\n" if i % 51 == 50 else ".")
    return " ".join(out)


def tools(rng: random.Random, words: list[str], count: int = 12) -> list[dict]:
    return [{"name": f"tool_{i}", "description": text(rng, words, 120),
             "input_schema": {"type": "object", "properties": {"path": {"type": "string", "description": text(rng, words, 12)},
                                                                "limit": {"type": "integer"}}, "required": ["path"]}}
            for i in range(count)]


def conversation(seed: int, turns: int, per_message_words: int, system_words: int) -> list[bytes]:
    """The request bodies of turns 1..turns, as the client sends them (raw JSON bytes)."""
    rng, words = random.Random(seed), vocabulary()
    system = [{"type": "text", "text": "You are Claude Code, Anthropic's official CLI for Claude."},
              {"type": "text", "text": text(rng, words, system_words), "cache_control": EPHEMERAL}]
    toolset = tools(rng, words)
    messages: list[dict] = []
    bodies = []
    for turn in range(1, turns + 1):
        for m in messages:
            for block in m["content"]:
                block.pop("cache_control", None)
        messages.append({"role": "user", "content": [{"type": "text", "text": f"turn {turn}: " + text(rng, words, per_message_words),
                                                      "cache_control": EPHEMERAL}]})
        body = {"model": MODEL, "max_tokens": 32000, "stream": True, "system": system, "tools": toolset, "messages": messages,
                "metadata": {"user_id": "user_bench_account__session_bench"}}
        bodies.append(json.dumps(body, ensure_ascii=False).encode("utf-8"))
        messages.append({"role": "assistant", "content": [{"type": "text", "text": text(rng, words, per_message_words)}]})
    return bodies


def calibrate(turns: int, target_tokens: int) -> tuple[int, int]:
    """Words per message and system words so that the last turn is about target_tokens."""
    counter = counter_for("anthropic", MODEL)
    rng, words = random.Random(0), vocabulary()
    per_word = counter.count(text(rng, words, 20_000)) / 20_000
    system_words = int(6_000 / per_word)
    fixed = 6_000 + sum(counter.count(json.dumps(t)) for t in tools(rng, words))
    per_message_words = max(10, int((target_tokens - fixed) / (2 * turns - 1) / per_word))
    return per_message_words, system_words


def analyze_turns(bodies: list[bytes], profiler: cProfile.Profile | None = None) -> list[dict[str, float]]:
    """Each turn analyzed after the ones before it, as the proxy's recorder would: seconds per step. A profiler
    given is switched on for the last turn only."""
    simulator = AnthropicCacheSimulator()
    previous = None
    out = []
    start_at = 1_000_000.0
    for i, raw in enumerate(bodies):
        gc.disable()  # as timeit does: no garbage collection inside a measured turn (it runs between turns)
        if profiler is not None and i == len(bodies) - 1:
            profiler.enable()
        t0 = time.perf_counter()
        body = json.loads(raw)
        t1 = time.perf_counter()
        anthropic_adapter.blocks(body)  # the adapter alone (build_prompt runs it again, with token counts)
        t2 = time.perf_counter()
        prompt = build_prompt(exchange_from_json({"request": {"path": PATH, "headers": HEADERS, "body": body}}), previous=previous)
        tokens = prompt.prompt_tokens
        t3 = time.perf_counter()
        if previous is not None:
            explain(previous, prompt, counter_for(prompt.provider, prompt.model))
        t4 = time.perf_counter()
        at = start_at + 30.0 * i
        simulator.record(prompt, at=at, response_started_at=at + 1.0)
        t5 = time.perf_counter()
        gc.enable()
        if profiler is not None and i == len(bodies) - 1:
            profiler.disable()
        previous = prompt
        out.append({"parse": t1 - t0, "adapter": t2 - t1, "prompt+tokens": t3 - t2, "explain": t4 - t3, "simulate": t5 - t4,
                    "tokens": tokens, "bytes": len(raw)})
    return out


def total(step_times: dict[str, float]) -> float:
    """The analysis the brief names: prompt model with tokens, explain, simulator (parse and adapter shown apart)."""
    return step_times["prompt+tokens"] + step_times["explain"] + step_times["simulate"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=100)
    parser.add_argument("--tokens", type=int, default=200_000, help="approximate prompt tokens at the last turn")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--profile", action="store_true", help="cProfile the last turn of one more conversation")
    args = parser.parse_args()
    per_message_words, system_words = calibrate(args.turns, args.tokens)
    counter_for("anthropic", MODEL).count("warm up")
    runs = []
    for r in range(args.repeat):
        bodies = conversation(seed=1000 + r, turns=args.turns, per_message_words=per_message_words, system_words=system_words)
        runs.append(analyze_turns(bodies))
    early = min(10, args.turns)
    probes = sorted({1, 2, early, args.turns // 2, args.turns})
    print(f"one Anthropic conversation, {args.turns} turns, 12 tools, {per_message_words} words per message; "
          f"median of {args.repeat} fresh conversations; ms per turn")
    header = f"  {'turn':>5} {'tokens':>8} {'KiB':>6} " + " ".join(f"{s:>13}" for s in STEPS) + f" {'total':>8}"
    print(header)
    for turn in probes:
        rows = [run[turn - 1] for run in runs]
        med = {s: statistics.median(row[s] for row in rows) for s in STEPS}
        tot = statistics.median(total(row) for row in rows)
        print(f"  {turn:>5} {rows[0]['tokens']:>8,} {rows[0]['bytes'] / 1024:>6.0f} "
              + " ".join(f"{med[s] * 1000:>13.2f}" for s in STEPS) + f" {tot * 1000:>8.2f}")
    t_early = statistics.median(total(run[early - 1]) for run in runs)
    t_last = statistics.median(total(run[-1]) for run in runs)
    with_parse = statistics.median(total(run[-1]) + run[-1]["parse"] for run in runs) / statistics.median(
        total(run[early - 1]) + run[early - 1]["parse"] for run in runs)
    whole = statistics.median(sum(total(t) for t in run) for run in runs)
    print(f"  total = prompt+tokens + explain + simulate (adapter is inside prompt+tokens; parse is json.loads, not in total); "
          f"whole conversation {whole:.2f} s; with parse turn{args.turns}/turn{early} = {with_parse:.2f}x")
    print(f"headline: turn{args.turns}/turn{early} = {t_last / t_early:.2f}x (target <= 2x): "
          f"{t_early * 1000:.2f} ms at turn {early} ({runs[0][early - 1]['tokens']:,} tokens), "
          f"{t_last * 1000:.2f} ms at turn {args.turns} ({runs[0][-1]['tokens']:,} tokens)")
    if args.profile:
        profiler = cProfile.Profile()
        analyze_turns(conversation(seed=999, turns=args.turns, per_message_words=per_message_words, system_words=system_words), profiler)
        buf = io.StringIO()
        stats = pstats.Stats(profiler, stream=buf)
        stats.sort_stats("tottime").print_stats(10)
        stats.sort_stats("cumulative").print_stats("cachelint", 12)
        print(f"profile of turn {args.turns} (cProfile adds overhead to every call):\n" + buf.getvalue())


if __name__ == "__main__":
    main()
