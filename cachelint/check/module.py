"""A parsed module with the libcst metadata the analysis needs: positions, qualified names, scopes, parents."""

from __future__ import annotations

import os
import re
import weakref
from bisect import bisect_left, bisect_right
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property

import libcst as cst
from libcst._batched_visitor import _BatchedCSTVisitor
from libcst._nodes.internal import CodegenState
from libcst.helpers import get_full_name_for_node
from libcst.metadata import (
    Assignment,
    MetadataWrapper,
    ScopeProvider,
)
from libcst.metadata.expression_context_provider import ExpressionContextVisitor
from libcst.metadata.scope_provider import ScopeVisitor

from cachelint.check.config import project_root_of, test_path_below

LOOPS = (cst.For, cst.While)
_NAMED_BY_CODE = (cst.Name, cst.Attribute, cst.Call, cst.Subscript)  # nodes libcst names from their code alone
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
        # keyed by id(node): the module keeps its nodes alive, and libcst's __hash__ (id, in Python) costs a call
        self._parents: dict[int, cst.CSTNode] = {}  # id(node) -> its parent
        self._closure_runs: dict[int, bool] = {}  # id(closure) -> whether it runs in the pass of the loop it is made in
        self._qname_cache: dict[cst.CSTNode, set[str]] = {}
        self._returns: dict[int, list[cst.BaseExpression]] = {}
        self._self_assigned: dict[int, dict[str, list[cst.CSTNode]]] = {}  # id(class) -> attr -> its assignments
        self._order: list[cst.CSTNode] = []  # every node in source order (libcst's visiting order)
        self._at: dict[int, int] = {}  # id(node) -> its place in _order
        self._places: dict[type, list[int]] = {}  # kind -> the places of nodes(kind), for nodes_in
        self.memo: dict[str, object] = {}  # what a check module worked out about this module once (values: an index of a function's attribute stores)
        self._index = self._build_index()
        _CONTEXTS.add(self)

    # --- metadata, computed on first use (scopes and qualified names are the costly part of a check: a module
    # that only needs positions, or nothing, never pays for them) -------------------------------------------------

    @cached_property
    def _positions(self) -> _Positions:
        return _Positions(self.module)

    @cached_property
    def _scopes(self):
        with read_only_visits():
            return self.wrapper.resolve(ScopeProvider)

    # --- positions and text ----------------------------------------------------------------------------------

    def span(self, node: cst.CSTNode) -> Span:
        return self._positions.span(node)

    def code(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)

    @cached_property
    def lines(self) -> list[str]:
        return self.source.splitlines()

    @cached_property
    def reruns_per_turn(self) -> bool:
        """A Streamlit app: the script's own statements run again on every message (the conversation is kept in
        `st.session_state`), so they are the body of a turn, not code that runs once per process."""
        return STREAMLIT_APP.search(self.source) is not None

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
        if not self._may_be_named(node, names):
            return None  # decided by the code alone: the module's scopes are not computed for it
        for name in self.qualified_names(node):
            if name in names:
                return name
        return None

    def _may_be_named(self, node: cst.CSTNode, names: set[str] | frozenset[str]) -> bool:
        """False when none of `names` can be a qualified name of `node`, known from its code alone. libcst names
        `a.b.c` by the binding of a dotted prefix of it, and keeps the rest: `<scope>.a.b.c` for a local
        binding, `<module>.<imported name>[.rest]` for an import, `builtins.a` for a builtin. So every name ends
        with the code's last part (`c`) or is `builtins.<first part>`, unless the first part is bound by an
        import's `as` (then the name is whatever was imported). Only for names, attributes and the calls and
        subscripts of them: other nodes (a string annotation) are asked of the scope."""
        if not isinstance(node, _NAMED_BY_CODE):
            return True
        full = get_full_name_for_node(node)
        if full is None:
            return False  # libcst names none of these (`f()()`, `x[0].y` of a call's result ...)
        first, _, _ = full.partition(".")
        if first in self._import_aliases:
            return True
        last = full.rpartition(".")[2]
        return any(name == last or name.endswith("." + last) or name == "builtins." + first for name in names)

    @cached_property
    def _import_aliases(self) -> frozenset[str]:
        """The names an `import ... as NAME` or `from ... import ... as NAME` binds."""
        return frozenset(alias.asname.name.value for alias in self.nodes(cst.ImportAlias)
                         if alias.asname is not None and isinstance(alias.asname.name, cst.Name))

    # --- tree navigation -------------------------------------------------------------------------------------

    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        return self._parents.get(id(node))

    def ancestors(self, node: cst.CSTNode) -> Iterator[cst.CSTNode]:
        current = self._parents.get(id(node))
        while current is not None:
            yield current
            current = self._parents.get(id(current))

    def enclosing(self, node: cst.CSTNode, kinds: tuple[type, ...]) -> cst.CSTNode | None:
        for ancestor in self.ancestors(node):
            if isinstance(ancestor, kinds):
                return ancestor
        return None

    def enclosing_function(self, node: cst.CSTNode) -> cst.FunctionDef | None:
        return self.enclosing(node, (cst.FunctionDef,))  # type: ignore[return-value]

    def loops_around(self, node: cst.CSTNode) -> list[cst.CSTNode]:
        """Loops that contain `node`, innermost first, stopping at the enclosing function. A `for` whose iterable holds
        `node` (`for chunk in client.chat.completions.create(stream=True)`) runs it once, before its passes: not a
        loop around it."""
        found = []
        child = node
        for ancestor in self.ancestors(node):
            if isinstance(ancestor, SCOPES):
                if not self._runs_in_its_loop(ancestor):
                    break
            elif isinstance(ancestor, LOOPS) and not (isinstance(ancestor, cst.For) and child is ancestor.iter):
                found.append(ancestor)
            child = ancestor
        return found

    def _runs_in_its_loop(self, scope: cst.CSTNode) -> bool:
        """A closure made in a loop's body and run in that pass: a lambda handed on there (`run_in_executor(None, lambda:
        client.messages.create(...))`), or a nested function the loop's body then calls or hands to a retry
        (`async def make_api_call(): ...` then `await retry_with_backoff(make_api_call)`). Its body runs once per pass,
        so the loops around it are loops around what it does. Only a thunk (no parameters, no decorator): a closure
        with parameters of its own (`def call_anthropic(message_dicts, model=model)` under `@file_cache`, in a retry
        loop) is a function, whose names are its own."""
        if not isinstance(scope, (cst.FunctionDef, cst.Lambda)):
            return False  # a class body or the module: no loop of a function around it
        memo = self._closure_runs
        found = memo.get(id(scope))
        if found is None:
            params = scope.params
            thunk = not (params.params or params.posonly_params or params.kwonly_params or isinstance(params.star_arg, cst.Param)
                         or params.star_kwarg is not None)
            found = isinstance(scope, cst.Lambda) and thunk  # run where it is handed on: the scope around it decides
            if isinstance(scope, cst.FunctionDef) and thunk and not scope.decorators:
                loop = next((a for a in self.ancestors(scope) if isinstance(a, (*LOOPS, *SCOPES))), None)
                if isinstance(loop, LOOPS):
                    name = scope.name.value
                    found = any(n.value == name and n is not scope.name for n in self.nodes_in(cst.Name, loop.body))
            memo[id(scope)] = found
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
            found = [a for a in scope[name.value] if isinstance(a, Assignment)]
        except Exception:
            return []
        # libcst keeps a name's bindings in a set: in source order, so every run reads them in the same order
        return sorted(found, key=lambda a: self._at.get(id(a.node), -1))

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

    def sole_value(self, name: cst.Name, within: cst.FunctionDef | None = None) -> cst.BaseExpression | None:
        """The value of `name`'s only binding (`n = len(messages)`), or None when it has several, or one with no value
        (a parameter, a loop target). With `within`, only the bindings with a value made in that function count."""
        values = [v for _, v in self.assigned_values(name)
                  if within is None or v is not None and self.enclosing_function(v) is within]
        return values[0] if len(values) == 1 else None

    def scope_of(self, node: cst.CSTNode):
        return self._scopes.get(node)

    @cached_property
    def functions(self) -> dict[str, list[cst.FunctionDef]]:
        """Module-level functions and methods by name ("f" and "Class.m")."""
        found: dict[str, list[cst.FunctionDef]] = {}
        for node in self.nodes(cst.FunctionDef):  # from the index: no walk of the tree
            cls = self.enclosing(node, (cst.ClassDef,))
            key = f"{cls.name.value}.{node.name.value}" if isinstance(cls, cst.ClassDef) else node.name.value
            found.setdefault(key, []).append(node)
        return found

    def called_functions(self, call: cst.Call) -> list[cst.FunctionDef]:
        """The functions of this module a call runs: `f(...)` (a function nested in one around the call first, then the
        module's), or `self.m(...)` inside the class of `m`."""
        func = call.func
        key = None
        if isinstance(func, cst.Name):
            key = func.value
            cls = self.enclosing(call, (cst.ClassDef,))
            if isinstance(cls, cst.ClassDef):  # a def nested in a method is filed under the class: `Cls.inner`
                nested = [f for f in self.functions.get(f"{cls.name.value}.{key}", [])
                          if (outer := self.enclosing_function(f)) is not None and self.contains(outer, call)]
                if nested:
                    return nested
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
        stack: list[cst.CSTNode] = [function]
        while stack:  # the function's own statements: nested functions and lambdas return for themselves
            node = stack.pop()
            if isinstance(node, cst.Return) and node.value is not None:
                values.append(node.value)
            elif node is function or not isinstance(node, (cst.FunctionDef, cst.Lambda)):
                stack.extend(reversed(children_of(node)))
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

    def nodes_in(self, kind: type, root: cst.CSTNode) -> list:
        """The nodes of one concrete kind (`cst.Call`, not a base class: the index is by exact type) in `root`'s
        subtree (`root` included), in source order: a slice of `nodes(kind)` found by their places, instead of a
        walk of the subtree testing every node."""
        found = self.nodes(kind)
        start = self._at.get(id(root))
        if start is None or not found:
            return [n for n in descendants(root) if type(n) is kind] if start is None else []
        places = self._places.get(kind)
        if places is None:
            places = self._places[kind] = [self._at[id(n)] for n in found]
        return found[bisect_left(places, start) : bisect_right(places, self._end_of(root))]

    def _build_index(self) -> dict[type, list[cst.CSTNode]]:
        """One pass over the tree, without libcst's visitor (which rebuilds every node it passes): nodes by kind,
        each node's parent (cheaper than ParentNodeProvider), and every node's place in source order, from which
        `descendants` of any node is a slice."""
        index: dict[type, list[cst.CSTNode]] = {}
        parents, order = self._parents, self._order
        stack: list[cst.CSTNode] = [self.module]
        pop, push, visit = stack.pop, stack.extend, order.append  # bound once: this loop runs for every node
        while stack:
            node = pop()
            visit(node)
            kind = type(node)
            found = index.get(kind)
            if found is None:
                index[kind] = [node]
            else:
                found.append(node)
            kids = children_of(node)
            if kids:
                for kid in kids:
                    parents[id(kid)] = node
                kids.reverse()
                push(kids)
        self._at = {id(node): place for place, node in enumerate(order)}
        return index

    @cached_property
    def is_test(self) -> bool:
        """A module of a test suite (under a `tests/` or `test/` folder, `test_*.py`, `*_test.py`, `conftest.py`):
        what it builds are fixtures for a test, not requests an app sends. Judged by its path below its project (the
        nearest folder with a pyproject.toml, setup.py, setup.cfg or .git; else the current directory): the folders
        above a project say nothing about it."""
        return test_path_below(self.filename, project_root_of(self.filename) or os.getcwd())

    @cached_property
    def template_names(self) -> frozenset[str]:
        """The names this module assigns an f-string or a `.format(...)` call (`x = ...`, `x: str = ...`, `x += ...`,
        `(x := ...)`): only those values can have a per-request tail after their text."""
        found: set[str] = set()
        for kind in (cst.Assign, cst.AnnAssign, cst.AugAssign, cst.NamedExpr):
            for node in self.nodes(kind):
                if node.value is None or not is_template(node.value):
                    continue
                targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
                found.update(t.value for t in targets if isinstance(t, cst.Name))
        return frozenset(found)

    def self_assignments(self, cls: cst.ClassDef) -> dict[str, list[cst.Assign | cst.AugAssign | cst.AnnAssign]]:
        """The statements anywhere in `cls` (its methods too) that assign `self.<attr>`, by attr, in source order;
        a statement once for each of its targets that names the attribute. Built once per class: a large class
        is asked about each of its attributes."""
        found = self._self_assigned.get(id(cls))
        if found is None:
            found = {}
            for node in descendants(cls):
                if isinstance(node, cst.Assign):
                    targets = [t.target for t in node.targets]
                elif isinstance(node, (cst.AugAssign, cst.AnnAssign)):
                    targets = [node.target]
                else:
                    continue
                for target in targets:
                    if isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) and target.value.value == "self":
                        found.setdefault(target.attr.value, []).append(node)
            self._self_assigned[id(cls)] = found
        return found

    def subtree(self, root: cst.CSTNode) -> list[cst.CSTNode] | None:
        """`root` and every node below it, in source order, when `root` is a node of this module."""
        start = self._at.get(id(root))
        if start is None:
            return None
        return self._order[start : self._end_of(root) + 1]

    def _end_of(self, root: cst.CSTNode) -> int:
        """The place of the last node of `root`'s subtree: its last leaf, found by following the last child down."""
        last = root
        while True:
            kids = children_of(last)
            if not kids:
                return self._at[id(last)]
            last = kids[-1]


