"""Linting a source, a file, or a tree: parse once, run the rules, apply suppressions, collect findings."""

from __future__ import annotations

import gc
import os
import re
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import libcst as cst

from cachelint.check import suppress
from cachelint.check.analysis import Analysis, Options
from cachelint.check.finding import Finding
from cachelint.check.gate import EVERY_CODE, holds_prompt_shapes, holds_shared_renderer, narrow_shapes, sends_requests
from cachelint.check.module import ModuleContext, read_only_visits
from cachelint.check.project import recording_reads
from cachelint.check.registry import all_rules
from cachelint.rules import RULE_META

MAX_FILE_BYTES = 5 * 1024 * 1024
MAX_NESTING = 200  # CPython itself refuses deeper parentheses; libcst's native parser overflows the C stack far above
ALL_CODES = frozenset(RULE_META)


@dataclass(slots=True)
class LintResult:
    findings: list[Finding] = field(default_factory=list)
    files: int = 0
    from_cache: int = 0


def decode(data: bytes) -> str:
    """UTF-8 (a BOM is allowed); anything else is the caller's CL999."""
    return data.decode("utf-8-sig")


def _unanalyzable(filename: str, message: str, row: int = 1, column: int = 1) -> Finding:
    meta = RULE_META["CL999"]
    return Finding("CL999", meta.name, message, "error", filename, row, column, row, column)


def lint_source(source: str | bytes, filename: str, codes: frozenset[str] = ALL_CODES, options: Options | None = None) -> list[Finding]:
    """All findings for one file's source; a file that cannot be analysed gives one CL999 finding."""
    if isinstance(source, bytes):
        if len(source) > MAX_FILE_BYTES:
            return [_unanalyzable(filename, f"file is too large to analyze ({len(source):,} bytes; the limit is {MAX_FILE_BYTES:,})")]
        try:
            source = decode(source)
        except UnicodeDecodeError as exc:
            return [_unanalyzable(filename, f"file is not valid UTF-8 (byte {exc.start})")]
    if len(source) > MAX_FILE_BYTES:
        return [_unanalyzable(filename, f"file is too large to analyze ({len(source):,} characters; the limit is {MAX_FILE_BYTES:,})")]
    if "\x00" in source:
        return [_unanalyzable(filename, "file contains NUL bytes")]
    try:
        source.encode("utf-8")
    except UnicodeEncodeError as exc:
        return [_unanalyzable(filename, f"file is not valid Unicode (a lone surrogate at character {exc.start})")]
    if _nesting_depth(source) > MAX_NESTING:
        return [_unanalyzable(filename, f"file is nested more than {MAX_NESTING} brackets deep")]
    llm = sends_requests(source, options.call_patterns if options is not None else ())
    # the gates ask about every rule, so a selection (`--select CL104`) only filters what the full run finds: a
    # module another rule's shape opens is analysed whole for the selected rules too
    analysed = llm or holds_prompt_shapes(source, EVERY_CODE)
    with _collector_paused():
        narrow = narrow_shapes(source, EVERY_CODE) & codes if not analysed else frozenset()
        if not analysed and "CL101" in codes and holds_shared_renderer(source):
            narrow |= {"CL101"}  # a prompt renderer others call, judged alone (beside any other narrow shape of the module)
        if narrow:
            return _analyse(source, filename, narrow, options, llm)  # one shape, judged alone by its rules
        if not analysed:
            return _syntax_only(source, filename)  # no SDK in sight: no syntax tree, no metadata
        return _analyse(source, filename, codes, options, llm)


