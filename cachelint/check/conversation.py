"""Requests of one conversation that differ: what CL202 / CL203 / CL401 / CL402 ask about two turns.

A conversation is a history that is sent again and again (the same name, `self` attribute or object, in one
function, loop or class). Its cached prefix is keyed by everything that precedes the history: the model, the
tools, `tool_choice` and thinking settings. When two requests of the same history differ there, the second
one reads nothing the first one cached. The shapes found here, each seen on real applications:

- two call sites that send the same history with different tools or parameters (a follow-up after the tool
  results sent without `tools`, a second call with another model): `differing_requests`;
- an LLM callable chosen per call from a factory (`llm = self.get_llm(AGENT_NAME)`) while the same
  conversation object is passed to each (`await llm(convo)`), in one function or across a method that
  continues the caller's conversation: `factory_switches`;
- a hand-off: the object the request's tools or model come from (an agent) reassigned inside the loop
  that keeps the history: `handoffs`;
- a forced `tool_choice` reset once tools have been used: `tool_choice_resets`.

Everything here is bounded: it looks at a module's call sites, the functions around them and their callers in
the same module, never beyond.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from cachelint.check.callsites import LIKELY, CallSite, tuple_assignment
from cachelint.check.depends import parameter_sources, parameters_of, positional_index
from cachelint.check.module import (LIST_GROWERS, ModuleContext, argument_for, called_name, descendants, in_except_handler, makes_a_set, read_names,
                                    short_code, sorted_in, stepping_names)
from cachelint.simulate.models import CACHE_KEY_PARAMS

# a function or method that hands out an LLM (or a model) chosen by its argument: self.get_llm(AGENT_NAME)
FACTORY = re.compile(r"^_?(?:(?:get|make|create|build|new|load|select|pick|choose|resolve)_(?:llm|lm|chat_model|llm_client|agent_llm)"
                     r"|(?:get|select|pick|choose|resolve)_model)$")
# methods of an LLM object that send a request with the conversation as an argument
SEND_METHODS = frozenset({"invoke", "ainvoke", "chat", "achat", "complete", "acomplete", "generate", "agenerate",
                          "completion", "acompletion", "ask", "aask", "query", "predict", "apredict"})
# keywords of a factory call that choose the model (the others, such as stream_output, do not)
SELECTOR_KEYWORDS = frozenset({"name", "agent", "agent_name", "agent_type", "model", "model_name", "llm_name", "role", "kind",
                               "purpose", "task", "profile", "config", "llm_config", "key"})
CONVERSATION_NAME = re.compile(r"convo|conversation|messages|history|transcript|dialog|chat|msgs", re.IGNORECASE)
GROWS = frozenset({"append", "extend", "insert", "user", "assistant", "add", "add_message", "add_messages", "add_user_message",
                   "add_assistant_message"})
# parameters that key the cache besides the tools, per API (tool_choice keys Anthropic's prefix, not OpenAI's)
PARAMS = CACHE_KEY_PARAMS
MAX_DEPTH = 4
MAX_REBINDINGS = 32  # builder rebindings followed back to the object they continue (`convo = convo.template(...)`)


# --- two call sites of one history ---------------------------------------------------------------------------

@dataclass(slots=True)
class Difference:
    first: CallSite
    second: CallSite
    param: str  # tools, model, tool_choice, ...
    node: cst.CSTNode  # where to report: the second request's argument, or the request itself when it lacks it
    how: str  # words for the message
    history: str
    confidence: str


# each request is compared with this many requests before it: a difference with one further back shows between
# two nearer ones too, and a generated file with hundreds of requests on one history stays linear
NEAREST = 32


def differing_requests(ctx: ModuleContext, sites: list[CallSite]) -> Iterator[Difference]:
    """Pairs of requests that send the same history (the same name with the same binding, in one function;
    or the same `self` attribute in one class) with different tools or cache-keying parameters. The later
    request is reported; requests in exclusive branches of one `if` (a configuration switch) are not paired."""
    if len(sites) < 2:
        return
    rough: dict[tuple, list[CallSite]] = {}  # by syntax first: bindings are resolved only where two requests meet
    for site in sites:
        expr = site.arg("messages") if site.api != "openai-responses" else site.arg("input")
        root = _history_root(expr)
        root = _copied_conversation(ctx, root) or root
        if isinstance(site.node, cst.Call) and root is not None:
            holder = ctx.enclosing(site.node, (cst.ClassDef,)) if isinstance(root, cst.Attribute) else ctx.enclosing_function(site.node)
            rough.setdefault((id(holder), _sent_through(ctx, expr), ctx.code(root)), []).append(site)
    groups: dict[tuple, list[CallSite]] = {}
    for candidates in rough.values():
        if len(candidates) < 2:
            continue
        for site in candidates:
            key = _history_key(ctx, site)
            if key is not None:
                groups.setdefault(key, []).append(site)
    for key, group in groups.items():
        if len(group) < 2:
            continue
        group.sort(key=lambda s: (ctx.span(s.node).row, ctx.span(s.node).column))
        reported: set[int] = set()
        for index, second in enumerate(group):
            for first in group[max(0, index - NEAREST):index]:
                if id(second) in reported or first.api != second.api or _exclusive(ctx, first.node, second.node):
                    continue
                if _leaves_after(ctx, first.node, second.node):
                    # `while True: if rounds >= MAX: return create(messages=messages)` above the loop's request with the
                    # tools: the request written first is sent after the other one, once the loop has gone round
                    if id(first) not in reported and _goes_round_to(ctx, second.node, first.node, key[-1]):
                        for difference in _differences(ctx, second, first, key[-1]):
                            reported.add(id(first))
                            yield difference
                    continue
                for difference in _differences(ctx, first, second, key[-1]):
                    reported.add(id(second))
                    yield difference


def _goes_round_to(ctx: ModuleContext, sent: cst.CSTNode, later: cst.CSTNode, history: str) -> bool:
    """`later`, written above `sent` in a loop around both, runs after it once the loop goes round, with the same
    history: the loop keeps the list (it is not bound anew in each pass), nothing after `sent` always leaves, and
    `later` is sent under a test of the loop's step count against its limit (`if rounds >= MAX_STEPS:`), not under a
    setting that never changes between passes (`if stream:`)."""
    from cachelint.check.dropped_tools import last_pass
    from cachelint.check.history import bound_anew_in

    loop = next((a for a in ctx.ancestors(sent) if isinstance(a, (cst.For, cst.While, cst.FunctionDef, cst.Lambda))), None)
    if not isinstance(loop, (cst.For, cst.While)) or not ctx.contains(loop, later):
        return False
    guard = next((a for a in ctx.ancestors(later) if isinstance(a, (cst.If, cst.For, cst.While))), None)
    if not isinstance(guard, cst.If) or not ctx.contains(loop, guard) or not last_pass(ctx, guard.test):
        return False
    return not _leaves_after(ctx, sent, later) and not bound_anew_in(ctx, loop, history)


def _history_key(ctx: ModuleContext, site: CallSite) -> tuple | None:
    expr = site.arg("messages") if site.api != "openai-responses" else site.arg("input")
    root = _history_root(expr)
    if root is None:
        return None
    root = _copied_conversation(ctx, root) or root
    through = _sent_through(ctx, expr)
    if isinstance(root, cst.Attribute):  # self.messages: one conversation per instance, across methods
        cls = ctx.enclosing(site.node, (cst.ClassDef,))
        return ("class", id(cls), through, ctx.code(root)) if cls is not None else None
    function = ctx.enclosing_function(site.node)
    bindings = [b for b, _ in ctx.assigned_values(root)]
    row = ctx.span(site.node).row
    before = [b for b in bindings if ctx.span(b).row <= row]  # the binding that reaches the call (in source order)
    binding = max(before, key=lambda b: ctx.span(b).row, default=None)
    for _ in range(4):  # `history = self._append(history, results)`: the same conversation, rebuilt from itself
        value = _assigned_from(ctx, binding) or _unpacked_from(ctx, binding)
        if value is None or not any(n.value == root.value for n in read_names(ctx, value)):
            break
        earlier = [b for b in bindings if ctx.span(b).row < ctx.span(binding).row]
        if not earlier:
            break
        binding = max(earlier, key=lambda b: ctx.span(b).row)
    if binding is not None and not isinstance(binding, cst.Param) and _fresh_each_time(ctx, binding):
        return None
    return ("function", id(function), id(binding), through, root.value)


def _assigned_from(ctx: ModuleContext, binding: cst.CSTNode | None) -> cst.BaseExpression | None:
    """The value of `name = value` for the name a binding is (None for a parameter or another kind of binding)."""
    parent = ctx.parent(binding) if binding is not None else None
    assign = ctx.parent(parent) if isinstance(parent, cst.AssignTarget) else None
    return assign.value if isinstance(assign, cst.Assign) else None


def _unpacked_from(ctx: ModuleContext, binding: cst.CSTNode | None) -> cst.BaseExpression | None:
    """The whole value of `history, done = step(history, ...)` for one of its names (None for any other binding)."""
    found = tuple_assignment(ctx, binding)
    return found[0].value if found is not None else None


def delegated_requests(ctx: ModuleContext, sites: list[CallSite]) -> list[CallSite]:
    """Calls of this module's own functions that send what they are handed, with no tools of their own:
    `self._chat(history, conf)` where `_chat` sends its `history` parameter as the messages. Each stands for a
    request in the calling function (the usual shape: a tool loop's last word, sent through the plain chat path
    once the rounds run out), so its tools can be compared with the loop's."""
    senders: dict[int, list[tuple[CallSite, str, int]]] = {}
    # a helper that sends tools itself on the same path (a tool loop whose wrap-up request goes without them) is
    # judged inside; one that sends them only in another branch (`if use_tools: ... else: ...`) is a tool-less path
    with_tools: dict[int, list[cst.Call]] = {}
    for site in sites:
        if isinstance(site.node, cst.Call) and _given(site.arg("tools")) is not None:
            with_tools.setdefault(id(ctx.enclosing_function(site.node)), []).append(site.node)
    for site in sites:
        if not isinstance(site.node, cst.Call) or _given(site.arg("tools")) is not None or any(
                not _exclusive(ctx, other, site.node) and not _leaves_after(ctx, other, site.node)
                for other in with_tools.get(id(ctx.enclosing_function(site.node)), ())):
            continue
        function = ctx.enclosing_function(site.node)
        history = site.arg("messages") if site.api != "openai-responses" else site.arg("input")
        if function is None or not isinstance(history, cst.Name):
            continue
        found = parameter_sources(ctx, history, parameters_of(function), within=function)
        if len(found) != 1:
            continue
        senders.setdefault(id(function), []).append((site, found[0], positional_index(function, found[0])))
    if not senders:
        return []
    delegated = []
    # a call that is itself a request with its history in sight (a wrapper forwarding **kwargs) is judged as one
    known = {id(site.node) for site in sites if site.arg("messages") is not None or site.arg("input") is not None}
    for call in ctx.nodes(cst.Call):
        if id(call) in known:
            continue
        for function in ctx.called_functions(call):
            for site, param, position in senders.get(id(function), []):
                passed = argument_for(call, param, position)
                if isinstance(passed, cst.Name) and ctx.enclosing_function(call) is not function:
                    key = "input" if site.api == "openai-responses" else "messages"
                    delegated.append(CallSite(call, site.api, ctx.code(call.func), {key: passed}, site.confidence))
    return delegated


