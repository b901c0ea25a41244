"""Output formats of `cachelint check`: text, concise, json, sarif and github.

Everything here works on `Finding`s that arrive sorted by (filename, row, column). Each format is built from
small pure functions that return strings or JSON-ready objects; `render` only picks one and writes it.

Rows and columns are 1-based and columns count code points (see `finding.py`). SARIF says so with
`columnKind: unicodeCodePoints`; the text snippet turns them into terminal cells (tabs, wide characters).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import unicodedata
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import quote

from cachelint import __version__
from cachelint.check.finding import Finding, Fix
from cachelint.rules import RULE_META, RuleMeta

FORMATS = ("text", "concise", "json", "sarif", "github")

SARIF_SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
SARIF_VERSION = "2.1.0"
SRCROOT = "%SRCROOT%"
INFORMATION_URI = "https://github.com/cachelint/cachelint"
FINGERPRINT_KEY = "cachelint/v1"
TAB_WIDTH = 4


# --------------------------------------------------------------------------------------------------------
# entry point


def render(
    findings: list[Finding],
    fmt: str,
    stream: TextIO,
    *,
    files_checked: int = 0,
    fixed: int = 0,
    show_fixes_hint: bool = True,
    unsafe_fixes: bool = False,
    color: bool = False,
    root: str | os.PathLike[str] | None = None,
) -> None:
    """Write `findings` to `stream` in format `fmt` (one of FORMATS).

    `fixed` is how many findings `--fix` already fixed (they are not in `findings`); `unsafe_fixes` says
    whether unsafe fixes are enabled, so they count as fixable. `root` is the directory paths are made
    relative to (the current directory by default); `files_checked` goes into the SARIF run's properties.
    """
    base = Path(root) if root is not None else Path.cwd()
    sources = SourceLines()
    if fmt == "text":
        lines = text_lines(findings, sources, base, fixed=fixed, show_fixes_hint=show_fixes_hint,
                           unsafe_fixes=unsafe_fixes, color=color)
        _write_lines(stream, lines)
    elif fmt == "concise":
        lines = concise_lines(findings, base, fixed=fixed, show_fixes_hint=show_fixes_hint,
                              unsafe_fixes=unsafe_fixes, color=color)
        _write_lines(stream, lines)
    elif fmt == "json":
        stream.write(json_text(findings) + "\n")
    elif fmt == "sarif":
        log = sarif_log(findings, sources, base, files_checked=files_checked)
        stream.write(json.dumps(log, indent=2) + "\n")
    elif fmt == "github":
        _write_lines(stream, [github_line(f, base) for f in findings])
    else:
        raise ValueError(f"unknown output format {fmt!r}; expected one of {', '.join(FORMATS)}")


def _write_lines(stream: TextIO, lines: Iterable[str]) -> None:
    for line in lines:
        stream.write(line + "\n")


# --------------------------------------------------------------------------------------------------------
# paths and source lines

_NEWLINE = re.compile(r"\r\n|\r|\n")  # Python's (and libcst's) line ends, unlike str.splitlines()


class SourceLines:
    """Reads source files once and hands out their lines by 1-based row; None when not readable."""

    def __init__(self) -> None:
        self._files: dict[str, list[str] | None] = {}

    def line(self, filename: str, row: int) -> str | None:
        lines = self._lines(filename)
        if lines is None or not 1 <= row <= len(lines):
            return None
        return lines[row - 1]

    def _lines(self, filename: str) -> list[str] | None:
        if filename not in self._files:
            self._files[filename] = read_lines(filename)
        return self._files[filename]


def read_lines(filename: str) -> list[str] | None:
    try:
        with open(filename, encoding="utf-8-sig", errors="replace", newline="") as handle:
            return _NEWLINE.split(handle.read())
    except (OSError, ValueError):
        return None


def _absolute(filename: str) -> Path:
    """`filename` as the process opens it (relative to the current directory), made absolute."""
    return Path(os.path.normpath(Path(filename).absolute()))


def relative_path(filename: str, root: Path) -> Path | None:
    """`filename` relative to `root`, or None when it lies outside it."""
    try:
        return _absolute(filename).relative_to(os.path.normpath(root.absolute()))
    except ValueError:
        return None


def display_path(filename: str, root: Path) -> str:
    """The path a user sees: relative to `root` when under it, else as given."""
    rel = relative_path(filename, root)
    return str(rel) if rel is not None else filename


def posix_path(filename: str, root: Path) -> str:
    """Relative path with forward slashes (absolute when outside `root`), for SARIF, GitHub, fingerprints."""
    rel = relative_path(filename, root)
    return rel.as_posix() if rel is not None else _absolute(filename).as_posix()


# --------------------------------------------------------------------------------------------------------
# fixes and the summary line


def is_fixable(finding: Finding, unsafe_fixes: bool = False) -> bool:
    """Whether `--fix` would fix this finding (with `--unsafe-fixes` when `unsafe_fixes`)."""
    fix = finding.fix
    return fix is not None and (fix.applicability == "safe" or unsafe_fixes)


def hidden_fix_count(findings: Sequence[Finding], unsafe_fixes: bool = False) -> int:
    """Findings whose only fix is unsafe and so needs `--unsafe-fixes`."""
    if unsafe_fixes:
        return 0
    return sum(1 for f in findings if f.fix is not None and f.fix.applicability == "unsafe")


def _plural(count: int, word: str, plural: str | None = None) -> str:
    return f"{count} {word if count == 1 else (plural or word + 's')}"


def summary_lines(findings: Sequence[Finding], *, fixed: int = 0, show_fixes_hint: bool = True,
                  unsafe_fixes: bool = False) -> list[str]:
    """`All checks passed!` or `Found N errors.`, then the fix hints."""
    remaining = len(findings)
    if remaining == 0 and fixed == 0:
        return ["All checks passed!"]
    if fixed:
        lines = [f"Found {_plural(remaining + fixed, 'error')} ({fixed} fixed, {remaining} remaining)."]
    else:
        lines = [f"Found {_plural(remaining, 'error')}."]
    if show_fixes_hint:
        fixable = sum(1 for f in findings if is_fixable(f, unsafe_fixes))
        hidden = hidden_fix_count(findings, unsafe_fixes)
        if fixable:
            lines.append(f"[*] {fixable} fixable with the --fix option.")
        if hidden:
            lines.append(f"({_plural(hidden, 'hidden fix', 'hidden fixes')} can be enabled with the --unsafe-fixes option)")
    return lines


# --------------------------------------------------------------------------------------------------------
# text and concise

_ANSI = {"bold": "1", "red": "31", "yellow": "33", "blue": "34", "cyan": "36"}


def paint(text: str, *styles: str, color: bool = False) -> str:
    if not color or not styles:
        return text
    codes = ";".join(_ANSI[s] for s in styles)
    return f"\x1b[{codes}m{text}\x1b[0m"


def _code_style(finding: Finding) -> tuple[str, ...]:
    return ("bold", "red") if finding.severity == "error" else ("bold", "yellow")


def header_line(finding: Finding, root: Path, *, mark_fixable: bool, unsafe_fixes: bool = False,
                color: bool = False) -> str:
    """`path:row:col: CODE [*] message` (the `[*]` only with `mark_fixable` and a fix `--fix` applies)."""
    where = f"{paint(display_path(finding.filename, root), 'bold', color=color)}:{finding.row}:{finding.column}:"
    code = paint(finding.code, *_code_style(finding), color=color)
    mark = " " + paint("[*]", "cyan", color=color) if mark_fixable and is_fixable(finding, unsafe_fixes) else ""
    return f"{where} {code}{mark} {one_line(finding.message)}"


def one_line(text: str) -> str:
    """A message fit for one terminal line: line breaks become spaces, other control characters U+FFFD."""
    return _NEWLINE.sub(" ", text).translate(_CONTROLS)


# C0 controls (but tab) and DEL would move the cursor or colour the terminal: show them as U+FFFD.
_CONTROLS = {c: "\ufffd" for c in [*range(0x00, 0x09), *range(0x0A, 0x20), 0x7F]}


def cell_width(char: str) -> int:
    """Terminal cells one code point takes (tabs count TAB_WIDTH, as the snippet expands them)."""
    if char == "\t":
        return TAB_WIDTH
    if unicodedata.combining(char) or unicodedata.category(char) in ("Mn", "Me", "Cf"):
        return 0
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


def caret_span(line: str, finding: Finding) -> tuple[int, int]:
    """(cells before the underline, cells under it) for the finding's columns on its first row."""
    start = min(max(finding.column - 1, 0), len(line))
    end = finding.end_column - 1 if finding.end_row == finding.row else len(line)
    end = min(max(end, start), len(line))
    offset = sum(cell_width(c) for c in line[:start])
    width = sum(cell_width(c) for c in line[start:end])
    return offset, max(width, 1)


