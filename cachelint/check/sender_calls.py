"""A conversation resent through the app's own sending function, where the request itself is out of sight (CL501).

Many apps do not call the SDK in the loop that runs the conversation: they call a function of their own
(`await generate_text(messages=messages, tools=schemas, model_name=name)`) that builds the request and sends it
through litellm, or through a small client class (`self.llm.acall(self.messages)`). The loop, or the object that
keeps the conversation, is in one place; the request, which is where a breakpoint would go, in another. Two
shapes are judged:

- a loop of this module that appends to the list it passes as `messages` to a function of the tree that sends
  it (`loops_through_a_sender`), reported at the call;
- a sending function whose messages come from its parameter, called by a method of this module with the
  conversation the object keeps (`self.messages`, appended to turn by turn by the class), through at most two
  calls (`add_message` -> `self.call_llm(self.messages)` -> `self.llm.acall(messages)`) (`object_conversation_callers`),
  reported at the request.

Either one matters only where the request reaches Anthropic: the Anthropic SDK, or litellm with a model that is not
written as another provider's, in a tree that names a Claude model it can be run with and sets no breakpoint
anywhere (the caller checks that).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import libcst as cst

from cachelint.check.callsites import CallSite, module_sites
from cachelint.check.gate import sends_requests
from cachelint.check.module import LIST_GROWERS, ModuleContext, argument_for, descendants, read_names

MAX_CALLS = 24  # calls with `messages=` looked at in one module


@dataclass(frozen=True, slots=True)
class ThroughSender:
    call: cst.Call  # the call of the sending function, in this module
    history: str  # the list the loop grows
    sender: str  # the function that sends it
    site: CallSite  # the request it reaches
    prompt: str | None = None  # the keyword of a prompt built from the list (`user_prompt=`), None when the list is the messages


def loops_through_a_sender(ctx: ModuleContext) -> list[ThroughSender]:
    """Calls in a conversation loop of this module that pass a list the loop appends to as `messages` to a function of
    the tree (another module's, or a method of this one) whose body sends a request with them."""
    from cachelint.check.conversation import grows_in
    from cachelint.check.static_prefix import conversation_loops

    found: list[ThroughSender] = []
    calls = [c for c in ctx.nodes(cst.Call) if any(a.keyword is not None and a.keyword.value == "messages" for a in c.args)]
    for call in calls[:MAX_CALLS]:
        messages = next(a.value for a in call.args if a.keyword is not None and a.keyword.value == "messages")
        if not isinstance(messages, cst.Name):
            continue
        loops = conversation_loops(ctx, call)
        if not loops or not grows_in(ctx, messages, loops[-1]) or _made_in_each_pass(ctx, messages, loops[-1]):
            continue
        if any(a.keyword is not None and a.keyword.value in MODEL_KEYWORDS and _another_providers(a.value) for a in call.args):
            continue  # `generate_text(..., model_name="openai/gpt-4o-mini")`: the caller names the model, and not a Claude
        reached = _sending_site(ctx, call, "messages")
        if reached is not None and not _sent_with_anothers_default(reached, call):
            found.append(ThroughSender(call, messages.value, reached[0], reached[1]))
    found += _prompts_through_a_sender(ctx, grows_in, conversation_loops)
    return found


# the keywords a sending function takes its prompt text by: `llm_completion(user_prompt=filled_in_prompt, model=...)`
PROMPT_KEYWORDS = frozenset({"prompt", "user_prompt", "system_prompt", "user_message", "instruction", "instructions"})


def _prompts_through_a_sender(ctx: ModuleContext, grows_in, conversation_loops) -> list[ThroughSender]:
    """A loop that writes a report section by section, each request's prompt built from the sections written so far
    (`already = "\\n\\n".join(sections)`, `prompt = TEMPLATE.format(already_written=already, ...)`,
    `llm_completion(user_prompt=prompt)`, then `sections.append(response.content)`), handed to a function of the tree
    that sends it: each request resends the previous one's text with the newest section added. Not a batch the loop
    empties after each request (`batch.clear()`, `batch = []`), nor a prompt that reads only an item or the size of
    the list (`written[-1]`, `len(written)`)."""
    found: list[ThroughSender] = []
    calls = [c for c in ctx.nodes(cst.Call) if any(a.keyword is not None and a.keyword.value in PROMPT_KEYWORDS for a in c.args)]
    for call in calls[:MAX_CALLS]:
        keyword, prompt = next((a.keyword.value, a.value) for a in call.args if a.keyword is not None and a.keyword.value in PROMPT_KEYWORDS)
        loops = conversation_loops(ctx, call)
        if not loops:
            continue
        grown = _read_grown(ctx, prompt, loops[-1], grows_in) if not isinstance(prompt, cst.Name) \
            else _built_from_grown(ctx, prompt, loops[-1], grows_in)
        if grown is None or _emptied_in(ctx, grown, loops[-1]):
            continue
        if any(a.keyword is not None and a.keyword.value in MODEL_KEYWORDS and _another_providers(a.value) for a in call.args):
            continue
        reached = _sending_site(ctx, call, keyword)
        if reached is not None and not _sent_with_anothers_default(reached, call):
            found.append(ThroughSender(call, grown.value, reached[0], reached[1], prompt=keyword))
    return found


def _built_from_grown(ctx: ModuleContext, name: cst.Name, loop: cst.CSTNode, grows_in, depth: int = 0) -> cst.Name | None:
    """The list, appended to in `loop`, that `name`'s value in the loop is made of (through at most four assignments
    in the loop: a join, a dict of template arguments, the filled template), or None."""
    if depth > 4:
        return None
    for binding, value in ctx.assigned_values(name):
        if value is not None and ctx.contains(loop, binding):
            found = _read_grown(ctx, value, loop, grows_in, depth, skip=name.value)
            if found is not None:
                return found
    return None


def _read_grown(ctx: ModuleContext, expr: cst.BaseExpression, loop: cst.CSTNode, grows_in, depth: int = 0,
                skip: str | None = None) -> cst.Name | None:
    """The grown list an expression reads (`user_prompt=TEMPLATE.format(done="\\n".join(written))` at the call, or the
    value a name is bound to), directly or through the names it reads (`skip`: the name being bound, `x = f(x)`)."""
    for read in ([expr] if isinstance(expr, cst.Name) else read_names(ctx, expr)):
        if read.value == skip or (isinstance(parent := ctx.parent(read), cst.Arg) and parent.keyword is read):
            continue
        if grows_in(ctx, read, loop):
            return read if _resent(ctx, read) else None
        inner = _built_from_grown(ctx, read, loop, grows_in, depth + 1)
        if inner is not None:
            return inner
    return None


def _resent(ctx: ModuleContext, read: cst.Name) -> bool:
    """The list is read whole (joined, formatted, copied), not one item of it (`written[-1]`) or its size (`len(written)`)."""
    parent = ctx.parent(read)
    if isinstance(parent, cst.Subscript) and parent.value is read and all(isinstance(e.slice, cst.Index) for e in parent.slice):
        return False
    if isinstance(parent, cst.Arg):
        call = ctx.parent(parent)
        if isinstance(call, cst.Call) and isinstance(call.func, cst.Name) and call.func.value in ("len", "bool", "any", "all"):
            return False
    return True


def _emptied_in(ctx: ModuleContext, name: cst.Name, loop: cst.CSTNode) -> bool:
    """`batch.clear()`, `del batch[:]` or `batch = []` inside the loop: a batch sent and begun again, no text that grows."""
    if any(call.func.attr.value == "clear" and ctx.contains(loop, call)  # type: ignore[attr-defined]
           for call in ctx.calls_on.get(name.value, [])):
        return True
    return any(ctx.contains(loop, binding) and isinstance(value, (cst.List, cst.ListComp, cst.Call))
               and not _uses_name(value, name.value) for binding, value in ctx.assigned_values(name) if value is not None) \
        or any(isinstance(n, cst.Del) and name.value in ctx.code(n) for n in descendants(loop))


def _uses_name(node: cst.CSTNode, name: str) -> bool:
    return any(isinstance(n, cst.Name) and n.value == name for n in (node, *descendants(node)))


def _sent_with_anothers_default(reached: tuple[str, CallSite, cst.FunctionDef | None], call: cst.Call) -> bool:
    """The sending function takes its model from a parameter whose default is another provider's model
    (`def llm_completion(user_prompt, model="gpt-4o-mini")`), and this call does not pass one."""
    _, site, function = reached
    model = site.arg("model")
    if not isinstance(model, cst.Name):
        return False
    passed = {a.keyword.value for a in call.args if a.keyword is not None}
    if model.value in passed or any(a.star == "**" for a in call.args):
        return False
    params = [p for p in (*function.params.params, *function.params.kwonly_params)] if function is not None else []
    default = next((p.default for p in params if p.name.value == model.value), None)
    return default is not None and _another_providers(default)


MODEL_KEYWORDS = frozenset({"model", "model_name", "model_id", "llm_model"})


def _another_providers(value: cst.BaseExpression) -> bool:
    """A model written as a string (or an f-string that starts with its provider) that is not a Claude."""
    from cachelint.check.values import string_value

    text = string_value(value)
    if text is None and isinstance(value, cst.FormattedString) and value.parts and isinstance(value.parts[0], cst.FormattedStringText):
        text = value.parts[0].value  # f"openai/{name}": the provider is written
        return not re.search(r"claude|anthropic|bedrock|vertex", text, re.I) and "/" in text
    return text is not None and not re.search(r"claude|anthropic", text, re.I)


def _made_in_each_pass(ctx: ModuleContext, name: cst.Name, loop: cst.CSTNode) -> bool:
    """`messages = [system, {"role": "user", ...}]` inside the loop: a new list each pass, no conversation that grows."""
    return any(value is not None and ctx.contains(loop, binding) and isinstance(value, (cst.List, cst.ListComp))
               and not any(isinstance(e, cst.StarredElement) for e in getattr(value, "elements", ()))
               for binding, value in ctx.assigned_values(name))


def _sending_site(ctx: ModuleContext, call: cst.Call, param: str, depth: int = 0) -> tuple[str, CallSite, cst.FunctionDef | None] | None:
    """(the function's name, the request, the function the request is in) when the function `call` calls is defined in the tree and sends what it is
    given as `param` itself, or hands it to a function that does (`**kwargs` forwarding included: the module's own
    wrappers are call sites already)."""
    from cachelint.check.history import foreign_callee

    try:
        target = foreign_callee(ctx, call)
    except (RecursionError, ValueError, OSError):
        return None
    if target is None:
        return None
    other, function = target
    params = [p.name.value for p in function.params.params]
    if param not in params and function.params.star_kwarg is None:
        return None
    for site in _sites(other):
        if other.contains(function, site.node):
            return function.name.value, site, other.enclosing_function(site.node)
    if depth >= 1:
        return None
    for inner in (n for n in descendants(function.body) if isinstance(n, cst.Call)):
        passed = argument_for(inner, param, 0) if param in params else None
        if isinstance(passed, cst.Name) and passed.value == param or any(a.star == "**" for a in inner.args):
            reached = _sending_site(other, inner, param if param in params else "messages", depth + 1)
            if reached is not None:
                return function.name.value, reached[1], reached[2]
    return None


def object_conversation_callers(ctx: ModuleContext, site: CallSite) -> str | None:
    """The request sends its function's parameter, and a method of this module calls that function (through at most
    one more function that hands the parameter on) with `self.<history>`, a list its class appends to from turn to
    turn: the code of that argument (`self.messages`), else None."""
    from cachelint.check.history import foreign_callee
    from cachelint.check.static_prefix import HISTORY_ATTRIBUTE, forwarded_history

    forwarded = forwarded_history(ctx, site)
    function = ctx.enclosing_function(site.node)
    if forwarded is None or function is None or function.name.value != forwarded.function:
        return None
    frontier = [(function, forwarded.param)]
    for _ in range(2):
        following = []
        for sender, param in frontier:
            params = [p.name.value for p in sender.params.params]
            if param not in params:
                continue
            method = bool(params) and params[0] in ("self", "cls")
            for call in ctx.calls_by_name.get(sender.name.value, [])[:MAX_CALLS]:
                try:
                    callee = foreign_callee(ctx, call)
                except (RecursionError, ValueError, OSError):
                    continue
                if callee is None or callee[1] is not sender:
                    continue
                value = argument_for(call, param, params.index(param) - method)
                caller = ctx.enclosing_function(call)
                if isinstance(value, cst.Attribute) and isinstance(value.value, cst.Name) and value.value.value == "self" \
                        and HISTORY_ATTRIBUTE.match(value.attr.value) and _grown_by_its_class(ctx, call, value.attr.value) \
                        and not (caller is not None and bound_afresh(ctx, caller, value.attr.value)):
                    return ctx.code(value)
                if isinstance(value, cst.Name) and caller is not None:
                    following.append((caller, value.value))
        frontier = following
    return None


def _sites(ctx: ModuleContext) -> list[CallSite]:
    """The requests of a module of the tree (none where it imports no SDK and calls no completion by its shape)."""
    return module_sites(ctx) if sends_requests(ctx.source) else []


def bound_afresh(ctx: ModuleContext, function: cst.FunctionDef, attribute: str) -> bool:
    """`self.messages = [system]` in the method: a new list for each call, no conversation kept from turn to turn."""
    return any(isinstance(n, (cst.Assign, cst.AnnAssign)) and any(
        isinstance(t, cst.Attribute) and isinstance(t.value, cst.Name) and t.value.value == "self" and t.attr.value == attribute
        for t in ([x.target for x in n.targets] if isinstance(n, cst.Assign) else [n.target])) for n in descendants(function))


def _grown_by_its_class(ctx: ModuleContext, call: cst.Call, attribute: str) -> bool:
    """The class of the method that makes `call` appends to `self.<attribute>` (or to an entry of it,
    `self.messages[KEY].append(...)`) in a method that does not set the object up (`__init__`, `setup`, `load_...`):
    a list that grows while the object is used, not one filled once."""
    from cachelint.check.class_state import SETUP

    cls = ctx.enclosing(call, (cst.ClassDef,))
    if not isinstance(cls, cst.ClassDef):
        return False
    for node in descendants(cls):
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in LIST_GROWERS:
            owner = ctx.enclosing_function(node)
            if _self_root(node.func.value) == attribute and owner is not None and not SETUP.match(owner.name.value):
                return True
    return False


@dataclass(frozen=True, slots=True)
class StoredConversation:
    caller: str  # where it is handed over: `shortanswer.py:173`
    stored: str  # what the turns are kept in: `self.messages`


def stored_conversation_callers(ctx: ModuleContext, site: CallSite) -> StoredConversation | None:
    """The request sends the messages its function is handed, and a caller in the tree (this module or another,
    tests left out) hands it a conversation rebuilt from the turns an object keeps (`messages = [system]`, then `for
    i in range(len(self.messages["user"])): messages.append(...)` from them) and adds each new turn to after the answer
    (`self.messages["user"].append(submission)`): a chat whose every request resends the earlier turns, through a
    sender that never sees the loop. The first such caller, else None."""
    import os
    from pathlib import Path

    from cachelint.check.project import module_context
    from cachelint.check.static_prefix import caller_files, forwarded_history

    forwarded = forwarded_history(ctx, site)
    function = ctx.enclosing_function(site.node)
    if forwarded is None or function is None or function.name.value != forwarded.function:
        return None
    params = [p.name.value for p in function.params.params]
    if forwarded.param not in params:
        return None
    method = bool(params) and params[0] in ("self", "cls")
    index = params.index(forwarded.param) - method
    others = [(ctx, ctx.filename)]
    for path in caller_files(ctx.filename, function.name.value):
        other = module_context(Path(path))
        if other is not None:
            others.append((other, path))
    for other, path in others:
        for call in other.calls_by_name.get(function.name.value, [])[:MAX_CALLS]:
            value = argument_for(call, forwarded.param, index)
            caller = other.enclosing_function(call)
            if value is None or caller is None:
                continue
            made = _rebuilt_from(caller, value.value) if isinstance(value, cst.Name) else _made_of_stored(value)
            if not made and isinstance(value, cst.Name):
                made = _returned_by_a_method(other, value)
            stored = next((attr for attr in made if _grown_by_its_class(other, call, attr)), None)
            if stored is not None:
                where = os.path.relpath(path, os.path.dirname(os.path.abspath(ctx.filename))) if path != ctx.filename else os.path.basename(path)
                return StoredConversation(f"{where}:{other.span(call).row}", f"self.{stored}")
    return None


def _rebuilt_from(function: cst.FunctionDef, name: str) -> list[str]:
    """The attributes of `self` whose entries a loop of the function appends to the list `name` (`for i in
    range(len(self.messages[KEY])): messages.append({... self.messages[KEY][i] ...})`), that it extends the list
    with (`messages.extend(self.turns)`), or that the list is made of (`[system, *self.turns, user]`,
    `[system] + self.turns + [user]`)."""
    found: list[str] = []
    for node in descendants(function.body):
        sources: list[cst.CSTNode] = []
        if isinstance(node, cst.Assign) and len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name) \
                and node.targets[0].target.value == name:
            found += _made_of_stored(node.value)
        elif isinstance(node, cst.For):
            grows = [n for n in descendants(node.body) if isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute)
                     and n.func.attr.value in LIST_GROWERS and isinstance(n.func.value, cst.Name) and n.func.value.value == name]
            sources = [node.iter, *(a.value for g in grows for a in g.args)] if grows else []
        elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "extend" \
                and isinstance(node.func.value, cst.Name) and node.func.value.value == name and node.args:
            sources = [node.args[0].value]
        found += [root for source in sources for root in map(_self_root, [source, *descendants(source)]) if root is not None]
    return found


