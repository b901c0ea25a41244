"""Benchmark `cachelint check` against its floor: libcst parsing the same files.

Usage: python bench/lint.py [PATH ...] [--repeat N] [--peer-bin DIR]
Default tree: the installed sources of openai, anthropic, libcst, rich, mitmproxy (those present), plus
cachelint's own examples. Prints a table, then one line with the headline ratios. Medians of N runs,
measured in this run (these machines are noisy: compare within one run only).

Peers: the registry's `pcdlint` and `cachedrift` (prompt-cache linters a user might pick instead) run on the
same tree when their commands are found in --peer-bin or on PATH; install them in their own environment:
`python3 -m venv /tmp/peers && /tmp/peers/bin/pip install pcdlint cachedrift`, then `--peer-bin /tmp/peers/bin`.
"""

from __future__ import annotations

import argparse
import importlib.util
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import libcst as cst

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("openai", "anthropic", "libcst", "rich", "mitmproxy")
PEERS = {"pcdlint": ["--format", "json"], "cachedrift": ["--format", "json", "--fail-on", "fail"]}


def default_paths() -> list[Path]:
    paths = []
    for name in PACKAGES:
        spec = importlib.util.find_spec(name)
        if spec and spec.submodule_search_locations:
            paths.append(Path(list(spec.submodule_search_locations)[0]))
    return paths + [ROOT / "examples", ROOT / "cachelint" / "demo" / "data"]


def python_files(paths: list[Path]) -> list[Path]:
    files = []
    for p in paths:
        files += [p] if p.is_file() else sorted(p.rglob("*.py"))
    return files


def parse_floor(files: list[Path]) -> float:
    start = time.perf_counter()
    for f in files:
        try:
            cst.parse_module(f.read_bytes().decode("utf-8-sig"))
        except Exception:
            pass
    return time.perf_counter() - start


def check(tree: Path, jobs: int, cache: bool) -> float:
    args = [sys.executable, "-m", "cachelint", "check", str(tree), "--exit-zero", "--output-format", "concise", "--jobs", str(jobs)]
    if not cache:
        args.append("--no-cache")
    start = time.perf_counter()
    subprocess.run(args, cwd=tree, capture_output=True, check=True)
    return time.perf_counter() - start


def peer(command: str, extra: list[str], tree: Path) -> float:
    start = time.perf_counter()
    subprocess.run([command, *extra, str(tree)], cwd=tree, capture_output=True, check=False)
    return time.perf_counter() - start


def find_peers(peer_bin: Path | None) -> dict[str, str]:
    found = {}
    for name in PEERS:
        candidate = peer_bin / name if peer_bin else None
        path = str(candidate) if candidate and candidate.exists() else shutil.which(name)
        if path:
            found[name] = path
    return found


def median(values: list[float]) -> float:
    return statistics.median(values)


def measure(tree: Path, repeat: int, peers: dict[str, str], edit: Path | None = None) -> list[tuple[str, float]]:
    """The table's rows for `tree` (medians of `repeat` runs). `edit`: a module of the tree to change once after
    the warm runs (a comment appended, then restored): the run after it re-lints the files whose cached results
    depend on that module."""
    files = python_files([tree])
    empty = tree.parent / "empty"
    empty.mkdir(exist_ok=True)
    startup = median([check(empty, 1, False) for _ in range(repeat)])
    floor = median([parse_floor(files) for _ in range(repeat)])
    cold1 = median([check(tree, 1, False) for _ in range(repeat)])
    cold2 = median([check(tree, 2, False) for _ in range(repeat)])
    check(tree, 1, True)  # fill the cache
    warm = median([check(tree, 1, True) for _ in range(repeat)])
    rows = [
        ("libcst parse (floor, in process)", floor),
        ("cachelint start-up (empty dir)", startup),
        ("cachelint check cold, 1 process", cold1),
        ("cachelint check cold, 2 processes", cold2),
        ("cachelint check warm (cache), 1 process", warm),
    ]
    if edit is not None:
        original = edit.read_bytes()
        try:
            edit.write_bytes(original + b"\n# edited by bench/lint.py\n")
            rows.append((f"warm after editing {edit.relative_to(tree)}", check(tree, 1, True)))
        finally:
            edit.write_bytes(original)
        check(tree, 1, True)
    rows += [(f"{name} (peer, its own defaults)", median([peer(cmd, PEERS[name], tree) for _ in range(repeat)]))
             for name, cmd in peers.items()]
    return rows


def print_table(files: list[Path], label: str, repeat: int, rows: list[tuple[str, float]], peers: dict[str, str]) -> None:
    lines = sum(f.read_bytes().count(b"\n") for f in files)
    print(f"{len(files)} files, {lines:,} lines, from: {label}; median of {repeat}")
    for name, seconds in rows:
        print(f"  {name:<44} {seconds:8.2f} s")
    if not peers:
        print("  peers: pcdlint / cachedrift not found (see --peer-bin)")
    times = dict(rows)
    floor, startup = times["libcst parse (floor, in process)"], times["cachelint start-up (empty dir)"]
    cold1, cold2 = times["cachelint check cold, 1 process"], times["cachelint check cold, 2 processes"]
    warm = times["cachelint check warm (cache), 1 process"]
    peer_rows = [(name, seconds) for name, seconds in rows if "(peer" in name]
    print(f"headline: cold/parse {(cold1 - startup) / floor:.2f}x (target <= 1.5x, start-up excluded), "
          f"warm/cold {warm / cold1:.0%} (target <= 10%), 2 vs 1 processes {cold1 / cold2:.2f}x (target >= 1.6x)"
          + "".join(f", {name.split()[0]} {seconds / cold1:.2f}x of cachelint cold" for name, seconds in peer_rows))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("paths", nargs="*", type=Path)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--peer-bin", type=Path, help="Folder with the pcdlint and cachedrift commands.")
    args = parser.parse_args()
    peers = find_peers(args.peer_bin)
    sources = args.paths or default_paths()
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp) / "tree"
        tree.mkdir()
        for i, src in enumerate(sources):
            dest = tree / f"{i}-{src.name}"
            shutil.copytree(src, dest) if src.is_dir() else shutil.copy(src, dest)
        rows = measure(tree, args.repeat, peers)
        print_table(python_files([tree]), ", ".join(s.name for s in sources), args.repeat, rows, peers)


if __name__ == "__main__":
    main()
