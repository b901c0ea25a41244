"""Where a request is sent: LLM call sites, resolved through imports, variables, parameters and `self`.

A call is an LLM call when its callee is a known completion method on a client that provably comes from a
known SDK constructor (or a known module-level function such as `litellm.completion`), never because a
variable happens to be called `client`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from weakref import WeakKeyDictionary

import libcst as cst

from cachelint.check.module import ModuleContext, argument_for, called_name, last_name

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
        ("beta", "prompt_caching", "messages", "create"): "anthropic",
        ("beta", "prompt_caching", "messages", "stream"): "anthropic",
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
    "litellm.completion_with_retries": "openai-chat",  # the same request, retried by litellm (tenacity)
    "litellm.acompletion_with_retries": "openai-chat",
    "openai.ChatCompletion.create": "openai-chat",  # openai < 1.0, still common in real code
    "openai.ChatCompletion.acreate": "openai-chat",
}
# client.messages.with_raw_response.create(...): the same request, another way to read the response
RESPONSE_WRAPPERS = frozenset({"with_raw_response", "with_streaming_response"})
# a completion method on a receiver nobody can resolve (a framework injects the client): recognized by its
# shape only, when the call also passes the keywords that method requires
SHAPES: dict[tuple[str, ...], tuple[str, tuple[str, ...]]] = {
    ("chat", "completions", "create"): ("openai-chat", ("messages",)),
    ("chat", "completions", "acreate"): ("openai-chat", ("messages",)),
    ("chat", "completions", "parse"): ("openai-chat", ("messages",)),
    ("messages", "create"): ("anthropic", ("model", "messages")),
    ("messages", "stream"): ("anthropic", ("model", "messages")),
    ("responses", "create"): ("openai-responses", ("model", "input")),
}
CERTAIN, LIKELY = "certain", "likely"
PREFIX_ARGS = ("system", "tools", "messages", "instructions", "input", "tool_choice", "model", "thinking", "extra_headers", "betas")
MAX_DEPTH = 6


@dataclass(slots=True)
class CallSite:
    node: cst.Call
    api: str  # anthropic | openai-chat | openai-responses | bedrock-converse
    callee: str  # messages.create, litellm.completion, ...
    args: dict[str, cst.BaseExpression] = field(default_factory=dict)
    confidence: str = CERTAIN  # certain: a resolved SDK call; likely: only the call's shape says so
    http: bool = False  # posted by hand to the provider's HTTP API (`requests.post(url, json=payload)`)
    forwarded: bool = False  # a call of the module's own wrapper around the request (`self.basic_request(prompt, **kw)`)

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
        if isinstance(expr, cst.BooleanOperation) and isinstance(expr.operator, cst.Or):  # client or AsyncAnthropic()
            return self.provider(expr.right, depth + 1) or self.provider(expr.left, depth + 1)
        if isinstance(expr, cst.IfExp):  # client if client is not None else Anthropic()
            return self.provider(expr.orelse, depth + 1) or self.provider(expr.body, depth + 1)
        if isinstance(expr, cst.Call):
            name = self.ctx.qualified_name_in(expr.func, set(self.constructors))
            if name:
                return self.constructors[name]
            if _bedrock_client(expr):
                return "bedrock"
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
        for method in self.ctx.functions.get(f"{cls.name.value}.{wanted}", []):  # @cached_property def client(self): ...
            if _is_property(method):
                annotation = method.returns.annotation if method.returns is not None else None
                name = self.ctx.qualified_name_in(annotation, set(self.constructors)) if annotation is not None else None
                if name:
                    return self.constructors[name]
                for value in self.ctx.returns_of(method):
                    found = self.provider(value, depth + 1)
                    if found:
                        return found
        for stmt in cls.body.body:  # class-level annotation: client: Anthropic
            if isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    if isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name) and small.target.value == wanted:
                        name = self.ctx.qualified_name_in(small.annotation.annotation, set(self.constructors))
                        if name:
                            return self.constructors[name]
                        if small.value is not None:
                            found = self.provider(small.value, depth + 1)
                            if found:
                                return found
                    if isinstance(small, cst.Assign) and any(isinstance(t.target, cst.Name) and t.target.value == wanted for t in small.targets):
                        found = self.provider(small.value, depth + 1)  # class Bot: client = OpenAI()
                        if found:
                            return found
        return None

    def _from_function_returns(self, call: cst.Call, depth: int) -> str | None:
        for function in self.ctx.called_functions(call):
            for value in self.ctx.returns_of(function):
                found = self.provider(value, depth + 1)
                if found:
                    return found
        return None


def _is_property(function: cst.FunctionDef) -> bool:
    """Decorated `@property`, `@cached_property` or `@functools.cached_property`: read as an attribute."""
    for decorator in function.decorators:
        node = decorator.decorator
        name = node.attr.value if isinstance(node, cst.Attribute) else node.value if isinstance(node, cst.Name) else ""
        if name in ("property", "cached_property"):
            return True
    return False


def _self_assignments(ctx: ModuleContext, cls: cst.ClassDef, attr: str) -> list[cst.BaseExpression]:
    """The values assigned to `self.<attr>` (plain and annotated assignments) anywhere in the class, in source order."""
    return [node.value for node in ctx.self_assignments(cls).get(attr, ())
            if isinstance(node, (cst.Assign, cst.AnnAssign)) and node.value is not None]


def find_call_sites(ctx: ModuleContext, extra_functions: dict[str, str] | None = None) -> list[CallSite]:
    functions = {**FUNCTIONS, **(extra_functions or {})}
    resolver = ClientResolver(ctx)
    aliases = _alias_names(ctx)
    tails = _tails(ctx, functions, aliases)
    sites = []
    bedrock = "bedrock-runtime" in ctx.source
    for call in ctx.nodes(cst.Call):
        site = _site(ctx, resolver, call, functions, aliases, tails) or _http_site(ctx, call)
        if site is None and bedrock:
            site = _bedrock_site(ctx, resolver, call)
        if site is not None:
            sites.append(site)
    sites += _forwarding_wrappers(ctx, resolver, functions, aliases, sites)
    return sites or prompt_shaped_sites(ctx)


_MODULE_SITES: "WeakKeyDictionary[ModuleContext, list[CallSite]]" = WeakKeyDictionary()


def module_sites(ctx: ModuleContext) -> list[CallSite]:
    """The module's requests (no configured call patterns), found once per module: asked of other modules of the tree
    (a sender a loop hands its messages to) and by rules that only need to know which functions send."""
    found = _MODULE_SITES.get(ctx)
    if found is None:
        found = _MODULE_SITES[ctx] = find_call_sites(ctx)
    return found


def _forwarding_wrappers(ctx: ModuleContext, resolver: ClientResolver, functions: dict[str, str], aliases: set[str],
                         sites: list[CallSite]) -> list[CallSite]:
    """A function of the module that forwards its `**kwargs` to a request, itself
    (`def create_with_backoff(**kwargs): return client.chat.completions.create(**kwargs)`) or by handing the SDK
    method to a retry helper (`create_retrying(client.messages.create, **kwargs)`): each call of it in the module
    is the request, with the arguments that call passes."""
    wrappers: dict[int, tuple[str, str, str]] = {}  # id(function) -> (api, callee, confidence)
    by_node = {id(site.node): site for site in sites}
    for call in ctx.nodes(cst.Call):  # calls that pass `**name` on, where `name` is their function's `**kwargs`
        forwarded = next((a.value.value for a in call.args if a.star == "**" and isinstance(a.value, cst.Name)), None)
        function = ctx.enclosing_function(call) if forwarded is not None else None
        star = function.params.star_kwarg if function is not None else None
        if not isinstance(star, cst.Param) or star.name.value != forwarded or id(function) in wrappers:
            continue
        site = by_node.get(id(call))
        if site is not None:
            wrappers[id(function)] = (site.api, site.callee, site.confidence)
            continue
        for arg in call.args:
            if arg.keyword is None and not arg.star and isinstance(arg.value, cst.Attribute):
                found = _callee(ctx, resolver, arg.value, functions, aliases, 0)
                if found is not None:
                    wrappers[id(function)] = (found[0], found[1], CERTAIN)
                    break
    if not wrappers:
        return []
    found_sites = []
    for call in ctx.nodes(cst.Call):
        for function in ctx.called_functions(call):
            wrapped = wrappers.get(id(function))
            if wrapped is not None and ctx.enclosing_function(call) is not function:
                api, callee, confidence = wrapped
                found_sites.append(CallSite(call, api, f"{function.name.value} ({callee})", call_arguments(ctx, call), confidence,
                                            forwarded=True))
    return found_sites



# --- a request posted to a provider's HTTP API directly ------------------------------------------------------

# the endpoint a URL ends with -> the API it speaks
ENDPOINTS = ((re.compile(r"/chat/completions/?$"), "openai-chat"), (re.compile(r"/v1/responses/?$"), "openai-responses"),
             (re.compile(r"/v1/messages/?$"), "anthropic"))
ANTHROPIC_HEADERS = frozenset({"anthropic-version", "anthropic-beta"})
HTTP_METHODS = frozenset({"post", "apost"})


# Amazon Bedrock's runtime client (boto3): Converse takes the messages, the system blocks and the tools in its own
# fields (cache points are `{"cachePoint": {...}}` blocks); InvokeModel takes an Anthropic Messages body as JSON
BEDROCK_CONVERSE = frozenset({"converse", "converse_stream"})
BEDROCK_INVOKE = frozenset({"invoke_model", "invoke_model_with_response_stream"})


def _bedrock_client(call: cst.Call) -> bool:
    """`boto3.client("bedrock-runtime")`, `session.client(service_name="bedrock-runtime", ...)`."""
    from cachelint.check.values import string_value

    if last_name(call.func) != "client":
        return False
    service = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == "service_name"), None)
    if service is None and call.args and call.args[0].keyword is None:
        service = call.args[0].value
    return service is not None and string_value(service) == "bedrock-runtime"


def _bedrock_site(ctx: ModuleContext, resolver: ClientResolver, call: cst.Call) -> CallSite | None:
    """A Converse request (api `bedrock-converse`: `modelId` is its model, `toolConfig`'s tools its tools), or an
    InvokeModel request whose body is an Anthropic Messages body (`json.dumps({"anthropic_version": ...,
    "messages": ...})`, api `anthropic`), on a Bedrock runtime client."""
    from cachelint.check.values import string_value

    func = call.func
    if not isinstance(func, cst.Attribute) or func.attr.value not in BEDROCK_CONVERSE | BEDROCK_INVOKE:
        return None
    if resolver.provider(func.value) != "bedrock":
        return None
    given = call_arguments(ctx, call)
    args: dict[str, cst.BaseExpression] = {}
    if "modelId" in given:
        args["model"] = given["modelId"]
    if func.attr.value in BEDROCK_CONVERSE:
        for key in ("system", "messages"):
            if key in given:
                args[key] = given[key]
        config = given.get("toolConfig")
        if config is not None:
            entries = dict_entries(ctx, config, 0)
            args["tools"] = entries.get("tools", config)
            if "toolChoice" in entries:
                args["tool_choice"] = entries["toolChoice"]
        return CallSite(call, "bedrock-converse", f"bedrock.{func.attr.value}", args)
    body = given.get("body")
    if isinstance(body, cst.Call) and last_name(body.func) == "dumps" and body.args:
        body = body.args[0].value
    entries = dict_entries(ctx, body, 0) if body is not None else {}
    if "messages" not in entries:
        return None  # a body of another model family, or one built out of sight
    model = string_value(args["model"]) if "model" in args else None
    if model is not None and not re.search(r"claude|anthropic", model, re.I):
        return None  # another model family's body on Bedrock
    args.update({k: v for k, v in entries.items() if k != "anthropic_version"})
    return CallSite(call, "anthropic", f"bedrock.{func.attr.value}", args)


def _http_site(ctx: ModuleContext, call: cst.Call) -> CallSite | None:
    """`requests.post(f"{base}/v1/messages", json=payload, headers=...)` (or httpx, aiohttp, a session's post):
    a request to a provider's HTTP API, recognized by the endpoint its URL ends with or by Anthropic's version
    header, with the payload's keys as its arguments (`likely`: nothing says the URL is the provider's)."""
    func = call.func
    if not isinstance(func, cst.Attribute) or func.attr.value not in HTTP_METHODS:
        return None
    keywords = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
    payload = keywords.get("json")
    data = keywords.get("data")
    if payload is None and isinstance(data, cst.Call) and ctx.qualified_name_in(data.func, {"json.dumps"}) and data.args:
        payload = data.args[0].value
    if payload is None:
        return None
    url = keywords.get("url") or next((a.value for a in call.args if a.keyword is None and not a.star), None)
    api = _endpoint_api(ctx, url)
    headers = keywords.get("headers")
    if api is None and headers is not None and ANTHROPIC_HEADERS & set(dict_entries(ctx, headers, 0)):
        api = "anthropic"
    if api is None:
        return None
    args = dict_entries(ctx, payload, 0)
    if "messages" not in args and "input" not in args:
        return None
    return CallSite(call, api, ctx.code(func), args, LIKELY, http=True)  # "requests.post() on line 12"


def _endpoint_api(ctx: ModuleContext, url: cst.BaseExpression | None, depth: int = 0) -> str | None:
    """The API a URL expression ends with: a literal, an f-string or `+` ending in it, or a name assigned one."""
    from cachelint.check.values import string_value

    if url is None or depth > 2:
        return None
    tail = None
    if isinstance(url, cst.FormattedString):
        last = url.parts[-1] if url.parts else None
        tail = last.value if isinstance(last, cst.FormattedStringText) else None
    elif isinstance(url, cst.BinaryOperation) and isinstance(url.operator, cst.Add):
        return _endpoint_api(ctx, url.right, depth + 1)
    elif isinstance(url, cst.Name):
        for _, value in ctx.assigned_values(url):
            found = _endpoint_api(ctx, value, depth + 1) if value is not None else None
            if found:
                return found
        return None
    elif isinstance(url, cst.Attribute) and isinstance(url.value, cst.Name) and url.value.value == "self":
        cls = ctx.enclosing(url, (cst.ClassDef,))  # `self.base_url = "https://api.openai.com/v1/responses"` in __init__
        for value in _self_assignments(ctx, cls, url.attr.value) if isinstance(cls, cst.ClassDef) else ():
            found = _endpoint_api(ctx, value, depth + 1)
            if found:
                return found
        return None
    else:
        tail = string_value(url)
    if tail is None:
        return None
    return next((api for pattern, api in ENDPOINTS if pattern.search(tail)), None)


def prompt_shaped_sites(ctx: ModuleContext) -> list[CallSite]:
    """A module that builds prompts but sends them elsewhere (a framework, another package): each outermost
    list literal of messages with a system (or developer) message stands for a request, with confidence
    `likely`: only the data's shape says it is a prompt."""

    def shaped(node: cst.List) -> bool:
        for element in node.elements:
            value = element.value
            if is_system_message(value) and message_content(value) is not None:
                return True
        return False

    found = [node for node in ctx.nodes(cst.List) if shaped(node) and not added_after_history(ctx, node)]
    outermost = [n for n in found if not any(ctx.contains(other, n) for other in found if other is not n)]
    sites = []
    for node in outermost:
        messages: cst.BaseExpression = node
        target = ctx.parent(node)
        if isinstance(target, cst.Assign) and len(target.targets) == 1 and isinstance(target.targets[0].target, cst.Name):
            messages = target.targets[0].target  # messages = [system]; messages.append(...): the name, with its appends
        sites.append(CallSite(node, "openai-chat", "message list", {"messages": messages}, LIKELY))  # type: ignore[arg-type]
    return sites


def added_after_history(ctx: ModuleContext, listed: cst.List) -> bool:
    """`history + [{"role": "system", ...}]`: a list literal added after a history, whose messages are the newest
    ones (after another literal, `[system] + [message]`, it still opens a prompt)."""
    holder = ctx.parent(listed)
    return isinstance(holder, cst.BinaryOperation) and isinstance(holder.operator, cst.Add) and holder.right is listed \
        and not isinstance(holder.left, cst.List)


def message_content(expr: cst.BaseExpression) -> cst.BaseExpression | None:
    """The `content` of a message written as a dict literal or as `dict(role=..., content=...)`."""
    from cachelint.check.values import message_fields

    return (message_fields(expr) or {}).get("content")


def is_system_message(expr: cst.BaseExpression) -> bool:
    """A dict literal {"role": "system" | "developer", ...} (or `dict(role="system", ...)`): instructions, never the
    newest turn."""
    from cachelint.check.values import message_fields, string_value

    if isinstance(expr, cst.Call) and not (isinstance(expr.func, cst.Name) and expr.func.value == "dict"):
        return False
    return string_value((message_fields(expr) or {}).get("role")) in ("system", "developer")


def _alias_names(ctx: ModuleContext) -> set[str]:
    """Names (and `self` attributes) assigned a name, an attribute or a call of `partial`: only calls of
    these can be an SDK function under another name, so only these are looked up."""
    found: set[str] = set()
    for assign in ctx.nodes(cst.Assign):
        value = assign.value
        if isinstance(value, (cst.Name, cst.Attribute)) or (isinstance(value, cst.Call) and isinstance(value.func, (cst.Name, cst.Attribute))
                                                            and (value.func.value if isinstance(value.func, cst.Name) else value.func.attr.value) in ("partial", "staticmethod")):
            for target in assign.targets:
                t = target.target
                if isinstance(t, cst.Name):
                    found.add(t.value)
                elif isinstance(t, cst.Attribute):
                    found.add(t.attr.value)
    return found


_METHOD_TAILS = frozenset({"create", "stream", "parse", "acreate"})
_SDK_SEGMENTS = frozenset({"messages", "completions", "responses", "ChatCompletion", "prompt_caching"})
# an attribute or local that holds an SDK resource: `self._messages_api.create(...)`, `completions.create(...)`
_RESOURCE_NAME = re.compile(r"messages|completions|responses", re.I)


def _tails(ctx: ModuleContext, functions: dict[str, str], aliases: set[str]) -> set[str]:
    """The last names a request's callee can have: the SDK methods, the known functions (and names they are
    imported as), and the module's aliases. A call whose callee ends otherwise is never resolved, so the costly
    name metadata is computed only for modules with a candidate call."""
    tails = {"create", "stream", "parse", "acreate", *(name.rsplit(".", 1)[-1] for name in functions), *aliases, *WRAPPER_METHODS}
    for node in ctx.nodes(cst.ImportAlias):
        if node.asname is not None and isinstance(node.asname.name, cst.Name):
            tails.add(node.asname.name.value)
    return tails


def _site(ctx: ModuleContext, resolver: ClientResolver, call: cst.Call, functions: dict[str, str], aliases: set[str],
          tails: set[str] | None = None) -> CallSite | None:
    handed = _handed_method(ctx, resolver, call, functions, aliases, tails)
    if handed is not None:
        return handed
    if tails is not None:
        func = call.func
        called = func.value if isinstance(func, cst.Name) else func.attr.value if isinstance(func, cst.Attribute) else None
        if called not in tails:
            return None
        if called in _METHOD_TAILS and called not in aliases and isinstance(func, cst.Attribute):
            _, path = _attribute_path(func)
            if not _SDK_SEGMENTS.intersection(path[:-1]) and not (len(path) == 2 and _RESOURCE_NAME.search(path[0])):
                return None  # Model.objects.create(...), builder.parse(...): not a completion method
    found = _callee(ctx, resolver, call.func, functions, aliases, 0)
    if found is None:
        return _shaped_site(ctx, call)
    api, callee, bound = found
    return CallSite(call, api, callee, {**bound, **call_arguments(ctx, call)})


# run a function given as the first argument with the arguments after it, in a thread or an executor
THREAD_RUNNERS = frozenset({"to_thread", "run_in_executor", "run_sync", "submit"})


def _handed_method(ctx: ModuleContext, resolver: ClientResolver, call: cst.Call, functions: dict[str, str], aliases: set[str],
                   tails: set[str] | None) -> CallSite | None:
    """An SDK method handed to a helper that calls it: a retry wrapper whose result is called with the request's
    arguments (`retry_on_exception(self.client.messages.create, should_retry)(**params)`), or a runner that calls
    it in a thread with the arguments after it (`await asyncio.to_thread(client.messages.create, **params)`)."""
    if isinstance(call.func, cst.Call):
        handed, passed = [a.value for a in call.func.args if a.keyword is None and not a.star], call
    elif last_name(call.func) in THREAD_RUNNERS:
        positional = [a for a in call.args if a.keyword is None and not a.star]
        skip = 1 if last_name(call.func) == "run_in_executor" else 0  # loop.run_in_executor(None, fn, ...)
        handed, passed = [a.value for a in positional[skip:skip + 1]], call
    else:
        return None
    for value in handed:
        given: dict[str, cst.BaseExpression] = {}
        if isinstance(value, cst.Call) and last_name(value.func) == "partial" and value.args and value.args[0].keyword is None:
            given = call_arguments(ctx, value)  # run_in_executor(None, functools.partial(client.messages.create, **request))
            value = value.args[0].value
        if not isinstance(value, (cst.Attribute, cst.Name)):
            continue
        last = value.attr.value if isinstance(value, cst.Attribute) else value.value
        if tails is not None and last not in tails:
            continue
        found = _callee(ctx, resolver, value, functions, aliases, 0)
        if found is not None:
            api, callee, bound = found
            return CallSite(call, api, callee, {**bound, **given, **call_arguments(ctx, passed)})
    return None


def _callee(ctx: ModuleContext, resolver: ClientResolver, func: cst.BaseExpression, functions: dict[str, str], aliases: set[str], depth: int) -> tuple[str, str, dict[str, cst.BaseExpression]] | None:
    """(api, callee, arguments bound in advance) when calling `func` sends a request.

    `func` is an SDK function or client method, or a name / attribute of `self` (an instance or class
    attribute) bound to one, directly or through `functools.partial` (whose keywords are bound in advance)."""
    if depth > 4:
        return None
    name = ctx.qualified_name_in(func, set(functions))
    if name:
        return functions[name], name, {}
    method = _client_method(resolver, func)
    if method is not None:
        return method[0], method[1], {}
    called = func.value if isinstance(func, cst.Name) else func.attr.value if isinstance(func, cst.Attribute) else None
    if called not in aliases:
        return None
    for value in _bound_values(ctx, func):
        if isinstance(value, cst.Call) and ctx.qualified_name_in(value.func, {"functools.partial", "builtins.staticmethod"}) and value.args:
            inner = _callee(ctx, resolver, value.args[0].value, functions, aliases, depth + 1)
            if inner is not None:
                bound = {a.keyword.value: a.value for a in value.args[1:] if a.keyword is not None}
                return inner[0], inner[1], {**bound, **inner[2]}
        elif isinstance(value, (cst.Name, cst.Attribute)):
            inner = _callee(ctx, resolver, value, functions, aliases, depth + 1)
            if inner is not None:
                return inner
    return None


def _bound_values(ctx: ModuleContext, func: cst.BaseExpression) -> list[cst.BaseExpression]:
    """What a called name or `self.attr` was assigned (in its scope, or anywhere in the class for `self`)."""
    if isinstance(func, cst.Name):
        return [value for _, value in ctx.assigned_values(func) if value is not None]
    if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value in ("self", "cls"):
        cls = ctx.enclosing(func, (cst.ClassDef,))
        if not isinstance(cls, cst.ClassDef):
            return []
        values = _self_assignments(ctx, cls, func.attr.value)
        for stmt in cls.body.body:
            if isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    if isinstance(small, cst.Assign) and any(isinstance(t.target, cst.Name) and t.target.value == func.attr.value for t in small.targets):
                        values.append(small.value)
        return values
    return []


def call_arguments(ctx: ModuleContext, call: cst.Call) -> dict[str, cst.BaseExpression]:
    """The keyword arguments of a call; `**params` contributes the keys its dict is known to hold."""
    args: dict[str, cst.BaseExpression] = {}
    for a in call.args:
        if a.keyword is not None:
            args[a.keyword.value] = a.value
        elif a.star == "**":
            for key, value in dict_entries(ctx, a.value, 0).items():
                args.setdefault(key, value)
    return args


# a helper (a library's or the module's) that returns the dict it is given less the keys left unset:
# remove_not_given(kwargs), drop_none(d); followed to the dict it is given, not into its body
DICT_FILTER = re.compile(r"^_?(?:remove|strip|drop|filter|clean|prune|omit|without|compact)(?:_\w+)?$|not_?given", re.I)


def dict_entries(ctx: ModuleContext, expr: cst.BaseExpression, depth: int) -> dict[str, cst.BaseExpression]:
    """The string keys a dict is known to hold and the expressions set for them: a literal, `dict(...)`,
    `{**base, ...}`, a name assigned one of these, keys set with `d["k"] = v` or `d.update(...)` in the
    name's scope, or the return value of a function of this module. The last setting of a key wins."""
    from cachelint.check.values import string_value

    entries: dict[str, cst.BaseExpression] = {}
    if depth > 4:
        return entries
    if isinstance(expr, cst.Dict):
        for element in expr.elements:
            if isinstance(element, cst.StarredDictElement):
                entries.update(dict_entries(ctx, element.value, depth + 1))
            else:
                key = string_value(element.key)
                if key is not None:
                    entries[key] = element.value
    elif isinstance(expr, cst.Call):
        if ctx.qualified_name_in(expr.func, {"builtins.dict"}):
            for a in expr.args:
                if a.keyword is not None:
                    entries[a.keyword.value] = a.value
                else:
                    entries.update(dict_entries(ctx, a.value, depth + 1))
        elif isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "copy":
            entries.update(dict_entries(ctx, expr.func.value, depth + 1))
        elif DICT_FILTER.search(called_name(expr)) and expr.args and not expr.args[0].keyword:
            entries.update(dict_entries(ctx, expr.args[0].value, depth + 1))  # remove_not_given(kwargs): the keys set, less unset ones
        else:
            for function in ctx.called_functions(expr):
                for value in ctx.returns_of(function):
                    entries.update(dict_entries(ctx, value, depth + 1))
    elif isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.BitOr):  # kwargs | self.hyperparams
        entries.update(dict_entries(ctx, expr.left, depth + 1))
        entries.update(dict_entries(ctx, expr.right, depth + 1))
    elif isinstance(expr, cst.DictComp) and isinstance(expr.for_in.iter, cst.Call) and isinstance(expr.for_in.iter.func, cst.Attribute) \
            and expr.for_in.iter.func.attr.value == "items":
        entries.update(dict_entries(ctx, expr.for_in.iter.func.value, depth + 1))  # {k: v for k, v in kwargs.items() if v is not None}
    elif isinstance(expr, cst.Name):
        for binding, value in ctx.assigned_values(expr):
            for found in [value] if value is not None else unpacked_values(ctx, binding):
                entries.update(dict_entries(ctx, found, depth + 1))
            if isinstance(binding, cst.Param) and value is None:
                entries.update(_passed_entries(ctx, binding, depth))
        scope = ctx.scope_of(expr)
        for assign in ctx.subscript_assignments.get(expr.value, []):
            for target in assign.targets:
                t = target.target
                if isinstance(t, cst.Subscript) and isinstance(t.value, cst.Name) and ctx.scope_of(t.value) is scope and len(t.slice) == 1:
                    index = t.slice[0].slice
                    key = string_value(index.value) if isinstance(index, cst.Index) else None
                    if key is not None:
                        entries[key] = assign.value
        for update in ctx.calls_on.get(expr.value, []):
            if update.func.attr.value == "update" and ctx.scope_of(update.func.value) is scope:  # type: ignore[attr-defined]
                for a in update.args:
                    if a.keyword is not None:
                        entries[a.keyword.value] = a.value
                    else:
                        entries.update(dict_entries(ctx, a.value, depth + 1))
    return entries


