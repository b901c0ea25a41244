"""Score every holdout set with the analyzer it was first measured blind against, and pool the results.

Each holdout was labelled blind and committed to the project; the analyzer of the commit before its labels
landed had never met the set (nobody here had read its code or labels). Scoring each set with that analyzer
and pooling the sets gives precision and recall on code the analyzer was not tuned on, reproducibly: the
measure of whether the classes written here carry over to code nobody here has read. Later rounds read the
sets and tuned on them; `score.py` with today's analyzer measures that (a regression record, not evidence).

Usage: python bench/realworld/first_blind.py --mirror DIR [--sets holdout4 holdout5 ...] [--work DIR] [--json OUT]

For each set: `git worktree add` of the analyzer commit under --work, a non-editable install of it into one
virtual environment there (reinstalled per set; dependencies come from the package index pip is configured
with), then `score.py --set SET --cachelint "<venv python> -P -m cachelint"`. Sets in STILL_BLIND are scored
with `--counts-only` (whose JSON holds no label), and only their counts are read back. Each analyzer's worktree is
registered in the project's git while it is installed and removed right after; nothing else is written there.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE))
from score import FAMILIES, HOLDOUTS  # noqa: E402

# labels and misses unread: counts only
STILL_BLIND = frozenset({"holdout12", "holdout16", "holdout17", "holdout41", "holdout42"})


def git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(ROOT), *args], check=True, capture_output=True, text=True).stdout.strip()


def first_analyzer(held: str) -> str | None:
    """The commit before the set's first labels were committed: an analyzer that had never met the set. Each
    labels file is followed through renames (holdout1 began as `holdout/` and was renamed after it was spent)."""
    firsts = []
    for labels in sorted((HERE / held).glob("labels_*.jsonl")):
        added = git("log", "--follow", "--diff-filter=A", "--format=%H %ct", "--", str(labels.relative_to(ROOT))).splitlines()
        if added:
            commit, when = added[-1].split()
            firsts.append((int(when), commit))
    return git("rev-parse", f"{min(firsts)[1]}^") if firsts else None


def install(venv: Path, tree: Path) -> None:
    if not (venv / "bin" / "python").exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "--quiet", "--disable-pip-version-check"]
    subprocess.run([*pip, "uninstall", "--yes", "cachelint"], check=False, capture_output=True)
    subprocess.run([*pip, "install", str(tree)], check=True, capture_output=True)


def score_set(held: str, commit: str, work: Path, mirror: Path, jobs: int) -> dict:
    tree = work / f"analyzer-{held}"
    if tree.exists():
        git("worktree", "remove", "--force", str(tree))
    git("worktree", "add", "--detach", str(tree), commit)
    try:
        install(work / "venv", tree)
    finally:
        git("worktree", "remove", "--force", str(tree))
    out = work / f"{held}.json"
    command = [sys.executable, str(HERE / "score.py"), "--set", held, "--mirror", str(mirror), "--no-peers",
               "--no-file-times", "--jobs", str(jobs), "--json", str(out),
               "--cachelint", f"{work / 'venv' / 'bin' / 'python'} -P -m cachelint"]
    if held in STILL_BLIND:
        command.append("--counts-only")
    run = subprocess.run(command, capture_output=True, text=True)
    (work / f"{held}.txt").write_text(run.stdout + run.stderr)
    if run.returncode != 0 or not out.exists():
        raise RuntimeError(f"score.py failed on {held} (see {work / (held + '.txt')})")
    return json.loads(out.read_text())["tools"]["cachelint"]


def pooled(results: dict[str, dict]) -> dict:
    """Totals over the sets; by family and confidence for all; by rule only for sets already read."""
    total = Counter()
    families = {fam: Counter() for fam in FAMILIES}
    confidence = {level: Counter() for level in ("certain", "likely")}
    rules: dict[str, Counter] = {}
    for held, res in results.items():
        for key in ("findings", "tp", "labels", "found"):
            total[key] += res["overall"][key]
        for fam in FAMILIES:
            for key in ("findings", "tp", "labels", "found"):
                families[fam][key] += res["families"][fam][key]
        for level, counts in res.get("confidence", {}).items():
            confidence[level].update(counts)
        if held in STILL_BLIND:
            continue
        for kind, rows in (("tp", res.get("true_positives", [])), ("fp", res.get("false_positives", []))):
            for row in rows:
                rules.setdefault(row["code"], Counter())[kind] += 1
    return {"total": dict(total), "families": {k: dict(v) for k, v in families.items()},
            "confidence": {k: dict(v) for k, v in confidence.items()}, "rules": {k: dict(v) for k, v in sorted(rules.items())}}


def ratio(num: int, den: int) -> str:
    return f"{num}/{den} ({num / den:.2f})" if den else f"{num}/0"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Score each holdout with the analyzer that first met it, and pool.")
    parser.add_argument("--mirror", type=Path, required=True, help="Folder of git mirrors (as for score.py).")
    parser.add_argument("--sets", nargs="+", default=list(HOLDOUTS), help="Holdout sets (default: all).")
    parser.add_argument("--work", type=Path, help="Folder for the worktrees, the venv and each set's output "
                                                  "(default: a temporary folder, removed at the end).")
    parser.add_argument("--jobs", type=int, default=2, help="cachelint processes per set (default 2).")
    parser.add_argument("--json", type=Path, help="Write the per-set counts and the pooled figures here.")
    args = parser.parse_args(argv)
    unknown = [s for s in args.sets if s not in HOLDOUTS]
    if unknown:
        print(f"error: unknown sets: {', '.join(unknown)} (expected holdout1..{HOLDOUTS[-1][7:]})", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="cachelint-first-blind-") as tmp:
        work = (args.work or Path(tmp)).resolve()
        work.mkdir(parents=True, exist_ok=True)
        results, analyzers = {}, {}
        for held in args.sets:
            commit = first_analyzer(held)
            if commit is None:
                print(f"{held}: no commit adds its labels; skipped", file=sys.stderr)
                continue
            print(f"... {held} with the analyzer of {commit[:10]}", file=sys.stderr, flush=True)
            try:
                results[held] = score_set(held, commit, work, args.mirror, args.jobs)
            except (RuntimeError, subprocess.CalledProcessError) as exc:
                print(f"{held}: {exc}", file=sys.stderr)
                continue
            analyzers[held] = commit
        print(f"{'set':<11}{'analyzer':<12}{'findings':>9}{'TP':>5}{'precision':>11}{'found/labels':>14}")
        for held, res in results.items():
            o = res["overall"]
            blind = "  (still blind: counts only)" if held in STILL_BLIND else ""
            print(f"{held:<11}{analyzers[held][:10]:<12}{o['findings']:>9}{o['tp']:>5}"
                  f"{(o['tp'] / o['findings'] if o['findings'] else 0):>11.2f}{o['found']:>7}/{o['labels']:<6}{blind}")
        pool = pooled(results)
        t = pool["total"]
        print(f"\npooled over {len(results)} sets: precision {ratio(t.get('tp', 0), t.get('findings', 0))}, "
              f"recall {ratio(t.get('found', 0), t.get('labels', 0))}")
        print("by family:   " + "; ".join(f"{fam}xx P {ratio(c.get('tp', 0), c.get('findings', 0))} "
                                          f"R {ratio(c.get('found', 0), c.get('labels', 0))}"
                                          for fam, c in pool["families"].items()))
        print("by confidence: " + "; ".join(f"{level} P {ratio(c.get('tp', 0), c.get('findings', 0))}"
                                            for level, c in pool["confidence"].items()))
        print("by rule (sets already read): " + "; ".join(f"{code} {ratio(c.get('tp', 0), c.get('tp', 0) + c.get('fp', 0))}"
                                                          for code, c in pool["rules"].items()))
        if args.json:
            per_set = {held: {"analyzer": analyzers[held], "overall": res["overall"], "families": res["families"],
                              "confidence": res.get("confidence", {})} for held, res in results.items()}
            args.json.write_text(json.dumps({"sets": per_set, "pooled": pool}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
