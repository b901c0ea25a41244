"""A clock read inside a prompt template's own Jinja text (CL101).

Home Assistant's conversation agents, and apps that render prompts with Jinja, write the clock into the template
itself: `Current Time: {{ now() }}` in a `DEFAULT_SYSTEM_PROMPT` constant, rendered for every user turn. The
rendered system prompt then differs on every request (Home Assistant's `now()` prints microseconds), and the
device list and the conversation after it are prefilled again each time. Nothing in the Python code reads a clock,
so the value flow never sees it; the template's text does.

Recognized in a module-level string constant named for a prompt or a system message (`*PROMPT*`, `*INSTRUCTION*`,
`*SYSTEM*`, also dedented; not a `USER_...` template, which is the newest message): a Jinja expression that calls
`now()` or `utcnow()` anywhere in it (also `dt_util.now()`, `as_timestamp(now())`), unless it keeps only the date
(`now().date()`, `now().strftime('%Y-%m-%d')`, `now().year`, a `timestamp_custom` format with no time of day).
Reported at the expression, `likely`: only the constant's name says it becomes a prompt.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from cachelint.check.module import ModuleContext
from cachelint.check.static_tail import string_constant

# a constant named for a prompt or a system message (a `USER_PROMPT_TEMPLATE` is the newest message, after the history)
PROMPT_CONSTANT = re.compile(r"^(?=[A-Z])(?!(?:USER|HUMAN|QUERY|QUESTION)_)[A-Z0-9_]*(?:PROMPT|INSTRUCTIONS?|SYSTEM)[A-Z0-9_]*$")
# a Jinja expression that reads the clock anywhere in it: `{{ now() }}`, `{{ as_timestamp(now()) | timestamp_custom('%H:%M') }}`
JINJA_CLOCK = re.compile(r"\{\{-?(?P<expression>[^{}]*?\b(?:(?:dt_util|datetime|dt)\.)?(?:utc)?now\(\)[^{}]*?)-?\}\}")
DATE_ONLY = re.compile(r"now\(\)\s*\.(?:date\(\)|year|month|day|weekday\(\)|isoweekday\(\))|strftime\(\s*[\"'](?P<f1>[^\"']*)[\"']"
                       r"|timestamp_custom\(\s*[\"'](?P<f2>[^\"']*)[\"']")
TIME_OF_DAY = re.compile(r"%-?[HIMSpXcTfrRklsPZ]")


@dataclass(frozen=True, slots=True)
class TemplateClock:
    node: cst.CSTNode  # the constant's string
    name: str  # the constant
    expression: str  # `{{now()}}`
    position: tuple[int, int]  # row and column of the expression (1-based)


def template_clocks(ctx: ModuleContext) -> Iterator[TemplateClock]:
    if ctx.is_test:
        return
    for statement in ctx.module.body:
        found = string_constant(statement, PROMPT_CONSTANT)
        if found is None:
            continue
        name, node, _ = found
        code = ctx.code(node)
        for match in JINJA_CLOCK.finditer(code):
            if not _date_only(match.group("expression")):
                yield TemplateClock(node, name, match.group(0), position_in_string(ctx, node, code, match.start()))
                break


def _date_only(expression: str) -> bool:
    """The expression keeps only the date: `now().date()`, `now().year`, or a format with no time of day."""
    found = DATE_ONLY.search(expression)
    if found is None:
        return False
    fmt = found.group("f1") or found.group("f2")
    return fmt is None or TIME_OF_DAY.search(fmt) is None


def position_in_string(ctx: ModuleContext, node: cst.CSTNode, code: str, index: int) -> tuple[int, int]:
    """Row and column (1-based) of `index` in the string's code, counted from the string itself (its span leaves out
    the parentheses around it, which the code keeps)."""
    start = ctx.span(node)
    if getattr(node, "lpar", None):
        opening = len(ctx.code(node)) - len(ctx.code(node).lstrip("(\n\t "))
        code, index = code[opening:], index - opening
    line_start = code.rfind("\n", 0, index)
    if line_start < 0:
        return start.row, start.column + index
    return start.row + code.count("\n", 0, index), index - line_start
