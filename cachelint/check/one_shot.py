"""Callers that ask one question each: a provider adapter whose every caller builds a fresh message list per call.

An adapter (`def chat_completion_anthropic(model, messages, ...)`) sends whatever conversation its callers pass, so
by itself it may carry every chat of the app. Where its callers are in sight and each builds the list afresh for
one request (`messages = [{"role": "system", ...}, {"role": "user", "content": question}]`, a literal with no
history spliced in, filled before the call and not sent again), no request resends an earlier one: an evaluation
harness or a batch labeller. The only prefix two of its requests share is the system prompt, which the callers
write and which `_prompt_from_callers` measures; the missing breakpoint is not a finding of the adapter.

Callers are found by the adapter's name (in its module and in the files of the tree that call it) and through the
registry a decorator puts it in (`@register_api("anthropic")` filling `registered_api[api_type] = func`, called as
`registered_api[settings["api_type"]](**kwargs)`). An argument passed through `**kwargs` is looked up in the dict
the caller builds (`kwargs = settings | {"messages": messages}`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import libcst as cst

from cachelint.check import tree
from cachelint.check.depends import parameters_of, positional_index
from cachelint.check.module import LIST_GROWERS, ModuleContext, argument_for, called_name, descendants
from cachelint.check.values import string_value

MAX_CALLS = 24  # calls judged per adapter


_FOUND: dict = {}  # (root, what) -> the tree's files whose text matches: searched once per tree and question


def _files_matching(root: str, what: str, pattern: re.Pattern[str]) -> list[str]:
    found = tree.recalled(_FOUND, (root, what))
    if found is None:
        found = tree.remember(_FOUND, (root, what), [path for path, text in tree.texts(root) if pattern.search(text)])
    return found


def one_shot_callers(ctx: ModuleContext, function: cst.FunctionDef, param: str, depth: int = 0) -> bool:
    """Every call of `function` in sight passes a list its caller builds afresh for one request as `param`; False
    when no call is in sight. Calls in tests and at a module's top level (an example script, a smoke test) say
    nothing about how the app uses it, and are not counted. A caller that hands on its own parameter (a retrying
    closure inside the adapter's method, `return _send(messages)`) is judged by its own callers, one hop."""
    calls = [(other, call) for other, call in _calls(ctx, function)
             if not other.is_test and other.enclosing_function(call) is not None]
    if not calls or len(calls) > MAX_CALLS:
        return False
    position = positional_index(function, param)
    # a caller's own parameter is followed to its callers one hop, unless this function adds to the list it is handed
    # (`messages.append(vision_message)`): then whoever hands it on keeps a conversation there
    hand_on = depth == 0 and not _grows(ctx, function, param)
    return all(_fresh(other, call, param, position, hand_on) for other, call in calls)


def _grows(ctx: ModuleContext, function: cst.FunctionDef, param: str) -> bool:
    """The function adds to the list it is handed as `param`."""
    return any(call.func.attr.value in LIST_GROWERS and ctx.contains(function, call)  # type: ignore[attr-defined]
               for call in ctx.calls_on.get(param, ()))


def _calls(ctx: ModuleContext, function: cst.FunctionDef) -> Iterator[tuple[ModuleContext, cst.Call]]:
    from cachelint.check.project import module_context
    from cachelint.check.static_prefix import caller_files

    name = function.name.value
    for other in [ctx, *filter(None, (module_context(Path(p)) for p in caller_files(ctx.filename, name)))]:
        if other is not ctx and (name in other.functions or any(key.endswith("." + name) for key in other.functions)):
            continue  # a module with a function (or a method) of the same name calls its own
        for call in other.calls_by_name.get(name, ()):
            if other.enclosing_function(call) is not function:
                yield other, call
    registry = _registry(ctx, function)
    if registry is None:
        return
    pattern = re.compile(rf"\b{re.escape(registry)}\s*\[")
    for path in _files_matching(tree.root_of(ctx.filename), f"registry {registry}", pattern):
        if (other := module_context(Path(path))) is not None:
            yield from ((other, call) for call in _registry_calls(other, registry))


def _registry(ctx: ModuleContext, function: cst.FunctionDef) -> str | None:
    """The dict a registering decorator of `function` puts it in: `@register_api("x")`, where the module's
    `register_api` stores its argument function with `registry[key] = func`."""
    for decorator in function.decorators:
        expr = decorator.decorator
        name = expr.func.value if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) else None
        for definition in ctx.functions.get(name or "", ()):
            for node in descendants(definition):
                if isinstance(node, cst.Assign) and len(node.targets) == 1 and isinstance(target := node.targets[0].target, cst.Subscript) \
                        and isinstance(target.value, cst.Name) and isinstance(node.value, cst.Name):
                    return target.value.value
    return None


def _registry_calls(ctx: ModuleContext, registry: str) -> Iterator[cst.Call]:
    """Calls of what the registry holds: `registry[kind](...)`, or a name bound to `registry[kind]` and called."""
    for call in ctx.nodes(cst.Call):
        func = call.func
        if isinstance(func, cst.Subscript) and isinstance(func.value, cst.Name) and func.value.value == registry:
            yield call
        elif isinstance(func, cst.Name):
            values = [v for _, v in ctx.assigned_values(func) if v is not None]
            if values and all(isinstance(v, cst.Subscript) and isinstance(v.value, cst.Name) and v.value.value == registry for v in values):
                yield call