def _passed_entries(ctx: ModuleContext, param: cst.Param, depth: int) -> dict[str, cst.BaseExpression]:
    """The keys of the dicts this module's callers pass for a parameter (`self._send(request_params)`)."""
    from cachelint.check.values import callers

    function = ctx.enclosing_function(param)
    if function is None:
        return {}
    params = [p for p in function.params.params if p.name.value not in ("self", "cls")]
    position = next((i for i, p in enumerate(params) if p is param), -1)
    entries: dict[str, cst.BaseExpression] = {}
    for call in callers(ctx, function)[:4]:
        argument = argument_for(call, param.name.value, position)
        if argument is not None:
            entries.update(dict_entries(ctx, argument, depth + 1))
    return entries


def tuple_assignment(ctx: ModuleContext, binding: cst.CSTNode | None) -> tuple[cst.Assign, int, int] | None:
    """(the assignment, the name's position, the number of names) for a name bound by `a, b = ...`; None for any
    other binding."""
    element = ctx.parent(binding) if binding is not None else None
    target = ctx.parent(element) if isinstance(element, cst.Element) else None
    holder = ctx.parent(target) if isinstance(target, (cst.Tuple, cst.List)) else None
    assign = ctx.parent(holder) if isinstance(holder, cst.AssignTarget) else None
    if not isinstance(assign, cst.Assign) or not isinstance(target, (cst.Tuple, cst.List)):
        return None
    return assign, next(i for i, e in enumerate(target.elements) if e is element), len(target.elements)


