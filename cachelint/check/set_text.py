"""Prompt text made from a set, in string-hash order (CL103).

A prompt builder often gathers its parts in a set (to drop duplicates, or because the caller hands it one:
`input_modalities: set[Modality]`) and then writes them out: `"\\n\\n".join(set(tool_docs))`, a loop that adds one
example per member, `list(samples)` kept as a field's examples. A set of strings (or of `Enum` members, which hash
by name) is iterated in an order that changes with `PYTHONHASHSEED`, so every process writes the same parts in
another order, and the prompt they open shares no cached prefix with any other process's.

The prompt is usually assembled out of sight (a template filled from a dict of parts, a framework), so this is
recognized by shape in one function (confidence `likely`): a set iterated into text or a list, and that text going
where prompt material goes: returned by a function named for it (`_get_example_input_fields`), bound to a name
named for it (`tool_docs_str`), or kept under a key named for it (`{"examples": sample_list}`). A set that is only
tested for membership, or sorted first, is not reported.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from cachelint.check.module import ModuleContext, called_name, descendants, makes_a_set, sorted_in
from cachelint.check.values import SET_ANNOTATION

# the module's text may turn a set into prompt text (gate.py asks before parsing): a set built, annotated, or written
# as a comprehension (`", ".join({t.lower() for t in tags})`)
QUICK = re.compile(r"\bset\(|\bfrozenset\(|:\s*(?:set|Set|frozenset|FrozenSet|AbstractSet)\[|\{[^{}:\n]+\bfor\b[^{}:\n]+\}")
# what the text is for: the parts a prompt is made of, by the words that name text (a function's name may also say
# what the text is for: `_get_example_context`, `system_prompt_for`)
MATERIAL = re.compile(r"prompt|examples?\b|examples?_|_examples?|instructions?|docs?\b|docs_|_docs|template|few_?shot|knowledge"
                      r"|persona|guidelines?|\brules?\b|_rules?\b|rules?_|demonstrations?", re.I)
# ... and a name that holds something else: ids, a count, statistics, a lookup
NOT_TEXT = re.compile(r"(?:_|\b)(?:ids?|count|counts|num|stats|map|lookup|index|keys|set)$", re.I)
NUMBERS = re.compile(r"\[\s*(?:int|float|bool|bytes)\s*\]")  # set[int]: small ints iterate in their own order
# what a returned text may pass through and still be that text: a join, a format, a strip
TEXT_CALLS = frozenset({"join", "format", "strip", "rstrip", "lstrip", "dedent", "indent", "str"})


@dataclass(frozen=True, slots=True)
class SetText:
    node: cst.BaseExpression  # the set where it is iterated
    into: str  # where its members go: "the text `_get_example_input_fields()` returns"
    joined: bool  # `sep.join(the set)`: strings, which `sorted()` orders safely


def text_from_sets(ctx: ModuleContext) -> Iterator[SetText]:
    if QUICK.search(ctx.source) is None:
        return
    seen: set[int] = set()
    for function in ctx.nodes(cst.FunctionDef):
        sets = _set_names(ctx, function)
        for node, result, joined in _iterations(ctx, function, sets):
            if id(node) in seen or (isinstance(node, cst.Name) and sorted_in(ctx, function, node.value)) or _numbers(node):
                continue
            into = _material(ctx, function, result)
            if into is not None:
                seen.add(id(node))
                yield SetText(node, into, joined)


def _inline(ctx: ModuleContext, join: cst.Call) -> bool:
    """`f"Change types: {', '.join(kinds)}"`: a listing written inline into one prompt's own text, a fragment of that
    prompt; whether its order matters is the request's to say (a short one-shot prompt caches nothing)."""
    parent = ctx.parent(join)
    while isinstance(parent, (cst.IfExp, cst.BooleanOperation)):  # `{", ".join(kinds) if kinds else "general"}`
        parent = ctx.parent(parent)
    return isinstance(parent, cst.FormattedStringExpression)


