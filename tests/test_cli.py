"""The `cachelint` command as a user runs it: output, exit codes, one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bodies import anthropic_body, claude_code_exchange

DEMO = Path(__file__).resolve().parent.parent / "cachelint" / "demo" / "data"


def cachelint(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cachelint", *args], capture_output=True, text=True, cwd=cwd, timeout=120)


def write(tmp_path: Path, name: str, data) -> str:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return str(path)


def test_version_and_help():
    out = cachelint("--version")
    assert out.returncode == 0 and "cachelint, version" in out.stdout
    help_ = cachelint("--help")
    assert help_.returncode == 0
    for command in ("diff", "kv", "demo"):
        assert command in help_.stdout
    assert "--tokenizer" in cachelint("diff", "--help").stdout


def test_diff_json_contract_on_the_demo_break():
    out = cachelint("diff", str(DEMO / "turn-3.json"), str(DEMO / "turn-4.json"), "--format", "json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    for key in ("cause", "detail", "rule", "location", "before", "after", "common_prefix_tokens",
                "before_prompt_tokens", "after_prompt_tokens", "reprefilled_tokens"):
        assert key in data
    assert (data["cause"], data["detail"], data["rule"]) == ("system_changed", "volatile_value", "CL101")
    assert data["location"]["pointer"] == "/system/1/text"
    body = json.loads((DEMO / "turn-4.json").read_text())["request"]["body"]
    assert body["system"][1]["text"][data["location"]["char"]:].startswith("2")  # the minute's digit
    assert "10:31" in data["before"] and "10:32" in data["after"]
    assert data["reprefilled_tokens"] == data["before_prompt_tokens"] - data["common_prefix_tokens"] > 0


def test_diff_text_explains_cause_place_and_fix(tmp_path):
    after = anthropic_body()
    after["tools"].reverse()
    out = cachelint("diff", write(tmp_path, "a.json", anthropic_body()), write(tmp_path, "b.json", after))
    assert out.returncode == 0, out.stderr
    assert "tools_changed / tools_reordered" in out.stdout
    assert "CL201 unordered-tools" in out.stdout
    assert "at       /tools/0" in out.stdout
    assert "Sort the tools by name" in out.stdout


def test_diff_reports_the_token_estimate_against_recorded_usage(tmp_path):
    exchange = claude_code_exchange()
    path = write(tmp_path, "turn.json", exchange)
    out = cachelint("diff", path, path, "--format", "json")
    data = json.loads(out.stdout)
    assert data["cause"] == "none"
    assert data["tokenizer"] == "anthropic-approx(o200k_base)"
    assert data["token_estimate"]["after"]["reported_prompt_tokens"] == 2562
    text = cachelint("diff", path, path)
    assert "provider reported 2,562" in text.stdout


@pytest.mark.parametrize(
    "make_args, message",
    [
        (lambda t: ["diff", str(t / "missing.json"), str(t / "missing.json")], "no such file"),
        (lambda t: ["diff", write(t, "bad.json", "{nope"), write(t, "ok.json", anthropic_body())], "invalid JSON at line 1"),
        (lambda t: ["diff", write(t, "arr.json", "[1, 2]"), write(t, "ok.json", anthropic_body())], "no known request shape"),
        (lambda t: ["diff", write(t, "a.json", anthropic_body()), write(t, "b.json", {"model": "gpt-4o", "input": "x"})], "compare requests to one API"),
        (lambda t: ["diff", str(t), str(t)], "is a directory"),
        (lambda t: ["kv", "no-such-model"], "unknown model"),
        (lambda t: ["kv", "Qwen/Qwen3-4B", "--gpu-memory", "lots"], "invalid size"),
        (lambda t: ["kv", write(t, "cfg.json", {"foo": 1})], "lacks num_hidden_layers"),
        (lambda t: ["kv", "Qwen/Qwen3-4B", "--kv-dtype", "fp3"], "Invalid value for '--kv-dtype'"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path, make_args, message):
    out = cachelint(*make_args(tmp_path))
    assert out.returncode == 2
    assert message in out.stderr
    assert "Traceback" not in out.stderr
    if "Usage:" not in out.stderr:  # click's usage errors print the usage line first
        assert len(out.stderr.strip().splitlines()) == 1, out.stderr


def test_non_utf8_file(tmp_path):
    path = tmp_path / "latin1.json"
    path.write_bytes(b'{"messages": ["caf\xe9"]}')
    out = cachelint("diff", str(path), str(path))
    assert out.returncode == 2 and "not UTF-8" in out.stderr and "Traceback" not in out.stderr


def test_kv_json_fields():
    out = cachelint("kv", "Qwen/Qwen3-4B", "--kv-dtype", "fp8", "--weight-dtype", "fp8", "--gpu-memory", "24GiB",
                    "--gpu-util", "1.0", "--session-tokens", "22800", "--format", "json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["bytes_per_token"] == 73_728
    assert (data["layers"], data["kv_heads"], data["head_dim"], data["dtype_bytes"]) == (36, 8, 128, 1.0)
    for key in ("per_sequence_fixed_bytes", "weights_bytes", "kv_budget_bytes", "max_tokens_in_cache", "max_concurrent_sessions"):
        assert key in data
    assert data["max_concurrent_sessions"] == 12


def test_kv_text_shows_the_formula():
    out = cachelint("kv", "deepseek-ai/DeepSeek-V3")
    assert out.returncode == 0
    assert "70,272 B" in out.stdout and "MLA" in out.stdout


def test_demo_shows_the_break_and_its_cost():
    out = cachelint("demo")
    assert out.returncode == 0, out.stderr
    assert "Turn 4" in out.stdout and "system_changed / volatile_value" in out.stdout
    assert "CL101" in out.stdout and "What it costs" in out.stdout and "73,728 B per token" in out.stdout
    data = json.loads(cachelint("demo", "--format", "json").stdout)
    causes = [t["cause"] for t in data["turns"]]
    assert causes == [None, "none", "none", "system_changed", "none", "none"]
    assert data["breaks"][0]["turn"] == 4 and data["wasted_prefill_tokens"] == data["breaks"][0]["reprefilled_tokens"] > 0
    assert [f["code"] for f in data["lint"]["findings"]] == ["CL101", "CL102", "CL301", "CL501", "CL201"]
    assert "Before it ships" in out.stdout and "Through the proxy" in out.stdout
    assert [(b["request"], b["cause"], b["rule"]) for b in data["proxy"]["breaks"]] == [(4, "system_changed", "CL101")]
    assert data["proxy"]["requests"] == 6 and data["proxy"]["cache_read_tokens"] > 0
