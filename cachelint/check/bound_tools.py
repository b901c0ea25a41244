"""Tools bound to a model object that change between the requests of one conversation (CL202).

LangChain-style code binds the tools to a model once (`llm.bind_tools(tools)`, `create_extractor(llm,
tools=[...])`) and sends the conversation with the bound object (`chain.invoke(messages)`), so no request in
sight carries a `tools=` keyword. Two shapes change the tools within one conversation all the same:

- a loop that sends one growing conversation through objects bound with different tools, chosen by the loop's
  step: `if ix == max_steps - 1: chain = self.final_chain` (the last step offers only the answer tool), `if i == 1:
  extractor = create_extractor(llm, tools=schemas + [Done])` (a tool added from the second step on);
- tools extended under a condition on the conversation that is then sent with them: `if len(messages) > 0:
  tools.append(Ignore)` ... `llm.bind_tools(tools).ainvoke(messages)` (the first request has one tool fewer than
  every later one).

Reported at the `if` that makes the choice (the outermost one in the loop) or at the addition. A choice on
configuration, a retry that resends no longer conversation, a fallback in an `except` block and tests are quiet.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from cachelint.check.callsites import unpacked_values
from cachelint.check.conversation import CONVERSATION_NAME, grows_in
from cachelint.check.module import ModuleContext, descendants, read_names

SENDS = frozenset({"invoke", "ainvoke", "stream", "astream"})
CONVERSATION = re.compile(rf"{CONVERSATION_NAME.pattern}|payload|inputs?$", re.I)  # a payload dict holds the messages
TOOLS_KEYWORDS = frozenset({"tools", "functions"})
MAX_HOPS = 3


@dataclass(slots=True)
class BoundToolSwitch:
    node: cst.CSTNode  # the `if` that chooses, or the addition to the tools
    holder: str  # the object the conversation is sent through (`chain`, `model`)
    why: str  # words: "by the loop's step (`ix`)", "by what `messages` holds"


def bound_tool_switches(ctx: ModuleContext) -> Iterator[BoundToolSwitch]:
    if ctx.is_test or not any(f".{m}(" in ctx.source for m in SENDS):
        return
    reported: set[int] = set()
    for call in ctx.nodes(cst.Call):
        send = _send(ctx, call)
        if send is None:
            continue
        receiver, conversation = send
        found = _step_switch(ctx, call, receiver, conversation) or _conditional_addition(ctx, call, receiver, conversation)
        if found is not None and id(found.node) not in reported:
            reported.add(id(found.node))
            yield found


def _send(ctx: ModuleContext, call: cst.Call) -> tuple[cst.BaseExpression, cst.Name] | None:
    """`chain.ainvoke(messages)`: the bound object and the conversation's name (through a payload dict
    `{"messages": prepared_messages}` bound to the name that is sent)."""
    func = call.func
    if not (isinstance(func, cst.Attribute) and func.attr.value in SENDS and call.args and call.args[0].keyword is None
            and not call.args[0].star and isinstance(call.args[0].value, cst.Name)):
        return None
    if not isinstance(func.value, (cst.Name, cst.Attribute)):
        return None
    sent = call.args[0].value
    if not CONVERSATION.search(sent.value):
        return None
    return func.value, _conversation_in(ctx, sent) or sent


def _conversation_in(ctx: ModuleContext, name: cst.Name) -> cst.Name | None:
    for _, value in ctx.assigned_values(name):
        if isinstance(value, cst.Dict):
            for element in value.elements:
                if (isinstance(element, cst.DictElement) and isinstance(element.key, cst.SimpleString)
                        and element.key.evaluated_value == "messages" and isinstance(element.value, cst.Name)):
                    return element.value
    return None


# --- the loop's step chooses the bound object ---------------------------------------------------------------

def _step_switch(ctx: ModuleContext, call: cst.Call, receiver: cst.BaseExpression, conversation: cst.Name) -> BoundToolSwitch | None:
    function = ctx.enclosing_function(call)
    loops = [loop for loop in ctx.loops_around(call) if function is None or ctx.contains(function, loop)]
    if function is None or not loops or ctx.enclosing(call, (cst.ExceptHandler, cst.FunctionDef)).__class__ is cst.ExceptHandler:
        return None
    loop = loops[-1]
    if not _grows(ctx, conversation, loop):
        return None
    choices = _choices(ctx, function, loop, receiver)
    sends = [c for c in ctx.nodes_in(cst.Call, loop) if (s := _send(ctx, c)) is not None and s[1].value == conversation.value]
    for other in sends:
        if other is not call:
            choices += _choices(ctx, function, loop, other.func.value)  # type: ignore[attr-defined]
    distinct = {ctx.code(choice): choice for choice, _ in choices}
    if len(distinct) < 2 or not any(_binds_tools(ctx, function, choice, 0) for choice in distinct.values()):
        return None
    stepping = stepping_names(ctx, loop)
    places = [place for _, place in choices if place is not None] + [c for c in sends if len(sends) > 1]
    chooser = None
    for place in places:
        for ancestor in ctx.ancestors(place):
            if ancestor is loop:
                break
            if isinstance(ancestor, cst.If) and any(n.value in stepping for n in read_names(ctx, ancestor.test)):
                chooser = ancestor  # the outermost one below the loop wins
    if chooser is None:
        return None
    step = next(n.value for n in read_names(ctx, chooser.test) if n.value in stepping)
    holder = ctx.code(receiver)
    return BoundToolSwitch(chooser, holder, f"by the loop's step (`{step}`)")


def _choices(ctx: ModuleContext, function: cst.FunctionDef, loop: cst.CSTNode, receiver: cst.BaseExpression) -> list[tuple[cst.BaseExpression, cst.CSTNode | None]]:
    """The objects the receiver may be at the send, with the binding made inside the loop (None: before it)."""
    if not isinstance(receiver, cst.Name):
        return [(receiver, None)]
    found = []
    for binding, value in ctx.assigned_values(receiver):
        if value is None or not ctx.contains(function, binding):
            continue
        found.append((value, binding if ctx.contains(loop, binding) else None))
    if not any(place is not None for _, place in found):
        return [(receiver, None)]  # bound once, before the loop: the same object on every pass
    return found


def _grows(ctx: ModuleContext, name: cst.Name, loop: cst.CSTNode) -> bool:
    """The conversation is longer on the loop's next pass: appended to, or rebound from itself, inside the loop."""
    if grows_in(ctx, name, loop):
        return True
    return any(value is not None and ctx.contains(loop, binding) and any(n.value == name.value for n in read_names(ctx, value))
               for binding, value in ctx.assigned_values(name))


