"""Installing cachelint into an app's own environment changes nothing the app's SDKs need.

A fresh virtualenv (with the pip that `python3 -m venv` ships) gets the newest anthropic and openai from the
package index, then cachelint's core from this checkout. Every distribution that was there keeps its version,
`pip check` stays clean, and the core works there; the proxy, whose extra is not installed, says how to get it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.slow

# What the core may bring into an app's environment (and nothing from the extras).
CORE = {"cachelint", "click", "rich", "tiktoken", "quicktok-v1", "libcst", "pathspec", "pygls", "lsprotocol", "cattrs",
        "attrs", "markdown-it-py", "mdurl", "pygments", "pyyaml", "regex", "requests", "urllib3", "charset-normalizer",
        "idna", "certifi", "numpy", "typing-extensions", "exceptiongroup"}


def pip(venv: Path, *args: str) -> subprocess.CompletedProcess:
    out = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "--disable-pip-version-check", *args],
                         capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    return out


def versions(venv: Path) -> dict[str, str]:
    listed = json.loads(pip(venv, "list", "--format", "json").stdout)
    return {d["name"].lower().replace("_", "-"): d["version"] for d in listed}


@pytest.fixture(scope="module")
def app_env(tmp_path_factory):
    venv = tmp_path_factory.mktemp("app") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    pip(venv, "install", "-q", "anthropic", "openai")
    before = versions(venv)
    pip(venv, "install", "-q", str(ROOT))
    return venv, before, versions(venv)


def test_the_core_changes_no_sdk_dependency(app_env):
    venv, before, after = app_env
    changed = {name: (v, after.get(name)) for name, v in before.items() if after.get(name) != v}
    assert changed == {}
    assert "anthropic" in after and "openai" in after
    assert pip(venv, "check").returncode == 0


def test_the_core_brings_only_what_it_needs(app_env):
    _, before, after = app_env
    added = set(after) - set(before)
    assert "cachelint" in added
    assert added <= CORE, sorted(added - CORE)
    assert not set(after) & {"mitmproxy", "transformers", "prometheus-client", "torch"}


def test_the_core_works_beside_the_newest_sdks(app_env, tmp_path):
    venv, _, _ = app_env
    app = tmp_path / "app.py"
    app.write_text("import openai\nclient = openai.OpenAI()\n"
                   "def ask(tools, q):\n"
                   "    return client.chat.completions.create(model='gpt-4o', tools=list(set(tools)),\n"
                   "                                          messages=[{'role': 'user', 'content': q}])\n")
    env = {**os.environ, "CACHELINT_CACHE_DIR": str(tmp_path / "cache")}
    check = subprocess.run([str(venv / "bin" / "cachelint"), "check", "--no-cache", str(app)], capture_output=True,
                           text=True, timeout=300, env=env)
    assert check.returncode in (0, 1), check.stderr
    assert "CL999" not in check.stdout
    proxy = subprocess.run([str(venv / "bin" / "cachelint"), "proxy", "--upstream", "https://api.openai.com"],
                           capture_output=True, text=True, timeout=300)
    assert proxy.returncode == 2
    assert proxy.stderr.strip().splitlines() == [
        "cachelint: error: cachelint proxy needs mitmproxy and prometheus_client, which are not installed: install "
        "cachelint with the `proxy` extra, from a checkout of its repository: pipx install './cachelint[proxy]'  "
        "(or: uv tool install './cachelint[proxy]')"]