# the modules in memory: `descendants` of one of their nodes is a slice of their index, not a walk
_CONTEXTS: weakref.WeakSet[ModuleContext] = weakref.WeakSet()


def declared_outside(function: cst.FunctionDef) -> set[str]:
    """Names the function binds in the module or an enclosing function (`global history`, `nonlocal turns`): a
    value assigned to one outlives the call. (A declaration in a function nested in it counts too: the nested
    handler's `global chat_history` is the module's history, whoever cuts it.)"""
    return {n.name.value for node in descendants(function.body) if isinstance(node, (cst.Global, cst.Nonlocal)) for n in node.names}


def declared_in(ctx: ModuleContext, function: cst.FunctionDef) -> set[str]:
    """Names the function's own statements declare `global` or `nonlocal`, unlike `declared_outside` (a function
    nested in it is not counted: its `nonlocal n` names this function's own variable)."""
    return {n.name.value for node in descendants(function.body) if isinstance(node, (cst.Global, cst.Nonlocal))
            and ctx.enclosing_function(node) is function for n in node.names}


def literal_int(expr: cst.BaseExpression | None) -> int | None:
    """A literal integer's value (`12`, `-12`, `0x20`, `1_000`)."""
    if isinstance(expr, cst.Integer):
        return int(expr.value.replace("_", ""), 0) if not re.match(r"0\d", expr.value) else int(expr.value)
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus) and isinstance(expr.expression, cst.Integer):
        value = literal_int(expr.expression)
        return -value if value is not None else None
    return None


