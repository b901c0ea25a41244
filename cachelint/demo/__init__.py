"""`cachelint demo`: what cachelint is for, in under a minute, offline.

A bundled six-turn Claude Code-shaped session (examples/make_demo_session.py generates it) whose turn 4
breaks the cache: the app stamps the current minute into the system prompt.

One break, two numbers, each named wherever it is printed: cachelint's diff estimates the tokens of the previous
turn after the first difference (counted with its own tokenizer, as if the cache could be read up to any token);
the provider's usage, recorded by the proxy, says what was really prefilled again (Anthropic reads only whole
prefixes that end at a cache_control breakpoint and reach the minimum length, and counts with its own
tokenizer). The money is priced on the provider's number: it is what was billed.
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
        "breaks": [{"turn": n, **b.to_json(), "explanation": describe(b), "fix": fix(b),
                    "readable_prefix": readable_prefix(prompts[n - 1], b)} for n, b in breaks],
        "wasted_prefill_source": "cachelint's diff estimate (tokens of the previous turn after the change, its tokenizer)",
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


def readable_prefix(prompt, brk) -> dict[str, Any]:
    """What Anthropic's cache could have read of a request broken at `brk`: the prefix closed by the last
    cache_control breakpoint before the change, its tokens (cachelint's count) and the model's minimum."""
    from cachelint.simulate.models import anthropic_minimum

    pointer = brk.pointer
    changed = next((i for i, b in enumerate(prompt.blocks) if pointer and (pointer == b.pointer or pointer.startswith(b.pointer + "/"))), None)
    marks = [i for i in prompt.breakpoints() if changed is None or i < changed]
    last = marks[-1] if marks else None
    tokens = sum(b.tokens for b in prompt.blocks[: last + 1]) if last is not None else 0
    return {"breakpoint": prompt.blocks[last].pointer if last is not None else None, "prefix_tokens": tokens,
            "minimum_tokens": anthropic_minimum(prompt.model)}


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


def two_numbers(estimate: int, provider: dict[str, Any] | None, prefix: dict[str, Any]) -> str:
    """Why the diff's estimate and the provider's usage differ for one break, in one paragraph."""
    if provider is None:
        return f"  [dim]{estimate:,} is cachelint's diff estimate: the previous turn's tokens after the change.[/]"
    why = ""
    if prefix["breakpoint"] is None:
        why = "no cache_control breakpoint lies before the change, so nothing before it was cached"
    elif prefix["prefix_tokens"] < prefix["minimum_tokens"]:
        why = (f"the last cache_control breakpoint before the change ({prefix['breakpoint']}) closes a prefix of about "
               f"{prefix['prefix_tokens']:,} tokens, below the {prefix['minimum_tokens']:,}-token minimum, so none of it was cached")
    else:
        why = f"only the prefix up to the breakpoint at {prefix['breakpoint']} (about {prefix['prefix_tokens']:,} tokens) could be read"
    return (f"  [dim]Two numbers for this break: {estimate:,} is cachelint's diff estimate (the previous turn's tokens after the "
            f"change, counted with its own tokenizer). The provider's usage, recorded by the proxy, says "
            f"{provider['wasted_prefill_tokens']:,} were prefilled again: Anthropic reads only whole prefixes that end at a "
            f"cache_control breakpoint, and {why}; it also counts with its own tokenizer. The money below is priced on the "
            f"provider's number.[/]")


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
                         ("est. refill", "right"), ("sim read/write", "right")):
        table.add_column(col, justify=justify, no_wrap=True)
    for t in result["turns"]:
        cause = t["cause"] or "(first turn)"
        style = "bold red" if t["cause"] not in (None, "none") else ""
        table.add_row(str(t["turn"]), f"{t['prompt_tokens']:,}", f"{t['shared_with_previous']:,}",
                      f"[{style}]{cause}[/]" if style else cause, f"{t['reprefilled_tokens']:,}",
                      f"{t['predicted_cache_read_tokens']:,} / {t['predicted_cache_write_tokens']:,}")
    console.print(table)
    console.print("[dim]est. refill: cachelint's diff estimate, the tokens of the previous turn after the first difference "
                  "(its own tokenizer). sim read/write: what Anthropic's cache would read and write for these requests sent 30 s "
                  "apart, by the simulator `cachelint proxy` checks usage against.[/]")
    p = result["proxy"]
    provider = {b["request"]: b for b in p["breaks"]}
    for (n, brk), info in zip(breaks, result["breaks"]):
        console.print(f"\n[bold]Turn {n}[/] (cachelint diff turn-{n - 1}.json turn-{n}.json):")
        render_text(brk, console, f"turn {n - 1}", f"turn {n}")
        console.print(two_numbers(brk.reprefilled_tokens, provider.get(n), info["readable_prefix"]))
    kv = result["kv"]
    console.print("\n[bold]What it costs[/]")
    billed = sum(b["wasted_prefill_tokens"] for b in p["breaks"])
    billed_usd = sum(b["wasted_cost"] or 0.0 for b in p["breaks"])
    console.print(f"  API: {billed:,} tokens written to cache again instead of read (the provider's usage): ${billed_usd:.4f} "
                  f"per break at {result['session'].split()[-1]} prices (the diff's estimate, {result['wasted_prefill_tokens']:,} tokens, "
                  f"would be ${result['wasted_usd']:.4f}); a clock that ticks every minute breaks the prefix up to 60 times an hour.")
    console.print(f"  Self-hosted: {kv['model']} with an FP8 KV cache holds {kv['bytes_per_token']:,} B per token; "
                  f"this session's {kv['session_tokens']:,} tokens are {human_bytes(kv['session_bytes'])} of KV, and the "
                  f"break recomputed {human_bytes(kv['reprefilled_kv_bytes'])} of it.")
    console.print(f"\n[bold]Through the proxy[/] (the same session recorded by cachelint proxy, bundled): {p['requests']} requests, "
                  f"hit rate {p['hit_rate']:.0%}, {p['cache_read_tokens']:,} tokens read from cache, {p['cache_write_tokens']:,} written")
    for b in p["breaks"]:
        console.print(f"  break at request {b['request']}: {b['cause']}/{b['detail']} {b['rule']} at {b['pointer']}, "
                      f"{b['wasted_prefill_tokens']:,} tokens prefilled again (the provider's usage; the diff's estimate: "
                      f"{b['estimated_reprefilled_tokens']:,}); `cachelint report` shows the same for your own traffic")
    console.print(f"\n[bold]Before it ships[/]: cachelint check on the example app support_bot.py finds {len(findings)} mistakes")
    for f in findings:
        console.print(f"  support_bot.py:{f.row}:{f.column}  [cyan]{f.code}[/] {f.name}: {f.message}")
    console.print("\nTry: [bold]cachelint check[/] your_app/   [bold]cachelint diff[/] BEFORE.json AFTER.json   "
                  "[bold]cachelint kv[/] Qwen/Qwen3-4B --kv-dtype fp8 --gpu-memory 24GiB --session-tokens 22800")
    console.print("On an engine: [bold]cachelint replay[/] ~/.local/share/cachelint/cachelint.db --base-url http://127.0.0.1:8000 "
                  "--what-if all   measures this traffic's real reuse on your vLLM, and what the fixes would save")