def _returned_by_a_method(ctx: ModuleContext, name: cst.Name) -> list[str]:
    """The attributes of `self` that a function of the module hands back as `name` (`message, memory =
    self.prepare_inputs(...)`, where `prepare_inputs` does `memory = self.context` ... `return message, memory`): the
    element at the name's position of what it returns (callsites.unpacked_values), or all of a single value."""
    from cachelint.check.callsites import unpacked_values

    found: list[str] = []
    for binding, value in ctx.assigned_values(name):
        if value is None:
            returned = unpacked_values(ctx, binding)
        elif isinstance(value, cst.Call):
            returned = [r for function in ctx.called_functions(value) for r in ctx.returns_of(function)]
        else:
            continue
        for element in returned:
            helper = ctx.enclosing_function(element)
            if isinstance(element, cst.Name) and helper is not None:
                found += _rebuilt_from(helper, element.value)
            elif not isinstance(element, cst.Call):
                found += _made_of_stored(element)
    return found


def _made_of_stored(value: cst.BaseExpression) -> list[str]:
    """The attributes of `self` a list is made of: `[system, *self.turns, user]`, `[system] + self.turns + [user]`."""
    parts = [e.value for e in value.elements if isinstance(e, cst.StarredElement)] if isinstance(value, cst.List) else _added_operands(value)
    return [root for part in parts if (root := _self_root(part)) is not None]


def _added_operands(node: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The operands of `a + b + c`."""
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add):
        return [*_added_operands(node.left), *_added_operands(node.right)]
    return [node]


def _self_root(node: cst.CSTNode) -> str | None:
    """`history` of `self.history`, `self.history[KEY]`, `self.history[KEY][i]`."""
    from cachelint.check.static_prefix import self_attribute

    while isinstance(node, cst.Subscript):
        node = node.value
    return self_attribute(node) if isinstance(node, cst.BaseExpression) else None