def _fresh(ctx: ModuleContext, call: cst.Call, param: str, position: int, hand_on: bool = False) -> bool:
    """The call's `param` is a list its function builds afresh for this one request."""
    value = argument_for(call, param, position)
    if value is None:
        value = _through_kwargs(ctx, call, param)
    if value is None:
        return False
    caller = ctx.enclosing_function(call)
    if isinstance(value, cst.List):
        return _no_history_in(value)
    if isinstance(value, cst.Call):  # `get_response(messages=get_messages(commandline))`: a builder's fresh list, sent once
        return _made_by_builder(ctx, value)
    if not isinstance(value, cst.Name) or caller is None:
        return False
    if value.value in parameters_of(caller):  # the caller's own caller passes it: a conversation may be behind it
        return hand_on and not _filled_from_many(ctx, caller, value.value) and one_shot_callers(ctx, caller, value.value, 1)
    bound = [v for _, v in ctx.assigned_values(value)]
    if not bound or not all(isinstance(v, cst.List) and _no_history_in(v) or _made_by_builder(ctx, v) for v in bound):
        return False
    return not _filled_from_many(ctx, caller, value.value) and not _sent_again(ctx, call, value.value)


def _filled_from_many(ctx: ModuleContext, function: cst.FunctionDef, name: str) -> bool:
    """The list is filled from a collection: `name.extend(...)`, `name += ...`, or an append in a loop (a history
    converted turn by turn, `for role, text in self.messages: ret.append(...)`), not message by message."""
    for node in descendants(function):
        if isinstance(node, cst.AugAssign) and isinstance(node.target, cst.Name) and node.target.value == name:
            return True
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and isinstance(node.func.value, cst.Name) \
                and node.func.value.value == name and node.func.attr.value in LIST_GROWERS:
            if node.func.attr.value == "extend" or ctx.loops_around(node):
                return True
    return False


def _fresh_local(ctx: ModuleContext, value: cst.BaseExpression, function: cst.FunctionDef) -> bool:
    """A list literal with no history in it, or a local name the function binds only to such lists."""
    if isinstance(value, cst.List):
        return _no_history_in(value)
    if not isinstance(value, cst.Name) or ctx.enclosing_function(value) is not function:
        return False
    bound = [v for _, v in ctx.assigned_values(value)]
    return bool(bound) and all(isinstance(v, cst.List) and _no_history_in(v) for v in bound) \
        and not _filled_from_many(ctx, function, value.value)


def _made_by_builder(ctx: ModuleContext, value: cst.BaseExpression | None) -> bool:
    """A call of a builder of the tree whose every definition returns a list it makes afresh
    (`def pre_process(self, prompt): conv = [{"role": "system", ...}]; conv.append(...); return conv`)."""
    from cachelint.check.project import module_context

    if not isinstance(value, cst.Call) or not (name := called_name(value)):
        return False
    definition = re.compile(rf"^\s*(?:async\s+)?def\s+{re.escape(name)}\s*\(", re.M)
    found = []
    for path in _files_matching(tree.root_of(ctx.filename), f"def {name}", definition):
        if (other := module_context(Path(path))) is not None:
            found += [(other, f) for key, fs in other.functions.items() if key == name or key.endswith(f".{name}") for f in fs]
        if len(found) > 4:
            return False
    return bool(found) and all(returns and all(_fresh_local(other, r, f) for r in returns)
                               for other, f in found for returns in [other.returns_of(f)])


def _no_history_in(value: cst.List) -> bool:
    """A list written out message by message, with nothing spliced in (`[*history, q]` resends a conversation)."""
    return not any(isinstance(e, cst.StarredElement) for e in value.elements)


def _sent_again(ctx: ModuleContext, call: cst.Call, name: str) -> bool:
    """A loop around the call that also adds to the list, or later statements of the caller that add to it and hand
    it to the same function again (the answer and a follow-up question appended, then the list sent again)."""
    for loop in ctx.loops_around(call):
        for node in descendants(loop):
            if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in LIST_GROWERS \
                    and isinstance(node.func.value, cst.Name) and node.func.value.value == name:
                return True
    caller = ctx.enclosing_function(call)
    if caller is None:
        return False
    row = ctx.span(call).row
    calls = ctx.nodes_in(cst.Call, caller)
    grown = [ctx.span(node).row for node in calls if isinstance(node.func, cst.Attribute) and node.func.attr.value in LIST_GROWERS
             and isinstance(node.func.value, cst.Name) and node.func.value.value == name and ctx.span(node).row > row]
    # ... and then the same function is handed the list again (an answer appended only to be stored sends nothing)
    return bool(grown) and any(called_name(node) == called_name(call) and ctx.span(node).row > min(grown)
                               and any(isinstance(a.value, cst.Name) and a.value.value == name for a in node.args) for node in calls)


def _through_kwargs(ctx: ModuleContext, call: cst.Call, param: str) -> cst.BaseExpression | None:
    """`f(**kwargs)`, where the caller builds `kwargs` with a `"param": value` item (`settings | {"messages": m}`)."""
    star = next((a.value for a in call.args if a.star == "**"), None)
    if not isinstance(star, cst.Name):
        return None
    for _, bound in ctx.assigned_values(star):
        for node in (bound, *descendants(bound)) if bound is not None else ():
            if isinstance(node, cst.DictElement) and string_value(node.key) == param:
                return node.value
    return None
