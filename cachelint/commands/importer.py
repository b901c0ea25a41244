"""`cachelint import`."""

from __future__ import annotations

import click

from cachelint.errors import CachelintError


@click.command("import")
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--db", type=click.Path(dir_okay=False), help="SQLite store [default: the proxy's].")
@click.option("--store", "store_mode", type=click.Choice(["full", "hashes"]), default="full", show_default=True)
@click.option("--kv-model", default="Qwen/Qwen3-8B", show_default=True)
def import_(files, db, store_mode, kv_model) -> None:
    """Load recorded traffic into the store: HAR 1.2, JSONL of exchanges, or claude-trace logs.

    Each exchange goes through the proxy's own pipeline (sessions, breaks, simulator, KV, money);
    credentials in the files are dropped. Importing a file again adds nothing: an exchange the store
    already holds is recognized and skipped.

    \b
    Example:
      cachelint import session.har && cachelint report
    """
    from cachelint.record.analyze import Recorder, RecorderOptions
    from cachelint.record.importers import read
    from cachelint.record.store import Store, default_path

    batches = [(f, read(f)) for f in files]  # read everything first: a bad file stores nothing
    store = Store(db or default_path(), warn=lambda line: None)  # import says what failed itself, in one line
    if store.recovered_from is not None:
        click.echo(f"cachelint: the store {store.path} was damaged; kept it as {store.recovered_from} and started a fresh one", err=True)
    if store.write_error is not None:
        store.close()
        raise CachelintError(f"cannot write to {store.path}: {store.write_error}; nothing imported")
    recorder = Recorder(store, RecorderOptions(store_bodies=store_mode == "full", kv_model=kv_model))
    failure = None
    try:
        for name, captured in batches:
            failure = _import_file(name, captured, recorder, store)
            if failure:
                break
    finally:
        lost = store.close()  # writes what waited in memory, if the store can be written by now
    if failure or lost:
        reason = failure or f"cannot write to {store.path}: {store.write_error}"
        raise CachelintError(f"{reason}; {store.added:,} new exchanges were stored, {lost:,} could not be and the rest were not "
                             "recorded (run the import again: what is stored already is skipped)")


def _import_file(name: str, captured: list, recorder, store) -> str | None:
    """Record one file's exchanges and say how many were new. Why it stopped, or None."""
    before_added, before_duplicates = store.added, store.duplicates
    ordered = sorted(captured, key=lambda c: c.started_at)
    for index, exchange in enumerate(ordered, start=1):
        try:
            recorder.record(exchange)
        except Exception as exc:  # stop, and say exactly what was stored
            return f"{name}: exchange {index} of {len(ordered)} could not be recorded ({type(exc).__name__}: {exc})"
        if store.write_error is not None:
            return f"{name}: cannot write to {store.path}: {store.write_error} (at exchange {index} of {len(ordered)})"
    new, known = store.added - before_added, store.duplicates - before_duplicates
    click.echo(f"{name}: {len(ordered)} exchanges imported into {store.path}: {new:,} new, {known:,} already in the store")
    return None
