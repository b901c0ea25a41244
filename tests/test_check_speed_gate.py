"""The read-only visits (cachelint.check.module.read_only_visits) skip calls that libcst's base visitor would
answer with nothing: the attribute calls of node types a visitor has no hook for, and the batched walk below the
module of the scope providers. What the visitors see must stay the same."""

from __future__ import annotations

import libcst as cst
from libcst import BatchableCSTVisitor
from libcst.metadata import MetadataWrapper, ScopeProvider

from cachelint.check.module import read_only_visits

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
