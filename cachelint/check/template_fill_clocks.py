"""A clock filled into a long prompt template ahead of its static text (CL101).

An extraction or summarization prompt is often one long template sent as a single message, filled on every call:
`EXTRACTION_PROMPT.format(current_datetime=datetime.now().strftime("%H:%M"), message=text)`, with the time near
the top and a thousand tokens of rules below it. Each call asks its own question, but every call shares the rules,
and providers cache that shared prefix on their own (OpenAI from 1,024 tokens): the clock ahead of the rules makes
the prefix differ on every call, so the rules are prefilled again each time. The value flow does not judge this
text, since a request's newest message is not reused within a conversation; the template's shape does.

Recognized where a template constant named for a prompt (`*PROMPT*`, `*INSTRUCTION*`, `*SYSTEM*`: a module
constant, one imported from the tree, or a class attribute read through `self`) of at least the smallest minimum
cacheable length is filled with `.format(...)` in a function of
a module that calls a model, and a keyword argument is a clock of the time of day (or a random value or an id):
the static text after its placeholder, up to the first placeholder filled with per-call data (settings, constants
and attributes of the object are static; none may come before the value), must reach OpenAI's minimum (1,024
tokens, counted with o200k_base; by characters where the encoding cannot load), or, where the text before the value
is too short to be cached on its own, the two together must: the clock is what keeps them from being cached. A date
is not reported (the prefix changes once a day). Reported at the value, `likely`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from cachelint.check.module import ModuleContext, descendants, last_name
from cachelint.check.static_prefix import class_attribute
from cachelint.check.static_tail import FOR_A_MODEL, MIN_TAIL_CHARS, PLACEHOLDER, _constant, _fixed
from cachelint.check.values import VOLATILE_CALLS, VOLATILE_NAMES, assigned_once, strftime_granularity, string_value, volatile_method
from cachelint.errors import CachelintError
from cachelint.simulate.models import OPENAI_MINIMUM_TOKENS

STATIC_OWNER = re.compile(r"^(?:self|cls|settings|config|cfg|conf|options|opts)$")
PROMPT_NAME = re.compile(r"prompt|instruction|system", re.I)  # a template named for a prompt


@dataclass(frozen=True, slots=True)
class FilledClock:
    node: cst.CSTNode  # the clock's call (`datetime.now()`), in the argument or where the name passed was bound
    placeholder: str
    label: str  # how the code names the value (`datetime.now().strftime()`)
    granularity: str
    after: int  # static tokens after the value, up to the call's own data
    shared: int  # static tokens every call would share without the value (before and after it) (estimated from characters where the encoding cannot load)


def filled_clocks(ctx: ModuleContext) -> Iterator[FilledClock]:
    if ctx.is_test or ".format(" not in ctx.source or not FOR_A_MODEL.search(ctx.source):
        return
    for call in ctx.nodes(cst.Call):
        func = call.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "format") or ctx.enclosing_function(call) is None:
            continue
        if not PROMPT_NAME.search(last_name(func.value) or ""):
            continue  # a report's HTML, an email: only a template named for a prompt is sent to a model
        filled = {arg.keyword.value: arg.value for arg in call.args if arg.keyword is not None}
        clocks = {name: clock for name, value in filled.items()
                  if (clock := _clock(ctx, value)) is not None and clock[2] not in ("day", "month")}
        if not clocks:
            continue  # asked first: the template's text may live in another module
        text = _template_text(ctx, call, func.value)
        if text is None or len(text) < MIN_TAIL_CHARS:
            continue
        for name, clock in clocks.items():
            around = _static_around(ctx, text, name, filled)
            if around is None:
                continue
            before, after = _tokens(around[0]), _tokens(around[1])
            # the clock costs what it keeps from being cached: the text after it, where the text before it is
            # cached anyway; the whole, where the text before it is too short to be cached on its own
            if after >= OPENAI_MINIMUM_TOKENS or (before < OPENAI_MINIMUM_TOKENS <= before + after):
                yield FilledClock(clock[0], name, clock[1], clock[2], after, before + after)


def _template_text(ctx: ModuleContext, call: cst.Call, template: cst.BaseExpression) -> str | None:
    if isinstance(template, cst.Attribute) and isinstance(template.value, cst.Name) and template.value.value in ("self", "cls"):
        cls = ctx.enclosing(call, (cst.ClassDef,))
        found = class_attribute(ctx, cls, template.attr.value) if isinstance(cls, cst.ClassDef) else None
        return _constant(*found) if found is not None else None
    if isinstance(template, (cst.Name, cst.Attribute)):
        return _constant(ctx, template)
    return None


def _clock(ctx: ModuleContext, value: cst.BaseExpression) -> tuple[cst.Call, str, str] | None:
    """(the call, its label, its granularity) of a clock, a random value or an id read for the value:
    `datetime.now().strftime("%H:%M")` (a minute), `uuid.uuid4()`, `(datetime.now() + timedelta(days=7)).strftime(
    "%Y-%m-%d")` (a day: the format decides, whatever is added to the clock first)."""
    value = assigned_once(ctx, value)
    for node in descendants(value):
        if not isinstance(node, cst.Call):
            continue
        if isinstance(node.func, cst.Attribute):
            refined = volatile_method(ctx, node, node.func.attr.value, node.func.value)
            if refined is not None:
                return refined[0], f"{ctx.code(refined[0].func)}().{node.func.attr.value}()", refined[1]  # type: ignore[attr-defined]
            if node.func.attr.value in ("strftime", "date") and (inner := _volatile_call(ctx, node.func.value)) is not None:
                fmt = string_value(node.args[0].value) if node.func.attr.value == "strftime" and node.args else None
                granularity = "day" if node.func.attr.value == "date" else strftime_granularity(fmt) if fmt is not None else "call"
                return inner, f"{ctx.code(inner.func)}()", granularity
        if (name := ctx.qualified_name_in(node.func, VOLATILE_NAMES)) is not None:
            fmt = string_value(node.args[0].value) if name == "time.strftime" and node.args else None
            return node, f"{ctx.code(node.func)}()", strftime_granularity(fmt) if fmt is not None else VOLATILE_CALLS[name]
    return None


def _volatile_call(ctx: ModuleContext, expr: cst.BaseExpression) -> cst.Call | None:
    return next((n for n in descendants(expr) if isinstance(n, cst.Call) and ctx.qualified_name_in(n.func, VOLATILE_NAMES) is not None), None)


def _tokens(text: str) -> int:
    if len(text) < MIN_TAIL_CHARS // 8:
        return len(text) // 4  # far below the minimum whatever the encoding
    try:
        from cachelint.tokens import tiktoken_counter

        return tiktoken_counter("o200k_base").count(text)  # built once per process
    except (CachelintError, ImportError, OSError, ValueError):
        return len(text) * OPENAI_MINIMUM_TOKENS // MIN_TAIL_CHARS


def _static_around(ctx: ModuleContext, text: str, name: str, filled: dict[str, cst.BaseExpression]) -> tuple[str, str] | None:
    """(the static text before `{name}`, the static text after it up to the first placeholder filled per call), each
    line's indentation dropped; None when per-call data comes before `{name}`: the prefix differs there already."""
    slots = list(PLACEHOLDER.finditer(text))
    at = next((m for m in slots if _slot_name(m.group(0)) == name), None)
    if at is None:
        return None
    end = len(text)
    for match in slots:
        if match is at:
            continue
        value = filled.get(_slot_name(match.group(0)))
        if value is None or not _static(ctx, value):
            if match.start() < at.start():
                return None
            end = match.start()
            break
    return _plain(text[:at.start()]), _plain(text[at.end():end])


def _plain(text: str) -> str:
    return "\n".join(line.strip() for line in PLACEHOLDER.sub("", text).splitlines())


def _slot_name(placeholder: str) -> str:
    return re.split(r"[.\[!:}]", placeholder[1:], maxsplit=1)[0]


def _static(ctx: ModuleContext, value: cst.BaseExpression) -> bool:
    """A literal, a constant, a setting or an attribute of the object: the same on every call."""
    if _fixed(ctx, value):
        return True
    root = value
    while isinstance(root, (cst.Attribute, cst.Subscript)):
        root = root.value
    return isinstance(root, cst.Name) and root is not value and bool(STATIC_OWNER.match(root.value))
