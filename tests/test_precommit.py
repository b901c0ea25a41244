"""The pre-commit hook, through the real `pre-commit try-repo` against this repository."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BAD = '''from datetime import datetime

import anthropic

client = anthropic.Anthropic()


def ask(question):
    return client.messages.create(
        model="claude-sonnet-4-5",
        max_tokens=256,
        system=f"You are helpful. It is {datetime.now():%H:%M:%S}.",
        messages=[{"role": "user", "content": question}],
    )
'''
CLEAN = BAD.replace('system=f"You are helpful. It is {datetime.now():%H:%M:%S}."', 'system="You are helpful."')


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    path = tmp_path_factory.mktemp("app")
    git(path, "init", "-q")
    (path / "bad.py").write_text(BAD)
    (path / "clean.py").write_text(CLEAN)
    git(path, "add", "bad.py", "clean.py")
    return path


def try_repo(project: Path, home: Path, filename: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PRE_COMMIT_HOME": str(home), "PRE_COMMIT_COLOR": "never"}
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", "try-repo", str(ROOT), "cachelint", "--files", filename, "--verbose"],
        cwd=project, capture_output=True, text=True, env=env, timeout=900,
    )


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    return tmp_path_factory.mktemp("pre-commit-home")


def test_hook_fails_on_a_volatile_system_prompt(project, home):
    out = try_repo(project, home, "bad.py")
    assert out.returncode == 1, out.stdout + out.stderr
    assert "CL101" in out.stdout and "bad.py:12" in out.stdout


def test_hook_passes_on_clean_code(project, home):
    out = try_repo(project, home, "clean.py")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Passed" in out.stdout
