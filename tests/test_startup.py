"""Starting up as a user sees it: the proxy says "listening" only once it listens, a busy port is one line,
a missing extra names the command that installs it, and a lint run that needs no token count loads no tokenizer."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mitmproxy", reason="the proxy extra is not installed")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_proxy(tmp_path: Path, *extra: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "cachelint", "proxy", "--upstream", "http://127.0.0.1:9", "--db", str(tmp_path / "c.db"),
         "--no-dashboard", *extra],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def test_listening_is_said_once_the_port_accepts_connections(tmp_path):
    port = free_port()
    proxy = start_proxy(tmp_path, "--port", str(port))
    try:
        line = proxy.stderr.readline()
        assert line.startswith(f"cachelint proxy listening on http://127.0.0.1:{port} -> http://127.0.0.1:9"), line
        with socket.create_connection(("127.0.0.1", port), timeout=5):  # no retry: it listens already
            pass
    finally:
        proxy.terminate()
        proxy.communicate(timeout=60)


def test_a_port_in_use_is_one_line_and_exit_2(tmp_path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        proxy = start_proxy(tmp_path, "--port", str(port))
        _, err = proxy.communicate(timeout=120)
    assert proxy.returncode == 2
    assert err.strip().splitlines() == [f"cachelint: error: cannot listen on 127.0.0.1:{port}: the port is in use "
                                        "(another proxy, or an earlier cachelint proxy still running?)"]


def test_a_busy_metrics_port_is_blamed_on_metrics_port(tmp_path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        metrics = busy.getsockname()[1]
        proxy = start_proxy(tmp_path, "--port", str(free_port()), "--metrics-port", str(metrics))
        _, err = proxy.communicate(timeout=120)
    assert proxy.returncode == 2
    [line] = err.strip().splitlines()
    assert line.startswith(f"cachelint: error: cannot serve metrics on 127.0.0.1:{metrics} (--metrics-port):"), line
    assert "listening" not in err


def run_without(modules: list[str], *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """`cachelint ARGS` in an interpreter where importing `modules` fails, as in an install without the extra."""
    blocked = "; ".join(f"sys.modules[{m!r}] = None" for m in modules)
    code = f"import sys; {blocked}; from cachelint.cli import main; sys.argv = ['cachelint', *{list(args)!r}]; main()"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)


@pytest.mark.parametrize("modules, args, extra", [
    (["mitmproxy"], ["proxy", "--upstream", "https://api.anthropic.com"], "proxy"),
    (["httpx"], ["replay", "x.jsonl", "--base-url", "http://127.0.0.1:9"], "replay"),
    (["transformers"], ["kv", "someone/some-model"], "hf"),
])
def test_a_missing_extra_is_one_line_naming_the_install_command(modules, args, extra):
    out = run_without(modules, *args)
    assert out.returncode == 2, out.stderr
    [line] = out.stderr.strip().splitlines()
    assert f"with the `{extra}` extra" in line
    assert f"cachelint[{extra}]" in line
    assert "pip install cachelint" not in line  # the name on PyPI is another project's


def test_a_lint_run_that_counts_no_tokens_loads_no_tokenizer(tmp_path):
    app = tmp_path / "app.py"
    app.write_text(
        "import anthropic, datetime\nclient = anthropic.Anthropic()\n"
        "def ask(q):\n"
        "    return client.messages.create(model='claude-sonnet-4-5', max_tokens=9, system=f'Now {datetime.datetime.now()}',\n"
        "                                  messages=[{'role': 'user', 'content': q}])\n"
    )
    cache = tmp_path / "cache"
    env = {**os.environ, "CACHELINT_CACHE_DIR": str(cache)}
    out = subprocess.run([sys.executable, "-m", "cachelint", "check", "--no-cache", str(app)], capture_output=True, text=True,
                         timeout=120, env=env)
    assert out.returncode in (0, 1), out.stderr
    assert "CL999" not in out.stdout
    assert not cache.exists()  # o200k_base was never loaded