BUILDS_PARAMS = re.compile(r"build|params|kwargs|prepare|payload|body|format", re.IGNORECASE)
COUNTS_TOKENS = re.compile(r"token|count|encode|tokeni[sz]e", re.IGNORECASE)  # litellm.token_counter(messages=..., tools=...)


def wrapper_requests(ctx: ModuleContext, sites: list[CallSite]) -> list[CallSite]:
    """Calls of an LLM wrapper no one recognizes (`self.llm.gen(model=..., messages=messages, tools=...)`) that one
    function makes at least twice with the same history, one of them with `tools=`: the requests of one
    conversation, sent through the app's own client. Stand-ins (likely) so their tools can be compared: the usual
    shape is a tool loop whose wrap-up request, once the rounds run out, says `tools=None`."""
    known = {id(site.node) for site in sites}
    groups: dict[tuple[int, str, str], list[cst.Call]] = {}
    for call in ctx.nodes(cst.Call):
        if id(call) in known:
            continue
        keywords = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
        history = keywords.get("messages")
        function = ctx.enclosing_function(call)
        if function is None or not isinstance(history, cst.Name):
            continue
        if BUILDS_PARAMS.search(called_name(call)) or COUNTS_TOKENS.search(called_name(call)) or isinstance(ctx.parent(ctx.parent(call)), cst.Call):
            continue  # `send(**self._build_params(messages=..., tools=...))`: the arguments of a request, not one; a token count
        groups.setdefault((id(function), ctx.code(call.func), history.value), []).append(call)
    found = []
    for calls in groups.values():
        if len(calls) < 2 or not any(_given(_keyword(call, "tools")) is not None for call in calls):
            continue
        for call in calls:
            args = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
            found.append(CallSite(call, "openai-chat", ctx.code(call.func), args, LIKELY))
    return found


def _keyword(call: cst.Call, name: str) -> cst.BaseExpression | None:
    return next((a.value for a in call.args if a.keyword is not None and a.keyword.value == name), None)


def _history_root(expr: cst.BaseExpression | None) -> cst.Name | cst.Attribute | None:
    """The history a `messages=` argument sends: `history`, `self.messages`, `[system, *history]`, `history + [q]`."""
    if isinstance(expr, cst.Name):
        return expr
    if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self":
        return expr
    if isinstance(expr, cst.List):
        for element in expr.elements:
            if isinstance(element, cst.StarredElement):
                return _history_root(element.value)
        return None
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Add):
        return _history_root(expr.left) or _history_root(expr.right)
    if isinstance(expr, cst.Call) and expr.args and expr.args[0].keyword is None and not expr.args[0].star:
        return _history_root(expr.args[0].value)  # `_clip(messages, max_tokens)`: the history, fitted or converted
    if isinstance(expr, cst.Call):  # `fit(messages=messages, max_tokens=limit)`
        given = next((a.value for a in expr.args if a.keyword is not None and CONVERSATION_NAME.search(a.keyword.value)), None)
        return _history_root(given) if given is not None else None
    return None


def _sent_through(ctx: ModuleContext, expr: cst.BaseExpression | None) -> str:
    """The call a history is passed through on its way into the request (`_clip(messages, n)`), so that two requests
    are paired only when they send it through the same call, with the same arguments ("" when it is sent as it is):
    `prompt(document, EXTRACT)` and `prompt(document, SUMMARIZE)` are two prompts made from one document."""
    return " ".join(ctx.code(expr).split()) if isinstance(expr, cst.Call) else ""


def _copied_conversation(ctx: ModuleContext, root: cst.Name | cst.Attribute | None) -> cst.Attribute | None:
    """`self.history` when the name a request sends is only ever a copy of it made in its function (`messages =
    copy.deepcopy(self.history)`, `list(self.history)`, `self.history[:]`, `self.history + [q]`, then perhaps
    `messages += [...]`): a copy sent by one method and another by the next are requests of the object's one
    conversation."""
    if not isinstance(root, cst.Name):
        return None
    copied: set[str] = set()
    found: cst.Attribute | None = None
    for binding, value in ctx.assigned_values(root):
        if isinstance(ctx.parent(binding), cst.AugAssign):
            continue  # messages += [summary request]: the same copy, grown
        source = _copy_source(ctx, value)
        if source is None:
            return None
        copied.add(ctx.code(source))
        found = source
    return found if len(copied) == 1 else None


COPIES = frozenset({"copy.deepcopy", "copy.copy", "builtins.list"})


def _copy_source(ctx: ModuleContext, value: cst.BaseExpression | None) -> cst.Attribute | None:
    """The `self` attribute a value copies: `copy.deepcopy(self.x)`, `list(self.x)`, `self.x.copy()`, `self.x[:]`,
    `self.x + [...]`, `[*self.x, ...]`."""
    def attribute(expr: cst.BaseExpression | None) -> cst.Attribute | None:
        found = _history_root(expr) if isinstance(expr, (cst.Attribute, cst.List, cst.BinaryOperation)) else None
        return found if isinstance(found, cst.Attribute) else None
    if isinstance(value, cst.Call):
        if value.args and value.args[0].keyword is None and ctx.qualified_name_in(value.func, COPIES):
            return attribute(value.args[0].value)
        if isinstance(value.func, cst.Attribute) and value.func.attr.value == "copy" and not value.args:
            return attribute(value.func.value)
        return None
    if isinstance(value, cst.Subscript) and len(value.slice) == 1 and isinstance(value.slice[0].slice, cst.Slice):
        whole = value.slice[0].slice
        return attribute(value.value) if whole.lower is None and whole.upper is None else None
    if isinstance(value, (cst.List, cst.BinaryOperation)):
        return attribute(value)
    return None


def _fresh_each_time(ctx: ModuleContext, binding: cst.CSTNode) -> bool:
    """`messages = [{"role": "user", ...}]` that is never grown: a one-shot prompt, not a conversation."""
    if not isinstance(_assigned_from(ctx, binding), cst.List):
        return False
    scope = ctx.scope_of(binding)
    return not any(call.func.attr.value in GROWS and ctx.scope_of(call.func.value) is scope  # type: ignore[attr-defined]
                   for call in ctx.calls_on.get(binding.value, []))  # type: ignore[attr-defined]


