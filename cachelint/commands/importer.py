"""`cachelint import`."""

from __future__ import annotations


import click



@click.command("import")
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--db", type=click.Path(dir_okay=False), help="SQLite store [default: the proxy's].")
@click.option("--store", "store_mode", type=click.Choice(["full", "hashes"]), default="full", show_default=True)
@click.option("--kv-model", default="Qwen/Qwen3-8B", show_default=True)
def import_(files, db, store_mode, kv_model) -> None:
    """Load recorded traffic into the store: HAR 1.2, JSONL of exchanges, or claude-trace logs.

    Each exchange goes through the proxy's own pipeline (sessions, breaks, simulator, KV, money);
    credentials in the files are dropped.

    \b
    Example:
      cachelint import session.har && cachelint report
    """
    from cachelint.record.analyze import Recorder, RecorderOptions
    from cachelint.record.importers import read
    from cachelint.record.store import Store, default_path

    batches = [(f, read(f)) for f in files]  # read everything first: a bad file stores nothing
    store = Store(db or default_path())
    recorder = Recorder(store, RecorderOptions(store_bodies=store_mode == "full", kv_model=kv_model))
    for name, captured in batches:
        for exchange in sorted(captured, key=lambda c: c.started_at):
            recorder.record(exchange)
        click.echo(f"{name}: {len(captured)} exchanges imported into {store.path}")
