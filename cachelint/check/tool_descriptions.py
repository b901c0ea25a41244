"""A tool's description filled with what the conversation holds now (CL202).

`param_def["description"] = f"{desc} Available: {names}"`, where `names` lists the characters in the scene or the
files open now: the tool's schema is rebuilt with this turn's data, so the tools, which open the prefix, differ from
one request to the next. Recognized in a function named for tools (`generate_context_aware_tools`,
`_build_tool_schema`) that sets a `"description"` key to a formatted text holding a value the function computes
from a call (not a constant, not the old description alone).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from cachelint.check.module import ModuleContext, descendants

# a function that builds tool schemas: generate_context_aware_tools, _build_tool_schema, make_functions
TOOL_BUILDER = re.compile(r"tools?|functions?_?(?:schemas?|defs?|specs?)|actions?_?(?:schemas?|defs?)|schemas?", re.I)


@dataclass(frozen=True, slots=True)
class FilledDescription:
    node: cst.CSTNode  # the assignment
    value: str  # the name of this turn's data: `entity_list`


def descriptions_filled_per_turn(ctx: ModuleContext) -> Iterator[FilledDescription]:
    for assign in ctx.nodes(cst.Assign):
        if len(assign.targets) != 1 or not _description_key(assign.targets[0].target):
            continue
        function = ctx.enclosing_function(assign)
        if function is None or not _named_for_tools(ctx, function):
            continue
        computed = _computed_names(ctx, function)
        fields = [n.value for part in _formatted_parts(assign.value) for n in (part, *descendants(part))
                  if isinstance(n, cst.Name) and n.value in computed]
        if fields:
            yield FilledDescription(assign, fields[0])


def _named_for_tools(ctx: ModuleContext, function: cst.FunctionDef) -> bool:
    """The function, or a function of this module that calls it, is named for building tools."""
    if TOOL_BUILDER.search(function.name.value):
        return True
    name = function.name.value
    callers = [ctx.enclosing_function(c) for c in ctx.calls_by_name.get(name, [])]
    return any(c is not None and TOOL_BUILDER.search(c.name.value) for c in callers)


def _description_key(target: cst.BaseExpression) -> bool:
    if not (isinstance(target, cst.Subscript) and len(target.slice) == 1 and isinstance(target.slice[0].slice, cst.Index)):
        return False
    key = target.slice[0].slice.value
    return isinstance(key, cst.SimpleString) and key.value.strip("'\"") == "description"


def _formatted_parts(value: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The expressions a formatted text puts in: an f-string's fields, `.format(...)`'s arguments, `+`'s operands."""
    if isinstance(value, cst.FormattedString):
        return [p.expression for p in value.parts if isinstance(p, cst.FormattedStringExpression)]
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value == "format":
        return [a.value for a in value.args]
    if isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Add):
        return [*_formatted_parts(value.left), *_formatted_parts(value.right)] or [value.left, value.right]
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value == "strip":
        return _formatted_parts(value.func.value)
    return []


# a parameter that holds the conversation's state now: context, scene, session, state, messages, history
STATE_PARAM = re.compile(r"^(?:context|ctx|conversation|convo|scene|session|state|game_state|world|messages|history|turn|chat)$", re.I)


def _computed_names(ctx: ModuleContext, function: cst.FunctionDef) -> set[str]:
    """Names the function binds to the result of a call handed the conversation's state (a parameter named for it):
    `entity_list = FunctionManager._get_entities_for_scope(scope, context)`. A value read from the settings, a
    translation or the database's tables is the same on every turn."""
    state = {p.name.value for p in (*function.params.params, *function.params.kwonly_params) if STATE_PARAM.match(p.name.value)}
    found = set()
    if not state:
        return found
    for node in descendants(function.body):
        if isinstance(node, cst.Assign) and len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name) \
                and isinstance(node.value, cst.Call):
            read = {n.value for n in descendants(node.value) if isinstance(n, cst.Name)}
            if read & state:
                found.add(node.targets[0].target.value)
    return found
