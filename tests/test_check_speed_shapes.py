"""The analysis reads libcst's trees its own, faster way (module.py): one walk for the index, offsets for spans,
visits without copies. Each must give exactly what libcst gives, on code in the shapes real apps take; and a
module the gate skips is only syntax-checked, with the same CL999 as before."""

from __future__ import annotations

import sys

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider, ScopeProvider

from cachelint.check.engine import lint_source
from cachelint.check.module import ModuleContext, children_of, descendants, read_only_visits

AGENT = '''"""A support agent: tools, a history that grows, a prompt built per request."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import *  # noqa: F403

import anthropic

client = anthropic.Anthropic()
TOOLS = [{"name": "lookup_order", "description": "Find an order", "input_schema": {"type": "object"}}]


@dataclass
class Session:
    user: str
    history: list[dict] = field(default_factory=list)

    @property
    def last(self) -> dict | None:
        return self.history[-1] if self.history else None

    async def ask(self, text: str, *, model: str = "claude-sonnet-4-5", **extra) -> str:
        self.history.append({"role": "user", "content": text})
        while (reply := await self._send(model, **extra)) is not None:
            match reply.stop_reason:
                case "tool_use":
                    results = [run_tool(b.name, b.input) for b in reply.content if b.type == "tool_use"]
                    self.history += [{"role": "user", "content": results}]
                case "end_turn" | "max_tokens":
                    return "".join(b.text for b in reply.content if hasattr(b, "text"))
                case _:
                    raise RuntimeError(f"stop reason {reply.stop_reason!r:>10} in {len(self.history):05d} turns")
        return ""

    async def _send(self, model, **extra):
        try:
            async with client.messages.stream(model=model, max_tokens=1024, tools=TOOLS,
                                              system=f"You help {self.user}.", messages=self.history, **extra) as s:
                return await s.get_final_message()
        except* (TimeoutError, ConnectionError) as group:
            print(len(group.exceptions), file=sys.stderr)
            return None
        finally:
            pass


def run_tool(name, args, *rest, key=lambda item: item[0], **kw):
    global LAST
    LAST = name
    table = {k: v for k, v in sorted(args.items(), key=key) if v is not None}
    return {"type": "tool_result", "content": json.dumps(table, sort_keys=True), **kw}


x = [1, 2][0]; y = {*range(3)}; z = not x or -y if x else lambda: (yield)
del x
assert y, "y"
for i, (a, *b) in enumerate([(1, 2, 3)]):
    continue
else:
    pass
with open(__file__) as fh, open(__file__) as gh:
    nonlocal_free = fh.read()[1:2:3] @ gh
print(f"{nonlocal_free=}", f"{'nested ' + f'{x!s:{y}}'}", rb"raw", 1_000j, ..., sep="")
'''

SOURCES = {
    "agent": AGENT,
    "crlf": AGENT.replace("\n", "\r\n"),
    "no final newline, tabs, unicode": 'def f():\n\tname = "caf\u00e9 \U0001f600"\n\treturn {"role": "system", "content": name}',
    "comments and blank lines": "# header\n\n\nimport os  # trailing\n\n\n# before\ndef g(a,\n      b):  # c\n    '''doc'''\n\n    return a\n",
    "empty": "",
}


class Order(cst.CSTVisitor):
    def __init__(self) -> None:
        self.nodes: list[cst.CSTNode] = []
        self.attributes: list[tuple[str, str]] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        self.nodes.append(node)
        return True

    def on_visit_attribute(self, node: cst.CSTNode, attribute: str) -> None:
        self.attributes.append((type(node).__name__, attribute))


def libcst_order(node: cst.CSTNode) -> list[cst.CSTNode]:
    visitor = Order()
    node.visit(visitor)
    return visitor.nodes


@pytest.mark.parametrize("name", SOURCES)
def test_the_index_is_libcsts_visiting_order_and_descendants_are_its_subtrees(name):
    module = cst.parse_module(SOURCES[name])
    expected = libcst_order(module)
    ctx = ModuleContext(SOURCES[name], "app.py", module)
    assert [id(n) for n in ctx._order] == [id(n) for n in expected]
    for kind in (cst.Call, cst.Name, cst.FunctionDef, cst.SimpleWhitespace, cst.FormattedStringExpression):
        assert [id(n) for n in ctx.nodes(kind)] == [id(n) for n in expected if type(n) is kind]
    for node in expected:
        assert [id(n) for n in descendants(node)] == [id(n) for n in libcst_order(node)]
        assert [id(n) for n in children_of(node)] == [id(n) for n in node.children]
        for child in node.children:
            assert ctx.parent(child) is node


