"""Static instructions placed after per-call data in a prompt (CL104): the part every call shares is not a prefix.

A prompt template often reads "here is the input: {document} ... now follow these 2,000 words of rules". Providers
and engines reuse only an exact prefix: everything after the first per-call value differs from the last call's
prompt, so the long static part is prefilled on every call though it never changes. Put it first, and the data
last.

Recognized in the text of a message built in a function (a dict or an object with a `role` and a `content`), an
f-string or a constant template filled with `.format(...)`: the static text after the first value that is not a
constant must reach the smallest minimum cacheable length (about 1,024 tokens) on its own; shorter, moving it
would cache nothing.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from pathlib import Path
from weakref import WeakKeyDictionary

import libcst as cst

from cachelint.check.module import LITERAL_ARGS, TEMPLATE_NAME, ModuleContext, argument_for, descendants, is_template
from cachelint.check.renderers import message_shape
from cachelint.check.depends import parameter_sources, parameters_of, positional_index
from cachelint.check.values import VOLATILE_NAMES, assigned_once, string_value

MIN_TAIL_CHARS = 4 * 1024  # about 1,024 tokens of English: the smallest minimum cacheable prefix (OpenAI, Claude Sonnet)
MAX_MESSAGES = 64  # messages judged per module
PLACEHOLDER = re.compile(r"(?<!\{)\{[A-Za-z_][\w.\[\]'\"]*(?:![rsa])?(?::[^{}]*)?\}(?!\})")


@dataclass(frozen=True, slots=True)
class Tail:
    node: cst.CSTNode  # the first per-call value
    value: str  # how the code names it
    chars: int  # static characters after it


def static_tails(ctx: ModuleContext) -> Iterator[Tail]:
    seen: set[int] = set()
    for tail in [*_message_tails(ctx), *builder_tails(ctx), *builder_return_tails(ctx), *handed_system_tails(ctx)]:
        if id(tail.node) not in seen and not _volatile(ctx, tail.node):
            seen.add(id(tail.node))
            yield tail


def _volatile(ctx: ModuleContext, node: cst.CSTNode) -> bool:
    """The first value is a clock, a random or an id (`{datetime.now():%H:%M}`, `now` assigned one): CL101's to
    report, once, as the value that changes."""
    expression = assigned_once(ctx, node.expression if isinstance(node, cst.FormattedStringExpression) else node)
    return any(isinstance(n, cst.Call) and ctx.qualified_name_in(n.func, VOLATILE_NAMES) is not None for n in [expression, *descendants(expression)])


BUILDER_NAME = re.compile(r"builder|prompt", re.I)


def builder_tails(ctx: ModuleContext) -> Iterator[Tail]:
    """A prompt builder filled section by section (`builder.add_customer_identity(customer)` then
    `builder.add_section(template="...4,000 characters...")`): the sections are the prompt in call order."""
    for function in ctx.nodes(cst.FunctionDef):
        calls = [small.value for statement in function.body.body if isinstance(statement, cst.SimpleStatementLine)
                 for small in statement.body if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call)
                 and isinstance(small.value.func, cst.Attribute) and isinstance(small.value.func.value, cst.Name)
                 and small.value.func.attr.value.startswith("add") and BUILDER_NAME.search(small.value.func.value.value)]
        first = next(((call, value) for call in calls for value in _dynamic_args(ctx, call)), None)
        if first is None:
            continue
        call, value = first
        receiver = call.func.value.value  # type: ignore[attr-defined]
        after = sum(len(_constant(ctx, a.value) or "") for later in calls[calls.index(call) + 1:]
                    if later.func.value.value == receiver for a in later.args)  # type: ignore[attr-defined]
        if after >= MIN_TAIL_CHARS:
            yield Tail(call, ctx.code(value), after)


def _dynamic_args(ctx: ModuleContext, call: cst.Call) -> list[cst.BaseExpression]:
    """The arguments of a builder call that are not constants (`customer`, `session.id`), names and props left out."""
    return [a.value for a in call.args if (a.keyword is None or a.keyword.value not in ("name", "props", "status"))
            and _constant(ctx, a.value) is None and not isinstance(a.value, (cst.Dict, cst.List, cst.Integer, cst.Float))]


def _message_tails(ctx: ModuleContext) -> Iterator[Tail]:
    judged = 0
    for kind in (cst.Dict, cst.Call):
        for node in ctx.nodes(kind):
            shape = message_shape(node)
            if shape is None or ctx.enclosing_function(node) is None:
                continue
            judged += 1
            if judged > MAX_MESSAGES:
                return
            for text in shape[1][:1]:
                found = _tail(ctx, _resolved(ctx, text))
                if found is not None:
                    yield found


def _resolved(ctx: ModuleContext, text: cst.BaseExpression) -> cst.BaseExpression:
    """A name assigned once in the function (`user_prompt = f"..."`): its value; a call of a builder of this module
    (`prompt = build_prompt(query, results)`, `self._render(task)`) that returns one template: that template."""
    if isinstance(text, cst.Name):
        # `prompt = TEMPLATE.format(...)`, then perhaps `prompt += extra`: text added at the end moves nothing before it
        values = [v for b, v in ctx.assigned_values(text) if v is not None and not _an_append(ctx, b, v)]
        if len(values) != 1:
            return text
        if _appended_after(ctx, text) and isinstance(values[0], (cst.BinaryOperation, cst.ConcatenatedString, cst.FormattedString)):
            return text  # `prompt = f"Task: {task}"; prompt += RULES`: its pieces are the value's, then the appended ones
        if text.value in ctx.template_names:  # the scopes only where a value can have a tail
            return values[0]
        text = values[0]
    if isinstance(text, cst.Call):
        functions = ctx.called_functions(text)
        returned = [r for f in functions for r in ctx.returns_of(f)]
        if len(functions) == 1 and len(returned) == 1 and is_template(returned[0]) \
                and (tail := _tail(ctx, returned[0])) is not None and _reads_parameter(ctx, tail.node, functions[0]):
            return returned[0]
    return text


def _tail(ctx: ModuleContext, text: cst.BaseExpression, per_call=None) -> Tail | None:
    if isinstance(text, (cst.FormattedString, cst.BinaryOperation)) or isinstance(text, cst.Name) and _appended_after(ctx, text) \
            or _joined_parts(text) is not None:
        return _f_string_tail(ctx, text, per_call)
    if isinstance(text, cst.Call) and isinstance(text.func, cst.Attribute) and text.func.attr.value == "format":
        return _template_tail(ctx, text)
    return None


def _f_string_tail(ctx: ModuleContext, text: cst.BaseExpression, per_call=None) -> Tail | None:
    """An f-string, or a `+` of f-strings, constants and values (`f"Context: {context}\n" + HANDBOOK`): the static
    characters after its first value that is not a constant (and that `per_call` says differs per call: a builder's
    `{language_name}` comes in a few values, each cached on its own, and the tail starts at its `{course_name}`)."""
    first: cst.CSTNode | None = None
    after = 0
    for piece in text_pieces(ctx, text):
        if isinstance(piece, cst.FormattedStringText):
            after += len(piece.value) if first is not None else 0
            continue
        expression = piece.expression if isinstance(piece, cst.FormattedStringExpression) else piece
        constant = _constant(ctx, expression)
        if first is None and constant is None and (per_call is None or per_call(piece)):
            first = piece
        elif first is not None:
            after += len(constant or "")
    if first is None or after < MIN_TAIL_CHARS:
        return None
    return Tail(first, ctx.code(first.expression if isinstance(first, cst.FormattedStringExpression) else first), after)


def text_pieces(ctx: ModuleContext, text: cst.BaseExpression, depth: int = 0) -> list[cst.CSTNode]:
    """The text's parts in order: an f-string's texts and expressions, through the operands of a `+` and implicitly
    joined literals, and into a text the function builds once and splices in (`sys = f"...{kind}\n" + form` where
    `form = "<the review form>" + extra`)."""
    if isinstance(text, cst.BinaryOperation) and isinstance(text.operator, cst.Add):
        return [*text_pieces(ctx, text.left, depth), *text_pieces(ctx, text.right, depth)]
    if isinstance(text, cst.ConcatenatedString):
        return [*text_pieces(ctx, text.left, depth), *text_pieces(ctx, text.right, depth)]
    if isinstance(text, cst.FormattedString):
        return list(text.parts)
    joined = _joined_parts(text)
    if joined is not None:
        return [piece for part in joined for piece in text_pieces(ctx, part, depth)]
    if isinstance(text, cst.Name) and depth < 2 and ctx.enclosing_function(text) is not None:
        values = [v for b, v in ctx.assigned_values(text) if v is not None and not _an_append(ctx, b, v)]
        if len(values) == 1 and (isinstance(values[0], (cst.BinaryOperation, cst.ConcatenatedString, cst.FormattedString))
                                 or _joined_parts(values[0]) is not None) \
                and ctx.enclosing_function(values[0]) is ctx.enclosing_function(text) and _constant(ctx, text) is None:
            return [*text_pieces(ctx, values[0], depth + 1),
                    *(piece for appended in _appended_after(ctx, text) for piece in text_pieces(ctx, appended, depth + 1))]
    return [text]


def _joined_parts(text: cst.BaseExpression) -> list[cst.BaseExpression] | None:
    """`"\\n\\n".join([prompt, RULES])`: a list written out joined by a literal separator reads as its items with the
    separator between them (None for any other text, or a list with a starred part)."""
    if not (isinstance(text, cst.Call) and isinstance(text.func, cst.Attribute) and text.func.attr.value == "join"
            and isinstance(text.func.value, cst.SimpleString) and len(text.args) == 1
            and isinstance(text.args[0].value, (cst.List, cst.Tuple))):
        return None
    elements = text.args[0].value.elements
    if not elements or any(isinstance(e, cst.StarredElement) for e in elements):
        return None
    parts: list[cst.BaseExpression] = []
    for i, element in enumerate(elements):
        if i:
            parts.append(text.func.value)
        parts.append(element.value)
    return parts


def _appended_after(ctx: ModuleContext, name: cst.Name) -> list[cst.BaseExpression]:
    """`prompt = f"Playground: {name}"` then `prompt += RULES` (a long literal), statements of the same block: the texts
    appended, in order (an append under an `if` may not be made, and is left out)."""
    bindings = list(ctx.assigned_values(name))
    first = [b for b, v in bindings if v is not None and not _an_append(ctx, b, v)]
    if len(first) != 1 or ctx.enclosing_function(first[0]) is None:
        return []
    block, start = _statement_in_block(ctx, first[0])
    appended = []
    for binding, value in bindings:
        if value is not None and _an_append(ctx, binding, value) and (
                not isinstance(ctx.parent(binding), cst.AugAssign) or isinstance(ctx.parent(binding).operator, cst.AddAssign)):
            where, index = _statement_in_block(ctx, binding)
            if where is block and block is not None and index > start:
                appended.append((index, value.right if isinstance(value, cst.BinaryOperation) and not isinstance(
                    ctx.parent(binding), cst.AugAssign) else value))
    return [value for _, value in sorted(appended, key=lambda pair: pair[0])]


def _an_append(ctx: ModuleContext, binding: cst.CSTNode, value: cst.BaseExpression) -> bool:
    """`prompt += text`, or `prompt = prompt + text`: text added to what the name holds."""
    if isinstance(ctx.parent(binding), cst.AugAssign):
        return True
    return isinstance(binding, cst.Name) and isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Add) \
        and isinstance(value.left, cst.Name) and value.left.value == binding.value


def _statement_in_block(ctx: ModuleContext, node: cst.CSTNode) -> tuple[cst.CSTNode | None, int]:
    statement = ctx.enclosing(node, (cst.SimpleStatementLine,))
    block = ctx.parent(statement) if statement is not None else None
    if not isinstance(block, cst.IndentedBlock):
        return None, -1
    return block, next(i for i, s in enumerate(block.body) if s is statement)


def _reads_parameter(ctx: ModuleContext, node: cst.CSTNode, function: cst.FunctionDef, with_defaults: bool = False) -> bool:
    """The first value of a builder's template is one of its parameters (`{query}`, `{context["doc"]}`): it differs per
    call. `{settings.BOT_NAME}` or `{self.name}` is the same on every call of one process or agent, and so is a mode
    (`{home(workspace_mode)}`, the parameter typed with an Enum): a few prompts, each cached on its own."""
    params = parameters_of(function)
    expression = node.expression if isinstance(node, cst.FormattedStringExpression) else node
    defaults = set() if with_defaults else {p.name.value for p in function.params.params if p.default is not None}
    read = {n.value for n in [expression, *descendants(expression)] if isinstance(n, cst.Name) and n.value in params - defaults}
    if not read and isinstance(expression, cst.Name):  # `{perspective_section}`, a section the builder made from its parameters
        if _chosen_among_constants(ctx, expression):
            return False  # `style = CONCISE if concise else DETAILED`, `STYLES[tone]`: a few prompts, each cached on its own
        read = set(parameter_sources(ctx, expression, params - defaults, within=function))
    return bool(read - _mode_parameters(ctx, function, read))


def _chosen_among_constants(ctx: ModuleContext, name: cst.Name) -> bool:
    """Every value the local name is bound to is a constant text, a choice between constants (`A if flag else B`), or
    an entry of a module-level table of them (`STYLES[tone]`)."""
    values = [value for _, value in ctx.assigned_values(name)]

    def constant(value: cst.BaseExpression | None) -> bool:
        if value is None:
            return False
        if isinstance(value, cst.IfExp):
            return constant(value.body) and constant(value.orelse)
        if isinstance(value, cst.Subscript) and isinstance(value.value, cst.Name):
            table = [v for b, v in ctx.assigned_values(value.value)]
            return len(table) == 1 and isinstance(table[0], cst.Dict) and ctx.enclosing_function(table[0]) is None \
                and all(isinstance(e, cst.DictElement) and _constant(ctx, e.value) is not None for e in table[0].elements)
        return _constant(ctx, value) is not None

    return bool(values) and all(constant(value) for value in values)


def _mode_parameters(ctx: ModuleContext, function: cst.FunctionDef, among: set[str]) -> set[str]:
    """Those of the parameters `among` that take one of a few fixed values: typed `bool`, `Literal[...]`, or an Enum
    class of the module or the tree (`workspace_mode: WorkSpaceMode`, `class WorkSpaceMode(str, Enum)`)."""
    found = set()
    for param in (*function.params.params, *function.params.kwonly_params):
        annotation = param.annotation.annotation if param.annotation is not None else None
        if annotation is None or param.name.value not in among:
            continue
        code = ctx.code(annotation)
        name = annotation.value if isinstance(annotation, cst.Name) else annotation.attr.value if isinstance(annotation, cst.Attribute) else ""
        if code == "bool" or LITERAL_TYPE.match(code) or (name and _is_enum(ctx, name)):
            found.add(param.name.value)
    return found


LITERAL_TYPE = re.compile(r"(?:typing(?:_extensions)?\.)?Literal\[")


def _is_enum(ctx: ModuleContext, name: str) -> bool:
    """A class `name` of the module, or else of the tree, derived from an Enum (`class Mode(str, Enum)`, `enum.IntEnum`)."""
    from cachelint.check import tree

    definition = re.compile(rf"^class {re.escape(name)}\((?:[\w.]+,\s*)*(?:enum\.)?(?:Str|Int)?(?:Enum|Flag)\)", re.M)
    if definition.search(ctx.source):
        return True
    if re.search(rf"^class {re.escape(name)}\b", ctx.source, re.M):
        return False  # defined here, not as an Enum
    if not re.search(rf"^\s*from\s+[\w.]+\s+import\s+(?:\([^)]*\b{re.escape(name)}\b|[^\n(]*\b{re.escape(name)}\b)", ctx.source, re.M):
        return False  # `str`, `dict`, a typing name or a class of another module reached by attribute: no Enum of the tree imported by name
    return tree.first_file(ctx.filename, f"enum {name}", lambda path, text: definition.search(text) is not None) is not None


PROMPT_BUILDER = re.compile(r"prompt|instruction|system_?message", re.I)


def builder_return_tails(ctx: ModuleContext) -> Iterator[Tail]:
    """A function named for the prompt it builds (`def rag_prompt(context, question): return f"Context: {context}..." +
    HANDBOOK`) that returns a template whose long static part follows a value: whoever sends it (another module, a
    framework), each call's prompt differs before the static part."""
    for function in ctx.nodes(cst.FunctionDef):
        if not PROMPT_BUILDER.search(function.name.value):
            continue
        returned = ctx.returns_of(function)
        if len(returned) == 1:
            found = _tail(ctx, _resolved(ctx, returned[0]), lambda piece, function=function: _reads_parameter(ctx, piece, function) or _volatile(ctx, piece))
            if found is not None and _reads_parameter(ctx, found.node, function) and not _fixed_by_callers(ctx, function, found):
                yield found