def descendants(root: cst.CSTNode) -> list[cst.CSTNode]:
    """`root` and every node below it, in source order."""
    for ctx in list(_CONTEXTS):
        found = ctx.subtree(root)
        if found is not None:
            return found
    found: list[cst.CSTNode] = []
    stack = [root]
    while stack:
        node = stack.pop()
        found.append(node)
        stack.extend(reversed(children_of(node)))
    return found


# a script that Streamlit runs again on every interaction (ModuleContext.reruns_per_turn)
STREAMLIT_APP = re.compile(r"^\s*(?:import\s+streamlit\b|from\s+streamlit\b)", re.M)

# an argument written in the code, the same on every call (an f-string, even concatenated, is not one)
LITERAL_ARGS = (cst.SimpleString, cst.Integer, cst.Float)

# a name that speaks of tools: `tools`, `self.req.func_tool`, `tool_specs` (CL201 / CL203 holders and requests)
TOOL_WORD = re.compile(r"tool", re.I)


def is_model_tool(function: cst.FunctionDef) -> bool:
    """`@tool`, `@server.tool()`, `@function_tool`: a function the model calls; what it returns is a tool result,
    which the conversation keeps as it was sent."""
    for decorator in function.decorators:
        node = decorator.decorator.func if isinstance(decorator.decorator, cst.Call) else decorator.decorator
        if "tool" in (last_name(node) or "").lower():
            return True
    return False