def unpacked_values(ctx: ModuleContext, binding: cst.CSTNode, into_functions: bool = True) -> list[cst.BaseExpression]:
    """What a name gets from a tuple assignment: `a, b = x, y` (the element at its position), `headers, payload =
    build(...)` (the element at its position in what that function of the module returns; with `into_functions`
    False, or for a function not of this module, the call)."""
    found_assignment = tuple_assignment(ctx, binding)
    if found_assignment is None:
        return []
    assign, position, width = found_assignment
    value = assign.value.expression if isinstance(assign.value, cst.Await) else assign.value
    candidates = [value]
    if isinstance(value, cst.Call) and into_functions:
        candidates = [v for function in ctx.called_functions(value) for v in ctx.returns_of(function)] or [value]
    found = []
    for candidate in candidates:
        if isinstance(candidate, (cst.Tuple, cst.List)):
            if len(candidate.elements) == width:
                found.append(candidate.elements[position].value)
        else:
            found.append(candidate)
    return found


def _shaped_site(ctx: ModuleContext, call: cst.Call) -> CallSite | None:
    """`x.chat.completions.create(messages=...)` on a receiver nobody can resolve: likely a request. So is
    `litellm.completion(...)` where `litellm` is a global the module never binds (a framework injects it)."""
    if _injected_function(ctx, call):
        args = call_arguments(ctx, call)
        return CallSite(call, "openai-chat", ctx.code(call.func), args, LIKELY) if "messages" in args else None
    if _wrapper_completion(call):
        args = call_arguments(ctx, call)
        return CallSite(call, "openai-chat", ctx.code(call.func), args, LIKELY) if "messages" in args else None
    if not isinstance(call.func, cst.Attribute) or call.func.attr.value not in ("create", "acreate", "parse", "stream"):
        return None
    _, path = _attribute_path(call.func)
    path = tuple(p for p in path if p not in RESPONSE_WRAPPERS)
    for length in (3, 2):
        shape = SHAPES.get(path[-length:]) if len(path) >= length else None
        if shape is not None:
            args = call_arguments(ctx, call)
            if all(k in args for k in shape[1]):
                return CallSite(call, shape[0], ".".join(path[-length:]), args, LIKELY)
    return None


