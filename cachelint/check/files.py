"""Which files `cachelint check` lints: expand the paths given on the command line.

Directories are walked with os.scandir (symlinked directories are not followed) and yield `*.py` and
`*.pyi` files. A walk skips version-control, virtualenv, build and cache directories (`DEFAULT_EXCLUDED_DIRS`,
`*.egg-info`, and any directory holding a `pyvenv.cfg`), paths ignored by `.gitignore` files (the ones
above the walked directory up to the repository root, `.git/info/exclude`, and nested ones) when
`respect-gitignore` is on, paths matching `exclude` / `extend-exclude`, and test modules and folders unless
`include-tests` is on.

Paths named on the command line are taken as given, like ruff without --force-exclude: a file is linted
whatever its name, even under a default-skipped or git-ignored directory, and a directory is walked even
if a walk would skip it. Only `exclude` / `extend-exclude` (the user's explicit wish) and the skipping of test
modules (`include-tests` off) remove them.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pathspec

from cachelint.check.config import Config
from cachelint.errors import CachelintError

PYTHON_SUFFIXES = (".py", ".pyi")

DEFAULT_EXCLUDED_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        ".venv",
        "venv",
        ".env",
        "__pycache__",
        "build",
        "dist",
        "node_modules",
        "site-packages",
        ".tox",
        ".nox",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".cachelint_cache",
    }
)


def is_default_excluded_dir(path: Path | str, name: str | None = None) -> bool:
    """Whether a directory walk skips this directory by default (the name, `*.egg-info`, or an environment: a
    virtualenv by its `pyvenv.cfg`, a conda environment by its `conda-meta`, an older virtualenv by its activate
    script), whatever it is called (`env/` may be a virtualenv or the app's own package)."""
    name = os.path.basename(path) if name is None else name
    if name in DEFAULT_EXCLUDED_DIRS or name.endswith(".egg-info"):
        return True
    return any(os.path.exists(os.path.join(path, marker)) for marker in ENVIRONMENT_MARKERS)


ENVIRONMENT_MARKERS = ("pyvenv.cfg", "conda-meta", os.path.join("bin", "activate"), os.path.join("Scripts", "activate"))


@dataclass(frozen=True, slots=True)
class _Ignore:
    """One ignore file: its patterns apply to paths relative to `base`."""

    base: str
    spec: pathspec.GitIgnoreSpec


def _read_ignore_file(path: str, base: str) -> _Ignore | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return None
    try:
        spec = pathspec.GitIgnoreSpec.from_lines(lines)
    except (ValueError, TypeError, re.error):  # a malformed line (`[AVC-8bit]`, a reversed range): git skips that line alone
        spec = pathspec.GitIgnoreSpec.from_lines([line for line in lines if _compiles(line)])
    return _Ignore(base, spec) if spec.patterns else None


def _compiles(line: str) -> bool:
    try:
        pathspec.GitIgnoreSpec.from_lines([line])
    except (ValueError, TypeError, re.error):
        return False
    return True


def _is_ignored(path: str, is_dir: bool, ignores: Iterable[_Ignore]) -> bool:
    """git's rule: the deepest ignore file with a matching pattern decides, its last matching pattern wins."""
    for ign in reversed(list(ignores)):
        rel = os.path.relpath(path, ign.base).replace(os.sep, "/")
        if rel.startswith("../") or rel == "..":
            continue
        result = ign.spec.check_file(rel + "/" if is_dir else rel)
        if result.include is not None:
            return bool(result.include)
    return False


def _repo_root(directory: str) -> str | None:
    for d in (directory, *map(str, Path(directory).parents)):
        if os.path.exists(os.path.join(d, ".git")):
            return d
    return None


def _ancestor_ignores(directory: str, config: Config) -> list[_Ignore]:
    """Ignore files that apply to `directory` from above it, outermost first (its own .gitignore excluded)."""
    repo = _repo_root(directory)
    if repo is not None:
        boundary = repo
    else:
        root = os.path.abspath(config.root)
        boundary = root if _is_within(directory, root) else directory
    chain: list[str] = []
    d = directory
    while d != boundary:
        parent = os.path.dirname(d)
        if parent == d:
            break
        d = parent
        chain.append(d)
    ignores: list[_Ignore] = []
    if repo is not None:
        info = _read_ignore_file(os.path.join(repo, ".git", "info", "exclude"), repo)
        if info is not None:
            ignores.append(info)
    for d in reversed(chain):
        ign = _read_ignore_file(os.path.join(d, ".gitignore"), d)
        if ign is not None:
            ignores.append(ign)
    return ignores


def _is_within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _walk(given: Path, config: Config, out: dict[str, Path]) -> None:
    """Add the Python files under directory `given` (paths built from the form the user gave)."""
    start_abs = os.path.abspath(given)
    ignores: list[_Ignore] = []
    if config.respect_gitignore:
        ignores = _ancestor_ignores(start_abs, config)
        # A directory named explicitly is walked even if git ignores it; then the patterns that ignore it
        # (e.g. "build/" for build/x.py) must not hide everything inside it.
        if _is_ignored(start_abs, True, ignores):
            ignores = []

    stack: list[tuple[str, str, list[_Ignore]]] = [(str(given), start_abs, ignores)]
    while stack:
        shown, absolute, inherited = stack.pop()
        local = inherited
        if config.respect_gitignore:
            own = _read_ignore_file(os.path.join(absolute, ".gitignore"), absolute)
            if own is not None:
                local = [*inherited, own]
        try:
            with os.scandir(absolute) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            continue  # unreadable directory: nothing to lint there
        subdirs = []
        for entry in entries:
            entry_abs = os.path.join(absolute, entry.name)
            entry_shown = os.path.join(shown, entry.name)
            try:
                if entry.is_dir(follow_symlinks=False):
                    if is_default_excluded_dir(entry_abs, entry.name):
                        continue
                    if config.respect_gitignore and _is_ignored(entry_abs, True, local):
                        continue
                    if config.is_excluded(Path(entry_abs), is_dir=True):
                        continue
                    subdirs.append((entry_shown, entry_abs, local))
                elif entry.name.endswith(PYTHON_SUFFIXES) and entry.is_file():  # a symlinked file is followed
                    if config.respect_gitignore and _is_ignored(entry_abs, False, local):
                        continue
                    if config.is_excluded(Path(entry_abs)):
                        continue
                    out.setdefault(_key(entry_abs), Path(entry_shown))
            except OSError:
                continue
        stack.extend(reversed(subdirs))


def _key(path: str) -> str:
    return os.path.normcase(os.path.abspath(path))


def discover(paths: list[Path], config: Config) -> list[Path]:
    """The sorted, de-duplicated Python files to lint for the command-line `paths` (files and directories).

    Returned paths keep the form the user gave (relative stays relative: `src` gives `src/pkg/a.py`). A
    path that does not exist raises CachelintError.
    """
    found: dict[str, Path] = {}
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            raise CachelintError(f"{raw}: no such file or directory")
        if path.is_dir():
            if config.is_excluded(path, is_dir=True):
                continue
            _walk(path, config, found)
        elif path.is_file():
            if config.is_excluded(path):
                continue
            found.setdefault(_key(str(path)), path)
        # anything else (a FIFO, a socket) is not source code: skipped
    return sorted(found.values(), key=lambda p: (p.parts, str(p)))
