"""Probe sets: the analyzer's findings on unlabelled public repositories, judged blind, kept as a regression measure.

A holdout set (labels written by readers who never saw the analyzer) measures recall and precision once, while
nobody has read it. A probe set is cheaper and answers another question: on whole trees nobody labelled, which of
the analyzer's findings are real? The findings are listed with shuffled ids (`list`), a reviewer who never read
the analyzer judges each one by the standard of TRIAGE.md, and the verdicts are kept here (`probeN/verdicts.jsonl`,
with the repositories and commits in `probeN/repos.toml`). Once read, a probe set is spent like any holdout: its
false positives were mended as classes, so `score` on a later analyzer is a regression check ([regression]),
not evidence: how many real findings it still makes, how many judged false it still makes, and how many findings
no reviewer has judged.

    python bench/realworld/probe.py list --set probe16 --mirror /work/.mirror --out /tmp/triage_in.jsonl
    python bench/realworld/probe.py score --set probe16 --mirror /work/.mirror [--cachelint "venv/bin/python -P -m cachelint"]
"""

from __future__ import annotations

import argparse
import json
import random
import shlex
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from score import Cachelint, Finding, export, git_dir, load_repos, run_tool  # noqa: E402

WINDOW = 3  # a verdict covers findings of the same rule family in the same file within this many lines


def findings_of(repos: list[dict], mirror: Path, command: list[str], jobs: int, timeout: float) -> tuple[list[Finding], list[str]]:
    """The analyzer's findings on each repository's whole tree at its commit (syntax errors left out)."""
    tool = Cachelint(command, jobs)
    found: list[Finding] = []
    problems: list[str] = []
    with tempfile.TemporaryDirectory(prefix="cachelint-probe-") as tmp:
        for repo in repos:
            gitdir = git_dir(mirror, repo["name"])
            if gitdir is None:
                problems.append(f"{repo['name']}: no mirror under {mirror}")
                continue
            tree = Path(tmp) / repo["name"].replace("/", "+")
            tree.mkdir(parents=True)
            error, _ = export(gitdir, repo["commit"], tree)
            if error:
                problems.append(f"{repo['name']}: {error}")
                continue
            out, _, error = run_tool(tool.argv(["."]), tree, timeout)
            if error:
                problems.append(f"{repo['name']}: {error}")
            found += [f for f in tool.parse(out, repo["name"], tree) if f.code != "CL999"]
    return found, problems


def judged(finding: Finding, verdicts: list[dict]) -> dict | None:
    for v in verdicts:
        if v["repo"] == finding.repo and v["file"] == finding.file and v["code"][:3] == finding.code[:3] \
                and abs(v["line"] - finding.line) <= WINDOW:
            return v
    return None


def score(found: list[Finding], verdicts: list[dict]) -> dict:
    """Real verdicts still found, false ones still made, and findings nobody judged."""
    matched = {id(v): v for f in found if (v := judged(f, verdicts)) is not None}
    real = [v for v in verdicts if v["verdict"] == "real"]
    false = [v for v in verdicts if v["verdict"] == "not_real"]
    return {
        "findings": len(found),
        "real_kept": sum(id(v) in matched for v in real), "real": len(real),
        "false_kept": sum(id(v) in matched for v in false), "false": len(false),
        "unjudged": [f"{f.repo} {f.file}:{f.line} {f.code}" for f in found if judged(f, verdicts) is None],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=("list", "score"))
    parser.add_argument("--set", default="probe16", help="a folder of bench/realworld with repos.toml (and verdicts.jsonl)")
    parser.add_argument("--mirror", type=Path, default=Path("/work/.mirror"))
    parser.add_argument("--cachelint", default=f"{shlex.quote(sys.executable)} -P -m cachelint")
    parser.add_argument("--out", type=Path, help="list: where to write the shuffled findings (JSONL)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=900)
    args = parser.parse_args(argv)
    folder = HERE / args.set
    repos = load_repos(folder / "repos.toml")
    found, problems = findings_of(repos, args.mirror, shlex.split(args.cachelint), args.jobs, args.timeout)
    for line in problems:
        print(f"NOTE {line}", file=sys.stderr)
    if args.action == "list":
        if args.out is None:
            parser.error("list needs --out")
        commits = {r["name"]: r["commit"] for r in repos}
        random.Random(args.set).shuffle(found)
        with args.out.open("w") as out:
            for i, f in enumerate(found, 1):
                out.write(json.dumps({"id": f"{args.set}-{i}", "repo": f.repo, "commit": commits[f.repo], "file": f.file,
                                      "line": f.line, "code": f.code, "message": f.message, "confidence": f.confidence}) + "\n")
        print(f"{len(found)} findings on {len(repos)} repositories -> {args.out}")
        return 0
    verdicts = [json.loads(line) for line in (folder / "verdicts.jsonl").read_text().splitlines() if line.strip()]
    result = score(found, verdicts)
    print(f"{args.set}: {len(repos)} repositories, {result['findings']} findings; judged real and still found "
          f"{result['real_kept']}/{result['real']}; judged not real and still made {result['false_kept']}/{result['false']}; "
          f"not judged {len(result['unjudged'])}")
    for line in result["unjudged"]:
        print(f"  unjudged: {line}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
