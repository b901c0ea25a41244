"""The pre-commit hook, through the real pre-commit: `try-repo` against this repository (the hook's own
environment) and the README's `repo: local` recipe, word for word."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.slow  # each builds or runs a pre-commit environment
BAD = '''from datetime import datetime
from pathlib import Path

import anthropic

client = anthropic.Anthropic()
INSTRUCTIONS = Path("instructions.md").read_text()


def ask(question):
    return client.messages.create(
        model="claude-sonnet-4-5",
        max_tokens=256,
        system=f"{INSTRUCTIONS}\\nIt is {datetime.now():%H:%M:%S}.",
        messages=[{"role": "user", "content": question}],
    )
'''
CLEAN = BAD.replace('system=f"{INSTRUCTIONS}\\nIt is {datetime.now():%H:%M:%S}."', "system=INSTRUCTIONS")


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
    assert "CL101" in out.stdout and "bad.py:14" in out.stdout


def test_hook_passes_on_clean_code(project, home):
    out = try_repo(project, home, "clean.py")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Passed" in out.stdout


def test_a_clone_at_a_commit_builds_a_core_only_environment(tmp_path):
    """The README's second recipe: `repo:` the path of a clone, `rev:` a commit sha (this checkout's HEAD)."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    if not head:
        pytest.skip("this checkout is not a git repository")
    project = tmp_path / "app"
    project.mkdir()
    git(project, "init", "-q")
    (project / ".pre-commit-config.yaml").write_text(f"repos:\n  - repo: {ROOT}\n    rev: {head}\n    hooks:\n      - id: cachelint\n")
    (project / "bad.py").write_text(BAD)
    git(project, "add", ".")
    home = tmp_path / "home"
    env = {**os.environ, "PRE_COMMIT_HOME": str(home), "PRE_COMMIT_COLOR": "never"}
    out = subprocess.run([sys.executable, "-m", "pre_commit", "run", "--files", "bad.py"], cwd=project,
                         capture_output=True, text=True, env=env, timeout=900)
    assert out.returncode == 1, out.stdout + out.stderr
    assert "CL101" in out.stdout and "bad.py:14" in out.stdout
    installed = {p.name.split("-")[0].lower() for p in home.rglob("*.dist-info")}
    assert {"cachelint", "libcst"} <= installed
    assert not installed & {"mitmproxy", "transformers", "torch", "prometheus_client", "httpx"}


def readme_local_recipe() -> str:
    readme = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```yaml\n(.*?)```", readme, re.S)
    [recipe] = [b for b in blocks if "repo: local" in b]
    return recipe


def test_the_readmes_local_recipe_as_written(tmp_path):
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    project = tmp_path / "app"
    project.mkdir()
    git(project, "init", "-q")
    (project / ".pre-commit-config.yaml").write_text(readme_local_recipe())
    (project / "bad.py").write_text(BAD)
    (project / "clean.py").write_text(CLEAN)
    git(project, "add", ".")
    # `language: system` runs the cachelint on PATH, as after `pipx install ./cachelint`
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "home"), "PRE_COMMIT_COLOR": "never",
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    run = lambda name: subprocess.run([sys.executable, "-m", "pre_commit", "run", "--files", name], cwd=project,  # noqa: E731
                                      capture_output=True, text=True, env=env, timeout=300)
    bad = run("bad.py")
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "CL101" in bad.stdout and "bad.py:14" in bad.stdout
    clean = run("clean.py")
    assert clean.returncode == 0, clean.stdout + clean.stderr
