"""The real agents, told truly: the real Claude Code and Codex CLIs (versions pinned in tests/agents/package.json,
installed by .ci/agents.sh) driven non-interactively through the real `cachelint proxy` to the stand-in
(tests/upstream.py). Each test asserts what a user reads in `cachelint report`.

The CLIs are looked up in $CACHELINT_AGENTS_BIN, then .agents/node_modules/.bin, then PATH. Without them the tests
are skipped, unless CACHELINT_REQUIRE_AGENTS=1 (CI), which makes a missing CLI a failure.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from test_proxy import Proxy, report
from upstream import Upstream

pytestmark = pytest.mark.agents

ROOT = Path(__file__).resolve().parent.parent
ANTHROPIC_KEY = "sk-ant-agents-SECRET-0123456789abcdef"
OPENAI_KEY = "sk-proj-agents-SECRET-0123456789abcdef"


def agent_bin(name: str) -> str:
    for folder in (os.environ.get("CACHELINT_AGENTS_BIN"), str(ROOT / ".agents" / "node_modules" / ".bin")):
        if folder and (Path(folder) / name).exists():
            return str(Path(folder) / name)
    found = shutil.which(name)
    if found:
        return found
    message = f"the {name} CLI is not installed (run .ci/agents.sh, or set CACHELINT_AGENTS_BIN)"
    if os.environ.get("CACHELINT_REQUIRE_AGENTS") == "1":
        pytest.fail(message)
    pytest.skip(message)


def anthropic_minimum(model: str) -> int:
    from cachelint.simulate.models import anthropic_minimum as minimum

    return minimum(model)


@pytest.fixture
def upstream():
    with Upstream(anthropic_min_tokens=anthropic_minimum) as server:
        yield server


@pytest.fixture
def proxy(upstream, tmp_path):
    p = Proxy(upstream.url, tmp_path / "cachelint.db")
    yield p
    if p.process.poll() is None:
        p.stop()


def run_cli(argv: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    out = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=240, stdin=subprocess.DEVNULL)
    assert out.returncode == 0, f"{argv}: {out.returncode}\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}"
    return out


def base_env(home: Path) -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "LANG": "C.UTF-8", "TMPDIR": str(home)}


def stand_in_prompt_tokens(upstream: Upstream, route: str) -> int:
    total = 0
    for req, resp in zip(upstream.requests, upstream.responses):
        if req.route != route or resp.usage is None:
            continue
        u = resp.usage
        if route == "/v1/messages":
            total += u["input_tokens"] + u.get("cache_read_input_tokens", 0) + u.get("cache_creation_input_tokens", 0)
        else:
            total += u["input_tokens"]
    return total


def assert_no_key_on_disk(db: Path, key: str) -> None:
    for path in db.parent.glob(db.name + "*"):
        assert key.encode() not in path.read_bytes(), path


def conversation(data: dict, key: str) -> tuple[dict, list[dict]]:
    main = [s for s in data["sessions"] if s["session"] == key]
    sides = [s for s in data["sessions"] if s["session"].startswith(key + "/")]
    assert len(main) == 1, [s["session"] for s in data["sessions"]]
    return main[0], sides


def test_claude_code_conversation_with_a_model_switch_and_back(proxy, upstream, tmp_path):
    claude = agent_bin("claude")
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir(), work.mkdir()
    env = base_env(home) | {"ANTHROPIC_BASE_URL": proxy.url, "ANTHROPIC_API_KEY": ANTHROPIC_KEY,
                            "DISABLE_AUTOUPDATER": "1", "DISABLE_TELEMETRY": "1", "DISABLE_ERROR_REPORTING": "1"}
    tools = ["--allowedTools", "Read"]
    steps = [["-p", "say hello", "--model", "claude-sonnet-4-5"],
             ["-c", "-p", "and again", "--model", "claude-sonnet-4-5"],
             ["-c", "-p", "once more", "--model", "claude-sonnet-4-5"],
             ["-c", "-p", "now on haiku", "--model", "claude-haiku-4-5"],
             ["-c", "-p", "back on sonnet", "--model", "claude-sonnet-4-5"]]
    for step in steps:
        run_cli([claude, *step, *tools], env, work)
    proxy.stop()

    # the id `cachelint sessions` prints for this conversation is the one the report files it under
    listed = subprocess.run([sys.executable, "-m", "cachelint", "sessions", str(home / ".claude" / "projects"), "--format", "json"],
                            capture_output=True, text=True, timeout=120)
    assert listed.returncode == 0, listed.stderr
    [transcript] = json.loads(listed.stdout)
    data = report(proxy.db, "--session", transcript["session"])
    main, sides = conversation(data, transcript["session"])

    turns = [r for r in upstream.requests if r.route == "/v1/messages"]
    assert main["requests"] + sum(s["requests"] for s in sides) == len(turns)
    assert main["requests"] == len(steps)
    assert [(b["request"], b["cause"], b["rule"]) for b in main["breaks"]] == [(4, "model_changed", "CL401"), (5, "model_changed", "CL401")]
    assert all(s["breaks"] == [] for s in sides)  # side calls are never breaks of the main line
    assert main["errors"] == 0
    assert data["totals"]["prompt_tokens"] == stand_in_prompt_tokens(upstream, "/v1/messages")
    assert transcript["requests"] == main["requests"]  # Claude Code's own transcript counts the same responses
    assert_no_key_on_disk(proxy.db, ANTHROPIC_KEY)
    # the switches came from the command line, not from the project: no line of it is blamed
    linked, _ = conversation(report(proxy.db, "--session", transcript["session"], "--source", str(work)), transcript["session"])
    assert [(b["source"], b["source_note"].startswith("not found in")) for b in linked["breaks"]] == [([], True), ([], True)]


def codex_home(home: Path, proxy_url: str, compact_at: int, websocket: bool) -> Path:
    codex = home / ".codex"
    codex.mkdir(parents=True)
    (codex / "config.toml").write_text(
        'model = "gpt-5.1-codex"\nmodel_provider = "cachelint"\n'
        f"model_auto_compact_token_limit = {compact_at}\n\n"
        + ("[features]\nresponses_websockets = true\n\n" if websocket else "")
        + "[model_providers.cachelint]\n"
        'name = "cachelint proxy"\n'
        f'base_url = "{proxy_url}/v1"\n'
        'wire_api = "responses"\n'
        'env_key = "CACHELINT_TEST_OPENAI_KEY"\n'
        f"supports_websockets = {'true' if websocket else 'false'}\n"
    )
    return codex


def codex_session(tmp_path: Path, proxy: Proxy, steps: list[list[str]], compact_at: int, websocket: bool = False) -> Path:
    codex = agent_bin("codex")
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir(), work.mkdir()
    env = base_env(home) | {"CODEX_HOME": str(codex_home(home, proxy.url, compact_at, websocket)), "CACHELINT_TEST_OPENAI_KEY": OPENAI_KEY}
    for step in steps:
        run_cli([codex, "exec", "--skip-git-repo-check", *step], env, work)
    proxy.stop()
    return home


def thread_id(home: Path) -> str:
    [rollout] = list((home / ".codex" / "sessions").rglob("rollout-*.jsonl"))
    first = json.loads(rollout.read_text().splitlines()[0])
    return first["payload"]["id"]


def kind_of(request) -> str:
    meta = (request.json or {}).get("client_metadata") or {}
    raw = meta.get("x-codex-turn-metadata") or request.header("x-codex-turn-metadata") or "{}"
    return "prewarm" if (request.json or {}).get("generate") is False else json.loads(raw).get("request_kind")


@pytest.mark.parametrize("websocket", [False, True], ids=["http", "websocket"])
def test_codex_with_compaction_and_a_model_switch(proxy, upstream, tmp_path, websocket):
    steps = [["say hello"], ["resume", "--last", "and again"], ["resume", "--last", "a third time"],
             ["-m", "gpt-5.1-codex-mini", "resume", "--last", "now on mini"]]
    home = codex_session(tmp_path, proxy, steps, compact_at=2000, websocket=websocket)
    key = thread_id(home)
    data = report(proxy.db, "--session", key)
    main, sides = conversation(data, key)

    turns = [r for r in upstream.requests if r.route == "/v1/responses"]
    assert {r.method for r in turns} == ({"WS"} if websocket else {"POST"})
    kinds = [kind_of(r) for r in turns]
    assert "compaction" in kinds, "the low compaction limit made Codex compact"
    assert main["requests"] == kinds.count("turn") == len(steps)
    assert {s["session"]: s["requests"] for s in sides} == {f"{key}/side-{k}": kinds.count(k) for k in set(kinds) - {"turn"}}
    causes = [(b["request"], b["cause"]) for b in main["breaks"]]
    assert (3, "compaction") in causes and (4, "model_changed") in causes, causes
    switch = next(b for b in main["breaks"] if b["cause"] == "model_changed")
    assert switch["rule"] == "CL401" and "compaction" in [d["cause"] for d in switch["divergences"]]
    named = [d for s in data["sessions"] for b in s["breaks"] for d in [b, *b["divergences"]]]
    assert not [d for d in named if d["rule"] in ("CL101", "CL301")]  # a compaction is never called edited history
    assert data["totals"]["errors"] == 0  # Codex closes after response.completed: complete, not an error
    assert data["totals"]["requests"] == len(turns)
    assert data["totals"]["prompt_tokens"] == stand_in_prompt_tokens(upstream, "/v1/responses")

    listed = subprocess.run([sys.executable, "-m", "cachelint", "sessions", str(home / ".codex" / "sessions"), "--format", "json"],
                            capture_output=True, text=True, timeout=120)
    [rollout] = json.loads(listed.stdout)
    # Codex's rollout records every response but its prewarms (which generate nothing); its counts agree with the proxy's
    prewarm = sum(s["prompt_tokens"] for s in sides if s["session"].endswith("/side-prewarm"))
    assert (rollout["session"], rollout["agent"], rollout["requests"]) == (key, "codex", len(turns) - kinds.count("prewarm"))
    assert rollout["prompt_tokens"] == data["totals"]["prompt_tokens"] - prewarm
    assert_no_key_on_disk(proxy.db, OPENAI_KEY)


@pytest.mark.parametrize("websocket", [False, True], ids=["http", "websocket"])
def test_codex_turns_without_compaction_are_one_clean_conversation(proxy, upstream, tmp_path, websocket):
    steps = [["say hello"], ["resume", "--last", "and again"], ["resume", "--last", "a third time"]]
    home = codex_session(tmp_path, proxy, steps, compact_at=10_000_000, websocket=websocket)
    key = thread_id(home)
    data = report(proxy.db)
    main, sides = conversation(data, key)
    assert (main["requests"], main["breaks"]) == (3, [])
    assert [s["session"] for s in sides] == ([f"{key}/side-prewarm"] if websocket else [])
    assert all(s["breaks"] == [] for s in sides)
    assert main["cache_read_tokens"] > 0  # resumed turns read the previous prefix
    assert data["totals"]["prompt_tokens"] == stand_in_prompt_tokens(upstream, "/v1/responses")


def test_codex_builtin_provider_speaks_websocket_and_is_recorded(proxy, upstream, tmp_path):
    """The recipe without a provider entry: `openai_base_url` in config.toml and `codex login --with-api-key`.
    Codex's built-in OpenAI provider then talks WebSocket, and every request of it is recorded."""
    codex = agent_bin("codex")
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir(), work.mkdir()
    config = home / ".codex"
    config.mkdir()
    (config / "config.toml").write_text(f'model = "gpt-5.1-codex"\nopenai_base_url = "{proxy.url}/v1"\n')
    env = base_env(home) | {"CODEX_HOME": str(config)}
    login = subprocess.run([codex, "login", "--with-api-key"], input=OPENAI_KEY + "\n", env=env, capture_output=True, text=True, timeout=120)
    assert login.returncode == 0, login.stderr
    run_cli([codex, "exec", "--skip-git-repo-check", "say hello"], env, work)
    run_cli([codex, "exec", "--skip-git-repo-check", "resume", "--last", "and again"], env, work)
    proxy.stop()
    key = thread_id(home)
    data = report(proxy.db)
    main, _sides = conversation(data, key)
    assert {r.method for r in upstream.requests} == {"WS"}
    assert (main["requests"], main["breaks"], main["errors"]) == (2, [], 0)
    assert data["totals"]["requests"] == len(upstream.requests)
    assert data["totals"]["prompt_tokens"] == stand_in_prompt_tokens(upstream, "/v1/responses")
    assert_no_key_on_disk(proxy.db, OPENAI_KEY)


