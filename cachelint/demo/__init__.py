"""`cachelint demo`: what cachelint is for, in under a minute, offline.

A bundled six-turn Claude Code-shaped session (examples/make_demo_session.py generates it) whose turn 4
breaks the cache: the app stamps the current minute into the system prompt.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

from rich.console import Console
from rich.table import Table

from cachelint.diff import explain
from cachelint.diff.render import describe, fix, render_text
from cachelint.kv import model_kv_cost
from cachelint.kv.units import human_bytes
from cachelint.pricing import wasted_prefill_usd
from cachelint.prompt import build_prompt, exchange_from_json
from cachelint.tokens import counter_for

KV_MODEL = "Qwen/Qwen3-4B"


def session_files() -> list[Any]:
    data = resources.files("cachelint.demo").joinpath("data")
    return sorted((f for f in data.iterdir() if f.name.startswith("turn-")), key=lambda f: int(f.name[5:-5]))


def analyse() -> dict[str, Any]:
    prompts = []
    for f in session_files():
        exchange = exchange_from_json(json.loads(f.read_text()), f.name)
        prompts.append(build_prompt(exchange))
    counter = counter_for(prompts[0].provider, prompts[0].model)
    from cachelint.simulate import AnthropicCacheSimulator

    simulator = AnthropicCacheSimulator()  # what Anthropic's cache would do with these requests, 30 s apart
    turns, breaks = [], []
    for n, prompt in enumerate(prompts, start=1):
        brk = explain(prompts[n - 2], prompt, counter) if n > 1 else None
        predicted = simulator.record(prompt, at=30.0 * n, response_started_at=30.0 * n + 1)
        turns.append({
            "predicted_cache_read_tokens": predicted.cache_read_tokens,
            "predicted_cache_write_tokens": predicted.cache_write_tokens,
            "turn": n,
            "messages": len(prompt.body["messages"]),
            "prompt_tokens": prompt.prompt_tokens,
            "shared_with_previous": brk.common_prefix_tokens if brk else 0,
            "cause": brk.cause if brk else None,
            "reprefilled_tokens": brk.reprefilled_tokens if brk else 0,
        })
        if brk and brk.cause != "none":
            breaks.append((n, brk))
    kv = model_kv_cost(KV_MODEL, kv_dtype="fp8")
    wasted = sum(b.reprefilled_tokens for _, b in breaks)
    last = prompts[-1].prompt_tokens
    return {
        "session": "Claude Code-shaped agent session, Anthropic Messages API, model " + str(prompts[0].model),
        "tokenizer": prompts[0].tokenizer,
        "turns": turns,
        "breaks": [{"turn": n, **b.to_json(), "explanation": describe(b), "fix": fix(b)} for n, b in breaks],
        "_break_objects": breaks,
        "wasted_prefill_tokens": wasted,
        "wasted_usd": round(wasted_prefill_usd(wasted, prompts[0].model), 6),
        "kv": {
            "model": kv.model,
            "kv_dtype": "fp8",
            "bytes_per_token": kv.bytes_per_token,
            "session_tokens": last,
            "session_bytes": kv.session_bytes(last),
            "reprefilled_kv_bytes": kv.bytes_per_token * wasted,
        },
    }


def lint_example() -> list:
    """Findings of `cachelint check` on the bundled example app."""
    from cachelint.check.engine import lint_source

    source = resources.files("cachelint.demo").joinpath("data", "support_bot.py").read_text()
    return lint_source(source, "support_bot.py")


def proxy_report() -> dict[str, Any]:
    """The bundled traffic (the same session recorded through `cachelint proxy`, examples/make_demo_traffic.py)
    through the proxy's pipeline, as `cachelint report` shows it."""
    from cachelint.record.analyze import Recorder
    from cachelint.record.importers import read
    from cachelint.record.report import session_report

    path = resources.files("cachelint.demo").joinpath("data", "traffic.jsonl")
    with resources.as_file(path) as file:
        captured = read(file)
    recorder = Recorder(store=None)
    rows = [recorder.record(c) for c in sorted(captured, key=lambda c: c.started_at)]
    return session_report(rows[0].session, rows)


