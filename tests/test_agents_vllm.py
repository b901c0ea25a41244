"""Claude Code against a local engine: the real `claude` CLI through the real `cachelint proxy` to a real vLLM
(the CPU build) serving the Anthropic Messages API, so the proxy records a real prefix cache's reads; then the
proxy's recording replayed on the same engine, where cachelint's vLLM simulator predicts every request.

The model is the tests' tiny random-weight one, with room for Claude Code's prompt (tens of thousands of
tokens) and built to end every answer at once (tests/vllm_model.py --answer-at-once), so `claude -p` gets a
short valid answer; prefill, and so prefix reuse, is that of any model with this tokenizer.

Needs the claude CLI (.ci/agents.sh, or CACHELINT_AGENTS_BIN) and CACHELINT_VLLM_PYTHON (tests/vllm_env.sh).
Run with `-m "agents and vllm"`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_agents import agent_bin, base_env
from test_proxy import Proxy

from cachelint.record.store import Store
from cachelint.replay.launch import VllmServer

pytestmark = [pytest.mark.agents, pytest.mark.vllm]

HERE = Path(__file__).parent
MODELS = ["claude-sonnet-4-5", "claude-haiku-4-5"]
SERVER_ARGS = ["--served-model-name", *MODELS, "--max-model-len", "65536", "--enable-auto-tool-choice", "--tool-call-parser", "hermes",
               "--enable-scale-out"]  # /v1/messages/render: vLLM's own token ids for a Messages request
KEY = "sk-ant-local-engine-SECRET-0123456789"


@pytest.fixture(scope="module")
def engine(vllm_python, tmp_path_factory):
    model = tmp_path_factory.mktemp("vllm") / "agent-tiny"
    subprocess.run([vllm_python, str(HERE / "vllm_model.py"), str(model), "--max-positions", "65536", "--answer-at-once"],
                   check=True, capture_output=True, timeout=300)
    saved = os.environ.get("VLLM_CPU_KVCACHE_SPACE")
    os.environ["VLLM_CPU_KVCACHE_SPACE"] = "1"
    try:
        with VllmServer(str(model), MODELS[0], python=vllm_python, extra_args=SERVER_ARGS, timeout=600) as url:
            yield url
    finally:
        if saved is None:
            os.environ.pop("VLLM_CPU_KVCACHE_SPACE", None)
        else:
            os.environ["VLLM_CPU_KVCACHE_SPACE"] = saved


def test_claude_code_through_the_proxy_reads_a_real_prefix_cache_that_the_simulator_predicts(engine, tmp_path):
    claude = agent_bin("claude")
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir(), work.mkdir()
    proxy = Proxy(engine, tmp_path / "cachelint.db")
    env = base_env(home) | {
        "ANTHROPIC_BASE_URL": proxy.url, "ANTHROPIC_API_KEY": KEY, "DISABLE_AUTOUPDATER": "1", "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1", "CLAUDE_CODE_MAX_OUTPUT_TOKENS": "16", "MAX_THINKING_TOKENS": "0",
        "ANTHROPIC_SMALL_FAST_MODEL": MODELS[1], "ANTHROPIC_DEFAULT_HAIKU_MODEL": MODELS[1],
    }
    try:
        for step in (["-p", "say hello"], ["-c", "-p", "and again"], ["-c", "-p", "once more"]):
            out = subprocess.run([claude, *step, "--model", MODELS[0], "--allowedTools", "Read"], env=env, cwd=work,
                                 capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL, check=False)
            assert out.returncode == 0, f"{step}: {out.stdout[-1000:]}\n{out.stderr[-1000:]}"
    finally:
        proxy.stop()

    # live: the proxy recorded the engine's own cache reads, a real prefix cache's
    store = Store(proxy.db, readonly=True)
    try:
        rows = [r for r in store.rows(None) if r.provider == "anthropic"]
    finally:
        store.close()
    assert len(rows) >= 3 and all(r.status == 200 for r in rows), [(r.seq, r.status) for r in rows]
    assert all(r.prompt_tokens and r.prompt_tokens > 10_000 for r in rows)  # Claude Code's system prompt and tools
    assert rows[0].cache_read_tokens == 0  # a fresh engine
    for r in rows[1:]:
        assert r.cache_read_tokens % 128 == 0 and r.cache_read_tokens >= 0.9 * r.prompt_tokens, (r.seq, r.prompt_tokens, r.cache_read_tokens)

    # the recording replayed on the same engine, natively: every measured reuse equals the simulator's prediction,
    # and so does every cache read the proxy recorded live (both started cold, in the same order)
    result = subprocess.run([sys.executable, "-m", "cachelint", "replay", str(proxy.db), "--base-url", engine, "--model", MODELS[0],
                             "--api", "messages", "--check", "--format", "json"], capture_output=True, text=True, timeout=600, check=False)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["engine"]["api"] == "messages" and data["summary"]["agreement"] == 1.0 and data["summary"]["errors"] == 0
    replayed = [(q["prompt_tokens"], q["predicted_cached_tokens"]) for q in data["requests"]]
    assert replayed == [(r.prompt_tokens, r.cache_read_tokens) for r in rows]

    # the what-ifs measured on agent-shaped traffic (the fixes rewrite chat requests: the chat path)
    fixed = subprocess.run([sys.executable, "-m", "cachelint", "replay", str(proxy.db), "--base-url", engine, "--model", MODELS[0],
                            "--what-if", "freeze-volatile,sort-tools,keep-history,all", "--check", "--format", "json"],
                           capture_output=True, text=True, timeout=600, check=False)
    assert fixed.returncode == 0, fixed.stderr
    variants = json.loads(fixed.stdout)
    assert variants["engine"]["api"] == "chat" and variants["summary"]["errors"] == 0
    assert all(v["agreement"] == 1.0 and v["errors"] == 0 for v in [variants["summary"], *variants["what_if"].values()])
    # Claude Code appends and keeps its tools in order: no fix has anything to fix, so none costs a token more
    assert all(v["prefill_tokens"] <= variants["summary"]["prefill_tokens"] for v in variants["what_if"].values())
    for path in proxy.db.parent.glob(proxy.db.name + "*"):
        assert KEY.encode() not in path.read_bytes(), path
