"""`cachelint kv`: KV bytes per token from configs, capacity, sizes."""

import json

import pytest

from cachelint.errors import CachelintError
from cachelint.kv import bundled_models, capacity, kv_cost, model_kv_cost
from cachelint.kv.units import parse_size

REQUIRED = [
    "Qwen/Qwen3-4B", "Qwen/Qwen3-8B", "Qwen/Qwen3-32B", "meta-llama/Llama-3.1-8B-Instruct",
    "meta-llama/Llama-3.1-70B-Instruct", "mistralai/Mistral-7B-Instruct-v0.3", "deepseek-ai/DeepSeek-V3",
    "google/gemma-3-4b-it", "google/gemma-3-27b-it", "openai/gpt-oss-20b", "openai/gpt-oss-120b",
    "Qwen/Qwen3-Next-80B-A3B-Instruct",
]


def test_all_required_models_are_bundled():
    assert set(REQUIRED) <= set(bundled_models())


@pytest.mark.parametrize(
    "model, kv_dtype, per_token, fixed",
    [
        ("Qwen/Qwen3-4B", "fp8", 73_728, 0),  # 72 KiB: explicit head_dim 128, not 2560 / 32
        ("Qwen/Qwen3-4B", "auto", 147_456, 0),
        ("meta-llama/Llama-3.1-8B-Instruct", "auto", 131_072, 0),
        ("meta-llama/Llama-3.1-70B-Instruct", "auto", 327_680, 0),
        ("deepseek-ai/DeepSeek-V3", "auto", 70_272, 0),  # MLA: 61 x (512 + 64) x 2, no x2 for K/V
        ("google/gemma-3-4b-it", "auto", 20_480, 29 * 4 * 1024 * 1024),  # 5 global layers; 29 local x window
        ("openai/gpt-oss-20b", "auto", 24_576, 12 * 2048 * 128),
        ("Qwen/Qwen3-Next-80B-A3B-Instruct", "auto", 24_576, 36 * (32 * 128 * 128 + 8192 * 3) * 2),
    ],
)
def test_bytes_per_token(model, kv_dtype, per_token, fixed):
    cost = model_kv_cost(model, kv_dtype=kv_dtype)
    assert cost.bytes_per_token == per_token
    assert cost.per_sequence_fixed_bytes == fixed


@pytest.mark.parametrize(
    "model, billions",
    [("Qwen/Qwen3-4B", 4.02), ("meta-llama/Llama-3.1-8B-Instruct", 8.03), ("deepseek-ai/DeepSeek-V3", 671.0),
     ("openai/gpt-oss-120b", 116.8), ("google/gemma-3-27b-it", 27.4)],
)
def test_parameter_estimate_matches_published_sizes(model, billions):
    assert model_kv_cost(model).params / 1e9 == pytest.approx(billions, rel=0.02)


def test_concurrency_cliff_for_qwen3_4b_fp8_on_24gib():
    cost = model_kv_cost("Qwen/Qwen3-4B", kv_dtype="fp8", weight_dtype="fp8")
    report = capacity(cost, parse_size("24GiB"), 22_800, gpu_utilization=1.0)
    budget = 24 * 2**30 - cost.params
    assert report["weights_bytes"] == cost.params
    assert report["kv_budget_bytes"] == budget
    assert report["max_tokens_in_cache"] == budget // 73_728
    assert report["max_concurrent_sessions"] == budget // (22_800 * 73_728) == 12


def test_local_config_file_and_directory(tmp_path):
    config = {"model_type": "gpt2", "n_layer": 12, "n_head": 12, "n_embd": 768, "vocab_size": 50257, "torch_dtype": "float32"}
    (tmp_path / "config.json").write_text(json.dumps(config))
    for target in (tmp_path, tmp_path / "config.json"):
        cost = model_kv_cost(str(target))
        assert (cost.layers, cost.kv_heads, cost.head_dim, cost.dtype_bytes) == (12, 12, 64, 4.0)
        assert cost.bytes_per_token == 2 * 12 * 12 * 64 * 4


