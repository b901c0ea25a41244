"""Suppressions: `# noqa: CL101` on the line, `# cachelint: ignore[CL101]` on the line above, file-level
`# cachelint: noqa`."""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass, field

_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*))?", re.I)
_IGNORE = re.compile(r"#\s*cachelint:\s*ignore\[(?P<codes>[^\]]*)\]", re.I)
_FILE = re.compile(r"#\s*cachelint:\s*noqa\b", re.I)
ALL = frozenset({"*"})


@dataclass(slots=True)
class Suppressions:
    file: bool = False
    lines: dict[int, frozenset[str]] = field(default_factory=dict)  # row -> codes (or ALL)

    def covers(self, code: str, rows: tuple[int, ...]) -> bool:
        if self.file:
            return True
        for row in rows:
            codes = self.lines.get(row)
            if codes is not None and (codes is ALL or code in codes):
                return True
        return False


def _codes(text: str | None) -> frozenset[str]:
    if not text:
        return ALL
    return frozenset(c.upper() for c in re.split(r"[\s,]+", text.strip()) if c)


def parse(source: str) -> Suppressions:
    """Read suppression comments from the real comments of a file (not from strings)."""
    result = Suppressions()
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return result
    for tok in tokens:
        if tok.type != tokenize.COMMENT:
            continue
        row, comment = tok.start[0], tok.string
        if _FILE.search(comment):
            result.file = True
            continue
        ignore = _IGNORE.search(comment)
        if ignore:
            _add(result, row + 1, _codes(ignore.group("codes")))
            continue
        noqa = _NOQA.search(comment)
        if noqa:
            _add(result, row, _codes(noqa.group("codes")))
    return result


def _add(result: Suppressions, row: int, codes: frozenset[str]) -> None:
    existing = result.lines.get(row)
    if existing is ALL or codes is ALL:
        result.lines[row] = ALL
    else:
        result.lines[row] = (existing or frozenset()) | codes