# a project's LLM wrapper by its receiver's name: `self.llm.completion(messages=...)`, `llm_client.acompletion(...)`,
# `client.create_completion(model=model, messages=messages, tools=tools)` (a provider-neutral client: chuk-llm's)
WRAPPER_RECEIVER = re.compile(r"llm|client|model|provider", re.I)
WRAPPER_METHODS = frozenset({"completion", "acompletion", "chat_completion", "achat_completion",
                             "create_completion", "acreate_completion", "get_completion", "aget_completion",
                             "create_chat_completion"})  # llama-cpp-python's `Llama.create_chat_completion`


def _wrapper_completion(call: cst.Call) -> bool:
    """`self.llm.completion(messages=messages, tools=tools)`: a completion method, called with the conversation by
    keyword, on an object named for an LLM or a client (the wrapper is defined elsewhere or out of sight)."""
    func = call.func
    if not (isinstance(func, cst.Attribute) and func.attr.value in WRAPPER_METHODS):
        return False
    receiver = func.value.attr.value if isinstance(func.value, cst.Attribute) else func.value.value if isinstance(func.value, cst.Name) else ""
    return receiver != "litellm" and WRAPPER_RECEIVER.search(receiver) is not None \
        and any(a.keyword is not None and a.keyword.value == "messages" for a in call.args)