def _fixed_by_callers(ctx: ModuleContext, function: cst.FunctionDef, tail: Tail) -> bool:
    """Every call of the builder in the tree passes the same text for the parameters its tail follows: a constant, or
    an attribute the caller's object sets only when it is made (`system_message(self.action_descriptions)`, with
    `self.action_descriptions` set in `__init__`). The prompt then differs between objects at most, and each
    object's requests share the whole of it. A builder no file calls (tests aside) is judged by its template alone."""
    from cachelint.check.project import module_context
    from cachelint.check.static_prefix import caller_files

    expression = tail.node.expression if isinstance(tail.node, cst.FormattedStringExpression) else tail.node
    params = parameters_of(function)
    read = {n.value for n in (expression, *descendants(expression)) if isinstance(n, cst.Name) and n.value in params}
    name = function.name.value
    contexts = [ctx, *filter(None, (module_context(Path(path)) for path in caller_files(ctx.filename, name)))]
    calls = [(other, call) for other in contexts for call in other.calls_by_name.get(name, [])]  # (no test: caller_files)
    if not calls or not read:
        return False
    for other, call in calls:
        if any(arg.star for arg in call.args):
            return False  # `system_message(*parts)`: what reaches the parameter is not in sight
        for param in read:
            value = argument_for(call, param, positional_index(function, param))
            if value is None or not (_fixed(other, value) or _set_at_construction(other, value)):
                return False  # (a parameter read by the tail has no default, so a call always passes it)
    return True


