"""Tools registered by coroutines that connect several servers at once (CL201).

`tasks = [asyncio.create_task(connect(name, server)) for name, server in servers.items()]`, `await
asyncio.gather(*tasks)`, where `connect` lists the server's tools and adds each to the agent's toolset
(`self.add(tool)`, `self.tools.append(...)`): every server adds its tools when its own listing returns, so the
order of the merged tools is the order in which the servers happened to answer, which changes from run to run.
The tools open the cached prefix; sorting them once every server has answered keeps it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from cachelint.check.module import TOOL_WORD, ModuleContext, called_name, descendants, sorted_in

CONCURRENT = frozenset({"asyncio.gather", "asyncio.create_task", "asyncio.ensure_future", "asyncio.as_completed"})
SCHEDULERS = frozenset(name.rsplit(".", 1)[-1] for name in CONCURRENT)
ADDERS = frozenset({"add", "append", "extend", "add_tool", "add_tools", "register", "register_tool"})


@dataclass(frozen=True, slots=True)
class ConcurrentTools:
    node: cst.CSTNode  # where a tool is added
    function: str  # the coroutine that adds them
    holder: str  # what they are added to


def tools_added_concurrently(ctx: ModuleContext) -> Iterator[ConcurrentTools]:
    if "gather" not in ctx.source and "create_task" not in ctx.source and "as_completed" not in ctx.source:
        return
    seen: set[int] = set()
    for call in ctx.nodes(cst.Call):
        if called_name(call) not in SCHEDULERS:
            continue  # a syntactic test first: qualified names cost the module's scope metadata
        if ctx.qualified_name_in(call.func, set(CONCURRENT)) is None and ctx.code(call.func) not in ("tg.create_task", "group.create_task"):
            continue
        for coroutine in _coroutines(ctx, call):
            if id(coroutine) in seen or not isinstance(coroutine.asynchronous, cst.Asynchronous):
                continue
            seen.add(id(coroutine))
            found = _adds_listed_tools(ctx, coroutine)
            scheduler = ctx.enclosing_function(call)
            if found is not None and not sorted_in(ctx, scheduler, found[2]) and not sorted_in(ctx, coroutine, found[2]):
                yield ConcurrentTools(found[0], coroutine.name.value, found[1])  # (sorted once all have answered: fine)


def _coroutines(ctx: ModuleContext, call: cst.Call) -> list[cst.FunctionDef]:
    """The functions of the module whose calls the scheduling call runs: `gather(*[f(x) for x in xs])`,
    `create_task(f(x))` (in a comprehension or a loop), `gather(*tasks)` with `tasks` made of such calls, run once per
    element of what the comprehension or loop walks."""
    exprs: list[cst.BaseExpression] = []
    for arg in call.args:
        value = arg.value
        if isinstance(value, cst.Name):
            exprs += [v for _, v in ctx.assigned_values(value) if v is not None]
        exprs.append(value)
    found = []
    for expr in exprs:
        for inner in (expr, *descendants(expr)):
            if isinstance(inner, cst.Call) and _repeated(ctx, inner, call):
                found += ctx.called_functions(inner)
    return found


def _repeated(ctx: ModuleContext, inner: cst.Call, scheduling: cst.Call) -> bool:
    """The call is made once per element: inside a comprehension, or the scheduling call sits in a loop."""
    holder = ctx.parent(inner)
    for _ in range(4):
        if holder is None:
            break
        if isinstance(holder, (cst.ListComp, cst.GeneratorExp, cst.SetComp)):
            return True
        holder = ctx.parent(holder)
    return bool(ctx.loops_around(scheduling))


def _adds_listed_tools(ctx: ModuleContext, coroutine: cst.FunctionDef) -> tuple[cst.CSTNode, str, str] | None:
    """`for tool in await client.list_tools(): self.add(tool)` (or the tools wrapped first): each listed tool added
    to a holder the coroutine does not make itself."""
    local = {t.value for n in descendants(coroutine.body) if isinstance(n, cst.Assign)
             for target in n.targets for t in (target.target,) if isinstance(t, cst.Name)}
    params = {p.name.value for p in (*coroutine.params.params, *coroutine.params.kwonly_params)} - {"self", "cls"}
    for loop in (n for n in descendants(coroutine.body) if isinstance(n, cst.For)):
        if not TOOL_WORD.search(ctx.code(loop.iter)) or not isinstance(loop.target, cst.Name):
            continue
        element = loop.target.value
        for node in descendants(loop.body):
            if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in ADDERS and node.args):
                continue
            added = node.args[0].value
            if not any(isinstance(n, cst.Name) and n.value == element for n in (added, *descendants(added))):
                continue
            receiver = node.func.value
            root = receiver
            while isinstance(root, cst.Attribute):
                root = root.value
            if isinstance(root, cst.Name) and root.value in local:
                continue  # a list of its own, returned to the caller (which decides the order)
            if isinstance(root, cst.Name) and root.value in params:
                continue  # server_info.tools.append(...): kept on the object of this one server; the merge is elsewhere
            if any(isinstance(n, cst.Subscript) for n in (receiver, *descendants(receiver))):
                continue  # self.server_tools[name].append(tool): one list per server, merged elsewhere
            return node, ctx.code(node.func), ctx.code(receiver)
    return None
