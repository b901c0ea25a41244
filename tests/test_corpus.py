"""Accuracy of `cachelint check` on a corpus of realistic LLM application code.

Every file in tests/corpus/ marks the findings it should produce with a trailing comment on the reported
line: `# expect: CL101` (several codes comma-separated). Lines without such a comment must produce no
finding. Each file's test compares the (line, code) pairs found by `lint_source` (all codes) with the
expected ones; the assertion message lists misses and false alarms with their source lines and a per-rule
table. The per-rule table over the whole corpus is printed at the end of the module.
"""

from __future__ import annotations

import io
import re
import tokenize
from collections import Counter
from pathlib import Path

import pytest

from cachelint.check.engine import lint_source

CORPUS = Path(__file__).parent / "corpus"
HOLDOUT = Path(__file__).parent / "holdout"  # written later by a reviewer who saw only the rule docs
FILES = sorted(CORPUS.glob("*.py")) + sorted(HOLDOUT.glob("*.py"))
_EXPECT = re.compile(r"#\s*expect:\s*(?P<codes>CL\d{3}(?:\s*,\s*CL\d{3})*)\s*$")

# code -> Counter(tp=, miss=, false=), filled by the per-file tests, printed at the end of the module
_TOTALS: dict[str, Counter] = {}


def expected_findings(source: str) -> set[tuple[int, str]]:
    """(line, code) pairs from the `# expect:` comments (real comments only, not text inside strings)."""
    expected = set()
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            match = _EXPECT.search(tok.string)
            if match:
                expected |= {(tok.start[0], code.strip()) for code in match.group("codes").split(",")}
    return expected


def compare(path: Path) -> tuple[set, set, set, list]:
    source = path.read_text()
    findings = lint_source(source, path.name)
    found = {(f.row, f.code) for f in findings}
    expected = expected_findings(source)
    return found & expected, expected - found, found - expected, findings


def rule_table(rows: dict[str, Counter]) -> str:
    lines = [f"{'rule':<7}{'tp':>5}{'miss':>6}{'false':>7}"]
    for code in sorted(rows):
        c = rows[code]
        lines.append(f"{code:<7}{c['tp']:>5}{c['miss']:>6}{c['false']:>7}")
    total = sum(rows.values(), Counter())
    lines.append(f"{'all':<7}{total['tp']:>5}{total['miss']:>6}{total['false']:>7}")
    return "\n".join(lines)


def _count(rows: dict[str, Counter], hits: set, misses: set, false: set) -> None:
    for kind, pairs in (("tp", hits), ("miss", misses), ("false", false)):
        for _, code in pairs:
            rows.setdefault(code, Counter())[kind] += 1


def test_corpus_is_present_and_marked():
    assert len(FILES) >= 30
    for path in FILES:
        source = path.read_text()
        assert 30 <= len(source.splitlines()) <= 120, path.name
        assert "noqa" not in source.lower(), f"{path.name}: expect comments must not look like suppressions"
        compile(source, str(path), "exec")  # real, parseable code


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_corpus_file(path: Path):
    hits, misses, false, findings = compare(path)
    rows: dict[str, Counter] = {}
    _count(rows, hits, misses, false)
    _count(_TOTALS, hits, misses, false)
    if not misses and not false:
        return
    lines = path.read_text().splitlines()
    messages = {(f.row, f.code): f.message for f in findings}
    report = [f"{path.name}: {len(misses)} missed, {len(false)} false alarm(s)"]
    for row, code in sorted(misses):
        report.append(f"  MISS  {row}: {code}  {lines[row - 1].strip()}")
    for row, code in sorted(false):
        report.append(f"  FALSE {row}: {code}  {lines[row - 1].strip()}\n        {messages[(row, code)]}")
    report.append(rule_table(rows))
    pytest.fail("\n".join(report), pytrace=False)


@pytest.fixture(scope="module", autouse=True)
def _print_totals(request):
    yield
    if not _TOTALS:
        return
    text = "cachelint corpus, per rule (tp = found as expected, miss, false = false alarm)\n" + rule_table(_TOTALS)
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    if capture is not None:
        with capture.global_and_fixture_disabled():
            print("\n" + text)
    else:
        print(text)
