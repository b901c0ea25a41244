"""The live view of `cachelint proxy`: per session the requests, hit rate, tokens, wasted prefill and money, a
totals row, a scrolling log of the latest requests with each break's cause, the quit keys, and a summary printed
when the proxy stops.

Everything shown that came off the wire (session ids, model names, causes, pointers, error text) goes through
`clean` and into rich `Text`, never into markup: a model named `[bold red]x` or one with terminal control
characters prints as plain text. Colour comes from rich styles, so NO_COLOR (rich honours it) turns it off.
"""

from __future__ import annotations

import os
import sys
import threading
import unicodedata
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

from rich.console import Console, ConsoleOptions, RenderResult
from rich.table import Table
from rich.text import Text

from cachelint.record.analyze import Totals
from cachelint.record.store import Row

LOG_LINES = 12
SESSIONS_SHOWN = 20
WIDE = 140  # below this many columns the table leaves out written, fresh and model
NARROW_HIDES = frozenset({"model", "written", "fresh"})
QUIT_HINT = "q or Ctrl+C: stop the proxy (every exchange already received is recorded first)"


def clean(value: Any, limit: int = 200) -> str:
    """Text from the wire made safe to print: control and format characters (escape sequences, bidi overrides,
    newlines) become a visible `?`, and the text is cut to `limit` characters."""
    text = "" if value is None else str(value)
    safe = "".join("?" if unicodedata.category(c) in ("Cc", "Cf") else c for c in text)
    return safe if len(safe) <= limit else safe[: limit - 1] + "…"


def usd(value: float | None) -> str:
    return "unknown" if value is None else f"${value:,.4f}"


def priced(value: float, t: Totals) -> str:
    """Money of a session: "unknown" when none of its requests had a price, "≥$x" when only some had."""
    unpriced = getattr(t, "unpriced", 0)
    if not unpriced:
        return usd(value)
    return "unknown" if unpriced >= t.requests - t.errors and not value else f"≥{usd(value)}"


def _cause(brk: dict[str, Any] | None) -> str:
    if not brk or brk.get("cause") in (None, "none"):
        return ""
    pointer = (brk.get("location") or {}).get("pointer") or ""
    return " ".join(p for p in (f"{brk['cause']}/{brk.get('detail')}", brk.get("rule") or "", pointer) if p)


def _sum(totals: Iterable[Totals]) -> Totals:
    whole = Totals()
    for t in totals:
        whole.requests += t.requests
        whole.prompt_tokens += t.prompt_tokens
        whole.cache_read_tokens += t.cache_read_tokens
        whole.cache_write_tokens += t.cache_write_tokens
        whole.output_tokens += t.output_tokens
        whole.wasted_prefill_tokens += t.wasted_prefill_tokens
        whole.cost += t.cost
        whole.wasted_cost += t.wasted_cost
        whole.errors += t.errors
        whole.unpriced += getattr(t, "unpriced", 0)
        for kind, n in (getattr(t, "agreements", None) or {}).items():
            whole.agreements[kind] = whole.agreements.get(kind, 0) + n
    return whole


