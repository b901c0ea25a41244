"""Tools bound to a model object that change between the requests of one conversation (CL202).

LangChain-style code binds the tools to a model once (`llm.bind_tools(tools)`, `create_extractor(llm,
tools=[...])`) and sends the conversation with the bound object (`chain.invoke(messages)`, `ainvoke`, `stream`,
`astream`), so no request in sight carries a `tools=` keyword. Two shapes change the tools within one conversation
all the same:

- a loop that sends one growing conversation through objects bound with other tool lists, chosen by the loop's
  step or by what the conversation holds: `if ix == max_steps - 1: chain = self.final_chain` (the last step offers
  only the answer tool), `if i == 1: extractor = create_extractor(llm, tools=schemas + [Done])` (a tool added from
  the second step on), `chain = lean if len(messages) > 10 else full`;
- tools extended under a condition on the conversation before they are bound and sent with it: `if len(messages) >
  0: tools.append(Ignore)` ... `llm.bind_tools(tools).ainvoke(messages)` (the first request has one tool fewer than
  every later one).

Reported at the `if` (or the conditional expression) that makes the choice, the outermost one in the loop, or at
the addition. Not reported: objects bound with the same tools (a `tool_choice` or a model switch, CL401's), a loop
whose every pass starts its own conversation (`for doc in docs: messages = [...]`), a choice on the item of such a
loop or on configuration, a fallback in an `except` block, an addition made after the tools were bound, tests.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from cachelint.check.callsites import unpacked_values
from cachelint.check.conversation import CONVERSATION_NAME, grows_in
from cachelint.check.module import ModuleContext, in_except_handler, last_name, read_names, stepping_names
from cachelint.check.values import string_value

SENDS = frozenset({"invoke", "ainvoke", "stream", "astream"})
CONVERSATION = re.compile(rf"{CONVERSATION_NAME.pattern}|payload|inputs?$", re.I)  # a payload dict holds the messages
TOOLS_KEYWORDS = frozenset({"tools", "functions"})
CHAT_MODEL = re.compile(r"^Chat[A-Z]\w*$|^init_chat_model$")  # a chat model made without tools: `ChatOpenAI(...)`
MAX_HOPS = 3


@dataclass(slots=True)
class BoundToolSwitch:
    node: cst.CSTNode  # the `if` that chooses, or the addition to the tools
    holder: str  # the object the conversation is sent through (`chain`, `model`)
    why: str  # words: "by the loop's step (`ix`)", "by what `messages` holds"


@dataclass(slots=True)
class _Send:
    call: cst.Call
    receiver: cst.BaseExpression  # `chain`, `self.chain`, `llm.bind_tools(tools)`
    conversation: cst.Name


def bound_tool_switches(ctx: ModuleContext) -> Iterator[BoundToolSwitch]:
    if ctx.is_test or not any(f".{m}(" in ctx.source for m in SENDS):
        return
    reported: set[int] = set()
    by_loop: dict[int, list[_Send]] = {}  # the sends of each loop, found once
    judged: set[tuple[int, str]] = set()  # (loop, conversation): the choices of a loop's sends are judged once
    for call in ctx.nodes(cst.Call):
        send = _send(ctx, call)
        if send is None:
            continue
        found = _step_switch(ctx, send, by_loop, judged) or _conditional_addition(ctx, send)
        if found is not None and id(found.node) not in reported:
            reported.add(id(found.node))
            yield found


def _send(ctx: ModuleContext, call: cst.Call) -> _Send | None:
    """`chain.ainvoke(messages)`, `chain.invoke({"messages": messages})`, `llm.bind_tools(tools).ainvoke(messages)`: the
    bound object and the conversation's name (through a payload dict `{"messages": prepared_messages}`)."""
    func = call.func
    if not (isinstance(func, cst.Attribute) and func.attr.value in SENDS and call.args and call.args[0].keyword is None
            and not call.args[0].star and isinstance(func.value, (cst.Name, cst.Attribute, cst.Call))):
        return None
    sent = call.args[0].value
    if isinstance(sent, cst.Dict):
        conversation = _messages_of(sent)
    elif isinstance(sent, cst.Name) and CONVERSATION.search(sent.value):
        conversation = next((found for _, value in ctx.assigned_values(sent) if isinstance(value, cst.Dict)
                             and (found := _messages_of(value)) is not None), sent)
    else:
        return None
    return _Send(call, func.value, conversation) if conversation is not None else None


