"""Issue 18, the store side: a locked store is not a damaged one, a file that is not a store is left alone, a
full disk or a read-only store is said and loses nothing it can keep, an import run twice adds nothing, two
recorders on one store keep their conversations apart, and a report streams the store."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import pytest

from bodies import anthropic_body, clone
from cachelint.errors import CachelintError
from cachelint.record.store import _MIGRATIONS, SCHEMA_VERSION, Row, Store

HOLDER = r"""
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
if sys.argv[2] == "exclusive":
    db.execute("PRAGMA locking_mode=EXCLUSIVE")
    db.execute("BEGIN EXCLUSIVE")
    db.execute("SELECT count(*) FROM exchanges").fetchone()
else:
    db.execute("BEGIN IMMEDIATE")
    db.execute("INSERT OR REPLACE INTO meta VALUES ('held', '1')")
print("holding", flush=True)
sys.stdin.read()  # until the test lets go
db.execute("ROLLBACK")
"""


def run(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cachelint", *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})})


def row(i: int, body: str = "x") -> Row:
    return Row(session="s", seq=i, started_at=1000.0 + i, request_sha256=f"sha-{i}", request_body=body, status=200)


def a_store(path: Path, rows: int = 3) -> Path:
    store = Store(path)
    for i in range(rows):
        store.add(row(i))
    store.close()
    return path


class Holder:
    """Another process holding the store: in exclusive locking mode or with a write transaction open."""

    def __init__(self, path: Path, how: str) -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(path), how], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout.readline().strip() == "holding"

    def __enter__(self) -> Holder:
        return self

    def __exit__(self, *exc) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


# --- locked is not damaged --------------------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["exclusive", "write"])
def test_a_locked_store_is_said_locked_and_never_set_aside(tmp_path, how):
    path = a_store(tmp_path / "db.sqlite")
    with Holder(path, how) as holder:
        with pytest.raises(CachelintError, match="locked: another process holds a lock on it") as caught:
            Store(path, lock_wait=0.5)
        if Path("/proc/locks").exists():
            assert f"(pid {holder.proc.pid}, python" in str(caught.value)
    assert not list(tmp_path.glob("*.corrupt-*"))
    store = Store(path)
    assert store.count() == 3 and store.recovered_from is None
    store.close()


def test_a_lock_let_go_within_the_wait_is_waited_out(tmp_path):
    path = a_store(tmp_path / "db.sqlite")
    holder = Holder(path, "write")
    releaser = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.5)"])
    releaser.wait()
    holder.__exit__()  # let go while the store below would still be waiting (its bound is 30 s)
    store = Store(path, lock_wait=30)
    store.add(row(9))
    assert store.count() == 4
    assert store.close() == 0


def test_a_write_that_meets_a_lock_is_kept_and_written_later(tmp_path):
    path = a_store(tmp_path / "db.sqlite")
    said: list[str] = []
    store = Store(path, lock_wait=0.3, warn=said.append)
    with Holder(path, "write"):
        assert store.add(row(10)) is None and store.pending == 1
    assert any("locked: another process holds a lock on it" in line and "1 exchange kept in memory" in line for line in said)
    store.add(row(11))
    assert store.pending == 0 and store.count() == 5
    assert store.close() == 0


def test_import_into_a_locked_store_is_one_line(tmp_path):
    path = a_store(tmp_path / "db.sqlite")
    source = tmp_path / "traffic.jsonl"
    source.write_text(exchange_line(anthropic_body(), 1) + "\n")
    with Holder(path, "write"):
        out = run("import", str(source), "--db", str(path), env={"CACHELINT_LOCK_WAIT": "0.5"})
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1 and "locked: another process holds a lock on it" in out.stderr, out.stderr
    assert "internal error" not in out.stderr
    assert Store(path, readonly=True).count() == 3


# --- not a store ------------------------------------------------------------------------------------------------


def test_a_file_that_is_not_a_store_is_refused_untouched(tmp_path):
    other = tmp_path / "app.db"
    db = sqlite3.connect(other)
    db.execute("CREATE TABLE users (name TEXT)")
    db.execute("INSERT INTO users VALUES ('ada')")
    db.commit()
    db.close()
    text = tmp_path / "notes.db"
    text.write_text("my notes, not a database\n" * 50)
    for path in (other, text):
        before = path.read_bytes()
        with pytest.raises(CachelintError, match="not a cachelint store"):
            Store(path)
        out = run("import", str(write_jsonl(tmp_path)), "--db", str(path))
        assert out.returncode == 2 and out.stderr.startswith("cachelint: error: ") and "not a cachelint store" in out.stderr
        assert out.stderr.count("\n") == 1
        assert path.read_bytes() == before
        assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(path.name)) == [path.name]
    assert [r[0] for r in sqlite3.connect(other).execute("SELECT name FROM sqlite_master WHERE type='table'")] == ["users"]


# --- full disk, read-only ---------------------------------------------------------------------------------------


def test_a_full_database_keeps_rows_in_memory_up_to_a_bound_and_says_what_was_dropped(tmp_path):
    said: list[str] = []
    store = Store(tmp_path / "db.sqlite", warn=said.append, max_pending_rows=2)
    store.add(row(0))
    pages = store._db.execute("PRAGMA page_count").fetchone()[0]
    store._db.execute(f"PRAGMA max_page_count = {pages}")  # SQLite's own "database or disk is full"
    for i in range(1, 6):
        store.add(row(i, body="y" * 20_000))
    assert store.pending == 2 and store.dropped == 3
    assert any("disk full; 1 exchange kept in memory, retrying" in line for line in said), said
    assert any("3 dropped" in line for line in said), said
    assert store.close() == 5
    assert "5 exchanges not recorded" not in said[-1] and "2 exchanges not recorded" in said[-1]


def mount_tmpfs(where: Path, size: str) -> None:
    where.mkdir(exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(where)], capture_output=True)
    if done.returncode != 0:
        pytest.skip("mounting a small file system needs root (mount -t tmpfs)")


@pytest.fixture
def small_fs(tmp_path):
    where = tmp_path / "mnt"
    mount_tmpfs(where, "1m")
    yield where
    subprocess.run(["umount", "-l", str(where)], check=False)


def test_a_full_disk_is_said_on_every_failed_write_and_nothing_is_lost_once_there_is_room(small_fs):
    said: list[str] = []
    store = Store(small_fs / "cachelint.db", warn=said.append)
    assert store.write_error is None and not said
    sent = 0
    while store.write_error is None and sent < 200:
        store.add(row(sent, body=os.urandom(30_000).hex()))
        sent += 1
    assert store.write_error == "disk full", store.write_error
    for _ in range(3):
        store.add(row(sent, body="z" * 1000))
        sent += 1
    failures = [line for line in said if "disk full" in line]
    assert len(failures) >= 4 and failures[-1].startswith(f"cachelint: error: cannot write to {small_fs / 'cachelint.db'}: disk full; ")
    assert failures[-1].endswith(f"{store.pending} exchange{'s' if store.pending != 1 else ''} kept in memory, retrying")
    subprocess.run(["mount", "-o", "remount,size=64m", str(small_fs)], check=True)
    store.add(row(sent))
    sent += 1
    assert store.pending == 0 and store.count() == sent
    assert "accepts writes again" in said[-1]
    assert store.close() == 0


def test_a_read_only_store_is_said_at_open_and_its_rows_written_once_it_can_be(tmp_path):
    where = tmp_path / "mnt"
    mount_tmpfs(where, "4m")
    try:
        path = a_store(where / "cachelint.db")
        subprocess.run(["mount", "-o", "remount,ro", str(where)], check=True)
        said: list[str] = []
        store = Store(path, warn=said.append)
        assert said and "cannot write to" in said[0] and "read-only" in said[0]
        assert store.add(row(7)) is None and store.pending == 1
        assert [r.seq for r in store.rows()] == [0, 1, 2]  # it can still be read
        out = run("import", str(write_jsonl(tmp_path)), "--db", str(path))
        assert out.returncode == 2 and "read-only" in out.stderr and "nothing imported" in out.stderr and out.stderr.count("\n") == 1
        subprocess.run(["mount", "-o", "remount,rw", str(where)], check=True)
        store.add(row(8))
        assert store.pending == 0 and store.count() == 5
        assert store.close() == 0
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


# --- schema v2, import idempotent -------------------------------------------------------------------------------


def exchange_line(body: dict, i: int, headers: dict | None = None) -> str:
    return json.dumps({"started_at": 1000 + i, "request": {"method": "POST", "path": "/v1/messages", "headers": headers or {"x-claude-code-session-id": "abc"}, "body": body},
                       "response": {"status": 200, "body": {"type": "message", "usage": {"input_tokens": 10 + i, "output_tokens": 5}}}})


def write_jsonl(tmp_path: Path) -> Path:
    first = anthropic_body()
    second = clone(first)
    second["messages"].append({"role": "assistant", "content": "Yes."})
    third = clone(second)
    third["messages"].append({"role": "user", "content": "And then?"})
    source = tmp_path / "traffic.jsonl"
    source.write_text("\n".join(exchange_line(b, i) for i, b in enumerate([first, second, third])) + "\n")
    return source


def test_import_twice_adds_nothing_the_second_time(tmp_path):
    source, db = write_jsonl(tmp_path), tmp_path / "store.db"
    first = run("import", str(source), "--db", str(db))
    assert first.returncode == 0 and "3 new, 0 already in the store" in first.stdout, first.stderr
    report = json.loads(run("report", "--db", str(db), "--format", "json").stdout)
    again = run("import", str(source), "--db", str(db))
    assert again.returncode == 0 and "0 new, 3 already in the store" in again.stdout, again.stderr
    assert Store(db, readonly=True).count() == 3
    assert json.loads(run("report", "--db", str(db), "--format", "json").stdout)["sessions"] == report["sessions"]


def test_a_version_1_store_migrates_in_place(tmp_path):
    path = tmp_path / "old.db"
    db = sqlite3.connect(path)
    db.executescript(_MIGRATIONS[1])
    db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
    db.execute("INSERT INTO meta VALUES ('schema_version', '1')")
    for i in (0, 1, 1):  # the last one recorded twice under v1 (an import run twice)
        db.execute("INSERT INTO exchanges (session, seq, started_at, request_sha256, status) VALUES ('s', ?, ?, ?, 200)", (i, 1000.0 + i, f"sha-{i}"))
    db.commit()
    db.close()
    store = Store(path)
    assert store._db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0] == str(SCHEMA_VERSION) == "2"
    keys = [r[0] for r in store._db.execute("SELECT exchange_key FROM exchanges ORDER BY id")]
    assert keys[0] and keys[1] and keys[2] is None and keys[0] != keys[1]
    assert store.add(row(1, body=None)) is None and store.duplicates == 1  # the same exchange again
    assert store.add(row(2)) is not None
    assert store.count() == 4
    store.close()


def test_a_lone_surrogate_in_jsonl_imports_escaped(tmp_path):
    body = anthropic_body()
    body["model"] = "claude-sonnet-4-5\ud800"
    source = tmp_path / "odd.jsonl"
    source.write_text(exchange_line(body, 0, headers={"x-claude-code-session-id": "abc", "x-odd": "a\udcffb"}) + "\n")
    db = tmp_path / "store.db"
    out = run("import", str(source), "--db", str(db))
    assert out.returncode == 0 and "1 new" in out.stdout and "internal error" not in out.stderr, out.stderr
    [stored] = Store(db, readonly=True).rows()
    assert stored.model == "claude-sonnet-4-5\\ud800"  # escaped, not lost
    assert stored.request_headers["x-odd"] == "a\udcffb"  # a JSON column keeps it as a JSON escape: read back exactly


def test_a_bad_file_stores_nothing(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{not json\n")
    db = tmp_path / "store.db"
    out = run("import", str(write_jsonl(tmp_path)), str(bad), "--db", str(db))
    assert out.returncode == 2 and "bad.jsonl:1: invalid JSON" in out.stderr
    assert not db.exists() or Store(db, readonly=True).count() == 0


# --- two recorders on one store ---------------------------------------------------------------------------------


def test_two_recorders_on_one_store_keep_unrelated_conversations_apart(tmp_path, monkeypatch):
    from cachelint.record.analyze import Recorder
    from cachelint.record.exchange import Captured

    monkeypatch.setattr(time, "strftime", lambda *args: "20261201T000000")  # both started in the same second
    store = Store(tmp_path / "db.sqlite")
    rows = []
    for i, topic in enumerate(["You are a tax assistant.", "You write haiku about the sea."]):
        body = {"model": "claude-sonnet-4-5", "max_tokens": 10, "system": topic, "messages": [{"role": "user", "content": f"question {i}"}]}
        captured = Captured(started_at=1000.0 + i, method="POST", url="https://api.anthropic.com/v1/messages",
                            request_headers=[("content-type", "application/json")], request_body=json.dumps(body).encode(), status=200,
                            response_body=json.dumps({"type": "message", "usage": {"input_tokens": 20, "output_tokens": 1}}).encode())
        rows.append(Recorder(store).record(captured))  # a fresh recorder each: another proxy, or one restarted
    assert rows[0].session != rows[1].session
    assert [r.seq for r in rows] == [1, 1]
    store.close()


# --- a report streams -------------------------------------------------------------------------------------------


def test_rows_stream_one_at_a_time(tmp_path):
    store = Store(tmp_path / "big.db")
    body = "b" * 200_000
    for i in range(100):  # 20 MB of bodies
        store.add(row(i, body=body))
    tracemalloc.start()
    try:
        seen = sum(1 for _ in store.rows())
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    store.close()
    assert seen == 100
    assert peak < 5_000_000, peak  # a few rows at most, never the 20 MB


def test_a_restarted_recorder_carries_on_a_stored_conversation_and_nothing_else(tmp_path):
    """Wired by the recorder at start (recorder.sessions.resume(store.latest_rows())): a request that carries on
    a conversation of an earlier run joins its session; one that only shares its system prompt does not."""
    from cachelint.record.analyze import Recorder
    from cachelint.record.exchange import Captured

    def captured(body: dict, at: float) -> Captured:
        return Captured(started_at=at, method="POST", url="https://api.anthropic.com/v1/messages",
                        request_headers=[("content-type", "application/json")], request_body=json.dumps(body).encode(), status=200,
                        response_body=json.dumps({"type": "message", "usage": {"input_tokens": 20, "output_tokens": 1}}).encode())

    store = Store(tmp_path / "db.sqlite")
    first = anthropic_body()
    before = Recorder(store).record(captured(first, 1000.0))
    restarted = Recorder(store)
    assert restarted.sessions.resume(store.latest_rows()) == 1
    carried = clone(first)
    carried["messages"] += [{"role": "assistant", "content": "Yes, you can."}, {"role": "user", "content": "Do it."}]
    again = restarted.record(captured(carried, 1001.0))
    stranger = clone(first)
    stranger["messages"] = [{"role": "user", "content": "What is your refund policy?"}]
    other = restarted.record(captured(stranger, 1002.0))
    assert (again.session, again.seq) == (before.session, 2)
    assert again.brk is not None and again.brk["cause"] == "none"  # compared with the stored request
    assert other.session not in (before.session, again.session) and other.seq == 1
    store.close()


def test_the_memory_bound_never_drops_a_row_the_store_can_take(tmp_path):
    store = Store(tmp_path / "db.sqlite", max_pending_rows=1, max_pending_bytes=10)
    for i in range(3):
        assert store.add(row(i, body="w" * 1000)) is not None
    assert store.count() == 3 and store.dropped == 0
    assert store.close() == 0


def test_processes_creating_one_store_at_once_all_record(tmp_path):
    path = tmp_path / "new" / "cachelint.db"
    code = ("import sys; from cachelint.record.store import Row, Store; s = Store(sys.argv[1]); "
            "s.add(Row(session='p', seq=int(sys.argv[2]), started_at=float(sys.argv[2]), request_sha256=sys.argv[2])); sys.exit(s.close())")
    procs = [subprocess.Popen([sys.executable, "-c", code, str(path), str(i)], stderr=subprocess.PIPE, text=True) for i in range(4)]
    errors = [p.communicate(timeout=60)[1] for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0, 0], errors
    assert Store(path, readonly=True).count() == 4


def test_a_read_only_file_is_refused_by_import_and_left_unchanged(tmp_path):
    """File modes: run as `nobody` when the tests run as root (root ignores them)."""
    import shutil
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="cachelint-ro-"))
    try:
        os.chmod(folder, 0o755)
        path = a_store(folder / "cachelint.db")
        source = folder / "traffic.jsonl"
        shutil.copy(write_jsonl(tmp_path), source)
        os.chmod(source, 0o644)
        os.chmod(path, 0o444)
        before = path.read_bytes()
        command = [sys.executable, "-m", "cachelint", "import", str(source), "--db", str(path)]
        if os.geteuid() == 0:
            if not shutil.which("setpriv"):
                pytest.skip("running as root without setpriv: file modes cannot be tested")
            command = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *command]
        os.chmod(folder, 0o555)
        out = subprocess.run(command, capture_output=True, text=True, timeout=120, env={**os.environ, "HOME": str(folder)})
        assert out.returncode == 2 and out.stderr.startswith("cachelint: error: cannot write to ") and "read-only" in out.stderr, out.stderr
        assert "nothing imported" in out.stderr and out.stderr.count("\n") == 1
        assert path.read_bytes() == before and not list(folder.glob("*.corrupt-*"))
    finally:
        os.chmod(folder, 0o755)
        shutil.rmtree(folder, ignore_errors=True)


def test_a_resumed_conversation_idle_past_its_ttl_is_ttl_expired_not_provider_side(tmp_path):
    """After a restart the recorder still knows when the stored conversation's last request was sent: a miss
    after a long idle gap is the TTL's doing, not a mystery on the provider's side."""
    from cachelint.record.analyze import Recorder
    from cachelint.record.exchange import Captured

    def captured(body: dict, at: float, read: int, write: int) -> Captured:
        usage = {"input_tokens": 20, "output_tokens": 1, "cache_read_input_tokens": read, "cache_creation_input_tokens": write}
        return Captured(started_at=at, method="POST", url="https://api.anthropic.com/v1/messages",
                        request_headers=[("content-type", "application/json")], request_body=json.dumps(body).encode(), status=200,
                        response_body=json.dumps({"type": "message", "usage": usage}).encode(), first_byte_at=at + 1.0)

    store = Store(tmp_path / "db.sqlite")
    first = anthropic_body()
    first["system"] = [{"type": "text", "text": "Policy. " * 900, "cache_control": {"type": "ephemeral"}}]
    Recorder(store).record(captured(first, 1000.0, read=0, write=3000))
    carried = clone(first)
    carried["messages"] += [{"role": "assistant", "content": "Yes, you can."}, {"role": "user", "content": "Do it."}]
    restarted = Recorder(store)
    assert restarted.sessions.resume(store.latest_rows()) == 1
    late = restarted.record(captured(carried, 1000.0 + 20 * 60, read=0, write=3100))  # 20 minutes idle: past the 5-minute TTL
    assert late.brk is not None and late.brk["cause"] == "ttl_expired", late.brk
    assert late.brk["idle_seconds"] == pytest.approx(1200.0)
    store.close()