def session_table(totals: dict[str, Totals], listen: str, width: int | None = None) -> Table:
    """The sessions table with a totals row; on a terminal narrower than WIDE columns the less telling columns
    are left out so that the numbers are never cut."""
    table = Table(title=Text(f"cachelint proxy on {clean(listen)}", style="bold"), title_justify="left", expand=False,
                  show_footer=bool(totals), footer_style="bold")
    snapshot = list(totals.items())
    whole = _sum(t for _, t in snapshot)
    fresh = max(0, whole.prompt_tokens - whole.cache_read_tokens - whole.cache_write_tokens)
    footer = {"session": f"total ({len(snapshot)} session{'' if len(snapshot) == 1 else 's'})", "reqs": f"{whole.requests:,}",
              "hit rate": f"{whole.hit_rate:.0%}", "read": f"{whole.cache_read_tokens:,}", "written": f"{whole.cache_write_tokens:,}",
              "fresh": f"{fresh:,}", "wasted": f"{whole.wasted_prefill_tokens:,}", "wasted $": priced(whole.wasted_cost, whole),
              "cost $": priced(whole.cost, whole), "last break": f"{whole.errors:,} error{'' if whole.errors == 1 else 's'}" if whole.errors else ""}
    hidden = NARROW_HIDES if width is not None and width < WIDE else frozenset()
    names = [name for name in ("session", "model", "reqs", "hit rate", "read", "written", "fresh", "wasted", "wasted $", "cost $", "last break")
             if name not in hidden]
    for name in names:
        text_column = name in ("session", "model", "last break")
        table.add_column(name, justify="left" if text_column else "right", no_wrap=not text_column,
                         overflow="fold" if name == "last break" else "ellipsis", footer=footer.get(name, ""))
    for session, t in snapshot[-SESSIONS_SHOWN:]:
        fresh = max(0, t.prompt_tokens - t.cache_read_tokens - t.cache_write_tokens)
        brk = t.last_break
        last = f"#{brk['seq']} {_cause(brk)}" if brk else ""
        hit_style = "green" if t.hit_rate >= 0.8 else "yellow" if t.hit_rate >= 0.5 else "red"
        cells = {"session": Text(clean(session[-28:])), "model": Text(clean(t.model or "", 40)), "reqs": str(t.requests),
                 "hit rate": Text(f"{t.hit_rate:.0%}", style=hit_style), "read": f"{t.cache_read_tokens:,}",
                 "written": f"{t.cache_write_tokens:,}", "fresh": f"{fresh:,}",
                 "wasted": Text(f"{t.wasted_prefill_tokens:,}", style="red" if t.wasted_prefill_tokens else ""),
                 "wasted $": priced(t.wasted_cost, t), "cost $": priced(t.cost, t), "last break": Text(clean(last), style="red")}
        table.add_row(*(cells[name] for name in names))
    if len(snapshot) > SESSIONS_SHOWN:
        table.caption = f"the {SESSIONS_SHOWN} latest of {len(snapshot)} sessions; the totals row counts them all"
    if not snapshot:
        table.add_row("(waiting for traffic)", *[""] * (len(names) - 1))
    return table


def log_text(row: Row) -> Text:
    """One request in the scrolling log: time, session, model, usage, and the break's cause or the error."""
    import time

    line = Text()
    line.append(time.strftime("%H:%M:%S ", time.localtime(row.started_at)), style="dim")
    line.append(f"{clean(row.session, 40)} #{row.seq} ")
    line.append(f"{clean(row.model or '?', 40)} ", style="cyan")
    if row.prompt_tokens is not None:
        line.append(f"prompt {row.prompt_tokens:,} read {row.cache_read_tokens or 0:,} hit {row.hit_rate or 0:.0%} ")
    cause = _cause(row.brk)
    if cause:
        line.append(f"BREAK {clean(cause)} ", style="bold red")
        line.append(f"{row.wasted_prefill_tokens:,} tokens prefilled again ({usd(row.wasted_cost)}) ", style="red")
        place = _place(row.brk)
        if place:
            line.append(f"-> {clean(place, 60)} ", style="bold")
    if row.mismatch:
        line.append(f"usage vs simulator: {clean(row.mismatch)} ", style="yellow")
    if row.error or (row.status or 0) >= 400:
        line.append(f"error {row.status or '-'}: {clean(row.error or 'HTTP error')}", style="bold yellow")
    return line


class Dashboard:
    """The live view's state: the recorder's totals plus the latest requests. `on_row` is the addon's hook
    (called from the recorder's worker thread); `render` is what rich Live shows."""

    def __init__(self, totals: dict[str, Totals], listen: str, lines: int = LOG_LINES) -> None:
        self.totals = totals
        self.listen = listen
        self.log: deque[Text] = deque(maxlen=lines)
        self.breaks = 0
        self._lock = threading.Lock()

    def on_row(self, row: Row) -> None:
        with self._lock:
            self.log.append(log_text(row))
            self.breaks += 1 if _cause(row.brk) else 0

    def summary(self, db: str) -> list[str]:
        return summary_lines(self.totals, db, self.breaks)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        """Rendered at the terminal's width on every refresh (pass the Dashboard itself to rich Live); the log's
        lines are wrapped here, so a console that does not wrap (soft_wrap) still shows them whole."""
        width = options.max_width
        with self._lock:
            lines = list(self.log)
        yield session_table(self.totals, self.listen, width)
        yield Text("latest requests", style="bold")
        if not lines:
            yield Text("(no requests yet)", style="dim")
        for line in lines:
            yield from line.wrap(console, width)
        yield Text(QUIT_HINT, style="dim")


