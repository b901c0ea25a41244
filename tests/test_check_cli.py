"""`cachelint check` and `cachelint rule` as a user runs them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# the app keeps its sessions in PostgreSQL jsonb, which gives a dict's keys back in its own order: a `json.dumps`
# of a run-time dict without `sort_keys` is then a CL102 finding (with a safe fix). Appended to a module, it
# leaves the rows above it as they were.
JSONB_STORE = '''

from sqlalchemy.dialects.postgresql import JSONB  # noqa: E402


class ChatSession:
    profile = JSONB
'''
BAD = '''import json
from datetime import datetime

import anthropic

client = anthropic.Anthropic()


def ask(profile: dict, question: str):
    system = f"Now: {datetime.now():%H:%M}. Profile: {json.dumps(profile)}"
    return client.messages.create(model="claude-sonnet-4-5", max_tokens=100, system=system,
                                  messages=[{"role": "user", "content": question}])
''' + JSONB_STORE
CLEAN = '''import anthropic

client = anthropic.Anthropic()


def ask(question: str):
    return client.messages.create(model="claude-sonnet-4-5", max_tokens=100, system="Be brief.",
                                  messages=[{"role": "user", "content": question}])
'''


def run(cwd: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "GITHUB_ACTIONS"}
    return subprocess.run([sys.executable, "-m", "cachelint", *args], cwd=cwd, capture_output=True, text=True,
                          input=stdin, env=env, timeout=120)


@pytest.fixture
def project(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'app'\n")
    (tmp_path / "bad.py").write_text(BAD)
    (tmp_path / "clean.py").write_text(CLEAN)
    return tmp_path


def codes(out: str) -> list[tuple[str, int, str]]:
    return [(f["filename"], f["location"]["row"], f["code"]) for f in json.loads(out)]


def test_exit_codes(project):
    assert run(project, "check", "clean.py").returncode == 0
    bad = run(project, "check", "bad.py")
    assert bad.returncode == 1 and "CL101" in bad.stdout and "Found 2 errors." in bad.stdout
    assert run(project, "check", "bad.py", "--exit-zero").returncode == 0
    missing = run(project, "check", "nope.py")
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1 and "nope.py" in missing.stderr


def test_json_output_contract(project):
    out = run(project, "check", ".", "--output-format", "json")
    assert out.returncode == 1
    assert codes(out.stdout) == [("bad.py", 10, "CL101"), ("bad.py", 10, "CL102")]
    finding = json.loads(out.stdout)[1]
    assert finding["name"] == "unsorted-json-in-prefix" and finding["fix"]["applicability"] == "safe"
    assert finding["location"] == {"row": 10, "column": 55}


def test_fix_writes_only_safe_fixes_and_diff_writes_nothing(project):
    diff = run(project, "check", "bad.py", "--diff")
    assert diff.returncode == 1 and "+    system = f\"Now: {datetime.now():%H:%M}. Profile: {json.dumps(profile, sort_keys=True)}\"" in diff.stdout
    assert (project / "bad.py").read_text() == BAD
    fixed = run(project, "check", "bad.py", "--fix")
    assert fixed.returncode == 1  # CL101 has no automatic fix
    assert "sort_keys=True" in (project / "bad.py").read_text()
    assert codes(run(project, "check", "bad.py", "--output-format", "json").stdout) == [("bad.py", 10, "CL101")]


def test_suppressions(project):
    (project / "bad.py").write_text(BAD.replace('json.dumps(profile)}"', 'json.dumps(profile)}"  # noqa: CL102'))
    assert codes(run(project, "check", "bad.py", "--output-format", "json").stdout) == [("bad.py", 10, "CL101")]
    above = BAD.replace("    return client", "    # cachelint: ignore[CL101]\n    return client")
    above = above.replace('    system = f"Now', '    # cachelint: ignore[CL101, CL102]\n    system = f"Now')
    (project / "bad.py").write_text(above)
    assert run(project, "check", "bad.py").returncode == 0
    (project / "bad.py").write_text("# cachelint: noqa\n" + BAD)
    assert run(project, "check", "bad.py").returncode == 0


def test_config_ignore_and_select(project):
    (project / "pyproject.toml").write_text("[tool.cachelint]\nignore = ['CL102']\n")
    assert codes(run(project, "check", "--output-format", "json").stdout) == [("bad.py", 10, "CL101")]
    assert codes(run(project, "check", "--select", "CL102", "--output-format", "json").stdout) == [("bad.py", 10, "CL102")]
    (project / "pyproject.toml").write_text("[tool.cachelint]\nselct = ['CL1']\n")
    out = run(project, "check")
    assert out.returncode == 2 and "unknown option 'selct'" in out.stderr and "Traceback" not in out.stderr


def test_unanalyzable_files_are_reported_and_the_run_goes_on(project):
    (project / "broken.py").write_text("import openai\ndef f(:\n")
    (project / "latin1.py").write_bytes(b"# caf\xe9\nimport openai\n")
    (project / "nul.py").write_bytes(b"import openai\x00\n")
    out = run(project, "check", "--output-format", "json")
    found = codes(out.stdout)
    assert out.returncode == 1
    assert ("broken.py", 2, "CL999") in found and ("latin1.py", 1, "CL999") in found and ("nul.py", 1, "CL999") in found
    assert ("bad.py", 10, "CL101") in found


def test_stdin(project):
    out = run(project, "check", "--stdin-filename", "app/x.py", "--output-format", "concise", stdin=BAD)
    assert out.returncode == 1 and "app/x.py:10:22: CL101" in out.stdout
    fixed = run(project, "check", "--stdin-filename", "x.py", "--fix", stdin=BAD)
    assert "json.dumps(profile, sort_keys=True)" in fixed.stdout


def test_cache_and_parallel_runs_agree(project):
    for i in range(12):
        (project / f"mod{i}.py").write_text(BAD if i % 3 == 0 else CLEAN)
    cold = run(project, "check", "--output-format", "json", "--jobs", "2")
    assert (project / ".cachelint_cache").is_dir()
    warm = run(project, "check", "--output-format", "json", "--jobs", "1")
    nocache = run(project, "check", "--output-format", "json", "--no-cache", "--jobs", "1")
    assert codes(cold.stdout) == codes(warm.stdout) == codes(nocache.stdout)
    assert len(codes(cold.stdout)) == 2 * 5


def test_sarif_and_github_formats(project):
    sarif = json.loads(run(project, "check", "--output-format", "sarif").stdout)
    assert sarif["version"] == "2.1.0" and {r["ruleId"] for r in sarif["runs"][0]["results"]} == {"CL101", "CL102"}
    github = run(project, "check", "--output-format", "github").stdout.splitlines()
    assert github[0].startswith("::error file=bad.py,line=10,col=")


def test_rule_command_and_generated_docs_are_current(project):
    out = run(project, "rule", "CL101")
    assert out.returncode == 0 and "## CL101 volatile-value-in-prefix" in out.stdout and "### Why is this bad?" in out.stdout
    assert run(project, "rule", "CL777").returncode == 2
    docs = run(project, "rule", "--all", "--format", "markdown").stdout
    assert docs == (ROOT / "docs" / "rules.md").read_text(), "docs/rules.md is stale: cachelint rule --all --format markdown > docs/rules.md"


def test_unsafe_fixes_only_with_the_flag(tmp_path):
    source = '''from anthropic import Anthropic
client = Anthropic()
RULES = "You are the support assistant of Acme Corp. Answer politely, cite the manual, never promise refunds, and escalate legal questions. " * 60
def answer(user_name, question):
    return client.messages.create(model="claude-sonnet-4-5", max_tokens=10, system=f"The user is {user_name}.\\n{RULES}", messages=[{"role": "user", "content": question}])
'''
    (tmp_path / "app.py").write_text(source)
    out = run(tmp_path, "check", "app.py")
    assert out.returncode == 1 and "hidden fix" in out.stdout
    run(tmp_path, "check", "app.py", "--fix")
    assert (tmp_path / "app.py").read_text() == source  # the safe pass leaves it alone
    assert run(tmp_path, "check", "app.py", "--fix", "--unsafe-fixes").returncode == 0
    assert 'system=f"{RULES}\\nThe user is {user_name}."' in (tmp_path / "app.py").read_text()


@pytest.mark.parametrize("shadowed", ["libcst", "pathspec", "hyperscan"])
def test_a_module_of_the_linted_project_does_not_stand_in_for_cachelints_own(project, shadowed):
    # `python -m cachelint` run from a project's root: the project's top-level module named like one of
    # cachelint's imports (AiNiee ships a `hyperscan.py`; pathspec imports hyperscan when it finds it) is not
    # imported in its place, and the project is checked as the console script checks it
    (project / f"{shadowed}.py").write_text("raise RuntimeError('the project module was imported')\n")
    out = run(project, "check", "bad.py", "--output-format", "json")
    assert out.returncode == 1, out.stderr
    assert codes(out.stdout) == [("bad.py", 10, "CL101"), ("bad.py", 10, "CL102")]