def _set_at_construction(ctx: ModuleContext, value: cst.BaseExpression) -> bool:
    """`self.x`, where no method of the caller's class but its constructor (or another set-up method) sets `x`."""
    from cachelint.check.history import run_time_attributes

    if not (isinstance(value, cst.Attribute) and isinstance(value.value, cst.Name) and value.value.value == "self"):
        return False
    cls = ctx.enclosing(value, (cst.ClassDef,))
    return cls is not None and (id(cls), value.attr.value) not in run_time_attributes(ctx)


def _template_tail(ctx: ModuleContext, call: cst.Call) -> Tail | None:
    """`TEMPLATE.format(question=q)` on a module constant: the text after its first placeholder. Not a template
    imported from the prompts module that `templates_filled_elsewhere` reports at its placeholder for this fill (one
    problem, reported once, where the fix is)."""
    template = _constant(ctx, call.func.value)  # type: ignore[attr-defined]
    if template is None or _reported_at_the_template(ctx, call, template):
        return None
    for match in PLACEHOLDER.finditer(template):
        name = match.group(0).strip("{}").split(":")[0].split("!")[0]
        value = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == name), call)
        if _fixed(ctx, value):
            continue  # `.format(bot_name=BOT_NAME, language="English")`: the same text on every call
        after = len(PLACEHOLDER.sub("", template[match.end():]))
        return Tail(value, name, after) if after >= MIN_TAIL_CHARS else None
    return None


