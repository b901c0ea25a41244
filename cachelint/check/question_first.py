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

from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from cachelint.check.depends import parameters_of
from cachelint.check.history import HISTORY_NAME
from cachelint.check.module import ModuleContext, called_name
from cachelint.check.renderers import message_shape
from cachelint.check.values import string_value

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
        function = ctx.enclosing_function(listed)
        if function is None:
            continue
        params = parameters_of(function)
        question = None
        for element in listed.elements:
            if isinstance(element, cst.StarredElement):
                history = _leaf(element.value)
                if question is not None and HISTORY_NAME.search(history) and history != question[1]:
                    yield QuestionFirst(question[0], question[1], history)
                    break
                continue
            if question is None:
                carried = _user_text_parameter(element.value, params)
                if carried is not None:
                    question = (element.value, carried)


def _user_text_parameter(node: cst.BaseExpression, params: set[str]) -> str | None:
    """The parameter a user message carries as its whole text, if it is one."""
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
    if isinstance(text, cst.Name) and text.value in params and not HISTORY_NAME.search(text.value):
        return text.value
    return None


def _leaf(expr: cst.BaseExpression) -> str:
    if isinstance(expr, cst.Attribute):
        return expr.attr.value
    if isinstance(expr, cst.Name):
        return expr.value
    return ""