def last_name(expr: cst.BaseExpression) -> str | None:
    """The last name of `a.b.tools` or `tools`; None for anything else."""
    if isinstance(expr, cst.Name):
        return expr.value
    if isinstance(expr, cst.Attribute):
        return expr.attr.value
    return None


# the name of a prompt template kept as a module constant: `EDIT_PROMPT`, `SUMMARY_TEMPLATE`, or in lower case
# `summarizer_instructions` (the gate's text test and static_tail's templates read it alike)
TEMPLATE_NAME = r"(?:(?=[A-Z])[A-Z0-9_]*(?:PROMPT|TEMPLATE|INSTRUCTIONS?)[A-Z0-9_]*|[a-z][a-z0-9_]*_(?:prompt|template|instructions?))"


def bound_name(ctx: ModuleContext, node: cst.CSTNode, through: tuple[type[cst.CSTNode], ...] = ()) -> str | None:
    """The name a value is bound to by the statement it is the whole value of (`kept = history[-k:]`), looking up
    through the wrappers `through` names (`names = solver.allowed(...) or every_name`, `await ...`)."""
    parent = ctx.parent(node)
    while through and isinstance(parent, through):
        parent = ctx.parent(parent)
    if isinstance(parent, cst.Assign) and len(parent.targets) == 1 and isinstance(parent.targets[0].target, cst.Name):
        return parent.targets[0].target.value
    return None