def _reported_at_the_template(ctx: ModuleContext, call: cst.Call, template: str) -> bool:
    """The fill's template is reported by `templates_filled_elsewhere` in its own module, for this fill: a
    module-level constant of another module, imported under its own name (or read through its module,
    `prompts.NAME`), that the tree's pass over the fills lists for this file and that is reported there. Then the
    problem is reported once, where the fix is."""
    func = call.func
    if not isinstance(func, cst.Attribute) or len(template) < MIN_TAIL_CHARS or ctx.enclosing_function(call) is None:
        return False
    name = func.value
    if isinstance(name, cst.Attribute) and isinstance(name.value, cst.Name):
        from cachelint.check.static_prefix import attribute_definition

        found = attribute_definition(ctx, name)  # `prompts.NAME`, not a class's attribute (`Prompts.NAME`)
        constant = name.attr.value
    elif isinstance(name, cst.Name):
        bindings = list(ctx.assigned_values(name))
        if len(bindings) != 1 or not isinstance(bindings[0][0], cst.ImportFrom) or not _under_its_own_name(bindings[0][0], name.value):
            return False
        from cachelint.check.project import imported_definition

        try:
            found = imported_definition(ctx, bindings[0][0], name.value)
        except (RecursionError, ValueError, OSError):
            return False
        constant = name.value
    else:
        return False
    if found is None or not TEMPLATE_CONSTANT.match(constant) or found[0].enclosing(found[1], (cst.ClassDef,)) is not None:
        return False
    here = os.path.abspath(ctx.filename)
    module, value = found
    return any((reported.node is value or module.contains(value, reported.node)) and here in map(os.path.abspath, reported.fillers)
               for reported in _templates_reported(module))


