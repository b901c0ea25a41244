"""`cachelint replay --sessions`: the session sweep's parts that need no engine (the counts, the kv prediction on
an engine's pool, the knee, the JSON a plot takes, usage errors). The sweep on a real vLLM is in
tests/test_replay_vllm.py (`-m vllm`)."""

from __future__ import annotations

import json
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


def test_the_knee_is_the_last_count_that_loses_no_reuse_and_the_collapse_where_it_halves():
    assert _result([0.7, 0.7, 0.7, 0.7, 0.69, 0.5, 0.2, 0.05]).knee() == (4, 5)
    assert _result([0.7, 0.7, 0.7, 0.7, 0.69, 0.5, 0.2, 0.05]).collapse() == 7
    assert _result([0.7, 0.7, 0.6995]).knee() == (None, None)  # within the tolerance: rounding, not a loss
    assert _result([0.7, 0.6, 0.5, 0.45]).knee() == (1, 2) and _result([0.7, 0.6, 0.5, 0.45]).collapse() is None
    assert _result([0.0, 0.0]).knee() == (None, None)  # nothing reused at all: no cliff to find


def test_the_json_has_one_series_per_column_for_the_plot():
    data = _result([0.7, 0.7, 0.7, 0.7, 0.2, 0.05]).to_json()
    assert data["knee"]["measured"] == 4 and data["knee"]["falls_at"] == 5 and data["knee"]["predicted"] == 4
    assert data["knee"]["collapses_at"] == 5
    series = data["series"]
    assert series["sessions"] == [1, 2, 3, 4, 5, 6]
    assert series["hit_rate"] == [0.7, 0.7, 0.7, 0.7, 0.2, 0.05]
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


# --- on a real vLLM (the CPU build) with a deliberately small KV pool ------------------------------------------
#
# 64 blocks of 128 tokens (63 usable: block 0 is vLLM's null block) and one recorded agent session of six turns
# whose longest prompt is about 1,700 tokens (14 blocks): `kv` says 4 such sessions fit. The tolerance on the
# measured knee is [kv, kv + 1]: kv counts a session at its longest, with its last partial block and its output
# token; between turns the engine keeps only a session's full prompt blocks (13 here), and a session is shorter
# than its longest for most of its life. So kv's count always fits, and one session more can still fit in part
# (its hit rate dips, as at 5 here) before reuse collapses. Swept in steps of one, so the knee is exact to a session.

SWEEP_SERVER_ARGS = ["--max-model-len", "4096", "--num-gpu-blocks-override", "64", "--max-num-seqs", "16",
                     "--kv-cache-metrics", "--kv-cache-metrics-sample", "1"]


