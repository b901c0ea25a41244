"""`cachelint replay` on a real vLLM (the CPU build) serving a tiny random-weight model.

Needs a Python with vLLM installed in CACHELINT_VLLM_PYTHON (.ci/run builds one); skipped without it unless
CACHELINT_REQUIRE_VLLM=1, which turns the skip into a failure (CI). Deselect locally with `-m "not vllm"`.

The server runs with 64 blocks of 128 tokens: the replay below needs several times that, so the engine evicts
blocks all the time and the simulator's LRU model is checked along with its hash chain and hit cap.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from replay_trace import write_trace

from cachelint.cli import main as cachelint_main
from cachelint.replay.engine import Engine
from cachelint.replay.launch import VllmServer
from cachelint.replay.run import Replay, ReplayOptions
from cachelint.replay.source import load

pytestmark = pytest.mark.vllm

HERE = Path(__file__).parent
SERVER_ARGS = ["--max-model-len", "4096", "--num-gpu-blocks-override", "64", "--max-num-seqs", "8"]
VARIANTS = ["freeze-volatile", "sort-tools", "keep-history", "all"]


@pytest.fixture(scope="module")
def vllm_env():
    saved = {k: os.environ.get(k) for k in ("VLLM_CPU_KVCACHE_SPACE", "HF_HUB_OFFLINE")}
    os.environ["VLLM_CPU_KVCACHE_SPACE"] = "1"
    os.environ["HF_HUB_OFFLINE"] = "1"
    yield
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@pytest.fixture(scope="module")
def tiny_model(vllm_python, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("vllm") / "tiny"
    subprocess.run([vllm_python, str(HERE / "vllm_model.py"), str(out)], check=True, capture_output=True, timeout=300)
    return out


@pytest.fixture(scope="module")
def server(vllm_python, vllm_env, tiny_model) -> str:
    with VllmServer(str(tiny_model), "tiny", python=vllm_python, extra_args=SERVER_ARGS, timeout=600) as url:
        yield url


@pytest.fixture(scope="module")
def trace(tmp_path_factory) -> Path:
    return write_trace(tmp_path_factory.mktemp("trace") / "trace.jsonl")


def run_cli(capsys, *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exit_info:
        cachelint_main(list(args))
    captured = capsys.readouterr()
    return exit_info.value.code, captured.out, captured.err


@pytest.fixture(scope="module")
def replayed(server, trace) -> dict:
    """The whole trace and every what-if variant, through the CLI, as JSON."""
    result = subprocess.run(
        [sys.executable, "-m", "cachelint", "replay", str(trace), "--base-url", server + "/v1", "--model", "tiny",
         "--what-if", ",".join(VARIANTS), "--check", "--format", "json"],
        capture_output=True, text=True, timeout=600, check=False,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_every_measured_reuse_equals_the_prediction(replayed):
    assert replayed["engine"]["block_size"] == 128 and replayed["engine"]["num_blocks"] == 64
    assert replayed["summary"]["agreement"] == 1.0
    assert all(s["agreement"] == 1.0 for s in replayed["what_if"].values())
    for r in replayed["requests"]:
        assert r["error"] is None and r["cached_tokens"] == r["predicted_cached_tokens"]
        assert r["cached_tokens"] % 128 == 0 and r["cached_tokens"] < r["prompt_tokens"]
    total = replayed["summary"]["prompt_tokens"] + sum(s["prompt_tokens"] for s in replayed["what_if"].values())
    assert total > 4 * 64 * 128  # far more than the engine holds: eviction was part of what agreed


def test_the_engines_own_counters_agree_with_the_per_request_numbers(replayed):
    for s in [replayed["summary"], *replayed["what_if"].values()]:
        assert s["engine_prefix_queries"] == s["prompt_tokens"]
        assert s["engine_prefix_hits"] == s["prompt_tokens"] - s["prefill_tokens"]


def test_breaks_in_the_recording_are_lost_reuse_on_the_engine(replayed):
    by = {(r["session"].split("/")[0], r["seq"]): r for r in replayed["requests"]}
    assert by[("sess-ts", 3)]["recorded_break"] == "system_changed"
    # before the break the session reads most of its prompt; at the break only the tools ahead of the timestamp
    assert by[("sess-ts", 2)]["cached_tokens"] > by[("sess-ts", 2)]["prompt_tokens"] // 2
    assert by[("sess-ts", 3)]["cached_tokens"] < by[("sess-ts", 3)]["prompt_tokens"] // 4
    assert by[("sess-tools", 3)]["recorded_break"] == "tools_changed" and by[("sess-tools", 3)]["cached_tokens"] == 0
    # the clean session: its prompt never changed ("provider_side": the recording's provider reused nothing anyway)
    unchanged = (None, "none", "provider_side")
    clean = [by[(next(k[0] for k in by if k[0].startswith("openai-chat") and by[k]["recorded_break"] in unchanged and k[1] == 5), n)] for n in (2, 3, 4, 5)]
    assert all(r["cached_tokens"] >= 0.6 * r["prompt_tokens"] for r in clean)


def test_each_fix_measures_less_prefill_and_all_of_them_least(replayed):
    original = replayed["summary"]["prefill_tokens"]
    fixed = {v: s["prefill_tokens"] for v, s in replayed["what_if"].items()}
    assert all(fixed[v] < original for v in VARIANTS), (original, fixed)
    assert fixed["all"] < min(fixed[v] for v in VARIANTS if v != "all")
    assert replayed["what_if"]["all"]["hit_rate"] > replayed["summary"]["hit_rate"]
    assert set(replayed["requests"][0]) >= {"index", "session", "prompt_tokens", "cached_tokens", "predicted_cached_tokens", "ttft_ms"}
    assert set(replayed["summary"]) >= {"requests", "hit_rate", "agreement", "prefill_tokens", "ttft_p50_ms", "ttft_p99_ms"}
    assert all(r["ttft_ms"] > 0 for r in replayed["requests"])


def test_text_output_shows_requests_and_variants_side_by_side(server, trace, capsys):
    code, out, _ = run_cli(capsys, "replay", str(trace), "--base-url", server, "--what-if", "freeze-volatile",
                           "--session", "sess-ts")
    assert code == 0
    assert "block size 128, 64 blocks" in out and "model tiny" in out  # the one served model is the default
    assert "original traffic, request by request" in out and "measured on the engine" in out
    assert "freeze-volatile" in out and "system_changed" in out


def test_check_exits_1_and_says_which_request_when_the_prediction_is_wrong(server, trace, capsys, monkeypatch):
    real = Engine.cache_config

    def wrong_block_size(self, metrics=None):
        config = real(self, metrics)
        config.block_size = 64  # a simulator that believes the wrong block size must disagree with the engine
        return config

    monkeypatch.setattr(Engine, "cache_config", wrong_block_size)
    code, _, err = run_cli(capsys, "replay", str(trace), "--base-url", server, "--model", "tiny", "--check", "--format", "json")
    assert code == 1
    lines = [line for line in err.splitlines() if line.startswith("cachelint: request ")]
    assert lines and all("measured" in line and "predicted" in line for line in lines)


def test_a_model_the_server_does_not_serve_is_one_line(server, trace, capsys):
    code, _, err = run_cli(capsys, "replay", str(trace), "--base-url", server, "--model", "nope")
    assert code == 2
    assert err.strip() == f"cachelint: error: the server at {server} does not serve model 'nope' (it serves: tiny)"


def test_concurrent_sessions_and_recorded_gaps(server, trace):
    recorded = load(trace)
    with Engine(server, "tiny") as engine:
        result = Replay(engine, recorded, ReplayOptions(concurrency=4)).run()
        results = result.results["original"]
        assert len(results) == 20 and all(r.error is None and r.prompt_tokens == r.tokens for r in results)
        summary = result.summaries["original"]
        assert summary.engine_prefix_hits == summary.cached_tokens  # concurrency may race the prediction, never the counting
        span = recorded[-1].started_at - recorded[0].started_at
        started = time.monotonic()
        gapped = Replay(engine, recorded, ReplayOptions(speed=8.0)).run()
        assert time.monotonic() - started >= span / 8.0
        assert gapped.summaries["original"].agreement == 1.0


def test_more_output_tokens_fill_the_pool_as_predicted(server, trace):
    """--max-tokens 40: decoded tokens take blocks too (in 64 blocks that changes what is evicted)."""
    with Engine(server, "tiny") as engine:
        result = Replay(engine, load(trace), ReplayOptions(max_tokens=40)).run()
    assert result.summaries["original"].agreement == 1.0, [r.disagreement() for r in result.disagreements]


def test_the_simulator_agrees_with_vllms_own_block_pool(vllm_python):
    """Thousands of requests (aligned and unaligned prompts, repeats, edits, salts, output tokens) on small
    pools, run through vLLM's BlockPool as its full-attention manager drives it and through the simulator."""
    out = subprocess.run([vllm_python, str(HERE / "vllm_blockpool_check.py"), "200"], capture_output=True, text=True, timeout=300, check=True)
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["requests"] > 10_000
    assert report["disagreement_count"] == 0, report["disagreements"]


