"""Anthropic cache breakpoints a call sends (cache_control markers in prefix order), where statically known."""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from cachelint.check.values import string_value

ORDER = ("tools", "system", "messages")


@dataclass(slots=True)
class Marker:
    node: cst.Dict  # the block that carries cache_control
    value: cst.BaseExpression  # the cache_control value
    arg: str
    ttl: str | None  # "5m", "1h", or None for the default


def literal(ctx, expr, depth: int = 0):
    """Follow a name to its single module- or function-level literal value."""
    if isinstance(expr, cst.Name) and depth < 3:
        values = [v for _, v in ctx.assigned_values(expr) if v is not None]
        if len(values) == 1:
            return literal(ctx, values[0], depth + 1)
    return expr


def markers(ctx, site) -> list[Marker]:
    found: list[Marker] = []
    for arg in ORDER:
        _collect(ctx, literal(ctx, site.arg(arg)), arg, found, 0)
    return found


def _collect(ctx, expr, arg: str, found: list[Marker], depth: int) -> None:
    if expr is None or depth > 6:
        return
    if isinstance(expr, (cst.List, cst.Tuple)):
        for element in expr.elements:
            _collect(ctx, literal(ctx, element.value), arg, found, depth + 1)
    elif isinstance(expr, cst.Dict):
        for element in expr.elements:
            if isinstance(element, cst.DictElement) and string_value(element.key) in ("cache_control", "cachePoint"):  # Bedrock Converse
                found.append(Marker(expr, element.value, arg, _ttl(literal(ctx, element.value))))
            elif isinstance(element, cst.DictElement) and string_value(element.key) == "content":
                _collect(ctx, literal(ctx, element.value), arg, found, depth + 1)
    elif isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Add):
        _collect(ctx, literal(ctx, expr.left), arg, found, depth + 1)
        _collect(ctx, literal(ctx, expr.right), arg, found, depth + 1)


def _ttl(value) -> str | None:
    if isinstance(value, cst.Dict):
        for element in value.elements:
            if isinstance(element, cst.DictElement) and string_value(element.key) == "ttl":
                return string_value(element.value)
    return None


def static_text(ctx, expr, depth: int = 0) -> str | None:
    """All text of a fully static structure (strings, lists, dicts of constants), or None if any part is dynamic."""
    expr = literal(ctx, expr)
    if depth > 16 or expr is None:  # tool schemas nest deep: tools > tool > input_schema > properties > field > items > ...
        return None
    value = string_value(expr)
    if value is not None:
        return value
    if isinstance(expr, (cst.Integer, cst.Float)) or (isinstance(expr, cst.Name) and expr.value in ("True", "False", "None")):
        return expr.value if isinstance(expr, cst.Name) else ctx.code(expr)
    if isinstance(expr, (cst.List, cst.Tuple, cst.Dict)):
        return container_text(expr, lambda e: static_text(ctx, e, depth + 1))
    return None


def container_text(expr: cst.List | cst.Tuple | cst.Dict, text_of) -> str | None:
    """The text of a list, tuple or dict literal as its parts joined (keys and values; a `cache_control` entry
    is no prompt text), each part's text from `text_of` (the policy: exact, or an upper bound); None when a part
    has none, or a dict spreads another one (`**x`)."""
    parts: list[str | None] = []
    if isinstance(expr, cst.Dict):
        for e in expr.elements:
            if not isinstance(e, cst.DictElement):
                return None
            if string_value(e.key) == "cache_control":
                continue
            parts += [text_of(e.key), text_of(e.value)]
    else:
        parts = [text_of(e.value) for e in expr.elements]  # a spread `*X` is X's text
    return None if any(p is None for p in parts) else " ".join(parts)  # type: ignore[arg-type]
