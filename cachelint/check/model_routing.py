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