def _analyse(source: str, filename: str, codes: frozenset[str], options: Options | None, llm: bool) -> list[Finding]:
    """Parse the module and run the rules on it (`llm`: whether it may send requests itself)."""
    try:
        module = cst.parse_module(source)
    except cst.ParserSyntaxError as exc:
        return [_syntax_error(source, filename, exc)]
    except (RecursionError, MemoryError):
        return [_unanalyzable(filename, "file is too deeply nested to analyze")]
    try:
        with read_only_visits():  # the analysis only reads the tree: libcst's visits skip their copies
            ctx = ModuleContext(source, filename, module)
            return _run_rules(ctx, codes, options, sites=llm)
    except RecursionError:
        return [_unanalyzable(filename, "file is too deeply nested to analyze")]
    except Exception as exc:  # a bug must cost one file, never the run (or the editor's server)
        return [_unanalyzable(filename, f"cachelint could not analyze this file ({type(exc).__name__}: {exc}); please report it")]


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector paused while one module is parsed and analysed. libcst's tree and the
    analysis's indexes (or the syntax tree of a module only checked to parse) are hundreds of thousands of objects
    that all live until the module is done, and the collector would walk them again and again while they are made
    (about a fifth of the analysis). They are freed as usual once the module is done: by their reference counts,
    and what is left in cycles (a scope graph) by the collector's next run."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def is_analysed(source: str, codes: frozenset[str], options: Options | None) -> bool:
    """Whether `lint_source` analyses this module (and so may follow its imports into other modules), or only
    checks that it parses."""
    return sends_requests(source, options.call_patterns if options is not None else ()) or holds_prompt_shapes(source, EVERY_CODE) \
        or ("CL101" in codes and holds_shared_renderer(source)) or bool(narrow_shapes(source, EVERY_CODE) & codes)


def _syntax_only(source: str, filename: str) -> list[Finding]:
    """CL999 or nothing, for a module the analysis skips: it only has to be known to parse. CPython's own parser
    says so many times faster than building libcst's tree (most files of a tree take this path). Only where it
    refuses (a real error, or syntax newer than the running Python) does libcst's parser decide, as it does for
    an analysed module, so the findings and their positions are the same either way."""
    try:
        compile(source, "<cachelint>", "exec", flags=_PARSE_ONLY, dont_inherit=True)
        return []
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        pass
    try:
        cst.parse_module(source)
    except cst.ParserSyntaxError as exc:
        return [_syntax_error(source, filename, exc)]
    except (RecursionError, MemoryError):
        return [_unanalyzable(filename, "file is too deeply nested to analyze")]
    return []


_PARSE_ONLY = 0x400 | 0x2000  # PyCF_ONLY_AST | PyCF_ALLOW_TOP_LEVEL_AWAIT: the parser alone, no compiler checks


MAX_MESSAGE = 200  # characters of a parser's message kept: a message may quote a whole (huge) line


def _bounded(text: str, limit: int = MAX_MESSAGE) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def _syntax_error(source: str, filename: str, exc: cst.ParserSyntaxError) -> Finding:
    """CL999 at the real error. libcst's parser reports where it gave up (often the line after the error);
    CPython's compiler names the token that is wrong, so its position wins when it has one."""
    row, column, message = exc.raw_line, exc.raw_column + 1, exc.message
    try:
        # not the real file name: CPython would read the line again from disk and shift a long line's offset
        compile(source, "<cachelint>", "exec", flags=_PARSE_ONLY, dont_inherit=True)
    except SyntaxError as err:
        if err.lineno:
            row, column = err.lineno, max(err.offset or 1, 1)
            message = err.msg or message
    except (ValueError, RecursionError, MemoryError, OverflowError):
        pass
    return _unanalyzable(filename, f"syntax error: {_bounded(message)}", row, column)


_NOT_BRACKETS = re.compile(r"[^()\[\]{}]+")


def _nesting_depth(source: str) -> int:
    """The deepest bracket nesting of the code. A cheap character count first (brackets inside strings and
    comments count too, so it is an upper bound); only when that is over the limit are the tokens counted."""
    depth = deepest = 0
    for char in _NOT_BRACKETS.sub("", source):  # the brackets alone, in order: a tenth of the characters to count
        if char in "([{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in ")]}" and depth:
            depth -= 1
    if deepest <= MAX_NESTING:
        return deepest
    import io
    import tokenize

    depth = deepest = 0
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type == tokenize.OP and token.string in "([{":
                depth += 1
                deepest = max(deepest, depth)
            elif token.type == tokenize.OP and token.string in ")]}" and depth:
                depth -= 1
    except (tokenize.TokenError, SyntaxError):
        pass  # the parser will say what is wrong
    return deepest