def _injected_function(ctx: ModuleContext, call: cst.Call) -> bool:
    """`litellm.completion(...)` on a name with no binding in the module (no import, no assignment)."""
    func = call.func
    if not (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and f"{func.value.value}.{func.attr.value}" in FUNCTIONS):
        return False
    return not any(True for _ in ctx.assigned_values(func.value))


def _client_method(resolver: ClientResolver, func: cst.BaseExpression) -> tuple[str, str] | None:
    """(api, "messages.create") when `func` is a completion method on a resolvable client."""
    _, path = _attribute_path(func)
    if len(path) < 2 or path[-1] not in ("create", "stream", "parse"):
        return None
    head = func
    for split in range(len(path) - 1, -1, -1):  # client.x.y.create: the client is `head` after `split` names
        head = head.value  # type: ignore[attr-defined]
        method = tuple(p for p in path[split:] if p not in RESPONSE_WRAPPERS)
        if len(method) < 2:
            continue
        provider = resolver.provider(head)
        if provider and method in CLIENT_METHODS[provider]:
            return CLIENT_METHODS[provider][method], ".".join(method)
    if isinstance(func, cst.Attribute):  # api = client.messages; api.create(...), or a property returning it
        found = _resource(resolver, func.value, 0)
        if found is not None:
            method = tuple(p for p in (*found[1], path[-1]) if p not in RESPONSE_WRAPPERS)
            if method in CLIENT_METHODS[found[0]]:
                return CLIENT_METHODS[found[0]][method], ".".join(method)
    return None


