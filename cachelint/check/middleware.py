"""Tools filtered per model call by an agent framework's middleware (CL202).

LangChain's agent middleware runs a hook around every model call of an agent (`wrap_model_call(request,
handler)`, its async twin, the older `modify_model_request(request, state)`); the request it hands on carries the
tools the model is sent (`request.override(tools=...)`, `replace(request, tools=...)`, `request.tools = ...`).
A hook that filters them on what the request or the conversation's state holds (tools promoted by a search,
skills activated in this chat) sends a different tool list from one call to the next, and the tools open the
prefix. A filter on the middleware's own settings (`self.disabled`, fixed when it is made) is the same on every
call and is not one.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from cachelint.check.depends import parameter_sources
from cachelint.check.module import ModuleContext, comprehension_clauses, descendants

HOOKS = frozenset({"wrap_model_call", "awrap_model_call", "modify_model_request", "amodify_model_request"})
MAX_HOPS = 2  # helper methods followed from the hook: self._filter(request) -> self._allowed(request)


@dataclass(frozen=True, slots=True)
class ToolFilter:
    node: cst.CSTNode  # where the filtered list is made
    hook: str
    reads: str  # what the filter reads (the parameter it depends on)


def tool_filters(ctx: ModuleContext) -> Iterator[ToolFilter]:
    """Tool lists filtered per model call in a middleware hook of this module, or in the class's methods the
    hook calls with its request."""
    seen: set[int] = set()
    for cls in ctx.nodes(cst.ClassDef):
        methods = {stmt.name.value: stmt for stmt in cls.body.body if isinstance(stmt, cst.FunctionDef)}
        for name in sorted(HOOKS & methods.keys()):
            for function in _reached(ctx, methods, methods[name]):
                for found in _filters_in(ctx, function):
                    if id(found.node) not in seen:
                        seen.add(id(found.node))
                        yield ToolFilter(found.node, name, found.reads)


def _reached(ctx: ModuleContext, methods: dict[str, cst.FunctionDef], hook: cst.FunctionDef) -> list[cst.FunctionDef]:
    """The hook and the methods of its class it calls (`self._filter_tools(request)`), a few hops deep."""
    found = [hook]
    frontier = [hook]
    for _ in range(MAX_HOPS):
        following = []
        for function in frontier:
            for node in descendants(function.body):
                if (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and isinstance(node.func.value, cst.Name)
                        and node.func.value.value == "self" and node.func.attr.value in methods):
                    method = methods[node.func.attr.value]
                    if all(method is not f for f in found):
                        found.append(method)
                        following.append(method)
        frontier = following
    return found


@dataclass(frozen=True, slots=True)
class _Found:
    node: cst.CSTNode
    reads: str


def _filters_in(ctx: ModuleContext, function: cst.FunctionDef) -> Iterator[_Found]:
    """`request.override(tools=VALUE)`, `replace(request, tools=VALUE)` or `request.tools = VALUE` in `function`,
    where VALUE is a filtered list whose condition reads a parameter (the request, the state)."""
    params = {p.name.value for p in (*function.params.posonly_params, *function.params.params, *function.params.kwonly_params)} - {"self", "cls"}
    for node in descendants(function.body):
        value = None
        if isinstance(node, cst.Call):
            value = next((a.value for a in node.args if a.keyword is not None and a.keyword.value == "tools"), None)
            if value is not None and not _hands_on_request(node):
                value = None
        elif isinstance(node, cst.Assign) and any(isinstance(t.target, cst.Attribute) and t.target.attr.value == "tools" for t in node.targets):
            value = node.value
        if value is None:
            continue
        for comp in _filtering(ctx, value, function):
            reads = _param_read(ctx, comp, function, params)
            if reads is not None:
                yield _Found(comp, reads)
                break


def _hands_on_request(call: cst.Call) -> bool:
    """`request.override(...)`, `dataclasses.replace(request, ...)`: a new request with other fields."""
    func = call.func
    name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
    return name in ("override", "replace", "model_copy", "copy", "_replace")


def _filtering(ctx: ModuleContext, value: cst.BaseExpression, function: cst.FunctionDef, depth: int = 0) -> Iterator[cst.CSTNode]:
    """Comprehensions with a condition (and `filter(...)` calls) the value is, or is assigned from in `function`."""
    if depth > 3:
        return
    if isinstance(value, (cst.ListComp, cst.GeneratorExp)) and any(f.ifs for f in comprehension_clauses(value)):
        yield value
    elif isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and value.func.value in ("filter", "list", "tuple"):
        if value.func.value == "filter":
            yield value
        elif value.args:
            yield from _filtering(ctx, value.args[0].value, function, depth + 1)
    elif isinstance(value, cst.Name):
        for binding, bound in ctx.assigned_values(value):
            if bound is not None and ctx.enclosing_function(binding) is function:
                yield from _filtering(ctx, bound, function, depth + 1)


def _param_read(ctx: ModuleContext, comp: cst.CSTNode, function: cst.FunctionDef, params: set[str]) -> str | None:
    """The parameter the filter's condition depends on (through locals of `function`), else None: a condition
    on constants and the middleware's own settings."""
    conditions: list[cst.CSTNode] = []
    own: set[str] = set()  # the comprehension's variables: each tool, not what the filter reads
    if isinstance(comp, (cst.ListComp, cst.GeneratorExp)):
        conditions = [cond.test for f in comprehension_clauses(comp) for cond in f.ifs]
        own = {n.value for f in comprehension_clauses(comp) for n in descendants(f.target) if isinstance(n, cst.Name)}
    elif isinstance(comp, cst.Call) and comp.args:
        conditions = [comp.args[0].value]
        if isinstance(comp.args[0].value, cst.Lambda):
            own = {p.name.value for p in comp.args[0].value.params.params}
    for condition in conditions:
        found = parameter_sources(ctx, condition, params - own, within=function, skip=own)
        if found:
            return found[0]
    return None
