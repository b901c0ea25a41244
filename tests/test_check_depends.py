"""`parameter_sources`: which parameters of a function a value is computed from (one walk for CL202 and CL501)."""

from __future__ import annotations

import libcst as cst

from cachelint.check.depends import parameter_sources, parameters_of
from cachelint.check.module import ModuleContext


def _setup(source: str, function: str, call: str):
    ctx = ModuleContext(source, "app.py")
    fn = next(f for f in ctx.nodes(cst.FunctionDef) if f.name.value == function)
    node = next(c for c in ctx.nodes(cst.Call) if ctx.code(c.func) == call)
    return ctx, fn, node


def test_follows_locals_back_to_the_parameters_in_order():
    ctx, fn, call = _setup('''
def send(client, history, system, model="x"):
    head = [{"role": "system", "content": system}]
    messages = head + history
    return client.create(messages=messages, model=model)
''', "send", "client.create")
    messages = call.args[0].value
    assert parameter_sources(ctx, messages, parameters_of(fn)) == ["system", "history"]
    assert parameter_sources(ctx, call.args[1].value, {"history"}) == []


def test_growth_and_tuple_unpacking_count_only_when_asked():
    ctx, fn, call = _setup('''
def ask(client, prompt):
    system, rest = split(DEFAULT)
    messages = []
    messages.append({"role": "user", "content": prompt})
    return client.create(messages=messages, system=system)
''', "ask", "client.create")
    messages = call.args[0].value
    assert parameter_sources(ctx, messages, parameters_of(fn)) == []
    assert parameter_sources(ctx, messages, parameters_of(fn), within=fn, grown=True) == ["prompt"]


def test_unpacked_value_from_a_parameter():
    ctx, fn, call = _setup('''
def ask(client, messages):
    system, rest = messages[0], messages[1:]
    return client.create(messages=rest, system=system)
''', "ask", "client.create")
    assert parameter_sources(ctx, call.args[0].value, parameters_of(fn), within=fn, unpack=True) == ["messages"]


def test_skipped_names_and_other_functions_do_not_count():
    ctx, fn, call = _setup('''
def pick(request, tools, limit):
    keep = [t for t in tools if t.name in request.allowed]
    return select(keep)
''', "pick", "select")
    comp = next(c for c in ctx.nodes(cst.ListComp))
    condition = comp.for_in.ifs[0].test
    assert parameter_sources(ctx, condition, {"request", "tools"}, within=fn, skip={"t"}) == ["request"]
    # a name assigned in another function is not followed when the walk is kept to this one
    ctx, fn, call = _setup('''
def outer(state):
    def inner():
        value = state
        return value
    return send(inner())
''', "outer", "send")
    assert parameter_sources(ctx, call.args[0].value, {"state"}, within=fn) == []


def test_a_self_reassigned_history_is_walked_once_per_depth():
    body = "\n".join("    messages = messages + [{'role': 'user', 'content': x}]" for _ in range(40))
    ctx, fn, call = _setup(f'''
def loop(client, messages, x):
{body}
    return client.create(messages=messages)
''', "loop", "client.create")
    assert parameter_sources(ctx, call.args[0].value, parameters_of(fn)) == ["messages", "x"]
