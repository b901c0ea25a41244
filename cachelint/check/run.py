"""`cachelint check` end to end: discover files, reuse cached results, lint in parallel, apply fixes."""

from __future__ import annotations

import difflib
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from cachelint.check.analysis import Options
from cachelint.check.cache import ResultCache
from cachelint.check.config import Config
from cachelint.check.engine import (
    MAX_FILE_BYTES,
    default_processes,
    display_name,
    file_size,
    is_analysed,
    lint_many,
    lint_source,
    too_large,
)
from cachelint.check.files import discover
from cachelint.check.finding import Finding
from cachelint.check.fixes import apply_edits, fixable

MAX_FIX_PASSES = 5


@dataclass(slots=True)
class CheckRun:
    findings: list[Finding] = field(default_factory=list)
    files: int = 0
    fixed: int = 0
    cached: int = 0
    diffs: list[str] = field(default_factory=list)  # unified diffs of what --fix would write (--diff)
    warnings: list[str] = field(default_factory=list)  # one line each, for stderr (a file --fix could not write)


def options_for(config: Config) -> Options:
    return Options(
        volatile_functions={name: "call" for name in config.volatile_functions},
        call_patterns={name: "openai-chat" for name in config.call_patterns},
        model=config.model,
        confidence=config.confidence,
    )


def fix_source(source: str, filename: str, codes: frozenset[str], options: Options, unsafe: bool) -> tuple[str, int, list[Finding]]:
    """Apply fixes until none is left (or a few passes); (new source, fixes applied, remaining findings)."""
    applied_total = 0
    findings = lint_source(source, filename, codes, options)
    for _ in range(MAX_FIX_PASSES):
        edits = [edit for f in fixable(findings, unsafe) for edit in f.fix.edits]  # type: ignore[union-attr]
        if not edits:
            break
        new_source, applied = apply_edits(source, edits)
        if new_source == source or any(f.code == "CL999" for f in lint_source(new_source, filename, frozenset({"CL999"}), options)):
            break  # a fix that does not parse is never written
        source, applied_total = new_source, applied_total + applied
        findings = lint_source(source, filename, codes, options)
    return source, applied_total, findings


def unified_diff(before: str, after: str, filename: str) -> str:
    return "".join(difflib.unified_diff(before.splitlines(True), after.splitlines(True), f"a/{filename}", f"b/{filename}"))


def run_check(
    paths: list[Path],
    config: Config,
    *,
    fix: bool = False,
    unsafe_fixes: bool = False,
    diff: bool = False,
    use_cache: bool = True,
    processes: int | None = None,
    progress: "Callable[[int, int], None] | None" = None,
) -> CheckRun:
    """Lint `paths`; `progress(done, total)` is called as files are linted (total: the files not in the cache)."""
    run = CheckRun()
    options = options_for(config)
    files = discover(paths, config)
    run.files = len(files)
    cache = ResultCache.for_config(config) if use_cache else None
    contents: dict[Path, bytes] = {}
    pending: list[tuple[str, str, frozenset[str], Options]] = []
    results: dict[str, list[Finding]] = {}
    for path in files:
        name = display_name(path)
        size = file_size(path)
        if size > MAX_FILE_BYTES:  # never read: a generated or minified file may be gigabytes
            results[name] = [too_large(name, size)]
            contents[path] = b""
            continue
        try:
            data = path.read_bytes()
        except OSError:
            data = b""
        contents[path] = data
        cached = cache.get(path, data) if cache is not None else None
        if cached is not None:
            results[name] = [_renamed(f, name) for f in cached]
            run.cached += 1
        else:
            pending.append((str(path), name, config.enabled_codes(path), options))
    by_name = {display_name(p): p for p in files}
    on_done = (lambda done: progress(done, len(pending))) if progress is not None else None
    for job, (findings, reads) in zip(pending, lint_many(pending, processes or default_processes(), on_done)):
        results[job[1]] = findings
        if cache is not None:
            path = by_name[job[1]]
            cache.put(path, contents[path], findings, analysed=_analysed(contents[path], job[2], options), reads=reads)
    if cache is not None:
        cache.save()
    fixed_away: set[tuple] = set()  # (file, row, column, code) of the findings fixed in this run
    for path in files:
        name = display_name(path)
        findings = [f for f in results.get(name, []) if _moved_allowed(f, config)]
        if (fix or diff) and fixable(findings, unsafe_fixes):
            try:
                source = contents[path].decode("utf-8-sig")
            except UnicodeDecodeError:
                run.findings += findings
                continue
            original = findings
            new_source, applied, findings = fix_source(source, name, config.enabled_codes(path), options, unsafe_fixes)
            findings = [f for f in findings if _moved_allowed(f, config)]
            if applied and diff:
                run.diffs.append(unified_diff(source, new_source, name))
            elif applied:
                problem = write_fixed(path, new_source, bom=contents[path].startswith(_BOM))
                if problem:
                    run.warnings.append(f"{name}: fixes not written: {problem}")
                    findings = original  # the file is as it was: so are its findings
                else:
                    run.fixed += applied
                    remaining = {(f.filename, f.row, f.column, f.code) for f in findings}
                    fixed_away |= {(f.filename, f.row, f.column, f.code) for f in fixable(original, unsafe_fixes)} - remaining
        run.findings += findings
    # another module's analysis placed what this run has just fixed (its module's own finding, with the fix) there too
    run.findings = _once([f for f in run.findings if not (f.extra.get("path") and (f.filename, f.row, f.column, f.code) in fixed_away)])
    run.findings.sort(key=lambda f: (f.filename, f.row, f.column, f.code))
    return run