_REPORTED: WeakKeyDictionary[ModuleContext, list[TemplateTail]] = WeakKeyDictionary()


def _templates_reported(ctx: ModuleContext) -> list[TemplateTail]:
    if ctx not in _REPORTED:
        _REPORTED[ctx] = list(templates_filled_elsewhere(ctx))
    return _REPORTED[ctx]


def _under_its_own_name(node: cst.ImportFrom, name: str) -> bool:
    """`from app.prompts import NAME` (not `... import OTHER as NAME`)."""
    aliases = node.names if isinstance(node.names, (list, tuple)) else ()
    return any(isinstance(a.name, cst.Name) and a.name.value == name and a.asname is None for a in aliases)


def _fixed(ctx: ModuleContext, value: cst.BaseExpression) -> bool:
    """A literal, a module's string constant or a name in capitals (`BOT_NAME`, `settings.LANGUAGE`)."""
    if isinstance(value, (cst.Integer, cst.Float)) or _constant(ctx, value) is not None:
        return True
    last = value.attr.value if isinstance(value, cst.Attribute) else value.value if isinstance(value, cst.Name) else ""
    return bool(last) and last.isupper()


def _constant(ctx: ModuleContext, expr: cst.BaseExpression) -> str | None:
    """The text of a literal or of a module-level string constant (assigned once, outside any function)."""
    value = string_value(expr)
    if value is not None:
        return value
    if isinstance(expr, cst.ConcatenatedString):
        left, right = _constant(ctx, expr.left), _constant(ctx, expr.right)
        return left + right if left is not None and right is not None else None
    if isinstance(expr, cst.Name):
        bindings = list(ctx.assigned_values(expr))
        if len(bindings) == 1 and bindings[0][1] is not None and ctx.enclosing_function(bindings[0][0]) is None:
            return _constant(ctx, bindings[0][1])
        if len(bindings) == 1 and isinstance(bindings[0][0], cst.ImportFrom):
            return _imported_constant(ctx, bindings[0][0], expr.value)
        default = _default_text(ctx, bindings)
        if default is not None:
            return default
    if isinstance(expr, cst.Attribute):  # prompts.RESEARCH_INSTRUCTIONS, Prompts.SYSTEM
        from cachelint.check.static_prefix import attribute_definition

        found = attribute_definition(ctx, expr)
        if found is not None and not isinstance(found[1], (cst.FunctionDef, cst.ClassDef)):
            return _constant(found[0], found[1])
    return None


def _default_text(ctx: ModuleContext, bindings: list) -> str | None:
    """`if custom_instructions: section = custom_instructions` / `else: section = \"\"\"<the default rules>\"\"\"` in a
    function: a long literal, unless a setting or a parameter replaces it (a name or an attribute, under a test): the
    text every call sends with the default configuration."""
    literals = [value for binding, value in bindings if value is not None and string_value(value) is not None]
    others = [value for binding, value in bindings if value is None or string_value(value) is None]
    if len(literals) != 1 or not others or any(not isinstance(v, (cst.Name, cst.Attribute)) for v in others):
        return None
    if any(ctx.enclosing_function(binding) is None or ctx.enclosing(binding, (cst.If,)) is None for binding, _ in bindings):
        return None  # both bound under one test in a function (the override and its default)
    text = string_value(literals[0])
    return text if text is not None and len(text) >= MIN_TAIL_CHARS // 4 else None


