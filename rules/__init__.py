"""The rule catalog (installed as `cachelint.rules`): codes, names and one-line summaries shared by
`check`, `diff` and the proxy.

Codes are fixed: the static analyzer reports them, `cachelint diff` and the proxy name the mistake behind a
cache break with them. The linter's rules (one module a rule, with docs, examples and fixes) live beside
this file.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

DOCS_URL = "https://github.com/cachelint/cachelint/blob/main/docs/rules.md"


@dataclass(frozen=True, slots=True)
class RuleMeta:
    code: str
    name: str
    summary: str
    severity: Literal["error", "warning"]

    @property
    def help_uri(self) -> str:
        return f"{DOCS_URL}#{self.code.lower()}-{self.name}"


_CATALOG = [
    RuleMeta("CL101", "volatile-value-in-prefix", "A time, date, uuid, random, pid or counter value reaches the cached prefix.", "error"),
    RuleMeta("CL102", "unsorted-json-in-prefix", "JSON of a runtime-built dict reaches the prefix without sort_keys=True.", "error"),
    RuleMeta("CL103", "unordered-iteration-in-prefix", "Prefix text is built by iterating an unordered source (set, directory listing, glob) without sorted().", "error"),
    RuleMeta("CL104", "per-request-data-in-system-prompt", "Per-user or per-request data sits in the system prompt ahead of the static instructions.", "warning"),
    RuleMeta("CL201", "unordered-tools", "The tools list comes from an unordered source without sorting.", "error"),
    RuleMeta("CL202", "per-request-tool-list", "The tools list is filtered or chosen per request inside a conversation.", "warning"),
    RuleMeta("CL203", "tools-differ-between-requests", "Two requests of one conversation send different tools (a follow-up sent without them).", "warning"),
    RuleMeta("CL301", "rewritten-history", "Earlier messages are edited, deleted, re-ordered or truncated from the front in a multi-turn loop.", "error"),
    RuleMeta("CL401", "param-change-mid-conversation", "model, tool_choice, thinking or beta headers change between turns of one conversation.", "warning"),
    RuleMeta("CL402", "params-differ-between-requests", "Two requests of one conversation go to different models or with another tool_choice or thinking.", "warning"),
    RuleMeta("CL501", "missing-cache-control", "A long static Anthropic prefix is sent with no cache_control anywhere, so nothing is cached.", "warning"),
    RuleMeta("CL502", "cache-control-on-volatile-block", "A cache breakpoint sits on a block whose content changes every request.", "error"),
    RuleMeta("CL503", "too-many-cache-breakpoints", "More than 4 cache_control blocks in one request; the API rejects it.", "error"),
    RuleMeta("CL504", "cache-breakpoint-below-minimum", "The prefix at a breakpoint is shorter than the model's minimum cacheable length.", "warning"),
    RuleMeta("CL505", "ttl-order", "A 1h cache breakpoint comes after a 5m one; the API rejects it.", "error"),
    RuleMeta("CL999", "unanalyzable-file", "A file could not be analyzed: it does not parse, is not UTF-8, or is too large.", "error"),
]

RULE_META: dict[str, RuleMeta] = {m.code: m for m in _CATALOG}
NAMES: dict[str, str] = {m.code: m.name for m in _CATALOG}
BY_NAME: dict[str, str] = {m.name: m.code for m in _CATALOG}

# CL999 has no rule class (the engine reports it before any rule runs); its page in `cachelint rule`.
CL999_DOC = """## CL999 unanalyzable-file

**Default severity:** error. **Fix:** none (fix the file, or exclude it).

### What it does
Reports a file that `cachelint check` could not analyze, at the place that stopped it: a syntax error (at the
line and column CPython's compiler names), bytes that are not UTF-8, NUL bytes, a lone surrogate, brackets
nested deeper than 200 levels, or a file over 5 MiB (skipped by its size, never read). A bug in cachelint
costs that one file too: the message names the exception and asks for a report.

### Why is this bad?
Nothing in that file was checked: a volatile value or a rewritten history there goes unseen. A syntax error
usually means the file is not Python 3 (a template, a Python 2 script, a file with merge markers).

### Example
```python
def build_prompt(:
    return SYSTEM
```

### Use instead
```python
def build_prompt():
    return SYSTEM
```
Or exclude files that are not Python 3 with `exclude` / `extend-exclude` in `[tool.cachelint]`.
"""
