"""The linted project's other modules: a name imported from a module of the same tree, followed to its
definition there.

Bounded: only `from <module> import <name>` of a module that is a file of the tree (relative imports, or
absolute ones found beside the importing file's top package or the working directory), one hop from the
linted file (a re-export is followed once more), files under 512 KB, at most 64 parsed modules kept per
process. A module's parse is kept while its size and modification time stay the same.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

import libcst as cst

from cachelint.check.module import ModuleContext

MAX_BYTES = 512 * 1024
MAX_MODULES = 64
_MODULES: dict[str, tuple[tuple[int, int], ModuleContext | None]] = {}
_IMPORT_FROM = re.compile(r"^[ \t]*from[ \t]+(\.*)([\w.]*)[ \t]+import[ \t]+\(?([\w., \t]*)", re.M)
_IMPORT = re.compile(r"^[ \t]*import[ \t]+([\w.]+)[ \t]+as[ \t]+\w+", re.M)


_READS: ContextVar[set[str] | None] = ContextVar("cachelint_reads", default=None)


@contextmanager
def recording_reads() -> Iterator[set[str]]:
    """Collects the tree's other files the analysis reads while active (modules it parses, callers a search
    found): a cached result is stale once one of them changes (cachelint.check.cache keeps their hashes)."""
    reads: set[str] = set()
    token = _READS.set(reads)
    try:
        yield reads
    finally:
        _READS.reset(token)


def note_read(path: str | os.PathLike) -> None:
    """Record that the analysis under way read `path` (nothing when no recording is active)."""
    reads = _READS.get()
    if reads is not None:
        reads.add(os.path.abspath(path))


def module_file(importer: str, module: str, level: int) -> Path | None:
    """The file of `module` (`from <level dots><module> import ...` in `importer`), if it is in the tree."""
    here = Path(os.path.abspath(importer)).parent
    parts = [p for p in module.split(".") if p]
    if level:
        base = here
        for _ in range(level - 1):
            base = base.parent
        roots = [base]
    else:
        top = here
        levels = [here]
        while (top / "__init__.py").is_file() and top.parent != top:
            top = top.parent
            levels.append(top)
        # the top of the package first, then each package level below it: a `src/__init__.py` puts the top above the
        # folder `memos.` is imported from (`src/memos/...`)
        roots = list(dict.fromkeys([top, *reversed(levels), Path.cwd()]))
    for root in roots:
        if not parts:
            candidates = [root / "__init__.py"]
        else:
            candidates = [root.joinpath(*parts).with_suffix(".py"), root.joinpath(*parts, "__init__.py")]
        for candidate in candidates:
            if candidate.is_file() and os.path.abspath(candidate) != os.path.abspath(importer):
                return candidate
    return None


def module_context(path: Path) -> ModuleContext | None:
    """The parsed module at `path` with its metadata, or None when it cannot be read, parsed or is too big."""
    key = os.path.abspath(path)
    try:
        stat = os.stat(key)
    except OSError:
        return None
    note_read(key)
    stamp = (stat.st_mtime_ns, stat.st_size)
    cached = _MODULES.get(key)
    if cached is not None and cached[0] == stamp:
        return cached[1]
    ctx = None
    if stat.st_size <= MAX_BYTES:
        try:
            source = Path(key).read_bytes().decode("utf-8-sig")
            ctx = ModuleContext(source, key)
        except (OSError, UnicodeDecodeError, cst.ParserSyntaxError, RecursionError, ValueError):
            ctx = None
    if len(_MODULES) >= MAX_MODULES:
        _MODULES.pop(next(iter(_MODULES)))
    _MODULES[key] = (stamp, ctx)
    return ctx


def _dotted(node: cst.BaseExpression | None) -> str:
    if node is None:
        return ""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return f"{_dotted(node.value)}.{node.attr.value}"
    return ""


def imported_definition(ctx: ModuleContext, node: cst.ImportFrom, local: str, hops: int = 2):
    """(module context, definition) for the name bound as `local` by `from ... import ...` `node`: the
    value assigned to it at the top of its module, or its function; None when it is not in the tree."""
    if isinstance(node.names, cst.ImportStar):
        return None
    original = None
    for alias in node.names:
        bound = alias.asname.name.value if alias.asname is not None and isinstance(alias.asname.name, cst.Name) else _dotted(alias.name)
        if bound == local:
            original = _dotted(alias.name)
    if original is None:
        return None
    path = module_file(ctx.filename, _dotted(node.module), len(node.relative))
    other = module_context(path) if path is not None else None
    if other is None:
        return None
    return top_level_definition(other, original, hops)


def imported_function(ctx: ModuleContext, call: cst.Call):
    """(module context, function) for `name(...)` where `name` is a function imported by `from ... import name` from a
    module of the linted tree; None otherwise."""
    if not isinstance(call.func, cst.Name):
        return None
    for binding, _ in ctx.assigned_values(call.func):
        if isinstance(binding, cst.ImportFrom):
            found = imported_definition(ctx, binding, call.func.value)
            if found is not None and isinstance(found[1], cst.FunctionDef):
                return found
    return None


def star_imported_definition(ctx: ModuleContext, name: str):
    """(module context, definition) for a name the module binds nowhere but may take from `from <module> import *`
    of a module of the tree (the last such import that defines it, as Python would bind it); None otherwise."""
    found = None
    for stmt in ctx.module.body:
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            if isinstance(small, cst.ImportFrom) and isinstance(small.names, cst.ImportStar):
                path = module_file(ctx.filename, _dotted(small.module), len(small.relative))
                other = module_context(path) if path is not None else None
                definition = top_level_definition(other, name, 1) if other is not None else None
                found = definition or found
    return found


def module_attribute_definition(ctx: ModuleContext, node: cst.CSTNode, local: str, attr: str):
    """(module context, definition) for `<local>.<attr>` where `local` names a module of the tree:
    `from . import prompts` / `from app import prompts` / `import app.prompts as prompts`."""
    path = None
    if isinstance(node, cst.ImportFrom) and not isinstance(node.names, cst.ImportStar):
        for alias in node.names:
            bound = alias.asname.name.value if alias.asname is not None and isinstance(alias.asname.name, cst.Name) else _dotted(alias.name)
            if bound == local:
                base = _dotted(node.module)
                path = module_file(ctx.filename, f"{base}.{_dotted(alias.name)}" if base else _dotted(alias.name), len(node.relative))
    elif isinstance(node, cst.Import):
        for alias in node.names:
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name) and alias.asname.name.value == local:
                path = module_file(ctx.filename, _dotted(alias.name), 0)
    other = module_context(path) if path is not None else None
    return top_level_definition(other, attr, 2) if other is not None else None


def top_level_definition(ctx: ModuleContext, name: str, hops: int):
    found = None
    for stmt in ctx.module.body:
        if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)) and stmt.name.value == name:
            found = (ctx, stmt)
        elif isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if isinstance(small, cst.Assign) and any(isinstance(t.target, cst.Name) and t.target.value == name for t in small.targets):
                    found = (ctx, small.value)
                elif isinstance(small, cst.AnnAssign) and small.value is not None and isinstance(small.target, cst.Name) and small.target.value == name:
                    found = (ctx, small.value)
                elif isinstance(small, cst.ImportFrom) and hops > 1:
                    again = imported_definition(ctx, small, name, hops - 1)  # a re-export: from .prompts import SYSTEM
                    if again is not None:
                        found = again
    return found


def dependencies(source: str, filename: str) -> list[Path]:
    """The tree's files whose definitions an analysis of this module may read (its `from ... import`s)."""
    found: dict[str, Path] = {}
    candidates: list[tuple[str, int]] = []
    for match in _IMPORT_FROM.finditer(source):
        level, module = len(match.group(1)), match.group(2)
        candidates.append((module, level))
        for name in match.group(3).split(","):  # from . import prompts: the submodule, too
            name = name.strip().split(" ")[0]
            if name.isidentifier():
                candidates.append((f"{module}.{name}" if module else name, level))
    candidates += [(m.group(1), 0) for m in _IMPORT.finditer(source)]
    for module, level in candidates:
        path = module_file(filename, module, level)
        if path is not None:
            found.setdefault(os.path.abspath(path), path)
    return list(found.values())