def _imported_constant(ctx: ModuleContext, node: cst.ImportFrom, name: str) -> str | None:
    """A string constant of another module of the tree (`from .prompts import RESEARCH_INSTRUCTIONS`): the
    usual home of an app's prompt templates."""
    from cachelint.check.project import imported_definition

    try:
        found = imported_definition(ctx, node, name)
    except (RecursionError, ValueError, OSError):
        return None
    if found is None or isinstance(found[1], (cst.FunctionDef, cst.ClassDef)):
        return None
    return _constant(found[0], found[1])


# --- a system prompt handed to a function of the tree that sends it -------------------------------------------

SYSTEM_KEYWORDS = frozenset({"system", "instructions", "system_prompt", "system_message"})


def handed_system_tails(ctx: ModuleContext) -> Iterator[Tail]:
    """`query_model(system_prompt=f"...{reviewer}\n" + FORM, prompt=...)` where `query_model` (of this module or
    another of the tree) sends that parameter as the system prompt: the text handed over is judged as if it were
    written into the request."""
    from cachelint.check.history import foreign_callee

    if "system" not in ctx.source and "instructions" not in ctx.source:
        return
    senders: dict[int, set[str]] = {}  # a callee's system parameters, worked out once per callee
    for call in ctx.nodes(cst.Call):
        if all(isinstance(a.value, LITERAL_ARGS) for a in call.args):
            continue  # no argument, or only literals: nothing here varies per request
        caller = ctx.enclosing_function(call)
        if caller is None:
            continue
        local = ctx.called_functions(call)
        found = (ctx, local[0]) if len(local) == 1 else (foreign_callee(ctx, call) if not local else None)
        if found is None:
            continue
        other, callee = found
        if id(callee) not in senders:
            senders[id(callee)] = system_parameters(other, callee)
        for param in senders[id(callee)]:
            passed = argument_for(call, param, positional_index(callee, param))
            if passed is None or isinstance(passed, (cst.SimpleString, cst.ConcatenatedString)) and _constant(ctx, passed) is not None:
                continue
            tail = _tail(ctx, _resolved(ctx, passed))
            if tail is not None and _reads_parameter(ctx, tail.node, caller, with_defaults=True):
                yield tail  # `reviewer_type=None`: a default the callers replace, one kind of call after another


def system_parameters(ctx: ModuleContext, function: cst.FunctionDef) -> set[str]:
    """The parameters `function` puts in a request as its system prompt: `system=p` / `instructions=p`, or the
    content of a `{"role": "system", "content": p}` message."""
    params = parameters_of(function)
    found = set()
    for node in descendants(function.body):
        if isinstance(node, cst.Arg) and node.keyword is not None and node.keyword.value in SYSTEM_KEYWORDS \
                and isinstance(node.value, cst.Name) and node.value.value in params:
            found.add(node.value.value)
        elif isinstance(node, cst.Dict):
            fields = {string_value(e.key): e.value for e in node.elements if isinstance(e, cst.DictElement)}
            content = fields.get("content")
            if string_value(fields.get("role")) in ("system", "developer") and isinstance(content, cst.Name) and content.value in params:
                found.add(content.value)
    return found


# --- a module's prompt template, filled by another module -----------------------------------------------------------

# a prompt template kept as a module constant (`EDIT_INTENT_ANALYZER_PROMPT = """..."""`), and its `.format(` elsewhere
# or in lower case (`summarizer_instructions = r"""..."""`), which a filling module must import by that name: a lower-case
# name is as often a local variable of the filling function (`system_prompt.format(...)`)
TEMPLATE_CONSTANT = re.compile(rf"^{TEMPLATE_NAME}$")
# (a lower-case name not read as an attribute: `self.system_prompt.format(` is the object's own)
FORMATTED_TEMPLATE = re.compile(rf"\b((?!(?<=[.\w])[a-z]){TEMPLATE_NAME})\s*\.\s*format(?:_map)?\(")
# a slot an app fills the same way for every call, by a word of its name: its tools, a schema, the output format,
# examples, its own name or persona, a language (a date is CL101's): not the first per-call value
STATIC_WORDS = frozenset({"tool", "tools", "schema", "schemas", "format", "formats", "example", "examples", "persona", "name",
                          "role", "lang", "language", "languages", "rule", "rules", "guideline", "guidelines", "system", "agent",
                          "assistant", "bot", "company", "date", "today", "year", "time", "now", "datetime"})
# a module that fills a template for a model (not an e-mail or a web page)
FOR_A_MODEL = re.compile(r"(?i)\bllm\b|\bllm_|_llm\b|completion|anthropic|openai|litellm|langchain|llama_index|ollama|\.invoke\(|\.ainvoke\(")
# `"content": NAME.format(`, `content=NAME.format(`: filled into a message there, which static_tails judges in that module
IN_A_MESSAGE = re.compile(r"""(?:["']content["']\s*:|\bcontent\s*=)\s*\(?\s*$""")
# a plain value given to a slot: a string literal or a module constant (`audience=AUDIENCE`), the same for every call
CONSTANT_ARGUMENT = re.compile(r"""\b(\w+)\s*=\s*(?:[rRbBuU]?(?:"[^"{}\n]*"|'[^'{}\n]*')|[A-Z][A-Z0-9_]+)\s*(?=[,)])""")
_FORMATTED: dict = {}