_BOM = b"\xef\xbb\xbf"


def _once(findings: list[Finding]) -> list[Finding]:
    """A value made in one module and taken in by several is reported once, where it is made. The module's own finding
    there wins (it carries the fix); found through a request elsewhere as well, it is `certain`."""
    from dataclasses import replace

    kept: dict[tuple, Finding] = {}
    for finding in findings:
        key = (finding.filename, finding.row, finding.column, finding.code)
        old = kept.get(key)
        if old is None:
            kept[key] = finding
            continue
        # the module's own finding (no `path`: reported by its own analysis) over one another module moved there
        own, other = (finding, old) if old.extra.get("path") and not finding.extra.get("path") else (old, finding)
        if other.confidence == "certain" and own.confidence != "certain":
            own = replace(own, confidence="certain")
        kept[key] = own
    return list(kept.values())


def _moved_allowed(finding: Finding, config: Config) -> bool:
    """A finding reported in another module of the tree obeys that module's config: not in an excluded file, nor one
    whose per-file ignores leave its code out."""
    path = finding.extra.get("path")
    if not path:
        return True
    target = Path(path)
    return not config.is_excluded(target) and finding.code in config.enabled_codes(target)


def _analysed(data: bytes, codes: frozenset[str], options: Options) -> bool:
    """Whether the file's analysis may have followed its imports (its cache entry then depends on them)."""
    try:
        return is_analysed(data.decode("utf-8-sig"), codes, options)
    except UnicodeDecodeError:
        return False


def write_fixed(path: Path, text: str, *, bom: bool) -> str | None:
    """Write a fixed file through a temporary file beside it and an atomic rename, so an interrupted run never
    leaves half a file; the file keeps its mode and its UTF-8 BOM. Returns why it could not be written, or None.
    A read-only file is left alone (the rename would replace it: the directory's permission, not the file's)."""
    import stat
    import tempfile

    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except OSError as exc:
        return exc.strerror or str(exc)
    if not os.access(path, os.W_OK) or not mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH):
        return "the file is read-only"  # its mode says so even where the user (root) could write it
    data = (_BOM if bom else b"") + text.encode("utf-8", "surrogatepass")
    try:
        fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".cachelint-tmp", dir=path.parent)
    except OSError as exc:
        return f"cannot create a file beside it ({exc.strerror or exc})"
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.chmod(temp, mode)
        os.replace(temp, path)
    except OSError as exc:
        try:
            os.unlink(temp)
        except OSError:
            pass
        return exc.strerror or str(exc)
    return None


def _renamed(finding: Finding, name: str) -> Finding:
    """A cached finding under the name its file is linted as now; one reported in another module of the tree (where a
    value this file's request takes in is made) under that module's name, seen from here."""
    from dataclasses import replace

    if finding.extra.get("path"):
        name = display_name(Path(finding.extra["path"]))
    return finding if finding.filename == name else replace(finding, filename=name)
