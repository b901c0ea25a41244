"""What a source tree could have put into a prompt: its string templates, tool names and list-shrinking code.

A template is a string as the code writes it, split into literal parts and holes: an f-string's formatted
values, a `.format()` / `%` string's fields, the non-literal operands of a `+` chain. A hole keeps the line
of the expression that fills it and, when that expression is a plain local name, the line that assigned it
(the place that produced the value, which is what a user fixes). Plain literals are templates without holes.

Text files that end up in prompts are templates too (`text_templates`): an agent's memory files (CLAUDE.md,
AGENTS.md), prompt files, hook scripts and configs (.claude/, .codex/), read whole, with shell and template
substitutions (`$(date)`, `${VAR}`, `$VAR`, `{{ name }}`) as holes: for a Claude Code or Codex user these
are the code that builds the prompt.

Bounded: only Python files the checker would walk (`cachelint.check.files.discover`), each under
`MAX_FILE_BYTES`, at most `MAX_FILES` of them; literals shorter than `MIN_LITERAL` characters are skipped.
"""

from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

MAX_FILE_BYTES = 1024 * 1024
MAX_FILES = 5000
MIN_LITERAL = 3
MAX_CONSTANT_CHARS = 64 * 1024
MAX_TEXT_BYTES = 256 * 1024
# text files whose content may reach a prompt: memory / instruction files, prompt templates, hook scripts, configs
TEXT_SUFFIXES = frozenset({".md", ".markdown", ".txt", ".prompt", ".j2", ".jinja", ".jinja2", ".tmpl", ".sh", ".bash",
                           ".zsh", ".js", ".mjs", ".cjs", ".ts", ".json", ".yaml", ".yml", ".toml"})
TEXT_NAMES = frozenset({"CLAUDE.md", "CLAUDE.local.md", "AGENTS.md", "GEMINI.md", ".cursorrules"})
# hidden folders that hold an agent's prompts and hooks; every other hidden folder is skipped
AGENT_FOLDERS = frozenset({".claude", ".codex", ".cursor", ".github", ".gemini"})
SKIPPED_FOLDERS = frozenset({"node_modules", "__pycache__", "venv", "site-packages", "dist", "build", "target"})
_TEXT_HOLE = re.compile(r"\$\((?:[^()]|\([^()]*\))*\)|\$\{[^}\n]*\}|\$[A-Za-z_][A-Za-z0-9_]*|`[^`\n]*`|\{\{[^}\n]*\}\}")
_FIELD = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(?:\*|\d+)?(?:\.(?:\*|\d+))?[diouxXeEfFgGcrsa%]")
_SHRINK_NAMES = re.compile(r"messages|history|msgs|conversation|turns|context|chat", re.I)
_LLM_CALL = re.compile(r"\.(?:chat\.completions|messages|responses|completions)(?:\.with_raw_response|\.with_streaming_response)?\.(?:create|acreate|stream|parse)\(|\b(?:litellm\.)?a?completion\(")


@dataclass(frozen=True, slots=True)
class Hole:
    """A value the code fills in at run time."""

    line: int
    code: str  # the expression's source, e.g. "datetime.now().isoformat()"
    producer_line: int | None = None  # where a plain local name was assigned
    producer_code: str | None = None


@dataclass(slots=True)
class Template:
    file: Path
    line: int
    parts: list[str | Hole]
    text: str = ""  # the literal parts joined (holes dropped): what a quick substring test looks in
    part_lines: list[int] | None = None  # a whole text file: the line each part starts on

    def __post_init__(self) -> None:
        self.text = "\x00".join(p for p in self.parts if isinstance(p, str))

    @property
    def literal_chars(self) -> int:
        return sum(len(p) for p in self.parts if isinstance(p, str))

    def line_at(self, part: int, offset: int) -> int:
        """The file line of a character of a literal part (exact in a text file; else the template's line)."""
        if not self.part_lines:
            return self.line
        text = self.parts[part]
        return self.part_lines[part] + (text.count("\n", 0, offset) if isinstance(text, str) else 0)


    @property
    def has_holes(self) -> bool:
        return any(isinstance(p, Hole) for p in self.parts)