@dataclass(frozen=True, slots=True)
class TemplateTail:
    node: cst.CSTNode  # the template's string
    value: str  # its first per-call placeholder
    chars: int  # static characters after it
    position: tuple[int, int]  # where that placeholder is (row, column)
    fillers: tuple[str, ...]  # the files of the tree whose fills it stands for (the first is named in the report)

    @property
    def where(self) -> str:
        return self.fillers[0]


@dataclass(slots=True)
class _Fills:
    paths: list[str]  # the files that fill the template in a function, for a model, with no breakpoint and not into a message
    constant_slots: set[str] | None = None  # the slots every fill gives a constant
    sources: dict[str, str] = field(default_factory=dict)  # a lower-case template's fills: the module each imports it from


def templates_filled_elsewhere(ctx: ModuleContext) -> Iterator[TemplateTail]:
    """A prompt template kept as a module constant whose static instructions (at least MIN_TAIL_CHARS) come after its
    first per-call placeholder (`<current_report>{report_context}</current_report>` and then 2,000 words of rules),
    filled with `.format(...)` inside a function of another module of the tree that speaks to a model (not a test, not
    one that defines a template of that name itself, sets breakpoints or builds the message there): the prompts file of
    an app whose pipeline fills them. Whatever the request, the part every call shares is not its prefix. A slot every
    fill gives a constant (`audience=AUDIENCE`), or named for what the app fills alike for every call (its tools, a
    schema, the format, examples, its name), is not the first per-call value."""
    candidates = [found for statement in ctx.module.body if (found := _template(statement)) is not None]
    if not candidates:
        return
    from cachelint.check.tree import tree_pass

    filled = tree_pass(ctx.filename, _FORMATTED, _formatted_templates) or {}
    here = os.path.abspath(ctx.filename)
    for name, node, text in candidates:
        fills = filled.get(name)
        where = [path for path in fills.paths if os.path.abspath(path) != here] if fills is not None else []
        if name.islower():  # a common name: only the fills that import it from this module
            where = [path for path in where if _from_module(fills.sources.get(path, ""), ctx.filename)]
        if not where:
            continue
        constant = fills.constant_slots or set()
        first = next((m for m in PLACEHOLDER.finditer(text) if not _static_slot(m.group(0), constant)), None)
        if first is None:
            continue
        static = len(PLACEHOLDER.sub("", text[first.end():]).strip())
        if static >= MIN_TAIL_CHARS:
            yield TemplateTail(node, first.group(0), static, _position(ctx, node, first.group(0)), tuple(where))


def _template(statement: cst.CSTNode) -> tuple[str, cst.CSTNode, str] | None:
    """(name, string node, text) of `NAME_PROMPT = "..."` (also annotated, dedented, stripped) of at least MIN_TAIL_CHARS."""
    found = string_constant(statement, TEMPLATE_CONSTANT)
    if found is None or len(found[2]) < MIN_TAIL_CHARS:
        return None
    return found


def string_constant(statement: cst.CSTNode, name: re.Pattern[str]) -> tuple[str, cst.CSTNode, str] | None:
    """(name, string node, text) of a module statement that binds a name matching `name` to a text: `NAME = "..."`,
    annotated (`NAME: Final = ...`), dedented, cleaned or stripped (`textwrap.dedent(TEXT)`); not bytes."""
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return None
    small = statement.body[0]
    if isinstance(small, cst.Assign) and len(small.targets) == 1:
        target, value = small.targets[0].target, small.value
    elif isinstance(small, cst.AnnAssign) and small.value is not None:
        target, value = small.target, small.value
    else:
        return None
    if not isinstance(target, cst.Name) or not name.match(target.value):
        return None
    while isinstance(value, cst.Call):  # textwrap.dedent("..."), inspect.cleandoc(...), "...".strip()
        func = value.func
        if isinstance(func, cst.Attribute) and func.attr.value in ("strip", "lstrip", "rstrip") and not value.args:
            value = func.value
        elif isinstance(func, (cst.Name, cst.Attribute)) and (func.value if isinstance(func, cst.Name) else func.attr.value) \
                in ("dedent", "cleandoc") and len(value.args) == 1:
            value = value.args[0].value
        else:
            return None
    if not isinstance(value, (cst.SimpleString, cst.ConcatenatedString)):
        return None
    text = value.evaluated_value
    return (target.value, value, text) if isinstance(text, str) else None


def _static_slot(placeholder: str, constant: set[str]) -> bool:
    key = re.match(r"\{(\w*)", placeholder)
    name = key.group(1) if key else ""
    return name in constant or "*" in constant or any(word in STATIC_WORDS for word in name.lower().split("_"))


