"""A request's settings dict written between two requests of one conversation (CL401, CL203).

Agents keep the keyword arguments of their requests in a dict (`params`, `kwargs`) and send it with `**params`. When
the code writes a cache-key setting into that dict after one request and before the next one of the same run, the
two requests differ:

- `parameters["function_call"] = "none"` once a tool was called too often, then `return self.query(history,
  **parameters)`: the recursive call is the next turn of the same tool loop;
- `params["tool_choice"] = "none"`, a request, `del params["tool_choice"]`, a second request with the history grown by
  the first reply;
- `kwargs["functions"] = []` before the recursive call: the tools, which open the prefix, are gone.

A sender is a request in sight, or a call of a function of the module that makes one (`self._create(params)`). Keys
set while the dict is first built (before any request) are one request's settings, not a switch; so is a key set in
an `except` handler (a recovery after the provider refused the request).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from cachelint.check.callsites import CallSite
from cachelint.check.module import ModuleContext, descendants
from cachelint.check.values import string_value

TOOL_CHOICE_KEYS = frozenset({"tool_choice", "function_call"})
TOOL_KEYS = frozenset({"tools", "functions"})
MODEL_KEYS = frozenset({"model"})


@dataclass(frozen=True, slots=True)
class SettingsWrite:
    node: cst.CSTNode  # the first write of the key in the function
    holder: str  # `parameters`
    key: str  # `function_call`
    how: str  # "between two requests" / "before the recursive call that continues the tool loop"
    site: CallSite | None  # a request the dict is sent with, when one is in sight


# a written key of the settings, by text: the cheap test before the syntax tree is walked
KEY_TEXT = re.compile(r"""(?:\[|pop\()\s*["'](?:tool_choice|function_call|tools|functions|model)["']""")


def settings_written_between_requests(ctx: ModuleContext, sites: list[CallSite]) -> Iterator[SettingsWrite]:
    senders = _sending_functions(ctx, sites)
    if not senders or not KEY_TEXT.search(ctx.source):
        return
    by_function: dict[int, list[tuple[cst.CSTNode, str, str]]] = {}
    functions: dict[int, cst.FunctionDef] = {}
    for write in _writes(ctx):
        function = ctx.enclosing_function(write[0])
        if function is not None and ctx.enclosing(write[0], (cst.ExceptHandler,)) is None:
            by_function.setdefault(id(function), []).append(write)
            functions[id(function)] = function
    for key, writes in by_function.items():
        function = functions[key]
        sends = _sends(ctx, function, senders, sites)
        if not sends:
            continue
        reported: set[tuple[str, str]] = set()
        for node, holder, key in writes:
            if (holder, key) in reported:
                continue
            passed = [(call, recursive) for call, recursive in sends if _passes(ctx, call, holder)]
            row = ctx.span(node).row
            made = _made_at(ctx, function, holder)
            after = [(call, recursive) for call, recursive in passed if ctx.span(call).row > row]
            recursion = [call for call, recursive in after if recursive]
            before = [call for call, _ in sends if made < ctx.span(call).row < row and not _ends_the_run(ctx, call, function, node)
                      and not _exclusive(ctx, call, node)
                      and (_passes(ctx, call, holder) or any(_shares_a_name(ctx, call, later, holder) for later in recursion))]
            if not before or not after:
                continue  # (a side request made apart from the dict, a classifier say, is not one of the run's turns)
            first = next(n for n, h, k in writes if (h, k) == (holder, key))
            how = ("before the recursive call that continues the same conversation" if any(r for _, r in after)
                   else "between two requests of the same run")
            site = next((s for s in sites if any(s.node is call for call, _ in passed)), None)
            reported.add((holder, key))
            yield SettingsWrite(first, holder, key, how, site)


def _sending_functions(ctx: ModuleContext, sites: list[CallSite]) -> set[int]:
    """ids of the module's functions that make a request."""
    found = set()
    for site in sites:
        function = ctx.enclosing_function(site.node)
        if function is not None:
            found.add(id(function))
    return found


def _sends(ctx: ModuleContext, function: cst.FunctionDef, senders: set[int], sites: list[CallSite]) -> list[tuple[cst.Call, bool]]:
    """(call, recursive) for each call in `function` that sends a request: a site, a call of a sending function of the
    module, or a call of `function` itself (the next turn of a recursive tool loop)."""
    site_nodes = {id(s.node) for s in sites}
    found = []
    for call in descendants(function.body):
        if not isinstance(call, cst.Call) or ctx.enclosing_function(call) is not function:
            continue
        if id(call) in site_nodes:
            found.append((call, False))
            continue
        called = ctx.called_functions(call)
        if any(f is function for f in called):
            found.append((call, True))
        elif any(id(f) in senders for f in called):
            found.append((call, False))
    return found


def _exclusive(ctx: ModuleContext, call: cst.CSTNode, write: cst.CSTNode) -> bool:
    """The request and the write sit in two branches of one `if` (`if fast: create(**p)` / `else: p["tool_choice"] =
    ...; create(**p)`): one run takes one of them, so the request is not before the write."""
    for ancestor in ctx.ancestors(call):
        if isinstance(ancestor, cst.If) and ancestor.orelse is not None and ctx.contains(ancestor, write):
            return ctx.contains(ancestor.body, call) != ctx.contains(ancestor.body, write)
        if isinstance(ancestor, cst.FunctionDef):
            return False
    return False


def _shares_a_name(ctx: ModuleContext, call: cst.Call, later: cst.Call, holder: str) -> bool:
    """The request and the recursive call hand on the same history (`messages=[m for m in chat_history ...]`, then
    `self.query(chat_history, **kwargs)`)."""
    def names(c: cst.Call) -> set[str]:
        return {n.value for a in c.args for n in (a.value, *descendants(a.value)) if isinstance(n, cst.Name)} - {"self", "cls", holder}
    return bool(names(call) & names(later))


def _made_at(ctx: ModuleContext, function: cst.FunctionDef, holder: str) -> int:
    """The line where the function first binds the settings dict (its own line for a parameter): a request made before
    it (a summary of the history, then `common_args = {...}`) is not sent with the dict, so the keys written after it
    build the dict's first request rather than change a second one."""
    if holder in {p.name.value for p in (*function.params.params, *function.params.kwonly_params)} or \
            (function.params.star_kwarg is not None and isinstance(function.params.star_kwarg, cst.Param)
             and function.params.star_kwarg.name.value == holder):
        return ctx.span(function).row
    rows = [ctx.span(n).row for n in descendants(function.body) if ctx.enclosing_function(n) is function and (
        (isinstance(n, cst.Assign) and any(isinstance(t.target, cst.Name) and t.target.value == holder for t in n.targets))
        or (isinstance(n, cst.AnnAssign) and isinstance(n.target, cst.Name) and n.target.value == holder))]
    return min(rows) if rows else ctx.span(function).row


def _ends_the_run(ctx: ModuleContext, call: cst.Call, function: cst.FunctionDef, write: cst.CSTNode) -> bool:
    """`return await self._responses(...)` (or a branch that returns after it): the run takes this request instead of
    the later ones, so nothing written after it changes a request that follows it."""
    for ancestor in ctx.ancestors(call):
        if ancestor is function:
            return False
        if isinstance(ancestor, cst.Return):
            return True
        if isinstance(ancestor, cst.IndentedBlock) and ancestor.body and not ctx.contains(ancestor, write):
            last = ancestor.body[-1]
            if isinstance(last, cst.SimpleStatementLine) and any(isinstance(s, (cst.Return, cst.Raise)) for s in last.body):
                return True
    return False


def _passes(ctx: ModuleContext, call: cst.Call, holder: str) -> bool:
    """The call is given the settings dict: `**params`, or `params` itself."""
    return any(ctx.code(a.value) == holder for a in call.args)


def _writes(ctx: ModuleContext) -> list[tuple[cst.CSTNode, str, str]]:
    """(statement, holder, key) for each cache-key setting written into a dict of the module: `p["tool_choice"] =
    ...`, `del p["tool_choice"]`, `p.pop("tool_choice")`, in source order."""
    keys = TOOL_CHOICE_KEYS | TOOL_KEYS | MODEL_KEYS
    found = []
    for node in ctx.nodes(cst.Call):
        if isinstance(node.func, cst.Attribute) and node.func.attr.value == "pop" and node.args:
            key = string_value(node.args[0].value)
            if key in keys:
                found.append((node, ctx.code(node.func.value), key))
    for node in (*ctx.nodes(cst.Assign), *ctx.nodes(cst.Del)):
        targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
        for target in targets:
            if isinstance(target, cst.Subscript) and isinstance(target.value, cst.Name) and len(target.slice) == 1 \
                    and isinstance(target.slice[0].slice, cst.Index):
                key = string_value(target.slice[0].slice.value)
                if key in keys:
                    found.append((node, target.value.value, key))
    return sorted(found, key=lambda w: (ctx.span(w[0]).row, ctx.span(w[0]).column))
