"""bench/realworld/score.py: the matching of findings to hand labels, and one end-to-end run on a local mirror."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

SCORE = Path(__file__).resolve().parent.parent / "bench" / "realworld" / "score.py"
_spec = importlib.util.spec_from_file_location("realworld_score", SCORE)
score = importlib.util.module_from_spec(_spec)
sys.modules["realworld_score"] = score  # dataclasses look their module up by name
_spec.loader.exec_module(score)

R = "owner/app"
REVIEWED = {R: {"app.py", "tools.py"}}


def lab(line, family, end_line=None, file="app.py", confidence="high"):
    return score.Label(R, file, line, family, "why", confidence, end_line)


def fnd(line, code, file="app.py", tool="cachelint"):
    return score.Finding(tool, R, file, line, code, "msg")


LABELS = [
    lab(10, "CL101"),
    lab(30, "CL301", end_line=40),
    lab(60, "CL201", file="tools.py", confidence="medium"),
    lab(80, "clean"),
]


def test_window_and_family_decide_a_match():
    findings = [
        fnd(7, "CL102"),  # 3 lines above the CL101 label, same family CL1xx: a match (not exact)
        fnd(43, "CL301"),  # end_line + 3: a match, exact
        fnd(44, "CL301"),  # end_line + 4: outside every window, a false positive
        fnd(61, "CL401", file="tools.py"),  # in the CL201 window, wrong family: false positive near it
        fnd(80, "CL101"),  # on a clean label: false positive, trap hit
        fnd(5, "CL101", file="other.py"),  # not a reviewed file: not scored
    ]
    res = score.match(findings, LABELS, REVIEWED)
    assert res["unscored"] == 1
    by_line = {r["finding"].line: r for r in res["rows"]}
    assert by_line[7]["tp"] and by_line[43]["tp"]
    assert not by_line[44]["tp"] and not by_line[44]["traps"] and not by_line[44]["near"]
    assert not by_line[61]["tp"] and [n.family for n in by_line[61]["near"]] == ["CL201"]
    assert not by_line[80]["tp"] and [t.family for t in by_line[80]["traps"]] == ["clean"]
    per = {p["label"].family: p for p in res["labels"]}
    assert per["CL101"]["family"] and not per["CL101"]["exact"]
    assert per["CL301"]["family"] and per["CL301"]["exact"]
    assert not per["CL201"]["family"] and per["CL201"]["location"]

    s = score.summarize(res)
    assert (s["findings"], s["tp"], s["fp"], s["fp_on_clean"]) == (5, 2, 3, 1)
    assert s["precision"] == pytest.approx(2 / 5)
    assert (s["found"], s["labels"], s["found_exact"], s["found_location"]) == (2, 3, 1, 3)
    assert (s["found_high"], s["labels_high"]) == (2, 2)
    cl2 = score.summarize(res, "CL2")
    assert (cl2["findings"], cl2["labels"], cl2["found"], cl2["precision"]) == (0, 1, 0, None)


def test_a_label_without_end_line_has_a_window_of_three_either_side():
    res = score.match([fnd(6, "CL101"), fnd(14, "CL101")], LABELS, REVIEWED)
    assert [r["tp"] for r in res["rows"]] == [False, False]
    res = score.match([fnd(13, "CL101")], LABELS, REVIEWED)
    assert [r["tp"] for r in res["rows"]] == [True]


def test_peer_codes_are_matched_by_the_families_they_cover():
    res = score.match([fnd(10, "CD01", tool="cachedrift"), fnd(60, "PCL004", file="tools.py", tool="pcdlint"),
                       fnd(32, "CD05", tool="cachedrift"), fnd(31, "XYZ9", tool="cachedrift")], LABELS, REVIEWED)
    assert [r["tp"] for r in res["rows"]] == [True, True, False, False]
    per = {p["label"].family: p for p in res["labels"]}
    assert per["CL301"]["location"] and not per["CL301"]["family"]


def _git(*args, cwd):
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                   env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                        "GIT_COMMITTER_EMAIL": "t@t", "HOME": str(cwd), "PATH": "/usr/bin:/bin"})


APP = '''import datetime

import anthropic

client = anthropic.Anthropic()


def ask(history):
    system = f"You are a helpful assistant. The time is {datetime.datetime.now()}."
    return client.messages.create(model="claude-sonnet-4-5", max_tokens=1024, system=system, messages=history)
'''


def test_end_to_end_on_a_local_mirror(tmp_path, capsys):
    work = tmp_path / "work"
    work.mkdir()
    (work / "app.py").write_text(APP)
    (work / "asset.bin").write_bytes(b"\x00large file a mirror leaves out")
    _git("init", "-q", cwd=work)
    _git("add", "app.py", "asset.bin", cwd=work)
    _git("commit", "-q", "-m", "app", cwd=work)
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=work, capture_output=True, text=True).stdout.strip()
    (work / "app.py").write_text("# later edit, not at the pinned commit\n")  # the export must use the commit
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    gitdir = mirror / "owner+app" / "repo"
    subprocess.run(["git", "clone", "-q", "--bare", "--no-hardlinks", str(work), str(gitdir)], check=True)
    blob = subprocess.run(["git", "--git-dir", str(gitdir), "rev-parse", f"{commit}:asset.bin"], capture_output=True,
                          text=True).stdout.strip()
    (gitdir / "objects" / blob[:2] / blob[2:]).unlink()  # an absent blob must not stop the export
    repos = tmp_path / "repos.toml"
    repos.write_text(f'[[repo]]\nname = "owner/app"\ncommit = "{commit}"\nfiles = ["app.py"]\n\n'
                     f'[[repo]]\nname = "owner/absent"\ncommit = "{commit}"\nfiles = ["x.py"]\n')
    labels = tmp_path / "labels.jsonl"
    labels.write_text(json.dumps({"repo": "owner/app", "file": "app.py", "line": 9, "family": "CL101",
                                  "why": "clock in the system prompt", "confidence": "high"}) + "\n"
                      + json.dumps({"repo": "owner/app", "file": "app.py", "line": 1, "family": "CL201",
                                    "why": "a secret miss", "confidence": "medium"}) + "\n")
    out = tmp_path / "out.json"
    rc = score.main(["--mirror", str(mirror), "--repos", str(repos), "--labels", str(labels), "--no-peers",
                     "--no-file-times", "--jobs", "1", "--json", str(out)])
    text = capsys.readouterr().out
    assert rc == 0
    assert "SKIPPED owner/absent: not in the mirror" in text
    assert "NOTE owner/app: 1 files of the commit are absent from the mirror" in text
    data = json.loads(out.read_text())
    overall = data["tools"]["cachelint"]["overall"]
    assert (overall["found"], overall["labels"]) == (1, 2)
    assert [f["code"] for f in data["tools"]["cachelint"]["true_positives"]] == ["CL101"]
    assert "misses (1)" in text and "a secret miss" in text
    by_level = data["tools"]["cachelint"]["confidence"]  # each finding counted under its confidence, once
    assert sum(c["findings"] for c in by_level.values()) == overall["findings"]
    assert sum(c["tp"] for c in by_level.values()) == overall["tp"] == 1
    assert "precision by the finding's confidence" in text
    # --counts-only keeps a blind set blind: the tables, never which label was missed
    blind = tmp_path / "blind.json"
    rc = score.main(["--mirror", str(mirror), "--repos", str(repos), "--labels", str(labels), "--no-peers",
                     "--no-file-times", "--reuse", str(out), "--counts-only", "--json", str(blind)])
    text = capsys.readouterr().out
    assert rc == 0 and "R 0/1" in text and "R 1/1" in text
    assert "misses" not in text and "a secret miss" not in text and "false positives" not in text
    assert "a secret miss" not in blind.read_text() and "clock in the system prompt" not in blind.read_text()
    assert json.loads(blind.read_text())["tools"]["cachelint"]["overall"]["found"] == 1  # the counts stay


def test_a_missing_mirror_folder_is_one_line_and_exit_2(tmp_path, capsys):
    assert score.main(["--mirror", str(tmp_path / "nope"), "--no-peers"]) == 2
    assert capsys.readouterr().err.strip().count("\n") == 0


def test_label_sets_keep_the_holdout_apart_from_the_dev_set(tmp_path):
    (tmp_path / "labels.jsonl").write_text("")
    (tmp_path / "repos.toml").write_text("")
    holdout = tmp_path / "holdout2"
    holdout.mkdir()
    for name in ("labels_b.jsonl", "labels_a.jsonl", "repos_a.toml", "NOTES_a.md"):
        (holdout / name).write_text("")
    dev_labels, dev_repos = score.set_files("dev", tmp_path)
    held_labels, held_repos = score.set_files("holdout2", tmp_path)
    all_labels, _ = score.set_files("all", tmp_path)
    assert [p.name for p in dev_labels] == ["labels.jsonl"] and [p.name for p in dev_repos] == ["repos.toml"]
    assert [p.name for p in held_labels] == ["labels_a.jsonl", "labels_b.jsonl"] and [p.name for p in held_repos] == ["repos_a.toml"]
    assert score.set_files("holdout1", tmp_path) == ([], [])  # no folder: nothing, never another set's files
    assert all_labels == dev_labels + held_labels


def test_an_empty_set_is_one_line_and_exit_2(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(score, "HERE", tmp_path)  # a checkout whose holdout/ folder is still empty
    assert score.main(["--mirror", str(tmp_path), "--set", "holdout2", "--no-peers"]) == 2
    assert "has no labels yet" in capsys.readouterr().err


FIRST_BLIND = SCORE.parent / "first_blind.py"


def _first_blind():
    spec = importlib.util.spec_from_file_location("realworld_first_blind", FIRST_BLIND)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _scored(findings, tp, labels, found, rows):
    families = {fam: {"findings": 0, "tp": 0, "labels": 0, "found": 0} for fam in score.FAMILIES}
    families["CL3"] = {"findings": findings, "tp": tp, "labels": labels, "found": found}
    return {"overall": {"findings": findings, "tp": tp, "labels": labels, "found": found}, "families": families,
            "confidence": {"likely": {"findings": findings, "tp": tp}},
            "true_positives": [{"code": "CL301"}] * tp, "false_positives": [{"code": code} for code in rows]}


def test_first_blind_pools_the_sets_and_reads_only_counts_of_a_blind_one():
    first_blind = _first_blind()
    blind = sorted(first_blind.STILL_BLIND)[0]
    pool = first_blind.pooled({"holdout4": _scored(3, 1, 5, 1, ["CL301", "CL101"]),
                               blind: _scored(2, 1, 4, 2, ["CL102"])})
    assert pool["total"] == {"findings": 5, "tp": 2, "labels": 9, "found": 3}
    assert pool["families"]["CL3"]["found"] == 3 and pool["confidence"]["likely"] == {"findings": 5, "tp": 2}
    # rules only from the set already read: the blind set's CL102 false positive is not looked at
    assert pool["rules"] == {"CL101": {"fp": 1}, "CL301": {"tp": 1, "fp": 1}}


def test_first_blind_names_an_unknown_set_in_one_line(capsys):
    assert _first_blind().main(["--mirror", "/nonexistent", "--sets", "holdout99"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "holdout99" in err