def comprehension_clauses(comp: cst.ListComp | cst.GeneratorExp | cst.SetComp | cst.DictComp) -> list[cst.CompFor]:
    """The `for ... in ... if ...` clauses of a comprehension, outermost first."""
    found = []
    part: cst.CompFor | None = comp.for_in
    while part is not None:
        found.append(part)
        part = part.inner_for_in
    return found


def called_name(call: cst.Call) -> str:
    """The last name of what a call calls: `search` of `store.search(q)`, `glob` of `glob(p)`; "" otherwise."""
    func = call.func
    return func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""


def makes_a_set(expr: cst.BaseExpression) -> bool:
    """A set made right here: a set literal or comprehension, or a call of `set(...)` / `frozenset(...)` by name."""
    return isinstance(expr, (cst.Set, cst.SetComp)) or (
        isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value in ("set", "frozenset"))


def sorted_in(ctx: ModuleContext, scope: cst.CSTNode | None, name: str) -> bool:
    """Whether `scope` sorts the list named `name`: `name.sort()`, or `sorted(...)` of an expression that holds it
    (`sorted(merged, key=...)`, `sorted(a + merged)`; not `sorted(tool_names & seen)` for `tools`)."""
    for node in descendants(scope) if scope is not None else ():
        if isinstance(node, cst.Call):
            callee = ctx.code(node.func)
            if callee == f"{name}.sort" or (callee == "sorted" and node.args and any(
                    isinstance(n, (cst.Name, cst.Attribute)) and ctx.code(n) == name for n in descendants(node.args[0].value))):
                return True
    return False


# --- reading libcst's trees fast ------------------------------------------------------------------------------
# libcst's `visit` rebuilds every node it passes, also for a read-only CSTVisitor that throws the copies away: it
# is shared with transformers. Walking the same children in the same order without the copies is several times
# cheaper, and the analysis only ever reads.

_CHILD_FIELDS: dict[type, tuple[str, ...] | None] = {}
_UNLEARNED = ("",)  # a type not met yet (a leaf's fields are the empty tuple)


def children_of(node: cst.CSTNode) -> list[cst.CSTNode]:
    """A node's children in source order: what libcst's `node.children` returns, without rebuilding `node`."""
    fields = _CHILD_FIELDS.get(type(node), _UNLEARNED)
    if fields is _UNLEARNED:
        fields = _learn_child_fields(node)
    if fields is None:
        return list(node.children)
    kids: list[cst.CSTNode] = []
    for name in fields:
        value = getattr(node, name)
        kind = value.__class__
        if kind is tuple or kind is list:
            kids.extend(value)
        elif kind not in _NOT_NODES:  # a child's field holds a node, a sequence of them, None or MaybeSentinel
            kids.append(value)
    return kids


_NOT_NODES = frozenset({type(None), cst.MaybeSentinel})  # plain type tests: isinstance on libcst's ABCs is slow


