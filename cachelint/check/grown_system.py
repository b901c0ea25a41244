"""A caller's system message grown in place on every request (CL301).

A helper that adds instructions to the request (a JSON schema, a format reminder) often appends them to the system
message of the list its caller hands in: `messages[0]["content"] += schema`, or `system = next(m for m in messages
if m["role"] == "system")` then `system["content"] += ...`. A shallow copy (`kwargs.copy()`, `list(messages)`) still
holds the caller's message dicts, so the caller's conversation keeps the text; the next request of that
conversation appends it again. The system prompt then grows on every request, and nothing after its start is read
from cache.

Recognized in one function: `+=` on the `content` (or a content block's `text`) of the first message, or of the
system message picked by role, of a list that is a parameter of the function or a value of one (`new_kwargs =
kwargs.copy()`, `new_kwargs["messages"]`), with no deep copy in the function.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from cachelint.check.depends import parameters_of, positional_index
from cachelint.check.module import ModuleContext, argument_for, declared_outside
from cachelint.check.one_shot import one_shot_callers
from cachelint.check.values import string_value

QUICK = re.compile(r"""\[\s*["'](?:content|text)["']\s*\]\s*\+=""")


@dataclass(frozen=True, slots=True)
class GrownSystem:
    node: cst.CSTNode  # the `+=` statement
    messages: str  # the caller's list, as the code names it


def grown_system_messages(ctx: ModuleContext) -> Iterator[GrownSystem]:
    if ctx.is_test or not QUICK.search(ctx.source) or "system" not in ctx.source:
        return
    for node in ctx.nodes(cst.AugAssign):
        if not isinstance(node.operator, cst.AddAssign) or not isinstance(node.target, cst.Subscript):
            continue
        if _key(node.target) not in ("content", "text"):
            continue
        function = ctx.enclosing_function(node)
        if function is None or "deepcopy" in ctx.code(function):
            continue
        messages = _system_message_of(ctx, function, node.target)
        param = _source_parameter(ctx, function, messages) if messages is not None else None
        if param is None:
            continue
        if one_shot_callers(ctx, function, param) or _local_to_every_caller(ctx, function, param):
            continue  # every caller in sight builds the list for one request: nothing carries the text over
        yield GrownSystem(ctx.statement_of(node), ctx.code(messages))


def _local_to_every_caller(ctx: ModuleContext, function: cst.FunctionDef, param: str) -> bool:
    """Every call of the function in this module (`self._append_system_prompt(msg, extra)`, `helper(messages)`)
    passes a name its caller binds itself (not a parameter of the caller, nor the object's or the module's list),
    outside any loop: the list is made for the request the caller is about to send, not a conversation it keeps.
    False when no call is in sight (a library's function, whose callers keep what they like)."""
    position = positional_index(function, param)
    owner = ctx.enclosing(function, (cst.ClassDef,))
    calls = [c for c in ctx.calls_by_name.get(function.name.value, []) if not ctx.contains(function, c)]
    if not calls:
        return False
    for call in calls:
        caller = ctx.enclosing_function(call)
        value = argument_for(call, param, position)
        if caller is None or not isinstance(value, cst.Name) or ctx.loops_around(call):
            return False
        if value.value in declared_outside(caller):
            return False
        if value.value in parameters_of(caller):
            if owner is not None and ctx.enclosing(caller, (cst.ClassDef,)) is owner:
                continue  # another method of the class hands on the list it was given: the class builds it for a request
            return False
        bound = [(b, v) for b, v in ctx.assigned_values(value) if ctx.enclosing_function(b) is caller]
        if not bound or any(isinstance(b, cst.Param) or v is not None and _source_parameter(ctx, caller, v) is not None for b, v in bound):
            return False  # `new_kwargs = kwargs.copy()`: the caller's own caller's list, shallow-copied
    return True


def _subscript(sub: cst.Subscript) -> cst.BaseExpression | None:
    """What a single plain index holds: the `"content"` of `m["content"]`, the `0` of `msgs[0]`."""
    if len(sub.slice) != 1 or not isinstance(sub.slice[0].slice, cst.Index):
        return None
    return sub.slice[0].slice.value


def _key(sub: cst.Subscript) -> str | None:
    value = _subscript(sub)
    return string_value(value) if value is not None else None


def _index(sub: cst.Subscript) -> str | None:
    value = _subscript(sub)
    return value.value if isinstance(value, cst.Integer) else None


def _system_message_of(ctx: ModuleContext, function: cst.FunctionDef, target: cst.Subscript) -> cst.BaseExpression | None:
    """The list whose system message `target` (its `content`, or a block's `text`) belongs to:
    `msgs[0]["content"]`, `msgs[0]["content"][0]["text"]`, or `system["content"]` with `system = msgs[0]` or
    `system = next(m for m in msgs if m["role"] == "system")`."""
    expr: cst.BaseExpression = target.value
    if _key(target) == "text":  # content[0]["text"]: the block's text, of the message's content
        if not (isinstance(expr, cst.Subscript) and _index(expr) == "0" and isinstance(expr.value, cst.Subscript)
                and _key(expr.value) == "content"):
            return None
        expr = expr.value.value
    if isinstance(expr, cst.Subscript) and _index(expr) == "0":
        return expr.value
    if isinstance(expr, cst.Name):
        value = ctx.sole_value(expr, within=function)
        if isinstance(value, cst.Subscript) and _index(value) == "0":
            return value.value
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and value.func.value == "next" and value.args \
                and isinstance(generator := value.args[0].value, cst.GeneratorExp) and generator.for_in.ifs \
                and "system" in ctx.code(generator.for_in.ifs[0].test):
            return generator.for_in.iter
    return None


def _source_parameter(ctx: ModuleContext, function: cst.FunctionDef, messages: cst.BaseExpression) -> str | None:
    """The parameter of the function the list is, or is an entry of (`kwargs["messages"]`), or of a shallow copy of
    (`new_kwargs = kwargs.copy()`; `dict(kwargs)`, `{**kwargs}`, `list(messages)`, `messages.copy()`); None when the
    list is the function's own."""
    while isinstance(messages, cst.Subscript):
        messages = messages.value
    if not isinstance(messages, cst.Name):
        return None
    params = parameters_of(function)
    if messages.value in params:
        return messages.value
    value = ctx.sole_value(messages, within=function)
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value == "copy":
        source = value.func.value  # kwargs.copy()
    elif isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and value.func.value in ("dict", "list") and value.args:
        source = value.args[0].value  # dict(kwargs)
    elif isinstance(value, cst.Dict) and value.elements and isinstance(value.elements[0], cst.StarredDictElement):
        source = value.elements[0].value  # {**kwargs}
    elif isinstance(value, cst.Subscript):
        source = value.value  # kwargs["messages"]
    else:
        return None
    return source.value if isinstance(source, cst.Name) and source.value in params else None
