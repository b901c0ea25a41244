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
# the standing instructions a request carries (`{question.system_context}`): the same on every turn, whatever holds them
STANDING = re.compile(r"^(?:system_?(?:context|prompt|message|instructions?)?|instructions?|persona)$", re.IGNORECASE)
# history looked up for this turn (`{relevant_history}`) is this turn's data, not the conversation that grows
LOOKED_UP = re.compile(r"relevant|retriev|similar|related|search", re.IGNORECASE)
# a number about the history, not the history: `{min_dialogue}` exchanges, `{max_history}`, `{num_turns}`
BARE_NAME = re.compile(r"[\w.]+")  # a name or attribute chain, not a call or an expression: `self.max_history`
QUANTITY = re.compile(r"(?:^|[_.])(?:min|max|num|n|count|total|len|number)_\w", re.IGNORECASE)
# a log line, a print, an exception's message, or text only measured (`get_tokens(f"{prompt}{history}")`)
NOT_PROMPTS = re.compile(r"^(?:print|debug|info|warning|warn|error|exception|critical|log\w*|write|len|\w*Error|Exception)$|token|count|estimate|hash",
                         re.IGNORECASE)
MAX_FOUND = 16


@dataclass(frozen=True, slots=True)
class LateHistory:
    node: cst.CSTNode  # the f-string or the .format() call
    history: str  # the placeholder of the history
    ahead: tuple[str, ...]  # the per-turn placeholders before it
    volatile: bool = False  # the first of them is a clock or a counter (CL101), not data of the turn (CL104)


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
        judged = _judge(ctx, fields)
        if judged is not None:
            history, ahead, volatile = judged
            at = next(place for name, place in fields if name == ahead[0])  # an f-string: its first value of this turn
            found.append(LateHistory(at, history, ahead, volatile))
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
        return [(ctx.code(_without_fallback(part.expression)), part.expression) for part in node.parts
                if isinstance(part, cst.FormattedStringExpression)]
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


def _without_fallback(expr: cst.BaseExpression) -> cst.BaseExpression:
    """`history() or "No history yet."`, `history if history else "none"`, `"\\n".join(history)`: the value, without its
    stand-in or its separator."""
    while True:
        if isinstance(expr, cst.BooleanOperation) and isinstance(expr.operator, cst.Or):
            expr = expr.left
        elif isinstance(expr, cst.IfExp):
            expr = expr.body
        elif isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "join" \
                and isinstance(expr.func.value, (cst.SimpleString, cst.ConcatenatedString)) and len(expr.args) == 1:
            expr = expr.args[0].value  # "\n".join(self.history)
        else:
            return expr


def _judge(ctx: ModuleContext, fields: list[tuple[str, cst.CSTNode]]) -> tuple[str, tuple[str, ...], bool] | None:
    """(the history's placeholder, the values of this turn before it, whether the first of them is a clock or a
    counter). A value of this turn is one named so (PER_TURN), unless it is a parameter every caller in the module
    passes unchanged through the passes of its loop (`self._select(next_gap, query)` in `while ...:`: the query is the
    same on every pass), or a parameter every such caller passes a value made in the pass (`next_gap`)."""
    for index, (field, at) in enumerate(fields):
        if HISTORY.search(field) and not LOOKED_UP.search(field) and not _a_number(field):
            kept = _kept_across_passes(ctx, at)
            ahead = []
            for name, place in fields[:index]:
                if HISTORY.search(name):
                    continue
                if kept and _volatile(ctx, place):
                    ahead.append((name, True))
                    continue
                per_pass = _passed_per_pass(ctx, place) if BARE_NAME.fullmatch(name) and "." not in name else None
                if per_pass or (per_pass is None and PER_TURN.search(name) and not STANDING.search(name.rsplit(".", 1)[-1])):
                    ahead.append((name, False))
            if not ahead:
                return None
            return field, tuple(name for name, _ in ahead), ahead[0][1]
    return None


def _kept_across_passes(ctx: ModuleContext, place: cst.CSTNode) -> bool:
    """The history field reads state that outlives one call, which the loop adds to (`self.conversation.compile_history()`,
    `{self.history_text}`, a module's list), not a text the function is handed (`def summarize(transcript, ...)`: a
    meeting transcript summarized once, whose timestamp header is the newest message's own)."""
    if not isinstance(place, cst.BaseExpression) or not isinstance(ctx.parent(place), cst.FormattedStringExpression):
        return False
    expr = _without_fallback(place)
    while isinstance(expr, (cst.Call, cst.Attribute, cst.Subscript)):
        expr = expr.func if isinstance(expr, cst.Call) else expr.value
    if not isinstance(expr, cst.Name):
        return False
    if expr.value in ("self", "cls"):
        return True
    return not any(isinstance(binding, cst.Param) for binding, _ in ctx.assigned_values(expr))


