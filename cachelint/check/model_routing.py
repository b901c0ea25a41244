"""The model of each request picked from what the conversation holds (CL401).

Apps route a conversation to another model while it carries an image (a vision model): `if has_images:
conversation.model = image_model`, where `has_images = any(... for entry in conversation.entries)`. Each request of
the conversation goes to the model its content picks, so while the image is in the window the requests land on
another model than the turns before them, and a model's cache holds only the prefixes sent to it: the whole
conversation is prefilled again at each switch, and again when it switches back. (A switch by the conversation's size
happens once, when it crosses the size: one miss, like a compaction, and is left alone.)

Found by the names the code uses (`likely`): a model's target (`model`, `self.model`, `conversation.model`,
`params["model"]`; not a candidate kept aside, `image_model`) set under a test, or picked by a conditional expression, whose test reads the conversation
(`messages`, `history`, `conversation`, `entries`, `payload`) for images, directly or through a name bound from it in
the same function.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from cachelint.check.module import ModuleContext, descendants

MODEL_NAMES = frozenset({"model", "model_name", "model_id", "llm_model", "current_model", "selected_model", "chat_model"})
# what a test on the conversation's content looks for: an image in it
CONTENT = re.compile(r"image|vision|multimodal|modalit", re.I)
# the conversation's data by the names code gives it (lower case: `ConversationAdapters` is a class, not the data)
CONVERSATION = re.compile(r"(?<![A-Za-z])(?:messages|history|conversation|entries|payload|transcript|turns|chat_history)(?![a-z])")
QUICK = re.compile(r"(?:image|vision|multimodal)\w*", re.I)


@dataclass(frozen=True, slots=True)
class RoutedModel:
    node: cst.CSTNode  # the assignment (or the conditional expression) that picks the model
    test: str  # the test's code, shortened


def content_routed_models(ctx: ModuleContext) -> Iterator[RoutedModel]:
    if not QUICK.search(ctx.source) or not re.search(r"\bmodel", ctx.source):
        return
    for assign in ctx.nodes(cst.Assign):
        if not any(_model_target(t.target) for t in assign.targets):
            continue
        if isinstance(assign.value, cst.Name) and assign.value.value == "None":
            continue
        test = _conditional_test(ctx, assign)
        if test is not None and _reads_the_conversation(ctx, assign, test):
            yield RoutedModel(assign, _short(ctx.code(test)))


# a function that routes a request to a model by what it asks: a router, a classifier, a predictor of the work needed
ROUTER = re.compile(r"rout(?:e|ed|er|ing)\b|rout(?:e|ed|er|ing)_|_rout|classif|predict", re.I)
ROUTER_QUICK = re.compile(r"rout|classif|predict", re.I)
# this turn's words, as apps name them
TURN_INPUT = re.compile(r"(?<![A-Za-z])(?:user_input|user_message|prompt|query|question|message|last_message|text)(?![a-z])")


def message_routed_models(ctx: ModuleContext) -> Iterator[RoutedModel]:
    """The model of a request that sends a conversation picked by a router of what the turn asks: `kwargs["model"] =
    self._get_routed_model_for_completion(kwargs["messages"], router, threshold)` (RouteLLM), or `selected_model = MINI if
    not prediction["requires_actions"] else FULL` where `prediction = predict_actions_required(user_input)`. Each turn
    is routed anew, so the turns of one conversation land on different models, and a model's cache holds only the
    prefixes sent to it: every switch prefills the whole conversation again. A switch in an `except` block is a
    fallback, and left alone."""
    if not ROUTER_QUICK.search(ctx.source) or not re.search(r"\bmodel", ctx.source):
        return
    from cachelint.check.module import in_except_handler

    seen: set[int] = set()
    for assign in ctx.nodes(cst.Assign):
        if len(assign.targets) != 1 or not _model_target(assign.targets[0].target) or in_except_handler(ctx, assign):
            continue
        function = ctx.enclosing_function(assign)
        if function is None or _set_once(ctx, assign):
            continue
        router = _routed_by(ctx, function, assign)
        if router is None or not _sends_a_conversation_with(ctx, function, assign) or id(router) in seen:
            continue
        seen.add(id(router))  # `if prediction[...]: model = FULL else: model = MINI`: one switch, reported at its first branch
        yield RoutedModel(assign, _short(ctx.code(router)))


def _set_once(ctx: ModuleContext, assign: cst.Assign) -> bool:
    """`if conv.model is None: conv.model = router.route(text)`: routed once, when the conversation starts, and kept."""
    target = ctx.code(assign.targets[0].target)
    guard = next((a for a in ctx.ancestors(assign) if isinstance(a, (cst.If, cst.FunctionDef))), None)
    return isinstance(guard, cst.If) and target in ctx.code(guard.test)


def _routed_by(ctx: ModuleContext, function: cst.FunctionDef, assign: cst.Assign) -> cst.BaseExpression | None:
    """The router call the value is, or the one the test of its conditional (an expression, or the `if` the
    assignment sits in) calls or reads through a name bound in the function."""
    value = assign.value.expression if isinstance(assign.value, cst.Await) else assign.value
    if isinstance(value, cst.Call) and _router_of_the_turn(ctx, value):
        return value
    test = _conditional_test(ctx, assign)
    if test is None:
        return None
    for node in (test, *descendants(test)):
        if isinstance(node, cst.Call) and _router_of_the_turn(ctx, node):
            return node
        for binding, bound in ctx.assigned_values(node) if isinstance(node, cst.Name) else ():
            if bound is not None and ctx.contains(function, binding) and isinstance(bound, cst.Call) and _router_of_the_turn(ctx, bound):
                return bound
    return None


def _router_of_the_turn(ctx: ModuleContext, call: cst.Call) -> bool:
    from cachelint.check.module import last_name

    name = last_name(call.func) or ""
    if not ROUTER.search(name) and not (isinstance(call.func, cst.Attribute) and ROUTER.search(last_name(call.func.value) or "")):
        return False  # `self.router.select_model(text)`: a method of a router
    read = " ".join(ctx.code(a.value) for a in call.args)
    return bool(CONVERSATION.search(read) or TURN_INPUT.search(read))


def _sends_a_conversation_with(ctx: ModuleContext, function: cst.FunctionDef, assign: cst.Assign) -> bool:
    """A request of the function sends the model picked (`model=selected_model`, or `**kwargs` after `kwargs["model"] =
    ...`) with a conversation (`messages=conversation_history`, or the `kwargs["messages"]` its caller handed in)."""
    target = assign.targets[0].target
    holder = ctx.code(target.value) if isinstance(target, cst.Subscript) else None
    picked = ctx.code(target)
    for call in (n for n in descendants(function) if isinstance(n, cst.Call)):
        keywords = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
        spread = [ctx.code(a.value) for a in call.args if a.star == "**"]
        if holder is not None and holder in spread:
            return bool(re.search(re.escape(holder) + r"\[[\"']messages[\"']\]", ctx.code(function)))
        model = keywords.get("model")
        messages = keywords.get("messages")
        if model is not None and ctx.code(model) == picked and messages is not None and not _written_here(ctx, function, messages) \
                and CONVERSATION.search(ctx.code(messages)):
            return True
    return False


def _written_here(ctx: ModuleContext, function: cst.FunctionDef, messages: cst.BaseExpression) -> bool:
    """A list of new messages written in the call or bound once in the function (`messages = [system, {"role": "user",
    ...}]`): a one-off request, not a conversation."""
    if isinstance(messages, cst.Name):
        values = [v for b, v in ctx.assigned_values(messages) if ctx.contains(function, b)]
        messages = values[0] if len(values) == 1 and values[0] is not None else messages
    return isinstance(messages, cst.List) and not any(isinstance(e, cst.StarredElement) for e in messages.elements)


def _model_target(target: cst.BaseExpression) -> bool:
    """`model`, `self.model`, `conversation.model`, `params["model"]` (not a candidate kept aside: `image_model`)."""
    from cachelint.check.values import string_value

    if isinstance(target, cst.Name):
        return target.value in MODEL_NAMES
    if isinstance(target, cst.Attribute):
        return target.attr.value in MODEL_NAMES
    if isinstance(target, cst.Subscript) and len(target.slice) == 1 and isinstance(target.slice[0].slice, cst.Index):
        return string_value(target.slice[0].slice.value) in MODEL_NAMES
    return False


def _conditional_test(ctx: ModuleContext, assign: cst.Assign) -> cst.BaseExpression | None:
    """The test of the conditional expression the model is picked by, or of the `if` the assignment sits in (its body or
    its `else`), within the function."""
    if isinstance(assign.value, cst.IfExp):
        return assign.value.test
    for ancestor in ctx.ancestors(assign):
        if isinstance(ancestor, cst.If):
            return ancestor.test
        if isinstance(ancestor, (cst.FunctionDef, cst.ClassDef, cst.For, cst.While)):
            return None
    return None


def _reads_the_conversation(ctx: ModuleContext, at: cst.CSTNode, test: cst.BaseExpression) -> bool:
    """The test looks for an image in the conversation, itself or through names bound from it earlier
    in the function: `has_images` with `has_images = any(... for entry in conversation.entries)`."""
    texts = [ctx.code(test)]
    function = ctx.enclosing_function(at)
    for name in (n for n in (test, *descendants(test)) if isinstance(n, cst.Name)):
        for binding, value in ctx.assigned_values(name):
            if value is not None and function is not None and ctx.contains(function, binding):
                texts.append(f"{name.value} = {ctx.code(value)}")
    return any(CONTENT.search(text) and CONVERSATION.search(text) for text in texts)


def _short(code: str) -> str:
    code = " ".join(code.split())
    return code if len(code) <= 60 else code[:57] + "..."