@pytest.fixture(scope="module")
def tiny_model(vllm_python, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("vllm") / "tiny"
    subprocess.run([vllm_python, str(Path(__file__).parent / "vllm_model.py"), str(out)], check=True, capture_output=True, timeout=300)
    return out


@pytest.fixture(scope="module")
def small_pool_server(vllm_python, tiny_model):
    import os

    from cachelint.replay.launch import VllmServer

    saved = os.environ.get("VLLM_CPU_KVCACHE_SPACE")
    os.environ["VLLM_CPU_KVCACHE_SPACE"] = "1"
    try:
        with VllmServer(str(tiny_model), "tiny", python=vllm_python, extra_args=SWEEP_SERVER_ARGS, timeout=600) as url:
            yield url
    finally:
        if saved is None:
            os.environ.pop("VLLM_CPU_KVCACHE_SPACE", None)
        else:
            os.environ["VLLM_CPU_KVCACHE_SPACE"] = saved


@pytest.fixture(scope="module")
def swept(small_pool_server, tiny_model, tmp_path_factory) -> dict:
    trace = write_agent_sessions(tmp_path_factory.mktemp("sweep") / "agent.jsonl", sessions=1, turns=6, file_lines=40)
    result = cli("replay", str(trace), "--base-url", small_pool_server, "--sessions", "1-8", "--kv-model", str(tiny_model), "--format", "json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.mark.vllm
def test_the_measured_knee_lies_where_kv_predicts_it(swept):
    kv, knee = swept["kv"], swept["knee"]
    assert swept["engine"]["block_size"] == 128 and kv["pool_blocks"] == 63 and kv["pool_tokens"] == 63 * 128
    assert kv["model"] and kv["bytes_per_token"] == 2 * 2 * 2 * 64 * 4  # the tiny model: 2 layers, 2 KV heads of 64, float32
    assert 1_200 < kv["session_tokens"] < 2_100, kv  # the trace is sized so the cliff is inside the sweep
    predicted = knee["predicted"]
    assert predicted == kv["pool_tokens"] // kv["session_tokens"] and 2 <= predicted <= 6
    assert knee["measured"] is not None, swept["series"]
    assert predicted <= knee["measured"] <= predicted + 1, (knee, swept["series"])


@pytest.mark.vllm
def test_hit_rate_holds_up_to_the_prediction_and_falls_past_the_knee(swept):
    points = {p["sessions"]: p for p in swept["points"]}
    predicted, fall = swept["knee"]["predicted"], swept["knee"]["falls_at"]
    alone = points[1]["hit_rate"]
    assert alone > 0.5
    assert all(points[n]["hit_rate"] >= 0.98 * alone for n in range(1, predicted + 1)), swept["series"]
    assert points[fall]["hit_rate"] < alone and points[8]["hit_rate"] < 0.5 * alone
    assert swept["knee"]["collapses_at"] is not None and swept["knee"]["collapses_at"] >= fall
    # prefill per request: what a session pays once its prefix is evicted
    assert points[8]["prefill_tokens"] / points[8]["requests"] > 2.5 * points[1]["prefill_tokens"] / points[1]["requests"]
    for p in swept["points"]:
        assert p["errors"] == 0 and p["requests"] == 6 * p["sessions"]
        assert p["engine_prefix_hits"] == p["cached_tokens"] and p["engine_prefix_queries"] == p["prompt_tokens"]
        assert p["preemptions"] is not None and p["engine_evictions"] is not None
        assert p["fits"] is (p["sessions"] <= predicted)
    assert points[8]["engine_evictions"] > 5 * max(1, points[1]["engine_evictions"])
    assert points[8]["predicted_evictions"] > points[predicted]["predicted_evictions"]


@pytest.mark.vllm
def test_the_simulator_follows_the_engine_through_the_cliff(swept):
    """Predicted in the order the engine answered: exact while everything fits; past the cliff requests race in
    the scheduler (which of two queued requests gets the freed blocks), so within 15 points of hit rate."""
    for p in swept["points"]:
        if p["fits"]:
            assert p["predicted_hit_rate"] == p["hit_rate"], p
        assert abs(p["predicted_hit_rate"] - p["hit_rate"]) <= 0.15, p


@pytest.mark.vllm
def test_the_sweep_as_text_marks_the_cliff(small_pool_server, tiny_model, tmp_path):
    trace = write_agent_sessions(tmp_path / "agent.jsonl", sessions=2, turns=3, file_lines=40)
    result = cli("replay", str(trace), "--base-url", small_pool_server, "--sessions", "2,4,6", "--kv-model", str(tiny_model))
    assert result.returncode == 0, result.stderr
    assert "session sweep on" in result.stdout and "63 usable blocks of 128 tokens" in result.stdout
    assert "2 recorded sessions" in result.stdout and "kv (" in result.stdout and "sessions of" in result.stdout
    assert "(the knee)" in result.stdout or "no reuse lost up to 6 sessions" in result.stdout
    assert "replaying 6 sessions at once" in result.stderr


# --- the cliff as a page ------------------------------------------------------------------------------------------

def _page_numbers(page: str) -> tuple[int, list[str], int]:
    import re

    points = len(re.findall(r"<circle class=['\"]point['\"]", page))  # a browser's DOM dump writes double quotes
    rates = re.findall(r"<td data-key=['\"]hit_rate['\"]>([^<]*)</td>", page)
    return points, rates, len(re.findall(r"<tr class=['\"]past['\"]>", page))


def test_the_cliff_page_draws_every_point_the_prediction_and_the_knee():
    from cachelint.replay.sweep_html import render_sweep_html

    data = _result([0.7, 0.7, 0.7, 0.7, 0.2, 0.05]).to_json()
    data["engine"]["model"] = "<tiny & model>"
    page = render_sweep_html(data)
    assert _page_numbers(page) == (6, ["70.0%", "70.0%", "70.0%", "70.0%", "20.0%", "5.0%"], 2)  # 5 and 6 are past the fall
    assert "<line class='kv'" in page and "kv: 4" in page and "<line class='knee'" in page and "knee: 4" in page
    assert "&lt;tiny &amp; model&gt;" in page and "<tiny" not in page
    flat = render_sweep_html(_result([0.7, 0.7, 0.7, 0.7]).to_json())  # no reuse lost in the sweep: no knee line
    assert "<line class='knee'" not in flat and "every N tried" in flat


def test_the_cliff_page_renders_in_a_real_browser_without_console_errors(tmp_path):
    from test_report_browser import browse, console_messages

    from cachelint.replay.sweep_html import render_sweep_html

    page = tmp_path / "sweep.html"
    page.write_text(render_sweep_html(_result([0.79, 0.79, 0.79, 0.79, 0.74, 0.16, 0.0, 0.02]).to_json()))
    shown = browse(page, tmp_path, "--dump-dom")
    assert shown.returncode == 0, shown.stderr[-2000:]
    assert console_messages(shown.stderr) == []
    assert _page_numbers(shown.stdout)[0] == 8 and "id=\"cliff\"" in shown.stdout
    shot = tmp_path / "sweep.png"
    assert browse(page, tmp_path, f"--screenshot={shot}").returncode == 0 and shot.stat().st_size > 10_000


def test_html_is_for_the_sweep(tmp_path: Path):
    trace = write_agent_sessions(tmp_path / "t.jsonl")
    out = cli("replay", str(trace), "--base-url", "http://127.0.0.1:9", "--format", "html")
    assert out.returncode == 2 and "--format html draws the session sweep" in out.stderr


@pytest.mark.vllm
def test_the_cliff_page_shows_the_measured_sweep(swept):
    from cachelint.replay.sweep_html import render_sweep_html

    page = render_sweep_html(swept)
    points, rates, _ = _page_numbers(page)
    assert points == len(swept["series"]["sessions"]) and rates == [f"{r:.1%}" for r in swept["series"]["hit_rate"]]
    assert f"kv: {swept['knee']['predicted']}" in page