def test_descendants_of_a_node_no_context_holds_is_walked():
    call = cst.parse_expression("client.messages.create(model=m, messages=[{'role': 'user'}])")
    assert [id(n) for n in descendants(call)] == [id(n) for n in libcst_order(call)]


@pytest.mark.parametrize("name", SOURCES)
def test_spans_are_libcsts_positions(name):
    module = cst.parse_module(SOURCES[name])
    positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    ctx = ModuleContext(SOURCES[name], "app.py", module)
    assert positions
    for node, r in positions.items():
        span = ctx.span(node)
        assert (span.row, span.column, span.end_row, span.end_column) == (r.start.line, r.start.column + 1, r.end.line, r.end.column + 1), type(node).__name__


def test_scopes_and_qualified_names_are_the_same_with_read_only_visits():
    module = cst.parse_module(AGENT)
    plain = MetadataWrapper(module, unsafe_skip_copy=True).resolve(ScopeProvider)
    ctx = ModuleContext(AGENT, "app.py", module)
    fast = ctx._scopes
    names = ctx.nodes(cst.Name) + ctx.nodes(cst.Attribute) + ctx.nodes(cst.Call)
    assert len(names) > 100
    for node in names:
        a, b = plain.get(node), fast.get(node)
        assert type(a) is type(b)
        if a is None:
            continue
        assert {q.name for q in a.get_qualified_names_for(node)} == {q.name for q in b.get_qualified_names_for(node)}
        if isinstance(node, cst.Name):
            assert bindings(a, node.value) == bindings(b, node.value)
    [constructor] = [c for c in ctx.nodes(cst.Call) if ctx.code(c.func) == "anthropic.Anthropic"]
    assert ctx.qualified_names(constructor.func) == {"anthropic.Anthropic"}


def bindings(scope, name: str) -> list[tuple[str, str]]:
    return sorted((type(x).__name__, type(getattr(x, "node", None)).__name__) for x in scope[name])


def test_read_only_visits_make_the_same_calls_in_the_same_order():
    module = cst.parse_module(AGENT)
    before = Order()
    module.visit(before)
    with read_only_visits():
        during = Order()
        module.visit(during)
    assert [id(n) for n in during.nodes] == [id(n) for n in before.nodes]
    assert during.attributes == before.attributes and len(before.attributes) > 1000


def test_a_transformer_inside_read_only_visits_still_transforms_and_libcst_is_restored_after():
    class Rename(cst.CSTTransformer):
        def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.Name:
            return updated.with_changes(value="renamed") if original.value == "client" else updated

    original_visit = cst.CSTNode.visit
    with read_only_visits():
        with read_only_visits():  # nested: the outer one still holds when the inner one ends
            pass
        assert cst.CSTNode.visit is not original_visit
        code = cst.parse_module("client = make()\nclient.send()\n").visit(Rename()).code
    assert code == "renamed = make()\nrenamed.send()\n"
    assert cst.CSTNode.visit is original_visit


# --- a module the gate skips: CPython's parser checks it, libcst's decides where CPython refuses ---------------

UTILS_BROKEN = "import os\n\n\ndef home():\n    return os.environ.get('HOME'\n\n\ndef user():\n    return 1\n"
SENDER_BROKEN = "import anthropic\n" + UTILS_BROKEN


def test_a_skipped_module_with_a_syntax_error_gets_the_same_cl999_as_an_analysed_one():
    [skipped] = lint_source(UTILS_BROKEN, "utils.py")
    [analysed] = lint_source(SENDER_BROKEN, "sender.py")
    assert skipped.code == analysed.code == "CL999"
    assert (skipped.row + 1, skipped.column, skipped.message) == (analysed.row, analysed.column, analysed.message)


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="this Python's own parser knows the newer syntax")
def test_newer_syntax_than_the_running_python_is_no_cl999_in_a_skipped_module():
    source = "type Row = dict[str, int]\n\n\ndef first[T](items: list[T]) -> T:\n    return items[0]\n"
    assert lint_source(source, "typing_helpers.py") == []


def test_top_level_await_and_compile_time_errors_are_no_syntax_errors():
    # a notebook export awaits at the top; `return` outside a function is the compiler's error, not the parser's
    assert lint_source("import asyncio\nresult = await asyncio.sleep(0)\n", "notebook.py") == []
    assert lint_source("def ok():\n    pass\nreturn 1\n", "script.py") == []
