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


# --- dependency edges: a cached result is stale once a module its analysis read has changed -------------------

POLICY = "\n".join(f"{i}. Answer questions about order {i} politely, cite the policy section, never promise refunds above the limit."
                   for i in range(1, 80))  # long enough to be cacheable: a volatile value in it breaks a real cache

PROMPTS_VOLATILE = f'''from datetime import datetime

POLICY = """
{POLICY}
"""


def system_prompt() -> str:
    return f"You are the support agent of Acme. Today is {{datetime.now():%Y-%m-%d %H:%M}}.\\n{{POLICY}}"
'''
PROMPTS_FROZEN = PROMPTS_VOLATILE.replace("Today is {datetime.now():%Y-%m-%d %H:%M}.", "Answer in English.")

BOT = '''import anthropic

from {module} import system_prompt

client = anthropic.Anthropic()


def answer(history: list[dict]) -> str:
    response = client.messages.create(
        model="claude-sonnet-4-5",
        max_tokens=1024,
        system=system_prompt(),
        messages=history,
    )
    return response.content[0].text
'''
UTIL = '''def shorten(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "..."
'''


@pytest.fixture
def support_app(tmp_path, monkeypatch):
    """A support bot whose system prompt is built in another module of the package."""
    app = tmp_path / "app"
    app.mkdir()
    (app / "__init__.py").write_text("")
    (app / "prompts.py").write_text(PROMPTS_VOLATILE)
    (app / "bot.py").write_text(BOT.format(module="app.prompts"))
    (app / "util.py").write_text(UTIL)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def check_tree(root: Path) -> tuple[list[str], list[str]]:
    """(findings as 'file:code', the files linted again: not served from the cache)."""
    from cachelint.check.run import run_check

    linted: list[int] = []
    run = run_check([Path(".")], Config(root=root), processes=1, progress=lambda done, total: linted.append(total))
    found = [f"{f.filename}:{f.code}" for f in run.findings]
    return found, ([] if not linted else [str(linted[-1])]) + [f"cached={run.cached}"]


# found at the request (certain) and where the prompt is built (likely): reported once, where the clock is written
BOTH = ["app/prompts.py:CL101"]


def test_editing_an_imported_prompts_module_relints_its_importers_only(support_app):
    assert check_tree(support_app) == (BOTH, ["4", "cached=0"])
    assert check_tree(support_app) == (BOTH, ["cached=4"])  # warm: nothing linted

    (support_app / "app" / "prompts.py").write_text(PROMPTS_FROZEN)
    # prompts.py itself and bot.py (which imports from it) are linted again; util.py and __init__.py are not
    assert check_tree(support_app) == ([], ["2", "cached=2"])
    (support_app / "app" / "prompts.py").write_text(PROMPTS_VOLATILE)
    assert check_tree(support_app) == (BOTH, ["2", "cached=2"])

    (support_app / "app" / "util.py").write_text(UTIL + "\n\nLIMIT = 80\n")
    assert check_tree(support_app) == (BOTH, ["1", "cached=3"])  # nobody imports util.py


def test_a_name_re_exported_by_the_package_is_an_edge_to_the_module_that_defines_it(support_app):
    (support_app / "app" / "__init__.py").write_text("from app.prompts import system_prompt\n")
    (support_app / "app" / "bot.py").write_text(BOT.format(module="app"))
    assert check_tree(support_app) == (BOTH, ["4", "cached=0"])
    (support_app / "app" / "prompts.py").write_text(PROMPTS_FROZEN)
    assert check_tree(support_app)[0] == []  # bot.py read prompts.py through __init__.py: its entry was stale


def test_a_module_that_is_only_syntax_checked_has_no_edges(support_app):
    from cachelint.check.run import run_check

    run_check([Path(".")], Config(root=support_app), processes=1)
    entries = json.loads(next((support_app / CACHE_DIR_NAME).rglob("*.json")).read_text())["entries"]
    # bot.py reads prompts.py; whether its prompt builder is shared (shared_prompts.py) rests on the whole tree's callers
    assert str(support_app / "app" / "prompts.py") in entries["app/bot.py"]["deps"]
    assert "deps" not in entries["app/util.py"]
    # whether the system prompt prompts.py builds is kept for a conversation rests on its callers (kept_prompts.py)
    assert str(support_app / "app" / "bot.py") in entries["app/prompts.py"]["deps"]


def test_each_dependency_is_read_once_per_run(support_app, monkeypatch):
    """A warm run checks every edge; a module many files import is hashed once, not once per importer."""
    from cachelint.check import cache as cache_module

    for i in range(12):
        (support_app / "app" / f"bot_{i}.py").write_text(BOT.format(module="app.prompts"))
    check_tree(support_app)
    hashed: list[int] = []
    real = cache_module._sha256
    monkeypatch.setattr(cache_module, "_sha256", lambda content: hashed.append(len(content)) or real(content))
    found, linted = check_tree(support_app)
    # the prompt's builder, called from 13 modules, is reported once where the clock is read (shared_prompts.py)
    assert linted == ["cached=16"] and found == ["app/prompts.py:CL101"]
    prompts_size = len(PROMPTS_VOLATILE.encode())
    assert hashed.count(prompts_size) == 2  # once as a file of the tree, once as the edge every bot shares


WRAPPER = '''
import anthropic

client = anthropic.Anthropic()


def generate(messages):
    system = messages[0]["content"]
    return client.messages.create(model="claude-sonnet-4-5", max_tokens=500, system=system, messages=messages[1:])
'''

CALLER = '''
from app.llm import generate

PROMPT = {prompt!r}


def extract(text):
    return generate([{{"role": "system", "content": PROMPT}}, {{"role": "user", "content": text}}])
'''


def test_a_file_the_analysis_read_without_importing_it_is_an_edge(tmp_path, monkeypatch):
    """The wrapper's CL501 comes from its callers' prompt, in a module the wrapper never imports: the caller the
    analysis parsed is recorded as an edge, so shortening its prompt relints the wrapper."""
    app = tmp_path / "app"
    app.mkdir()
    (tmp_path / "pyproject.toml").write_text("[tool.cachelint]\n")
    (app / "__init__.py").write_text("")
    (app / "llm.py").write_text(WRAPPER)
    (app / "memory.py").write_text(CALLER.format(prompt="Keep the facts of the conversation as JSON. " * 300))
    monkeypatch.chdir(tmp_path)
    assert check_tree(tmp_path)[0] == ["app/llm.py:CL501"]
    assert check_tree(tmp_path) == (["app/llm.py:CL501"], ["cached=3"])
    (app / "memory.py").write_text(CALLER.format(prompt="Keep the facts as JSON."))
    assert check_tree(tmp_path) == ([], ["2", "cached=1"])  # memory.py changed; llm.py read it: both linted again
