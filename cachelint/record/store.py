"""The SQLite store of recorded exchanges and their analysis (WAL mode, one commit per exchange).

Bodies are kept (the diff and the replay need them) unless the store runs in `hashes` mode, which keeps
only hashes, token counts and the diff excerpts. Credentials never reach it: headers and URLs are cleaned
before a row is written (cachelint.record.secrets).
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from cachelint.errors import CachelintError

SCHEMA_VERSION = 1
_MIGRATIONS: dict[int, str] = {
    1: """
    CREATE TABLE IF NOT EXISTS exchanges (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        session TEXT NOT NULL,
        seq INTEGER NOT NULL,
        started_at REAL NOT NULL,
        ttft REAL,
        duration REAL,
        provider TEXT,
        model TEXT,
        method TEXT,
        url TEXT,
        status INTEGER,
        error TEXT,
        request_headers TEXT,
        request_body TEXT,
        request_sha256 TEXT,
        response_headers TEXT,
        response_body TEXT,
        streamed INTEGER,
        prompt_tokens INTEGER,
        cache_read_tokens INTEGER,
        cache_write_tokens INTEGER,
        cache_write_5m_tokens INTEGER,
        cache_write_1h_tokens INTEGER,
        output_tokens INTEGER,
        hit_rate REAL,
        estimated_prompt_tokens INTEGER,
        tokenizer TEXT,
        break TEXT,
        wasted_prefill_tokens INTEGER,
        prediction TEXT,
        mismatch TEXT,
        kv_model TEXT,
        kv_bytes INTEGER,
        wasted_kv_bytes INTEGER,
        cost REAL,
        wasted_cost REAL,
        findings TEXT
    );
    CREATE INDEX IF NOT EXISTS exchanges_session ON exchanges(session, seq);
    """,
}


def _create_private(path: Path) -> None:
    """A new store holds prompts: its folder is created 0700 and the file 0600 (SQLite gives its -wal and -shm
    files the database file's mode). An existing folder or file keeps the mode its owner gave it."""
    if not path.parent.exists():
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        pass


def default_path() -> Path:
    base = os.environ.get("CACHELINT_HOME") or os.path.join(os.environ.get("XDG_DATA_HOME") or os.path.expanduser("~/.local/share"), "cachelint")
    return Path(base) / "cachelint.db"


@dataclass(slots=True)
class Row:
    """One recorded exchange with its analysis, as stored."""

    session: str
    seq: int
    started_at: float
    provider: str | None = None
    model: str | None = None
    method: str | None = None
    url: str | None = None
    status: int | None = None
    error: str | None = None
    ttft: float | None = None
    duration: float | None = None
    request_headers: dict[str, str] = field(default_factory=dict)
    request_body: str | None = None
    request_sha256: str | None = None
    response_headers: dict[str, str] = field(default_factory=dict)
    response_body: str | None = None
    streamed: bool = False
    prompt_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    cache_write_5m_tokens: int | None = None
    cache_write_1h_tokens: int | None = None
    output_tokens: int | None = None
    hit_rate: float | None = None
    estimated_prompt_tokens: int | None = None
    tokenizer: str | None = None
    brk: dict[str, Any] | None = None
    wasted_prefill_tokens: int = 0
    prediction: dict[str, Any] | None = None
    mismatch: str | None = None
    kv_model: str | None = None
    kv_bytes: int | None = None
    wasted_kv_bytes: int | None = None
    cost: float | None = None
    wasted_cost: float | None = None
    findings: list[dict[str, Any]] = field(default_factory=list)
    id: int | None = None


_JSON_COLUMNS = {"request_headers", "response_headers", "break", "prediction", "findings"}


def _to_columns(row: Row) -> dict[str, Any]:
    data = asdict(row)
    data["break"] = data.pop("brk")
    data.pop("id")
    data["streamed"] = int(row.streamed)
    return {k: (json.dumps(v, ensure_ascii=False) if k in _JSON_COLUMNS and v is not None else v) for k, v in data.items()}


def _from_columns(record: sqlite3.Row) -> Row:
    data = dict(record)
    for key in _JSON_COLUMNS:
        if data.get(key) is not None:
            data[key] = json.loads(data[key])
    data["brk"] = data.pop("break")
    data["streamed"] = bool(data.get("streamed"))
    names = {f.name for f in fields(Row)}
    return Row(**{k: v for k, v in data.items() if k in names})


class Store:
    """A thread-safe handle on the database; every `add` is its own transaction."""

    def __init__(self, path: str | Path, *, readonly: bool = False) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        if readonly and not self.path.exists():
            raise CachelintError(f"{self.path}: no such store (record traffic with `cachelint proxy` or `cachelint import` first)")
        if not readonly:
            _create_private(self.path)
        self._db = self._open(readonly)

    def _open(self, readonly: bool) -> sqlite3.Connection:
        try:
            uri = f"file:{self.path}?mode=ro" if readonly else f"file:{self.path}"
            db = sqlite3.connect(uri, uri=True, check_same_thread=False, timeout=30)
            db.row_factory = sqlite3.Row
            if not readonly:
                db.execute("PRAGMA journal_mode=WAL")
                db.execute("PRAGMA synchronous=NORMAL")
                self._migrate(db)
            else:
                db.execute("SELECT count(*) FROM exchanges").fetchone()
            return db
        except sqlite3.DatabaseError as exc:
            if readonly:
                raise CachelintError(f"{self.path}: not a readable cachelint store ({exc})") from None
            return self._replace_corrupt(exc)

    def _replace_corrupt(self, exc: Exception) -> sqlite3.Connection:
        """Keep the damaged file aside (never delete recorded data) and start a fresh store."""
        aside = self.path.with_name(f"{self.path.name}.corrupt-{time.strftime('%Y%m%d-%H%M%S')}")
        os.replace(self.path, aside)
        for suffix in ("-wal", "-shm"):
            sidecar = Path(str(self.path) + suffix)
            if sidecar.exists():
                os.replace(sidecar, Path(str(aside) + suffix))
        self.recovered_from = aside
        _create_private(self.path)
        db = sqlite3.connect(self.path, check_same_thread=False, timeout=30)
        db.row_factory = sqlite3.Row
        db.execute("PRAGMA journal_mode=WAL")
        self._migrate(db)
        return db

    @staticmethod
    def _migrate(db: sqlite3.Connection) -> None:
        db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)")
        found = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        version = int(found[0]) if found else 0
        if version > SCHEMA_VERSION:
            raise CachelintError(f"the store was written by a newer cachelint (schema {version}; this one knows {SCHEMA_VERSION})")
        for target in range(version + 1, SCHEMA_VERSION + 1):
            db.executescript(_MIGRATIONS[target])
            db.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", (str(target),))
        db.commit()

    def add(self, row: Row) -> int:
        columns = _to_columns(row)
        names = ", ".join(f'"{k}"' for k in columns)
        marks = ", ".join("?" for _ in columns)
        with self._lock:
            cursor = self._db.execute(f"INSERT INTO exchanges ({names}) VALUES ({marks})", list(columns.values()))
            self._db.commit()
            row.id = cursor.lastrowid
            return row.id  # type: ignore[return-value]

    def rows(self, session: str | None = None) -> Iterator[Row]:
        query = "SELECT * FROM exchanges" + (" WHERE session = ?" if session else "") + " ORDER BY started_at, id"
        with self._lock:
            records = self._db.execute(query, (session,) if session else ()).fetchall()
        for record in records:
            yield _from_columns(record)

    def sessions(self) -> list[str]:
        with self._lock:
            return [r[0] for r in self._db.execute("SELECT session FROM exchanges GROUP BY session ORDER BY min(started_at)")]

    def last_seq(self, session: str) -> int:
        """The highest sequence number recorded for a session (0 when it has none)."""
        with self._lock:
            found = self._db.execute("SELECT max(seq) FROM exchanges WHERE session = ?", (session,)).fetchone()
        return int(found[0] or 0)

    def count(self) -> int:
        with self._lock:
            return self._db.execute("SELECT count(*) FROM exchanges").fetchone()[0]

    def close(self) -> None:
        with self._lock:
            self._db.close()
