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

import re
from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from cachelint.check.callsites import LIKELY, CallSite, added_after_history
from cachelint.check.kept_prompts import kept_by_every_caller
from cachelint.check.depends import parameters_of, positional_index
from cachelint.check.module import LIST_GROWERS, ModuleContext, argument_for, called_name, descendants as descendants_of, names_in
from cachelint.check.shared_prompts import SHARED_KINDS, shared_renderer
from cachelint.check.values import COARSE_GRANULARITY, Fact, Landing, ValueWalker, concatenated_parts, message_fields, string_value

MAX_RENDERED = 48  # messages judged per module: a renderer has a few; a fixture file may have hundreds
RENDERER_KINDS = frozenset({"unsorted_json", "dict_repr", "unordered", "volatile"})
RENDERED = "message rendered per turn"  # the callee of a renderer's stand-in call site
# keys an app keeps beside a message for itself (a UI, a store), stripped before the request
METADATA_KEYS = frozenset({"timestamp", "created_at", "updated_at", "time", "metadata", "meta", "extra"})
_LOOPS = (cst.For, cst.While, cst.ListComp, cst.GeneratorExp, cst.SetComp, cst.DictComp)


@dataclass(frozen=True, slots=True)
class Rendered:
    """One message (or content block) rendered per turn: the node and the expressions that become its text."""

    node: cst.CSTNode
    role: str | None
    values: tuple[cst.BaseExpression, ...]


def _keys(node: cst.Dict) -> dict[str, cst.BaseExpression]:
    return message_fields(node) or {}


def message_shape(node: cst.CSTNode) -> tuple[str | None, list[cst.BaseExpression]] | None:
    """(role, the expressions that become its text) when `node` is shaped like a message or a content block."""
    keys = message_fields(node)
    if keys is None:
        return None
    if isinstance(node, cst.Call):
        return (string_value(keys["role"]), [keys["content"]]) if "role" in keys and "content" in keys else None
    if "role" in keys and ("content" in keys or "tool_calls" in keys):
        values = [v for k, v in keys.items() if k not in ("role", "name", "tool_call_id", "id", "type") and k not in METADATA_KEYS]
        return string_value(keys["role"]), values
    if string_value(keys.get("type")) == "text" and "text" in keys:
        return None, [keys["text"]]
    if string_value(keys.get("type")) == "tool_result" and "content" in keys:
        return "user", [keys["content"]]
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
    senders = sending_functions(ctx, sites)
    for kind in (cst.Dict, cst.Call):
        for node in ctx.nodes(kind):
            shape = message_shape(node)
            if shape is None or not _in_function_loop(ctx, node):
                continue
            if id(ctx.enclosing_function(node)) in senders:
                continue  # an agent loop appending its new turns: rendered once and kept, judged through the request
            if not returned(ctx, node):
                continue  # stored into state the function keeps (new tool results added once): not rendered again
            role, values = shape
            values = values + _written_later(ctx, node)
            found.append(Rendered(node, role, tuple(values)))
            if len(found) >= MAX_RENDERED:
                return found
    return found


def sending_functions(ctx: ModuleContext, sites: list[CallSite]) -> set[int]:
    """Ids of the functions that send a request themselves: a recognized call, or a client no one recognizes
    called with `messages=`."""
    senders = {id(ctx.enclosing_function(site.node)) for site in sites if isinstance(site.node, cst.Call)}
    senders |= {id(ctx.enclosing_function(call)) for call in ctx.nodes(cst.Call)
                if any(a.keyword is not None and a.keyword.value == "messages" for a in call.args)}
    return senders


def returned(ctx: ModuleContext, node: cst.CSTNode) -> bool:
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


def returned_through_parameter(ctx: ModuleContext, node: cst.CSTNode) -> bool:
    """Whether the message reaches what a caller returns through a list it hands the function: the function
    appends it to its parameter (`out.append(message)`), and a caller in the module passes a list of its own that
    it returns (`out = []` ... `self.render(turn, out)` ... `return out`). A parameter that is a kept history the
    caller does not return is stored state, rendered once."""
    function = ctx.enclosing_function(node)
    if function is None:
        return False
    target = _target_name(ctx.statement_of(node), node, ctx)
    if target is None or target not in parameters_of(function):
        return False
    index = positional_index(function, target)
    for call in ctx.calls_by_name.get(function.name.value, ()):
        caller = ctx.enclosing_function(call)
        if caller is None or caller is function:
            continue
        handed = argument_for(call, target, index)
        if isinstance(handed, cst.Name) and handed.value in _returned_names(ctx, caller):
            return True
    return False