def _run_rules(ctx: ModuleContext, codes: frozenset[str], options: Options | None, sites: bool = True) -> list[Finding]:
    """`sites`: whether to look for requests at all (False: a module with no SDK in sight, looked at only for
    prompt-shaped data such as a history class that cuts its messages)."""
    analysis = Analysis(ctx, options, find_sites=sites)
    rules = [r for r in all_rules() if r.code in codes]
    if not analysis.sites:  # no request here: only the rules that judge prompt-shaped data on its own
        rules = [r for r in rules if r.without_sites]
        if not rules:
            return []
    suppressions = None  # read from the comments when the first report needs it (most modules have none)
    findings: dict[tuple, Finding] = {}
    statements: dict[tuple, int] = {}  # finding key -> the row of its statement
    moved_suppressions: dict[str, suppress.Suppressions | None] = {}
    for rule_class in rules:
        meta = rule_class.meta()
        for report in rule_class().check(analysis):
            if report.confidence == "likely" and options is not None and options.confidence == "certain":
                continue
            if report.elsewhere is not None:
                if suppressions is None:
                    suppressions = suppress.parse(ctx.source)
                moved = _moved(ctx, meta, report, suppressions, moved_suppressions)
                if moved is not None:
                    key = (moved.filename, moved.code, moved.row, moved.column)
                    findings.setdefault(key, moved)
                    statements.setdefault(key, (moved.filename, moved.row))  # type: ignore[arg-type]
                continue
            span = ctx.span(report.node)
            row, column = report.position or (span.row, span.column)
            statement_row = ctx.span(ctx.statement_of(report.node)).row
            if suppressions is None:
                suppressions = suppress.parse(ctx.source)
            rows = (row, statement_row)
            if report.also_at is not None:  # a finding moved to the body a request sends: a noqa on the request still holds
                rows += (ctx.span(report.also_at).row, ctx.span(ctx.statement_of(report.also_at)).row)
            if suppressions.covers(meta.code, rows):
                continue
            finding = Finding(
                meta.code, meta.name, report.message, report.severity or meta.severity, ctx.filename,
                row, column, span.end_row, span.end_column, report.fix, confidence=report.confidence,  # type: ignore[arg-type]
            )
            key = (finding.code, finding.row, finding.column)
            findings.setdefault(key, finding)
            statements.setdefault(key, statement_row)
    return sorted(_one_per_statement(findings, statements), key=lambda f: (f.filename != ctx.filename, f.filename, f.row, f.column, f.code))


_LINE = re.compile(r"\bline (\d+)")
_ORIGIN = re.compile(r" \(in [^()]*:\d+\)")


def _moved(ctx: ModuleContext, meta, report, suppressions, moved_suppressions: dict) -> Finding | None:
    """A finding about a value made in another module of the tree, reported there, where it is fixed (the listing to
    sort, the clock written into a prompt builder's text). A noqa at the value, on the first row of its statement, or
    at the place in this module that reaches it, holds. The message names this module's places relative to the other
    file's folder (`../agent.py:12`), so a cached message reads the same from any working directory; `extra` keeps the
    other file's path (the cache's and the config's key) and the finding as it reads here (the editor shows it on this
    document, which is what is open). None: suppressed."""
    from cachelint.check.project import module_context

    path, row, column, end_row, end_column, statement_row = report.elsewhere
    span = ctx.span(report.node)
    if suppressions.covers(meta.code, (span.row, ctx.span(ctx.statement_of(report.node)).row)):
        return None
    if path not in moved_suppressions:
        other = module_context(Path(path))
        moved_suppressions[path] = suppress.parse(other.source) if other is not None else None
    if moved_suppressions[path] is not None and moved_suppressions[path].covers(meta.code, (row, statement_row)):
        return None
    here = os.path.relpath(os.path.abspath(ctx.filename), os.path.dirname(os.path.abspath(path)))
    message = _LINE.sub(lambda m: f"{here}:{m.group(1)}", _ORIGIN.sub("", report.message, count=1))
    message += f" (reached from {here}:{span.row})"
    shown = path if os.path.isabs(ctx.filename) else display_name(Path(path))
    caller = [span.row, span.column, span.end_row, span.end_column, report.message]
    return Finding(meta.code, meta.name, message, report.severity or meta.severity, shown, row, column, end_row, end_column,
                   None, extra={"path": path, "caller": caller}, confidence=report.confidence)  # type: ignore[arg-type]


