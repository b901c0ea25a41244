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
The id slot is a tool call's: `tool_call_id` / `call_id` / `tool_use_id`, or `id` beside a tool call's keys
(`{"id": ..., "type": "function", "function": {...}}`); a dict key, a keyword of a message object
(`ToolMessage(content=..., tool_call_id=...)`), or an item written into the stored message itself
(`tc["id"] = new_id()`, which also rewrites the stored turn; not where it is written only when missing,
`tc["id"] = tc.get("id") or new_id()`, and read back afterwards). A record's `id` in an export or a store is not
a tool call's. Findings are `likely`: only the shape says that the converted messages are a request's history.

An Anthropic tool-use block (`{"type": "tool_use", "id": ...}`, a `tool_use_id`, or a converter named for Anthropic)
in a project that sets no breakpoint anywhere is left alone: Anthropic caches nothing without one (automatic
caching too is asked for with a `cache_control` field), so a fresh id there costs no cache hit. And a helper that
mints ids which is also the default factory of a field of the tree's message types
(`tool_call_id: str = field(default_factory=_generate_tool_call_id)`) gives every turn its id when the turn is
made: reached from a converter through another helper (`_guard_tool_call_id(t=part)`, `t.tool_call_id or
generate_tool_call_id()`), it is a type guard's fallback that never runs.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import libcst as cst

from cachelint.check import tree
from cachelint.check.callsites import LIKELY, CallSite
from cachelint.check.depends import parameters_of
from cachelint.check.module import ModuleContext, called_name, descendants, names_in
from cachelint.check.renderers import STORED_TURNS, outer_loop, returned, returned_through_parameter, root_name
from cachelint.check.static_prefix import mentions_caching, tree_sets_breakpoints
from cachelint.check.values import Fact, Landing, ValueWalker, string_value

MINTED = "id minted per stored turn"  # the callee of a minted id's stand-in call site
CALL_ID_KEYS = frozenset({"tool_call_id", "call_id", "tool_use_id"})  # only ever the id of a tool call
# a tool call (or a tool-use block): where a bare `id` is the call's, not a record's in a store or an export
TOOL_CALL_KEYS = frozenset({"function", "arguments", "tool_calls", "input"})
NEW_OUTPUT = re.compile(r"choices|response|completion|output|result|chunk|delta|new_|pending", re.I)  # a reply parsed once
MAX_SLOTS = 32  # id slots judged per module (after the cheap tests)


def _stored_turns(ctx: ModuleContext, loop: cst.For | cst.CompFor | None) -> bool:
    """A loop over a stored conversation (`history`, `self.messages`, `records`), not over a reply just parsed."""
    if loop is None:
        return False
    return _names_stored_turns(ctx, loop.iter, 0)


def _names_stored_turns(ctx: ModuleContext, expr: cst.BaseExpression, depth: int) -> bool:
    """The loop's iterable is named for a stored conversation, or is a local name bound to one (two hops at most:
    `complete = self._ensure_complete(actual_messages)`, `actual_messages = [m for m in self.dialogue ...]`)."""
    code = ctx.code(expr)
    if ONE_TURNS_PARTS.search(code):
        return False  # for call in message["tool_calls"]: the parts of one turn, whichever turn the converter is handed
    if NEW_OUTPUT.search(code) is not None:
        return False
    if STORED_TURNS.search(code) is not None:
        return True
    if isinstance(expr, cst.Name) and depth < 2:
        values = [value for _, value in ctx.assigned_values(expr)]
        return bool(values) and all(v is not None and _names_stored_turns(ctx, v, depth + 1) for v in values)
    return False


# a loop over the parts of one message: `message["tool_calls"]`, `msg.tool_calls`, `message.get("content", [])`
ONE_TURNS_PARTS = re.compile(r"""\[\s*["'](?:tool_calls|content|tool_use|function_call)["']\s*\]\s*$|\.(?:tool_calls|content)\s*$|"""
                             r"""\.get\(\s*["'](?:tool_calls|content)["']""")