def _exclusive(ctx: ModuleContext, a: cst.CSTNode, b: cst.CSTNode) -> bool:
    """`a` and `b` in different branches of one `if` / `try` / `match`: never both in one run of the code."""
    chain_a = [a, *ctx.ancestors(a)]
    chain_b = [b, *ctx.ancestors(b)]
    ids_b = {id(n) for n in chain_b}
    common = next((n for n in chain_a if id(n) in ids_b), None)
    if common is None:
        return False
    index_a = next(i for i, n in enumerate(chain_a) if n is common)
    index_b = next(i for i, n in enumerate(chain_b) if n is common)
    branch_a = chain_a[index_a - 1] if index_a else None
    branch_b = chain_b[index_b - 1] if index_b else None
    if isinstance(common, cst.If):
        return branch_a is not branch_b and common.test not in (branch_a, branch_b)
    if isinstance(common, (cst.Try, cst.Match)):
        return branch_a is not branch_b
    if isinstance(common, cst.IfExp):
        return branch_a is not branch_b and common.test not in (branch_a, branch_b)
    return False


def _leaves_after(ctx: ModuleContext, first: cst.CSTNode, second: cst.CSTNode) -> bool:
    """The code after `first` returns or raises before `second` can run: `first` is in a returned
    expression, or in a block (not holding `second`) that always ends in `return` / `raise` (one path of a
    function that picks its request by its arguments, each path returning)."""
    if ctx.enclosing_function(first) is not ctx.enclosing_function(second):
        return False  # two methods of one class: each is called on its own
    for ancestor in [first, *ctx.ancestors(first)]:
        if ctx.contains(ancestor, second) or ancestor is second:
            return False
        if isinstance(ancestor, cst.Return):
            return True
        if isinstance(ancestor, cst.IndentedBlock) and _always_leaves(ancestor):
            return True
        if isinstance(ancestor, (cst.FunctionDef, cst.Lambda)):
            return False
    return False


def _always_leaves(block: cst.CSTNode) -> bool:
    """Whether every path through a block ends in `return` or `raise`."""
    body = getattr(block, "body", None)
    if not isinstance(body, (list, tuple)) or not body:
        return False
    last = body[-1]
    if isinstance(last, cst.SimpleStatementLine):
        return any(isinstance(small, (cst.Return, cst.Raise)) for small in last.body)
    if isinstance(last, cst.If):
        return _always_leaves(last.body) and last.orelse is not None and _always_leaves(
            last.orelse.body if isinstance(last.orelse, cst.Else) else cst.IndentedBlock(body=[last.orelse]))
    if isinstance(last, cst.Try):
        return _always_leaves(last.body) and all(_always_leaves(h.body) for h in last.handlers)
    if isinstance(last, cst.With):
        return _always_leaves(last.body)
    return False


def _differences(ctx: ModuleContext, first: CallSite, second: CallSite, history: str) -> Iterator[Difference]:

    confidence = "likely" if "likely" in (first.confidence, second.confidence) else "certain"
    tools_a, tools_b = _given(first.arg("tools")), _given(second.arg("tools"))
    if (tools_a is None) != (tools_b is None):
        how = "without the tools" if tools_b is None else "with tools"
        other = "sends them" if tools_b is None else "sends none"
        yield Difference(first, second, "tools", tools_b if tools_b is not None else second.node,
                         f"{how} (the request on line {ctx.span(first.node).row} {other})", history, confidence)
    elif tools_a is not None and tools_b is not None and _distinct_constants(ctx, tools_a, tools_b):
        yield Difference(first, second, "tools", tools_b, f"with `{ctx.code(tools_b)}` where the request on line "
                         f"{ctx.span(first.node).row} sends `{ctx.code(tools_a)}`", history, confidence)
    for name in PARAMS.get(second.api, ()):
        a, b = _given(first.arg(name)), _given(second.arg(name))
        if a is None and b is None:
            continue
        if name == "model":
            if a is None or b is None:
                continue  # a model from a partial or a default: not known here
            if _different_model(ctx, a, b):
                va, vb = _model_text(ctx, a) or ctx.code(a), _model_text(ctx, b) or ctx.code(b)
                yield Difference(first, second, name, b, f"to `{vb}` (the request on line {ctx.span(first.node).row} "
                                 f"goes to `{va}`)", history, confidence)
            continue
        static = _static_format if name in OUTPUT_FORMATS else _static
        if a is None or b is None:
            present = b if b is not None else a
            if not static(present):
                continue
            how = f"with `{name}={ctx.code(b)}`" if b is not None else f"without the `{name}` of the request on line {ctx.span(first.node).row}"
            yield Difference(first, second, name, b if b is not None else second.node, how, history, confidence)
        elif name in OUTPUT_FORMATS and (static(a) or static(b)) and all(isinstance(x, (cst.Name, cst.Attribute)) or static(x) for x in (a, b)) \
                and _normal(ctx, _schema_named(ctx, a)) != _normal(ctx, _schema_named(ctx, b)):
            # `response_format=AgentDecision` while exploring, then `response_format=response_schema`: two schemas
            yield Difference(first, second, name, b, f"with `{name}={ctx.code(b)}` (the request on line "
                             f"{ctx.span(first.node).row} sends `{ctx.code(a)}`, another output schema)", history, "likely")
        elif _static(a) and _static(b) and _normal(ctx, a) != _normal(ctx, b):
            yield Difference(first, second, name, b, f"with `{name}={ctx.code(b)}` (the request on line "
                             f"{ctx.span(first.node).row} sends `{ctx.code(a)}`)", history, confidence)


def _given(expr: cst.BaseExpression | None) -> cst.BaseExpression | None:
    """The argument, or None when it is absent or says 'not given' (None, NOT_GIVEN, omit)."""
    if expr is None:
        return None
    if isinstance(expr, cst.Name) and expr.value in ("None", "NOT_GIVEN", "NotGiven", "omit"):
        return None
    if isinstance(expr, cst.Attribute) and expr.attr.value in ("NOT_GIVEN", "omit"):
        return None
    return expr


def _static(expr: cst.BaseExpression) -> bool:
    """A literal, or a module-level constant name: the same on every call."""
    if isinstance(expr, (cst.SimpleString, cst.ConcatenatedString, cst.Integer, cst.Float, cst.Dict, cst.List, cst.Tuple)):
        return not any(isinstance(n, (cst.Call, cst.FormattedString)) for n in descendants(expr))
    return isinstance(expr, cst.Name) and expr.value.isupper()


# the output schema of a request: a class (`response_format=AgentDecision`, a pydantic model) is as fixed as a literal
OUTPUT_FORMATS = frozenset({"response_format", "text"})


def _static_format(expr: cst.BaseExpression) -> bool:
    """A literal, a module constant, or a class named in CapWords (`AgentDecision`, `schemas.Plan`)."""
    leaf = expr.attr.value if isinstance(expr, cst.Attribute) else expr.value if isinstance(expr, cst.Name) else ""
    return _static(expr) or (leaf[:1].isupper() and not leaf.isupper() and "_" not in leaf)


def _schema_named(ctx: ModuleContext, expr: cst.BaseExpression) -> cst.BaseExpression:
    """`output_model = Invoice`, then `response_format=output_model`: the class a name is bound to, when every binding
    of it in sight names the same one (a parameter, or two different classes, leave the name as it is)."""
    if not isinstance(expr, cst.Name):
        return expr
    values = [v for _, v in ctx.assigned_values(expr)]
    if values and all(isinstance(v, (cst.Name, cst.Attribute)) for v in values) and len({ctx.code(v) for v in values}) == 1:
        return values[0]
    return expr


def _normal(ctx: ModuleContext, expr: cst.BaseExpression) -> str:
    return " ".join(ctx.code(expr).replace("'", '"').split())


def _distinct_constants(ctx: ModuleContext, a: cst.BaseExpression, b: cst.BaseExpression) -> bool:
    """Two tool lists that are different module constants (TOOLS vs. READ_ONLY_TOOLS) or literals."""
    return _static(a) and _static(b) and _normal(ctx, a) != _normal(ctx, b)


def _different_model(ctx: ModuleContext, a: cst.BaseExpression, b: cst.BaseExpression) -> bool:
    """Two model expressions known to name different models: two strings, two constants bound to different
    strings, or one lookup with different constant keys (`models["fast"]` / `models["smart"]`)."""

    va, vb = _model_text(ctx, a), _model_text(ctx, b)
    if va is not None and vb is not None:
        return va != vb
    key_a, key_b = _lookup_key(ctx, a), _lookup_key(ctx, b)
    if key_a is not None and key_b is not None:
        return key_a[0] == key_b[0] and key_a[1] != key_b[1]
    return False


def _model_text(ctx: ModuleContext, expr: cst.BaseExpression) -> str | None:
    from cachelint.check.values import string_value

    text = string_value(expr)
    if text is not None:
        return text
    if isinstance(expr, cst.Name):
        values = [v for _, v in ctx.assigned_values(expr)]
        if len(values) == 1 and values[0] is not None:
            return string_value(values[0])
    return None


