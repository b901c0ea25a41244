"""Where a request is sent: LLM call sites, resolved through imports, variables, parameters and `self`.

A call is an LLM call when its callee is a known completion method on a client that provably comes from a
known SDK constructor (or a known module-level function such as `litellm.completion`), never because a
variable happens to be called `client`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from cachelint.check.module import ModuleContext

CLIENT_CONSTRUCTORS: dict[str, str] = {
    **{f"anthropic.{n}": "anthropic" for n in (
        "Anthropic", "AsyncAnthropic", "AnthropicBedrock", "AsyncAnthropicBedrock", "AnthropicVertex",
        "AsyncAnthropicVertex", "Client", "AsyncClient",
    )},
    **{f"openai.{n}": "openai" for n in ("OpenAI", "AsyncOpenAI", "AzureOpenAI", "AsyncAzureOpenAI", "Client", "AsyncClient")},
}
# attribute path after the client -> API shape
CLIENT_METHODS: dict[str, dict[tuple[str, ...], str]] = {
    "anthropic": {
        ("messages", "create"): "anthropic",
        ("messages", "stream"): "anthropic",
        ("messages", "parse"): "anthropic",
        ("beta", "messages", "create"): "anthropic",
        ("beta", "messages", "stream"): "anthropic",
        ("beta", "messages", "parse"): "anthropic",
    },
    "openai": {
        ("chat", "completions", "create"): "openai-chat",
        ("chat", "completions", "parse"): "openai-chat",
        ("chat", "completions", "stream"): "openai-chat",
        ("beta", "chat", "completions", "parse"): "openai-chat",
        ("beta", "chat", "completions", "stream"): "openai-chat",
        ("responses", "create"): "openai-responses",
        ("responses", "parse"): "openai-responses",
        ("responses", "stream"): "openai-responses",
    },
}
FUNCTIONS: dict[str, str] = {
    "litellm.completion": "openai-chat",
    "litellm.acompletion": "openai-chat",
    "litellm.main.completion": "openai-chat",
    "litellm.main.acompletion": "openai-chat",
}
PREFIX_ARGS = ("system", "tools", "messages", "instructions", "input", "tool_choice", "model", "thinking", "extra_headers", "betas")
MAX_DEPTH = 6


@dataclass(slots=True)
class CallSite:
    node: cst.Call
    api: str  # anthropic | openai-chat | openai-responses
    callee: str  # messages.create, litellm.completion, ...
    args: dict[str, cst.BaseExpression] = field(default_factory=dict)

    def arg(self, name: str) -> cst.BaseExpression | None:
        return self.args.get(name)


def _attribute_path(node: cst.BaseExpression) -> tuple[cst.BaseExpression, tuple[str, ...]]:
    names: list[str] = []
    while isinstance(node, cst.Attribute):
        names.append(node.attr.value)
        node = node.value
    return node, tuple(reversed(names))


class ClientResolver:
    """Decides whether an expression evaluates to an SDK client, and of which SDK."""

    def __init__(self, ctx: ModuleContext, extra_constructors: dict[str, str] | None = None) -> None:
        self.ctx = ctx
        self.constructors = {**CLIENT_CONSTRUCTORS, **(extra_constructors or {})}

    def provider(self, expr: cst.BaseExpression | None, depth: int = 0) -> str | None:
        if expr is None or depth > MAX_DEPTH:
            return None
        if isinstance(expr, cst.Await):
            return self.provider(expr.expression, depth + 1)
        if isinstance(expr, cst.Call):
            name = self.ctx.qualified_name_in(expr.func, set(self.constructors))
            if name:
                return self.constructors[name]
            return self._from_function_returns(expr, depth)
        if isinstance(expr, cst.Name):
            return self._from_name(expr, depth)
        if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value in ("self", "cls"):
            return self._from_self_attribute(expr, depth)
        return None

    def _from_name(self, name: cst.Name, depth: int) -> str | None:
        for binding, value in self.ctx.assigned_values(name):
            if value is not None:
                found = self.provider(value, depth + 1)
                if found:
                    return found
            param = binding if isinstance(binding, cst.Param) else None
            if param is not None:
                found = self._from_param(param, depth)
                if found:
                    return found
            with_item = self.ctx.parent(self.ctx.parent(binding)) if self.ctx.parent(binding) else None
            if isinstance(with_item, cst.WithItem):
                found = self.provider(with_item.item, depth + 1)
                if found:
                    return found
        return None

    def _from_param(self, param: cst.Param, depth: int) -> str | None:
        if param.annotation is not None:
            annotation = param.annotation.annotation
            for node in (annotation, getattr(annotation, "value", None)):
                if node is not None:
                    name = self.ctx.qualified_name_in(node, set(self.constructors))
                    if name:
                        return self.constructors[name]
        if param.default is not None:
            found = self.provider(param.default, depth + 1)
            if found:
                return found
        return self._from_callers(param, depth)

    def _from_callers(self, param: cst.Param, depth: int) -> str | None:
        """An untyped parameter: look at what the same module passes for it."""
        function = self.ctx.enclosing_function(param)
        if function is None:
            return None
        params = [p for p in function.params.params]
        index = next((i for i, p in enumerate(params) if p is param), None)
        method = self.ctx.enclosing(function, (cst.ClassDef,)) is not None
        for call in self.ctx.nodes(cst.Call):
            func = call.func
            called = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else None
            if called != function.name.value:
                continue
            for position, arg in enumerate(call.args):
                if arg.keyword is not None and arg.keyword.value == param.name.value:
                    found = self.provider(arg.value, depth + 1)
                elif arg.keyword is None and index is not None and position == index - (1 if method else 0):
                    found = self.provider(arg.value, depth + 1)
                else:
                    continue
                if found:
                    return found
        return None

    def _from_self_attribute(self, attr: cst.Attribute, depth: int) -> str | None:
        cls = self.ctx.enclosing(attr, (cst.ClassDef,))
        if cls is None:
            return None
        wanted = attr.attr.value
        for assign in _self_assignments(self.ctx, cls, wanted):
            found = self.provider(assign, depth + 1)
            if found:
                return found
        for stmt in cls.body.body:  # class-level annotation: client: Anthropic
            if isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    if isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name) and small.target.value == wanted:
                        name = self.ctx.qualified_name_in(small.annotation.annotation, set(self.constructors))
                        if name:
                            return self.constructors[name]
        return None

    def _from_function_returns(self, call: cst.Call, depth: int) -> str | None:
        for function in self.ctx.called_functions(call):
            for value in self.ctx.returns_of(function):
                found = self.provider(value, depth + 1)
                if found:
                    return found
        return None


def _self_assignments(ctx: ModuleContext, cls: cst.ClassDef, attr: str) -> list[cst.BaseExpression]:
    values: list[cst.BaseExpression] = []

    class Collect(cst.CSTVisitor):
        def visit_Assign(self, node: cst.Assign) -> None:
            for target in node.targets:
                t = target.target
                if isinstance(t, cst.Attribute) and isinstance(t.value, cst.Name) and t.value.value == "self" and t.attr.value == attr:
                    values.append(node.value)

        def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
            t = node.target
            if node.value is not None and isinstance(t, cst.Attribute) and isinstance(t.value, cst.Name) and t.value.value == "self" and t.attr.value == attr:
                values.append(node.value)

    cls.visit(Collect())
    return values


def find_call_sites(ctx: ModuleContext, extra_functions: dict[str, str] | None = None) -> list[CallSite]:
    functions = {**FUNCTIONS, **(extra_functions or {})}
    resolver = ClientResolver(ctx)
    sites = []
    for call in ctx.nodes(cst.Call):
        site = _site(ctx, resolver, call, functions)
        if site is not None:
            sites.append(site)
    return sites


def _site(ctx: ModuleContext, resolver: ClientResolver, call: cst.Call, functions: dict[str, str]) -> CallSite | None:
    name = ctx.qualified_name_in(call.func, set(functions))
    if name:
        api, callee = functions[name], name
    else:
        found = _client_method(resolver, call.func)
        if found is None:
            return None
        api, callee = found
    args = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
    return CallSite(call, api, callee, args)


def _client_method(resolver: ClientResolver, func: cst.BaseExpression) -> tuple[str, str] | None:
    """(api, "messages.create") when `func` is a completion method on a resolvable client."""
    _, path = _attribute_path(func)
    if len(path) < 2 or path[-1] not in ("create", "stream", "parse"):
        return None
    head = func
    for split in range(len(path) - 1, -1, -1):  # client.x.y.create: the client is `head` after `split` names
        head = head.value  # type: ignore[attr-defined]
        method = path[split:]
        if len(method) < 2:
            continue
        provider = resolver.provider(head)
        if provider and method in CLIENT_METHODS[provider]:
            return CLIENT_METHODS[provider][method], ".".join(method)
    return None