def run_demo(fmt: str, console: Console) -> None:
    result = analyse()
    breaks = result.pop("_break_objects")
    findings = lint_example()
    result["proxy"] = proxy_report()
    result["lint"] = {"file": "support_bot.py", "findings": [f.to_json() for f in findings]}
    if fmt == "json":
        console.print_json(json.dumps(result))
        return
    console.rule("[bold]cachelint demo")
    console.print(f"{result['session']}; tokens counted with {result['tokenizer']}.\n")
    table = Table(title="Each turn against the one before", title_justify="left")
    for col, justify in (("turn", "right"), ("tokens", "right"), ("shared", "right"), ("cause", "left"),
                         ("refilled", "right"), ("sim read/write", "right")):
        table.add_column(col, justify=justify, no_wrap=True)
    for t in result["turns"]:
        cause = t["cause"] or "(first turn)"
        style = "bold red" if t["cause"] not in (None, "none") else ""
        table.add_row(str(t["turn"]), f"{t['prompt_tokens']:,}", f"{t['shared_with_previous']:,}",
                      f"[{style}]{cause}[/]" if style else cause, f"{t['reprefilled_tokens']:,}",
                      f"{t['predicted_cache_read_tokens']:,} / {t['predicted_cache_write_tokens']:,}")
    console.print(table)
    console.print("[dim]refilled: tokens of the previous turn prefilled again. sim read/write: what Anthropic's cache would "
                  "read and write for these requests sent 30 s apart, by the simulator `cachelint proxy` checks usage against.[/]")
    for n, brk in breaks:
        console.print(f"\n[bold]Turn {n}[/] (cachelint diff turn-{n - 1}.json turn-{n}.json):")
        render_text(brk, console, f"turn {n - 1}", f"turn {n}")
    kv = result["kv"]
    console.print("\n[bold]What it costs[/]")
    console.print(f"  API: {result['wasted_prefill_tokens']:,} tokens written to cache again instead of read: "
                  f"${result['wasted_usd']:.4f} per break at {result['session'].split()[-1]} prices; "
                  "a clock that ticks every minute breaks the prefix up to 60 times an hour.")
    console.print(f"  Self-hosted: {kv['model']} with an FP8 KV cache holds {kv['bytes_per_token']:,} B per token; "
                  f"this session's {kv['session_tokens']:,} tokens are {human_bytes(kv['session_bytes'])} of KV, and the "
                  f"break recomputed {human_bytes(kv['reprefilled_kv_bytes'])} of it.")
    p = result["proxy"]
    console.print(f"\n[bold]Through the proxy[/] (the same session recorded by cachelint proxy, bundled): {p['requests']} requests, "
                  f"hit rate {p['hit_rate']:.0%}, {p['cache_read_tokens']:,} tokens read from cache, {p['cache_write_tokens']:,} written")
    for b in p["breaks"]:
        console.print(f"  break at request {b['request']}: {b['cause']}/{b['detail']} {b['rule']} at {b['pointer']}, "
                      f"{b['reprefilled_tokens']:,} tokens prefilled again; `cachelint report` shows the same for your own traffic")
    console.print(f"\n[bold]Before it ships[/]: cachelint check on the example app support_bot.py finds {len(findings)} mistakes")
    for f in findings:
        console.print(f"  support_bot.py:{f.row}:{f.column}  [cyan]{f.code}[/] {f.name}: {f.message}")
    console.print("\nTry: [bold]cachelint check[/] your_app/   [bold]cachelint diff[/] BEFORE.json AFTER.json   "
                  "[bold]cachelint kv[/] Qwen/Qwen3-4B --kv-dtype fp8 --gpu-memory 24GiB --session-tokens 22800")
    console.print("On an engine: [bold]cachelint replay[/] ~/.local/share/cachelint/cachelint.db --base-url http://127.0.0.1:8000 "
                  "--what-if all   measures this traffic's real reuse on your vLLM, and what the fixes would save")
