"""A content-hash cache of `cachelint check` results, kept in `<root>/.cachelint_cache/` (as ruff keeps
`.ruff_cache/`).

One JSON file per cache key (cachelint version + configuration fingerprint):
`.cachelint_cache/<version>/<sha256(key)[:16]>.json`, holding for each file (by its path relative to the
project root) the sha256 of the content that was linted and the findings. A changed file simply misses.

The cache is an optimisation and never a reason to fail: an unreadable, corrupt or foreign cache file reads
as empty, and a cache that cannot be written is skipped. Saves are atomic (a temporary file in the same
directory, then os.replace), so a reader never sees a torn file; when two processes save at once each merges
what is on disk with its own entries and the last writer wins.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from cachelint import __version__
from cachelint.check.finding import Finding

CACHE_DIR_NAME = ".cachelint_cache"
FORMAT = 1
CACHEDIR_TAG = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by cachelint.\n"
    "# For information about cache directory tags see https://bford.info/cachedir/\n"
)


def cache_key(config: Any) -> str:
    """The cache key for a `cachelint.check.config.Config`: cachelint's version, its analyzer code (so an
    upgrade or a development edit never serves stale results) and the config fingerprint."""
    return f"{__version__}:{_code_fingerprint()}:{config.fingerprint()}"


def _code_fingerprint() -> str:
    """Size and mtime of every module of the analyzer and the rules: cheap stats, no reads."""
    import cachelint.check as check
    import cachelint.rules as rules

    digest = hashlib.sha256()
    for package in (check, rules):
        for directory in package.__path__:
            for path in sorted(Path(directory).glob("*.py")):
                stat = path.stat()
                digest.update(f"{path.name}:{stat.st_size}:{stat.st_mtime_ns};".encode())
    return digest.hexdigest()[:16]


def _sha256(content: bytes) -> str:
    return hashlib.sha256(content).hexdigest()


def _finding_to_json(finding: Finding) -> dict[str, Any]:
    data = finding.to_json()
    if finding.extra:
        json.dumps(finding.extra)  # raises TypeError / ValueError if it cannot be stored
        data["extra"] = finding.extra
    return data


def _finding_from_json(data: dict[str, Any]) -> Finding:
    finding = Finding.from_json(data)
    extra = data.get("extra")
    if isinstance(extra, dict) and extra:
        finding = dataclasses.replace(finding, extra=extra)
    return finding


MAX_DEPENDENCIES = 64  # as many modules as the analysis keeps parsed (project.MAX_MODULES)


def _dependency_paths(path: Path, source: str) -> list[Path]:
    """The tree's modules whose definitions an analysis of this file may read: the modules it imports from, and
    theirs in turn (a name re-exported by a package's __init__ is followed to the module that defines it)."""
    from cachelint.check.project import dependencies

    found: dict[str, Path] = {}
    first = dependencies(source, str(path))
    for dep in first:
        found.setdefault(os.path.abspath(dep), dep)
    for dep in first:
        if len(found) >= MAX_DEPENDENCIES:
            break
        try:
            text = dep.read_bytes().decode("utf-8-sig")
        except (OSError, UnicodeDecodeError):
            continue
        for again in dependencies(text, str(dep)):
            key = os.path.abspath(again)
            if key != os.path.abspath(path):
                found.setdefault(key, again)
    return list(found.values())[:MAX_DEPENDENCIES]


class ResultCache:
    """Findings per file, valid while the file's content and the cache key stay the same."""

    def __init__(self, root: Path, key: str) -> None:
        self.root = Path(os.path.abspath(root))
        self.key = key
        self.base_dir = self.root / CACHE_DIR_NAME
        self.dir = self.base_dir / _safe_component(__version__)
        self.file = self.dir / f"{hashlib.sha256(key.encode()).hexdigest()[:16]}.json"
        self._entries: dict[str, dict[str, Any]] = self._load()
        self._changed: dict[str, dict[str, Any] | None] = {}  # rel -> new entry (None: drop)
        self._digests: dict[str, tuple[int, int, str | None]] = {}  # abs path -> (mtime, size, sha256 or None)

    @classmethod
    def for_config(cls, config: Any) -> ResultCache:
        """The cache for a Config, kept under its root."""
        return cls(config.root, cache_key(config))

    # -- reading --

    def _load(self) -> dict[str, dict[str, Any]]:
        try:
            data = json.loads(self.file.read_bytes())
        except (OSError, ValueError):
            return {}
        if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("key") != self.key:
            return {}
        entries = data.get("entries")
        if not isinstance(entries, dict):
            return {}
        return {k: v for k, v in entries.items() if isinstance(k, str) and isinstance(v, dict)}

    def _rel(self, path: Path) -> str:
        p = Path(os.path.abspath(path))
        try:
            return p.relative_to(self.root).as_posix()
        except ValueError:
            return p.as_posix()

    def get(self, path: Path, content: bytes) -> list[Finding] | None:
        """The cached findings for `path` with exactly this `content`, or None on a miss.

        A finding whose filename was the path as given to `put` gets the path as given now, so a file
        linted as `./a.py` and then as `a.py` reports the current spelling.
        """
        rel = self._rel(path)
        entry = self._changed.get(rel) if rel in self._changed else self._entries.get(rel)
        if entry is None or entry.get("sha256") != _sha256(content):
            return None
        if not self._dependencies_unchanged(entry.get("deps")):
            return None  # a module of the tree whose definitions the analysis followed has changed
        try:
            findings = [_finding_from_json(f) for f in entry["findings"]]
        except (KeyError, TypeError, ValueError, AttributeError):
            self._changed[rel] = None  # damaged entry: drop it on save
            return None
        stored_name = entry.get("path")
        current_name = str(path)
        if isinstance(stored_name, str) and stored_name != current_name:
            same = {stored_name, os.path.abspath(stored_name)}

            def renamed(f: Finding) -> Finding:
                if f.filename in same or os.path.abspath(f.filename) in same:
                    return dataclasses.replace(f, filename=current_name)
                return f

            findings = [renamed(f) for f in findings]
        return findings

    # -- writing --

    def put(self, path: Path, content: bytes, findings: list[Finding], *, analysed: bool | None = None,
            reads: list[str] | tuple[str, ...] = ()) -> None:
        """Remember `findings` for `path` with this `content` (replacing any older entry for the path).

        `analysed`: whether the analysis looked into the file (and so may have followed its imports); the
        entry then keeps the hashes of the modules it may have read, and is stale once one of them changes.
        None: decided here from the file's text (whether it sends a request). `reads`: the other files the
        analysis did read (project.recording_reads: modules it parsed, callers a search found); they are edges
        too, whether or not the file imports them."""
        rel = self._rel(path)
        try:
            serialized = [_finding_to_json(f) for f in findings]
        except (TypeError, ValueError):
            self._changed[rel] = None  # not storable: forget the path rather than cache something partial
            return
        self._changed[rel] = {"sha256": _sha256(content), "path": str(path), "findings": serialized}
        deps = self._dependency_hashes(path, content, analysed)
        for read in reads:
            digest = self._digest(read)
            if digest is not None:
                deps[read] = digest
        if deps:
            self._changed[rel]["deps"] = deps

    # -- the modules an entry depends on --

    def _digest(self, path: str) -> str | None:
        """A file's sha256, read once per run: many files import the same few modules, and a warm run checks
        every edge. Kept while the file's modification time and size stay the same."""
        try:
            stat = os.stat(path)
        except OSError:
            return None
        known = self._digests.get(path)
        if known is not None and known[:2] == (stat.st_mtime_ns, stat.st_size):
            return known[2]
        try:
            digest: str | None = _sha256(Path(path).read_bytes())
        except OSError:
            digest = None
        self._digests[path] = (stat.st_mtime_ns, stat.st_size, digest)
        return digest

    def _dependency_hashes(self, path: Path, content: bytes, analysed: bool | None) -> dict[str, str]:
        """{absolute path: sha256} of the tree's modules the analysis of this file may follow names into."""
        try:
            source = content.decode("utf-8-sig")
        except UnicodeDecodeError:
            return {}
        if analysed is None:
            from cachelint.check.gate import sends_requests

            analysed = sends_requests(source)
        if not analysed:
            return {}
        hashes = {}
        for dep in _dependency_paths(path, source):
            key = os.path.abspath(dep)
            digest = self._digest(key)
            if digest is not None:
                hashes[key] = digest
        return hashes

    def _dependencies_unchanged(self, deps: Any) -> bool:
        if not deps:
            return True
        if not isinstance(deps, dict):
            return False
        for dep, digest in deps.items():
            if not isinstance(dep, str) or self._digest(dep) != digest:
                return False
        return True

    def save(self) -> bool:
        """Write the cache atomically. Returns False (and changes nothing) when it cannot be written."""
        if not self._changed:
            return True
        try:
            self._ensure_dir()
            # Merge with what another process may have saved since we loaded; our entries win.
            entries = {**self._entries, **self._load()}
            for rel, entry in self._changed.items():
                if entry is None:
                    entries.pop(rel, None)
                else:
                    entries[rel] = entry
            entries = {rel: e for rel, e in entries.items() if rel in self._changed or self._exists(rel)}
            payload = json.dumps(
                {"format": FORMAT, "version": __version__, "key": self.key, "entries": entries},
                sort_keys=True,
                separators=(",", ":"),
            ).encode()
            _atomic_write(self.file, payload)
        except OSError:
            return False
        self._entries = entries
        self._changed = {}
        return True

    def _exists(self, rel: str) -> bool:
        return (self.root / rel).is_file()

    def _ensure_dir(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        tag = self.base_dir / "CACHEDIR.TAG"
        if not tag.exists():
            _atomic_write(tag, CACHEDIR_TAG.encode())
        gitignore = self.base_dir / ".gitignore"
        if not gitignore.exists():
            _atomic_write(gitignore, b"# Automatically created by cachelint.\n*\n")

    def clear(self) -> None:
        """Forget every entry of this key (in memory and, on the next save, on disk)."""
        self._changed = {rel: None for rel in {*self._entries, *self._changed}}
        self._entries = {}
        try:
            self.file.unlink()
        except OSError:
            pass


def _safe_component(text: str) -> str:
    return "".join(c if c.isalnum() or c in "._-+" else "_" for c in text) or "unknown"


def _atomic_write(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