def _set_names(ctx: ModuleContext, function: cst.FunctionDef) -> set[str]:
    """The names of `function` that hold a set: a parameter annotated as one (not of numbers), or a local bound to
    `set(...)`, a set literal or a set comprehension."""
    names = {p.name.value for p in (*function.params.params, *function.params.kwonly_params)
             if p.annotation is not None and SET_ANNOTATION.match(ctx.code(p.annotation.annotation))
             and not NUMBERS.search(ctx.code(p.annotation.annotation))}
    for node in descendants(function.body):
        if isinstance(node, cst.Assign) and len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name) and makes_a_set(node.value) \
                and not _numbers(node.value):
            names.add(node.targets[0].target.value)
        elif isinstance(node, cst.AnnAssign) and isinstance(node.target, cst.Name) and node.value is not None and makes_a_set(node.value) \
                and not NUMBERS.search(ctx.code(node.annotation.annotation)):
            names.add(node.target.value)
    return names


def _numbers(expr: cst.BaseExpression) -> bool:
    """A set of small numbers, which iterate in their own order: the indexes of `enumerate`, a sample of `range`."""
    if isinstance(expr, cst.SetComp) and isinstance(expr.for_in.iter, cst.Call) and called_name(expr.for_in.iter) == "enumerate" \
            and isinstance(expr.for_in.target, cst.Tuple) and expr.for_in.target.elements \
            and isinstance(expr.elt, cst.Name) and isinstance(expr.for_in.target.elements[0].value, cst.Name) \
            and expr.elt.value == expr.for_in.target.elements[0].value.value:
        return True
    return isinstance(expr, cst.Call) and bool(expr.args) and any(
        isinstance(n, cst.Call) and called_name(n) == "range" for n in descendants(expr.args[0].value))


def _is_a_set(expr: cst.BaseExpression, sets: set[str]) -> bool:
    return makes_a_set(expr) or (isinstance(expr, cst.Name) and expr.value in sets)


def _iterations(ctx: ModuleContext, function: cst.FunctionDef, sets: set[str]) -> Iterator[tuple[cst.BaseExpression, cst.CSTNode, bool]]:
    """(the set, what its members are written into, joined) for each place `function` writes a set out in its own
    order: `sep.join(S)` or a join of a comprehension over it, `list(S)`, a comprehension over it, or a loop over it
    that adds to a text or a list."""
    for node in descendants(function.body):
        if isinstance(node, cst.Call) and node.args:
            first = node.args[0].value
            name = called_name(node)
            if name == "join" and isinstance(node.func, cst.Attribute) and not _inline(ctx, node):
                if _is_a_set(first, sets):
                    yield first, node, True
                elif isinstance(first, (cst.GeneratorExp, cst.ListComp)) and _is_a_set(first.for_in.iter, sets):
                    yield first.for_in.iter, node, False
            elif name in ("list", "tuple") and isinstance(node.func, cst.Name) and _is_a_set(first, sets) \
                    and not isinstance(ctx.parent(ctx.parent(node)), cst.Call):
                yield first, node, False
        elif isinstance(node, cst.ListComp) and _is_a_set(node.for_in.iter, sets) and not isinstance(ctx.parent(ctx.parent(node)), cst.Call):
            yield node.for_in.iter, node, False
        elif isinstance(node, cst.For) and _is_a_set(node.iter, sets):
            for inner in descendants(node.body):
                if isinstance(inner, cst.AugAssign) and isinstance(inner.operator, cst.AddAssign) and isinstance(inner.target, cst.Name) \
                        and not isinstance(inner.value, (cst.Integer, cst.Float)):  # `hits += 1` counts: no order in a count
                    yield node.iter, inner.target, False
                    break
                if isinstance(inner, cst.Call) and called_name(inner) in ("append", "extend") and isinstance(inner.func, cst.Attribute) \
                        and isinstance(inner.func.value, cst.Name):
                    yield node.iter, inner.func.value, False
                    break


