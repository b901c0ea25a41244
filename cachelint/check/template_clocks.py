"""A clock read inside a prompt template's own Jinja text (CL101).

Home Assistant's conversation agents, and apps that render prompts with Jinja, write the clock into the template
itself: `Current Time: {{ now() }}` in a `DEFAULT_SYSTEM_PROMPT` constant, rendered for every user turn. The
rendered system prompt then differs on every request (Home Assistant's `now()` prints microseconds), and the
device list and the conversation after it are prefilled again each time. Nothing in the Python code reads a clock,
so the value flow never sees it; the template's text does.

Recognized in a module-level string constant named for a prompt (`*PROMPT*`, `*TEMPLATE*`, `*INSTRUCTION*`): a
Jinja expression that calls `now()` or `utcnow()` (also `dt_util.now()`, `datetime.now()`), unless it keeps only the
date (`now().date()`, `now().strftime('%Y-%m-%d')`, `now().year`, a `timestamp_custom` format with no time of day).
Reported at the expression, `likely`: only the constant's name says it becomes a prompt.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from cachelint.check.module import ModuleContext

TEMPLATE_CONSTANT = re.compile(r"^(?=[A-Z])[A-Z0-9_]*(?:PROMPT|TEMPLATE|INSTRUCTIONS?)[A-Z0-9_]*$")
# `{{ now() }}`, `{{now().strftime("%H:%M")}}`, `{{ utcnow() | as_timestamp }}`: the expression up to its close
JINJA_CLOCK = re.compile(r"\{\{-?\s*(?:(?:dt_util|datetime|dt)\.)?(?:utc)?now\(\)(?P<rest>[^{}]*)\}\}")
DATE_ONLY = re.compile(r"^\s*\.(?:date\(\)|year|month|day|weekday\(\)|isoweekday\(\))|strftime\(\s*[\"'](?P<f1>[^\"']*)[\"']"
                       r"|timestamp_custom\(\s*[\"'](?P<f2>[^\"']*)[\"']")
TIME_OF_DAY = re.compile(r"%[HIMSpXcTfrRk]")


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
        found = _prompt_constant(statement)
        if found is None:
            continue
        name, node = found
        code = ctx.code(node)
        for match in JINJA_CLOCK.finditer(code):
            if not _date_only(match.group("rest")):
                yield TemplateClock(node, name, match.group(0), _position(ctx, node, code, match.start()))
                break


def _date_only(rest: str) -> bool:
    """What follows `now()` keeps only the date: `.date()`, `.year`, or a format with no time of day."""
    found = DATE_ONLY.search(rest)
    if found is None:
        return False
    fmt = found.group("f1") or found.group("f2")
    return fmt is None or TIME_OF_DAY.search(fmt) is None


def _prompt_constant(statement: cst.CSTNode) -> tuple[str, cst.CSTNode] | None:
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return None
    small = statement.body[0]
    if isinstance(small, cst.Assign) and len(small.targets) == 1:
        target, value = small.targets[0].target, small.value
    elif isinstance(small, cst.AnnAssign) and small.value is not None:
        target, value = small.target, small.value
    else:
        return None
    if not isinstance(target, cst.Name) or not TEMPLATE_CONSTANT.match(target.value):
        return None
    if not isinstance(value, (cst.SimpleString, cst.ConcatenatedString)):
        return None
    return target.value, value


def _position(ctx: ModuleContext, node: cst.CSTNode, code: str, index: int) -> tuple[int, int]:
    start = ctx.span(node)
    line_start = code.rfind("\n", 0, index)
    if line_start < 0:
        return start.row, start.column + index
    return start.row + code.count("\n", 0, index), index - line_start