def _learn_child_fields(node: cst.CSTNode) -> tuple[str, ...] | None:
    """The fields of a node type that hold children, in the order its `_visit_and_replace_children` visits
    them: each visit passes the field's name as a string constant, and the compiler keeps constants in the
    order the code uses them. Checked once against libcst's own `children` on the first node of the type; any
    doubt (no bytecode, a mismatch) and the type uses libcst's `children` (slower, always right)."""
    kind = type(node)
    method = kind._visit_and_replace_children
    code = getattr(method, "__code__", None)
    fields: tuple[str, ...] | None = None
    if code is not None:
        names = [c for c in code.co_consts if isinstance(c, str) and c != method.__doc__ and c.isidentifier()]
        fields = tuple(dict.fromkeys(names))
        if not all(hasattr(node, name) for name in fields):
            fields = None
    _CHILD_FIELDS[kind] = fields
    if fields is not None:
        expected = list(node.children)
        if len(expected) != len(children_of(node)) or any(a is not b for a, b in zip(expected, children_of(node))):
            fields = _CHILD_FIELDS[kind] = None
    return fields


_LIBCST_VISIT = cst.CSTNode.visit
_TRANSFORMS = "transforms"  # a transformer (or anything not a CSTVisitor): libcst's own visit
_BATCHED = "batched"  # libcst's batched visitor (the metadata providers'): its hooks are per instance
_ATTRIBUTE_HOOKS: dict[type, str | bool | frozenset[str]] = {}
_HOOK_NAME = re.compile(r"^(?:visit|leave)_([A-Za-z]+)_\w+$")


def _attribute_hooks(visitor: object) -> str | bool | frozenset[str]:
    """Per visitor class: the names of the node types whose attributes it listens to (visit_Call_func, ...; only
    for those are the attribute calls made), True when it listens to every attribute (its own
    on_visit_attribute), _BATCHED for libcst's batched visitor, or _TRANSFORMS when it is no read-only visitor.
    libcst's typed visitor base defines a no-op for every attribute hook; those do not count."""
    kind = visitor.__class__
    if not isinstance(visitor, cst.CSTVisitor):
        hooks: str | bool | frozenset[str] = _TRANSFORMS
    elif kind is _BatchedCSTVisitor:
        hooks = _BATCHED
    elif kind.on_visit_attribute is not cst.CSTVisitor.on_visit_attribute or kind.on_leave_attribute is not cst.CSTVisitor.on_leave_attribute:
        hooks = True
    else:
        hooks = frozenset(match[1] for name in dir(kind) if (match := _HOOK_NAME.match(name))
                          and not getattr(getattr(kind, name), "_is_no_op", False)) or False
    _ATTRIBUTE_HOOKS[kind] = hooks
    return hooks


def _visits_module_only(visitor: _BatchedCSTVisitor) -> bool:
    """Whether a batched visitor only listens to the module node: libcst's scope and expression-context providers
    do their work in visit_Module (with a visitor of their own), so the batched walk below it calls nothing."""
    return (visitor.before_visit is None and visitor.after_leave is None
            and all(name.split("_", 2)[1] == "Module" for name in visitor.visitor_methods))


def _layout_types() -> frozenset[type]:
    """The node types of a module's layout: whitespace, comments, newlines, brackets, commas, colons, dots and
    operators. Below them there is only more layout, never an expression or a statement."""
    from libcst._nodes import op, whitespace

    found = {kind for source in (op, whitespace) for kind in vars(source).values()
             if isinstance(kind, type) and issubclass(kind, cst.CSTNode) and kind.__module__ == source.__name__}
    return frozenset(found | {cst.LeftParen, cst.RightParen, cst.LeftSquareBracket, cst.RightSquareBracket,
                              cst.LeftCurlyBrace, cst.RightCurlyBrace, cst.Asynchronous})


def _blind_to(kinds: frozenset[type], visitor: type) -> bool:
    """Whether a visitor class has no hook for any of these node types (libcst's typed visitor base defines a no-op
    for every one; those do not count)."""
    hooks = (getattr(visitor, f"{verb}_{kind.__name__}", None) for kind in kinds for verb in ("visit", "leave"))
    return all(hook is None or getattr(hook, "_is_no_op", False) for hook in hooks)


_LAYOUT = _layout_types()
# libcst's scope and expression-context visitors (two walks of the whole module, the costly part of its scope
# metadata) have no hook for a layout node: visiting one only records its scope, and nothing asks the scope of a
# comma. They skip the layout (two thirds of a module's nodes); every other node gets the same metadata.
_LAYOUT_BLIND = frozenset(kind for kind in (ScopeVisitor, ExpressionContextVisitor) if _blind_to(_LAYOUT, kind))