def _target_name(statement: cst.CSTNode, node: cst.CSTNode, ctx: ModuleContext) -> str | None:
    """The local name a statement puts `node` into: `x = ...`, `x += ...`, `x[k] = ...`, `x.append(...)`."""
    if isinstance(statement, cst.SimpleStatementLine):
        for small in statement.body:
            if not ctx.contains(small, node):
                continue
            if isinstance(small, cst.Assign) and len(small.targets) == 1:
                return root_name(small.targets[0].target)
            if isinstance(small, (cst.AugAssign, cst.AnnAssign)):
                return root_name(small.target)
            if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call) and isinstance(small.value.func, cst.Attribute) \
                    and small.value.func.attr.value in LIST_GROWERS:
                return root_name(small.value.func.value)
    return None


def root_name(expr: cst.BaseExpression) -> str | None:
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
                target, value = root_name(small.targets[0].target), small.value
            elif isinstance(small, (cst.AugAssign, cst.AnnAssign)):
                target, value = root_name(small.target), small.value
            elif isinstance(small, cst.Expr) and isinstance(small.value, cst.Call) and isinstance(small.value.func, cst.Attribute) \
                    and small.value.func.attr.value in LIST_GROWERS:
                target, value = root_name(small.value.func.value), small.value
            if target is not None and value is not None:
                flows.setdefault(target, set()).update(names_in(value))
    found = set()
    stack = [name for value in ctx.returns_of(function) for name in names_in(value)]
    while stack:
        name = stack.pop()
        if name not in found:
            found.add(name)
            stack.extend(flows.get(name, ()))
    cache[id(function)] = found
    return found


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
    return _new_facts(analysis, kinds, "_rendered_facts", _walk_rendered)


def _new_facts(analysis, kinds: set[str], memo: str, walk) -> Iterator[tuple[CallSite, Fact]]:
    """The facts of `kinds` that `walk` finds (memoized on the analysis as `memo`), once per node, and none
    that a request's own walk reported already."""
    facts = analysis.__dict__.get(memo)
    if facts is None:
        facts = analysis.__dict__[memo] = list(walk(analysis))
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
        stored = None
        for fact in walker.facts:
            if fact.kind not in RENDERER_KINDS or not fact.landing.prefix:
                continue
            if fact.kind == "volatile":
                stored = _over_stored_turns(ctx, node) if stored is None else stored
                if not stored:
                    continue  # messages made from this call's outputs (`for choice in response.choices`): new turns, made once
            yield site, fact


# what a loop that renders stored turns goes over: the history, its records, past queries or events
STORED_TURNS = re.compile(r"histor|messages?\b|msgs|conversation|convo|turns?\b|records|quer(?:y|ies)|exchanges|dialog|transcript"
                          r"|chat|memor|trajector", re.I)


def _over_stored_turns(ctx: ModuleContext, node: cst.CSTNode) -> bool:
    """The outermost loop around the message, in its function, goes over a stored conversation (`for r in records`,
    `for query in recent_queries`): old turns are rendered again, so a fresh id or time there changes them."""
    outer = outer_loop(ctx, node)
    if outer is None:
        return False
    walked = ctx.code(outer.iter)
    return STORED_TURNS.search(walked) is not None and NEW_OUTPUTS.search(walked) is None


# what a loop over this call's outputs goes over: the tool calls or choices of the reply (`for call in
# response_message.tool_calls`, `enumerate(completion.choices)`): new turns, made once
NEW_OUTPUTS = re.compile(r"\.(?:tool_calls|function_calls|choices)\b\)?\s*$")


def outer_loop(ctx: ModuleContext, node: cst.CSTNode) -> cst.For | cst.CompFor | None:
    """The outermost `for` (or comprehension) around `node` in its function, or None."""
    outer = None
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            break
        if isinstance(ancestor, (cst.For, cst.CompFor)):
            outer = ancestor
        elif isinstance(ancestor, (cst.ListComp, cst.GeneratorExp, cst.SetComp, cst.DictComp)):
            outer = ancestor.for_in
    return outer