def _lookup_key(ctx: ModuleContext, expr: cst.BaseExpression) -> tuple[str, str] | None:
    """(what is looked up, the constant key): `MODELS["fast"]`, `cfg.model_for("planner")`."""
    from cachelint.check.values import string_value

    if isinstance(expr, cst.Subscript) and len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Index):
        key = string_value(expr.slice[0].slice.value)
        return (ctx.code(expr.value), key) if key is not None else None
    if isinstance(expr, cst.Call) and len(expr.args) == 1:
        key = string_value(expr.args[0].value)
        return (ctx.code(expr.func), key) if key is not None else None
    return None


# --- an LLM chosen per call from a factory, with one conversation -------------------------------------------

@dataclass(slots=True)
class Send:
    call: cst.Call  # llm(convo)
    factory: cst.Call  # self.get_llm(NAME)
    selector: str  # the code of what chooses the model ("" when the factory's default)
    convo: str  # the conversation's name
    identity: int  # which object the name holds there (its binding, through builder rebindings)


@dataclass(slots=True)
class FactorySwitch:
    node: cst.CSTNode  # the factory call of the request that goes elsewhere
    convo: str
    selector: str
    other: str  # the selector of the conversation's earlier requests
    where: str  # words: "on line 209", "in find_solution() (line 128)"


def factory_switches(ctx: ModuleContext) -> Iterator[FactorySwitch]:
    """`llm = self.get_llm(NAME)` ... `await llm(convo)` with another NAME for the same conversation object,
    in one function, or in a method that continues a conversation its caller in this module sent."""
    handed_out = _factory_names(ctx)
    if handed_out is None:
        return  # no LLM handed out here: no name is resolved (scope and position metadata are the costly part)
    by_function: dict[int, tuple[cst.FunctionDef, list[Send]]] = {}
    for call in ctx.nodes(cst.Call):
        send = _send(ctx, call, handed_out)
        if send is None:
            continue
        function = ctx.enclosing_function(call)
        if function is not None:
            by_function.setdefault(id(function), (function, []))[1].append(send)
    reported: set[int] = set()
    for function, sends in by_function.values():
        for convo, group in _by_convo(sends).items():
            first = group[0]
            for send in group[1:]:
                if send.selector != first.selector and id(send.factory) not in reported and not in_except_handler(ctx, send.call):  # a fallback, not a switch
                    reported.add(id(send.factory))
                    yield FactorySwitch(send.factory, convo[0], send.selector, first.selector, f"on line {ctx.span(first.call).row}")
                    break
        yield from _continued_elsewhere(ctx, function, sends, by_function, reported)


def _factory_names(ctx: ModuleContext) -> set[str] | None:
    """The names assigned an LLM from a factory (`llm = self.get_llm(NAME)`); None when the module calls no
    factory at all. Syntax only: nothing is resolved here."""
    calls = [call for call in ctx.nodes(cst.Call) if _is_factory(call)]
    if not calls:
        return None
    names: set[str] = set()
    for call in calls:
        parent = ctx.parent(call)
        if isinstance(parent, cst.Await):
            parent = ctx.parent(parent)
        if isinstance(parent, cst.Assign):
            names.update(t.target.value for t in parent.targets if isinstance(t.target, cst.Name))
    return names


def _send(ctx: ModuleContext, call: cst.Call, handed_out: set[str]) -> Send | None:
    """A call that passes a conversation to an LLM callable obtained from a factory call."""
    if not call.args or call.args[0].keyword is not None or call.args[0].star:
        return None
    convo = call.args[0].value
    if not isinstance(convo, cst.Name) or not CONVERSATION_NAME.search(convo.value):
        return None
    func = call.func
    if isinstance(func, cst.Attribute) and func.attr.value in SEND_METHODS:
        func = func.value
    factory = None
    if isinstance(func, cst.Call) and _is_factory(func):
        factory = func
    elif isinstance(func, cst.Name) and func.value in handed_out:
        row = ctx.span(call).row
        values = [(b, v) for b, v in ctx.assigned_values(func) if ctx.span(b).row <= row]
        if values:
            _, value = max(values, key=lambda bv: ctx.span(bv[0]).row)
            if isinstance(value, cst.Await):
                value = value.expression
            if isinstance(value, cst.Call) and _is_factory(value):
                factory = value
    if factory is None:
        return None
    return Send(call, factory, _selector(ctx, factory), convo.value, _identity(ctx, convo, ctx.span(call).row, 0))


def _identity(ctx: ModuleContext, name: cst.Name, row: int, depth: int) -> int:
    """Which object `name` holds at `row`: its binding before that row, followed back through builder
    rebindings (`convo = convo.template(...)` continues the same conversation; `convo = Convo(...)` starts one)."""
    bindings = [b for b, _ in ctx.assigned_values(name) if ctx.span(b).row < row or isinstance(b, cst.Param)]
    if not bindings:
        return 0
    binding = max(bindings, key=lambda b: ctx.span(b).row)
    value = {id(b): v for b, v in ctx.assigned_values(name)}.get(id(binding))
    root = value
    while isinstance(root, (cst.Call, cst.Attribute, cst.Await)):
        root = root.expression if isinstance(root, cst.Await) else root.func if isinstance(root, cst.Call) else root.value
    if depth < MAX_REBINDINGS and isinstance(root, cst.Name) and root.value == name.value:
        return _identity(ctx, root, ctx.span(binding).row, depth + 1)
    return id(binding)


def _is_factory(call: cst.Call) -> bool:
    func = call.func
    name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
    return bool(FACTORY.match(name))


def _selector(ctx: ModuleContext, factory: cst.Call) -> str:
    for arg in factory.args:
        if arg.star:
            return ctx.code(arg.value)
        if arg.keyword is None:
            return ctx.code(arg.value)
        if arg.keyword.value in SELECTOR_KEYWORDS:
            return ctx.code(arg.value)
    return ""


def _by_convo(sends: list[Send]) -> dict[tuple[str, int], list[Send]]:
    groups: dict[tuple[str, int], list[Send]] = {}
    for send in sends:
        groups.setdefault((send.convo, send.identity), []).append(send)
    return groups


def _continued_elsewhere(ctx: ModuleContext, function: cst.FunctionDef, sends: list[Send],
                         by_function: dict[int, tuple[cst.FunctionDef, list[Send]]], reported: set[int]) -> Iterator[FactorySwitch]:
    """`function(convo)` continues a conversation: a caller in this module sent the object it passes for
    `convo` with an LLM chosen otherwise, before the call."""
    params = {p.name.value: i for i, p in enumerate(function.params.params)}
    method = bool(function.params.params) and function.params.params[0].name.value in ("self", "cls")
    own = {s.convo: s for s in reversed(sends) if s.convo in params}
    if not own:
        return
    name = function.name.value
    if len(ctx.functions.get(name, [])) + sum(key.endswith(f".{name}") for key in ctx.functions) != 1:
        return  # another function of the same name: which one a call runs is not known
    for call in ctx.calls_by_name.get(name, []):
        func = call.func
        if not (isinstance(func, cst.Name) or (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value in ("self", "cls"))):
            continue
        caller = ctx.enclosing_function(call)
        if caller is None or caller is function or id(caller) not in by_function:
            continue
        for convo, send in own.items():
            argument = argument_for(call, convo, params[convo] - (1 if method else 0))
            if not isinstance(argument, cst.Name):
                continue
            row = ctx.span(call).row
            identity = _identity(ctx, argument, row + 1, 0)
            earlier = [s for s in by_function[id(caller)][1] if s.convo == argument.value and s.identity == identity and ctx.span(s.call).row <= row]
            if earlier and earlier[-1].selector != send.selector and id(send.factory) not in reported:
                reported.add(id(send.factory))
                yield FactorySwitch(send.factory, convo, send.selector, earlier[-1].selector,
                                    f"in {caller.name.value}() on line {ctx.span(earlier[-1].call).row}, which passes it here on line {row}")


# --- a hand-off: the object the tools or model come from, swapped inside the loop that keeps the history -----

@dataclass(slots=True)
class Handoff:
    site: CallSite
    node: cst.CSTNode  # the reassignment inside the loop
    holder: str  # the name reassigned (active_agent)
    params: tuple[str, ...]  # what of the request comes from it (tools, model, tool_choice, ...)
    history: str
    function: str


def handoffs(ctx: ModuleContext, sites: list[CallSite]) -> Iterator[Handoff]:
    """A request's tools (or model) come from a parameter of the function that sends it, its messages from
    another; a caller in this module passes the same growing history each turn of a loop and reassigns the
    object for the first parameter inside that loop (an agent hands off to another agent)."""
    seen: set[int] = set()
    for site in sites:
        if not isinstance(site.node, cst.Call):
            continue
        function = ctx.enclosing_function(site.node)
        if function is None:
            continue
        params = {p.name.value for p in function.params.params} - {"self", "cls"}
        history = parameter_sources(ctx, site.arg("messages") if site.api != "openai-responses" else site.arg("input"), params)
        if not history:
            continue
        chosen: dict[str, list[str]] = {}
        for name in ("tools", *PARAMS.get(site.api, ()), "tool_choice"):
            for param in parameter_sources(ctx, site.arg(name), params):
                if name not in chosen.setdefault(param, []):
                    chosen[param].append(name)
        if not chosen:
            continue
        for found in _swapped_in_callers(ctx, function, chosen, history):
            if id(found.node) not in seen:
                seen.add(id(found.node))
                yield Handoff(site, found.node, found.holder, tuple(chosen[found.param]), found.history, function.name.value)