def summary_lines(totals: dict[str, Totals], db: str, breaks: int | None = None) -> list[str]:
    """What the proxy recorded, printed once when it stops (plain text: it stays in the scrollback). `breaks`:
    the number of breaks seen, where the caller counted them (the Dashboard does)."""
    snapshot = list(totals.values())
    whole = _sum(snapshot)
    if not whole.requests:
        return [f"cachelint proxy stopped: no LLM requests recorded (store: {db})"]
    return [f"cachelint proxy stopped: {whole.requests:,} request{'' if whole.requests == 1 else 's'} in {len(snapshot):,} "
            f"session{'' if len(snapshot) == 1 else 's'}, hit rate {whole.hit_rate:.0%}, {whole.wasted_prefill_tokens:,} tokens "
            f"prefilled again ({priced(whole.wasted_cost, whole)}), cost {priced(whole.cost, whole)}"
            + (f", {whole.errors:,} error{'' if whole.errors == 1 else 's'}" if whole.errors else "")
            + (f", {breaks:,} break{'' if breaks == 1 else 's'}" if breaks is not None else "")
            + (f"; cachelint and the provider: {', '.join(f'{n} {kind}' for kind, n in sorted(whole.agreements.items()))}"
               if whole.agreements else ""),
            f"  details: cachelint report --db {db}   (or --format html -o report.html)"]


class QuitKey:
    """Stops the proxy when `q` is pressed on an interactive terminal (Ctrl+C works everywhere). Reads standard
    input in cbreak mode on its own thread and puts the terminal back as it was on `stop`."""

    def __init__(self, on_quit: Callable[[], None], stream=None) -> None:
        self.on_quit = on_quit
        self.stream = stream if stream is not None else sys.stdin
        self._saved = None
        self._thread: threading.Thread | None = None
        self._stopped = threading.Event()

    def start(self) -> bool:
        try:
            import termios
            import tty

            fd = self.stream.fileno()
            if not os.isatty(fd):
                return False
            self._saved = termios.tcgetattr(fd)
            tty.setcbreak(fd)
        except (ImportError, OSError, ValueError, AttributeError):
            return False
        self._thread = threading.Thread(target=self._read, name="cachelint-quit-key", daemon=True)
        self._thread.start()
        return True

    def _read(self) -> None:
        import select

        fd = self.stream.fileno()
        while not self._stopped.is_set():
            ready, _, _ = select.select([fd], [], [], 0.2)
            if ready:
                key = os.read(fd, 1)
                if key in (b"q", b"Q") or not key:
                    self.on_quit()
                    return

    def stop(self) -> None:
        self._stopped.set()
        if self._saved is not None:
            import termios

            termios.tcsetattr(self.stream.fileno(), termios.TCSADRAIN, self._saved)
            self._saved = None


def _place(brk: dict | None) -> str | None:
    """The line of code a break was traced to (`cachelint proxy --source DIR`), as file:line."""
    places = (brk or {}).get("source") or []
    return f"{places[0].get('file')}:{places[0].get('line')}" if places else None


def exchange_line(row: Row) -> str:
    """One line per exchange, for --no-dashboard (plain text, wire values cleaned)."""
    parts = [f"{clean(row.session)} #{row.seq}", str(row.status or "-"), clean(row.model or "?")]
    if row.prompt_tokens is not None:
        parts.append(f"prompt {row.prompt_tokens} read {row.cache_read_tokens} write {row.cache_write_tokens} hit {(row.hit_rate or 0):.0%}")
    cause = _cause(row.brk)
    if cause:
        parts.append(f"BREAK {clean(cause)} wasted {row.wasted_prefill_tokens}")
        place = _place(row.brk)
        if place:
            parts.append(f"-> {clean(place)}")
    if row.mismatch:
        parts.append(f"mismatch {clean(row.mismatch)}")
    if row.error:
        parts.append(f"error: {clean(row.error)}")
    return "  ".join(parts)