def test_head_dim_null_falls_back_and_mqa():
    base = {"num_hidden_layers": 2, "num_attention_heads": 8, "hidden_size": 512, "head_dim": None}
    assert kv_cost(base, "x").head_dim == 64
    assert kv_cost({**base, "multi_query": True}, "x").kv_heads == 1


def test_qwen2_style_disabled_sliding_window_is_full_attention():
    config = {"num_hidden_layers": 4, "num_attention_heads": 4, "hidden_size": 256, "sliding_window": 32768, "use_sliding_window": False}
    assert kv_cost(config, "x").plan.full == 4


@pytest.mark.parametrize("text, size", [("24GiB", 24 * 2**30), ("24GB", 24 * 10**9), ("80G", 80 * 2**30), ("1024", 1024), ("1.5 GiB", int(1.5 * 2**30)), ("512MiB", 512 * 2**20)])
def test_parse_size(text, size):
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["", "12XB", "GiB", "-1G", "1,000"])
def test_bad_sizes(text):
    with pytest.raises(CachelintError, match="invalid size"):
        parse_size(text)


def test_unknown_hub_model_offline_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    with pytest.raises(CachelintError, match="not bundled or cached"):
        model_kv_cost("someone/not-a-model")


def kv_cli(*args: str, env: dict | None = None):
    import os
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "cachelint", "kv", *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})})


def test_a_model_larger_than_the_gpu_is_said_not_to_fit():
    out = kv_cli("Qwen/Qwen3-32B", "--gpu-memory", "24GiB", "--session-tokens", "8000")
    assert out.returncode == 0 and "does not fit" in out.stdout and "larger than the GPU memory" in out.stdout
    data = json.loads(kv_cli("Qwen/Qwen3-32B", "--gpu-memory", "24GiB", "--format", "json").stdout)
    assert data["fits"] is False and data["kv_budget_bytes"] == 0 and "does not fit" in data["does_not_fit"]
    assert json.loads(kv_cli("Qwen/Qwen3-8B", "--gpu-memory", "80GiB", "--format", "json").stdout)["fits"] is True


@pytest.mark.parametrize("args, message", [
    (["--gpu-memory", "0"], "--gpu-memory must be more than 0 bytes"),
    (["--gpu-memory", "0GiB"], "--gpu-memory must be more than 0 bytes"),
    (["--session-tokens", "50000"], "past Qwen/Qwen3-8B's context length of 40,960 tokens"),
])
def test_impossible_sizes_are_refused(args, message):
    out = kv_cli("Qwen/Qwen3-8B", *args)
    assert out.returncode == 2 and out.stderr.startswith("cachelint: error: ") and message in out.stderr and out.stderr.count("\n") == 1


def test_the_context_length_comes_from_the_config():
    assert model_kv_cost("Qwen/Qwen3-8B").context_length == 40_960
    assert model_kv_cost("google/gemma-3-4b-it").context_length == 131_072  # in text_config
    yarn = {"num_hidden_layers": 2, "num_attention_heads": 4, "hidden_size": 256, "max_position_embeddings": 40960,
            "rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}}
    assert kv_cost(yarn, "yarn").context_length == 131_072
    assert capacity(model_kv_cost("Qwen/Qwen3-8B"), session_tokens=40_960)["session_tokens"] == 40_960


@pytest.mark.parametrize("model, maker", [("claude-sonnet-4-5", "Anthropic"), ("gpt-4o", "OpenAI"), ("anthropic/claude-opus-4-1", "Anthropic")])
def test_closed_models_publish_no_config(model, maker):
    out = kv_cli(model)
    assert out.returncode == 2 and f"is a closed model: {maker} publishes no config" in out.stderr and out.stderr.count("\n") == 1


def test_an_open_model_named_like_a_closed_one_is_not_refused_as_closed(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    with pytest.raises(CachelintError, match="not bundled or cached"):
        model_kv_cost("someone/claude-sonnet-4-5-distill")


def test_an_unknown_hub_id_offline_is_one_line_at_once(tmp_path):
    out = kv_cli("someone/not-a-model", env={"HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path)})
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "Hugging Face Hub cannot be reached (offline)" in out.stderr