def _material(ctx: ModuleContext, function: cst.FunctionDef, result: cst.CSTNode) -> str | None:
    """Where the text or list made from the set goes, when that is prompt material: a key or keyword named for it,
    a name named for it, or the return of a function named for it."""
    holder = result
    if not isinstance(result, cst.Name):
        parent = ctx.parent(result)
        if isinstance(parent, cst.DictElement) and MATERIAL.search(ctx.code(parent.key)):
            return f"the entry {ctx.code(parent.key)}"
        if isinstance(parent, cst.Arg) and parent.keyword is not None and MATERIAL.search(parent.keyword.value):
            return f"the argument `{parent.keyword.value}=`"
        statement = ctx.enclosing(result, (cst.Assign, cst.AnnAssign, cst.Return, cst.AugAssign))
        if isinstance(statement, cst.Return):
            return _returned(ctx, function) if statement.value is not None and _result_as_text(ctx, result, statement.value) else None
        target = statement.targets[0].target if isinstance(statement, cst.Assign) and len(statement.targets) == 1 \
            else getattr(statement, "target", None)
        if not isinstance(target, cst.Name):
            return None
        holder = target
    name = holder.value
    if sorted_in(ctx, function, name):
        return None  # `examples = list(set(found))`, then `examples.sort()`: one order everywhere
    if NOT_TEXT.search(name):
        return None  # `system_ids`, `rule_count`: ids or a number, not text
    if MATERIAL.search(name):
        return f"`{name}`"
    for node in descendants(function.body):
        if isinstance(node, cst.DictElement) and isinstance(node.value, cst.Name) and node.value.value == name and MATERIAL.search(ctx.code(node.key)):
            return f"the entry {ctx.code(node.key)}"
        if isinstance(node, cst.Arg) and isinstance(node.value, cst.Name) and node.value.value == name and node.keyword is not None \
                and MATERIAL.search(node.keyword.value):
            return f"the argument `{node.keyword.value}=`"
    if any(_returned_as_text(ctx, r, name) for r in ctx.returns_of(function)):
        return _returned(ctx, function)
    return None


def _returned_as_text(ctx: ModuleContext, returned: cst.BaseExpression, name: str) -> bool:
    """`name` is the returned text itself or a part of it (`return text`, `return BASE + text`, `f"...{text}"`,
    `"\\n".join(parts)`), not only measured or tested in it (`len(allowed)`, `"..." if admin_roles else ""`)."""
    for node in (returned, *descendants(returned)):
        if not (isinstance(node, cst.Name) and node.value == name):
            continue
        child: cst.CSTNode = node
        for ancestor in (*_up_to(ctx, node, returned),):
            if isinstance(ancestor, cst.Call) and called_name(ancestor) not in TEXT_CALLS:
                break
            if isinstance(ancestor, (cst.Comparison, cst.BooleanOperation, cst.UnaryOperation, cst.Subscript)) \
                    or (isinstance(ancestor, cst.IfExp) and child is ancestor.test):
                break
            child = ancestor
        else:
            return True
    return False


def _up_to(ctx: ModuleContext, node: cst.CSTNode, root: cst.CSTNode) -> list[cst.CSTNode]:
    """The ancestors of `node` up to `root` (included), nearest first."""
    found = []
    for ancestor in ctx.ancestors(node):
        found.append(ancestor)
        if ancestor is root:
            break
    return found


def _result_as_text(ctx: ModuleContext, result: cst.CSTNode, returned: cst.BaseExpression) -> bool:
    """The join or list made from the set is part of the returned text, not measured in it."""
    for ancestor in (result, *_up_to(ctx, result, returned)):
        if ancestor is not result and isinstance(ancestor, cst.Call) and called_name(ancestor) not in TEXT_CALLS:
            return False
        if isinstance(ancestor, (cst.Comparison, cst.BooleanOperation, cst.UnaryOperation)):
            return False
    return True


def _returned(ctx: ModuleContext, function: cst.FunctionDef) -> str | None:
    name = function.name.value
    if MATERIAL.search(name):
        return f"the text `{name}()` returns"
    return None