def _group_alive(pgid: int) -> list[str]:
    """Processes (not zombies) left in a process group."""
    alive = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            alive.append(stat.parent.name)
    return alive


def test_launch_stops_the_server_whatever_happens(vllm_python, vllm_env, tiny_model, trace, tmp_path, capsys, monkeypatch):
    """--launch on a server without prompt token details: one clear line, exit 2, and no server left behind."""
    model = tmp_path / "launched-tiny"
    shutil.copytree(tiny_model, model)
    started: list[int] = []
    real_start = VllmServer.start

    def start(self):
        try:
            return real_start(self)
        finally:
            started.append(self.pid)

    monkeypatch.setattr(VllmServer, "start", start)
    code, _, err = run_cli(capsys, "replay", str(trace), "--launch", str(model), "--vllm-python", vllm_python,
                           *(f"--launch-arg={a}" for a in SERVER_ARGS), "--launch-arg=--no-enable-prompt-tokens-details")
    assert code == 2
    assert "reports no prompt_tokens_details: start it with --enable-prompt-tokens-details" in err.strip().splitlines()[-1]
    assert started and started[0] is not None
    time.sleep(1)
    assert _group_alive(started[0]) == [], "a process of the launched vLLM (its engine core?) is still running"


def test_keys_in_the_recording_never_reach_the_replay_output(server, tmp_path, capsys):
    """A recorded trace that still carries credentials: the replay's output and the store hold none of them."""
    keys = ["sk-ant-REPLAY-SECRET-1", "Bearer sk-REPLAY-SECRET-2", "sk-REPLAY-QUERY-3"]
    lines = []
    for line in write_trace(tmp_path / "plain.jsonl", turns=2).read_text().splitlines():
        exchange = json.loads(line)
        exchange["request"]["headers"].update({"x-api-key": keys[0], "authorization": keys[1]})
        exchange["request"]["url"] += f"?key={keys[2]}"
        lines.append(json.dumps(exchange))
    trace = tmp_path / "with-keys.jsonl"
    trace.write_text("\n".join(lines) + "\n")
    db = tmp_path / "store.db"
    code, _, err = run_cli(capsys, "import", str(trace), "--db", str(db))
    assert code == 0, err
    outputs = []
    for source in (str(db), str(trace)):
        for fmt in ("json", "text"):
            code, out, err = run_cli(capsys, "replay", source, "--base-url", server, "--format", fmt)
            assert code == 0, err
            outputs.append(out + err)
    written = "".join(outputs).encode() + b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith("store.db"))
    for key in keys:
        assert key.split()[-1].encode() not in written, key