def _messages_of(payload: cst.Dict) -> cst.Name | None:
    for element in payload.elements:
        if isinstance(element, cst.DictElement) and string_value(element.key) == "messages" and isinstance(element.value, cst.Name):
            return element.value
    return None


# --- the loop's step chooses the bound object ---------------------------------------------------------------

def _step_switch(ctx: ModuleContext, send: _Send, by_loop: dict[int, list[_Send]], judged: set[tuple[int, str]]) -> BoundToolSwitch | None:
    function = ctx.enclosing_function(send.call)
    if function is None or in_except_handler(ctx, send.call):
        return None
    loops = [loop for loop in ctx.loops_around(send.call) if ctx.contains(function, loop)]
    if not loops:
        return None
    loop = loops[0]  # the loop whose passes are the conversation's steps
    if (id(loop), send.conversation.value) in judged:
        return None  # another send of this conversation in this loop judged them all
    judged.add((id(loop), send.conversation.value))
    if not _grows(ctx, send.conversation, loop):
        return None
    sends = by_loop.get(id(loop))
    if sends is None:
        sends = by_loop[id(loop)] = [s for c in ctx.nodes_in(cst.Call, loop) if (s := _send(ctx, c)) is not None]
    sends = [s for s in sends if s.conversation.value == send.conversation.value]
    choices = [choice for s in sends for choice in _choices(ctx, function, loop, s.receiver)]
    keys = {}
    for value, _ in choices:
        key = _tools_key(ctx, function, value, 0)
        if key is not None:
            keys.setdefault(key, value)
    if len(keys) < 2:
        return None  # the same tools whichever object sends (a tool_choice or model switch), or nothing known
    stepping = stepping_names(ctx, loop) | {send.conversation.value}
    places = [place for _, place in choices if place is not None] + ([s.call for s in sends] if len(sends) > 1 else [])
    chooser, step = None, ""
    for place in places:
        for ancestor in (place, *ctx.ancestors(place)):
            if ancestor is loop:
                break
            test = ancestor.test if isinstance(ancestor, (cst.If, cst.IfExp)) else None
            read = [n.value for n in read_names(ctx, test)] if test is not None else []
            if any(n in stepping for n in read):
                chooser, step = ancestor, next(n for n in read if n in stepping)  # the outermost one below the loop wins
    if chooser is None:
        return None
    why = f"by what `{step}` holds" if step == send.conversation.value else f"by the loop's step (`{step}`)"
    return BoundToolSwitch(chooser, ctx.code(send.receiver), why)


def _choices(ctx: ModuleContext, function: cst.FunctionDef, loop: cst.CSTNode,
             receiver: cst.BaseExpression) -> list[tuple[cst.BaseExpression, cst.CSTNode | None]]:
    """The objects the receiver may be at the send, each with where the loop chooses it (None: chosen before it);
    a conditional expression is two choices, made where it is."""
    if not isinstance(receiver, cst.Name):
        return [(receiver, None)]
    found: list[tuple[cst.BaseExpression, cst.CSTNode | None]] = []
    for binding, value in ctx.assigned_values(receiver):
        if value is None or not ctx.contains(function, binding):
            continue
        inside = ctx.contains(loop, binding)
        if isinstance(value, cst.IfExp):
            found += [(value.body, value if inside else None), (value.orelse, value if inside else None)]
        else:
            found.append((value, binding if inside else None))
    if not any(place is not None for _, place in found):
        return [(receiver, None)]  # bound before the loop: the same object on every pass
    return found


def _grows(ctx: ModuleContext, name: cst.Name, loop: cst.CSTNode) -> bool:
    """The conversation is longer on the loop's next pass: appended to, extended with `+=`, or rebound from itself
    inside the loop; and never made afresh there (`messages = []`: each pass its own conversation)."""
    inside = [(binding, value) for binding, value in ctx.assigned_values(name) if ctx.contains(loop, binding)]
    if any(value is not None and not isinstance(ctx.parent(binding), cst.AugAssign)
           and not any(n.value == name.value for n in read_names(ctx, value)) for binding, value in inside):
        return False
    return grows_in(ctx, name, loop) or any(value is not None for _, value in inside)