# --- system prompts built as message objects or by a builder method, sent elsewhere --------------------------

SYSTEM_ROLES = ("system", "developer")
MESSAGE_TEXT_KEYWORDS = ("content", "message", "text")  # the text of a message object built with role="system"
# json.dumps is left out: a system prompt's JSON is nearly always a schema or settings the code builds in a fixed
# order (agno's output-schema prompt), and with no request in sight nothing says the dict comes from storage
SYSTEM_KINDS = frozenset({"volatile", "counter", "dict_repr", "unordered"})
SYSTEM_BUILT = "system prompt built here"  # the callee of a built system prompt's stand-in call site
# a function whose name says it builds the system prompt: get_system_message, _build_system_prompt, system_prompt
SYSTEM_BUILDER = re.compile(r"^_*(?:a?(?:get|build|make|create|render|format|compose|generate|construct|prepare)_"
                            r"(?!(?:non|not|no|without|other)_)(?:[a-z0-9]+_)?)?"  # `_build_enhance_system_prompt`: one word of its kind
                            r"(?:system_?(?:prompt|message|msg|instructions?)|sys_?prompt)s?$")  # (after a verb: not `package_system_message`)
# a name or keyword that carries the system prompt to a sender out of sight: system_prompt = ..., llm.aask(system_msgs=[...])
SYSTEM_NAME = re.compile(r"^_*(?!(?:non|not|no|without|other)_)(?:[a-z0-9]+_)?(?:system_?(?:prompt|message|msg)|sys_?prompt)s?$")
MAX_SYSTEM = 24  # system prompts judged per module
SHORT_TEXT = 2000  # characters: a single f-string shorter than this, with one value in it, is below every minimum


def _system_role(expr: cst.BaseExpression | None) -> bool:
    """A role that is the system's: the literal "system" / "developer", or a setting named for it
    (`agent.system_message_role`)."""
    if expr is None:
        return False
    value = string_value(expr)
    if value is not None:
        return value in SYSTEM_ROLES
    leaf = expr.attr.value if isinstance(expr, cst.Attribute) else expr.value if isinstance(expr, cst.Name) else ""
    return "system" in leaf.lower() and "role" in leaf.lower()


def system_message_text(node: cst.CSTNode) -> cst.BaseExpression | None:
    """The text of a system message built as an object: `{"role": "system", "content": X}`,
    `Message(role="system", content=X)` (or `message=` / `text=`), `SystemMessage(content=X)` / `SystemMessage(X)`, `("system", X)`."""
    if isinstance(node, cst.Dict):
        keys = _keys(node)
        return keys.get("content") if _system_role(keys.get("role")) else None
    if isinstance(node, cst.Call):
        keywords = {a.keyword.value: a.value for a in node.args if a.keyword is not None}
        text = next((k for k in MESSAGE_TEXT_KEYWORDS if k in keywords), None)
        if text is not None and _system_role(keywords.get("role")):  # format_chat_message(role="system", message=...)
            return keywords[text]
        if called_name(node).endswith("SystemMessage"):
            positional = [a.value for a in node.args if a.keyword is None and not a.star]
            return keywords.get("content") or (positional[0] if positional else None)
        return None
    if isinstance(node, cst.Tuple) and len(node.elements) == 2 and string_value(node.elements[0].value) in SYSTEM_ROLES:
        return node.elements[1].value
    return None