@dataclass(slots=True)
class _Swap:
    node: cst.CSTNode
    holder: str
    param: str
    history: str


def _swapped_in_callers(ctx: ModuleContext, function: cst.FunctionDef, chosen: dict[str, list[str]], history: set[str],
                        depth: int = 0) -> Iterator[_Swap]:
    """The swaps in the loops of `function`'s callers; a caller that only hands both on from its own parameters
    (`try_with_truncation(agent, history)` around the sender) is followed to its callers, three levels at most."""
    from cachelint.check.values import callers

    params = [p.name.value for p in function.params.params]
    method = bool(params) and params[0] in ("self", "cls")
    for call in callers(ctx, function):
        loops = ctx.loops_around(call)
        if not loops:
            if depth < 3:
                yield from _through_forwarder(ctx, call, params, method, chosen, history, depth)
            continue
        loop = loops[-1]
        grown = [(h, a) for h in history if isinstance(a := argument_for(call, h, params.index(h) - method), cst.Name) and grows_in(ctx, a, loop)]
        if not grown:
            continue
        conversation_param, conversation = grown[0]
        for param in chosen:
            if param == conversation_param:
                continue
            holder = argument_for(call, param, params.index(param) - method)
            if not isinstance(holder, cst.Name):
                continue
            for binding, value in ctx.assigned_values(holder):
                if value is not None and ctx.contains(loop, binding) and not ctx.contains(call, binding):
                    yield _Swap(ctx.statement_of(binding), holder.value, param, conversation.value)
                    break


def _through_forwarder(ctx: ModuleContext, call: cst.Call, params: list[str], method: bool, chosen: dict[str, list[str]],
                       history: set[str], depth: int) -> Iterator[_Swap]:
    """The caller passes its own parameters on as the history and the holder of the tools: its callers decide."""
    caller = ctx.enclosing_function(call)
    if caller is None:
        return
    own = {p.name.value for p in caller.params.params} - {"self", "cls"}

    def passed(param: str) -> str | None:
        arg = argument_for(call, param, params.index(param) - method)
        return arg.value if isinstance(arg, cst.Name) and arg.value in own else None

    outer_history = {h for h in (passed(h) for h in history if h in params and h not in chosen) if h is not None}
    outer_chosen: dict[str, list[str]] = {}
    inner: dict[str, str] = {}
    for param, names in chosen.items():
        if param in params and (outer := passed(param)) is not None and outer not in outer_history:
            outer_chosen[outer], inner[outer] = names, param
    if outer_history and outer_chosen:
        for swap in _swapped_in_callers(ctx, caller, outer_chosen, outer_history, depth + 1):
            yield _Swap(swap.node, swap.holder, inner[swap.param], swap.history)


def grows_in(ctx: ModuleContext, name: cst.Name, loop: cst.CSTNode) -> bool:
    scope = ctx.scope_of(name)
    return any(call.func.attr.value in GROWS and ctx.contains(loop, call) and ctx.scope_of(call.func.value) is scope  # type: ignore[attr-defined]
               for call in ctx.calls_on.get(name.value, []))


# --- a forced tool_choice reset once tools were used ----------------------------------------------------------

USED = re.compile(r"used|tool_calls|tool_use|called|invoked|executed", re.IGNORECASE)
RESET_VALUES = ("None", '"auto"', "'auto'", '"none"', "'none'")


def tool_choice_resets(ctx: ModuleContext) -> Iterator[cst.CSTNode]:
    """`replace(settings, tool_choice=None)` / `settings.tool_choice = "auto"` under an `if` that asks whether
    tools were used, or `effective_tool_choice = "auto"` under an `if` on the step of the loop that sends (`if
    iteration == 0:`): the run's next requests go out with another tool_choice than its first ones."""
    if "tool_choice" not in ctx.source:
        return
    for call in ctx.nodes(cst.Call):
        if not _replaces(call):
            continue
        for arg in call.args:
            if arg.keyword is not None and arg.keyword.value == "tool_choice" and _reset_value(arg.value) and _after_tool_use(ctx, call):
                yield call
    for assign in ctx.nodes(cst.Assign):
        if not _reset_value(assign.value):
            continue
        for target in assign.targets:
            t = target.target
            named = (isinstance(t, cst.Attribute) and t.attr.value == "tool_choice") or (
                isinstance(t, cst.Subscript) and "tool_choice" in ctx.code(t.slice[0]) if isinstance(t, cst.Subscript) else False)
            if named and _after_tool_use(ctx, assign):
                yield assign


def tool_choice_step_resets(ctx: ModuleContext) -> Iterator[tuple[cst.Assign, str]]:
    """(the reset, the test) of `effective_tool_choice = "auto"` under `if iteration == 0 and ...` in the loop that
    grows the conversation and hands the tool_choice to its sender: forced on the first pass only."""
    if "tool_choice" not in ctx.source:
        return
    for assign in ctx.nodes(cst.Assign):
        if not _reset_value(assign.value):
            continue
        for target in assign.targets:
            t = target.target
            if isinstance(t, cst.Name) and t.value.endswith("tool_choice") and _on_the_loops_step(ctx, assign, t.value):
                test = ctx.enclosing(assign, (cst.If,))
                yield assign, short_code(ctx, test.test)  # type: ignore[union-attr]
                break


def _on_the_loops_step(ctx: ModuleContext, assign: cst.Assign, name: str) -> bool:
    """`if iteration == 0 and tool_choice == "required": tool_choice = "auto"` in the loop that hands `tool_choice` on
    (an argument, or a closure's default): the first pass is forced, the later ones are not."""
    loops = ctx.loops_around(assign)
    test = ctx.enclosing(assign, (cst.If, cst.FunctionDef))
    if not loops or not isinstance(test, cst.If) or not ctx.contains(loops[0], test) or not ctx.contains(test.body, assign):
        return False
    stepping = stepping_names(ctx, loops[0])
    read = [n.value for n in read_names(ctx, test.test)]
    if not any(n in stepping for n in read):
        return False
    first_pass = any(isinstance(c, cst.Comparison) and any(isinstance(t.comparator, cst.Integer) and t.comparator.value == "0"
                                                            for t in c.comparisons) for c in descendants(test.test))
    if name not in read and not first_pass:
        return False  # a step chosen otherwise (`elif cycle == max_cycles - 1:`): per_cycle_arguments judges that
    grows = any(isinstance(c.func, cst.Attribute) and c.func.attr.value in GROWS and isinstance(c.func.value, cst.Name)
                and CONVERSATION_NAME.search(c.func.value.value) for c in ctx.nodes_in(cst.Call, loops[0])) \
        or any(_grown_by_assignment(ctx, node) for node in ctx.nodes_in(cst.AugAssign, loops[0])) \
        or any(_grown_by_assignment(ctx, node) for node in ctx.nodes_in(cst.Assign, loops[0]))
    return grows and any(n.value == name and not ctx.contains(test, n) and isinstance(ctx.parent(n), (cst.Arg, cst.Param))
               for n in ctx.nodes_in(cst.Name, loops[0]))  # handed to the call that sends (or a closure's default)


def _grown_by_assignment(ctx: ModuleContext, node: cst.Assign | cst.AugAssign) -> bool:
    """`messages += [...]`, `messages = messages + run_tools(...)`: a conversation grown by assignment."""
    targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
    for target in targets:
        if isinstance(target, cst.Name) and CONVERSATION_NAME.search(target.value):
            if isinstance(node, cst.AugAssign) or any(n.value == target.value for n in read_names(ctx, node.value)):
                return True
    return False


def _reset_value(expr: cst.BaseExpression) -> bool:
    """None, "auto" or "none": what a forced tool_choice is reset to."""
    if isinstance(expr, cst.Name):
        return expr.value == "None"
    return isinstance(expr, cst.SimpleString) and expr.value in RESET_VALUES


def _replaces(call: cst.Call) -> bool:
    func = call.func
    name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
    return name in ("replace", "model_copy", "copy", "evolve", "_replace")


def _after_tool_use(ctx: ModuleContext, node: cst.CSTNode) -> bool:
    """Under a test of whether tools were used, or after the function ran the tool calls of the model's reply (`for
    call in chat.last.tool_calls`, `gather(*[run(c) for c in reply.tool_calls])`): the requests that follow differ."""
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, cst.If):
            if USED.search(ctx.code(ancestor.test)):
                return True
            break
        if isinstance(ancestor, (cst.FunctionDef, cst.ClassDef)):
            break
    function = ctx.enclosing_function(node)
    if function is None:
        return False
    row = ctx.span(node).row
    return any(isinstance(loop, (cst.For, cst.CompFor)) and "tool_calls" in ctx.code(loop.iter) and ctx.span(loop).row < row
               and ctx.enclosing_function(loop) is function and _runs_each(ctx, loop) for loop in descendants(function.body))


