"""The newest question sent ahead of the conversation's history (CL104).

A chat keeps its earlier turns and sends them again with each new question. Providers and engines reuse only an
exact prefix, so the new question belongs after the history: `[system, *history, user(question)]`. Written the other
way round, `[system, user(question), *history]`, every request differs from the previous one right after the
system prompt, and none of the history behind the question is read from cache, however long it grows.

Recognized in a list written in a function: a user message whose text is one of the function's parameters
(`Message.user(question)`, `{"role": "user", "content": question}`, `HumanMessage(content=question)`, `("user",
question)`), followed by a starred history (`*message_history`, `*chat_history`) that is not made from the question.
A user message with a constant text (a fixed task) is the same on every request and stays quiet.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from cachelint.check.depends import parameters_of
from cachelint.check.history import HISTORY_NAME
from cachelint.check.module import ModuleContext, called_name, last_name
from cachelint.check.renderers import message_shape
from cachelint.check.values import string_value

RUN_STEPS = re.compile(r"trajectory|steps|scratchpad|observations|actions", re.I)  # this run's own steps, after its task
ADDED = re.compile(r"^_?(?:extra|additional|more|few_?shot|example|sample)", re.I)  # messages added to a request, not its history
NOT_A_QUESTION = re.compile(r"system|instruction|persona|guideline", re.I)  # a system prompt sent in the user role (o1)
USER_FACTORIES = frozenset({"user", "HumanMessage", "UserMessage", "ChatMessageUser", "user_message", "human"})


@dataclass(frozen=True, slots=True)
class QuestionFirst:
    node: cst.CSTNode  # the user message
    question: str  # the parameter it carries
    history: str  # the starred history after it


def questions_before_history(ctx: ModuleContext) -> Iterator[QuestionFirst]:
    if ctx.is_test:
        return
    for listed in ctx.nodes(cst.List):
        if len(listed.elements) < 2 and not isinstance(ctx.parent(listed), cst.BinaryOperation):
            continue  # a question and a history after it, in the list or added to it
        function = ctx.enclosing_function(listed)
        if function is None:
            continue
        extended = _extended_later(ctx, function, listed)  # asked once: the filter and the `else` below both read it
        if not any(isinstance(e, cst.StarredElement) for e in listed.elements) and not isinstance(ctx.parent(listed), cst.BinaryOperation) \
                and extended is None:
            continue
        params = parameters_of(function)
        question = None
        for element in listed.elements:
            if isinstance(element, cst.StarredElement):
                if question is not None and _a_history(ctx, function, element.value, question[1]):
                    yield QuestionFirst(question[0], question[2], _leaf(element.value))
                    break
                continue
            if question is None:
                carried = _user_text_parameter(element.value, params)
                if carried is not None:
                    question = (element.value, carried[0], ctx.code(carried[1]))
        else:
            # `[system, HumanMessage(content=question)] + chat_history`: the history added after the list
            parent = ctx.parent(listed)
            if question is not None and isinstance(parent, cst.BinaryOperation) and isinstance(parent.operator, cst.Add) \
                    and parent.left is listed and _a_history(ctx, function, parent.right, question[1]):
                yield QuestionFirst(question[0], question[2], _leaf(parent.right))
            elif question is not None and extended is not None and _a_history(ctx, function, extended, question[1]):
                yield QuestionFirst(question[0], question[2], _leaf(extended))


def _extended_later(ctx: ModuleContext, function: cst.FunctionDef, listed: cst.List) -> cst.BaseExpression | None:
    """`messages = [system, user(question)]`, then `messages.extend(chat_history)` (or `messages += chat_history`)
    further down the function: what the list is extended with."""
    statement = ctx.parent(listed)
    if not (isinstance(statement, cst.Assign) and len(statement.targets) == 1 and isinstance(statement.targets[0].target, cst.Name)):
        return None
    name = statement.targets[0].target.value
    for node in ctx.nodes_in(cst.Call, function):
        if isinstance(node.func, cst.Attribute) and node.func.attr.value == "extend" and isinstance(node.func.value, cst.Name) \
                and node.func.value.value == name and len(node.args) == 1 and ctx.span(node).row > ctx.span(listed).row:
            return node.args[0].value
    for node in ctx.nodes_in(cst.AugAssign, function):
        if isinstance(node.operator, cst.AddAssign) and isinstance(node.target, cst.Name) and node.target.value == name \
                and ctx.span(node).row > ctx.span(listed).row:
            return node.value
    return None


def _a_history(ctx: ModuleContext, function: cst.FunctionDef, value: cst.BaseExpression, question: str) -> bool:
    """A conversation kept across calls: named for one, not the question, and not a list the function starts empty
    (`step_messages = []` ... `[system, user(task), *step_messages]`: this run's own steps, appended after a fixed task)."""
    leaf = _leaf(value)
    if not HISTORY_NAME.search(leaf) or RUN_STEPS.search(leaf) or ADDED.match(leaf) or leaf == question:
        return False
    root = value.value if isinstance(value, cst.Subscript) else value
    if isinstance(root, cst.Name):
        for binding, bound in ctx.assigned_values(root):
            if ctx.enclosing_function(binding) is function and isinstance(bound, cst.List) and not bound.elements:
                return False
    return True


def _user_text_parameter(node: cst.BaseExpression, params: set[str]) -> tuple[str, cst.BaseExpression] | None:
    """(the parameter, the value as written) a user message carries as its text: `question`, `request.question`,
    `f"Question: {question}"`."""
    text = None
    if isinstance(node, cst.Call) and called_name(node) in USER_FACTORIES:
        content = next((a.value for a in node.args if a.keyword is not None and a.keyword.value in ("content", "text")), None)
        text = content if content is not None else node.args[0].value if node.args and node.args[0].keyword is None else None
    elif isinstance(node, cst.Tuple) and len(node.elements) == 2 and string_value(node.elements[0].value) in ("user", "human"):
        text = node.elements[1].value
    else:
        shape = message_shape(node)
        if shape is not None and shape[0] == "user" and len(shape[1]) == 1:
            text = shape[1][0]
    if isinstance(text, cst.FormattedString):  # `f"Question: {question}"`: one value, the rest a fixed frame
        values = [p.expression for p in text.parts if isinstance(p, cst.FormattedStringExpression)]
        text = values[0] if len(values) == 1 else None
    written = text
    while isinstance(text, cst.Attribute):  # `request.question`
        text = text.value if isinstance(text.value, (cst.Name, cst.Attribute)) else None
    if isinstance(text, cst.Name) and text.value in params and text.value != "self" and not HISTORY_NAME.search(text.value) \
            and not NOT_A_QUESTION.search(text.value):
        return text.value, written
    return None


def _leaf(expr: cst.BaseExpression) -> str:
    """`self.chat_history` or `chat_history[-10:]` -> "chat_history"."""
    return last_name(expr.value if isinstance(expr, cst.Subscript) else expr) or ""