def _formatted_templates(root: str) -> tuple[dict[str, _Fills], list[str]]:
    """The template constants the files of the tree fill with `.format(` (name -> the fills that count)."""
    from cachelint.check.config import test_path_below
    from cachelint.check.tree import texts

    found: dict[str, _Fills] = {}
    read: list[str] = []
    for path, text in texts(root):
        read.append(path)  # a file that starts filling the template changes the answer
        if ".format" not in text or test_path_below(path, root) or not FOR_A_MODEL.search(text) or "cache_control" in text:
            continue
        lines = None  # split once a file, for the first fill that asks which function it is in
        for match in FORMATTED_TEMPLATE.finditer(text):
            name = match.group(1)
            line_start = text.rfind("\n", 0, match.start()) + 1
            if not text[line_start:match.start()].startswith((" ", "\t")):
                continue  # filled once, at import (`SUPPORT_PROMPT = BASE_TEMPLATE.format(policy=POLICY)`)
            if IN_A_MESSAGE.search(text[max(0, match.start() - 40):match.start()]) \
                    or re.search(rf"^{re.escape(name)}\s*(?::[^=\n]*)?=[^=]", text, re.M):
                continue  # made into a message here (judged in this module), or this module's own template of that name
            source = _imported_by_name(text, name) if name.islower() else None
            if name.islower() and source is None:
                continue  # `system_prompt.format(...)`: a local or a parameter of that name, not the prompts module's constant
            fills = found.setdefault(name, _Fills([]))
            if path not in fills.paths:
                fills.paths.append(path)
                if source is not None:
                    fills.sources[path] = source
            arguments = _arguments(text, match.end())
            slots = {m.group(1) for m in CONSTANT_ARGUMENT.finditer(arguments)}
            lines = text.split("\n") if lines is None else lines
            if _once_per_object(text, lines, line_start, arguments):
                slots |= SPREAD_ALL  # filled as the object is set up, from its own settings: no slot changes per call
            fills.constant_slots = slots if fills.constant_slots is None else fills.constant_slots & slots
    return found, read


def _imported_by_name(text: str, name: str) -> str | None:
    """The module of `from app.prompts import summarizer_instructions` (also inside parentheses, over several lines;
    not `... as other`): `app.prompts`; None when the file does not import the name."""
    escaped = re.escape(name)
    found = re.search(rf"^\s*from\s+([\w.]+)\s+import\s+(?:\([^)]*\b{escaped}\b(?!\s+as\b)|[^\n(]*\b{escaped}\b(?!\s+as\b))", text, re.M)
    return found.group(1) if found is not None else None


def _from_module(source: str, filename: str) -> bool:
    """An import's module names this file: its last part is the file's stem (`app.a_prompts` for a_prompts.py), or
    the package's folder for an `__init__.py`."""
    stem = Path(filename).stem
    last = source.rstrip(".").rsplit(".", 1)[-1]
    return last == (Path(filename).parent.name if stem == "__init__" else stem)


SPREAD_ALL = frozenset({"*"})  # a fill that gives every slot a value set once per object
SETUP_METHOD = re.compile(r"__init__|__post_init__|_?setup_\w+|_?setup")
SPREAD = re.compile(r"\*\*\s*([\w.]+)")
KEYWORD = re.compile(r"(?:^|[(,])\s*(\w+)\s*=(?!=)")


def _once_per_object(text: str, lines: list[str], line_start: int, arguments: str) -> bool:
    """A fill that runs as an object is set up (in `__init__`, `setup_prompts`), or that takes its values only from
    the object's own settings and the module's constants (`**self._domain_map`, `**self._tool_names`, no keyword
    given; not a dict of the object's written into per call, `self.prompt_vars["item"] = item`): the template is the
    same text for every call the object then makes."""
    from cachelint.check.tree import enclosing_def

    name = enclosing_def(lines, text.count("\n", 0, line_start))
    if name is not None and SETUP_METHOD.fullmatch(name):
        return True
    spreads = SPREAD.findall(arguments)
    return bool(spreads) and all(s.isupper() or (s.startswith("self.") and not _written_into(text, s)) for s in spreads) \
        and not KEYWORD.search(arguments)


def _written_into(text: str, attribute: str) -> bool:
    """`self.prompt_vars["item"] = item` or `self.prompt_vars.update(...)` anywhere in the file: a dict filled per call."""
    escaped = re.escape(attribute)
    return re.search(rf"{escaped}\s*\[[^\]\n]*\]\s*=(?!=)|{escaped}\.(?:update|setdefault)\(", text) is not None


def _arguments(text: str, start: int) -> str:
    """The text of a call's arguments, from just after its `(` to the matching `)` (at most 4,000 characters)."""
    depth = 1
    for index in range(start, min(len(text), start + 4000)):
        char = text[index]
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
            if depth == 0:
                return text[start:index + 1]
    return text[start:start + 4000]


def _position(ctx: ModuleContext, node: cst.CSTNode, placeholder: str) -> tuple[int, int]:
    """The row and column (1-based, as findings give them) of `placeholder` in the source of a (multi-line) string; a
    copy escaped as `{{query}}` is not it."""
    start = ctx.span(node)
    code = ctx.code(node)
    match = re.search(r"(?<!\{)" + re.escape(placeholder) + r"(?!\})", code)
    if match is None:
        return start.row, start.column
    index = match.start()
    line_start = code.rfind("\n", 0, index)
    if line_start < 0:
        return start.row, start.column + index
    return start.row + code.count("\n", 0, index), index - line_start
