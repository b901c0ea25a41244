"""The choices of a schema made from a set (CL103): an enum whose order follows string hashing.

A response model or a tool's parameters often limit a field to the values the app knows at run time:
`Literal[tuple(set(t for _, t in sources))]`, `Enum("Table", list(set(names)))`, `{"enum": list(set(kinds))}`. The
schema is sent with the request (as a tool, or the structured output format) and opens the cached prefix; a set's
order changes with `PYTHONHASHSEED`, so each process sends the same choices in another order and shares no cache
with the others. `sorted(set(...))` gives one order everywhere.

Found by the data's shape (confidence `likely`): what the schema is sent with is usually out of sight (a framework
turns the model into a tool).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from cachelint.check.module import ModuleContext, last_name, makes_a_set
from cachelint.check.values import SET_ANNOTATION, string_value

# the module's text may make a schema's choices from a set (gate.py asks before parsing)
SCHEMA_CHOICES = re.compile(r"\bLiteral\[|\bEnum\(\s*[\"']|[\"'](?:enum|required)[\"']\s*(?::|\]\s*=)|\brequired\s*=")
# ... and speaks to a model: an LLM package imported, a tool's or an output format's keys, an `llm` object (not a
# jsonschema that validates a web form)
FOR_A_MODEL = re.compile(r"^\s*(?:from|import)\s+(?:openai|anthropic|litellm|instructor|langchain\w*|llama_index|pydantic_ai|dspy"
                         r"|google\.genai|mistralai|groq|ollama|smolagents|agents|autogen\w*|crewai|azure\.ai\.inference)\b"
                         r"|input_schema|response_model|response_format|tool_choice|function_call|\bllm\w*\b"
                         r"|\b\w*Tool(?:Definition|Param)\b|\bFunctionDefinition\b", re.M)
MAX_HOPS = 2  # local names followed back to the set


@dataclass(frozen=True, slots=True)
class SetChoices:
    node: cst.CSTNode  # the set the choices are made from
    schema: str  # what the choices are: "a `Literal`", "an `Enum`", "a JSON schema's `enum`"

    @property
    def filled(self) -> bool:
        """`set()`, filled later with `.add()`: sorting it where it is made would not sort what is added."""
        return isinstance(self.node, cst.Call) and not self.node.args


def choices_from_sets(ctx: ModuleContext) -> Iterator[SetChoices]:
    """Every schema choice list of the module made from a set, in an order no two processes share."""
    if SCHEMA_CHOICES.search(ctx.source) is None or FOR_A_MODEL.search(ctx.source) is None:
        return
    seen: set[int] = set()
    for found in [*_literals(ctx), *_enums(ctx), *_json_enums(ctx), *_required_lists(ctx)]:
        if id(found.node) not in seen:
            seen.add(id(found.node))
            yield found


def _literals(ctx: ModuleContext) -> Iterator[SetChoices]:
    for sub in ctx.nodes(cst.Subscript):
        if last_name(sub.value) != "Literal" or len(sub.slice) != 1 or not isinstance(sub.slice[0].slice, cst.Index):
            continue
        source = unordered_source(ctx, sub.slice[0].slice.value)
        if source is not None:
            yield SetChoices(source, "a `Literal`")


def _enums(ctx: ModuleContext) -> Iterator[SetChoices]:
    for call in ctx.nodes(cst.Call):
        if last_name(call.func) in ("Enum", "StrEnum") and len(call.args) >= 2 and string_value(call.args[0].value) is not None:
            source = unordered_source(ctx, call.args[1].value)
            if source is not None:
                yield SetChoices(source, "an `Enum`")


def _json_enums(ctx: ModuleContext) -> Iterator[SetChoices]:
    for element in ctx.nodes(cst.DictElement):
        if string_value(element.key) == "enum":
            source = unordered_source(ctx, element.value)
            if source is not None:
                yield SetChoices(source, "a JSON schema's `enum`")


# a module that makes a tool's parameters or an output format for a model (not a schema that validates a reply or a form)
FOR_A_TOOL = re.compile(r"\btools?\b|function_call|FunctionDefinition|ToolDefinition|ToolParam|input_schema|response_format"
                        r"|json_schema|\bparameters\b\s*[=:]|[\"']parameters[\"']")


def _required_lists(ctx: ModuleContext) -> Iterator[SetChoices]:
    """A JSON schema's `required` names made from a set: `{"type": "object", "properties": ..., "required":
    list(required)}`, `schema["required"] = list(required)`, `Parameters(properties=..., required=list(required_params))`
    (a tool's parameters built from a function's signature, the required ones collected in a set), in a module that
    makes tools or an output format."""
    if FOR_A_TOOL.search(ctx.source) is None:
        return
    values = [e.value for e in ctx.nodes(cst.DictElement) if string_value(e.key) == "required"]
    values += [a.value for a in ctx.nodes(cst.Assign) for t in a.targets if isinstance(t.target, cst.Subscript)
               and len(t.target.slice) == 1 and isinstance(t.target.slice[0].slice, cst.Index)
               and string_value(t.target.slice[0].slice.value) == "required"]
    for value in values:
        source = unordered_source(ctx, value)
        if source is not None:
            yield SetChoices(source, "a JSON schema's `required` list")
    for call in ctx.nodes(cst.Call):
        keywords = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
        if "required" in keywords and "properties" in keywords:
            source = unordered_source(ctx, keywords["required"])
            if source is not None:
                yield SetChoices(source, "a JSON schema's `required` list")


def unordered_source(ctx: ModuleContext, expr: cst.BaseExpression, hops: int = 0) -> cst.CSTNode | None:
    """The set that `expr` lists in its own order: `set(...)`, a set literal or comprehension, `tuple(...)` / `list(...)`
    of one, or a local name bound once to one (`available = list(set(...))`); None when a `sorted()` or anything else
    decides the order."""
    if isinstance(expr, (cst.Set, cst.SetComp)):
        return expr
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value in ("set", "frozenset") and not expr.args:
        return expr  # `tags = set()`, filled with `.add()` / `.update()`
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and len(expr.args) == 1 and expr.args[0].keyword is None:
        name = expr.func.value
        if name in ("set", "frozenset"):
            return expr
        if name in ("tuple", "list"):
            return unordered_source(ctx, expr.args[0].value, hops)
        return None
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, (cst.Subtract, cst.BitOr, cst.BitAnd, cst.BitXor)) \
            and any(_set_like(side) for side in (expr.left, expr.right)):
        return expr  # `properties.keys() - optional`, `set(properties) - optional`: a set
    if isinstance(expr, cst.ListComp) and not expr.for_in.inner_for_in:
        return unordered_source(ctx, expr.for_in.iter, hops)  # `[(n, n) for n in set(names)]`
    if isinstance(expr, cst.List) and len(expr.elements) == 1 and isinstance(expr.elements[0], cst.StarredElement):
        return unordered_source(ctx, expr.elements[0].value, hops)  # `[*{item.kind for item in items}]`
    if isinstance(expr, cst.Name) and hops < MAX_HOPS and (function := ctx.enclosing_function(expr)) is not None:
        bindings = list(ctx.assigned_values(expr))
        if len(bindings) == 1 and isinstance(bindings[0][0], cst.Param) and bindings[0][0].annotation is not None \
                and _set_annotation(ctx.code(bindings[0][0].annotation.annotation)):
            return expr  # `def _schema(required_params: set[str]): ... list(required_params)`
        values = [value for _, value in bindings]
        if len(values) == 1 and values[0] is not None and not _sorted_in_place(ctx, function, expr.value):
            return unordered_source(ctx, values[0], hops + 1)
    return None


def _set_annotation(annotation: str) -> bool:
    """A set type, also when optional: `set[str]`, `Optional[set[str]]`, `frozenset[str] | None` (not `dict[str, set[str]]`)."""
    text = annotation.replace(" ", "")
    optional = re.fullmatch(r"(?:typing\.)?Optional\[(.*)\]", text)
    text = optional.group(1) if optional else re.sub(r"\|None$|^None\|", "", text)
    return SET_ANNOTATION.match(text.removeprefix("typing.")) is not None


def _set_like(expr: cst.BaseExpression) -> bool:
    """A set, or a dict's keys view (which `-`, `|`, `&` make a set)."""
    return makes_a_set(expr) or (isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute)
                                 and expr.func.attr.value == "keys" and not expr.args)


def _sorted_in_place(ctx: ModuleContext, function: cst.FunctionDef, name: str) -> bool:
    """`available.sort()` somewhere in the function: the list is put in one order before it is used."""
    return any(isinstance(call.func, cst.Attribute) and call.func.attr.value == "sort" and isinstance(call.func.value, cst.Name)
               and call.func.value.value == name for call in ctx.nodes_in(cst.Call, function))
