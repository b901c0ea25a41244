"""Token counting works offline: tiktoken's files are rebuilt from shipped ranks and verified."""

import hashlib
import subprocess
import sys

import pytest

from cachelint.tokens import _TIKTOKEN_FILES, counter_for, encoding_for_model, seed_tiktoken_cache


def test_seeded_file_matches_tiktokens_pinned_hash(tmp_path, monkeypatch):
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    seed_tiktoken_cache("cl100k_base")
    url, expected = _TIKTOKEN_FILES["cl100k_base"]
    path = tmp_path / hashlib.sha1(url.encode()).hexdigest()
    assert hashlib.sha256(path.read_bytes()).hexdigest() == expected


@pytest.mark.parametrize("model, ids", [("gpt-4", [15339, 1917]), ("gpt-4o", [24912, 2375]), ("gpt-5", [24912, 2375])])
def test_fresh_cache_in_a_new_process_without_network(tmp_path, model, ids):
    code = f"from cachelint.tokens import counter_for; print(counter_for('openai-chat', {model!r}).encode('hello world'))"
    env = {"TIKTOKEN_CACHE_DIR": str(tmp_path), "PATH": "/usr/bin:/bin", "HTTPS_PROXY": "http://127.0.0.1:9", "HTTP_PROXY": "http://127.0.0.1:9"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == str(ids)


def test_model_encodings():
    assert encoding_for_model("gpt-4o-mini") == "o200k_base"
    assert encoding_for_model("gpt-3.5-turbo") == "cl100k_base"
    assert encoding_for_model("some-future-model") == "o200k_base"
    assert counter_for("anthropic", "claude-opus-4-5").name == "anthropic-approx(o200k_base)"


def test_special_token_text_is_counted_as_text():
    counter = counter_for("openai-chat", "gpt-4o")
    assert counter.count("<|endoftext|>") > 1
    assert counter.count("") == 0