def stepping_names(ctx: ModuleContext, loop: cst.CSTNode) -> set[str]:
    """The names that change from one pass to the next: a `for` loop's target and counters bumped in the loop."""
    names: set[str] = set()
    if isinstance(loop, cst.For):
        names.update(n.value for n in descendants(loop.target) if isinstance(n, cst.Name))
    for node in ctx.nodes_in(cst.AugAssign, loop):
        if isinstance(node.target, cst.Name):
            names.add(node.target.value)
    return names


def _binds_tools(ctx: ModuleContext, function: cst.FunctionDef, expr: cst.BaseExpression, hops: int) -> bool:
    """Whether the object carries tools: made by `.bind_tools(...)` or by a call given `tools=`, directly, through a
    local name, an attribute set on `self`, or a tuple a method of the module returns."""
    if hops > MAX_HOPS:
        return False
    if isinstance(expr, cst.Await):
        expr = expr.expression
    if isinstance(expr, cst.Call):
        if isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "bind_tools":
            return True
        return any(arg.keyword is not None and arg.keyword.value in TOOLS_KEYWORDS for arg in expr.args)
    if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self":
        cls = ctx.enclosing(function, (cst.ClassDef,))
        if not isinstance(cls, cst.ClassDef):
            return False
        for statement in ctx.self_assignments(cls).get(expr.attr.value, []):
            if statement.value is not None and _binds_tools(ctx, function, statement.value, hops + 1):
                return True
        return False
    if isinstance(expr, cst.Name):
        for binding, value in ctx.assigned_values(expr):
            values = [value] if value is not None else unpacked_values(ctx, binding)
            if any(v is not None and _binds_tools(ctx, ctx.enclosing_function(v) or function, v, hops + 1) for v in values):
                return True
    return False


# --- tools extended on what the conversation holds ---------------------------------------------------------

def _conditional_addition(ctx: ModuleContext, call: cst.Call, receiver: cst.BaseExpression, conversation: cst.Name) -> BoundToolSwitch | None:
    """`if len(messages) > 0: tools.append(Ignore)`, then `llm.bind_tools(tools)` sends `messages`."""
    function = ctx.enclosing_function(call)
    if function is None or not isinstance(receiver, cst.Name):
        return None
    row = ctx.span(call).row
    bound = [(b, v) for b, v in ctx.assigned_values(receiver) if ctx.contains(function, b) and ctx.span(b).row < row]
    if not bound:
        return None
    value = max(bound, key=lambda bv: ctx.span(bv[0]).row)[1]  # the binding the send sees
    if not (isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value == "bind_tools"
            and value.args and isinstance(value.args[0].value, cst.Name)):
        return None
    tools = value.args[0].value
    sources = _sources(ctx, function, conversation)
    for added in ctx.calls_on.get(tools.value, []):
        if added.func.attr.value not in ("append", "extend") or not ctx.contains(function, added):  # type: ignore[attr-defined]
            continue
        condition = ctx.enclosing(added, (cst.If, cst.FunctionDef))
        if isinstance(condition, cst.If) and any(n.value in sources for n in read_names(ctx, condition.test)):
            return BoundToolSwitch(added, ctx.code(receiver), f"by what `{conversation.value}` holds")
    return None


def _sources(ctx: ModuleContext, function: cst.FunctionDef, name: cst.Name) -> set[str]:
    """The conversation's name and the names it is built from in the function (`messages = [first] + messages`)."""
    names = {name.value}
    for binding, value in ctx.assigned_values(name):
        if value is not None and ctx.contains(function, binding):
            names.update(n.value for n in read_names(ctx, value) if CONVERSATION.search(n.value))
    return names
