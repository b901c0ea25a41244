"""`cachelint kv`."""

from __future__ import annotations

from typing import Any

import click
from rich.console import Console

from cachelint.commands.common import FORMATS, print_json, stdout_console


@click.command()
@click.argument("model")
@click.option("--kv-dtype", type=click.Choice(["auto", "bf16", "fp16", "fp8", "fp32"]), default="auto", show_default=True, help="KV cache dtype (auto: the model's dtype).")
@click.option("--weight-dtype", type=click.Choice(["auto", "bf16", "fp16", "fp8", "fp32", "int4"]), default="auto", show_default=True, help="Weights dtype for the memory budget (auto: from the config's dtype and quantization).")
@click.option("--gpu-memory", "gpu_memory", metavar="SIZE", help="GPU memory, e.g. 24GiB, 24GB, 80G or bytes.")
@click.option("--gpu-util", type=click.FloatRange(0.01, 1.0), default=0.9, show_default=True, help="Fraction of GPU memory the engine may use (vLLM's --gpu-memory-utilization).")
@click.option("--session-tokens", type=click.IntRange(min=1), help="Tokens per session, for the concurrency cliff.")
@click.option("--format", "fmt", type=FORMATS, default="text", show_default=True, help="Output format.")
def kv(model: str, kv_dtype: str, weight_dtype: str, gpu_memory: str | None, gpu_util: float, session_tokens: int | None, fmt: str) -> None:
    """The simulated KV-cache cost of MODEL, per token, per session and per GPU.

    MODEL is a local config.json or model dir, a bundled config (works offline; see the list below), or a
    Hugging Face id (fetched through transformers' AutoConfig).

    \b
    Example:
      cachelint kv Qwen/Qwen3-4B --kv-dtype fp8
      cachelint kv Qwen/Qwen3-4B --kv-dtype fp8 --weight-dtype fp8 --gpu-memory 24GiB --session-tokens 22800
    """
    from cachelint.kv import capacity, model_kv_cost
    from cachelint.kv.units import parse_size

    memory = parse_size(gpu_memory) if gpu_memory else None
    cost = model_kv_cost(model, kv_dtype=kv_dtype, weight_dtype=weight_dtype)
    report = capacity(cost, memory, session_tokens, gpu_util)
    if fmt == "json":
        print_json(report)
        return
    _render_kv(report, stdout_console())


def _render_kv(r: dict[str, Any], console: Console) -> None:
    from cachelint.kv.units import human_bytes

    console.print(f"[bold]{r['model']}[/]  ({r['attention']}, {r['layers']} layers: " + ", ".join(f"{n} {k}" for k, n in r["layer_types"].items() if n) + ")")
    console.print(f"  KV per token      {r['bytes_per_token']:,} B ({human_bytes(r['bytes_per_token'])})   "
                  f"= {'2 x ' if r['attention'] != 'mla' else ''}{r['layer_types']['full']} layers x {r['kv_heads']} kv heads x {r['head_dim']} head dim x {r['dtype_bytes']:g} B")
    if r["per_sequence_fixed_bytes"]:
        console.print(f"  fixed per session {human_bytes(r['per_sequence_fixed_bytes'])}")
    for note in r["notes"]:
        console.print(f"  [dim]{note}[/]")
    if "session_bytes" in r:
        console.print(f"  one session       {r['session_tokens']:,} tokens -> {human_bytes(r['session_bytes'])}")
    if r.get("fits") is False:
        console.print(f"  [bold red]does not fit[/]      {r['does_not_fit']}", highlight=False)
    elif "kv_budget_bytes" in r:
        console.print(f"  GPU               {human_bytes(r['gpu_memory_bytes'])} x {r['gpu_utilization']:g} - weights {human_bytes(r['weights_bytes'])} "
                      f"= KV budget {human_bytes(r['kv_budget_bytes'])}")
        console.print(f"  tokens in cache   {r['max_tokens_in_cache']:,}")
    if r.get("context_length") and "session_tokens" not in r:
        console.print(f"  [dim]context length    {r['context_length']:,} tokens[/]")
    if "max_concurrent_sessions" in r:
        console.print(f"  [bold]sessions at once  {r['max_concurrent_sessions']:,}[/] of {r['session_tokens']:,} tokens (the concurrency cliff)")
