"""A conversation rendered into one prompt text behind values that change every turn (CL104).

Many apps do not send their history as messages: they render it into a text template
(`f"...<WORKSPACE>{scratchpad}{editor}</WORKSPACE><HISTORY>{history}</HISTORY>..."`,
`TEMPLATE.format(environment_summary=..., chat_history=..., query=...)`) and send that text again each turn.
The rendered history grows by appending, so it could be the reused part of the next turn's prompt, but only
if everything before it stays the same. A value of the newest turn placed before it (the question, text
retrieved for it, a summary refreshed between turns, the workspace's current state) changes the text ahead of
the whole history, and every turn prefills it again.

Recognized by names, so every finding is `likely`: a placeholder (or an f-string's expression) named for the
history (`history`, `chat_history`, `transcript`, `conversation`, `dialogue`), and before it one named for
what changes per turn (PER_TURN). The template is the f-string itself, or the text of a `.format()` call's
template written in this module or imported from another module of the tree. A log line, an exception's
message or a print is no prompt.
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass

import libcst as cst

from cachelint.check.module import ModuleContext, called_name, descendants

HISTORY = re.compile(r"(?:^|[_.])(?:chat_|conv_|conversation_|dialog_)?(?:history|transcript|conversation|dialogue|dialog)"
                     r"(?:_(?:messages?|str|string|text|block|log|so_far|content|md))?(?:\(\))?$"
                     r"|(?:^|[_.])(?:format|render|encode|construct)\w*_?(?:history|memory|transcript)\w*\(", re.IGNORECASE)
HISTORY_WORDS = r"history|transcript|conversation|dialog"  # also the module gate's test (gate.TEXT_HISTORY)
HISTORY_WORD = re.compile(HISTORY_WORDS, re.IGNORECASE)  # the quick test, before any codegen
# what the newest turn brings or changes: its question, what was retrieved or selected for it, the state the
# agent is in now
PER_TURN = re.compile(r"query|question|user_?input|^input$|_input$|user_?message|request|retriev|documents?|^docs$|snippets?|knowledge"
                      r"|memories|observation|scratchpad|editor|workspace|environment|summary|participants|candidates|guidelines?"
                      r"|matches|feedback|search_results|current_|latest_|^state$|_state$", re.IGNORECASE)
# history looked up for this turn (`{relevant_history}`) is this turn's data, not the conversation that grows
LOOKED_UP = re.compile(r"relevant|retriev|similar|related|search", re.IGNORECASE)
# a log line, a print, an exception's message, or text only measured (`get_tokens(f"{prompt}{history}")`)
NOT_PROMPTS = re.compile(r"^(?:print|debug|info|warning|warn|error|exception|critical|log\w*|write|len|\w*Error|Exception)$|token|count|estimate|hash",
                         re.IGNORECASE)
MAX_FOUND = 16


@dataclass(frozen=True, slots=True)
class LateHistory:
    node: cst.CSTNode  # the f-string or the .format() call
    history: str  # the placeholder of the history
    ahead: tuple[str, ...]  # the per-turn placeholders before it


def late_histories(ctx: ModuleContext) -> list[LateHistory]:
    found: list[LateHistory] = []
    if not HISTORY_WORD.search(ctx.source):
        return found
    for node in [*ctx.nodes(cst.FormattedString), *ctx.nodes(cst.Call)]:
        if not _may_hold_history(node):
            continue  # the costly part (codegen, the template's text) only where a name speaks of a history
        fields = _fields(ctx, node)
        if fields is None or _not_a_prompt(ctx, node):
            continue
        judged = _judge([name for name, _ in fields])
        if judged is not None:
            at = next(place for name, place in fields if name == judged[1][0])  # an f-string: its first value of this turn
            found.append(LateHistory(at, *judged))
            if len(found) >= MAX_FOUND:
                break
    return found


def _may_hold_history(node: cst.CSTNode) -> bool:
    """An f-string with a name or attribute that speaks of a history in a value, or a `.format()` call with such a
    keyword: the only templates that can render one."""
    if isinstance(node, cst.FormattedString):
        return any(isinstance(part, cst.FormattedStringExpression) and any(
            HISTORY_WORD.search(n.value) for n in (part.expression, *descendants(part.expression)) if isinstance(n, cst.Name))
            for part in node.parts)
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "format":
        return any(arg.keyword is not None and HISTORY_WORD.search(arg.keyword.value) for arg in node.args)
    return False


def _fields(ctx: ModuleContext, node: cst.CSTNode) -> list[tuple[str, cst.CSTNode]] | None:
    """(placeholder, where to report it) in the template's order: an f-string's expressions (their code, at
    themselves), or the field names of a `.format()` template whose text is known (at the call)."""
    if isinstance(node, cst.FormattedString):
        return [(ctx.code(part.expression), part.expression) for part in node.parts if isinstance(part, cst.FormattedStringExpression)]
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "format":
        if not any(arg.keyword is not None for arg in node.args):
            return None
        text = _template_text(ctx, node.func.value)
        if text is None:
            return None
        try:
            return [(name, node) for _, name, _, _ in string.Formatter().parse(text) if name]
        except ValueError:
            return None
    return None


def _template_text(ctx: ModuleContext, expr: cst.BaseExpression) -> str | None:
    from cachelint.check.static_prefix import leading_text

    text, whole = leading_text(ctx, expr)
    return text if whole and text else None


def _judge(fields: list[str]) -> tuple[str, tuple[str, ...]] | None:
    for index, field in enumerate(fields):
        if HISTORY.search(field) and not LOOKED_UP.search(field):
            ahead = tuple(f for f in fields[:index] if PER_TURN.search(f) and not HISTORY.search(f))
            return (field, ahead) if ahead else None
    return None


def _not_a_prompt(ctx: ModuleContext, node: cst.CSTNode) -> bool:
    """A log line, a print or an exception's message."""
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, cst.Call):
            return NOT_PROMPTS.search(called_name(ancestor)) is not None
        if isinstance(ancestor, (cst.Raise, cst.SimpleStatementLine, cst.FunctionDef)):
            return isinstance(ancestor, cst.Raise)
    return False


def describe(found: LateHistory) -> tuple[str, str]:
    """(the per-turn placeholders, the history's) as the user wrote them: `{query}`, `{history}`."""
    return ", ".join(f"`{{{name}}}`" for name in found.ahead), f"`{{{found.history}}}`"
