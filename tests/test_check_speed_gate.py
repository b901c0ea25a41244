"""The read-only visits (cachelint.check.module.read_only_visits) skip calls that libcst's base visitor would
answer with nothing: the attribute calls of node types a visitor has no hook for, and the batched walk below the
module of the scope providers. What the visitors see must stay the same."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
from libcst import BatchableCSTVisitor
from libcst.metadata import Assignment, MetadataWrapper, ScopeProvider

from cachelint.check import gate, values
from cachelint.check.module import _LAYOUT, ModuleContext, read_only_visits

SOURCE = '''
import anthropic
from openai import OpenAI as Client

class Agent(Base, metaclass=Meta):
    model = "m"

    def run(self, messages):
        client = Client()
        return client.chat.completions.create(model=self.model, messages=messages)

def helper(x=[i for i in range(3)]):
    y = lambda z: z + x[0]
    return anthropic.Anthropic().messages.create(system=f"{y(1)!r:>10}")
'''


class Recorder(cst.CSTVisitor):
    """Hooks on a few attributes and on every node."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        self.seen.append(f"visit {type(node).__name__}")
        return super().on_visit(node)

    def visit_Call_func(self, node: cst.Call) -> None:
        self.seen.append("visit Call.func")

    def leave_ClassDef_bases(self, node: cst.ClassDef) -> None:
        self.seen.append("leave ClassDef.bases")


class Names(BatchableCSTVisitor):
    def __init__(self) -> None:
        super().__init__()
        self.names: list[str] = []

    def visit_Name(self, node: cst.Name) -> None:
        self.names.append(node.value)


def _visit(visitor: cst.CSTVisitor) -> list[str]:
    cst.parse_module(SOURCE).visit(visitor)
    return visitor.seen  # type: ignore[attr-defined]


def test_attribute_hooks_are_still_called() -> None:
    expected = _visit(Recorder())
    with read_only_visits():
        seen = _visit(Recorder())
    assert seen == expected
    assert "visit Call.func" in seen and "leave ClassDef.bases" in seen


def test_batched_visitor_with_node_hooks_walks_the_tree() -> None:
    expected = Names()
    MetadataWrapper(cst.parse_module(SOURCE)).visit_batched([expected])
    names = Names()
    with read_only_visits():
        MetadataWrapper(cst.parse_module(SOURCE)).visit_batched([names])
    assert names.names == expected.names and "messages" in names.names


def _qualified_names(wrapper: MetadataWrapper) -> list[tuple[str, list[str]]]:
    found = []
    for node, scope in wrapper.resolve(ScopeProvider).items():
        if scope is not None and isinstance(node, (cst.Name, cst.Attribute, cst.Call)):
            names = sorted(q.name for q in scope.get_qualified_names_for(node))
            found.append((wrapper.module.code_for_node(node), names))
    return found


def test_scope_metadata_is_the_same() -> None:
    expected_wrapper = MetadataWrapper(cst.parse_module(SOURCE))
    expected = _qualified_names(expected_wrapper)
    wrapper = MetadataWrapper(cst.parse_module(SOURCE))
    with read_only_visits():
        found = _qualified_names(wrapper)
        scopes = wrapper.resolve(ScopeProvider)
    assert sorted(found) == sorted(expected)
    assert ("Client", ["openai.OpenAI"]) in found
    assert len({id(scope) for scope in scopes.values() if scope is not None}) == len(
        {id(scope) for scope in expected_wrapper.resolve(ScopeProvider).values() if scope is not None})


# --- scope metadata without the layout, and names decided from the code alone -----------------------------------

NAMES_SOURCE = '''
import os.path
import datetime as dt
from time import time as now, monotonic
from uuid import uuid4
from . import prompts

COUNTER = 0

def counter():
    global COUNTER
    COUNTER += 1
    return COUNTER

class Builder:
    stamp = dt.datetime.now()

    def build(self, parts: "list[str]", uuid4=None) -> str:
        joined = ", ".join(sorted(set(parts)))
        when = now() + monotonic()
        ident = uuid4() if uuid4 else str(len(parts))
        path = os.path.join(prompts.ROOT, f"{ident}.txt")
        return [p for p in parts if p] and (joined, when, path, self.stamp, (lambda x: x)(1), dict.fromkeys(parts))
'''


def _context(source: str) -> ModuleContext:
    return ModuleContext(source, "names.py")