@dataclass(frozen=True, slots=True)
class Site:
    """A line of code of interest: a tool definition, a use of a tool container, a shrinking slice."""

    file: Path
    line: int
    code: str
    kind: str  # tool_name, tool_list, shrink, model, call
    name: str = ""


@dataclass(slots=True)
class TreeIndex:
    root: Path
    files: list[Path] = field(default_factory=list)
    templates: list[Template] = field(default_factory=list)
    sites: list[Site] = field(default_factory=list)
    skipped: int = 0

    def sites_of(self, kind: str, name: str | None = None) -> list[Site]:
        return [s for s in self.sites if s.kind == kind and (name is None or s.name == name)]


def python_files(root: Path) -> list[Path]:
    """The Python files under ROOT as `cachelint check` walks a tree by default (virtualenvs, build and VCS
    folders and .gitignore'd paths skipped), at most MAX_FILES. The linter's own `exclude` lists are not
    applied: code left out of linting (a demo, a corpus of mistakes) still builds prompts."""
    from cachelint.check.config import Config
    from cachelint.check.files import discover

    return [Path(p) for p in discover([root], Config(root=root, include_tests=True))][:MAX_FILES]


def build_index(root: Path, python: list[Path] | None = None, texts: list[Path] | None = None) -> TreeIndex:
    """The index of ROOT's prompt-building code and text files; `python` / `texts`: the files, when the caller
    has walked the tree already (python_files, text_files)."""
    index = TreeIndex(root=root)
    for path in python if python is not None else python_files(root):
        try:
            if os.path.getsize(path) > MAX_FILE_BYTES:
                index.skipped += 1
                continue
            source = path.read_text(encoding="utf-8-sig")
            tree = ast.parse(source, filename=str(path))
        except (OSError, UnicodeDecodeError, SyntaxError, ValueError, RecursionError, MemoryError):
            index.skipped += 1
            continue
        index.files.append(path)
        _Collector(path, source, index, module_constants(tree)).visit(tree)
    for path in texts if texts is not None else text_files(root):
        template = text_template(path)
        if template is None:
            index.skipped += 1
            continue
        index.files.append(path)
        index.templates.append(template)
    return index


def text_files(root: Path) -> list[Path]:
    """The text files under ROOT that may reach a prompt (TEXT_SUFFIXES, TEXT_NAMES), hidden folders other than
    the agents' own and dependency / build folders skipped, at most MAX_FILES."""
    found: list[Path] = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_FOLDERS and (not d.startswith(".") or d in AGENT_FOLDERS))
        for name in sorted(files):
            if name in TEXT_NAMES or (os.path.splitext(name)[1].lower() in TEXT_SUFFIXES and not name.endswith(("-lock.json", ".lock"))):
                found.append(Path(folder) / name)
                if len(found) >= MAX_FILES:
                    return found
    return found


def text_template(path: Path) -> Template | None:
    """A text file as one template: its text with shell / template substitutions as holes (each hole keeps its
    line); None when it is too large, not a regular file or not UTF-8."""
    try:
        if not path.is_file() or path.stat().st_size > MAX_TEXT_BYTES:
            return None
        source = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    if len(source.strip()) < MIN_LITERAL:
        return None
    parts: list[str | Hole] = []
    position = 0
    for match in _TEXT_HOLE.finditer(source):
        parts.append(source[position : match.start()])
        parts.append(Hole(source.count("\n", 0, match.start()) + 1, match.group(0)[:80]))
        position = match.end()
    parts.append(source[position:])
    parts = [p for p in parts if p != ""]
    lines, line = [], 1
    for part in parts:
        lines.append(part.line if isinstance(part, Hole) else line)
        line = part.line if isinstance(part, Hole) else line + part.count("\n")
    return Template(path, 1, parts, part_lines=lines)


def _segment(source_lines: list[str], node: ast.AST) -> str:
    """The node's source on its first line, shortened (enough to name it in a message)."""
    line = source_lines[node.lineno - 1] if 0 < node.lineno <= len(source_lines) else ""  # type: ignore[attr-defined]
    start = node.col_offset  # type: ignore[attr-defined]
    end = node.end_col_offset if node.end_lineno == node.lineno else len(line)  # type: ignore[attr-defined]
    text = line.encode("utf-8")[start:end].decode("utf-8", "replace").strip()
    return text if len(text) <= 80 else text[:77] + "..."


