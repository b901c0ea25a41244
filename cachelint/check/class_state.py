"""State an object accumulates, rendered into the system prompt ahead of the conversation it keeps (CL104).

An agent class keeps its conversation in an attribute (`self.messages`) and renders its system prompt on every
request from other attributes: notes the model took, a plan, files it opened, memories it added. When one of
those grows while the conversation runs (`self.notes.append(...)` in a tool handler), the system prompt changes
between two turns and every message after it is prefilled again. Keep the system prompt fixed and send what
changed as a new message after the history.

Recognized in one class: a request whose history is an attribute the class appends to, and whose system prompt
reads another attribute (directly, or through one method of the class) that a method other than set-up or reset
adds to in place (`append`, `extend`, `update`, `add`, `insert`, `self.x[k] = ...`, `self.x += ...`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from cachelint.check.callsites import CallSite
from cachelint.check.module import ModuleContext, descendants
from cachelint.check.values import assigned_once, dict_entries, string_value

GROWERS = frozenset({"append", "extend", "update", "add", "insert", "setdefault"})
SETUP = re.compile(r"^(?:__init__|__post_init__|model_post_init|setup|__enter__|reset\w*|clear\w*|new_\w*|start\w*|init\w*|load\w*)$")


@dataclass(frozen=True, slots=True)
class ClassState:
    node: cst.CSTNode  # the system prompt (or the tools) of the request
    state: str  # `self.notes`
    history: str  # `self.messages`
    mutation: cst.CSTNode  # where the state grows
    method: str  # the method that grows it
    site: CallSite  # the request


def class_state_in_system(ctx: ModuleContext, sites: list[CallSite]) -> Iterator[ClassState]:
    seen: set[str] = set()
    for site in sites:
        if not isinstance(site.node, cst.Call):
            continue
        cls = ctx.enclosing(site.node, (cst.ClassDef,))
        if not isinstance(cls, cst.ClassDef):
            continue
        for system, history in system_and_history(ctx, site):
            for found in _grown_state(ctx, site, cls, system, history):
                if found.state not in seen:
                    seen.add(found.state)
                    yield found


def class_state_in_tools(ctx: ModuleContext, sites: list[CallSite]) -> Iterator[ClassState]:
    """The same for the tools (CL202): `tools=self.tools` with `self.tools.append(...)` in a method the sending
    method calls (`self.add_tool(READ_FILE)` once a file is mentioned): the tools open the prefix, and they change
    between two turns of the conversation the object keeps."""
    for site in sites:
        tools, history = site.arg("tools"), site.arg("messages") or site.arg("input")
        cls = ctx.enclosing(site.node, (cst.ClassDef,)) if isinstance(site.node, cst.Call) else None
        if tools is not None and history is not None and isinstance(cls, cst.ClassDef):
            yield from _grown_state(ctx, site, cls, tools, history)


def _grown_state(ctx: ModuleContext, site: CallSite, cls: cst.ClassDef, read: cst.BaseExpression,
                 history: cst.BaseExpression) -> Iterator[ClassState]:
    """The attributes `read` (a system prompt, the tools) renders that a method running during the conversation
    kept in `history` (an attribute the class appends to) adds to."""
    grown = _self_attributes(history) & grown_attributes(cls)
    if not grown:
        return
    sender = ctx.enclosing_function(site.node)
    builders = _builders(read)
    during = [m for m in _called_from(cls, sender) if m.name.value not in builders] if sender is not None else []
    for state in sorted(_state_read(ctx, cls, read) - grown):
        found = _growth(ctx, site, during, state)
        if found is not None:
            yield ClassState(read, f"self.{state}", f"self.{min(grown)}", found[0], found[1], site)


def system_and_history(ctx: ModuleContext, site: CallSite) -> Iterator[tuple[cst.BaseExpression, cst.BaseExpression]]:
    """(system prompt, history) of a request: `system=` / `instructions=` with `messages=` / `input=`, or a system
    message first in the list sent, with the rest of the list."""
    history = site.arg("messages") or site.arg("input")
    if history is None:
        return
    system = site.arg("system") or site.arg("instructions")
    if system is not None:
        yield system, history
        return
    listing = assigned_once(ctx, history)
    if isinstance(listing, cst.BinaryOperation) and isinstance(listing.left, cst.List) and listing.left.elements:
        content = _system_content(listing.left.elements[0].value)
        if content is not None:
            yield content, listing.right
    elif isinstance(listing, cst.List) and len(listing.elements) > 1:
        content = _system_content(listing.elements[0].value)
        if content is not None:
            yield content, listing


def _system_content(message: cst.BaseExpression) -> cst.BaseExpression | None:
    entries = dict(dict_entries(message))
    return entries.get("content") if string_value(entries.get("role")) in ("system", "developer") else None



def _self_attributes(node: cst.CSTNode) -> set[str]:
    """Names of the `self.x` read in `node` (not the methods it calls)."""
    called = {id(n.func) for n in descendants(node) if isinstance(n, cst.Call)}
    return {n.attr.value for n in descendants(node) if isinstance(n, cst.Attribute) and isinstance(n.value, cst.Name)
            and n.value.value == "self" and id(n) not in called}


def _state_read(ctx: ModuleContext, cls: cst.ClassDef, system: cst.BaseExpression) -> set[str]:
    """The attributes the system prompt reads: in its own expression (and a local name it is assigned from), and in
    the body of a method of the class it calls (`self.system_prompt()`, `self._build_system()`)."""
    expressions: list[cst.CSTNode] = [assigned_once(ctx, system)] if isinstance(system, cst.Name) else [system]
    read = set()
    for expression in expressions:
        read |= _self_attributes(expression)
        for call in (n for n in descendants(expression) if isinstance(n, cst.Call)):
            func = call.func
            if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self":
                method = method_of(cls, func.attr.value)
                if method is not None:
                    read |= _self_attributes(method.body)
    methods = {m.name.value for m in _methods(cls)}
    return read - methods


def _methods(cls: cst.ClassDef) -> list[cst.FunctionDef]:
    return [s for s in cls.body.body if isinstance(s, cst.FunctionDef)]


def method_of(cls: cst.ClassDef, name: str) -> cst.FunctionDef | None:
    return next((m for m in _methods(cls) if m.name.value == name), None)


def grown_attributes(cls: cst.ClassDef) -> set[str]:
    """The attributes some method of the class adds to in place."""
    return {state for method in _methods(cls) for state, _ in _growths_in(method)}


def _called_from(cls: cst.ClassDef, sender: cst.FunctionDef) -> list[cst.FunctionDef]:
    """The methods that run while the conversation does: the one that sends the request and the methods of the
    class it calls (`self.handle_tool(...)`), set-up and reset left out."""
    names = {n.func.attr.value for n in descendants(sender.body) if isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute)
             and isinstance(n.func.value, cst.Name) and n.func.value.value == "self"}
    return [m for m in _methods(cls) if (m is sender or m.name.value in names) and not SETUP.match(m.name.value)]


def _builders(system: cst.BaseExpression) -> set[str]:
    """The methods the system prompt calls to build itself (`self.system_prompt()`): what they add to is a memo of
    the build, not a change between turns."""
    return {n.func.attr.value for n in descendants(system) if isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute)
            and isinstance(n.func.value, cst.Name) and n.func.value.value == "self"}


def _filled_once(ctx: ModuleContext, method: cst.FunctionDef, state: str) -> bool:
    """`if self.tools: return` (or `if not self.tools:` around the filling): the attribute is filled lazily, once,
    before the first request, and never changes after."""
    target = f"self.{state}"
    for node in descendants(method.body):
        if isinstance(node, cst.If):
            test = node.test.expression if isinstance(node.test, cst.UnaryOperation) else node.test
            if ctx.code(test) in (target, f"len({target})"):
                return True
    return False


def _growth(ctx: ModuleContext, site: CallSite, methods: list[cst.FunctionDef], state: str) -> tuple[cst.CSTNode, str] | None:
    """Where one of `methods` adds to `self.<state>` in place between two requests: in the sending method after the
    request (or anywhere in a loop around it), or in a method of the class that the sending method calls."""
    sender = ctx.enclosing_function(site.node)
    loops = ctx.loops_around(site.node)
    for method in methods:
        if _filled_once(ctx, method, state):
            continue
        for grown, node in _growths_in(method):
            if grown != state:
                continue
            if method is sender and not (ctx.span(node).row > ctx.span(site.node).row or any(ctx.contains(loop, node) for loop in loops)):
                continue  # added once before the first request: part of the conversation's fixed start
            return node, method.name.value
    return None


def _growths_in(method: cst.FunctionDef) -> Iterator[tuple[str, cst.CSTNode]]:
    for node in descendants(method.body):
        target = None
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in GROWERS:
            target = node.func.value
        elif isinstance(node, cst.AugAssign) and isinstance(node.operator, cst.AddAssign):
            target = node.target
        elif isinstance(node, cst.Assign) and len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Subscript):
            target = node.targets[0].target.value
        if isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) and target.value.value == "self":
            yield target.attr.value, node
