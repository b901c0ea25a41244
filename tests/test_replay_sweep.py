"""`cachelint replay --sessions`: the session sweep's parts that need no engine (the counts, the kv prediction on
an engine's pool, the knee, the JSON a plot takes, usage errors). The sweep on a real vLLM is in
tests/test_replay_vllm.py (`-m vllm`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from replay_trace import write_agent_sessions

from cachelint.errors import CachelintError
from cachelint.replay.engine import CacheConfig
from cachelint.replay.sweep import SweepPoint, SweepResult, kv_prediction, parse_sessions


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cachelint", *args], capture_output=True, text=True, timeout=120, check=False)


def test_session_counts_take_lists_and_ranges():
    assert parse_sessions("1,2,4,8") == [1, 2, 4, 8]
    assert parse_sessions("1-4, 8,16,2") == [1, 2, 3, 4, 8, 16]
    assert parse_sessions("12-14") == [12, 13, 14]
    for bad in ("0", "4-2", "a", "1,,2", "1-99999", "-3"):
        with pytest.raises(CachelintError, match="--sessions"):
            parse_sessions(bad)


def test_the_kv_prediction_is_kvs_answer_for_the_engines_own_pool():
    """Qwen3-4B with FP8 KV is 72 KiB a token (the talk's figure); a pool of 4,097 blocks of 16 tokens (the null
    block left out) holds 65,536 tokens, so 3 sessions of 20,000 tokens; in whole blocks the same."""
    cache = CacheConfig(block_size=16, num_blocks=4097, prefix_caching=True)
    kv = kv_prediction(cache, 20_000, "Qwen/Qwen3-4B")
    assert kv.bytes_per_token == 2 * 36 * 8 * 128 * 2  # bf16 config: 144 KiB; the pool's bytes scale with it
    assert kv.pool_tokens == 65_536 and kv.pool_bytes == 65_536 * kv.bytes_per_token
    assert kv.max_concurrent_sessions == 3 and kv.session_blocks == 1250 and kv.block_bound == 3
    plain = kv_prediction(cache, 20_000, None)
    assert plain.max_concurrent_sessions == 3 and plain.model is None and "--kv-model" in plain.note
    rounded = kv_prediction(CacheConfig(block_size=128, num_blocks=65, prefix_caching=True), 1_000, None)
    assert (rounded.max_concurrent_sessions, rounded.block_bound) == (8, 8)  # 8,192 tokens; 8 blocks a session
    partial = kv_prediction(CacheConfig(block_size=128, num_blocks=65, prefix_caching=True), 1_030, None)
    assert (partial.max_concurrent_sessions, partial.block_bound) == (7, 7)  # 9 blocks a session: 64 // 9
    tight = kv_prediction(CacheConfig(block_size=128, num_blocks=65, prefix_caching=True), 1_150, None)
    assert (tight.max_concurrent_sessions, tight.block_bound) == (7, 7)
    with pytest.raises(CachelintError, match="block count"):
        kv_prediction(CacheConfig(block_size=16, num_blocks=None, prefix_caching=True), 100, None)


def _point(n: int, hit_rate: float, fits: bool) -> SweepPoint:
    return SweepPoint(n, 6 * n, 0, 1000 * n, int(1000 * n * hit_rate), 1000 * n - int(1000 * n * hit_rate), hit_rate, hit_rate,
                      10.0, 20.0, 1.0, 1000.0 * n, 1000 * n * hit_rate, 0.0, None, 0, fits)


def _result(rates: list[float], predicted: int = 4) -> SweepResult:
    cache = CacheConfig(block_size=128, num_blocks=65, prefix_caching=True)
    kv = kv_prediction(cache, 8192 // predicted, None)
    points = [_point(n, rate, n <= kv.max_concurrent_sessions) for n, rate in enumerate(rates, start=1)]
    return SweepResult("http://e", "tiny", cache, kv, points, 1, 1)


def test_the_knee_is_the_last_count_before_the_hit_rate_halves():
    assert _result([0.7, 0.71, 0.69, 0.68, 0.2, 0.05]).knee() == (4, 5)
    assert _result([0.7, 0.6, 0.5, 0.45]).knee() == (None, None)  # a slope, not a cliff
    assert _result([0.0, 0.0]).knee() == (None, None)  # nothing reused at all: no cliff to find


def test_the_json_has_one_series_per_column_for_the_plot():
    data = _result([0.7, 0.71, 0.69, 0.68, 0.2, 0.05]).to_json()
    assert data["knee"]["measured"] == 4 and data["knee"]["falls_at"] == 5 and data["knee"]["predicted"] == 4
    series = data["series"]
    assert series["sessions"] == [1, 2, 3, 4, 5, 6]
    assert series["hit_rate"] == [0.7, 0.71, 0.69, 0.68, 0.2, 0.05]
    assert len(series["ttft_p99_ms"]) == 6 and set(series) >= {"prefill_tokens", "predicted_hit_rate", "preemptions", "engine_evictions"}
    assert data["kv"]["pool_tokens"] == 64 * 128 and data["points"][4]["fits"] is False


def test_sweep_usage_errors(tmp_path: Path):
    trace = write_agent_sessions(tmp_path / "t.jsonl")
    bad = cli("replay", str(trace), "--base-url", "http://127.0.0.1:9", "--sessions", "1-x")
    assert bad.returncode == 2 and "--sessions '1-x': expected counts and ranges" in bad.stderr
    both = cli("replay", str(trace), "--base-url", "http://127.0.0.1:9", "--sessions", "1-4", "--what-if", "all")
    assert both.returncode == 2 and "--sessions runs its own concurrency" in both.stderr
    down = cli("replay", str(trace), "--base-url", "http://127.0.0.1:9", "--sessions", "1-4", "--model", "m")
    assert down.returncode == 2 and down.stderr.startswith("cachelint: error: cannot reach the vLLM server")