# a call that runs a tool call: `self._process_tool_call(call)`, `execute_tool(call)`, `run(call)`
RUNS_TOOL = re.compile(r"process|run|execute|exec|call_tool|invoke|handle|dispatch|perform", re.I)


def _runs_each(ctx: ModuleContext, loop: cst.For | cst.CompFor) -> bool:
    """The loop runs each tool call (hands it to a call named for running it), rather than converting the calls of a
    stored message to text."""
    element = {n.value for n in descendants(loop.target) if isinstance(n, cst.Name)}
    body = loop.body if isinstance(loop, cst.For) else ctx.parent(loop)
    return any(isinstance(n, cst.Call) and RUNS_TOOL.search(_name_of(n.func) or "")
               and any(isinstance(a.value, cst.Name) and a.value.value in element for a in n.args)
               for n in (body, *descendants(body)))


# --- tools merged from several servers, clients or workbenches in connection order (CL201) -------------------

# what a loop over tool providers goes over: MCP servers, clients, sessions, workbenches, toolkits
PROVIDERS_NAME = re.compile(r"server|client|connection|mcp|session|workbench|toolkit|toolset", re.IGNORECASE)
ACCUMULATOR_NAME = re.compile(r"tool|function", re.IGNORECASE)
BOOKKEEPING_NAME = re.compile(r"(?:names|ids|keys|seen|count)$", re.IGNORECASE)
# a provider's listing of its tools: `await server.list_tools()`, `client.get_tools()`, `client.tools`
LISTING_CALLS = frozenset({"list_tools", "get_tools", "get_function_tools", "load_tools", "fetch_tools", "connect", "tools"})
LISTING_ATTRIBUTES = frozenset({"tools", "functions"})
ADDS = frozenset({"append", "extend", "update", "add_tool", "add_tools", "register", "register_tool"})


@dataclass(slots=True)
class ToolMerge:
    node: cst.CSTNode  # the listing the merge reads (reported there)
    tools: str  # what the tools are merged into
    providers: str  # what the loop goes over


def _name_of(expr: cst.BaseExpression) -> str | None:
    if isinstance(expr, cst.Await):
        return _name_of(expr.expression)
    if isinstance(expr, cst.Call):
        return _name_of(expr.func)
    if isinstance(expr, cst.Name):
        return expr.value
    if isinstance(expr, cst.Attribute):
        return expr.attr.value
    return None


def _listing(ctx: ModuleContext, root: cst.CSTNode, provider: str, paired: bool = False) -> cst.CSTNode | None:
    """The listing of tools under `root`: a `list_tools()` / `get_tools()` call (on the provider or a session it
    opened), else the `.tools` of the provider or of a client opened for it, else its `connect()` that returns them,
    else (`paired`: the loop walks providers and their gathered listings side by side) an inner loop over the listing."""
    calls = [n for n in descendants(root) if isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute) and n.func.attr.value in LISTING_CALLS]
    for call in calls:
        if call.func.attr.value != "connect" and (call.func.attr.value != "tools" or ctx.code(call.func.value) == provider):
            return call
    # the provider's `.tools`, or those of a client opened for it in the loop (`client = MCPClient(); await
    # client.connect(server); for tool in client.tools:`)
    holders = {provider} | {name.value for n in descendants(root) if isinstance(n, cst.Assign) and isinstance(_awaited(n.value), cst.Call)
                            for t in n.targets if isinstance(t.target, (cst.Name, cst.Tuple))
                            for name in descendants(t.target) if isinstance(name, cst.Name)}  # `tools, session = client.connect(...)`
    for node in descendants(root):
        if isinstance(node, cst.Attribute) and node.attr.value in LISTING_ATTRIBUTES and ctx.code(node.value) in holders \
                and not isinstance(ctx.parent(node), cst.Call):
            return node
    connect = next((c for c in calls if ctx.code(c.func.value).split(".")[0] == provider), None)
    if connect is not None or not paired or not LISTED_NAME.search(provider):
        return connect
    # `for connection, listed in zip(self.connections, results): for tool in listed:` (listings gathered first; not
    # `for session, matches in by_session.items(): for match in matches:`, search hits grouped by session)
    return next((n.iter for n in descendants(root) if isinstance(n, cst.For) and ctx.code(n.iter) == provider), None)


LISTED_NAME = re.compile(r"tool|function|list|result|spec|schema|defs?$|definition", re.IGNORECASE)  # what a provider's gathered listing is called


# a call that connects to a server and lists its tools into a list it is handed
DISCOVERS = re.compile(r"discover|list_tools|load_tools|fetch_tools|register_tools|collect_tools", re.I)
HANDED_TOOLS = re.compile(r"^_?(?:\w+_)?tools$", re.I)


def _list_handed_to_discovery(ctx: ModuleContext, loop: cst.For) -> tuple[cst.Call, str] | None:
    """`await client.connect_and_discover(name, config, self.mcp_tools)` in a loop over the servers: each server's tools
    are added by the callee to the list it is handed, in connection order (a server that fails is skipped)."""
    bound_inside = {ctx.code(t.target) for n in descendants(loop.body) if isinstance(n, cst.Assign) for t in n.targets}
    for call in (n for n in descendants(loop.body) if isinstance(n, cst.Call)):
        if not DISCOVERS.search(_name_of(call.func) or ""):
            continue
        for arg in call.args:
            holder = ctx.code(arg.value)
            if isinstance(arg.value, (cst.Name, cst.Attribute)) and HANDED_TOOLS.match(_name_of(arg.value) or "") and holder not in bound_inside:
                return call, holder
    return None


def _awaited(node: cst.BaseExpression) -> cst.BaseExpression:
    return node.expression if isinstance(node, cst.Await) else node


def _loop_variable(target: cst.BaseExpression) -> str | None:
    """`client` of `for client in ...`, `for i, client in enumerate(...)`."""
    if isinstance(target, cst.Name):
        return target.value
    if isinstance(target, cst.Tuple) and target.elements and isinstance(target.elements[-1].value, cst.Name):
        return target.elements[-1].value.value
    return None


# a server's or client's name or id added to a list: a list of servers found, not of tools
SERVER_NAME_VALUE = re.compile(r"^(?:server|client|provider|session|toolkit|workbench)_?(?:name|id|key)$", re.I)


def _accumulator(ctx: ModuleContext, loop: cst.For, listing: cst.CSTNode) -> tuple[str, cst.CSTNode] | None:
    """The list or dict outside the loop that the loop adds tools to: `tools.extend(...)`, `self.functions[n] = f`,
    `all_tools += ...`."""
    loop_names = {n.value for n in descendants(loop.target) if isinstance(n, cst.Name)}
    bound_inside = {ctx.code(t.target) for n in descendants(loop.body) if isinstance(n, cst.Assign) for t in n.targets}
    for node in descendants(loop.body):
        target: cst.BaseExpression | None = None
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in ADDS:
            target = node.func.value
        elif isinstance(node, cst.AugAssign) and isinstance(node.operator, cst.AddAssign):
            target = node.target
        elif isinstance(node, cst.Assign) and len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Subscript):
            key = {n.value for n in descendants(node.targets[0].target.slice[0]) if isinstance(n, cst.Name)}
            if not key & loop_names:  # keyed by the tool (`self.functions[f.name] = f`), not by the provider (a per-server table)
                target = node.targets[0].target.value
        if target is None:
            continue
        name = ctx.code(target)
        if BOOKKEEPING_NAME.search(name):
            continue  # `tool_names.update(...)`: the names seen so far (for duplicates), not the tools that are sent
        if isinstance(node, cst.Call) and node.args and isinstance(node.args[-1].value, (cst.Name, cst.Attribute)) \
                and SERVER_NAME_VALUE.search(_name_of(node.args[-1].value) or ""):
            continue  # `servers_with_tool.append(server_name)`: which servers offer a tool, not the tools
        if name not in bound_inside and (ACCUMULATOR_NAME.search(_name_of(target) or "") or _reads_listing(ctx, loop, listing, node)
                                         or _returned_as_tools(ctx, loop, name)):
            return name, node
    return None


def _returned_as_tools(ctx: ModuleContext, loop: cst.For, name: str) -> bool:
    """The list is what a function named for tools returns: `def get_mcp_wrapped_tools(servers): wrapped = [] ...
    return wrapped`."""
    function = ctx.enclosing_function(loop)
    return function is not None and ACCUMULATOR_NAME.search(function.name.value) is not None \
        and any(ctx.code(value) == name for value in ctx.returns_of(function))


def _reads_listing(ctx: ModuleContext, loop: cst.For, listing: cst.CSTNode, added: cst.CSTNode) -> bool:
    """Whether what is added is the listing itself (`merged.extend(client.get_tools())`) or is added in a loop
    over it (`for tool in server.tools: params.append(...)`)."""
    if ctx.contains(added, listing):
        return True
    for inner in ctx.ancestors(added):
        if inner is loop:
            return False
        if isinstance(inner, cst.For) and (inner.iter is listing or ctx.contains(inner.iter, listing)):
            return True
    return False


