"""The replay as a rich table (per request, then the variants side by side) or the JSON contract."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from cachelint.replay.run import ORIGINAL, ReplayResult, Summary
from cachelint.replay.sweep import SweepResult

MAX_ROWS = 200


def _ms(value: float | None) -> str:
    return f"{value:,.0f}" if value is not None else "-"


def _short(session: str, width: int = 14) -> str:
    """The conversation part of a session id (`sess-ts/claude-sonnet-4-5` -> `sess-ts`), cut to fit."""
    name = session.rsplit("/", 1)[0] if "/" in session else session
    return name if len(name) <= width else name[: width - 1] + "…"


def render_text(result: ReplayResult, console: Console) -> None:
    cache = result.cache
    blocks = f"{cache.num_blocks:,} blocks" if cache.num_blocks else "block count unknown"
    console.print(f"[bold]replay[/bold] on {result.base_url} model {result.model}: block size {cache.block_size}, {blocks}, hash {cache.hash_algo or '?'}; "
                  f"Anthropic requests {'as recorded on /v1/messages' if result.api == 'messages' else 'as chat requests'}")
    original = result.results[ORIGINAL]
    if len(original) <= MAX_ROWS:
        table = Table(title="original traffic, request by request", title_justify="left", box=None, pad_edge=False, header_style="bold")
        for name, justify in (("#", "right"), ("session", "left"), ("seq", "right"), ("recorded break", "left"), ("prompt", "right"),
                              ("cached", "right"), ("predicted", "right"), ("", "center"), ("TTFT ms", "right")):
            table.add_column(name, justify=justify, no_wrap=name in ("session", "recorded break"))  # type: ignore[arg-type]
        for r in original:
            mark = "[green]=[/green]" if r.agrees else "[red]≠[/red]"
            table.add_row(
                str(r.index), _short(r.session), str(r.seq), r.cause if r.cause not in (None, "none") else "",
                f"{r.prompt_tokens:,}" if r.prompt_tokens is not None else "-",
                f"{r.cached_tokens:,}" if r.cached_tokens is not None else ("[red]error[/red]" if r.error else "-"),
                f"{r.predicted_cached_tokens:,}" if r.predicted_cached_tokens is not None else "-",
                mark, _ms(r.ttft_ms),
            )
        console.print(table)
    else:
        console.print(f"{len(original):,} requests (per-request rows in --format json)")
    summary = Table(title="measured on the engine", title_justify="left", box=None, pad_edge=False, header_style="bold")
    for name in ("variant", "requests", "prefill", "change", "hit rate", "TTFT p50", "TTFT p99", "agree"):
        summary.add_column(name, justify="left" if name == "variant" else "right", no_wrap=name == "variant")
    base = result.summaries[ORIGINAL]
    for variant, s in result.summaries.items():
        summary.add_row(variant, f"{s.requests:,}" + (f" ({s.errors} failed)" if s.errors else ""), f"{s.prefill_tokens:,}",
                        _delta(s, base) if variant != ORIGINAL else "", f"{s.hit_rate:.1%}", _ms(s.ttft_p50_ms) + " ms", _ms(s.ttft_p99_ms) + " ms",
                        f"{s.agreement:.0%}")
    console.print(summary)
    comparable = [v for v, s in result.summaries.items() if v != ORIGINAL and not s.errors] if not base.errors else []
    best = min(comparable, key=lambda v: result.summaries[v].prefill_tokens, default=None)
    if best is not None and base.prefill_tokens:
        s = result.summaries[best]
        saved = base.prefill_tokens - s.prefill_tokens
        console.print(f"{best}: {saved:,} fewer prefill tokens than the recorded traffic ({saved / base.prefill_tokens:.0%}); "
                      f"TTFT p99 {_ms(base.ttft_p99_ms)} -> {_ms(s.ttft_p99_ms)} ms")
    if any(s.errors for s in result.summaries.values()):
        console.print("[yellow]Failed requests are left out of the prefill totals: a variant with failures is not compared.[/yellow]")
    for r in result.disagreements[:20]:
        console.print(f"[red]request {r.index}[/red] ({r.variant}, {r.session} #{r.seq}): {r.disagreement()}")
    more = len(result.disagreements) - 20
    if more > 0:
        console.print(f"... and {more} more")
    if result.disagreements and result.concurrency > 1:
        console.print(f"[yellow]With --concurrency {result.concurrency} requests race inside the engine's scheduler, so the "
                      "prediction is approximate; replay in recorded order (--concurrency 1) to check it exactly.[/yellow]")


def _delta(s: Summary, base: Summary) -> str:
    if not base.prefill_tokens or s.errors or base.errors:
        return "n/a" if (s.errors or base.errors) else ""
    change = (s.prefill_tokens - base.prefill_tokens) / base.prefill_tokens
    return f"{change:+.0%}"


def check_lines(result: ReplayResult) -> list[str]:
    """One line per request whose measured reuse differs from the prediction (for --check)."""
    return [f"request {r.index} ({r.variant}, session {r.session} #{r.seq}): {r.disagreement()}" for r in result.disagreements]


def render_sweep_text(result: SweepResult, console: Console) -> None:
    """One row per session count, the cliff marked, then the knee next to `kv`'s prediction."""
    cache, kv = result.cache, result.kv
    console.print(f"[bold]session sweep[/bold] on {result.base_url} model {result.model}: {kv.pool_blocks:,} usable blocks of "
                  f"{cache.block_size} tokens = {kv.pool_tokens:,} tokens; {result.recorded_sessions} recorded session"
                  f"{'s' if result.recorded_sessions != 1 else ''}, {kv.session_tokens:,} tokens each at their longest")
    table = Table(box=None, pad_edge=False, header_style="bold")
    for name in ("N", "requests", "hit rate", "sim.", "prefill", "TTFT p50", "p99", "preempt", "evicted", "sim.", ""):
        table.add_column(name, justify="right" if name else "left", no_wrap=True)
    knee, fall = result.knee()
    collapse = result.collapse()
    for p in result.points:
        mark = "" if p.fits else "[yellow]> kv[/yellow]"
        if p.sessions == fall:
            mark += " [red]reuse lost[/red]"
        if p.sessions == collapse:
            mark += " [bold red]cliff[/bold red]"
        table.add_row(
            str(p.sessions), f"{p.requests:,}" + (f" ({p.errors} failed)" if p.errors else ""), f"{p.hit_rate:.1%}", f"{p.predicted_hit_rate:.1%}",
            f"{p.prefill_tokens:,}", _ms(p.ttft_p50_ms) + " ms", _ms(p.ttft_p99_ms) + " ms",
            _count(p.preemptions), _count(p.engine_evictions), f"{p.predicted_evictions:,}", mark,
        )
    console.print(table)
    model = f"{kv.model}, {kv.bytes_per_token:,} B/token" if kv.model else "pool tokens / session tokens"
    console.print(f"kv ({model}): {kv.max_concurrent_sessions} sessions of {kv.session_tokens:,} tokens fit "
                  f"({kv.block_bound} in whole blocks of {cache.block_size})")
    if knee is None:
        console.print(f"measured: no reuse lost up to {result.points[-1].sessions} sessions")
    else:
        console.print(f"measured: every session's prefix reused up to {knee} sessions (the knee); at {fall} the hit rate falls to "
                      f"{next(p.hit_rate for p in result.points if p.sessions == fall):.1%}"
                      + (f", and collapses at {collapse} ({next(p.hit_rate for p in result.points if p.sessions == collapse):.1%})" if collapse else ""))
    console.print("[dim]sim.: cachelint's simulator (hit rate, evicted blocks); > kv: more sessions than kv says the pool holds[/dim]")
    if all(p.engine_evictions is None for p in result.points):
        console.print("[dim]evicted: start vLLM with --kv-cache-metrics --kv-cache-metrics-sample 1 for the engine's count[/dim]")


def _count(value: float | None) -> str:
    return f"{value:,.0f}" if value is not None else "-"