def test_scopes_without_layout_are_libcst_scopes() -> None:
    """Every node that is not layout gets the scope libcst's own walk gives it, and the same names and bindings."""
    for source in (SOURCE, NAMES_SOURCE, Path(values.__file__).read_text()):
        ctx = _context(source)
        expected = MetadataWrapper(ctx.module, unsafe_skip_copy=True).resolve(ScopeProvider)  # libcst's walk, no read-only visits
        found = ctx._scopes
        for node in ctx._order:
            if type(node) in _LAYOUT:
                continue
            ours, theirs = found.get(node), expected.get(node)
            assert type(ours) is type(theirs) and getattr(ours, "node", None) is getattr(theirs, "node", None)
            if ours is not None and isinstance(node, (cst.Name, cst.Attribute, cst.Call)):
                assert ours.get_qualified_names_for(node) == theirs.get_qualified_names_for(node)
            if ours is not None and isinstance(node, cst.Name):
                assert {id(a.node) for a in ours[node.value] if isinstance(a, Assignment)} == {
                    id(a.node) for a in theirs[node.value] if isinstance(a, Assignment)}


def test_names_decided_from_the_code_are_the_scopes_answers() -> None:
    """`qualified_name_in` skips the scope when the code says no name can match; it must answer as the scope does."""
    ctx = _context(NAMES_SOURCE)
    asked = [{"time.time"}, {"time.monotonic"}, {"datetime.datetime.now"}, {"uuid.uuid4"}, {"builtins.str", "builtins.len"},
             {"builtins.dict"}, {"builtins.sorted", "builtins.set"}, {"os.path.join"}, {".prompts.ROOT"}, {"Builder.build"},
             {"builtins.None"}, {"COUNTER"}, {"json.dumps"}]
    decided = 0
    for node in ctx._order:
        if not isinstance(node, (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.SimpleString)):
            continue
        for names in asked:
            by_scope = next((n for n in ctx.qualified_names(node) if n in names), None)
            assert ctx.qualified_name_in(node, names) == by_scope, (ctx.code(node), names)
            decided += not ctx._may_be_named(node, names)
    assert decided > 100  # most questions never reach the scope
    found = {ctx.code(c.func): ctx.qualified_name_in(c.func, {"time.time", "uuid.uuid4", "builtins.dict"}) for c in ctx.nodes(cst.Call)}
    assert found["now"] == "time.time" and found["uuid4"] is None  # the parameter uuid4 shadows the import
    assert found["dict.fromkeys"] == "builtins.dict"  # libcst names an attribute of a builtin by the builtin


def test_needs_answers_as_its_pattern() -> None:
    """A gate pattern's texts are a prefilter only: every sample is found exactly when the pattern finds it."""
    samples = ["for t in client.tools:", "self.enabled_tools = set()", "x = get_tools()", "list_toolſ(", "LIST_TOOLS(",
               "\u212anowledge", "system = retrieved + knowledge", "messages[0]['content'] += ctx", "llm = self.get_llm(name)",
               "resolve_model(x)", "params.tool_choice = 'auto'", 'role="system"', "SystemMessage(text)", "def build_sys_prompt(",
               "sysprompt = x", "{'type': 'text'}", "os.walk(root)", "sorted(glob(p))", "nothing to see", "İn zip(servers"]
    needs = [value for value in vars(gate).values() if isinstance(value, gate.Needs)]
    assert len(needs) >= 5
    for pattern in needs:
        for sample in samples + [s.upper() for s in samples]:
            assert (pattern.search(sample) is None) == (pattern.pattern.search(sample) is None), (pattern.pattern.pattern[:40], sample)
    assert gate.TOOL_SOURCES.search("list_toolſ(") is not None  # the long s is an s to IGNORECASE


def test_collector_paused_only_during_the_analysis() -> None:
    """lint_source pauses the cyclic collector while it analyses a module and leaves it as it found it."""
    import gc

    from cachelint.check.engine import lint_source

    source = "import openai\nclient = openai.OpenAI()\n"
    assert gc.isenabled()
    lint_source(source, "a.py")
    assert gc.isenabled()
    gc.disable()
    try:
        lint_source(source, "a.py")
        assert not gc.isenabled()
    finally:
        gc.enable()
    lint_source("import openai\ndef broken(:\n", "b.py")  # a syntax error in an analysed module: enabled again too
    assert gc.isenabled()


def test_tools_dropped_opens_a_file_for_a_request_not_for_a_parameter_default() -> None:
    """CL203's gate: tools taken off a request open the file; `tools=None` as a parameter's default (in nearly every
    adapter's signature) does not."""
    opened = ["x = build(msgs, tools=None)\n", "self.req.func_tool = None\n", 'payload["tools"] = []\n',
              "r = client.messages.create(model=m, messages=h, tools=None)"]
    left = ["def send(self, tools=None):\n    pass\n", "    def send(a,\n             tools=None) -> str:\n",
            "async def run(x, tools=None):  # the adapter\n"]
    assert [gate.holds_prompt_shapes(s, frozenset({"CL203"})) for s in opened] == [True] * len(opened)
    assert [gate.holds_prompt_shapes(s, frozenset({"CL203"})) for s in left] == [False] * len(left)
