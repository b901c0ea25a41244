"""The user's question put ahead of the database's description in a prompt template (CL104).

Text-to-SQL and data agents ask many questions of one database. Its description (the schema, the tables and
their columns, sample rows) is the same for every question and is usually the largest part of the prompt, so it
belongs in the shared prefix: instructions, then the schema, then the question. Written the other way round,
every request differs from the previous one at the question, and the whole description behind it is prefilled
again for every question.

Recognized in a template written in the code (a string with `{placeholders}`, or an f-string) with at least
`MIN_STATIC_CHARS` characters of its own text: a slot named for the user's question (`{question}`,
`{user_query}`, `{user_instructions}`) before a slot named for the database's description (`{schema}`,
`{table_info}`, `{all_sql_database_summary}`, `{chr(10).join(table_summaries)}`). Quiet where the description
is made for the question (retrieved, filtered or ranked for it: `relevant_tables`, or a value computed from the
question in the function or where the template is filled): then both vary and no order shares more.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from cachelint.check.module import ModuleContext, descendants
from cachelint.check.template_clocks import position_in_string

QUESTION = re.compile(r"^(?:user_|nl_|natural_language_|human_|input_|original_)?(?:question|query|request)s?$"
                      r"|^user_(?:instructions?|input|message|prompt|text|ask)$|^(?:question|query)_(?:text|str)$", re.I)
SCHEMA = re.compile(r"schema|database|(?:^|_)db(?:$|_)|tables?_(?:info|summar|descr|list|definition|metadata)|table_summar|metadata"
                    r"|catalog|(?:^|_)ddl(?:$|_)|data_dictionary|columns?_(?:info|descr)", re.I)
OUTPUT_SCHEMA = re.compile(r"json_schema|schema_json|\.schema\(\)|(?:output|response|result|answer|reply|tool|function)_?schema|response_format", re.I)
PER_QUESTION = re.compile(r"relevant|filter|retriev|selected|pruned|matched|similar|top_?k|search|rank", re.I)
MIN_STATIC_CHARS = 300  # a prompt, not a log line or a short label
SLOT = re.compile(r"(?<!\{)\{\s*([A-Za-z_]\w*)\s*\}(?!\})|\{\{\s*([A-Za-z_]\w*)\s*\}\}")  # `{question}`, Jinja's `{{ question }}`
QUICK = re.compile(r"\{\s*(?:user_|nl_)?(?:question|query|instructions?|input)s?\b")


@dataclass(frozen=True, slots=True)
class SchemaAfterQuestion:
    node: cst.CSTNode  # the template's string
    question: str
    schema: str
    position: tuple[int, int]  # the question's slot


def schemas_after_questions(ctx: ModuleContext) -> Iterator[SchemaAfterQuestion]:
    if ctx.is_test or not QUICK.search(ctx.source) or not SCHEMA.search(ctx.source):
        return
    for node in ctx.nodes(cst.SimpleString):
        found = _in_template(ctx, node)
        if found is not None:
            yield found
    for node in ctx.nodes(cst.FormattedString):
        found = _in_fstring(ctx, node)
        if found is not None:
            yield found


def _in_template(ctx: ModuleContext, node: cst.SimpleString) -> SchemaAfterQuestion | None:
    code = ctx.code(node)
    slots = [(m.start(), m.group(1) or m.group(2)) for m in SLOT.finditer(code)]
    if len(code) - sum(len(name) + 2 for _, name in slots) < MIN_STATIC_CHARS:
        return None
    first = next(((at, name) for at, name in slots if not _describes_a_database(name, code) and not SETTING.search(name)), None)
    if first is None or not QUESTION.match(first[1]):
        return None  # the question is not the first value that varies: the description is behind other per-call data too
    question = first
    for at, name in slots:
        if at > question[0] and _describes_a_database(name, code) and not _filled_from(ctx, node, name, question[1]):
            return SchemaAfterQuestion(node, question[1], name, position_in_string(ctx, node, code, question[0]))
    return None


SETTING = re.compile(r"^(?:max|min|num|top|limit|n)_|_(?:limit|count|k)$|^(?:dialect|db_type|language|lang)$", re.I)


def _setting(expr: cst.BaseExpression) -> bool:
    """A value that is the same for every question of an app: a count or a limit (`{max_tables}`), a module constant,
    the object's own setting (`self.dialect`)."""
    if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self":
        return True
    return isinstance(expr, cst.Name) and (SETTING.search(expr.value) is not None or re.fullmatch(r"[A-Z][A-Z0-9_]*", expr.value) is not None)