def _slots(ctx: ModuleContext) -> Iterator[tuple[cst.CSTNode, str, cst.BaseExpression, bool]]:
    """(slot, key, value, writes into a stored message) for each id written into a tool call or a tool result."""
    for node in ctx.nodes(cst.Dict):
        keys = {string_value(e.key): e.value for e in node.elements if isinstance(e, cst.DictElement)}
        yield from ((node, key, keys[key], False) for key in _id_keys(keys.keys()))
    for node in ctx.nodes(cst.Call):
        keywords = {a.keyword.value: a.value for a in node.args if a.keyword is not None}
        yield from ((node, key, keywords[key], False) for key in _id_keys(keywords.keys()))
    for node in ctx.nodes(cst.Assign):
        if len(node.targets) != 1 or not isinstance(target := node.targets[0].target, cst.Subscript):
            continue
        element = target.slice[0].slice if len(target.slice) == 1 else None
        key = string_value(element.value) if isinstance(element, cst.Index) else None
        if key in CALL_ID_KEYS or (key == "id" and TOOL_CALL_KEYS & set(names_in(target.value) | {_iter_key(ctx, target)})):
            yield node, key, node.value, True


def _id_keys(keys) -> list[str]:
    """The id keys of a dict's keys (or a call's keywords): a tool call's own (`tool_call_id`), or `id` beside
    the keys of a tool call (`{"id": ..., "type": "function", "function": {...}}`)."""
    keys = set(keys)
    return sorted(CALL_ID_KEYS & keys) + (["id"] if "id" in keys and TOOL_CALL_KEYS & keys else [])


def _iter_key(ctx: ModuleContext, target: cst.Subscript) -> str:
    """For `call["id"] = ...` inside `for call in message["tool_calls"]`: the key the loop goes over ("tool_calls")."""
    name = root_name(target.value)
    for ancestor in ctx.ancestors(target):
        if isinstance(ancestor, cst.For) and name in names_in(ancestor.target):
            return "tool_calls" if "tool_calls" in ctx.code(ancestor.iter) else ""
    return ""


def _converted_per_turn(ctx: ModuleContext, function: cst.FunctionDef) -> bool:
    """The module applies `function` to each turn of a stored conversation, handing it the turn:
    `[convert(m) for m in messages]`, `self.convert(m)` for a method, or the single-dispatch function it is
    registered with. A call of another object's method of the same name (`m.to_dict()`) is not a call of it."""
    method = isinstance(ctx.enclosing(function, (cst.ClassDef,)), cst.ClassDef)
    for name in _names_called_by(function):
        for call in ctx.calls_by_name.get(name, ()):
            func = call.func
            if not (isinstance(func, cst.Name) if not method else
                    isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value in ("self", "cls")):
                continue
            caller = ctx.enclosing_function(call)
            loop = outer_loop(ctx, call) if caller is not None and caller is not function else None
            if _stored_turns(ctx, loop) and any(names_in(a.value) & names_in(loop.target) for a in call.args):
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


def _iter_root(expr: cst.BaseExpression) -> cst.BaseExpression:
    """What a loop walks the items of: `message` of `message["tool_calls"]`, `message.get("tool_calls", [])`,
    `enumerate(message.tool_calls)`."""
    while True:
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value in ("enumerate", "list", "reversed") and expr.args:
            expr = expr.args[0].value
        elif isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "get":
            expr = expr.func.value
        elif isinstance(expr, (cst.Subscript, cst.Attribute)):
            expr = expr.value
        else:
            return expr


def _mutates_given(ctx: ModuleContext, slot: cst.Assign, function: cst.FunctionDef) -> bool:
    """`tc["id"] = ...` where `tc` is a parameter of the function or an item of one: the stored turn is written over."""
    params = parameters_of(function)
    name = root_name(slot.targets[0].target)
    if name is None:
        return False
    if name in params:
        return True
    for ancestor in ctx.ancestors(slot):
        if ancestor is function:
            break
        if isinstance(ancestor, cst.For) and name in names_in(ancestor.target):
            root = _iter_root(ancestor.iter)
            return isinstance(root, cst.Name) and root.value in params
    return False