def _read_only_visit(self: cst.CSTNode, visitor):  # type: ignore[no-untyped-def]
    """libcst's `CSTNode.visit` for a read-only visitor: the same calls in the same order, no copies (and none of
    the calls that libcst's base visitor would answer with nothing; nor the visits of layout that libcst's scope
    visitors would only record a scope for)."""
    if self.__class__ in _LAYOUT and visitor.__class__ in _LAYOUT_BLIND:
        return self
    hooks = _ATTRIBUTE_HOOKS.get(visitor.__class__)
    if hooks is None:
        hooks = _attribute_hooks(visitor)
    if hooks is _TRANSFORMS:
        return _LIBCST_VISIT(self, visitor)
    if hooks is _BATCHED:
        if self.__class__ is cst.Module and _visits_module_only(visitor):
            visitor.on_visit(self)
            visitor.on_leave(self)
            return self
        hooks = True
    if visitor.on_visit(self):
        fields = _CHILD_FIELDS.get(self.__class__, _UNLEARNED)
        if fields is _UNLEARNED:
            fields = _learn_child_fields(self)
        if fields is None:
            self._visit_and_replace_children(visitor)
        elif hooks is True or (hooks and self.__class__.__name__ in hooks):
            for name in fields:
                value = getattr(self, name)
                if value is None and name == "format_spec":
                    continue  # the one field libcst visits only when present (f"{x}" has no format spec)
                visitor.on_visit_attribute(self, name)
                kind = value.__class__
                if kind is tuple or kind is list:
                    for child in value:
                        child.visit(visitor)
                elif kind not in _NOT_NODES:
                    value.visit(visitor)
                visitor.on_leave_attribute(self, name)
        else:
            for name in fields:
                value = getattr(self, name)
                kind = value.__class__
                if kind is tuple or kind is list:
                    for child in value:
                        child.visit(visitor)
                elif kind not in _NOT_NODES:
                    value.visit(visitor)
    visitor.on_leave(self)
    return self


_READ_ONLY_DEPTH = 0


@contextmanager
def read_only_visits() -> Iterator[None]:
    """While active, libcst visits with a read-only visitor (the metadata providers', the rules') skip the copies.
    Scoped rather than installed for good, so code outside the analysis gets libcst as it is; a visitor that
    transforms always takes libcst's own path."""
    global _READ_ONLY_DEPTH
    if _READ_ONLY_DEPTH == 0:
        cst.CSTNode.visit = _read_only_visit  # type: ignore[method-assign]
    _READ_ONLY_DEPTH += 1
    try:
        yield
    finally:
        _READ_ONLY_DEPTH -= 1
        if _READ_ONLY_DEPTH == 0:
            cst.CSTNode.visit = _LIBCST_VISIT  # type: ignore[method-assign]


# --- positions ---------------------------------------------------------------------------------------------------

_NEWLINE = re.compile(r"\r\n?|\n")


@dataclass
class _OffsetState(CodegenState):
    """libcst's code generation, recording where each node's code starts and ends as character offsets.
    libcst's PositionProvider does the same walk but builds a line and column object per node and splits every
    token on newlines; here rows and columns are computed only for the nodes asked about."""

    offset: int = 0
    ranges: dict = field(default_factory=dict)
    _starts: list = field(default_factory=list)
    popped: str = ""

    def add_indent_tokens(self) -> None:
        self.tokens.extend(self.indent_tokens)
        for token in self.indent_tokens:
            self.offset += len(token)

    def add_token(self, value: str) -> None:
        self.tokens.append(value)
        self.offset += len(value)

    def before_codegen(self, node: cst.CSTNode) -> None:
        self._starts.append(self.offset)

    def after_codegen(self, node: cst.CSTNode) -> None:
        start = self._starts.pop()
        if node not in self.ranges:  # a syntactic position recorded inside wins (as in libcst)
            self.ranges[node] = (start, self.offset)

    def pop_trailing_newline(self) -> None:
        if self.tokens:
            self.popped = self.tokens[-1]  # the offsets already counted it (libcst's positions do too)
        super().pop_trailing_newline()

    @contextmanager
    def record_syntactic_position(self, node: cst.CSTNode, *, start_node: cst.CSTNode | None = None,
                                  end_node: cst.CSTNode | None = None) -> Iterator[None]:
        start = self.offset
        try:
            yield
        finally:
            end = self.offset
            if start_node is not None:
                start = self.ranges[start_node][0]
            if end_node is not None:
                end = self.ranges[end_node][1]
            self.ranges[node] = (start, end)


