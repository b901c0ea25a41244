"""bench/realworld/probe.py: a probe set's findings listed for blind triage, and a later analyzer scored on the verdicts."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

PROBE = Path(__file__).resolve().parent.parent / "bench" / "realworld" / "probe.py"
_spec = importlib.util.spec_from_file_location("realworld_probe", PROBE)
probe = importlib.util.module_from_spec(_spec)
sys.modules["realworld_probe"] = probe
_spec.loader.exec_module(probe)  # type: ignore[union-attr]

APP = '''import datetime

import anthropic

client = anthropic.Anthropic()
HANDBOOK = "Follow the handbook, cite its sections, and never promise refunds. " * 200


def ask(history):
    system = f"{HANDBOOK} The time is {datetime.datetime.now()}."
    return client.messages.create(model="claude-sonnet-4-5", max_tokens=1024, system=system, messages=history)
'''


def _git(*args, cwd):
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                   env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                        "GIT_COMMITTER_EMAIL": "t@t", "HOME": str(cwd), "PATH": "/usr/bin:/bin"})


def _probe_set(tmp_path, verdicts):
    work = tmp_path / "work"
    work.mkdir()
    (work / "app.py").write_text(APP)
    _git("init", "-q", cwd=work)
    _git("add", "app.py", cwd=work)
    _git("commit", "-q", "-m", "app", cwd=work)
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=work, capture_output=True, text=True).stdout.strip()
    mirror = tmp_path / "mirror"
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(mirror / "owner+app" / "repo")], check=True)
    folder = tmp_path / "probeX"
    folder.mkdir()
    (folder / "repos.toml").write_text(f'[[repo]]\nname = "owner/app"\ncommit = "{commit}"\n')
    (folder / "verdicts.jsonl").write_text("".join(json.dumps(v) + "\n" for v in verdicts))
    return folder, mirror, commit


def test_list_writes_the_whole_trees_findings_with_ids_and_commits(tmp_path, monkeypatch):
    folder, mirror, commit = _probe_set(tmp_path, [])
    monkeypatch.setattr(probe, "HERE", tmp_path)
    out = tmp_path / "triage_in.jsonl"
    assert probe.main(["list", "--set", folder.name, "--mirror", str(mirror), "--out", str(out), "--jobs", "1"]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["id"], r["repo"], r["commit"], r["file"], r["code"]) for r in rows] == [("probeX-1", "owner/app", commit, "app.py", "CL101")]


def test_score_counts_real_verdicts_kept_false_ones_still_made_and_unjudged(tmp_path, monkeypatch, capsys):
    verdicts = [
        {"repo": "owner/app", "file": "app.py", "line": 11, "code": "CL101", "verdict": "real", "why": "clock in a long system prompt"},
        {"repo": "owner/app", "file": "app.py", "line": 3, "code": "CL301", "verdict": "not_real", "why": "a list of records"},
    ]
    folder, mirror, _ = _probe_set(tmp_path, verdicts)
    monkeypatch.setattr(probe, "HERE", tmp_path)
    assert probe.main(["score", "--set", folder.name, "--mirror", str(mirror), "--jobs", "1"]) == 0
    text = capsys.readouterr().out
    assert "judged real and still found 1/1" in text and "judged not real and still made 0/1" in text and "not judged 0" in text


def test_a_finding_of_another_family_or_far_away_is_not_covered_by_a_verdict():
    verdict = {"repo": "r", "file": "a.py", "line": 10, "code": "CL301", "verdict": "not_real"}
    near = probe.Finding("cachelint", "r", "a.py", 12, "CL301", "m")
    other_family = probe.Finding("cachelint", "r", "a.py", 10, "CL101", "m")
    far = probe.Finding("cachelint", "r", "a.py", 20, "CL301", "m")
    assert probe.judged(near, [verdict]) is verdict
    assert probe.judged(other_family, [verdict]) is None and probe.judged(far, [verdict]) is None
