"""How long a request's reusable prefix can be, where the code bounds it: whether it can be cached at all.

Providers cache nothing below a minimum prefix length (Anthropic: per model; OpenAI: 1,024 tokens; the
numbers live in `cachelint.simulate.models`). A value that changes in a prefix that can never reach that
length breaks nothing. This module gives an upper bound of the text before the newest turn (tools, system
prompt, instructions, earlier messages) when every part of it is bounded in the code: string constants,
f-strings and `.format` of bounded parts, volatile values (a time, a uuid: a few dozen characters), and
literal lists of messages. Anything of unknown length (a parameter, a file, a history that grows) makes the
bound unknown, and the prefix is taken as cacheable.
"""

from __future__ import annotations

import libcst as cst

from cachelint.check.breakpoints import container_text, literal
from cachelint.check.callsites import CallSite, is_system_message
from cachelint.check.module import ModuleContext
from cachelint.check.values import VOLATILE_CALLS, string_value

SAMPLE = "2026-11-29T10:31:07.123456+00:00 3f2b9c1e-6a1d-4a57-9d0e-8c1f2a7b4e90"  # stands for one volatile value
MAX_DEPTH = 8
VOLATILE_METHODS = ("strftime", "isoformat", "date", "time", "timestamp", "ctime", "hex", "__str__")


def minimum_tokens(site: CallSite, model: str | None) -> int:
    from cachelint.simulate.models import OPENAI_MINIMUM_TOKENS, anthropic_minimum

    return anthropic_minimum(model) if site.api == "anthropic" else OPENAI_MINIMUM_TOKENS


def prefix_text_bound(ctx: ModuleContext, site: CallSite) -> str | None:
    """A text at least as long as everything the request can reuse, or None when that is unbounded."""
    parts: list[str] = []
    for arg in ("tools", "system", "instructions"):
        expr = site.arg(arg)
        if expr is not None:
            text = _bound(ctx, expr, 0)
            if text is None:
                return None
            parts.append(text)
    for arg in ("messages", "input"):
        expr = site.arg(arg)
        if expr is None:
            continue
        if arg == "input" and string_value(expr) is not None:
            continue  # a plain string input is the newest turn
        earlier = _earlier_turns(ctx, expr)
        if earlier is None:
            return None
        for turn in earlier:
            text = _bound(ctx, turn, 0)
            if text is None:
                return None
            parts.append(text)
    return "\n".join(parts)


def _earlier_turns(ctx: ModuleContext, expr: cst.BaseExpression) -> list[cst.BaseExpression] | None:
    """The messages before the newest one, when the list is a literal nobody appends to."""
    if isinstance(expr, cst.Name):
        values = [v for _, v in ctx.assigned_values(expr)]
        if len(values) != 1 or values[0] is None:
            return None
        if any(c.func.attr.value in ("append", "extend", "insert", "__iadd__") for c in ctx.calls_on.get(expr.value, [])):  # type: ignore[attr-defined]
            return None
        expr = values[0]
    if not isinstance(expr, (cst.List, cst.Tuple)) or not expr.elements:
        return None
    if any(isinstance(e, cst.StarredElement) for e in expr.elements):
        return None
    last = expr.elements[-1].value
    return [e.value for e in expr.elements[:-1]] + ([last] if is_system_message(last) else [])


def _bound(ctx: ModuleContext, expr: cst.BaseExpression | None, depth: int) -> str | None:
    if expr is None or depth > MAX_DEPTH:
        return None
    d = depth + 1
    value = string_value(expr)
    if value is not None:
        return value
    if isinstance(expr, (cst.Integer, cst.Float)):
        return expr.value
    if isinstance(expr, cst.Name):
        if expr.value in ("True", "False", "None"):
            return expr.value
        values = [v for _, v in ctx.assigned_values(expr)]
        if not values or any(v is None for v in values):
            return None  # a parameter, a loop variable, an import: unknown length
        texts = [_bound(ctx, v, d) for v in values]
        return None if any(t is None for t in texts) else max(texts, key=len)  # type: ignore[arg-type]
    if isinstance(expr, cst.FormattedString):
        out = []
        for part in expr.parts:
            if isinstance(part, cst.FormattedStringText):
                out.append(part.value)
            else:
                text = _bound(ctx, part.expression, d)  # type: ignore[union-attr]
                if text is None:
                    return None
                out.append(text)
        return "".join(out)
    if isinstance(expr, cst.ConcatenatedString) or (isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, (cst.Add, cst.Modulo))):
        left = _bound(ctx, expr.left, d)
        right = _bound(ctx, expr.right, d)
        return None if left is None or right is None else left + right
    if isinstance(expr, (cst.List, cst.Tuple, cst.Dict)):
        return container_text(expr, lambda e: _bound(ctx, literal(ctx, e) if isinstance(expr, cst.Dict) else e, d))
    if isinstance(expr, cst.Call):
        return _call_bound(ctx, expr, d)
    if isinstance(expr, cst.Await):
        return _bound(ctx, expr.expression, d)
    return None


def _call_bound(ctx: ModuleContext, call: cst.Call, d: int) -> str | None:
    if ctx.qualified_name_in(call.func, set(VOLATILE_CALLS)):
        return SAMPLE
    func = call.func
    if isinstance(func, cst.Attribute):
        attr = func.attr.value
        if attr in VOLATILE_METHODS and isinstance(func.value, cst.Call) and ctx.qualified_name_in(func.value.func, set(VOLATILE_CALLS)):
            return SAMPLE
        if attr == "format":
            template = _bound(ctx, func.value, d)
            texts = [_bound(ctx, a.value, d) for a in call.args]
            return None if template is None or any(t is None for t in texts) else template + "".join(texts)  # type: ignore[operator]
        if attr == "join" and call.args:
            sep = _bound(ctx, func.value, d)
            items = _bound(ctx, call.args[0].value, d)
            return None if sep is None or items is None else items
        if attr in ("strip", "lstrip", "rstrip", "upper", "lower", "title", "capitalize"):
            return _bound(ctx, func.value, d)
    if ctx.qualified_name_in(call.func, {"builtins.str", "textwrap.dedent", "inspect.cleandoc"}) and call.args:
        return _bound(ctx, call.args[0].value, d)
    return None
