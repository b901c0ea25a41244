"""Which parameters of a function an expression is computed from.

One bounded walk, shared by the rules that ask "does this value come from the function's callers?": a request
sent with what a wrapper's callers pass (CL501), a tool filter that reads the request (CL202's middleware), a
history and the tools handed to the function that sends them (CL202's hand-offs). The walk follows the names an
expression reads to their assignments, a few deep, and stops at the parameters.
"""

from __future__ import annotations

import libcst as cst

from cachelint.check.callsites import unpacked_values
from cachelint.check.module import LIST_GROWERS, ModuleContext, read_names

MAX_DEPTH = 4  # assignments followed from the expression (a value built from a value built from a parameter ...)


def parameters_of(function: cst.FunctionDef) -> set[str]:
    """The names of a function's parameters (`*args` and `**kwargs` included), less `self` and `cls`."""
    params = {p.name.value for p in (*function.params.posonly_params, *function.params.params, *function.params.kwonly_params)}
    for star in (function.params.star_arg, function.params.star_kwarg):
        if isinstance(star, cst.Param):
            params.add(star.name.value)
    return params - {"self", "cls"}


def positional_index(function: cst.FunctionDef, name: str) -> int:
    """Where a caller passes parameter `name` by position (`self` / `cls` not counted), or -1 (keyword-only)."""
    positional = [p.name.value for p in (*function.params.posonly_params, *function.params.params) if p.name.value not in ("self", "cls")]
    return positional.index(name) if name in positional else -1


def parameter_sources(ctx: ModuleContext, expr: cst.BaseExpression | None, params: set[str], *,
                      within: cst.FunctionDef | None = None, grown: bool = False, unpack: bool = False,
                      skip: frozenset[str] | set[str] = frozenset()) -> list[str]:
    """The parameters among `params` that `expr` is computed from, in the order the walk meets them.

    - `within`: only names read, and assignments made, inside this function count (a closure's or a nested
      function's names do not); without it, names read in any function (never module-level names that are not
      parameters).
    - `grown`: a local also depends on what is appended to it in `within` (`messages.append({"content": prompt})`).
    - `unpack`: a name bound by a tuple target (`system, rest = split(messages)`) depends on its element, or on
      the whole value where the element cannot be told.
    - `skip`: names read at the top of `expr` that are not followed (a comprehension's own variables).
    Each (value, depth) is walked once: a name reassigned from itself (`messages = messages + [...]`) would
    otherwise branch at every binding."""
    found: dict[str, None] = {}
    seen: set[tuple[int, int]] = set()

    def walk(value: cst.CSTNode | None, depth: int) -> None:
        if value is None or depth > MAX_DEPTH or (id(value), depth) in seen:
            return
        seen.add((id(value), depth))
        for node in read_names(ctx, value):
            if depth == 0 and node.value in skip:
                continue
            home = ctx.enclosing_function(node)
            if (home is not within) if within is not None else (home is None and node.value not in params):
                continue
            for binding, assigned in ctx.assigned_values(node):
                if isinstance(binding, cst.Param):
                    if binding.name.value in params:
                        found.setdefault(binding.name.value)
                    continue
                if within is not None and ctx.enclosing_function(binding) is not within:
                    continue
                loop = ctx.parent(binding)
                if isinstance(loop, (cst.For, cst.CompFor)) and loop.target is binding:
                    sources = [loop.iter]  # `for msg in messages:`: each item is the parameter's
                else:
                    sources = [assigned] if assigned is not None else unpacked_values(ctx, binding, into_functions=False) if unpack else []
                for source in sources:
                    if source is not value:
                        walk(source, depth + 1)
            if grown:
                for call in ctx.calls_on.get(node.value, []):
                    if call.func.attr.value in LIST_GROWERS and ctx.enclosing_function(call) is within:  # type: ignore[attr-defined]
                        for arg in call.args:
                            walk(arg.value, depth + 1)

    walk(expr, 0)
    return list(found)