def _anchor(ctx: ModuleContext, loop: cst.For, listing: cst.CSTNode, added: cst.CSTNode) -> cst.CSTNode:
    """Where a merge is reported: the inner loop over a listing's `.tools` that adds them, else the listing."""
    for inner in ctx.ancestors(added):
        if inner is loop:
            break
        if isinstance(inner, cst.For) and isinstance(inner.iter, cst.Attribute) and inner.iter.attr.value in LISTING_ATTRIBUTES:
            return inner.iter
    return listing


def merged_provider_tools(ctx: ModuleContext) -> Iterator[ToolMerge]:
    """Tools of several MCP servers, clients or workbenches merged in connection and listing order, never sorted:
    `for client in self.clients: all_tools.extend(client.get_tools())`, `for s in servers: for t in s.tools: ...`,
    `[tool for wb in workbenches for tool in await wb.list_tools()]`, `self.functions[f.name] = f` per session.
    A server that fails to connect (and is skipped), reconnects or lists in another order moves every tool after
    it, and the tools open the cached prefix."""
    for loop in ctx.nodes(cst.For):
        provider = _loop_variable(loop.target)
        function = ctx.enclosing_function(loop)
        if provider is None or function is None or not PROVIDERS_NAME.search(ctx.code(loop.iter)):
            continue
        if any(isinstance(a, cst.For) and ctx.contains(function, a) and PROVIDERS_NAME.search(ctx.code(a.iter))
               for a in ctx.ancestors(loop) if a is not loop):
            continue  # reported at the outer loop
        listing = _listing(ctx, loop.body, provider, paired=isinstance(loop.target, cst.Tuple))
        added = _accumulator(ctx, loop, listing) if listing is not None else None
        if listing is not None and added is not None and not sorted_in(ctx, function, added[0]):
            yield ToolMerge(_anchor(ctx, loop, listing, added[1]), added[0], ctx.code(loop.iter))
        elif listing is None:
            handed = _list_handed_to_discovery(ctx, loop)
            if handed is not None and not sorted_in(ctx, function, handed[1]):
                yield ToolMerge(handed[0], handed[1], ctx.code(loop.iter))
    for comp in ctx.nodes(cst.ListComp):
        outer = comp.for_in
        provider = _loop_variable(outer.target)
        inner = outer.inner_for_in
        if provider is None or inner is None or not PROVIDERS_NAME.search(ctx.code(outer.iter)):
            continue
        listing = _listing(ctx, inner.iter, provider)
        holder = ctx.enclosing(comp, (cst.Assign, cst.SimpleStatementLine))
        if listing is None or isinstance(ctx.parent(comp), cst.Arg) and _name_of(ctx.parent(ctx.parent(comp)) or comp) == "sorted":
            continue
        targets = [ctx.code(t.target) for t in holder.targets] if isinstance(holder, cst.Assign) else []
        if targets and sorted_in(ctx, ctx.enclosing_function(comp), targets[0]):
            continue
        yield ToolMerge(listing, targets[0] if targets else "the list", ctx.code(outer.iter))


# --- a tools list built by iterating a set kept on the object (CL201) ---------------------------------------

SET_TYPE = re.compile(r"^(?:typing\.)?(?:Set|set|FrozenSet|frozenset|AbstractSet|MutableSet)\b")


def _set_attributes(ctx: ModuleContext) -> set[str]:
    """`self.enabled_tools: Set[str] = set()`: attributes of self that hold a set (annotated or created as one)."""
    found: set[str] = set()
    for node in ctx.nodes(cst.AnnAssign):
        if isinstance(node.target, cst.Attribute) and ctx.code(node.target.value) == "self" \
                and SET_TYPE.match(ctx.code(node.annotation.annotation)):
            found.add(node.target.attr.value)
    for node in ctx.nodes(cst.Assign):
        value = node.value
        if makes_a_set(value):
            for target in node.targets:
                if isinstance(target.target, cst.Attribute) and ctx.code(target.target.value) == "self":
                    found.add(target.target.attr.value)
    return found


@dataclass(slots=True)
class SetTools:
    node: cst.CSTNode  # the iteration over the set
    tools: str
    source: str


def _set_text(source: str, name: str) -> bool:
    """The name is annotated or bound as a set somewhere in the text (`enabled: set[str]`, `names = set(...)`,
    `ids = {a, b}`): a cheap test before the scopes that `_set_binding` needs."""
    return re.search(rf"\b{re.escape(name)}\s*(?::[^=\n]*\b(?:set|Set|frozenset|FrozenSet|AbstractSet)\b|=\s*(?:set|frozenset)\(|=\s*\{{)",
                     source) is not None


def tools_from_sets(ctx: ModuleContext) -> Iterator[SetTools]:
    """`tools = [spec(f) for f in self.enabled_tools]` where `self.enabled_tools` is a set of tool names enabled
    at run time: its order follows string hashing, which changes with every process, so each process sends the
    same tools in another order. So is `tools=list(tools)` handed on where `tools` is a local set."""
    yield from _local_set_tools(ctx)
    yield from _tools_over_a_set(ctx)
    attributes = _set_attributes(ctx) if "self." in ctx.source else set()
    for comp in ctx.nodes(cst.ListComp):
        iterated = comp.for_in.iter
        holder = ctx.parent(comp)
        name = None
        if isinstance(holder, cst.Assign) and len(holder.targets) == 1:
            name = ctx.code(holder.targets[0].target)
        elif isinstance(holder, cst.Arg) and holder.keyword is not None:
            name = holder.keyword.value
        if name is None or not ACCUMULATOR_NAME.search(name.split(".")[-1]):
            continue  # asked first: the set test below needs the module's scopes, a cost only a tool list is worth
        if not ((isinstance(iterated, cst.Attribute) and ctx.code(iterated.value) == "self" and iterated.attr.value in attributes)
                or (isinstance(iterated, cst.Name) and _set_text(ctx.source, iterated.value) and _set_binding(ctx, iterated) is not None
                    and not (isinstance(comp.elt, cst.Name) and ctx.code(comp.for_in.target) == comp.elt.value))):
            continue  # self.enabled_tools, or a local / parameter set turned into tools (not names filtered: [t for t in used])
        if sorted_in(ctx, ctx.enclosing_function(comp), name):
            continue
        yield SetTools(iterated, name, ctx.code(iterated))


def _local_set_tools(ctx: ModuleContext) -> Iterator[SetTools]:
    """`tools: set[Callable] = set()` ... `tools.update(task.get_tools())` ... `run(tools=list(tools))`."""
    for call in ctx.nodes(cst.Call):
        for arg in call.args:
            if arg.keyword is None or arg.keyword.value != "tools":
                continue
            value = arg.value
            if isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and value.func.value in ("list", "tuple") and value.args:
                value = value.args[0].value
            made = _set_binding(ctx, value) if isinstance(value, cst.Name) else None
            if made is not None and value is arg.value and isinstance(made, cst.Param) and made.annotation is not None \
                    and re.search(r"\b(?:set|frozenset|Set|FrozenSet)\[\s*str\s*\]", ctx.code(made.annotation.annotation)) \
                    and not any(_iterates(ctx, callee, "tools") for callee in ctx.called_functions(call)):
                continue  # a set of names handed on as it is (`tools: set[str]`, the tool groups to enable): the callee picks by them
            if made is not None and not sorted_in(ctx, ctx.enclosing_function(call), value.value):  # type: ignore[union-attr]
                yield SetTools(ctx.statement_of(made), f"tools={ctx.code(arg.value)} (line {ctx.span(call).row})", value.value)  # type: ignore[union-attr]


def _iterates(ctx: ModuleContext, function: cst.FunctionDef, param: str) -> bool:
    """The function walks its parameter in its own order: a loop or a comprehension over it, or `list(param)`."""
    for node in descendants(function.body):
        if isinstance(node, (cst.For, cst.CompFor)) and isinstance(node.iter, cst.Name) and node.iter.value == param:
            return True
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value in ("list", "tuple") and node.args \
                and isinstance(node.args[0].value, cst.Name) and node.args[0].value.value == param:
            return True
    return False


def _tools_over_a_set(ctx: ModuleContext) -> Iterator[SetTools]:
    """`for tool_name in set(self.config.rag_tools): tools.append(make(tool_name))`: a tool list filled, in a loop,
    in the order of a set made right there (a set of names is ordered by string hashing, which changes with every
    process), and not sorted afterwards."""
    for loop in ctx.nodes(cst.For):
        if not _unordered(loop.iter) and not _bound_unordered(ctx, loop.iter):
            continue
        function = ctx.enclosing_function(loop)
        for node in descendants(loop.body):
            if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in ADDS:
                target = ctx.code(node.func.value)
            elif isinstance(node, cst.Assign) and len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Subscript) \
                    and isinstance(node.targets[0].target.value, cst.Name):
                target = node.targets[0].target.value.value  # tools[name] = ToolDefinition(...): a dict filled in the loop's order
            else:
                continue
            if ACCUMULATOR_NAME.search(target.split(".")[-1]) and not BOOKKEEPING_NAME.search(target) \
                    and not sorted_in(ctx, function, target):
                yield SetTools(loop.iter, target, ctx.code(loop.iter))
                break


