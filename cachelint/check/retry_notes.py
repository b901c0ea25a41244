"""A retry that puts a note ahead of the prompt it has just sent (CL104).

When an answer fails to parse, apps often ask again with a note: "THIS IS A RETRY, YOUR LAST ANSWER COULD NOT BE
PARSED", then the original task. The first request has just written the whole prompt to the cache; written after
the note, none of it is read back, and the retry prefills the whole prompt again. Put the note after the prompt
(or send it as a new message after the failed answer), and the retry reads the prompt from cache.

Recognized in one function: a request helper called with a prompt (`ask(promptStr=prompt)`), then a new text that
starts with other text and ends with that prompt (`retry = "NOTE ..."; retry += prompt`, `retry = NOTE + prompt`,
`f"{note}\\n{prompt}"`) handed to the same helper.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from cachelint.check.module import ModuleContext, called_name, descendants, names_in

PROMPT_NAME = re.compile(r"prompt|message|query|instruction|task|input|request", re.I)
QUICK = re.compile(r"\bretry|\bagain\b|RETRY|AGAIN", re.I)
RETRY_WORDS = re.compile(r"retry|again|fail|error|invalid|could not|couldn't|unable|pars", re.I)  # the note, or what holds it


@dataclass(frozen=True, slots=True)
class RetryNote:
    node: cst.CSTNode  # where the prompt is put after the note
    prompt: str
    retry: str
    first: int  # the line of the request that sent the prompt first


def retry_notes(ctx: ModuleContext) -> Iterator[RetryNote]:
    if ctx.is_test or not QUICK.search(ctx.source):
        return
    for function in ctx.nodes(cst.FunctionDef):
        yield from _in_function(ctx, function)


def _in_function(ctx: ModuleContext, function: cst.FunctionDef) -> Iterator[RetryNote]:
    calls = [n for n in descendants(function.body) if isinstance(n, cst.Call) and ctx.enclosing_function(n) is function]
    sent: dict[str, list[cst.Call]] = {}  # prompt name -> the calls it is handed to
    for call in calls:
        for arg in call.args:
            if isinstance(arg.value, cst.Name) and PROMPT_NAME.search(arg.value.value):
                sent.setdefault(arg.value.value, []).append(call)
    if not sent:
        return
    for node in descendants(function.body):
        if ctx.enclosing_function(node) is not function:
            continue  # a nested function's statements: judged once, with its own requests
        found = _note_then_prompt(ctx, node, set(sent))
        if found is None:
            continue
        retry, prompt = found
        row = ctx.span(node).row
        first = [c for c in sent[prompt] if ctx.span(c).row < row]
        again = [c for c in calls if ctx.span(c).row > row and any(isinstance(a.value, cst.Name) and a.value.value == retry for a in c.args)]
        if first and any(called_name(c) == called_name(first[-1]) for c in again):
            yield RetryNote(ctx.statement_of(node), prompt, retry, ctx.span(first[-1]).row)


def _note_then_prompt(ctx: ModuleContext, node: cst.CSTNode, prompts: set[str]) -> tuple[str, str] | None:
    """(retry, prompt) for `retry += prompt` after `retry = "note"`, `retry = NOTE + prompt` or `retry = f"{note}{prompt}"`."""
    if isinstance(node, cst.AugAssign) and isinstance(node.operator, cst.AddAssign) and isinstance(node.target, cst.Name) \
            and isinstance(node.value, cst.Name) and node.value.value in prompts and node.target.value != node.value.value:
        first = next((v for _, v in ctx.assigned_values(node.target) if v is not None), None)
        if first is not None and _text(first) and not names_in(first) & prompts \
                and RETRY_WORDS.search(ctx.code(first) + node.target.value):
            return node.target.value, node.value.value
        return None
    if isinstance(node, cst.Assign) and len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
        value = node.value
        prompts = prompts - {node.targets[0].target.value}
        if isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Add) and isinstance(value.right, cst.Name) \
                and value.right.value in prompts and not names_in(value.left) & prompts \
                and RETRY_WORDS.search(ctx.code(value.left) + node.targets[0].target.value):
            return node.targets[0].target.value, value.right.value
        if isinstance(value, cst.FormattedString) and len(value.parts) >= 2:
            last = value.parts[-1]
            head = value.parts[:-1]
            if isinstance(last, cst.FormattedStringExpression) and isinstance(last.expression, cst.Name) \
                    and last.expression.value in prompts and any(isinstance(p, cst.FormattedStringText) and p.value.strip() for p in head) \
                    and not any(names_in(p) & prompts for p in head) \
                    and RETRY_WORDS.search("".join(ctx.code(p) for p in head) + node.targets[0].target.value):
                return node.targets[0].target.value, last.expression.value
    return None


def _text(value: cst.BaseExpression) -> bool:
    return isinstance(value, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString))