def test_claude_code_carries_a_memory_edit_forward_without_breaking_the_prefix(proxy, upstream, tmp_path):
    """A user edits CLAUDE.md in the middle of a conversation. Claude Code 2.1 keeps the memory it sent at the
    start of the conversation and appends the edited file as a new reminder, so the cached prefix holds: the
    report shows no break and `report --source` attributes nothing (no false place to "fix")."""
    claude = agent_bin("claude")
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir(), work.mkdir()
    notes = "# Project notes\n\n- Use Python 3.11 and type hints everywhere.\n- Run tests with pytest -q before you commit.\n- Never edit files under vendor/.\n"
    (work / "CLAUDE.md").write_text(notes)
    env = base_env(home) | {"ANTHROPIC_BASE_URL": proxy.url, "ANTHROPIC_API_KEY": ANTHROPIC_KEY,
                            "DISABLE_AUTOUPDATER": "1", "DISABLE_TELEMETRY": "1", "DISABLE_ERROR_REPORTING": "1"}
    run_cli([claude, "-p", "say hello", "--model", "claude-sonnet-4-5", "--allowedTools", "Read"], env, work)
    run_cli([claude, "-c", "-p", "and again", "--model", "claude-sonnet-4-5", "--allowedTools", "Read"], env, work)
    (work / "CLAUDE.md").write_text(notes.replace("pytest -q before", "pytest -x -q before"))
    run_cli([claude, "-c", "-p", "once more", "--model", "claude-sonnet-4-5", "--allowedTools", "Read"], env, work)
    proxy.stop()

    last = [r for r in upstream.requests if r.route == "/v1/messages"][-1].body.decode()
    old, new = last.find("pytest -q before"), last.find("pytest -x -q before")
    assert 0 <= old < new  # the first memory kept where it was, the edited one appended after it
    data = report(proxy.db, "--source", str(work))
    main = max(data["sessions"], key=lambda s: s["requests"])
    assert main["requests"] == 3 and main["breaks"] == []
    assert main["turns"][2]["cache_read_tokens"] > 0
    assert data["sources"] == [] and data["sources_unmatched"]["breaks"] == 0
