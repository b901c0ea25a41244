"""Token counting works offline: tiktoken's ranks are rebuilt from shipped tables, verified and cached privately."""

import os
import stat
import subprocess
import sys

import pytest

from cachelint.tokens import _ranks_from_quicktok, counter_for, encoding_for_model

HELLO = "from cachelint.tokens import counter_for; print(counter_for('openai-chat', {model!r}).encode('hello world'))"


def offline_env(cache: os.PathLike) -> dict:
    return {"CACHELINT_CACHE_DIR": str(cache), "TIKTOKEN_CACHE_DIR": str(cache) + "-tiktoken", "PATH": "/usr/bin:/bin",
            "HTTPS_PROXY": "http://127.0.0.1:9", "HTTP_PROXY": "http://127.0.0.1:9"}


def run_python(code: str, env: dict) -> str:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_rebuilt_ranks_match_tiktokens_pinned_hash():
    # _ranks_from_quicktok refuses ranks whose rebuilt file differs from the SHA-256 tiktoken pins
    assert len(_ranks_from_quicktok("cl100k_base")) == 100256


@pytest.mark.parametrize("model, ids", [("gpt-4", [15339, 1917]), ("gpt-4o", [24912, 2375]), ("gpt-5", [24912, 2375])])
def test_fresh_cache_in_a_new_process_without_network(tmp_path, model, ids):
    env = offline_env(tmp_path / "cache")
    assert run_python(HELLO.format(model=model), env) == str(ids)
    assert run_python(HELLO.format(model=model), env) == str(ids)  # the second run loads the cached definition
    assert not (tmp_path / "cache-tiktoken").exists()  # nothing written to tiktoken's shared cache folder


def test_the_cache_is_private_and_never_written_through_a_link(tmp_path):
    cache = tmp_path / "cache"
    run_python(HELLO.format(model="gpt-4o"), offline_env(cache))
    [cached] = cache.iterdir()
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700
    assert stat.S_IMODE(cached.stat().st_mode) == 0o600
    victim = tmp_path / "victim"
    victim.write_text("keep me")
    cached.unlink()
    cached.symlink_to(victim)  # a planted link where the cache file goes
    assert run_python(HELLO.format(model="gpt-4o"), offline_env(cache)) == "[24912, 2375]"
    assert victim.read_text() == "keep me"
    assert not cached.is_symlink()


def test_a_damaged_cache_file_is_rebuilt(tmp_path):
    cache = tmp_path / "cache"
    run_python(HELLO.format(model="gpt-4o"), offline_env(cache))
    [cached] = cache.iterdir()
    cached.write_bytes(cached.read_bytes()[:1000])
    assert run_python(HELLO.format(model="gpt-4o"), offline_env(cache)) == "[24912, 2375]"
    assert cached.stat().st_size > 1_000_000


def test_an_encoding_is_loaded_only_when_a_text_is_counted(tmp_path):
    cache = tmp_path / "cache"
    code = ("from cachelint.tokens import counter_for; c = counter_for('anthropic', 'claude-sonnet-4-5'); "
            "print(c.name, c.count(''))")
    assert run_python(code, offline_env(cache)) == "anthropic-approx(o200k_base) 0"
    assert not cache.exists()


def test_model_encodings():
    assert encoding_for_model("gpt-4o-mini") == "o200k_base"
    assert encoding_for_model("gpt-3.5-turbo") == "cl100k_base"
    assert encoding_for_model("some-future-model") == "o200k_base"
    assert counter_for("anthropic", "claude-opus-4-5").name == "anthropic-approx(o200k_base)"


def test_special_token_text_is_counted_as_text():
    counter = counter_for("openai-chat", "gpt-4o")
    assert counter.count("<|endoftext|>") > 1
    assert counter.count("") == 0
