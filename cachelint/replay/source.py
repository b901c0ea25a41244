"""What is replayed: recorded requests, in the order they were sent, each with its session.

SOURCE is the proxy's SQLite store (optionally one `--session`), or a file `cachelint import` reads (HAR,
JSONL of exchanges, claude-trace). A file goes through the same pipeline as `cachelint import`, so its
sessions are the ones the proxy would have found.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path

from cachelint.errors import CachelintError
from cachelint.prompt.model import Prompt
from cachelint.record.store import Row, Store
from cachelint.record.sessions import stored_prompt


@dataclass(slots=True)
class Recorded:
    """One request to replay."""

    session: str
    seq: int
    started_at: float
    prompt: Prompt
    cause: str | None  # the break the proxy found against the session's previous request ("none" when it continued)


def _is_store(path: Path) -> bool:
    try:
        with path.open("rb") as f:
            return f.read(16) == b"SQLite format 3\x00"
    except OSError:
        return False


def _rows(path: Path, session: str | None) -> list[Row]:
    if _is_store(path):
        store = Store(path, readonly=True)
        try:
            rows = list(store.rows(session))
            known = store.sessions()
        except sqlite3.DatabaseError as exc:
            raise CachelintError(f"{path}: not a readable cachelint store ({exc})") from None
        finally:
            store.close()
        if session and not rows:
            listed = ", ".join(known[:8]) + (" ..." if len(known) > 8 else "")
            raise CachelintError(f"{path}: no session {session!r} (sessions: {listed or 'none'})")
        return rows
    from cachelint.record.analyze import Recorder
    from cachelint.record.importers import read

    recorder = Recorder(None)
    rows = [recorder.record(captured) for captured in read(path)]
    if session:
        rows = [r for r in rows if r.session == session]
        if not rows:
            raise CachelintError(f"{path}: no session {session!r} in this file")
    return rows


def _prompt(row: Row) -> Prompt | None:
    if not row.provider:
        return None
    rebuilt = stored_prompt(row)  # the same rebuild the recorder uses to resume a stored conversation
    return rebuilt[0] if rebuilt is not None else None


def load(source: str | Path, session: str | None = None) -> list[Recorded]:
    """Every replayable request of SOURCE in the order it was sent. Rows without a body (a store written with
    `--store hashes`) or that are no request (errors before the body was read) are skipped; none left is an error."""
    path = Path(source)
    if not path.exists():
        raise CachelintError(f"{source}: no such file")
    if path.is_dir():
        raise CachelintError(f"{source}: is a directory (expected a cachelint store, HAR or JSONL file)")
    rows = _rows(path, session)
    replayable: list[Recorded] = []
    bodiless = 0
    for row in rows:
        if row.request_body is None and row.provider:
            bodiless += 1
            continue
        prompt = _prompt(row)
        if prompt is None:
            continue
        cause = (row.brk or {}).get("cause") if row.brk else None
        replayable.append(Recorded(row.session, row.seq, row.started_at, prompt, cause))
    if not replayable:
        if bodiless:
            raise CachelintError(f"{source}: recorded without bodies (--store hashes); nothing to replay")
        raise CachelintError(f"{source}: no recorded LLM requests to replay")
    return replayable
