"""Compare cachelint with the peer linters a user might pick instead, on labelled code: what each one finds.

Usage: python bench/peers.py [--peer-bin DIR]
The labelled code is tests/corpus/ (18 realistic LLM apps) and tests/holdout/ (15 files a reviewer wrote from
cachelint's rule docs only): every line that should be reported carries `# expect: CLxxx`. Each tool runs on
both folders; a finding counts on its (file, line), whatever its rule code, so tools with other rule sets are
compared on where they point, not on names. Peers: `pcdlint` and `cachedrift` from the package registry,
found in --peer-bin or on PATH (install: `python3 -m venv /tmp/peers && /tmp/peers/bin/pip install pcdlint
cachedrift`). Low-severity findings (pcdlint INFO, cachedrift info) are counted separately.

Caveat, stated with the numbers: the labels follow cachelint's definition of a prefix break; a peer may report
real problems the labels do not name (counted here as false alarms) or hold another definition.
"""

from __future__ import annotations

import argparse
import io
import json
import re
import shutil
import subprocess
import sys
import tempfile
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = [ROOT / "tests" / "corpus", ROOT / "tests" / "holdout"]
_EXPECT = re.compile(r"#\s*expect:\s*CL\d{3}")


def expected_lines() -> set[tuple[str, int]]:
    out = set()
    for folder in FOLDERS:
        for path in sorted(folder.glob("*.py")):
            for tok in tokenize.generate_tokens(io.StringIO(path.read_text()).readline):
                if tok.type == tokenize.COMMENT and _EXPECT.search(tok.string):
                    out.add((path.name, tok.start[0]))
    return out


def run_cachelint() -> tuple[set, set]:
    out = subprocess.run([sys.executable, "-m", "cachelint", "check", *map(str, FOLDERS), "--no-cache", "--exit-zero",
                          "--output-format", "json"], capture_output=True, text=True, check=True, cwd=FOLDERS[0].parent).stdout
    found = {(Path(f["filename"]).name, f["location"]["row"]) for f in json.loads(out)}
    return found, set()


def run_pcdlint(command: str) -> tuple[set, set]:
    out = subprocess.run([command, "--format", "json", *map(str, FOLDERS)], capture_output=True, text=True, check=False).stdout
    main, low = set(), set()
    for f in json.loads(out or "[]"):
        (low if str(f.get("severity", "")).upper() == "INFO" else main).add((Path(f["file_path"]).name, f["lineno"]))
    return main, low


def run_cachedrift(command: str) -> tuple[set, set]:
    out = subprocess.run([command, "--format", "json", "--min-severity", "info", *map(str, FOLDERS)], capture_output=True, text=True, check=False).stdout
    main, low = set(), set()
    for f in json.loads(out or "{}").get("findings", []):
        (low if f.get("severity") == "info" else main).add((Path(f["file"]).name, f["line"]))
    return main, low


def score(found: set, expected: set) -> tuple[int, int, int, float, float]:
    tp, miss, false = len(found & expected), len(expected - found), len(found - expected)
    precision = tp / (tp + false) if tp + false else 0.0
    recall = tp / len(expected) if expected else 0.0
    return tp, miss, false, precision, recall


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--peer-bin", type=Path)
    args = parser.parse_args()
    expected = expected_lines()
    with tempfile.TemporaryDirectory() as tmp:  # outside this repository, whose config excludes the labelled folders
        global FOLDERS
        copies = []
        for folder in FOLDERS:
            copies.append(Path(tmp) / folder.name)
            shutil.copytree(folder, copies[-1])
        FOLDERS = copies
        compare(args, expected)


def compare(args: argparse.Namespace, expected: set[tuple[str, int]]) -> None:
    tools = {"cachelint": run_cachelint}
    for name, runner in (("pcdlint", run_pcdlint), ("cachedrift", run_cachedrift)):
        candidate = args.peer_bin / name if args.peer_bin else None
        command = str(candidate) if candidate and candidate.exists() else shutil.which(name)
        if command:
            tools[name] = lambda runner=runner, command=command: runner(command)
        else:
            print(f"{name}: not found (see --peer-bin); skipped")
    files = {p.name for folder in FOLDERS for p in folder.glob("*.py")}
    bad_files = {name for name, _ in expected}
    print(f"{len(files)} files ({len(bad_files)} with labelled problems, {len(files - bad_files)} clean), "
          f"{len(expected)} labelled lines (tests/corpus + tests/holdout)")
    print(f"{'':<28}{'--- by line (file, line) ---':>41}   {'--- by file ---':>29}")
    print(f"{'tool':<28}{'found':>7}{'missed':>8}{'false':>7}{'precision':>11}{'recall':>8}   "
          f"{'files found':>12}{'clean flagged':>15}")
    headline = []
    for name, run in tools.items():
        main_found, low = run()
        rows = [(name, main_found)] + ([(f"{name} incl. info", main_found | low)] if low else [])
        for label, found in rows:
            tp, miss, false, precision, recall = score(found, expected)
            flagged = {f for f, _ in found}
            print(f"{label:<28}{tp:>7}{miss:>8}{false:>7}{precision:>11.2f}{recall:>8.2f}   "
                  f"{len(flagged & bad_files):>7}/{len(bad_files):<4}{len(flagged - bad_files):>9}/{len(files - bad_files):<5}")
        tp, _, _, precision, recall = score(main_found, expected)
        flagged = {f for f, _ in main_found}
        headline.append(f"{name} line precision {precision:.2f} recall {recall:.2f}, files {len(flagged & bad_files)}/{len(bad_files)}")
    print("headline: " + "; ".join(headline))


if __name__ == "__main__":
    main()