def _kept_once(ctx: ModuleContext, slot: cst.Assign, key: str) -> bool:
    """`call["id"] = call.get("id") or new_id()`: written into the stored turn only where it has none, and read
    back on every later conversion, so the id is minted once."""
    value = slot.value
    target = ctx.code(slot.targets[0].target.value)  # type: ignore[attr-defined]
    reads = {f'{target}.get("{key}")', f"{target}.get('{key}')", f'{target}["{key}"]', f"{target}['{key}']"}
    return any(ctx.code(n) in reads for n in (value, *descendants(value)) if isinstance(n, (cst.Call, cst.Subscript)))


def _default_factory(ctx: ModuleContext, fact: Fact, value: cst.BaseExpression, function: cst.FunctionDef) -> bool:
    """The id is minted outside the converter by a function that is also a default factory of the tree's message
    types, and the slot does not call that function itself: every turn got its id when it was made."""
    if fact.extra.get("origin"):
        name = fact.extra.get("made_in")
    else:
        minter = ctx.enclosing_function(fact.node)
        name = minter.name.value if minter is not None and minter is not function else None
    if name is None or (isinstance(value, cst.Call) and called_name(value).lstrip("_") == name.lstrip("_")):
        return False
    factory = re.compile(rf"default_factory\s*=\s*(?:[\w.]+\.)?_?{re.escape(name.lstrip('_'))}\b")
    return tree.first_file(ctx.filename, f"default factory {name}", lambda path, text: factory.search(text) is not None) is not None


ANTHROPIC_NAME = re.compile(r"anthropic|claude", re.I)


def _anthropic_block(slot: cst.CSTNode, key: str, function: cst.FunctionDef) -> bool:
    """The id is an Anthropic tool-use block's: `tool_use_id`, an `id` beside `"type": "tool_use"`, or written by
    a converter named for Anthropic (`message_to_anthropic_message`)."""
    if key == "tool_use_id" or any(ANTHROPIC_NAME.search(name) for name in _names_called_by(function)):
        return True
    return isinstance(slot, cst.Dict) and any(
        isinstance(e, cst.DictElement) and string_value(e.key) == "type" and string_value(e.value) == "tool_use" for e in slot.elements)


def _uncached_anthropic(ctx: ModuleContext, slot: cst.CSTNode, key: str, function: cst.FunctionDef) -> bool:
    """An Anthropic tool-use id in a project that sets no breakpoint anywhere: nothing is cached, nothing to break."""
    return _anthropic_block(slot, key, function) and not mentions_caching(ctx.source) and not tree_sets_breakpoints(ctx.filename)


def minted_ids(analysis) -> Iterator[tuple[CallSite, Fact]]:
    """Volatile facts of ids written into the turns a converter renders again for every request; memoized."""
    facts = analysis.__dict__.get("_minted_ids")
    if facts is None:
        facts = analysis.__dict__["_minted_ids"] = list(_walk(analysis))
    return iter(facts)


def _walk(analysis) -> Iterator[tuple[CallSite, Fact]]:
    ctx = analysis.ctx
    seen: set[int] = set()
    judged = 0
    for slot, key, value, mutates in _slots(ctx):
        function = ctx.enclosing_function(slot)
        if function is None:
            continue
        if not (_mutates_given(ctx, slot, function) and not _kept_once(ctx, slot, key) if mutates
                else returned(ctx, slot) or returned_through_parameter(ctx, slot)):
            continue  # an id kept in the function (a log, a new record it stores), or minted once into the stored turn
        if not _stored_turns(ctx, outer_loop(ctx, slot)) and not _converted_per_turn(ctx, function):
            continue
        judged += 1
        if judged > MAX_SLOTS:
            return
        if _uncached_anthropic(ctx, slot, key, function):
            continue
        site = CallSite(slot, "openai-chat", MINTED, {}, LIKELY)  # type: ignore[arg-type]
        walker = ValueWalker(ctx, site, analysis.options.volatile_functions)
        walker.walk(value, Landing("messages", prefix=True, item=True), 0)
        fact = next((f for f in walker.facts if f.kind == "volatile"), None)
        if fact is None or _default_factory(ctx, fact, value, function):
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
