"""Ids minted afresh for old turns: a message converter that writes a new uuid into every stored turn it renders.

An app that keeps its conversation in its own format converts it into the provider's (or a chat template's)
messages for every request. Where the converter writes a tool-call id, it must write the stored one: a fresh
`uuid4()` (or a fallback for a missing id, `tc.get("id") or uuid4()`) gives every earlier turn a new id on every
request, so the history differs from the previous request's at its first tool call and everything after it is
prefilled again.

Two shapes are recognized, each in one module:
- the converter loops over the stored conversation itself (`for turn in history: ... "id": uuid4()`);
- a converter of one message (`def to_message(message)`) is applied to every stored turn
  (`[to_message(m) for m in messages]`, or a `for` loop over the history that calls it).
The id slot is a message's or a tool call's `id` / `tool_call_id` / `call_id`: a dict key, a keyword of a message
object (`ToolMessage(content=..., tool_call_id=...)`), or an item written into the stored message itself
(`tc["id"] = new_id()`, which also rewrites the stored turn). Findings are `likely`: only the shape says that
the converted messages are a request's history.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import libcst as cst

from cachelint.check.callsites import LIKELY, CallSite
from cachelint.check.module import ModuleContext
from cachelint.check.renderers import STORED_TURNS, returned
from cachelint.check.values import Fact, Landing, ValueWalker, string_value

MINTED = "id minted per stored turn"  # the callee of a minted id's stand-in call site
ID_KEYS = frozenset({"id", "tool_call_id", "call_id", "tool_use_id"})
# keys that make a dict (or keywords that make a call) a message or a tool call, not a record for a store or a log
MESSAGE_KEYS = frozenset({"role", "content", "function", "arguments", "tool_calls", "input", "output"})
NEW_OUTPUT = re.compile(r"choices|response|completion|output|result|chunk|delta|new_|pending", re.I)  # a reply parsed once
MAX_SLOTS = 32  # id slots judged per module


def _iterated(ctx: ModuleContext, node: cst.CSTNode, function: cst.FunctionDef) -> cst.BaseExpression | None:
    """What the outermost loop around `node` inside `function` goes over, or None."""
    outer = None
    for ancestor in ctx.ancestors(node):
        if ancestor is function:
            break
        if isinstance(ancestor, (cst.For, cst.CompFor)):
            outer = ancestor.iter
        elif isinstance(ancestor, (cst.ListComp, cst.GeneratorExp, cst.SetComp, cst.DictComp)):
            outer = ancestor.for_in.iter
    return outer


def _stored_turns(ctx: ModuleContext, expr: cst.BaseExpression | None) -> bool:
    """A loop over a stored conversation (`history`, `self.messages`, `records`), not over a reply just parsed."""
    if expr is None:
        return False
    code = ctx.code(expr)
    return STORED_TURNS.search(code) is not None and NEW_OUTPUT.search(code) is None


def _slots(ctx: ModuleContext) -> Iterator[tuple[cst.CSTNode, cst.BaseExpression, bool]]:
    """(slot, value, writes into a stored message) for each id written into something shaped like a message."""
    for node in ctx.nodes(cst.Dict):
        keys = {string_value(e.key): e.value for e in node.elements if isinstance(e, cst.DictElement)}
        if MESSAGE_KEYS & keys.keys() or "tool_call_id" in keys or "call_id" in keys:
            for key in ID_KEYS & keys.keys():
                yield node, keys[key], False
    for node in ctx.nodes(cst.Call):
        keywords = {a.keyword.value: a.value for a in node.args if a.keyword is not None}
        if MESSAGE_KEYS & keywords.keys() or "tool_call_id" in keywords or "call_id" in keywords:
            for key in ID_KEYS & keywords.keys():
                yield node, keywords[key], False
    for node in ctx.nodes(cst.Assign):
        if len(node.targets) != 1 or not isinstance(target := node.targets[0].target, cst.Subscript):
            continue
        element = target.slice[0].slice if len(target.slice) == 1 else None
        if isinstance(element, cst.Index) and string_value(element.value) in ID_KEYS:
            yield node, node.value, True


def _converted_per_turn(ctx: ModuleContext, function: cst.FunctionDef) -> bool:
    """The module applies `function` to each turn of a stored conversation: `[convert(m) for m in messages]`."""
    for name in _names_called_by(function):
        for call in ctx.calls_by_name.get(name, ()):
            caller = ctx.enclosing_function(call)
            if caller is function or caller is None:
                continue
            if _stored_turns(ctx, _iterated(ctx, call, caller)):
                return True
    return False


def _names_called_by(function: cst.FunctionDef) -> list[str]:
    """The names a function is called by: its own, and a single-dispatch function it is registered with
    (`@to_openai_message.register(AssistantMessage) def _(message): ...`)."""
    names = [function.name.value]
    for decorator in function.decorators:
        expr = decorator.decorator.func if isinstance(decorator.decorator, cst.Call) else decorator.decorator
        if isinstance(expr, cst.Attribute) and expr.attr.value == "register" and isinstance(expr.value, cst.Name):
            names.append(expr.value.value)
    return names


def _mutates_given(ctx: ModuleContext, slot: cst.Assign, function: cst.FunctionDef) -> bool:
    """`tc["id"] = ...` where `tc` is a parameter of the function or an item of one: the stored turn is written over."""
    params = {p.name.value for p in (*function.params.params, *function.params.kwonly_params)}
    target = slot.targets[0].target
    while isinstance(target, cst.Subscript):
        target = target.value
    if not isinstance(target, cst.Name):
        return False
    if target.value in params:
        return True
    for ancestor in ctx.ancestors(slot):
        if ancestor is function:
            break
        if isinstance(ancestor, cst.For) and isinstance(ancestor.target, cst.Name) and ancestor.target.value == target.value:
            root = ancestor.iter
            while isinstance(root, (cst.Subscript, cst.Attribute)):
                root = root.value
            return isinstance(root, cst.Name) and root.value in params
    return False


def minted_ids(analysis) -> Iterator[tuple[CallSite, Fact]]:
    """Volatile facts of ids written into the turns a converter renders again for every request; memoized."""
    facts = analysis.__dict__.get("_minted_ids")
    if facts is None:
        facts = analysis.__dict__["_minted_ids"] = list(_walk(analysis))
    return iter(facts)


def _walk(analysis) -> Iterator[tuple[CallSite, Fact]]:
    ctx = analysis.ctx
    seen: set[int] = set()
    for count, (slot, value, mutates) in enumerate(_slots(ctx)):
        if count >= MAX_SLOTS:
            return
        function = ctx.enclosing_function(slot)
        if function is None:
            continue
        over_turns = _stored_turns(ctx, _iterated(ctx, slot, function))
        if not over_turns and not _converted_per_turn(ctx, function):
            continue
        if not (_mutates_given(ctx, slot, function) if mutates else returned(ctx, slot)):
            continue  # an id kept in the function (a log, a new record it stores): not what is sent
        site = CallSite(slot, "openai-chat", MINTED, {}, LIKELY)  # type: ignore[arg-type]
        walker = ValueWalker(ctx, site, analysis.options.volatile_functions)
        walker.walk(value, Landing("messages", prefix=True, item=True), 0)
        fact = next((f for f in walker.facts if f.kind == "volatile"), None)
        if fact is None:
            continue
        local = ctx.contains(function, fact.node)  # minted in the converter: fixed there, however many slots it reaches
        if (key := id(fact.node) if local else id(value)) in seen:
            continue
        seen.add(key)
        if not local:  # minted in a helper (`new_call_id()`) that may have other, harmless callers: fixed at the slot
            fact = Fact(fact.kind, value, fact.landing, ctx.code(value), fact.granularity, fact.when,
                        {**fact.extra, "minted": fact.label, "source": id(fact.node)})
        fact.extra["converter"] = _names_called_by(function)[-1]  # `_` registered with `to_message`: say `to_message`
        yield site, fact


def is_minted(site: CallSite) -> bool:
    return site.callee == MINTED


def describe(analysis, site: CallSite, fact: Fact) -> str:
    """Where a minted id goes, in the user's words."""
    name = fact.extra.get("converter", "the converter")
    minted = f" (a fresh `{fact.extra['minted']}`)" if fact.extra.get("minted") else ""
    return (f"the id{minted} that `{name}` writes into every stored turn it converts again for each request (the "
            "request is sent elsewhere)")
