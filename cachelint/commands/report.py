"""`cachelint report`."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from pathlib import Path

import click

from cachelint.errors import CachelintError

_AGO = re.compile(r"^(\d+)\s*([smhdw])$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_time(text: str | None, option: str, now: datetime | None = None) -> float | None:
    """A point in time for --since / --until: an ISO 8601 date or date-time (UTC unless it names an offset), or
    an age such as 30m, 24h, 7d ("that long ago")."""
    if not text:
        return None
    ago = _AGO.match(text.strip())
    if ago:
        return ((now or datetime.now(timezone.utc)) - timedelta(**{_UNITS[ago.group(2)]: int(ago.group(1))})).timestamp()
    try:
        at = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise CachelintError(f"{option} {text!r}: not a date (use 2026-11-29, 2026-11-29T10:30, or an age such as 24h or 7d)") from None
    if at.tzinfo is None:
        at = at.replace(tzinfo=timezone.utc)
    return at.timestamp()


def write_output(output: str, text: str) -> None:
    """Write the report where -o says, and say so on standard error; a folder that does not exist is one clear error."""
    path = Path(output)
    if not path.parent.is_dir():
        raise CachelintError(f"cannot write {output}: the folder {path.parent} does not exist")
    try:
        path.write_text(text + "\n", encoding="utf-8")
    except OSError as exc:
        raise CachelintError(f"cannot write {output}: {exc.strerror or exc}") from None
    click.echo(f"cachelint: wrote {path} ({path.stat().st_size:,} bytes)", err=True)


@click.command()
@click.option("--db", type=click.Path(dir_okay=False), help="SQLite store [default: the proxy's].")
@click.option("--session", help="Only this session (and its side calls).")
@click.option("--model", help="Only requests to this model.")
@click.option("--since", help="Only requests from this time on: 2026-11-29, 2026-11-29T10:30 (UTC), or an age: 24h, 7d.")
@click.option("--until", help="Only requests before this time (same forms as --since).")
@click.option("--source", "source_dir", type=click.Path(file_okay=False), help="The application's source tree: name the line that caused each break, and what it cost.")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "html"]), default="text", show_default=True)
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Write to this file instead of standard output.")
def report(db, session, model, since, until, source_dir, fmt, output) -> None:
    """Hit rate, tokens, money and every cache break of the recorded sessions, over time.

    \b
    Example:
      cachelint report
      cachelint report --since 24h --model claude-sonnet-4-5
      cachelint report --format html -o cachelint.html
      cachelint report --source src/     (each break's line of code, places ranked by what they cost)
    """
    from cachelint.record.render_html import render_html
    from cachelint.record.render_text import render_text
    from cachelint.record.report import Filters, build_report, dumps
    from cachelint.record.store import Store, default_path

    filters = Filters(session=session, model=model, since=parse_time(since, "--since"), until=parse_time(until, "--until"))
    if filters.since is not None and filters.until is not None and filters.until <= filters.since:
        raise CachelintError("--until must be later than --since")
    if output and not Path(output).parent.is_dir():
        raise CachelintError(f"cannot write {output}: the folder {Path(output).parent} does not exist")
    store = Store(db or default_path(), readonly=True)
    data = build_report(store, filters=filters)
    if session and not data["sessions"]:
        raise CachelintError(f"no session {session!r} in {store.path}" + (" within the filters" if model or since or until else ""))
    if source_dir:
        from cachelint.link import annotate

        annotate(data, Path(source_dir))
    text = dumps(data) if fmt == "json" else render_html(data) if fmt == "html" else "\n".join(render_text(data))
    if output:
        write_output(output, text)
    else:
        click.echo(text)