# a counter of the passes of an agent's loop, kept on the object or the module (`self.iteration += 1`)
COUNTER = re.compile(r"^(?:current_|cur_)?(?:iteration|iter|step|turn|round|attempt|loop|cycle|epoch|generation)s?(?:_?(?:count|num|number|idx|index|no))?$",
                     re.IGNORECASE)


def _volatile(ctx: ModuleContext, place: cst.CSTNode, depth: int = 0) -> bool:
    """The f-string field reads a clock to the second (`time.time() - self.start_time`, `datetime.now()`; not a date,
    `datetime.now().strftime("%Y-%m-%d")`), itself or through a name bound to one in its function (`elapsed = ...`), or
    a counter: one its class counts up (`self.iteration` or `self.state.iteration` with `... += 1` in the same class), or
    the variable of a loop over a range (`for step in range(n)`). It changes on every pass, whatever the turn holds."""
    from cachelint.check.values import VOLATILE_CALLS, strftime_granularity, string_value

    if depth > 2 or not isinstance(ctx.parent(place), cst.FormattedStringExpression) and depth == 0:
        return False  # a `.format()` call's fields are names in a template's text, judged by name only
    clocks = {name for name, kind in VOLATILE_CALLS.items() if kind == "call"}
    for node in (place, *descendants(place)):
        if isinstance(node, cst.Call) and ctx.qualified_name_in(node.func, clocks):
            outer = ctx.parent(ctx.parent(node))
            if isinstance(outer, cst.Call) and isinstance(outer.func, cst.Attribute) and outer.func.attr.value == "strftime" \
                    and outer.args and strftime_granularity(string_value(outer.args[0].value) or "%S") in ("day", "month"):
                continue  # a date: it changes once a day
            return True
    expr = _without_fallback(place)
    if isinstance(expr, cst.Name):
        function = ctx.enclosing_function(place)
        for binding, value in ctx.assigned_values(expr):
            if function is None or not ctx.contains(function, binding):
                continue
            loop = ctx.parent(binding)
            if isinstance(loop, cst.For) and loop.target is binding and isinstance(loop.iter, cst.Call) \
                    and isinstance(loop.iter.func, cst.Name) and loop.iter.func.value == "range":
                return True  # for step in range(max_steps): f"Step {step} ..."
            if value is not None and _volatile(ctx, value, depth + 1):
                return True  # elapsed = time.time() - self.start_time
        return False
    if isinstance(expr, cst.Attribute) and COUNTER.match(expr.attr.value) and ctx.code(expr).startswith("self."):
        code = ctx.code(expr)
        cls = ctx.enclosing(place, (cst.ClassDef,))
        return cls is not None and any(isinstance(n, cst.AugAssign) and isinstance(n.operator, cst.AddAssign)
                                       and ctx.code(n.target) == code for n in descendants(cls))
    return False


def _passed_per_pass(ctx: ModuleContext, place: cst.CSTNode) -> bool | None:
    """For a field that is a parameter of its function: True when every call of the function in this module sits in a
    loop and passes a value bound inside that loop's body, False when every such call passes one bound outside it (a
    parameter of the caller, a value made before the loop), None when there is no such call or they differ."""
    from cachelint.check.module import argument_for

    if not isinstance(place, cst.Name):
        return None
    function = ctx.enclosing_function(place)
    if function is None:
        return None
    names = [p.name.value for p in function.params.params]
    if place.value not in names:
        return None
    method = bool(names) and names[0] in ("self", "cls")
    verdicts = set()
    for call in ctx.calls_by_name.get(function.name.value, [])[:8]:
        loops = ctx.loops_around(call)
        value = argument_for(call, place.value, names.index(place.value) - method)
        if not loops or not isinstance(value, cst.Name):
            return None
        bindings = [binding for binding, _ in ctx.assigned_values(value)]
        if not bindings:
            return None
        verdicts.add(any(ctx.contains(loops[0], binding) for binding in bindings))
    return verdicts.pop() if len(verdicts) == 1 else None


def _a_number(field: str) -> bool:
    """A bare name for a number about the history (`min_dialogue`, `self.max_history`), not a call that renders it."""
    return BARE_NAME.fullmatch(field) is not None and QUANTITY.search(field.rsplit(".", 1)[-1]) is not None


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


# --- a window of the history rendered behind this turn's value (CL301 stays quiet) ------------------------------

# what only the newest turn brings: its question or input (narrower than PER_TURN: this list silences CL301)
NEWEST_INPUT = re.compile(r"^(?:question|query|user_?input|input|user_?message|new_?message|latest_?message|user_?query|user_?question)s?$",
                          re.IGNORECASE)
LABEL = re.compile(r"(\w+)[ \t]*[:=>\]]?[ \t]*$")  # the word right before a field, on its line: "QUESTION: {q}"