def _tools_key(ctx: ModuleContext, function: cst.FunctionDef, expr: cst.BaseExpression, hops: int) -> str | None:
    """What the object is bound with: the code of its tool list (`bind_tools(tools)`, a call given `tools=`), "" for a
    chat model made without tools, None where that is not known; followed through a local name, an attribute set on
    `self`, or a tuple a method of the module returns."""
    if hops > MAX_HOPS:
        return None
    if isinstance(expr, cst.Await):
        expr = expr.expression
    if isinstance(expr, cst.Call):
        func = expr.func
        if isinstance(func, cst.Attribute) and func.attr.value == "bind_tools":
            tools = expr.args[0].value if expr.args and expr.args[0].keyword is None else None
            return ctx.code(tools) if tools is not None else None
        given = next((arg.value for arg in expr.args if arg.keyword is not None and arg.keyword.value in TOOLS_KEYWORDS), None)
        if given is not None:
            return ctx.code(given)
        return "" if CHAT_MODEL.match(last_name(func) or "") else None
    if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self":
        cls = ctx.enclosing(function, (cst.ClassDef,))
        if not isinstance(cls, cst.ClassDef):
            return None
        for statement in ctx.self_assignments(cls).get(expr.attr.value, []):
            if statement.value is not None and (key := _tools_key(ctx, function, statement.value, hops + 1)) is not None:
                return key
        return None
    if isinstance(expr, cst.Name):
        for binding, value in ctx.assigned_values(expr):
            for v in [value] if value is not None else unpacked_values(ctx, binding):
                if v is not None and (key := _tools_key(ctx, ctx.enclosing_function(v) or function, v, hops + 1)) is not None:
                    return key
    return None


# --- tools extended on what the conversation holds ---------------------------------------------------------

def _conditional_addition(ctx: ModuleContext, send: _Send) -> BoundToolSwitch | None:
    """`if len(messages) > 0: tools.append(Ignore)` (or `tools = tools + [Ignore]`), then `llm.bind_tools(tools)`
    sends `messages`."""
    function = ctx.enclosing_function(send.call)
    if function is None:
        return None
    bound = send.receiver
    if isinstance(bound, cst.Name):
        row = ctx.span(send.call).row
        bindings = [(b, v) for b, v in ctx.assigned_values(bound) if ctx.contains(function, b) and ctx.span(b).row < row]
        if not bindings:
            return None
        bound = max(bindings, key=lambda bv: ctx.span(bv[0]).row)[1]  # the binding the send sees
    if not (isinstance(bound, cst.Call) and isinstance(bound.func, cst.Attribute) and bound.func.attr.value == "bind_tools"
            and bound.args and isinstance(bound.args[0].value, cst.Name)):
        return None
    tools, bound_at = bound.args[0].value, ctx.span(bound).row
    sources = _sources(ctx, function, send.conversation)
    for added in _additions(ctx, function, tools.value):
        if ctx.span(added).row >= bound_at:
            continue  # added after the tools were bound: the bound object keeps the list it was given
        condition = ctx.enclosing(added, (cst.If, cst.FunctionDef))
        if isinstance(condition, cst.If) and any(n.value in sources for n in read_names(ctx, condition.test)):
            return BoundToolSwitch(added, ctx.code(send.receiver), f"by what `{send.conversation.value}` holds")
    return None


def _additions(ctx: ModuleContext, function: cst.FunctionDef, tools: str) -> Iterator[cst.CSTNode]:
    """Where the function adds to the tool list: `tools.append(...)`, `tools.extend(...)`, `tools += [...]`, `tools =
    tools + [...]`."""
    for call in ctx.calls_on.get(tools, []):
        if call.func.attr.value in ("append", "extend") and ctx.contains(function, call):  # type: ignore[attr-defined]
            yield call
    for node in ctx.nodes_in(cst.AugAssign, function):
        if isinstance(node.target, cst.Name) and node.target.value == tools:
            yield node
    for node in ctx.nodes_in(cst.Assign, function):
        if any(isinstance(t.target, cst.Name) and t.target.value == tools for t in node.targets) \
                and isinstance(node.value, cst.BinaryOperation) and any(n.value == tools for n in read_names(ctx, node.value)):
            yield node


def _sources(ctx: ModuleContext, function: cst.FunctionDef, name: cst.Name) -> set[str]:
    """The conversation's name and the names it is built from in the function (`messages = [first] + messages`)."""
    names = {name.value}
    for binding, value in ctx.assigned_values(name):
        if value is not None and ctx.contains(function, binding):
            names.update(n.value for n in read_names(ctx, value) if CONVERSATION.search(n.value))
    return names
