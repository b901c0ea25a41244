"""What installing cachelint costs: wall time and size of the core and of each extra, in fresh virtualenvs.

Usage: python bench/install.py [--extras core,proxy,hf,replay,all,dev] [--python python3]

Each variant gets a new `python3 -m venv` (with the pip it ships, as the README's commands use) and
`pip install '.[EXTRA]'` from this checkout. The baseline, measured in the same run, is the empty virtualenv
(its size) and `pip install libcst` into another one (the analyzer's one heavy dependency: the floor of the
core). Sizes are of site-packages; pip's download cache is kept between variants as a user's would be.
"""

from __future__ import annotations

import argparse
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def size_of(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def site_packages(venv: Path) -> Path:
    return next(venv.glob("lib/python*/site-packages"))


def install(python: str, venv: Path, *requirements: str) -> tuple[float, int, int]:
    subprocess.run([python, "-m", "venv", str(venv)], check=True)
    empty = size_of(site_packages(venv))
    started = time.perf_counter()
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check", *requirements],
                   check=True, cwd=ROOT)
    seconds = time.perf_counter() - started
    listed = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "list", "--format", "freeze", "--disable-pip-version-check"],
                            capture_output=True, text=True, check=True).stdout.split()
    return seconds, size_of(site_packages(venv)) - empty, len(listed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--extras", default="core,proxy,hf,replay,all,dev")
    parser.add_argument("--python", default="python3")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        seconds, size, count = install(args.python, Path(tmp, "floor"), "libcst")
        rows.append(("floor: pip install libcst", seconds, size, count))
        for extra in args.extras.split(","):
            spec = "." if extra == "core" else f".[{extra}]"
            seconds, size, count = install(args.python, Path(tmp, extra), spec)
            rows.append((f"pip install '{spec}'", seconds, size, count))
    floor_s, floor_size = rows[0][1], rows[0][2]
    print(f"{'install':30} {'seconds':>8} {'MiB':>8} {'dists':>6}  {'time/floor':>10} {'size/floor':>10}")
    for name, seconds, size, count in rows:
        print(f"{name:30} {seconds:8.1f} {size / 2**20:8.1f} {count:6d}  {seconds / floor_s:9.1f}x {size / floor_size:9.1f}x")


if __name__ == "__main__":
    main()