def behind_this_turns_value(ctx: ModuleContext, node: cst.CSTNode) -> bool:
    """The window `node` is rendered into a prompt text after a value of this turn: the question (`QUESTION: {q}`,
    `{user_input}`) or a value made anew for each call (`{nonce}` from `secrets.token_hex`), in the same f-string,
    or, when `node` is in a function that renders it, in the f-strings every caller in the module puts its result
    in (through up to two names: `transcript = render(...)`, `safe = scrub(transcript)`). Everything after that value
    is prefilled on every request anyway, so cutting the window there costs no cached prefix (CL104 says what
    does)."""
    place = _field_holding(ctx, node)
    if place is not None:
        return _after_a_turn_value(ctx, *place)
    function = ctx.enclosing_function(node)
    if function is None:
        return False
    uses = [use for call in ctx.calls_by_name.get(function.name.value, []) for use in _rendered_uses(ctx, call)]
    return bool(uses) and all(use is not None and _after_a_turn_value(ctx, *use) for use in uses)


def _field_holding(ctx: ModuleContext, node: cst.CSTNode) -> tuple[list[cst.CSTNode], int] | None:
    """(the parts of the whole f-string text, in order; the index of the field that holds `node`), or None."""
    field: cst.CSTNode | None = None
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, cst.FormattedStringExpression):
            field = ancestor
        elif isinstance(ancestor, cst.FormattedString) and field is not None:
            top: cst.CSTNode = ancestor
            while isinstance(ctx.parent(top), cst.ConcatenatedString):
                top = ctx.parent(top)
            parts = _flat_parts(top)
            return parts, next(i for i, p in enumerate(parts) if p is field)
        elif isinstance(ancestor, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
            return None
    return None


def _flat_parts(node: cst.CSTNode) -> list[cst.CSTNode]:
    if isinstance(node, cst.ConcatenatedString):
        return _flat_parts(node.left) + _flat_parts(node.right)
    if isinstance(node, cst.FormattedString):
        return list(node.parts)
    return [node]


def _after_a_turn_value(ctx: ModuleContext, parts: list[cst.CSTNode], index: int) -> bool:
    """A field before `index` holds the newest turn's input (named so, or labelled so right before it on its line:
    `QUESTION: {self.message_content}`), or a value drawn anew on every call (a clock to the second, a uuid, a
    nonce; not a date, which CL101 judges)."""
    from cachelint.check.values import VOLATILE_CALLS

    volatile = {name for name, kind in VOLATILE_CALLS.items() if kind == "call"}
    for at, part in enumerate(parts[:index]):
        if not isinstance(part, cst.FormattedStringExpression):
            continue
        code = ctx.code(part.expression)
        before = parts[at - 1] if at else None
        label = LABEL.search(before.value) if isinstance(before, cst.FormattedStringText) else None
        if BARE_NAME.fullmatch(code) and NEWEST_INPUT.match(code.rsplit(".", 1)[-1]) or (label and NEWEST_INPUT.match(label.group(1))):
            return True
        for name in (n for n in (part.expression, *descendants(part.expression)) if isinstance(n, cst.Name)):
            if any(value is not None and any(isinstance(c, cst.Call) and ctx.qualified_name_in(c.func, volatile)
                                             for c in (value, *descendants(value)))
                   for _, value in ctx.assigned_values(name)):
                return True
    return False


def _rendered_uses(ctx: ModuleContext, call: cst.Call) -> list[tuple[list[cst.CSTNode], int] | None]:
    """Where the result of `call` is rendered: for each f-string field that holds it (directly, or through up to two
    names bound in the caller), its place; None for a use that is not such a field (returned, sent as it is)."""
    place = _field_holding(ctx, call)
    if place is not None:
        return [place]
    statement = ctx.parent(call)
    caller = ctx.enclosing_function(call)
    if not (isinstance(statement, cst.Assign) and len(statement.targets) == 1 and isinstance(statement.targets[0].target, cst.Name)) \
            or caller is None:
        return [None]
    names = {statement.targets[0].target.value}
    for assign in ctx.nodes_in(cst.Assign, caller):  # safe = scrub(transcript)
        if len(assign.targets) == 1 and isinstance(assign.targets[0].target, cst.Name) and any(
                isinstance(n, cst.Name) and n.value in names for n in descendants(assign.value)):
            names.add(assign.targets[0].target.value)
    uses: list[tuple[list[cst.CSTNode], int] | None] = []
    for name in ctx.nodes_in(cst.Name, caller):
        if name.value in names and not isinstance(ctx.parent(name), cst.AssignTarget):
            made = ctx.enclosing(name, (cst.Assign, cst.BaseSmallStatement))
            if isinstance(made, cst.Assign) and len(made.targets) == 1 and isinstance(made.targets[0].target, cst.Name) \
                    and made.targets[0].target.value in names:
                continue  # a step that makes the next name: `safe = scrub(transcript)`, `safe = transcript.strip()`
            uses.append(_field_holding(ctx, name))
    return uses