def _claude_code_shaped(trace: Path, out: Path) -> Path:
    """The trace with Claude Code's system blocks: a billing header whose hash changes every request, then two
    text blocks (vLLM's Messages API leaves the header out and joins the blocks with nothing between them)."""
    lines = []
    for n, line in enumerate(trace.read_text().splitlines()):
        exchange = json.loads(line)
        body = exchange["request"]["body"]
        if isinstance(body.get("system"), list):
            body["system"] = [{"type": "text", "text": f"x-anthropic-billing-header: cc_version=2.0.50; cc_entrypoint=cli; cch={n * 7919 % 99991:05d};"},
                              {"type": "text", "text": "You are Claude Code, Anthropic's official CLI for Claude."}, *body["system"]]
        lines.append(json.dumps(exchange))
    out.write_text("\n".join(lines) + "\n")
    return out


def test_anthropic_requests_replayed_natively_reuse_what_the_chat_path_reuses(server, trace, tmp_path):
    """The same recording through vLLM's /v1/messages (as recorded: system blocks, tools, cache_control) and
    converted to chat: both agree with the prediction request by request, and reuse the same."""
    shaped = _claude_code_shaped(trace, tmp_path / "claude-code.jsonl")
    runs = {}
    for api in ("messages", "chat"):
        result = subprocess.run([sys.executable, "-m", "cachelint", "replay", str(shaped), "--base-url", server, "--model", "tiny",
                                 "--api", api, "--check", "--format", "json"], capture_output=True, text=True, timeout=600, check=False)
        assert result.returncode == 0, result.stderr
        runs[api] = json.loads(result.stdout)
        assert runs[api]["engine"]["api"] == api and runs[api]["summary"]["agreement"] == 1.0
    native, chat = runs["messages"]["requests"], runs["chat"]["requests"]
    anthropic = [i for i, r in enumerate(native) if r["session"].startswith(("sess-ts", "sess-tools"))]
    assert len(anthropic) == 10
    block = runs["messages"]["engine"]["block_size"]
    for i in range(len(native)):
        assert native[i]["error"] is None and native[i]["cached_tokens"] == native[i]["predicted_cached_tokens"]
        if i in anthropic:
            # the chat prompt has up to 8 tokens more after the first system block, so the prefix two requests share
            # can reach across one more block boundary: which one depends on where the boundaries fall (the test
            # model's tokenizer is trained on this repository's text), not on how either path reuses
            assert native[i]["cached_tokens"] <= chat[i]["cached_tokens"] <= native[i]["cached_tokens"] + block
        else:
            assert native[i]["cached_tokens"] == chat[i]["cached_tokens"]
    assert sum(native[i]["cached_tokens"] > 0 for i in anthropic) >= 6  # the later turns of both sessions reuse
    # one blank line less between each pair of system blocks: the native prompt is a little shorter
    assert all(0 < chat[i]["prompt_tokens"] - native[i]["prompt_tokens"] <= 8 for i in anthropic)
    assert all(native[i]["prompt_tokens"] == chat[i]["prompt_tokens"] for i in range(len(native)) if i not in anthropic)
    assert runs["messages"]["summary"]["engine_prefix_hits"] == runs["messages"]["summary"]["cached_tokens"]