def _bound_unordered(ctx: ModuleContext, expr: cst.BaseExpression) -> bool:
    """A local name bound once, in its function, to a set made there (`names = list(set(a + b))`)."""
    if not isinstance(expr, cst.Name):
        return False
    values = [v for _, v in ctx.assigned_values(expr)]
    return len(values) == 1 and values[0] is not None and _unordered(values[0])


def _unordered(expr: cst.BaseExpression) -> bool:
    """A set made where it is iterated: `set(names)`, `frozenset(...)`, `{a, b}`, a set comprehension, `list(set(...))`."""
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value in ("list", "tuple") and expr.args:
        expr = expr.args[0].value
    return makes_a_set(expr)


def _set_binding(ctx: ModuleContext, name: cst.Name) -> cst.CSTNode | None:
    """Where a local name is bound to a set: `set()`, a set literal or comprehension, or annotated `set[...]`."""
    for binding, value in ctx.assigned_values(name):
        parent = ctx.parent(binding)
        if isinstance(parent, cst.AnnAssign) and re.search(r"\b(?:set|Set|frozenset|FrozenSet)\b", ctx.code(parent.annotation.annotation)):
            return binding
        if isinstance(binding, cst.Param) and binding.annotation is not None \
                and re.match(r"(?:set|Set|frozenset|FrozenSet|AbstractSet)\b", ctx.code(binding.annotation.annotation)):
            return binding
        if isinstance(value, (cst.Set, cst.SetComp)) or (isinstance(value, cst.Call) and isinstance(value.func, cst.Name)
                                                          and value.func.value in ("set", "frozenset")):
            return binding
    return None


# --- a tool list rebuilt each step from state fetched in that step (CL202) -----------------------------------

HISTORY_ARGUMENT = re.compile(r"^(?:\w*(?:history|messages|msgs|conversation|convo|transcript|context)\w*)$", re.IGNORECASE)


@dataclass(slots=True)
class StepTools:
    node: cst.CSTNode  # the first tool added under a condition
    tools: str
    condition: str
    send: cst.Call


def _fetched_names(ctx: ModuleContext, function: cst.FunctionDef) -> set[str]:
    """Local names assigned in `function` from a call or an await: state read in this step (`viewport = await
    page.viewport()`), as opposed to parameters and settings."""
    names: set[str] = set()
    for node in descendants(function.body):
        if isinstance(node, cst.Assign) and isinstance(node.value, (cst.Await, cst.Call)):
            for target in node.targets:
                names.update(n.value for n in descendants(target.target) if isinstance(n, cst.Name))
    return names


def _framework_send(ctx: ModuleContext, function: cst.FunctionDef, tools: str) -> cst.Call | None:
    """A framework's LLM call in `function` by its keyword shape: `tools=tools` beside a history argument
    (`model_client.create(history, tools=tools)`, `llm.chat(messages=messages, tools=tools)`)."""
    for call in descendants(function.body):
        if not isinstance(call, cst.Call):
            continue
        keywords = {a.keyword.value: a for a in call.args if a.keyword is not None}
        if "tools" not in keywords or ctx.code(keywords["tools"].value) != tools:
            continue
        others = [a.value for a in call.args if a.keyword is None or a.keyword.value in ("messages", "history", "input", "conversation")]
        if any(HISTORY_ARGUMENT.match(_name_of(v) or "") for v in others):
            return call
    return None


def step_state_tools(ctx: ModuleContext) -> Iterator[StepTools]:
    """`tools = self.default_tools.copy()` then `if viewport["pageTop"] > 5: tools.append(SCROLL_UP)`, sent with
    the history: the tools at the head of the prefix follow state fetched on every step (the page, the app), so
    they change between the turns of one conversation and everything after them is prefilled again. A switch on
    a parameter or a setting is the same for every turn and stays quiet."""
    for function in ctx.nodes(cst.FunctionDef):
        fetched: set[str] | None = None
        for node in descendants(function.body):
            if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in LIST_GROWERS
                    and isinstance(node.func.value, cst.Name) and TOOLS_LIST.match(node.func.value.value)):
                continue
            condition = ctx.enclosing(node, (cst.If,))
            if condition is None or not ctx.contains(function, condition) or ctx.enclosing_function(node) is not function:
                continue
            fetched = _fetched_names(ctx, function) if fetched is None else fetched
            read = {n.value for n in descendants(condition.test) if isinstance(n, cst.Name)}
            if not read & fetched:
                continue
            send = _framework_send(ctx, function, node.func.value.value)
            if send is not None:
                yield StepTools(node, node.func.value.value, ctx.code(condition.test), send)
                break


TOOLS_LIST = re.compile(r"^\w*tools$", re.IGNORECASE)


# --- tools or tool_choice switched between the cycles of one conversation loop, sent by a helper -----------------

@dataclass(frozen=True, slots=True)
class CycleArgument:
    node: cst.CSTNode  # the first assignment of the value inside the loop
    arg: str  # tools | tool_choice
    name: str  # the local name: `final_tools`
    values: tuple[str, ...]  # the values it is given in the loop: `[tool for tool in tools if ...]`, `[]`, `tools`

    @property
    def shown(self) -> str:
        """`final_tools` and its values, as a finding says them: "`final_tools`: `[...]`; `tools`; `[]`"."""
        return f"`{self.name}`: " + "; ".join(f"`{v[:40]}`" for v in self.values[:3])


def per_cycle_arguments(ctx: ModuleContext, sites: list[CallSite], keyword: str) -> Iterator[CycleArgument]:
    """A loop that grows a conversation and hands `tools=final_tools` (or `tool_choice=`: `keyword`) to a sender,
    where the name gets different values in branches inside the loop: the forced tool alone on the first cycle, all
    tools later, none on the last. Tools open the prefix (and tool_choice keys Anthropic's cache), so each switch
    prefills the conversation again. A request in sight is judged by its own data flow instead."""
    from cachelint.check.history import grows_a_conversation

    in_sight = {id(site.node) for site in sites}
    reported: set[tuple[int, str]] = set()
    for call in ctx.nodes(cst.Call):
        if id(call) in in_sight:
            continue
        for given in call.args:
            if given.keyword is None or given.keyword.value != keyword or not isinstance(given.value, cst.Name):
                continue
            loops = ctx.loops_around(call)
            loop = loops[-1] if loops else None
            if loop is None or (id(loop), given.value.value) in reported:
                continue
            bindings = [(b, v) for b, v in ctx.assigned_values(given.value) if v is not None and ctx.contains(loop, b)]
            distinct = tuple(dict.fromkeys(" ".join(ctx.code(v).split()) for _, v in bindings))
            if len(distinct) >= 2 and grows_a_conversation(ctx, loop):
                reported.add((id(loop), given.value.value))
                first = min((b for b, _ in bindings), key=lambda b: ctx.span(b).row)
                yield CycleArgument(ctx.statement_of(first), keyword, given.value.value, distinct)


TOOL_KEYS = ("tools", "functions")


def tools_by_last_role(ctx: ModuleContext) -> Iterator[tuple[cst.CSTNode, str]]:
    """(node, history) for tools put into a request only under a test of the last message's role: `if
    messages[-1]["role"] == "user": params["tools"] = TOOLS`, or `tools=TOOLS if history[-1].role == "user" else None`."""
    from cachelint.check.values import string_value

    def last_role(test):
        for n in descendants(test):
            if isinstance(n, cst.Subscript) and ctx.code(n.slice[0].slice).strip() == "-1" \
                    and "role" in ctx.code(ctx.parent(n) or n):
                return ctx.code(n.value)
        return None

    for assign in ctx.nodes(cst.Assign):
        target = assign.targets[0].target if len(assign.targets) == 1 else None
        if not isinstance(target, cst.Subscript) or not isinstance(target.slice[0].slice, cst.Index) \
                or string_value(target.slice[0].slice.value) not in TOOL_KEYS:
            continue
        guard = ctx.enclosing(assign, (cst.If,))
        if guard is None or ctx.enclosing_function(guard) is not ctx.enclosing_function(assign):
            continue
        history = next((h for g in [guard, *[a for a in ctx.ancestors(guard) if isinstance(a, cst.If)]]
                        if (h := last_role(g.test)) is not None), None)
        if history is not None:
            yield assign, history
    for arg in ctx.nodes(cst.Arg):
        if arg.keyword is not None and arg.keyword.value in TOOL_KEYS and isinstance(arg.value, cst.IfExp):
            history = last_role(arg.value.test)
            if history is not None:
                yield arg, history
