"""The store: schema version, one commit per exchange, damaged files set aside; credentials never kept."""

from __future__ import annotations

import json
import sqlite3

import pytest

from cachelint.errors import CachelintError
from cachelint.record.secrets import clean_headers, clean_url
from cachelint.record.store import SCHEMA_VERSION, Row, Store


def test_rows_round_trip_and_schema_version(tmp_path):
    store = Store(tmp_path / "db.sqlite")
    row = Row(session="s/m", seq=1, started_at=1.5, model="m", request_headers={"anthropic-version": "2023-06-01"},
              brk={"cause": "none"}, findings=[{"code": "CL101"}], prompt_tokens=10)
    store.add(row)
    [back] = list(Store(tmp_path / "db.sqlite", readonly=True).rows())
    assert (back.session, back.seq, back.brk, back.findings, back.prompt_tokens) == ("s/m", 1, {"cause": "none"}, [{"code": "CL101"}], 10)
    version = sqlite3.connect(tmp_path / "db.sqlite").execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0]
    assert int(version) == SCHEMA_VERSION


def _damage(path) -> None:
    """Overwrite every page after the first (the header and the schema stay, the tables are garbage)."""
    data = bytearray(path.read_bytes())
    page = int.from_bytes(data[16:18], "big")
    data[page:] = (b"\xde\xad\xbe\xef" * (len(data) // 4 + 1))[: len(data) - page]
    path.write_bytes(bytes(data))


def test_a_damaged_store_is_set_aside_not_deleted(tmp_path):
    path = tmp_path / "db.sqlite"
    store = Store(path)
    for i in range(50):
        store.add(Row(session="s", seq=i, started_at=float(i), request_body="x" * 2000))
    store.close()
    for sidecar in tmp_path.glob("db.sqlite-*"):
        sidecar.unlink()
    _damage(path)
    damaged = path.read_bytes()
    store = Store(path)
    assert store.recovered_from.exists() and store.recovered_from.read_bytes() == damaged
    store.add(Row(session="s", seq=1, started_at=0.0))
    assert store.count() == 1
    with pytest.raises(CachelintError, match="not a readable cachelint store"):
        list(Store(store.recovered_from, readonly=True).rows())


def test_credentials_are_dropped_from_headers_and_urls():
    headers = [("X-Api-Key", "sk-1"), ("Authorization", "Bearer sk-2"), ("Cookie", "a=b"), ("OpenAI-Organization", "org-1"),
               ("OpenAI-Project", "proj-1"), ("api-key", "azure"), ("anthropic-version", "2023-06-01"), ("x-goog-api-key", "g")]
    assert clean_headers(headers) == {"anthropic-version": "2023-06-01"}
    assert clean_url("https://user:pw@host/v1/chat/completions?key=abc&x=1") == "https://host/v1/chat/completions?key=%5Bredacted%5D&x=1"


def test_a_store_from_a_newer_cachelint_is_refused(tmp_path):
    path = tmp_path / "db.sqlite"
    Store(path).close()
    db = sqlite3.connect(path)
    db.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    db.commit()
    db.close()
    with pytest.raises(CachelintError, match="newer cachelint"):
        Store(path)


def test_the_recorder_reads_bodies_with_a_bom_or_in_utf16(tmp_path):
    from cachelint.record.analyze import Recorder
    from cachelint.record.exchange import Captured

    body = {"model": "gpt-4o", "messages": [{"role": "user", "content": "héllo"}]}
    recorder = Recorder(None)
    for raw in (b"\xef\xbb\xbf" + json.dumps(body).encode(), json.dumps(body).encode("utf-16")):
        row = recorder.record(Captured(started_at=1.0, method="POST", url="https://api.openai.com/v1/chat/completions",
                                       request_headers=[("content-type", "application/json")], request_body=raw, status=200,
                                       response_body=b'{"usage": {"prompt_tokens": 9, "completion_tokens": 1}}'))
        assert row.provider == "openai-chat" and row.error is None


def test_a_new_store_is_readable_by_its_owner_only(tmp_path):
    import stat

    from cachelint.record.store import Store

    path = tmp_path / "home" / "cachelint" / "cachelint.db"
    store = Store(path)
    try:
        sidecars = sorted(path.parent.glob("cachelint.db-*"))
        assert [p.name for p in sidecars] == ["cachelint.db-shm", "cachelint.db-wal"]  # WAL mode, open
        assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
        for file in [path, *sidecars]:
            assert stat.S_IMODE(file.stat().st_mode) == 0o600, file
    finally:
        store.close()