class _Collector(ast.NodeVisitor):
    """One pass over a module: templates, tool definitions and containers, shrinking slices, call sites."""

    def __init__(self, path: Path, source: str, index: TreeIndex, constants: dict[str, str] | None = None) -> None:
        self.path, self.index, self.constants = path, index, constants or {}
        self.lines = source.splitlines()
        self.scopes: list[list[ast.stmt]] = []  # enclosing function bodies, for local producers
        self.inside: set[int] = set()  # ids of nodes already taken as part of a bigger template

    # -- scopes --

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.scopes.append(node.body)
        self.generic_visit(node)
        self.scopes.pop()

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]

    # -- templates --

    def visit_JoinedStr(self, node: ast.JoinedStr) -> None:
        if id(node) not in self.inside:
            self._add(node, self._fstring_parts(node))
        self.generic_visit(node)

    def visit_BinOp(self, node: ast.BinOp) -> None:
        if id(node) not in self.inside:
            if isinstance(node.op, ast.Add):
                operands = _flatten_add(node)
                if any(_is_text(o) for o in operands):
                    self.inside.update(id(n) for n in ast.walk(node) if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Add))
                    parts: list[str | Hole] = []
                    for operand in operands:
                        self.inside.add(id(operand))
                        parts += self._operand_parts(operand)
                    self._add(node, parts)
            elif isinstance(node.op, ast.Mod) and isinstance(node.left, ast.Constant) and isinstance(node.left.value, str):
                self.inside.add(id(node.left))
                self._add(node, self._percent_parts(node.left.value, node.right))
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "format" and isinstance(func.value, ast.Constant) and isinstance(func.value.value, str):
            self.inside.add(id(func.value))
            self._add(node, self._format_parts(func.value.value, node))
        segment = _segment(self.lines, node)
        if _LLM_CALL.search(segment + "("):
            self.index.sites.append(Site(self.path, node.lineno, segment, "call"))
        self._shrink_call(node)
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str) and id(node) not in self.inside and len(node.value) >= MIN_LITERAL:
            self._add(node, [node.value])

    def _add(self, node: ast.AST, parts: list[str | Hole]) -> None:
        merged: list[str | Hole] = []
        for part in parts:
            if isinstance(part, str) and merged and isinstance(merged[-1], str):
                merged[-1] += part
            elif part != "":
                merged.append(part)
        literal = sum(len(p) for p in merged if isinstance(p, str))
        if literal >= MIN_LITERAL:
            self.index.templates.append(Template(self.path, node.lineno, merged))  # type: ignore[attr-defined]

    def _hole(self, expr: ast.AST) -> Hole | str:
        if isinstance(expr, ast.Name) and expr.id in self.constants and not self._assigned_locally(expr.id):
            return self.constants[expr.id]  # a module constant is literal text of the template
        producer = self._producer(expr)
        return Hole(expr.lineno, _segment(self.lines, expr), *(producer or (None, None)))  # type: ignore[attr-defined]

    def _assigned_locally(self, name: str) -> bool:
        return bool(self.scopes) and any(
            isinstance(t, ast.Name) and t.id == name
            for stmt in ast.walk(ast.Module(body=self.scopes[-1], type_ignores=[])) if isinstance(stmt, ast.Assign) for t in stmt.targets)

    def _producer(self, expr: ast.AST) -> tuple[int, str] | None:
        """Where a plain local name used in a hole was last assigned before the hole, in the same function."""
        if not isinstance(expr, ast.Name) or not self.scopes:
            return None
        found = None
        for stmt in ast.walk(ast.Module(body=self.scopes[-1], type_ignores=[])):
            if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.lineno < expr.lineno:
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                if any(isinstance(t, ast.Name) and t.id == expr.id for t in targets) and stmt.value is not None:
                    if found is None or stmt.lineno > found[0]:
                        found = (stmt.value.lineno, _segment(self.lines, stmt.value))
        return found

    def _fstring_parts(self, node: ast.JoinedStr) -> list[str | Hole]:
        parts: list[str | Hole] = []
        for value in node.values:
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                parts.append(value.value)
                self.inside.add(id(value))
            elif isinstance(value, ast.FormattedValue):
                parts.append(self._hole(value.value))
                self.inside.add(id(value.value))
        return parts

    def _operand_parts(self, operand: ast.AST) -> list[str | Hole]:
        if isinstance(operand, ast.Constant) and isinstance(operand.value, str):
            return [operand.value]
        if isinstance(operand, ast.JoinedStr):
            self.inside.add(id(operand))
            return self._fstring_parts(operand)
        return [self._hole(operand)]

    def _percent_parts(self, text: str, right: ast.AST) -> list[str | Hole]:
        args = right.elts if isinstance(right, ast.Tuple) else [right]
        parts: list[str | Hole] = []
        position, used = 0, 0
        for match in _FIELD.finditer(text):
            parts.append(text[position : match.start()])
            if match.group(0) == "%%":
                parts.append("%")
            else:
                arg = args[used] if used < len(args) else right
                parts.append(self._hole(arg))
                used += 1
            position = match.end()
        parts.append(text[position:])
        return parts

    def _format_parts(self, text: str, call: ast.Call) -> list[str | Hole]:
        import string

        keywords = {k.arg: k.value for k in call.keywords if k.arg}
        parts: list[str | Hole] = []
        auto = 0
        try:
            fields = list(string.Formatter().parse(text))
        except ValueError:
            return [text]
        for literal, name, _spec, _conv in fields:
            parts.append(literal)
            if name is None:
                continue
            key = re.split(r"[.\[]", name)[0]
            arg: ast.AST = call
            if key == "" and auto < len(call.args):
                arg, auto = call.args[auto], auto + 1
            elif key.isdigit() and int(key) < len(call.args):
                arg = call.args[int(key)]
            elif key in keywords:
                arg = keywords[key]
            parts.append(self._hole(arg))
        return parts

    # -- tools, shrinking, assignments --

    def visit_Dict(self, node: ast.Dict) -> None:
        for key, value in zip(node.keys, node.values):
            if isinstance(key, ast.Constant) and key.value == "name" and isinstance(value, ast.Constant) and isinstance(value.value, str):
                self.index.sites.append(Site(self.path, value.lineno, _segment(self.lines, node), "tool_name", value.value))
                self.inside.add(id(value))
        self.generic_visit(node)

    def visit_Assign(self, node: ast.Assign) -> None:
        self._note_container(node.targets, node.value, node.lineno)
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self._note_container([node.target], node.value, node.lineno)
        self.generic_visit(node)

    def _note_container(self, targets: list[ast.expr], value: ast.AST, line: int) -> None:
        """A name bound to a dict or list literal that holds tool definitions: where the tool list lives."""
        if not isinstance(value, (ast.Dict, ast.List, ast.Tuple)):
            return
        names = [t.id for t in targets if isinstance(t, ast.Name)]
        if not names:
            return
        tool_names = {
            v.value for d in ast.walk(value) if isinstance(d, ast.Dict)
            for k, v in zip(d.keys, d.values)
            if isinstance(k, ast.Constant) and k.value == "name" and isinstance(v, ast.Constant) and isinstance(v.value, str)
        }
        if tool_names:
            for name in names:
                self.index.sites.append(Site(self.path, line, ",".join(sorted(tool_names)), "tool_container", name))

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Load):
            self.index.sites.append(Site(self.path, node.lineno, _segment(self.lines, node), "use", node.id))

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if isinstance(node.ctx, ast.Load):
            self.index.sites.append(Site(self.path, node.lineno, _segment(self.lines, node), "use", node.attr))
        self.generic_visit(node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.module:
            self.index.sites.append(Site(self.path, node.lineno, node.module, "import", node.module.split(".")[-1]))
        for alias in node.names:  # from . import prompts: a module imported by name
            self.index.sites.append(Site(self.path, node.lineno, alias.name, "import", alias.name))

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self.index.sites.append(Site(self.path, node.lineno, alias.name, "import", alias.name.split(".")[-1]))

    def visit_comprehension(self, node: ast.comprehension) -> None:
        self._iterated(node.iter)
        self.generic_visit(node)

    def visit_For(self, node: ast.For) -> None:
        self._iterated(node.iter)
        self.generic_visit(node)

    def _iterated(self, source: ast.AST) -> None:
        """A name iterated (directly, through .values() / .items() / .keys(), or sorted() / list()): where a list
        is built from it, and so where its order is decided."""
        if isinstance(source, ast.Call):
            func = source.func
            if isinstance(func, ast.Attribute) and func.attr in ("values", "items", "keys"):
                source = func.value
            elif isinstance(func, ast.Name) and func.id in ("sorted", "list", "reversed", "set", "filter") and source.args:
                source = source.args[-1]
        name = _name_of(source)
        if name:
            self.index.sites.append(Site(self.path, source.lineno, _segment(self.lines, source), "iterate", name))

    def visit_Subscript(self, node: ast.Subscript) -> None:
        target = _name_of(node.value)
        if isinstance(node.slice, ast.Slice) and target and _SHRINK_NAMES.search(target):
            lower = node.slice.lower
            if lower is not None and not (isinstance(lower, ast.Constant) and lower.value in (0, None)):
                self.index.sites.append(Site(self.path, node.lineno, _segment(self.lines, node), "shrink", target))
        self.generic_visit(node)

    def visit_Delete(self, node: ast.Delete) -> None:
        for target in node.targets:
            name = _name_of(target.value) if isinstance(target, ast.Subscript) else None
            if name and _SHRINK_NAMES.search(name):
                self.index.sites.append(Site(self.path, node.lineno, _segment(self.lines, node), "shrink", name))
        self.generic_visit(node)

    def _shrink_call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in ("append", "insert", "extend", "remove"):
            for arg in node.args:  # a tool put into (or taken out of) a list at run time
                for d in ast.walk(arg):
                    if isinstance(d, ast.Dict):
                        for key, value in zip(d.keys, d.values):
                            if isinstance(key, ast.Constant) and key.value == "name" and isinstance(value, ast.Constant) and isinstance(value.value, str):
                                self.index.sites.append(Site(self.path, node.lineno, _segment(self.lines, node), "tool_append", value.value))
        if isinstance(func, ast.Attribute) and func.attr in ("pop", "popleft", "remove", "clear"):
            name = _name_of(func.value)
            first = func.attr != "pop" or (node.args and isinstance(node.args[0], ast.Constant) and node.args[0].value == 0)
            if name and first and _SHRINK_NAMES.search(name):
                self.index.sites.append(Site(self.path, node.lineno, _segment(self.lines, node), "shrink", name))


def module_constants(tree: ast.Module) -> dict[str, str]:
    """Module-level names bound once to text the code spells out (`RULES = "..." * 3`, `A = B + "..."`)."""
    constants: dict[str, str] = {}
    bound: dict[str, int] = {}
    for stmt in tree.body:
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target] if isinstance(stmt, ast.AnnAssign) else []
        for target in targets:
            if isinstance(target, ast.Name):
                bound[target.id] = bound.get(target.id, 0) + 1
                value = _text_value(stmt.value, constants) if stmt.value is not None else None  # type: ignore[union-attr]
                if value is not None:
                    constants[target.id] = value
    return {name: text for name, text in constants.items() if bound.get(name) == 1}


def _text_value(node: ast.AST, known: dict[str, str], budget: int = MAX_CONSTANT_CHARS) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name):
        return known.get(node.id)
    if isinstance(node, ast.JoinedStr) and all(isinstance(v, ast.Constant) for v in node.values):
        return "".join(str(v.value) for v in node.values)  # type: ignore[attr-defined]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _text_value(node.left, known), _text_value(node.right, known)
        return left + right if left is not None and right is not None and len(left) + len(right) <= budget else None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        text, times = (node.left, node.right) if isinstance(node.right, ast.Constant) else (node.right, node.left)
        value = _text_value(text, known)
        if value is not None and isinstance(times, ast.Constant) and isinstance(times.value, int) and 0 <= len(value) * times.value <= budget:
            return value * times.value
    return None


def _flatten_add(node: ast.AST) -> list[ast.AST]:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _flatten_add(node.left) + _flatten_add(node.right)
    return [node]


def _is_text(node: ast.AST) -> bool:
    return isinstance(node, ast.JoinedStr) or (isinstance(node, ast.Constant) and isinstance(node.value, str))


def _name_of(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None
