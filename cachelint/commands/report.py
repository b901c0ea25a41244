"""`cachelint report`."""

from __future__ import annotations


import click

from cachelint.errors import CachelintError


@click.command()
@click.option("--db", type=click.Path(dir_okay=False), help="SQLite store [default: the proxy's].")
@click.option("--session", help="Only this session.")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "html"]), default="text", show_default=True)
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Write to this file instead of standard output.")
def report(db, session, fmt, output) -> None:
    """Hit rate, tokens, money and every cache break of the recorded sessions.

    \b
    Example:
      cachelint report
      cachelint report --format html -o cachelint.html
    """
    from cachelint.record.report import build_report, dumps, render_html, render_text
    from cachelint.record.store import Store, default_path

    store = Store(db or default_path(), readonly=True)
    data = build_report(store, session)
    if session and not data["sessions"]:
        raise CachelintError(f"no session {session!r} in {store.path}")
    text = dumps(data) if fmt == "json" else render_html(data) if fmt == "html" else "\n".join(render_text(data))
    if output:
        from pathlib import Path

        Path(output).write_text(text + "\n", encoding="utf-8")
    else:
        click.echo(text)
