"""`cachelint check` result cache: hits and misses by content, corrupt files, keys, atomic saves."""

from __future__ import annotations

import json
import multiprocessing
import os
from pathlib import Path

import pytest

from cachelint import __version__
from cachelint.check.cache import CACHE_DIR_NAME, ResultCache, cache_key
from cachelint.check.config import Config
from cachelint.check.finding import Edit, Finding, Fix


def finding(filename: str, code: str = "CL101", row: int = 3, **extra) -> Finding:
    return Finding(
        code=code,
        name="volatile-value-in-prefix",
        message="datetime.now() reaches the system prompt",
        severity="error",
        filename=filename,
        row=row,
        column=5,
        end_row=row,
        end_column=19,
        fix=Fix("unsafe", "Freeze it once per session", (Edit(row, 5, row, 19, "SESSION_START"),)),
        extra=extra,
    )


@pytest.fixture
def project(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    f = src / "app.py"
    f.write_bytes(b"import datetime\n")
    return tmp_path, f


def test_miss_then_hit_across_instances(project):
    root, f = project
    content = f.read_bytes()
    cache = ResultCache(root, "k1")
    assert cache.get(f, content) is None
    found = [finding(str(f)), finding(str(f), code="CL102", row=7)]
    cache.put(f, content, found)
    assert cache.get(f, content) == found  # visible before saving
    assert cache.save()

    again = ResultCache(root, "k1")
    got = again.get(f, content)
    assert got == found
    assert got[0].fix == found[0].fix


def test_empty_findings_are_cached(project):
    root, f = project
    cache = ResultCache(root, "k")
    cache.put(f, b"x", [])
    cache.save()
    assert ResultCache(root, "k").get(f, b"x") == []


def test_content_change_misses_and_replaces_stale_entry(project):
    root, f = project
    cache = ResultCache(root, "k")
    cache.put(f, b"v1", [finding(str(f))])
    cache.save()
    cache = ResultCache(root, "k")
    assert cache.get(f, b"v2") is None
    cache.put(f, b"v2", [])
    cache.save()
    data = json.loads(cache.file.read_text())
    assert list(data["entries"]) == ["src/app.py"]  # one entry for the path, the new one
    fresh = ResultCache(root, "k")
    assert fresh.get(f, b"v2") == []
    assert fresh.get(f, b"v1") is None


def test_keyed_by_path_relative_to_root(project, monkeypatch):
    root, f = project
    monkeypatch.chdir(root)
    cache = ResultCache(root, "k")
    cache.put(Path("./src/app.py"), b"c", [finding("./src/app.py"), finding("other.py")])
    cache.save()
    got = ResultCache(root, "k").get(f, b"c")
    # The file's own findings follow the current spelling of the path; others are left alone.
    assert [g.filename for g in got] == [str(f), "other.py"]


def test_layout_and_cachedir_tag(project):
    root, f = project
    cache = ResultCache(root, cache_key(Config(root=root)))
    cache.put(f, b"c", [])
    cache.save()
    base = root / CACHE_DIR_NAME
    assert cache.file.parent == base / __version__
    assert cache.file.suffix == ".json"
    assert (base / "CACHEDIR.TAG").read_text().startswith("Signature: 8a477f597d28d172789f06886806bc55")
    assert (base / ".gitignore").read_text().splitlines()[-1] == "*"
    assert [p.name for p in cache.file.parent.iterdir()] == [cache.file.name]  # no temp files left


@pytest.mark.parametrize(
    "garbage",
    [
        b"",
        b"{not json",
        b"\xff\xfe\x00",
        b"[]",
        b'{"format": 1, "key": "k", "entries": []}',
        b'{"format": 99, "key": "k", "entries": {}}',
        b'{"format": 1, "key": "k", "entries": {"src/app.py": {"sha256": "x"}}}',
    ],
)
def test_corrupt_cache_file_is_ignored(project, garbage):
    root, f = project
    cache = ResultCache(root, "k")
    cache.file.parent.mkdir(parents=True)
    cache.file.write_bytes(garbage)
    cache = ResultCache(root, "k")
    assert cache.get(f, b"c") is None
    cache.put(f, b"c", [finding(str(f))])
    assert cache.save()
    assert ResultCache(root, "k").get(f, b"c") == [finding(str(f))]


def test_corrupt_entry_is_a_miss(project):
    root, f = project
    import hashlib

    cache = ResultCache(root, "k")
    cache.file.parent.mkdir(parents=True)
    entry = {"sha256": hashlib.sha256(b"c").hexdigest(), "path": str(f), "findings": [{"code": "CL101"}]}
    cache.file.write_text(json.dumps({"format": 1, "key": "k", "entries": {"src/app.py": entry}}))
    cache = ResultCache(root, "k")
    assert cache.get(f, b"c") is None
    cache.save()
    assert ResultCache(root, "k").get(f, b"c") is None


def test_unwritable_cache_is_not_an_error(project):
    root, f = project
    (root / CACHE_DIR_NAME).write_text("a file where the directory should be")
    cache = ResultCache(root, "k")
    assert cache.get(f, b"c") is None
    cache.put(f, b"c", [])
    assert cache.save() is False


def test_config_change_gives_a_different_key_and_file(project):
    root, f = project
    base = Config(root=root)
    same = Config(root=root, select=["CL"])
    changed = [
        Config(root=root, ignore=["CL101"]),
        Config(root=root, model="claude-sonnet-4-5"),
        Config(root=root, call_patterns=["mylib.llm.chat"]),
        Config(root=root, per_file_ignores={"tests/*": ["CL1"]}),
    ]
    assert cache_key(base) == cache_key(same)
    assert __version__ in cache_key(base)
    keys = {cache_key(c) for c in changed}
    assert len(keys) == len(changed) and cache_key(base) not in keys

    a = ResultCache.for_config(base)
    a.put(f, b"c", [finding(str(f))])
    a.save()
    b = ResultCache.for_config(changed[0])
    assert b.file != a.file
    assert b.get(f, b"c") is None
    assert ResultCache.for_config(same).get(f, b"c") == [finding(str(f))]


def test_key_mismatch_in_file_is_a_miss(project):
    root, f = project
    a = ResultCache(root, "k1")
    a.put(f, b"c", [])
    a.save()
    b = ResultCache(root, "k2")
    os.makedirs(b.file.parent, exist_ok=True)
    b.file.write_bytes(a.file.read_bytes())  # e.g. a hash collision or a copied file
    assert ResultCache(root, "k2").get(f, b"c") is None


def test_extra_survives_when_json_serializable(project):
    root, f = project
    cache = ResultCache(root, "k")
    cache.put(f, b"c", [finding(str(f), value_kind="timestamp")])
    cache.save()
    assert ResultCache(root, "k").get(f, b"c")[0].extra == {"value_kind": "timestamp"}
    cache.put(f, b"d", [finding(str(f), obj=object())])  # not storable: not cached at all
    cache.save()
    assert ResultCache(root, "k").get(f, b"d") is None


def test_concurrent_instances_merge_and_deleted_files_are_pruned(project):
    root, f = project
    g = root / "src" / "other.py"
    g.write_text("")
    one, two = ResultCache(root, "k"), ResultCache(root, "k")
    one.put(f, b"f", [])
    two.put(g, b"g", [])
    one.save()
    two.save()  # does not drop what `one` saved meanwhile
    merged = ResultCache(root, "k")
    assert merged.get(f, b"f") == [] and merged.get(g, b"g") == []
    g.unlink()
    merged.put(f, b"f2", [])
    merged.save()
    assert list(json.loads(merged.file.read_text())["entries"]) == ["src/app.py"]


def _hammer(root: str, n: int, worker: int) -> None:
    for i in range(n):
        cache = ResultCache(Path(root), "k")
        p = Path(root) / "src" / f"w{worker}.py"
        cache.put(p, f"{worker}-{i}".encode(), [finding(str(p), row=i + 1)] * 20)
        cache.save()


def test_parallel_saves_never_tear_the_file(project):
    root, _ = project
    for w in range(4):
        (root / "src" / f"w{w}.py").write_text("")
    ctx = multiprocessing.get_context("spawn" if os.name == "nt" else "fork")
    procs = [ctx.Process(target=_hammer, args=(str(root), 25, w)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    cache = ResultCache(root, "k")
    data = json.loads(cache.file.read_text())  # a complete JSON document
    assert data["key"] == "k" and data["entries"]
    assert not [p for p in cache.file.parent.iterdir() if p.suffix == ".tmp"]
