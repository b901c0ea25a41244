"""Prompt-shaped renderers: code that renders a conversation into messages while the request is sent elsewhere.

A framework's adapter turns its own history objects into provider messages on every call
(`for turn in history: messages.append({"role": ..., "content": render(turn)})`) and hands the list to a
client this module never sees. What such a loop renders is the prefix of the next request: earlier turns
rendered again. A set or a directory listing iterated into that text, or a run-time dict serialized without
`sort_keys`, renders the same turn differently in another process, so the history behind it is prefilled
again.

A message is recognized by its shape only: a dict literal with a `role` key, a text content block
(`{"type": "text", "text": ...}`), or a constructor called with `role=` and `content=`. Only messages built
inside a loop of a function count (one message per turn: a conversation rendered again); a single message
built once per call is the newest turn and is not reused yet. Every finding here is `likely`: only the
data's shape says it is a prompt.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from cachelint.check.callsites import LIKELY, CallSite
from cachelint.check.module import ModuleContext
from cachelint.check.values import Fact, Landing, ValueWalker, string_value

MAX_RENDERED = 48  # messages judged per module: a renderer has a few; a fixture file may have hundreds
RENDERER_KINDS = frozenset({"unsorted_json", "dict_repr", "unordered"})
RENDERED = "message rendered per turn"  # the callee of a renderer's stand-in call site
_LOOPS = (cst.For, cst.While, cst.ListComp, cst.GeneratorExp, cst.SetComp, cst.DictComp)


@dataclass(frozen=True, slots=True)
class Rendered:
    """One message (or content block) rendered per turn: the node and the expressions that become its text."""

    node: cst.CSTNode
    role: str | None
    values: tuple[cst.BaseExpression, ...]


def _keys(node: cst.Dict) -> dict[str, cst.BaseExpression]:
    return {key: e.value for e in node.elements if isinstance(e, cst.DictElement) and (key := string_value(e.key)) is not None}


def message_shape(node: cst.CSTNode) -> tuple[str | None, list[cst.BaseExpression]] | None:
    """(role, the expressions that become its text) when `node` is shaped like a message or a content block."""
    if isinstance(node, cst.Dict):
        keys = _keys(node)
        if "role" in keys and ("content" in keys or "tool_calls" in keys):
            values = [v for k, v in keys.items() if k not in ("role", "name", "tool_call_id", "id", "type")]
            return string_value(keys["role"]), values
        if string_value(keys.get("type")) == "text" and "text" in keys:
            return None, [keys["text"]]
        if string_value(keys.get("type")) == "tool_result" and "content" in keys:
            return "user", [keys["content"]]
        return None
    if isinstance(node, cst.Call):
        keywords = {a.keyword.value: a.value for a in node.args if a.keyword is not None}
        if "role" in keywords and "content" in keywords:
            return string_value(keywords["role"]), [keywords["content"]]
    return None


def _in_function_loop(ctx: ModuleContext, node: cst.CSTNode) -> bool:
    """Inside a loop (or comprehension) of a function: one message per item, a conversation rendered."""
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            return False  # the loop must be in the function that builds the message
        if isinstance(ancestor, _LOOPS):
            return ctx.enclosing_function(node) is not None
    return False


def rendered_messages(ctx: ModuleContext, sites: list[CallSite]) -> list[Rendered]:
    """Messages and content blocks built per turn in a loop of a function that sends no request itself (a
    function that sends one, even through a client no one recognizes (`messages=` passed), is an agent loop:
    what it appends is the newest turn, judged through the request)."""
    found: list[Rendered] = []
    senders = {id(ctx.enclosing_function(site.node)) for site in sites if isinstance(site.node, cst.Call)}
    senders |= {id(ctx.enclosing_function(call)) for call in ctx.nodes(cst.Call)  # a client no one recognizes, sending
                if any(a.keyword is not None and a.keyword.value == "messages" for a in call.args)}
    for kind in (cst.Dict, cst.Call):
        for node in ctx.nodes(kind):
            shape = message_shape(node)
            if shape is None or not _in_function_loop(ctx, node):
                continue
            if id(ctx.enclosing_function(node)) in senders:
                continue  # an agent loop appending its new turns: rendered once and kept, judged through the request
            if not _returned(ctx, node):
                continue  # stored into state the function keeps (new tool results added once): not rendered again
            role, values = shape
            values = values + _written_later(ctx, node)
            found.append(Rendered(node, role, tuple(values)))
            if len(found) >= MAX_RENDERED:
                return found
    return found


def _returned(ctx: ModuleContext, node: cst.CSTNode) -> bool:
    """Whether the message reaches what its function returns: a renderer builds a fresh list each call and hands
    it back (`out.append(message)` ... `return out`); a function that stores new results into kept state
    (`result["content"] = [...]`, returning nothing) renders them once."""
    function = ctx.enclosing_function(node)
    if function is None:
        return False
    if any(isinstance(a, cst.Return) for a in ctx.ancestors(node) if ctx.contains(function, a)):
        return True
    statement = ctx.statement_of(node)
    target = _target_name(statement, node, ctx)
    return target is not None and target in _returned_names(ctx, function)


def _target_name(statement: cst.CSTNode, node: cst.CSTNode, ctx: ModuleContext) -> str | None:
    """The local name a statement puts `node` into: `x = ...`, `x += ...`, `x[k] = ...`, `x.append(...)`."""
    if isinstance(statement, cst.SimpleStatementLine):
        for small in statement.body:
            if not ctx.contains(small, node):
                continue
            if isinstance(small, cst.Assign) and len(small.targets) == 1:
                return _root_name(small.targets[0].target)
            if isinstance(small, (cst.AugAssign, cst.AnnAssign)):
                return _root_name(small.target)
            if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call) and isinstance(small.value.func, cst.Attribute) \
                    and small.value.func.attr.value in ("append", "extend", "insert"):
                return _root_name(small.value.func.value)
    return None


def _root_name(expr: cst.BaseExpression) -> str | None:
    while isinstance(expr, cst.Subscript):
        expr = expr.value
    return expr.value if isinstance(expr, cst.Name) else None


def _returned_names(ctx: ModuleContext, function: cst.FunctionDef) -> set[str]:
    """Local names whose contents flow into the function's return values (through assignments, `+=`, item
    writes and appends); memoized per function."""
    cache = ctx.__dict__.setdefault("_renderer_returned", {})
    found = cache.get(id(function))
    if found is not None:
        return found
    flows: dict[str, set[str]] = {}  # name -> names whose contents it receives
    for statement in (n for n in _own_statements(function) if isinstance(n, cst.SimpleStatementLine)):
        for small in statement.body:
            target, value = None, None
            if isinstance(small, cst.Assign) and len(small.targets) == 1:
                target, value = _root_name(small.targets[0].target), small.value
            elif isinstance(small, (cst.AugAssign, cst.AnnAssign)):
                target, value = _root_name(small.target), small.value
            elif isinstance(small, cst.Expr) and isinstance(small.value, cst.Call) and isinstance(small.value.func, cst.Attribute) \
                    and small.value.func.attr.value in ("append", "extend", "insert"):
                target, value = _root_name(small.value.func.value), small.value
            if target is not None and value is not None:
                flows.setdefault(target, set()).update(_names_in(value))
    found = set()
    stack = [name for value in ctx.returns_of(function) for name in _names_in(value)]
    while stack:
        name = stack.pop()
        if name not in found:
            found.add(name)
            stack.extend(flows.get(name, ()))
    cache[id(function)] = found
    return found


def _names_in(expr: cst.CSTNode) -> set[str]:
    from cachelint.check.module import descendants

    return {n.value for n in descendants(expr) if isinstance(n, cst.Name)} | ({expr.value} if isinstance(expr, cst.Name) else set())


def _own_statements(function: cst.FunctionDef) -> list[cst.CSTNode]:
    """The statements of a function, nested blocks included, nested functions and classes left out."""
    out: list[cst.CSTNode] = []
    stack: list[cst.CSTNode] = [function.body]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.SimpleStatementLine):
            out.append(node)
            continue
        if isinstance(node, (cst.FunctionDef, cst.ClassDef)) and node is not function:
            continue
        stack.extend(node.children)
    return out


def _written_later(ctx: ModuleContext, node: cst.CSTNode) -> list[cst.BaseExpression]:
    """Values stored into the message after it is built: `message["tool_calls"] = [...]`."""
    parent = ctx.parent(node)
    target = None
    if isinstance(parent, cst.Assign) and len(parent.targets) == 1:
        target = parent.targets[0].target
    elif isinstance(parent, cst.AnnAssign):
        target = parent.target
    if not isinstance(target, cst.Name):
        return []
    function = ctx.enclosing_function(node)
    return [assign.value for assign in ctx.subscript_assignments.get(target.value, []) if ctx.enclosing_function(assign) is function]


def is_rendered(site: CallSite) -> bool:
    return site.callee == RENDERED


def describe(analysis, site: CallSite) -> str:
    """Where a renderer's text goes, in the user's words."""
    return (f"the message built on line {analysis.ctx.span(site.node).row}, one per turn of a conversation that is "
            "rendered again for every request (the request is sent elsewhere)")


def rendered_facts(analysis, kinds: set[str]) -> Iterator[tuple[CallSite, Fact]]:
    """Facts of some kinds found in the text of messages rendered per turn; memoized on the analysis."""
    facts = analysis.__dict__.get("_rendered_facts")
    if facts is None:
        facts = analysis.__dict__["_rendered_facts"] = list(_walk_rendered(analysis))
    reported = {id(fact.node) for _, fact in analysis.facts(kinds)}
    for site, fact in facts:
        if fact.kind in kinds and id(fact.node) not in reported:
            reported.add(id(fact.node))
            yield site, fact


def _walk_rendered(analysis) -> Iterator[tuple[CallSite, Fact]]:
    ctx = analysis.ctx
    for rendered in rendered_messages(ctx, analysis.sites):
        node = rendered.node
        site = CallSite(node, "openai-chat", RENDERED, {}, LIKELY)  # type: ignore[arg-type]
        walker = ValueWalker(ctx, site, analysis.options.volatile_functions)
        landing = Landing("messages", prefix=True, role=rendered.role, item=True)
        for value in rendered.values:
            walker.walk(value, landing, 0)
        for fact in walker.facts:
            if fact.kind in RENDERER_KINDS and fact.landing.prefix:
                yield site, fact
