"""The live view: per session the requests, hit rate, tokens, wasted prefill and money, and the last break."""

from __future__ import annotations

from rich.table import Table

from cachelint.record.analyze import Totals
from cachelint.record.store import Row


def session_table(totals: dict[str, Totals], listen: str) -> Table:
    table = Table(title=f"cachelint proxy on {listen}", title_justify="left", expand=False)
    for name, justify in (("session", "left"), ("model", "left"), ("reqs", "right"), ("hit rate", "right"), ("read", "right"),
                          ("written", "right"), ("fresh", "right"), ("wasted", "right"), ("wasted $", "right"), ("last break", "left")):
        table.add_column(name, justify=justify, no_wrap=name != "last break")
    for session, t in list(totals.items())[-20:]:
        fresh = max(0, t.prompt_tokens - t.cache_read_tokens - t.cache_write_tokens)
        brk = t.last_break
        last = f"#{brk['seq']} {brk['cause']}/{brk['detail']} {brk.get('rule') or ''} {(brk.get('location') or {}).get('pointer') or ''}" if brk else ""
        table.add_row(session[-28:], t.model or "", str(t.requests), f"{t.hit_rate:.0%}", f"{t.cache_read_tokens:,}",
                      f"{t.cache_write_tokens:,}", f"{fresh:,}", f"{t.wasted_prefill_tokens:,}", f"{t.wasted_cost:.4f}", last)
    if not totals:
        table.add_row("(waiting for traffic)", "", "", "", "", "", "", "", "", "")
    return table


def exchange_line(row: Row) -> str:
    """One line per exchange, for --no-dashboard."""
    parts = [f"{row.session} #{row.seq}", str(row.status or "-"), row.model or "?"]
    if row.prompt_tokens is not None:
        parts.append(f"prompt {row.prompt_tokens} read {row.cache_read_tokens} write {row.cache_write_tokens} hit {row.hit_rate:.0%}")
    if row.brk and row.brk.get("cause") != "none":
        parts.append(f"BREAK {row.brk['cause']}/{row.brk['detail']} {row.brk.get('rule') or ''} at {row.brk['location']['pointer']} wasted {row.wasted_prefill_tokens}")
    if row.mismatch:
        parts.append(f"mismatch {row.mismatch}")
    if row.error:
        parts.append(f"error: {row.error}")
    return "  ".join(parts)