def system_prompts(ctx: ModuleContext) -> list[Rendered]:
    """System prompts built in this module's functions whatever sends them: message objects with the system
    role, and what a function named for building the system prompt returns."""
    found: list[Rendered] = []
    for kind in (cst.Dict, cst.Call, cst.Tuple):
        for node in ctx.nodes(kind):
            text = system_message_text(node)
            if text is None or ctx.enclosing_function(node) is None or _provably_short(text) or _appended(ctx, node):
                continue
            found.append(Rendered(node, "system", (text,)))
            if len(found) >= MAX_SYSTEM:
                return found
    for text in _named_system_texts(ctx):
        if not _provably_short(text) and system_message_text(text) is None:
            found.append(Rendered(text, "system", (text,)))
            if len(found) >= MAX_SYSTEM:
                return found
    for function in ctx.nodes(cst.FunctionDef):
        shared = not SYSTEM_BUILDER.match(function.name.value) and bool(shared_renderer(ctx, function))
        if not SYSTEM_BUILDER.match(function.name.value) and not shared:
            continue
        for value in ctx.returns_of(function):
            inner = value.body if isinstance(value, cst.IfExp) else value
            # a message: found above; a shared renderer's text may be one part of its callers' longer prompt
            if value is not None and system_message_text(inner) is None and (shared or not _provably_short(value)):
                found.append(Rendered(value, "system", (value,)))
        if len(found) >= MAX_SYSTEM:
            break
    for value, _ in placeholder_fills(ctx):  # last: a fill takes a place only when a clock or a random value may fill it
        if len(found) >= MAX_SYSTEM:
            break
        found.append(Rendered(value, "system", (value,)))
    return found


# a template placeholder: `{DATE}`, `{{current_time}}`, `[DATE]`, `$DATE`, `${DATE}`, `<DATE>`, `%DATE%`
PLACEHOLDER = re.compile(r"^(?:\{\{?\s*[A-Za-z_][\w.]*\s*\}\}?|\[[A-Z][A-Z0-9_]*\]|\$\{?[A-Z][A-Z0-9_]*\}?|<[A-Z][A-Z0-9_]+>|%[A-Z][A-Z0-9_]*%)$")
PROMPT_WORD = re.compile(r"prompt", re.I)


def placeholder_fills(ctx: ModuleContext) -> Iterator[tuple[cst.BaseExpression, str]]:
    """(value, placeholder) for each clock or random value a function puts into a prompt template's placeholder, in a
    module that speaks of prompts: `text.replace("{DATE}", time.strftime("%H:%M %Y-%m-%d"))`, or a table of them,
    `{"{DATE}": ..., "{USER}": ...}` (Newelle's `replace_variables_dict`). The filled template is the system prompt of
    every request that uses it, built fresh each time it is filled. Only in a function named for filling prompt
    variables or templates (or one that fills a text named so), that sends no request itself (its own request is
    judged where it is sent) and puts the text into no user message."""
    if not PROMPT_WORD.search(ctx.source):
        return
    verdicts: dict[tuple[int, bool], bool] = {}

    def filling(node: cst.CSTNode, text: cst.BaseExpression | None) -> bool:
        function = ctx.enclosing_function(node)
        if function is None:
            return False
        named = text is None or FILLED_TEXT.search(ctx.code(text)) is None
        key = (id(function), named)
        if key not in verdicts:
            verdicts[key] = _fills_prompts(ctx, function, named)
        return verdicts[key]

    for call in ctx.nodes(cst.Call):
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value == "replace" and len(call.args) == 2:
            key = string_value(call.args[0].value)
            if key is not None and PLACEHOLDER.match(key) and FILL_VOLATILE.search(ctx.code(call.args[1].value)) \
                    and filling(call, func.value):
                yield call.args[1].value, key
    for table in ctx.nodes(cst.Dict):
        for element in table.elements:
            key = string_value(element.key) if isinstance(element, cst.DictElement) else None
            if key is not None and PLACEHOLDER.match(key) and FILL_VOLATILE.search(ctx.code(element.value)) and filling(table, None):
                yield element.value, key
    for assign in ctx.nodes(cst.Assign):
        key = _template_context_key(ctx, assign)
        if key is not None and FILL_VOLATILE.search(ctx.code(assign.value)) and filling(assign, None) \
                and not _rendered_into_a_user_message(ctx, assign):
            yield assign.value, key


def _rendered_into_a_user_message(ctx: ModuleContext, node: cst.CSTNode) -> bool:
    """A function of the module that calls the filler (`USER_TEMPLATE.render(**build_prompt_vars(q))`) builds a user
    message: the values go into the newest message, where a clock belongs."""
    function = ctx.enclosing_function(node)
    if function is None:
        return False
    for call in ctx.calls_by_name.get(function.name.value, []):
        caller = ctx.enclosing_function(call)
        if caller is not None and caller is not function and USER_MESSAGE.search(ctx.code(caller)):
            return True
    return False


