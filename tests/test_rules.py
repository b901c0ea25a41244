"""Every rule's own VALID and INVALID examples, run as tests (Fixit style), plus the rule docs."""

from __future__ import annotations

import textwrap

import pytest

from cachelint.check.engine import lint_source
from cachelint.check.fixes import apply_edits
from cachelint.check.registry import all_rules
from cachelint.rules import RULE_META

RULES = all_rules()
VALID = [pytest.param(rule, i, id=f"{rule.code}-valid-{i}") for rule in RULES for i in range(len(rule.VALID))]
INVALID = [pytest.param(rule, i, id=f"{rule.code}-invalid-{i}") for rule in RULES for i in range(len(rule.INVALID))]


def test_every_catalog_code_has_a_rule_with_examples():
    assert {r.code for r in RULES} == set(RULE_META) - {"CL999"}
    for rule in RULES:
        assert rule.VALID and rule.INVALID, rule.code
        for field in ("what", "why", "example", "instead", "fix_safety"):
            assert getattr(rule, field).strip(), (rule.code, field)


@pytest.mark.parametrize("rule, index", VALID)
def test_valid_examples_are_not_flagged(rule, index):
    source = textwrap.dedent(rule.VALID[index]).lstrip("\n")
    findings = lint_source(source, "example.py", frozenset({rule.code}))
    assert [f for f in findings if f.code == rule.code] == []


@pytest.mark.parametrize("rule, index", INVALID)
def test_invalid_examples_are_flagged(rule, index):
    case = rule.INVALID[index]
    source = case.code
    findings = [f for f in lint_source(source, "example.py", frozenset({rule.code})) if f.code == rule.code]
    assert findings, f"{rule.code} missed:\n{source}"
    if case.line is not None:
        assert case.line in [f.row for f in findings], [(f.row, f.message) for f in findings]
    if case.message is not None:
        assert any(case.message in f.message for f in findings), [f.message for f in findings]
    if case.fixed is not None:
        edits = [e for f in findings if f.fix for e in f.fix.edits]
        fixed, applied = apply_edits(source, edits)
        assert applied and fixed == case.fixed
        assert [f for f in lint_source(fixed, "example.py", frozenset({rule.code})) if f.code == rule.code] == []
