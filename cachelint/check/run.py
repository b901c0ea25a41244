"""`cachelint check` end to end: discover files, reuse cached results, lint in parallel, apply fixes."""

from __future__ import annotations

import difflib
import os
from dataclasses import dataclass, field
from pathlib import Path

from cachelint.check.analysis import Options
from cachelint.check.cache import ResultCache
from cachelint.check.config import Config
from cachelint.check.engine import default_processes, lint_many, lint_source
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


def options_for(config: Config) -> Options:
    return Options(
        volatile_functions={name: "call" for name in config.volatile_functions},
        call_patterns={name: "openai-chat" for name in config.call_patterns},
        model=config.model,
        confidence=config.confidence,
    )


def display_name(path: Path) -> str:
    try:
        return os.path.relpath(path)
    except ValueError:  # another drive on Windows
        return str(path)


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
) -> CheckRun:
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
    for job, findings in zip(pending, lint_many(pending, processes or default_processes())):
        results[job[1]] = findings
        if cache is not None:
            path = by_name[job[1]]
            cache.put(path, contents[path], findings)
    if cache is not None:
        cache.save()
    for path in files:
        name = display_name(path)
        findings = results.get(name, [])
        if (fix or diff) and fixable(findings, unsafe_fixes):
            try:
                source = contents[path].decode("utf-8-sig")
            except UnicodeDecodeError:
                run.findings += findings
                continue
            new_source, applied, findings = fix_source(source, name, config.enabled_codes(path), options, unsafe_fixes)
            if applied and diff:
                run.diffs.append(unified_diff(source, new_source, name))
            elif applied:
                path.write_text(new_source, encoding="utf-8")
                run.fixed += applied
        run.findings += findings
    run.findings.sort(key=lambda f: (f.filename, f.row, f.column, f.code))
    return run


def _renamed(finding: Finding, name: str) -> Finding:
    from dataclasses import replace

    return finding if finding.filename == name else replace(finding, filename=name)