def _template_context_key(ctx: ModuleContext, assign: cst.Assign) -> str | None:
    """`{{current_datetime}}` for `prompt_context["current_datetime"] = ...`: a variable of the dict a template is
    rendered with (a Jinja template names its variables bare), or None."""
    target = assign.targets[0].target if len(assign.targets) == 1 else None
    if not (isinstance(target, cst.Subscript) and isinstance(target.value, cst.Name) and TEMPLATE_CONTEXT.search(target.value.value)
            and isinstance(target.slice[0].slice, cst.Index)):
        return None
    key = string_value(target.slice[0].slice.value)
    return f"{{{{{key}}}}}" if key is not None and key.isidentifier() else None


# what may fill a placeholder and vary: a clock or a random value (the walk then says how often it changes)
FILL_VOLATILE = re.compile(r"strftime|\bnow\(|\btime\(|\btoday\(|\buuid\d?\(|\brandom\.|\btoken_hex\(|\burandom\(|isoformat\(")
# the dict a prompt template is rendered with: `prompt_context`, `prompt_vars`
TEMPLATE_CONTEXT = re.compile(r"prompt\w*?_?(?:context|vars|variables|values|kwargs|params)$", re.I)  # (an e-mail's template_context is not)
# the module's text fills a placeholder (gate.py asks before parsing): `.replace("{DATE}", ...`, `{"{DATE}": ...`,
# `prompt_context["now"] = ...`
PLACEHOLDER_FILL = re.compile(r"""(?:\.replace\(\s*|[{,]\s*)["'](?:""" + PLACEHOLDER.pattern[4:-2] + r""")["']\s*[,:]"""
                              r"""|(?i:prompt)\w*?_?(?i:context|vars|variables|values|kwargs|params)\[["']\w+["']\]\s*=(?!=)""")
# a function named for filling the variables of prompt templates, or the text it fills
FILLER = re.compile(r"variables?|placeholders?|prompts?|templates?|instructions?|system", re.I)
FILLED_TEXT = re.compile(r"prompt|template|instruction|system", re.I)
USER_MESSAGE = re.compile(r"""["']role["']\s*:\s*["']user["']|\brole\s*=\s*["']user["']|HumanMessage\(|UserMessage\(""")
SENDS = re.compile(r"\.(?:create|completion|acompletion|stream|invoke|ainvoke|generate|chat)\(")


def _fills_prompts(ctx: ModuleContext, function: cst.FunctionDef, named: bool) -> bool:
    """The function is named for filling prompt variables (when `named`; else the text it fills is named for a prompt),
    sends no request and builds no user message: `replace_variables(text)`, `prompt_variables()`."""
    if named and not FILLER.search(function.name.value):
        return False
    code = ctx.code(function)
    return USER_MESSAGE.search(code) is None and SENDS.search(code) is None


def filled_placeholder(ctx: ModuleContext, node: cst.CSTNode) -> str | None:
    """The placeholder a value of placeholder_fills fills (`{DATE}`), or None for any other node."""
    parent = ctx.parent(node)
    key = None
    if isinstance(parent, cst.DictElement) and parent.value is node:
        key = string_value(parent.key)
    elif isinstance(parent, cst.Arg):
        call = ctx.parent(parent)
        if isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and call.func.attr.value == "replace" \
                and len(call.args) == 2 and call.args[1] is parent:
            key = string_value(call.args[0].value)
    elif isinstance(parent, cst.Assign) and parent.value is node:
        return _template_context_key(ctx, parent)
    return key if key is not None and PLACEHOLDER.match(key) else None


def _made_in_the_pass(ctx: ModuleContext, loop: cst.CSTNode, listed: str) -> bool:
    """`messages = []` inside the loop: the list is made empty on each pass, so what is appended to it opens the
    request, not a kept history (`history = step(history)` continues it, and what is appended to a copy of a
    history, `msgs = list(node.history)`, comes after it)."""
    return any(isinstance(n, cst.Assign) and any(ctx.code(t.target) == listed for t in n.targets) and (
        isinstance(n.value, cst.List) and not n.value.elements
        or isinstance(n.value, cst.Call) and called_name(n.value) == "list" and not n.value.args) for n in descendants_of(loop))