def _describes_a_database(name: str, text: str) -> bool:
    """A slot named for the database's description: `table_info`, `db_schema`, `all_sql_database_summary`; a bare
    `schema` only in a template that speaks of SQL or tables (else it is as likely an output's JSON schema)."""
    if not SCHEMA.search(name) or PER_QUESTION.search(name) or OUTPUT_SCHEMA.search(name):
        return False
    return not re.fullmatch(r"_?schema", name, re.I) or re.search(r"\bSQL\b|\btables?\b|\bdatabase\b", text, re.I) is not None


def _in_fstring(ctx: ModuleContext, node: cst.FormattedString) -> SchemaAfterQuestion | None:
    static = sum(len(p.value) for p in node.parts if isinstance(p, cst.FormattedStringText))
    if static < MIN_STATIC_CHARS:
        return None
    function = ctx.enclosing_function(node)
    text = "".join(p.value for p in node.parts if isinstance(p, cst.FormattedStringText))
    question: tuple[cst.FormattedStringExpression, str] | None = None
    for part in node.parts:
        if not isinstance(part, cst.FormattedStringExpression):
            continue
        leaf = _leaf(part.expression)
        code = ctx.code(part.expression)
        if question is None:
            if leaf is not None and QUESTION.match(leaf):
                question = (part, leaf)
            elif not _describes_a_database(code, text) and not _setting(part.expression):
                return None  # another value varies first: the description is behind it too
            continue
        if isinstance(part.expression, cst.Name) and re.fullmatch(r"[A-Z][A-Z0-9_]*", part.expression.value):
            continue  # a module constant: static text after the question, the static tail's to judge by its length
        if _describes_a_database(code, text) and not _made_from(ctx, function, part.expression, question[1]):
            code_of_string = ctx.code(node)
            return SchemaAfterQuestion(node, question[1], code, position_in_string(ctx, node, code_of_string,
                                                                                   code_of_string.find("{" + ctx.code(question[0].expression))))
    return None


def _leaf(expr: cst.BaseExpression) -> str | None:
    """The name a slot's value goes by: `question`, `self.question`, `state["question"]`, `state.get("question")`."""
    if isinstance(expr, cst.Name):
        return expr.value
    if isinstance(expr, cst.Attribute):
        return expr.attr.value
    if isinstance(expr, cst.Subscript) and len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Index):
        key = expr.slice[0].slice.value
        return key.evaluated_value if isinstance(key, cst.SimpleString) else None
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "get" and expr.args \
            and isinstance(expr.args[0].value, cst.SimpleString):
        return expr.args[0].value.evaluated_value
    return None


def _made_from(ctx: ModuleContext, function: cst.FunctionDef | None, expr: cst.BaseExpression, question: str, depth: int = 0) -> bool:
    """The value is computed from the question: it names it, or a name in it is bound (on some path, through up to
    three names: `docs = store.similarity_search(question)`, `names = [d.name for d in docs]`, `info =
    db.get_table_info(names)`) to something that does, or that is named for picking what the question needs."""
    code = ctx.code(expr)
    if re.search(rf"\b{re.escape(question)}\b", code) or (depth and PER_QUESTION.search(code)):
        return True
    if depth >= 3:
        return False
    for name in [n for n in descendants(expr) if isinstance(n, cst.Name)] + ([expr] if isinstance(expr, cst.Name) else []):
        for _, value in ctx.assigned_values(name):
            if value is not None and value is not expr and _made_from(ctx, function, value, question, depth + 1):
                return True  # made for the question on one path at least
    return False


def _filled_from(ctx: ModuleContext, template: cst.SimpleString, slot: str, question: str) -> bool:
    """Where the slot is filled (`.format(schema=...)`, `{"schema": ...}`: in the template's function, or anywhere
    in the module for a template written at its top level), the value is made from the question."""
    function = ctx.enclosing_function(template)
    root = function if function is not None else ctx.module
    for arg in ctx.nodes_in(cst.Arg, root):
        if arg.keyword is not None and arg.keyword.value == slot and _made_from(ctx, ctx.enclosing_function(arg), arg.value, question):
            return True
    for element in ctx.nodes_in(cst.DictElement, root):
        key = element.key
        if isinstance(key, cst.SimpleString) and key.evaluated_value == slot \
                and _made_from(ctx, ctx.enclosing_function(element), element.value, question):
            return True
    return False