def display_name(path: Path) -> str:
    """A file's name as the run shows it: relative to the working directory."""
    try:
        return os.path.relpath(path)
    except ValueError:  # another drive on Windows
        return str(path)


def _one_per_statement(findings: dict[tuple, Finding], statements: dict[tuple, int]) -> list[Finding]:
    """Where a rule found a problem through the request (certain) and from the data's shape alone (likely) in one
    statement, the certain finding says it; the likely one is dropped. Distinct certain findings all stay (two
    arguments of one call can each change)."""
    certain = {(f.code, statements[key]) for key, f in findings.items() if f.confidence == "certain"}
    return [f for key, f in findings.items() if f.confidence == "certain" or (f.code, statements[key]) not in certain]


def too_large(filename: str, size: int) -> Finding:
    return _unanalyzable(filename, f"file skipped: too large to analyze ({size:,} bytes; the limit is {MAX_FILE_BYTES:,})")


def lint_file(path: Path, display: str, codes: frozenset[str], options: Options | None) -> list[Finding]:
    size = file_size(path)
    if size > MAX_FILE_BYTES:
        return [too_large(display, size)]  # checked before reading: never load a huge file into memory
    try:
        data = path.read_bytes()
    except OSError as exc:
        return [_unanalyzable(display, f"cannot read file: {exc.strerror}")]
    return lint_source(data, display, codes, options)


def file_size(path: str | os.PathLike) -> int:
    """A file's size in bytes (0 when it cannot be stat'ed: reading it will say why)."""
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def _lint_one(job: tuple[str, str, frozenset[str], Options | None]) -> tuple[list[Finding], list[str]]:
    path, display, codes, options = job
    with recording_reads() as reads:
        findings = lint_file(Path(path), display, codes, options)
    reads.discard(os.path.abspath(path))
    return findings, sorted(reads)


def lint_many(jobs: list[tuple[str, str, frozenset[str], Options | None]], processes: int,
              on_done: "Callable[[int], None] | None" = None) -> Iterable[tuple[list[Finding], list[str]]]:
    """(findings, the tree's other files the analysis read) for each job, in order; in parallel processes when
    there is enough work.

    In parallel, the largest files go first in small chunks, so no process is left with a big file at the end
    while the others wait (longest-processing-time-first scheduling)."""
    if processes > 1 and len(jobs) >= 2 * processes:
        order = sorted(range(len(jobs)), key=lambda i: -file_size(jobs[i][0]))
        results: list[tuple[list[Finding], list[str]]] = [([], []) for _ in jobs]
        chunk = max(1, min(16, len(jobs) // (processes * 32)))
        with ProcessPoolExecutor(max_workers=processes) as pool:
            for done, (index, result) in enumerate(zip(order, pool.map(_lint_one, [jobs[i] for i in order], chunksize=chunk)), 1):
                results[index] = result
                if on_done is not None:
                    on_done(done)
        yield from results
    else:
        for done, job in enumerate(jobs, 1):
            result = _lint_one(job)
            if on_done is not None:
                on_done(done)
            yield result


def default_processes() -> int:
    return max(1, min(os.cpu_count() or 1, 8))