def _appended(ctx: ModuleContext, message: cst.CSTNode) -> bool:
    """A system-role message added after the history (`history + [Message(role="system", ...)]`, or
    `messages.append({"role": "system", ...})` in a loop): the newest message, kept as it was sent, not the prompt
    that opens the conversation."""
    parent = ctx.parent(message)
    if isinstance(parent, cst.Assign) and len(parent.targets) == 1 and isinstance(parent.targets[0].target, cst.Name):
        # `variation_msg = {"role": "system", ...}`, then `messages.append(variation_msg)` in the loop
        name, function = parent.targets[0].target.value, ctx.enclosing_function(parent)
        return any(isinstance(c.func, cst.Attribute) and c.func.attr.value == "append" and len(c.args) == 1
                   and isinstance(c.args[0].value, cst.Name) and c.args[0].value.value == name
                   and ctx.enclosing_function(c) is function and bool(ctx.loops_around(c))
                   and not _made_in_the_pass(ctx, ctx.loops_around(c)[0], ctx.code(c.func.value)) for c in ctx.nodes(cst.Call))
    if isinstance(parent, cst.Arg):
        call = ctx.parent(parent)
        return isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and call.func.attr.value == "append" \
            and bool(ctx.loops_around(call))  # appended on each pass of a loop; a first append opens the list
    if isinstance(parent, cst.Element):
        listed = ctx.parent(parent)
        return isinstance(listed, cst.List) and added_after_history(ctx, listed)
    return False


def _named_system_texts(ctx: ModuleContext) -> Iterator[cst.BaseExpression]:
    """Values a function names as the system prompt: assigned to `system_prompt` / `self.system_prompt`, or
    passed as `system_prompt=` / `system_msgs=` to a call (a framework's sender this module does not see)."""
    for assign in ctx.nodes(cst.Assign):
        if len(assign.targets) != 1 or ctx.enclosing_function(assign) is None:
            continue
        target = assign.targets[0].target
        leaf = target.attr.value if isinstance(target, cst.Attribute) else target.value if isinstance(target, cst.Name) else ""
        if SYSTEM_NAME.match(leaf.lower()) and not _only_inside_other_text(ctx, assign, target):
            yield assign.value
    for call in ctx.nodes(cst.Call):
        for arg in call.args:
            if arg.keyword is not None and SYSTEM_NAME.match(arg.keyword.value.lower()) and ctx.enclosing_function(call) is not None:
                yield arg.value


def _only_inside_other_text(ctx: ModuleContext, assign: cst.Assign, target: cst.BaseExpression) -> bool:
    """`system_prompt = SYSTEM.replace(...)` read only as a piece of another text (`PROMPT.replace("{{system}}",
    system_prompt)`, an f-string, a `+`) that no name of a system prompt receives: a section of a prompt whose role
    is decided where that prompt is sent (a user message, often), not a system prompt of its own."""
    function = ctx.enclosing_function(assign)
    if not isinstance(target, cst.Name) or function is None:
        return False
    reads = [n for n in descendants_of(function) if isinstance(n, cst.Name) and n.value == target.value and n is not target
             and not isinstance(ctx.parent(n), (cst.AssignTarget, cst.Param))]
    if not reads:
        return False
    for read in reads:
        parent = ctx.parent(read)
        if isinstance(parent, cst.Arg):
            call = ctx.parent(parent)  # TEMPLATE.replace("{{system}}", system_prompt) / TEMPLATE.format(system=system_prompt)
            embedded = isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and call.func.attr.value in ("replace", "format")
        else:
            embedded = False  # an f-string or a `+` may open with it: it still starts the prompt it is in
        if not embedded:
            return False
        holder = ctx.enclosing(read, (cst.Assign,))
        if isinstance(holder, cst.Assign) and any(SYSTEM_NAME.match(ctx.code(t.target).rsplit(".", 1)[-1].lower()) for t in holder.targets):
            return False  # system_prompt = base_system_prompt + extra: still the system prompt
        if holder is None or not ctx.contains(function, holder):
            return False
    return True


