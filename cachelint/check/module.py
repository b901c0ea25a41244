"""A parsed module with the libcst metadata the analysis needs: positions, qualified names, scopes, parents."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property

import libcst as cst
from libcst.metadata import (
    Assignment,
    MetadataWrapper,
    PositionProvider,
    ScopeProvider,
)

LOOPS = (cst.For, cst.While)
SCOPES = (cst.FunctionDef, cst.ClassDef, cst.Lambda)


@dataclass(frozen=True, slots=True)
class Span:
    row: int
    column: int  # 1-based, in code points
    end_row: int
    end_column: int


class ModuleContext:
    """One file: its syntax tree and the questions rules ask about it."""

    def __init__(self, source: str, filename: str, module: cst.Module | None = None) -> None:
        self.source = source
        self.filename = filename
        self.wrapper = MetadataWrapper(module if module is not None else cst.parse_module(source), unsafe_skip_copy=True)
        self.module = self.wrapper.module
        self._parents: dict[cst.CSTNode, cst.CSTNode] = {}
        self._qname_cache: dict[cst.CSTNode, set[str]] = {}
        self._returns: dict[int, list[cst.BaseExpression]] = {}
        self._index = self._build_index()

    # --- metadata, computed on first use (scopes and qualified names are the costly part of a check: a module
    # that only needs positions, or nothing, never pays for them) -------------------------------------------------

    @cached_property
    def _positions(self):
        return self.wrapper.resolve(PositionProvider)

    @cached_property
    def _scopes(self):
        return self.wrapper.resolve(ScopeProvider)

    # --- positions and text ----------------------------------------------------------------------------------

    def span(self, node: cst.CSTNode) -> Span:
        r = self._positions[node]
        return Span(r.start.line, r.start.column + 1, r.end.line, r.end.column + 1)

    def code(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)

    @cached_property
    def lines(self) -> list[str]:
        return self.source.splitlines()

    # --- names ---------------------------------------------------------------------------------------------

    def qualified_names(self, node: cst.CSTNode) -> set[str]:
        """Qualified names of a name, attribute or call, asked of its scope (what QualifiedNameProvider does for
        every node of the module at once; a check asks about a few dozen, so only those are computed)."""
        cached = self._qname_cache.get(node)
        if cached is not None:
            return cached
        scope = self._scopes.get(node)
        found: set[str] = set()
        if scope is not None:
            try:
                found = {q.name for q in scope.get_qualified_names_for(node)}
            except Exception:  # a node the scope cannot name (an attribute of a call, ...)
                found = set()
        self._qname_cache[node] = found
        return found

    def qualified_name_in(self, node: cst.CSTNode, names: set[str] | frozenset[str]) -> str | None:
        for name in self.qualified_names(node):
            if name in names:
                return name
        return None

    # --- tree navigation -------------------------------------------------------------------------------------

    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        return self._parents.get(node)

    def ancestors(self, node: cst.CSTNode) -> Iterator[cst.CSTNode]:
        current = self._parents.get(node)
        while current is not None:
            yield current
            current = self._parents.get(current)

    def enclosing(self, node: cst.CSTNode, kinds: tuple[type, ...]) -> cst.CSTNode | None:
        for ancestor in self.ancestors(node):
            if isinstance(ancestor, kinds):
                return ancestor
        return None

    def enclosing_function(self, node: cst.CSTNode) -> cst.FunctionDef | None:
        return self.enclosing(node, (cst.FunctionDef,))  # type: ignore[return-value]

    def loops_around(self, node: cst.CSTNode) -> list[cst.CSTNode]:
        """Loops that contain `node`, innermost first, stopping at the enclosing function."""
        found = []
        for ancestor in self.ancestors(node):
            if isinstance(ancestor, SCOPES):
                break
            if isinstance(ancestor, LOOPS):
                found.append(ancestor)
        return found

    def contains(self, outer: cst.CSTNode, node: cst.CSTNode) -> bool:
        return any(a is outer for a in self.ancestors(node))

    def statement_of(self, node: cst.CSTNode) -> cst.CSTNode:
        """The statement (simple or compound) that holds `node`."""
        for ancestor in [node, *self.ancestors(node)]:
            if isinstance(ancestor, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
                return ancestor
        return node

    # --- bindings --------------------------------------------------------------------------------------------

    def assignments(self, name: cst.Name) -> list[Assignment]:
        scope = self._scopes.get(name)
        if scope is None:
            return []
        try:
            return [a for a in scope[name.value] if isinstance(a, Assignment)]
        except Exception:
            return []

    def assigned_values(self, name: cst.Name) -> Iterator[tuple[cst.CSTNode, cst.BaseExpression | None]]:
        """(binding node, assigned value or None) for every binding of `name` visible where it is used."""
        for assignment in self.assignments(name):
            node = assignment.node
            parent = self.parent(node)
            if isinstance(parent, cst.AssignTarget):
                assign = self.parent(parent)
                if isinstance(assign, cst.Assign):
                    yield node, assign.value
                    continue
            if isinstance(parent, (cst.AnnAssign, cst.AugAssign)) and parent.value is not None:
                yield node, parent.value
                continue
            if isinstance(parent, cst.NamedExpr):
                yield node, parent.value
                continue
            yield node, None

    def scope_of(self, node: cst.CSTNode):
        return self._scopes.get(node)

    @cached_property
    def functions(self) -> dict[str, list[cst.FunctionDef]]:
        """Module-level functions and methods by name ("f" and "Class.m")."""
        found: dict[str, list[cst.FunctionDef]] = {}

        class Collect(cst.CSTVisitor):
            def __init__(self) -> None:
                self.classes: list[str] = []

            def visit_ClassDef(self, node: cst.ClassDef) -> None:
                self.classes.append(node.name.value)

            def leave_ClassDef(self, node: cst.ClassDef) -> None:
                self.classes.pop()

            def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
                key = ".".join([*self.classes[-1:], node.name.value])
                found.setdefault(key, []).append(node)
                return True

        self.module.visit(Collect())
        return found

    def called_functions(self, call: cst.Call) -> list[cst.FunctionDef]:
        """The functions of this module a call runs: `f(...)`, or `self.m(...)` inside the class of `m`."""
        func = call.func
        key = None
        if isinstance(func, cst.Name):
            key = func.value
        elif isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value in ("self", "cls"):
            cls = self.enclosing(call, (cst.ClassDef,))
            key = f"{cls.name.value}.{func.attr.value}" if isinstance(cls, cst.ClassDef) else None
        return self.functions.get(key, []) if key else []

    def returns_of(self, function: cst.FunctionDef) -> list[cst.BaseExpression]:
        """The values `function` returns (not those of functions nested in it); computed once per function."""
        cached = self._returns.get(id(function))
        if cached is None:
            cached = self._returns[id(function)] = self._collect_returns(function)
        return cached

    def _collect_returns(self, function: cst.FunctionDef) -> list[cst.BaseExpression]:
        values: list[cst.BaseExpression] = []

        class Collect(cst.CSTVisitor):
            def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
                return node is function

            def visit_Lambda(self, node: cst.Lambda) -> bool:
                return False

            def visit_Return(self, node: cst.Return) -> None:
                if node.value is not None:
                    values.append(node.value)

        function.visit(Collect())
        return values

    @cached_property
    def calls_on(self) -> dict[str, list[cst.Call]]:
        """Method calls by the name of their receiver: {"messages": [messages.append(...), ...]}."""
        found: dict[str, list[cst.Call]] = {}
        for call in self.nodes(cst.Call):
            func = call.func
            if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name):
                found.setdefault(func.value.value, []).append(call)
        return found

    @cached_property
    def calls_by_name(self) -> dict[str, list[cst.Call]]:
        """Calls by the name they call: {"render": [render(...), self.render(...), obj.render(...)]}."""
        found: dict[str, list[cst.Call]] = {}
        for call in self.nodes(cst.Call):
            func = call.func
            key = func.value if isinstance(func, cst.Name) else func.attr.value if isinstance(func, cst.Attribute) else None
            if key is not None:
                found.setdefault(key, []).append(call)
        return found

    @cached_property
    def subscript_assignments(self) -> dict[str, list[cst.Assign]]:
        """`x[...] = ...` statements by the code of `x`."""
        found: dict[str, list[cst.Assign]] = {}
        for node in self.nodes(cst.Assign):
            for target in node.targets:
                if isinstance(target.target, cst.Subscript):
                    found.setdefault(self.code(target.target.value), []).append(node)
        return found

    def nodes(self, kind: type) -> list:
        """Every node of one kind, in source order (computed once per module)."""
        return self._index.get(kind, [])

    def _build_index(self) -> dict[type, list[cst.CSTNode]]:
        """One pass over the tree: nodes by kind, and each node's parent (cheaper than ParentNodeProvider)."""
        index: dict[type, list[cst.CSTNode]] = {}
        parents = self._parents
        stack: list[cst.CSTNode] = []

        class Collect(cst.CSTVisitor):
            def on_visit(self, node: cst.CSTNode) -> bool:
                index.setdefault(type(node), []).append(node)
                if stack:
                    parents[node] = stack[-1]
                stack.append(node)
                return True

            def on_leave(self, original_node: cst.CSTNode) -> None:
                stack.pop()

        self.module.visit(Collect())
        return index


def descendants(root: cst.CSTNode) -> list[cst.CSTNode]:
    """`root` and every node below it, in source order."""
    found: list[cst.CSTNode] = []

    class Collect(cst.CSTVisitor):
        def on_visit(self, node: cst.CSTNode) -> bool:
            found.append(node)
            return True

    root.visit(Collect())
    return found
