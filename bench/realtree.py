"""Benchmark `cachelint check` on a pinned real tree, exported from a local git mirror (no network: this bench is
not run in CI).

Usage: python bench/realtree.py [--repo OWNER/NAME] [--commit SHA] [--mirror DIR] [--repeat N] [--edit PATH]
Default: pydantic/pydantic-ai at 4fda38988f29 (697 Python files, 456k lines: the largest tree of the real-world
dev set) from /work/.mirror (or $CACHELINT_MIRROR), the layout bench/realworld/score.py reads: DIR/OWNER+NAME
holding a bare repository (or its `repo` folder). The commit's files are written to a temporary folder (blobs the
mirror lacks are left out, as score.py does; `git archive` would stop at the first absent one and leave a partial
tree: 486 files, 172k lines for this commit) and measured as bench/lint.py measures: libcst's parse of the same files
(the floor), cold with 1 and 2 processes, warm, and warm after one edit of `--edit` (default: the module the
most cached results depend on), which re-lints only the files whose dependency edges point at it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE / "realworld")]

from lint import check, find_peers, measure, print_table, python_files
from score import export, git_dir

DEFAULT_REPO, DEFAULT_COMMIT = "pydantic/pydantic-ai", "4fda38988f29"


def most_depended_on(tree: Path) -> Path | None:
    """The module of the tree that the most cached results depend on (after a run that filled the cache)."""
    counts: Counter[str] = Counter()
    for cache_file in (tree / ".cachelint_cache").rglob("*.json"):
        try:
            entries = json.loads(cache_file.read_text())["entries"]
        except (OSError, ValueError, KeyError):
            continue
        for entry in entries.values():
            counts.update(list(entry.get("deps") or ()))
    for path, _ in counts.most_common():
        if Path(path).is_file():
            return Path(path)
    return None


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repo", default=DEFAULT_REPO)
    parser.add_argument("--commit", default=DEFAULT_COMMIT)
    parser.add_argument("--mirror", type=Path, default=Path(os.environ.get("CACHELINT_MIRROR", "/work/.mirror")))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--edit", help="Path (in the tree) of the module to edit for the last warm run.")
    parser.add_argument("--peer-bin", type=Path, help="Folder with the pcdlint and cachedrift commands.")
    args = parser.parse_args()
    gitdir = git_dir(args.mirror, args.repo)
    if gitdir is None:
        sys.exit(f"realtree: no mirror of {args.repo} under {args.mirror}")
    with tempfile.TemporaryDirectory(prefix="cachelint-realtree-") as tmp:
        tree = Path(tmp) / "tree"
        tree.mkdir()
        error, missing = export(gitdir, args.commit, tree)
        if error:
            sys.exit(f"realtree: {args.repo}@{args.commit}: {error}")
        if args.edit:
            edit: Path | None = tree / args.edit
        else:
            check(tree, 1, True)
            edit = most_depended_on(tree)
        peers = find_peers(args.peer_bin)
        rows = measure(tree, args.repeat, peers, edit)
        label = f"{args.repo}@{args.commit[:12]}" + (f" ({len(missing)} blobs absent from the mirror)" if missing else "")
        print_table(python_files([tree]), label, args.repeat, rows, peers)


if __name__ == "__main__":
    main()