def _provably_short(text: cst.BaseExpression) -> bool:
    """A literal, or one f-string with at most one value in it, shorter than any provider's minimum cacheable
    length: alone in a system prompt it is never cached (a date in a two-line prompt breaks nothing). Also the
    lines of a prompt written out as a list of such texts (`system_prompt = ["You are ...", f"... {name}.", "",
    f"Now is {datetime.now().isoformat()}."]`, joined where it is sent), with no more than one value in them besides
    the clock or id that would be judged."""
    if isinstance(text, cst.SimpleString):
        return True
    if isinstance(text, cst.FormattedString):
        values = [p for p in text.parts if isinstance(p, cst.FormattedStringExpression)]
        literal = sum(len(p.value) for p in text.parts if isinstance(p, cst.FormattedStringText))
        return len(values) <= 1 and 0 < literal < SHORT_TEXT  # f"{build_prompt()}" alone is as long as what it holds
    if isinstance(text, (cst.List, cst.Tuple)) and text.elements:
        lines = [piece for e in text.elements
                 for piece in (concatenated_parts(e.value) if isinstance(e.value, cst.ConcatenatedString) else [e.value])]
        if not all(isinstance(line, (cst.SimpleString, cst.FormattedString)) for line in lines):
            return False  # `[intro, *sections]`, `[HANDBOOK, ...]`: a part as long as what it holds
        values = [p for line in lines if isinstance(line, cst.FormattedString) for p in line.parts
                  if isinstance(p, cst.FormattedStringExpression)]
        literal = sum(len(line.value) for line in lines if isinstance(line, cst.SimpleString)) + sum(
            len(p.value) for line in lines if isinstance(line, cst.FormattedString) for p in line.parts
            if isinstance(p, cst.FormattedStringText))
        return len(values) <= 2 and literal < SHORT_TEXT
    return False


def is_system_built(site: CallSite) -> bool:
    return site.callee == SYSTEM_BUILT


def describe_system(analysis, site: CallSite) -> str:
    function = analysis.ctx.enclosing_function(site.node)
    callers = shared_renderer(analysis.ctx, function) if function is not None else ()
    if callers:
        more = f" and {len(callers) - 3} more" if len(callers) > 3 else ""
        return (f"what `{function.name.value}()` renders, a prompt renderer called from {len(callers)} places of the project "
                f"({', '.join(callers[:3])}{more}; a prompt by its shape)")
    placeholder = filled_placeholder(analysis.ctx, site.node)
    if placeholder is not None:
        return (f"the prompt template's placeholder `{placeholder}` filled on line {analysis.ctx.span(site.node).row} (a prompt "
                "by its shape; the filled template is sent elsewhere)")
    return (f"the system prompt built on line {analysis.ctx.span(site.node).row} (a prompt by its shape; "
            "its request is sent elsewhere)")


def system_facts(analysis, kinds: set[str]) -> Iterator[tuple[CallSite, Fact]]:
    """Facts of some kinds found in system prompts built here and sent elsewhere; memoized on the analysis.
    A value computed once per process, or one that changes only daily, is left out: with no request in sight,
    nothing says it matters."""
    return _new_facts(analysis, kinds, "_system_facts", _walk_system)


def _walk_system(analysis) -> Iterator[tuple[CallSite, Fact]]:
    ctx = analysis.ctx
    for built in system_prompts(ctx):
        site = CallSite(built.node, "openai-chat", SYSTEM_BUILT, {}, LIKELY)  # type: ignore[arg-type]
        walker = ValueWalker(ctx, site, analysis.options.volatile_functions)
        landing = Landing("messages", prefix=True, role="system", item=True)
        for value in built.values:
            walker.walk(value, landing, 0)
        function = ctx.enclosing_function(built.node)
        shared = function is not None and not SYSTEM_BUILDER.match(function.name.value) and bool(shared_renderer(ctx, function))
        kept = None
        for fact in walker.facts:
            if fact.kind not in (SHARED_KINDS if shared else SYSTEM_KINDS) or not fact.landing.prefix or fact.when == "per process":
                continue
            if fact.kind in ("volatile", "counter") and function is not None and SYSTEM_BUILDER.match(function.name.value):
                kept = kept_by_every_caller(ctx.filename, function.name.value) if kept is None else kept
                if kept:
                    continue  # built once when the conversation starts and kept: its draw is that conversation's (kept_prompts.py)
            if fact.kind == "volatile" and fact.granularity in COARSE_GRANULARITY:
                continue  # a date: the prompt changes once a day, and nothing in sight says it is long or reused
            yield site, fact