def snippet_lines(finding: Finding, line: str, *, color: bool = False) -> list[str]:
    """The offending source line with a gutter and a caret underline, as ruff shows it."""
    number = str(finding.row)
    pad = " " * len(number)
    bar = paint("|", "blue", "bold", color=color)
    line, finding = _windowed(line, finding)
    shown = line.translate(_CONTROLS).replace("\t", " " * TAB_WIDTH)
    offset, width = caret_span(line, finding)
    carets = paint("^" * width + " " + finding.code, "red", "bold", color=color)
    return [
        f"{pad} {bar}",
        f"{paint(number, 'blue', 'bold', color=color)} {bar} {shown}".rstrip(),
        f"{pad} {bar} {' ' * offset}{carets}",
        f"{pad} {bar}",
    ]


MAX_SNIPPET = 200  # characters of a source line shown; a minified or generated line may be megabytes long


def _windowed(line: str, finding: Finding) -> tuple[str, Finding]:
    """At most MAX_SNIPPET characters of `line` around the finding's column (cut ends marked with an
    ellipsis), and the finding with its columns moved to match."""
    if len(line) <= MAX_SNIPPET:
        return line, finding
    from dataclasses import replace

    start = max(finding.column - 1, 0)
    lo = min(max(start - MAX_SNIPPET // 4, 0), len(line) - MAX_SNIPPET)
    hi = lo + MAX_SNIPPET
    head, tail = ("\u2026" if lo > 0 else ""), ("\u2026" if hi < len(line) else "")
    shift = lo - len(head)
    end_column = finding.end_column - shift if finding.end_row == finding.row else hi - shift + 1
    moved = replace(finding, column=max(finding.column - shift, 1), end_column=min(end_column, hi - shift + 1), end_row=finding.row)
    return head + line[lo:hi] + tail, moved


def help_line(fix: Fix, finding: Finding, *, color: bool = False) -> str | None:
    if not fix.message:
        return None
    pad = " " * len(str(finding.row))
    return f"{pad} = {paint('help', 'bold', color=color)}: {fix.message}"


def finding_block(finding: Finding, sources: SourceLines, root: Path, *, unsafe_fixes: bool = False,
                  color: bool = False) -> list[str]:
    """One finding in the text format: header, snippet (when the file is readable) and the fix's help."""
    lines = [header_line(finding, root, mark_fixable=True, unsafe_fixes=unsafe_fixes, color=color)]
    source = sources.line(finding.filename, finding.row)
    if source is not None:
        lines += snippet_lines(finding, source, color=color)
    if finding.fix is not None:
        help_ = help_line(finding.fix, finding, color=color)
        if help_:
            lines.append(help_)
    return lines


def text_lines(findings: Sequence[Finding], sources: SourceLines, root: Path, *, fixed: int = 0,
               show_fixes_hint: bool = True, unsafe_fixes: bool = False, color: bool = False) -> list[str]:
    lines: list[str] = []
    for finding in findings:
        lines += finding_block(finding, sources, root, unsafe_fixes=unsafe_fixes, color=color)
        lines.append("")
    return lines + summary_lines(findings, fixed=fixed, show_fixes_hint=show_fixes_hint, unsafe_fixes=unsafe_fixes)


def concise_lines(findings: Sequence[Finding], root: Path, *, fixed: int = 0, show_fixes_hint: bool = True,
                  unsafe_fixes: bool = False, color: bool = False) -> list[str]:
    lines = [header_line(f, root, mark_fixable=False, color=color) for f in findings]
    return lines + summary_lines(findings, fixed=fixed, show_fixes_hint=show_fixes_hint, unsafe_fixes=unsafe_fixes)


# --------------------------------------------------------------------------------------------------------
# json


def json_text(findings: Sequence[Finding]) -> str:
    """The JSON contract: a list of `Finding.to_json()` objects, indented by 2 (ASCII-safe)."""
    return json.dumps([f.to_json() for f in findings], indent=2)


# --------------------------------------------------------------------------------------------------------
# sarif


def rule_index() -> dict[str, int]:
    """Index of each rule code in the SARIF driver's `rules` array."""
    return {code: i for i, code in enumerate(RULE_META)}


def reporting_descriptor(meta: RuleMeta) -> dict[str, Any]:
    return {
        "id": meta.code,
        "name": meta.name,
        "shortDescription": {"text": meta.summary},
        "helpUri": meta.help_uri,
        "defaultConfiguration": {"level": meta.severity},
    }


def sarif_driver() -> dict[str, Any]:
    return {
        "name": "cachelint",
        "version": __version__,
        "semanticVersion": __version__,
        "informationUri": INFORMATION_URI,
        "rules": [reporting_descriptor(meta) for meta in RULE_META.values()],
    }


def root_uri(root: Path) -> str:
    """`file://` URI of `root`, ending with '/' as SARIF requires of a base URI."""
    uri = Path(os.path.normpath(root.absolute())).as_uri()
    return uri if uri.endswith("/") else uri + "/"


def artifact_location(filename: str, root: Path) -> dict[str, str]:
    """Relative URI against %SRCROOT% when under `root`, else an absolute file URI."""
    rel = relative_path(filename, root)
    if rel is None:
        return {"uri": _absolute(filename).as_uri()}
    return {"uri": quote(rel.as_posix(), safe="/"), "uriBaseId": SRCROOT}


def region(row: int, column: int, end_row: int, end_column: int) -> dict[str, int]:
    return {"startLine": row, "startColumn": column, "endLine": end_row, "endColumn": end_column}


def fingerprint(code: str, path: str, line_text: str, occurrence: int) -> str:
    """Stable across line shifts: the rule, the file, the stripped line text, and which such match it is."""
    key = "\0".join((code, path, line_text.strip(), str(occurrence)))
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def fingerprints(findings: Sequence[Finding], sources: SourceLines, root: Path) -> list[str]:
    """One fingerprint per finding; equal (code, file, line text) triples are told apart by order."""
    seen: dict[tuple[str, str, str], int] = {}
    result = []
    for f in findings:
        path = posix_path(f.filename, root)
        text = (sources.line(f.filename, f.row) or "").strip()
        key = (f.code, path, text)
        occurrence = seen.get(key, 0)
        seen[key] = occurrence + 1
        result.append(fingerprint(f.code, path, text, occurrence))
    return result


def sarif_fix(fix: Fix, filename: str, root: Path) -> dict[str, Any]:
    replacements = []
    for edit in fix.edits:
        replacement: dict[str, Any] = {"deletedRegion": region(edit.row, edit.column, edit.end_row, edit.end_column)}
        if edit.content:
            replacement["insertedContent"] = {"text": edit.content}
        replacements.append(replacement)
    result: dict[str, Any] = {
        "artifactChanges": [{"artifactLocation": artifact_location(filename, root), "replacements": replacements}],
        "properties": {"applicability": fix.applicability},
    }
    if fix.message:
        result["description"] = {"text": fix.message}
    return result


def sarif_result(finding: Finding, root: Path, fingerprint_: str, indices: dict[str, int]) -> dict[str, Any]:
    result: dict[str, Any] = {"ruleId": finding.code}
    if finding.code in indices:
        result["ruleIndex"] = indices[finding.code]
    result.update({
        "level": finding.severity,
        "message": {"text": finding.message},
        "locations": [{
            "physicalLocation": {
                "artifactLocation": artifact_location(finding.filename, root),
                "region": region(finding.row, finding.column, finding.end_row, finding.end_column),
            },
        }],
        "partialFingerprints": {FINGERPRINT_KEY: fingerprint_},
        "properties": {"confidence": finding.confidence},
    })
    if finding.fix is not None and finding.fix.edits:
        result["fixes"] = [sarif_fix(finding.fix, finding.filename, root)]
    return result


def sarif_log(findings: Sequence[Finding], sources: SourceLines, root: Path, *, files_checked: int = 0) -> dict[str, Any]:
    """A SARIF 2.1.0 log with one run."""
    indices = rule_index()
    prints = fingerprints(findings, sources, root)
    run = {
        "tool": {"driver": sarif_driver()},
        "originalUriBaseIds": {SRCROOT: {"uri": root_uri(root)}},
        "columnKind": "unicodeCodePoints",
        "results": [sarif_result(f, root, p, indices) for f, p in zip(findings, prints)],
        "properties": {"filesChecked": files_checked},
    }
    return {"$schema": SARIF_SCHEMA_URI, "version": SARIF_VERSION, "runs": [run]}


# --------------------------------------------------------------------------------------------------------
# github


def escape_github_data(text: str) -> str:
    """Escape a workflow command's message, as @actions/core's escapeData does."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_github_property(text: str) -> str:
    """Escape a workflow command's property value, as @actions/core's escapeProperty does."""
    return escape_github_data(text).replace(":", "%3A").replace(",", "%2C")


def github_line(finding: Finding, root: Path) -> str:
    """`::error file=..,line=..,col=..,endLine=..,endColumn=..,title=cachelint (CODE)::CODE message`."""
    command = "error" if finding.severity == "error" else "warning"
    props: list[tuple[str, str | int]] = [
        ("file", posix_path(finding.filename, root)),
        ("line", finding.row),
        ("col", finding.column),
        ("endLine", finding.end_row),
        ("endColumn", finding.end_column),
        ("title", f"cachelint ({finding.code})"),
    ]
    joined = ",".join(f"{k}={escape_github_property(str(v))}" for k, v in props)
    return f"::{command} {joined}::{escape_github_data(f'{finding.code} {finding.message}')}"



# --------------------------------------------------------------------------------------------------------
# --statistics


def statistics_rows(findings: Sequence[Finding]) -> list[tuple[int, str, str, bool]]:
    """(count, code, rule name, all fixable) per rule, most frequent first (as `ruff check --statistics`)."""
    counts: dict[str, list[Finding]] = {}
    for finding in findings:
        counts.setdefault(finding.code, []).append(finding)
    rows = [(len(group), code, group[0].name, all(is_fixable(f) for f in group)) for code, group in counts.items()]
    return sorted(rows, key=lambda r: (-r[0], r[1]))


def statistics_text(findings: Sequence[Finding], fmt: str = "text") -> str:
    rows = statistics_rows(findings)
    if fmt == "json":
        return json.dumps([{"code": code, "name": name, "count": count, "fixable": fix} for count, code, name, fix in rows], indent=2) + "\n"
    if not rows:
        return ""
    width = max(len(str(r[0])) for r in rows)
    return "".join(f"{count:>{width}}\t{code}\t{'[*] ' if fix else ''}{name}\n" for count, code, name, fix in rows)
