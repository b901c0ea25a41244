"""The SQLite store of recorded exchanges and their analysis (WAL mode, one commit per exchange).

Bodies are kept (the diff and the replay need them) unless the store runs in `hashes` mode, which keeps
only hashes, token counts and the diff excerpts. Credentials never reach it: headers and URLs are cleaned
before a row is written (cachelint.record.secrets).

What can go wrong with a file on a disk, and what the store does (docs/reliability.md):
- another process holds it (a write transaction, exclusive locking mode): retry with backoff for a bounded
  time, then one line that says it is locked and, where /proc/locks tells, by which process. A locked store is
  never taken for a damaged one.
- a file that is not a cachelint store (another SQLite database, not SQLite at all): refused, never renamed or
  written. Only a store that `PRAGMA integrity_check` fails is set aside (`*.corrupt-*`) for a fresh one.
- a full disk, a read-only file or file system: said at open (a probe write) and on every failed write; the
  rows that could not be written are kept in memory up to a bound and written on the next add or at close.
- the same exchange twice (an import run again): each row has an `exchange_key`, unique, so it is stored once.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from cachelint.errors import CachelintError

SCHEMA_VERSION = 2
SQLITE_MAGIC = b"SQLite format 3\x00"
LOCK_WAIT_S = 10.0  # how long a locked store is retried before giving up (CACHELINT_LOCK_WAIT overrides)
BUSY_TIMEOUT_S = 0.2  # SQLite's own wait per attempt; the backoff loop around it does the rest
MAX_PENDING_ROWS = 10_000
MAX_PENDING_BYTES = 256 * 1024 * 1024
_OWN_TABLES = {"exchanges", "meta", "sqlite_sequence"}
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
    2: """
    ALTER TABLE exchanges ADD COLUMN exchange_key TEXT;
    CREATE UNIQUE INDEX IF NOT EXISTS exchanges_key ON exchanges(exchange_key);
    CREATE INDEX IF NOT EXISTS exchanges_time ON exchanges(started_at, id);
    CREATE INDEX IF NOT EXISTS exchanges_session_time ON exchanges(session, started_at, id);
    """,
}

# What identifies one exchange, whatever the session it was put in and whether bodies are kept: the request's
# bytes, when it started, and what came back (status, usage, timing).
_KEY_FIELDS = ("request_sha256", "started_at", "method", "url", "status", "error", "ttft", "duration", "prompt_tokens",
               "cache_read_tokens", "cache_write_tokens", "output_tokens")


def exchange_key(values: dict[str, Any]) -> str | None:
    """The stable identity of an exchange (None without a request hash: nothing to tell it by)."""
    if not values.get("request_sha256"):
        return None
    material = json.dumps([values.get(k) for k in _KEY_FIELDS])
    return hashlib.sha256(material.encode("utf-8", "backslashreplace")).hexdigest()


def _create_private(path: Path) -> None:
    """A new store holds prompts: its folder is created 0700 and the file 0600 (SQLite gives its -wal and -shm
    files the database file's mode). An existing folder or file keeps the mode its owner gave it."""
    try:
        if not path.parent.exists():
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        pass
    except OSError as exc:
        if path.exists():
            return  # it is there: whether it can be written is the probe's to say
        raise CachelintError(f"cannot create the store {path}: {exc.strerror or exc}") from None


def _refuse_foreign_file(path: Path) -> None:
    """A file that is not an SQLite database is someone else's: never rename or write it."""
    try:
        with open(path, "rb") as f:
            head = f.read(len(SQLITE_MAGIC))
    except FileNotFoundError:
        return
    except OSError as exc:
        raise CachelintError(f"{path}: cannot read the store: {exc.strerror or exc}") from None
    if head and head != SQLITE_MAGIC:
        raise CachelintError(f"{path}: not a cachelint store (not an SQLite database); left untouched: pass another --db")


def _error_name(exc: BaseException) -> str:
    """SQLite's error code name (SQLITE_BUSY, SQLITE_FULL, ...), from the exception or its message."""
    name = getattr(exc, "sqlite_errorname", None)
    if name:
        return str(name)
    text = str(exc).lower()
    for needle, code in (("locked", "SQLITE_BUSY"), ("disk is full", "SQLITE_FULL"), ("readonly", "SQLITE_READONLY"),
                         ("malformed", "SQLITE_CORRUPT"), ("not a database", "SQLITE_NOTADB"), ("disk i/o", "SQLITE_IOERR")):
        if needle in text:
            return code
    return "SQLITE_ERROR"


def _is_busy(exc: BaseException) -> bool:
    return _error_name(exc).startswith(("SQLITE_BUSY", "SQLITE_LOCKED"))


def _is_damage(exc: BaseException) -> bool:
    return _error_name(exc).startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB"))


def _is_write_failure(exc: BaseException) -> bool:
    return _error_name(exc).startswith(("SQLITE_FULL", "SQLITE_READONLY", "SQLITE_IOERR", "SQLITE_CANTOPEN", "SQLITE_PERM"))


def lock_holders(path: Path) -> list[tuple[int, str]]:
    """(pid, command) of the other processes holding a POSIX lock on the store or its -wal / -shm (Linux:
    /proc/locks), so a locked store can name who holds it without lsof."""
    wanted = set()
    for candidate in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        try:
            st = candidate.stat()
        except OSError:
            continue
        wanted.add((os.major(st.st_dev), os.minor(st.st_dev), st.st_ino))
    try:
        lines = Path("/proc/locks").read_text().splitlines()
    except OSError:
        return []
    holders: dict[int, str] = {}
    for line in lines:
        parts = line.split()
        if len(parts) < 6 or parts[1] == "->":
            continue
        try:
            pid = int(parts[4])
            major, minor, inode = parts[5].split(":")
            key = (int(major, 16), int(minor, 16), int(inode))
        except ValueError:
            continue
        if key in wanted and pid != os.getpid() and pid not in holders:
            try:
                holders[pid] = Path(f"/proc/{pid}/comm").read_text().strip()
            except OSError:
                holders[pid] = "?"
    return sorted(holders.items())


def locked_reason(path: Path) -> str:
    holders = lock_holders(path)
    if not holders:
        return "locked: another process holds a lock on it"
    who = "; ".join(f"pid {pid}, {name}" for pid, name in holders)
    return f"locked: another process holds a lock on it ({who})"


def failure_reason(path: Path, exc: BaseException) -> str:
    """A write failure in a user's words."""
    name = _error_name(exc)
    if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")):
        return locked_reason(path)
    if name.startswith("SQLITE_FULL"):
        return "disk full"
    if name.startswith(("SQLITE_READONLY", "SQLITE_PERM", "SQLITE_CANTOPEN")):
        return "read-only (the file, its folder or its file system)"
    if name.startswith("SQLITE_IOERR"):
        return f"I/O error ({exc}; a full disk or a file size limit?)"
    return str(exc)


def _exchanges(n: int) -> str:
    return f"{n:,} exchange{'s' if n != 1 else ''}"


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _storable(value: Any) -> Any:
    """A string SQLite can take: a lone surrogate (from JSON's \\ud800 or a header that was not UTF-8) is kept
    escaped rather than making the whole row fail."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return value.encode("utf-8", "backslashreplace").decode("utf-8")
    return value


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
    exchange_key: str | None = None
    id: int | None = None


_JSON_COLUMNS = {"request_headers", "response_headers", "break", "prediction", "findings"}


def _to_columns(row: Row) -> dict[str, Any]:
    data = asdict(row)
    data["break"] = data.pop("brk")
    data.pop("id")
    data["streamed"] = int(row.streamed)
    columns = {k: _storable(json.dumps(v, ensure_ascii=False) if k in _JSON_COLUMNS and v is not None else v) for k, v in data.items()}
    if columns.get("exchange_key") is None:
        columns["exchange_key"] = exchange_key(columns)
    return columns


def _from_columns(record: sqlite3.Row) -> Row:
    data = dict(record)
    for key in _JSON_COLUMNS:
        if data.get(key) is not None:
            data[key] = json.loads(data[key])
    data["brk"] = data.pop("break")
    data["streamed"] = bool(data.get("streamed"))
    names = {f.name for f in fields(Row)}
    return Row(**{k: v for k, v in data.items() if k in names})


def _size(columns: dict[str, Any]) -> int:
    return sum(len(v) if isinstance(v, str) else 8 for v in columns.values())


def _lock_wait() -> float:
    try:
        return max(0.0, float(os.environ.get("CACHELINT_LOCK_WAIT", LOCK_WAIT_S)))
    except ValueError:
        return LOCK_WAIT_S


class Store:
    """A thread-safe handle on the database; every `add` is its own transaction.

    A write that fails (a full disk, a read-only file, a lock held past `lock_wait`) never loses the row at once:
    it waits in memory (up to `max_pending_rows` / `max_pending_bytes`) and is written with the next add or at
    close. Each failure is said through `warn` (one line, stderr by default)."""

    def __init__(self, path: str | Path, *, readonly: bool = False, lock_wait: float | None = None,
                 warn: Callable[[str], None] | None = None, max_pending_rows: int = MAX_PENDING_ROWS,
                 max_pending_bytes: int = MAX_PENDING_BYTES) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._warn = warn or _stderr
        self.lock_wait = _lock_wait() if lock_wait is None else lock_wait
        self.max_pending_rows, self.max_pending_bytes = max_pending_rows, max_pending_bytes
        self.recovered_from: Path | None = None
        self.write_error: str | None = None  # why the last write failed; None while writes succeed
        self.added = 0  # rows written
        self.duplicates = 0  # rows not written because the store already held that exchange
        self.dropped = 0  # rows lost because the memory bound was hit
        self._pending: list[tuple[Row, dict[str, Any]]] = []
        self._pending_bytes = 0
        if readonly and not self.path.exists():
            raise CachelintError(f"{self.path}: no such store (record traffic with `cachelint proxy` or `cachelint import` first)")
        if not readonly:
            _create_private(self.path)
        _refuse_foreign_file(self.path)
        self._db = self._open(readonly)
        if not readonly:
            self._probe()

    # --- opening ----------------------------------------------------------------------------------------------

    def _connect(self, readonly: bool) -> sqlite3.Connection:
        uri = f"file:{self.path}?mode=ro" if readonly else f"file:{self.path}"
        db = sqlite3.connect(uri, uri=True, check_same_thread=False, timeout=BUSY_TIMEOUT_S)
        db.row_factory = sqlite3.Row
        return db

    def _read_connection(self) -> sqlite3.Connection:
        """A read-only connection. A store in WAL mode whose -shm cannot be made (a read-only folder or file
        system) is opened as immutable: nobody can write it there anyway."""
        for uri in (f"file:{self.path}?mode=ro", f"file:{self.path}?mode=ro&immutable=1"):
            db = sqlite3.connect(uri, uri=True, check_same_thread=False, timeout=BUSY_TIMEOUT_S)
            db.row_factory = sqlite3.Row
            try:
                self._retry_busy(lambda: db.execute("SELECT count(*) FROM sqlite_master").fetchone())
            except sqlite3.OperationalError as exc:
                db.close()
                if not _error_name(exc).startswith(("SQLITE_CANTOPEN", "SQLITE_READONLY")) or "immutable" in uri:
                    raise
                continue
            return db
        raise AssertionError("unreachable")

    def _retry_busy(self, action: Callable[[], Any], wait: float | None = None) -> Any:
        """Run `action`, retrying with backoff while another process holds the lock, for `wait` seconds at most."""
        deadline = time.monotonic() + (self.lock_wait if wait is None else wait)
        delay = 0.05
        while True:
            try:
                return action()
            except sqlite3.OperationalError as exc:
                if not _is_busy(exc) or time.monotonic() >= deadline:
                    raise
            time.sleep(min(delay, max(0.0, deadline - time.monotonic())))
            delay = min(delay * 2, 1.0)

    def _open(self, readonly: bool) -> sqlite3.Connection:
        db = None
        try:
            db = self._read_connection() if readonly else self._connect(readonly)
            tables = self._retry_busy(lambda: {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")})
            self._refuse_foreign_tables(tables)
            if readonly:
                if "exchanges" not in tables:
                    raise CachelintError(f"{self.path}: not a readable cachelint store (it holds no exchanges table)")
                return db
            try:
                self._retry_busy(lambda: db.execute("PRAGMA journal_mode=WAL"))
                db.execute("PRAGMA synchronous=NORMAL")
                self._retry_busy(lambda: self._migrate(db))
            except sqlite3.OperationalError as exc:
                if not _is_write_failure(exc):
                    raise
                self.write_error = failure_reason(self.path, exc)  # readable, not writable: the probe says so
            return db
        except CachelintError:
            if db is not None:
                db.close()
            raise
        except sqlite3.DatabaseError as exc:
            if db is not None:
                db.close()
            if _is_busy(exc):
                raise CachelintError(f"{self.path}: the store is {locked_reason(self.path)}; waited {self.lock_wait:g} s (try again when it is done)") from None
            if readonly:
                raise CachelintError(f"{self.path}: not a readable cachelint store ({exc})") from None
            if _is_damage(exc) and self._damaged():
                return self._replace_corrupt()
            if _is_write_failure(exc):
                return self._open_unwritable(exc)
            raise CachelintError(f"{self.path}: cannot open the store: {exc}") from None

    def _open_unwritable(self, exc: sqlite3.DatabaseError) -> sqlite3.Connection:
        """A store that can be read but not written (a read-only file system): open it to read, say why it cannot
        be written (the probe), and keep new rows in memory until it can."""
        try:
            db = self._read_connection()
            self._refuse_foreign_tables({r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")})
        except sqlite3.DatabaseError:
            raise CachelintError(f"{self.path}: cannot open the store: {failure_reason(self.path, exc)}") from None
        self.write_error = failure_reason(self.path, exc)
        return db

    def _refuse_foreign_tables(self, tables: set[str]) -> None:
        """An SQLite database with other tables is someone else's: never add ours to it."""
        if tables and not tables <= _OWN_TABLES:
            others = ", ".join(sorted(tables - _OWN_TABLES)[:5])
            raise CachelintError(f"{self.path}: not a cachelint store (an SQLite database with tables {others}); left untouched: pass another --db")

    def _damaged(self) -> bool:
        """Whether SQLite itself finds the file damaged. A store that passes `PRAGMA integrity_check` (or that
        cannot be checked because it is busy) is never set aside."""
        try:
            db = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_S)
            try:
                found = db.execute("PRAGMA integrity_check").fetchall()
            finally:
                db.close()
        except sqlite3.DatabaseError as exc:
            return _is_damage(exc)
        return [tuple(r) for r in found] != [("ok",)]

    def _replace_corrupt(self) -> sqlite3.Connection:
        """Keep the damaged file aside (never delete recorded data) and start a fresh store."""
        aside = self.path.with_name(f"{self.path.name}.corrupt-{time.strftime('%Y%m%d-%H%M%S')}")
        os.replace(self.path, aside)
        for suffix in ("-wal", "-shm"):
            sidecar = Path(str(self.path) + suffix)
            if sidecar.exists():
                os.replace(sidecar, Path(str(aside) + suffix))
        self.recovered_from = aside
        _create_private(self.path)
        db = self._connect(False)
        db.execute("PRAGMA journal_mode=WAL")
        self._migrate(db)
        return db

    @staticmethod
    def _schema_version(db: sqlite3.Connection) -> int:
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        found = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() if "meta" in tables else None
        version = int(found[0]) if found else 0
        if version > SCHEMA_VERSION:
            raise CachelintError(f"the store was written by a newer cachelint (schema {version}; this one knows {SCHEMA_VERSION})")
        return version

    @classmethod
    def _migrate(cls, db: sqlite3.Connection) -> None:
        if cls._schema_version(db) == SCHEMA_VERSION:
            return  # nothing to write: a current store is not locked for writing just to open it
        try:
            db.execute("BEGIN IMMEDIATE")
            version = cls._schema_version(db)  # again, under the lock: another process may have migrated it meanwhile
            db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)")
            for target in range(version + 1, SCHEMA_VERSION + 1):
                for statement in filter(str.strip, _MIGRATIONS[target].split(";")):
                    db.execute(statement)
                if target == 2:
                    _fill_keys(db)
                db.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", (str(target),))
            db.commit()
        except BaseException:
            db.rollback()
            raise

    def _probe(self) -> None:
        """Write once at open, so a full disk or a read-only store is said before anything is lost."""
        def write() -> None:
            try:
                self._db.execute("INSERT OR REPLACE INTO meta VALUES ('opened_at', ?)", (repr(time.time()),))
                self._db.commit()
            except BaseException:
                self._db.rollback()
                raise

        try:
            self._retry_busy(write)
        except sqlite3.OperationalError as exc:
            if _is_busy(exc):
                self._db.close()
                raise CachelintError(f"{self.path}: the store is {locked_reason(self.path)}; waited {self.lock_wait:g} s (try again when it is done)") from None
            self.write_error = failure_reason(self.path, exc)
        except sqlite3.DatabaseError as exc:
            self.write_error = failure_reason(self.path, exc)
        else:
            self.write_error = None
        if self.write_error:
            self._warn(f"cachelint: error: cannot write to {self.path}: {self.write_error}; exchanges will be kept in memory "
                       f"(up to {self.max_pending_rows:,}) and written when it can be")

    # --- writing ----------------------------------------------------------------------------------------------

    def add(self, row: Row) -> int | None:
        """Store one exchange. Its id, or None when the store already holds it or when it waits in memory because
        the store cannot be written now (see `pending`)."""
        columns = _to_columns(row)
        row.exchange_key = columns["exchange_key"]
        with self._lock:
            if self._pending and self._over_bound(columns):
                self._flush(wait=0.0)  # room may have come back since the last try
            if self._pending and self._over_bound(columns):
                self.dropped += 1
                self._warn(f"cachelint: error: cannot write to {self.path}: {self.write_error}; {_exchanges(len(self._pending))} "
                           f"kept in memory (the bound), {self.dropped:,} dropped")
                return None
            self._pending.append((row, columns))
            self._pending_bytes += _size(columns)
            self._flush(wait=None if self.write_error is None else 0.0)
            return row.id

    def _over_bound(self, columns: dict[str, Any]) -> bool:
        return len(self._pending) >= self.max_pending_rows or self._pending_bytes + _size(columns) > self.max_pending_bytes

    @property
    def pending(self) -> int:
        """Rows kept in memory, not yet written."""
        return len(self._pending)

    def _flush(self, wait: float | None) -> bool:
        """Write what is waiting, in one transaction. True when nothing is left waiting."""
        if not self._pending:
            return True
        for attempt in range(2):
            try:
                self._retry_busy(self._write_pending, wait)
                break
            except sqlite3.DatabaseError as exc:
                if attempt == 0 and _error_name(exc).startswith("SQLITE_READONLY") and self._reconnect():
                    continue  # it may have been made writable since it was opened
                self.write_error = failure_reason(self.path, exc)
                self._warn(f"cachelint: error: cannot write to {self.path}: {self.write_error}; {_exchanges(len(self._pending))} kept in memory, retrying")
                return False
        if self.write_error is not None:
            self._warn(f"cachelint: the store {self.path} accepts writes again: the exchanges kept in memory are written")
        self.write_error = None
        return True

    def _write_pending(self) -> None:
        outcome = []
        try:
            self._db.execute("BEGIN IMMEDIATE")
            for row, columns in self._pending:
                names = ", ".join(f'"{k}"' for k in columns)
                marks = ", ".join("?" for _ in columns)
                cursor = self._db.execute(f"INSERT OR IGNORE INTO exchanges ({names}) VALUES ({marks})", list(columns.values()))
                outcome.append((row, cursor.lastrowid if cursor.rowcount == 1 else None))
            self._db.commit()
        except BaseException:
            self._db.rollback()
            raise
        for row, rowid in outcome:
            row.id = rowid  # None: the store already held this exchange
            self.added += rowid is not None
            self.duplicates += rowid is None
        self._pending.clear()
        self._pending_bytes = 0

    def _reconnect(self) -> bool:
        """A connection opened on a read-only file stays read-only: open it again, in case that changed."""
        try:
            db = self._connect(False)
            db.execute("PRAGMA journal_mode=WAL")
            self._migrate(db)
        except sqlite3.DatabaseError:
            return False
        self._db.close()
        self._db = db
        return True

    # --- reading ----------------------------------------------------------------------------------------------

    def rows(self, session: str | None = None) -> Iterator[Row]:
        """Rows in time order, streamed from a cursor of their own (a report on a store of gigabytes holds one row
        at a time, not the store)."""
        query = "SELECT * FROM exchanges" + (" WHERE session = ?" if session else "") + " ORDER BY started_at, id"
        try:
            db = self._read_connection()
        except sqlite3.DatabaseError as exc:
            raise CachelintError(f"{self.path}: not a readable cachelint store ({exc})") from None
        try:
            cursor = self._retry_busy(lambda: db.execute(query, (session,) if session else ()))
            for record in cursor:
                yield _from_columns(record)
        except sqlite3.DatabaseError as exc:
            if _is_busy(exc):
                raise CachelintError(f"{self.path}: the store is {locked_reason(self.path)}") from None
            raise CachelintError(f"{self.path}: not a readable cachelint store ({exc})") from None
        finally:
            db.close()

    def latest_rows(self, limit: int = 500) -> Iterator[Row]:
        """The latest row of each of the `limit` most recent sessions, newest first (what a restarted recorder
        needs to carry on the conversations the store holds: Sessions.resume)."""
        query = ("SELECT * FROM exchanges WHERE id IN (SELECT max(id) FROM exchanges GROUP BY session) "
                 "ORDER BY started_at DESC, id DESC LIMIT ?")
        with self._lock:
            records = self._db.execute(query, (limit,)).fetchall()
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

    def close(self) -> int:
        """Write what waits in memory (waiting out a lock as long as `lock_wait`) and close. The number of rows
        that could not be written (each said), 0 when nothing was lost."""
        with self._lock:
            lost = 0
            if self._pending and not self._flush(wait=None):
                lost = len(self._pending)
                self._warn(f"cachelint: error: cannot write to {self.path}: {self.write_error}; {_exchanges(lost)} not recorded")
            lost += self.dropped
            self._db.close()
            return lost


def _fill_keys(db: sqlite3.Connection) -> None:
    """Give the rows of a version 1 store their exchange key (a row recorded twice keeps it on its first copy)."""
    names = ", ".join(_KEY_FIELDS)
    found = db.execute(f"SELECT id, {names} FROM exchanges ORDER BY id").fetchall()
    for record in found:
        key = exchange_key(dict(zip(_KEY_FIELDS, tuple(record)[1:])))
        if key is not None:
            db.execute("UPDATE OR IGNORE exchanges SET exchange_key = ? WHERE id = ?", (key, record[0]))