def _resource(resolver: ClientResolver, expr: cst.BaseExpression, depth: int) -> tuple[str, tuple[str, ...]] | None:
    """(provider, path) when `expr` is a client or one of its resources: `client.messages`, a local bound to it
    (`api = self.client.beta.messages`), or a property of the class that returns it (`@property def _messages_api(self):
    return self.client.messages`, which a subclass may override to use the beta API)."""
    if depth > 3:
        return None
    provider = resolver.provider(expr)
    if provider:
        return provider, ()
    ctx = resolver.ctx
    if isinstance(expr, cst.Attribute) and not (isinstance(expr.value, cst.Name) and expr.value.value in ("self", "cls")):
        inner = _resource(resolver, expr.value, depth + 1)
        return (inner[0], (*inner[1], expr.attr.value)) if inner is not None else None
    values: list[cst.BaseExpression] = []
    if isinstance(expr, cst.Name):
        values = [value for _, value in ctx.assigned_values(expr) if value is not None]
    elif isinstance(expr, cst.Attribute):
        cls = ctx.enclosing(expr, (cst.ClassDef,))
        if isinstance(cls, cst.ClassDef):
            values = _self_assignments(ctx, cls, expr.attr.value)
            for method in ctx.functions.get(f"{cls.name.value}.{expr.attr.value}", []):
                if _is_property(method):
                    values += list(ctx.returns_of(method))
    for value in values:
        if isinstance(value, cst.Attribute):
            found = _resource(resolver, value, depth + 1)
            if found is not None and found[1]:
                return found
    return None
