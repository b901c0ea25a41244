"""Benchmark `cachelint replay`: agreement of predicted and measured reuse, and requests per second.

Usage: python bench/replay.py [--base-url URL --model NAME | --vllm-python PY] [--sessions 8] [--turns 6]
       [--concurrency 1,4] [--repeat 3]

Needs a vLLM server with prefix caching and prompt token details: `--base-url` of a running one, or
`--vllm-python` (default $CACHELINT_VLLM_PYTHON) to build the tests' tiny random-weight model and launch one
(`tests/vllm_env.sh` builds that Python). Without either it prints why and exits 0.

The traffic is the tests' recorded agent trace (tests/replay_trace.py) repeated over `--sessions` sessions
(session ids made distinct), replayed with each `--concurrency`; every run uses a fresh cache salt. Prints a
table (medians over the repeats), then one line with the headline numbers. Measured in this run only.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from cachelint.replay.engine import Engine  # noqa: E402
from cachelint.replay.launch import VllmServer  # noqa: E402
from cachelint.replay.run import Replay, ReplayOptions  # noqa: E402
from cachelint.replay.source import load  # noqa: E402
from replay_trace import build_trace  # noqa: E402


def trace_file(directory: Path, sessions: int, turns: int) -> Path:
    """`sessions` copies of the 4-session trace's Anthropic sessions, each with its own session id."""
    base = build_trace(turns)
    lines = []
    for copy_index in range((sessions + 3) // 4):
        for exchange in base:
            e = copy.deepcopy(exchange)
            headers = e["request"]["headers"]
            if "x-claude-code-session-id" in headers:
                headers["x-claude-code-session-id"] += f"-{copy_index}"
            else:  # OpenAI sessions are found by prefix lineage: make each copy's system prompt its own
                e["request"]["body"]["messages"][0]["content"] = f"[copy {copy_index}] " + e["request"]["body"]["messages"][0]["content"]
            e["started_at"] += copy_index * 0.01
            lines.append(e)
    lines.sort(key=lambda e: e["started_at"])
    path = directory / "bench-trace.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in lines), encoding="utf-8")
    return path


def measure(url: str, model: str, trace: Path, concurrencies: list[int], repeat: int) -> list[tuple[int, float, float, int]]:
    recorded = load(trace)
    rows = []
    with Engine(url, model) as engine:
        for concurrency in concurrencies:
            rates, agreements = [], []
            for _ in range(repeat):
                started = time.perf_counter()
                result = Replay(engine, recorded, ReplayOptions(concurrency=concurrency)).run()
                elapsed = time.perf_counter() - started
                rates.append(len(recorded) / elapsed)
                agreements.append(result.summaries["original"].agreement)
            rows.append((concurrency, statistics.median(rates), statistics.median(agreements), len(recorded)))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--base-url")
    parser.add_argument("--model", default="tiny")
    parser.add_argument("--vllm-python", default=os.environ.get("CACHELINT_VLLM_PYTHON"))
    parser.add_argument("--sessions", type=int, default=8)
    parser.add_argument("--turns", type=int, default=6)
    parser.add_argument("--concurrency", default="1,4")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    concurrencies = [int(c) for c in args.concurrency.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        trace = trace_file(Path(tmp), args.sessions, args.turns)
        if args.base_url:
            rows = measure(args.base_url, args.model, trace, concurrencies, args.repeat)
        elif args.vllm_python:
            model_dir = Path(tmp) / "tiny"
            subprocess.run([args.vllm_python, str(ROOT / "tests" / "vllm_model.py"), str(model_dir)], check=True, capture_output=True)
            os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
            started = time.perf_counter()
            with VllmServer(str(model_dir), args.model, python=args.vllm_python, extra_args=["--max-model-len", "4096"]) as url:
                print(f"vLLM ready in {time.perf_counter() - started:.0f} s")
                rows = measure(url, args.model, trace, concurrencies, args.repeat)
        else:
            print("skipped: no vLLM server (give --base-url, or --vllm-python / CACHELINT_VLLM_PYTHON; see tests/vllm_env.sh)")
            return
    print(f"replay of {rows[0][3]} requests ({args.sessions} sessions x {args.turns} turns), median of {args.repeat}")
    print(f"{'concurrency':>12} {'requests/s':>11} {'agreement':>10}")
    for concurrency, rate, agreement, _ in rows:
        print(f"{concurrency:>12} {rate:>11.1f} {agreement:>10.1%}")
    serial = rows[0]
    print("headline: " + ", ".join(f"concurrency {c}: {rate:.1f} req/s, agreement {agreement:.1%}" for c, rate, agreement, _ in rows)
          + f" (agreement target: exact in recorded order, measured {serial[2]:.1%})")


if __name__ == "__main__":
    main()