class _Positions:
    """Each node's span, as libcst's PositionProvider gives it (1-based rows, 0-based columns in code points)."""

    def __init__(self, module: cst.Module) -> None:
        state = _OffsetState(default_indent=module.default_indent, default_newline=module.default_newline)
        module._codegen(state)
        self._ranges = state.ranges
        code = "".join(state.tokens) + state.popped
        self._lines = [0, *(m.end() for m in _NEWLINE.finditer(code))]  # offset where each row starts

    def _point(self, offset: int) -> tuple[int, int]:
        row = bisect_right(self._lines, offset)
        return row, offset - self._lines[row - 1]

    def span(self, node: cst.CSTNode) -> Span:
        start, end = self._ranges[node]
        row, column = self._point(start)
        end_row, end_column = self._point(end)
        return Span(row, column + 1, end_row, end_column + 1)


def names_in(node: cst.CSTNode) -> set[str]:
    """The names an expression reads (the node itself included when it is a name)."""
    return {n.value for n in [node, *descendants(node)] if isinstance(n, cst.Name)}


# a name for a number summed up, not a text or a list built: total_prompt_tokens, n_steps, cost, n_chars, size
COUNTED_NAME = re.compile(r"(?:^|_)(?:tokens?|counts?|total|num|len|length|size|chars|cost|sum)$|^(?:n|num)_", re.I)


def in_except_handler(ctx: "ModuleContext", node: cst.CSTNode) -> bool:
    """Inside an `except` block of its own function: what runs only when something failed."""
    return isinstance(ctx.enclosing(node, (cst.ExceptHandler, cst.FunctionDef)), cst.ExceptHandler)


def short_code(ctx: "ModuleContext", node: cst.CSTNode, limit: int = 60) -> str:
    """The code of `node` on one line, cut to `limit` characters for a message."""
    text = " ".join(ctx.code(node).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def stepping_names(ctx: "ModuleContext", loop: cst.CSTNode) -> set[str]:
    """The names that count the passes of a loop: the index of `for i in range(...)` (or of `enumerate(...)`) and a
    counter bumped in the loop by a number (`iteration += 1`); not the item of `for doc in docs`, nor a list or a
    total grown in the loop (`messages += [...]`)."""
    names: set[str] = set()
    if isinstance(loop, cst.For) and isinstance(loop.iter, cst.Call) and isinstance(loop.iter.func, cst.Name):
        if loop.iter.func.value == "range" and isinstance(loop.target, cst.Name):
            names.add(loop.target.value)
        elif loop.iter.func.value == "enumerate" and isinstance(loop.target, cst.Tuple) and loop.target.elements \
                and isinstance(loop.target.elements[0].value, cst.Name):
            names.add(loop.target.elements[0].value.value)
    for node in ctx.nodes_in(cst.AugAssign, loop):
        if isinstance(node.target, cst.Name) and isinstance(node.operator, (cst.AddAssign, cst.SubtractAssign)) \
                and isinstance(node.value, cst.Integer):
            names.add(node.target.value)
    return names


def read_names(ctx: "ModuleContext", expr: cst.CSTNode) -> Iterator[cst.Name]:
    """The name nodes in `expr` that read a variable (`x` in `x.y`, never the attribute `y`), in source order."""
    for node in descendants(expr):
        if isinstance(node, cst.Name):
            parent = ctx.parent(node)
            if not (isinstance(parent, cst.Attribute) and parent.attr is node):
                yield node


def argument_for(call: cst.Call, param: str, position: int) -> cst.BaseExpression | None:
    """The argument a call gives a parameter: by keyword, else the positional one at `position` (self not counted)."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == param:
            return arg.value
    positional = [a for a in call.args if a.keyword is None and not a.star]
    return positional[position].value if 0 <= position < len(positional) else None


# the list methods that add to a list in place: a history grown this way keeps its earlier entries
LIST_GROWERS = frozenset({"append", "extend", "insert"})


def is_template(value: cst.BaseExpression) -> bool:
    """An f-string or a `"...".format(...)` call: text with values put in at run time."""
    return isinstance(value, cst.FormattedString) or (
        isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value == "format")
