"""The tree that holds a linted file, searched by text for facts of the project rather than of the module in
sight: whether any file sets an Anthropic breakpoint, which files call a function, whether the app keeps its
data in a store that gives keys back in its own order.

Bounded: the tree's .py files as `cachelint check` walks it (virtualenvs, build folders and .gitignore'd paths
skipped), at most MAX_TREE_FILES of them, each up to MAX_FILE_BYTES. A search is remembered MEMO_SECONDS (a CLI
run is one search; an editor's server searches again as files are added and edited), and a search keyed by the
tree's stamp is made again as soon as a file changes.
"""

from __future__ import annotations

import bisect
import os
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from cachelint.errors import CachelintError

MAX_TREE_FILES = 4000
MAX_FILE_BYTES = 512 * 1024
MEMO_SECONDS = 30.0
_FILES: dict[str, tuple[float, list[str]]] = {}
_FIRST: dict[tuple[str, int, str], tuple[float, tuple[str | None, list[str]]]] = {}


def recalled(memo: dict, key: object) -> Any:
    """A tree search's result while it is younger than MEMO_SECONDS, else None."""
    kept = memo.get(key)
    if kept is None or time.monotonic() - kept[0] > MEMO_SECONDS:
        return None
    return kept[1]


def remember(memo: dict, key: object, value: Any) -> Any:
    if len(memo) >= 256:
        memo.clear()
    memo[key] = (time.monotonic(), value)
    return value


def root_of(filename: str) -> str:
    """The working directory when it holds the file (where the linter is run on a tree; namespace packages
    have no `__init__.py` to climb), else the folder that holds the file's top package."""
    path = os.path.abspath(filename)
    top = Path(path).parent
    if not (top / "__init__.py").is_file() and (top.parent / "__init__.py").is_file():
        top = top.parent  # a folder of modules with no `__init__.py` inside a package (`llms/edit/prompts.py`): that package's
    while (top / "__init__.py").is_file() and top.parent != top:
        top = top.parent
    cwd = os.getcwd()
    inside = str(top) == cwd or str(top).startswith(cwd.rstrip(os.sep) + os.sep)
    if inside and len(Path(os.path.relpath(top, cwd)).parts) <= 2:  # never a far-away folder (a home directory)
        return cwd
    if path.startswith(cwd.rstrip(os.sep) + os.sep) and cwd.startswith(str(top).rstrip(os.sep) + os.sep):
        return cwd  # a checkout with an `__init__.py` at its root: the climb went above the tree being linted
    return str(top)


def files(root: str) -> list[str]:
    cached = recalled(_FILES, root)
    if cached is not None:
        return cached
    from cachelint.check.config import Config
    from cachelint.check.files import discover

    try:
        found = discover([Path(root)], Config(root=Path(root), include_tests=True))
    except CachelintError:
        found = []
    return remember(_FILES, root, [os.path.abspath(p) for p in found[:MAX_TREE_FILES]])


def texts(root: str) -> Iterator[tuple[str, str]]:
    """(path, text) of the tree's .py files up to MAX_FILE_BYTES each."""
    for path in files(root):
        try:
            if os.path.getsize(path) > MAX_FILE_BYTES:
                continue
            yield path, Path(path).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue


def stamp(root: str) -> int:
    """A cheap signature of the tree's files: their paths, sizes and modification times."""
    stamps = []
    for path in files(root):
        try:
            stat = os.stat(path)
        except OSError:
            continue
        stamps.append((path, stat.st_mtime_ns, stat.st_size))
    return hash(tuple(stamps))


def first_file(filename: str, name: str, test: Callable[[str, str], bool]) -> str | None:
    """The first file of the tree that holds `filename` whose path and text pass `test` (a search called `name`), or
    None. The answer rests on the file found, or on every file when none is: each is noted as read
    (project.note_read), so a cached result is judged again when one of them changes. A source with no file (stdin,
    an example) has no tree: None."""
    return tree_pass(filename, _FIRST, lambda root: _search(root, test), name)


def _search(root: str, test: Callable[[str, str], bool]) -> tuple[str | None, list[str]]:
    read: list[str] = []
    for path, text in texts(root):
        read.append(path)
        if test(path, text):
            return path, [path]
    return None, read


_CALLED: dict[str, tuple[float, dict[str, list[str]]]] = {}
# a call of a name (`f(`, `obj.f(`; not `def f(`) or a bound method handed on (`to_thread(obj.f, ...)`)
_CALL = re.compile(r"(?<!def )\b([A-Za-z_]\w*)\s*\(|\.([A-Za-z_]\w*)\s*,")


def files_calling(root: str, name: str) -> list[str]:
    """The tree's files whose text calls `name`, in the tree's order: one pass over the tree builds an index of every
    called name (kept MEMO_SECONDS, as the file list is), so asking for many names reads each file once."""
    index = recalled(_CALLED, root)
    if index is None:
        index = {}
        for path, text in texts(root):
            for called in {a or b for a, b in _CALL.findall(text)}:
                index.setdefault(called, []).append(path)
        index = remember(_CALLED, root, index)
    return index.get(name, [])


_MENTIONS: dict[tuple[str, int], tuple[float, tuple[dict[str, int], list[str]]]] = {}
_WORD = re.compile(r"(?<!def )\b[A-Za-z_]\w*\b")


def mentions_outside_tests(filename: str) -> dict[str, int] | None:
    """How often each identifier is written in the tree's modules that are not tests (a `def name` not counted), or
    None for a source with no file."""
    from cachelint.check.config import test_path_below

    def count(root: str) -> tuple[dict[str, int], list[str]]:
        counts: dict[str, int] = {}
        read: list[str] = []
        for path, text in texts(root):
            read.append(path)
            if test_path_below(path, root):
                continue
            for word in _WORD.findall(text):
                counts[word] = counts.get(word, 0) + 1
        return counts, read

    return tree_pass(filename, _MENTIONS, count)


def tree_pass(filename: str, memo: dict, build: Callable[[str], tuple[Any, list[str]]], name: str | None = None) -> Any:
    """What `build(root)` makes in one pass over the tree that holds `filename` (with the files it read), kept while
    the tree is unchanged (one answer per `name` too, when the pass asks about one); every file read is noted
    (project.note_read), so a cached result is judged again when one of them changes. None for a source with no file."""
    from cachelint.check.project import note_read

    if not os.path.isfile(filename):
        return None
    root = root_of(filename)
    key = (root, stamp(root)) if name is None else (root, stamp(root), name)
    cached = recalled(memo, key)
    if cached is None:
        cached = remember(memo, key, build(root))
    result, read = cached
    for path in read:
        note_read(path)
    return result


def first_match(filename: str, pattern: re.Pattern[str], test: Callable[[str, str], bool] = lambda path, text: True) -> tuple[str, int] | None:
    """(path relative to the tree, line) of the first match of `pattern` in the tree's files that also pass
    `test`, or None."""
    found = first_file(filename, pattern.pattern, lambda path, text: pattern.search(text) is not None and test(path, text))
    if found is None:
        return None
    text = Path(found).read_text(encoding="utf-8", errors="replace")
    match = pattern.search(text)
    line = text.count("\n", 0, match.start()) + 1 if match else 1
    return os.path.relpath(found, root_of(filename)), line


_GROWN: dict[tuple[str, str], tuple[float, tuple[bool, list[str]]]] = {}
MAX_CALLERS = 12  # calls of one function read before its callers are taken to do anything


def grown_by_every_caller(filename: str, name: str, hops: int = 1) -> bool:
    """Whether every call of `name` in the tree's modules outside the tests adds what it returns to a list, as one new
    turn: `history.extend(adapter.format_tool_results(results))`, `msg = to_message(result)` then
    `messages.append(msg)`, or `return format_tool_message(result)` in a function whose own callers do (`hops` such
    wrappers). A function that converts the newest turn once, when the loop appends it, not a converter of stored
    turns run for every request. False when nothing outside the tests calls it, or a call does anything else."""
    from cachelint.check.config import test_path_below
    from cachelint.check.project import note_read

    if not os.path.isfile(filename):
        return False
    root = root_of(filename)
    key = (root, name, hops)
    cached = recalled(_GROWN, key)
    if cached is None:
        cached = remember(_GROWN, key, _grown(root, name, hops, test_path_below))
    found, read = cached
    for path in read:
        note_read(path)
    return found


def _grown(root: str, name: str, hops: int, test_path_below) -> tuple[bool, list[str]]:
    call = re.compile(rf"(?<!def )(?<![\w.])(?:[A-Za-z_][\w.]*\.)?{re.escape(name)}\s*\(")
    read: list[str] = []
    calls = 0
    for path in files_calling(root, name):
        if test_path_below(path, root):
            continue
        read.append(path)
        try:
            lines = Path(path).read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            return False, read
        for number, line in enumerate(lines):
            match = call.search(line)
            if match is None:
                continue
            calls += 1
            if calls > MAX_CALLERS:
                return False, read
            head = line[:match.start()]
            if _converts_each_item(lines, number, line[match.end():]):
                return False, read  # `for msg in history: messages.append(fmt.format_assistant_message(msg))`: every stored turn
            if re.search(r"\.(?:append|extend)\(\s*(?:await\s+)?$", head):
                continue  # history.extend(adapter.format_tool_results(results))
            bound = re.match(r"\s*([A-Za-z_]\w*)\s*(?::[^=]+)?=\s*(?:await\s+)?$", head)
            if bound and re.search(rf"\.(?:append|extend)\(\s*{bound.group(1)}\s*\)|\+=\s*\[?\s*{bound.group(1)}\b",
                                   "\n".join(lines[number + 1:number + 60])):
                continue  # msg = to_message(result) ... messages.append(msg)
            if re.match(r"\s*return\s+(?:await\s+)?$", head) and hops > 0:
                outer = enclosing_def(lines, number)
                if outer == name:
                    continue  # a module function wrapping the method of its name: its own calls are judged here
                if outer is not None:
                    found, more = _grown(root, outer, hops - 1, test_path_below)
                    read.extend(more)
                    if found:
                        continue
            return False, read
    return calls > 0, read


def _converts_each_item(lines: list[str], number: int, arguments: str) -> bool:
    """The call at line `number` is inside a `for` loop (of its function) and is handed the loop's variable: it converts
    each item of a collection, such as the stored turns of a history, not the newest turn once."""
    indent = len(lines[number]) - len(lines[number].lstrip())
    for line in reversed(lines[:number]):
        stripped = line.lstrip()
        depth = len(line) - len(stripped)
        if not stripped or depth >= indent:
            continue
        indent = depth
        if re.match(r"(?:async\s+)?def\s", stripped) or re.match(r"class\s", stripped):
            return False
        loop = re.match(r"(?:async\s+)?for\s+(.+?)\s+in\s", stripped)
        if loop and any(re.search(rf"\b{re.escape(name)}\b", arguments) for name in re.findall(r"[A-Za-z_]\w*", loop.group(1))):
            return True
    return False


def enclosing_def(lines: list[str], number: int) -> str | None:
    """The name of the function whose body holds line `number` (the nearest `def` above it, indented less)."""
    indent = len(lines[number]) - len(lines[number].lstrip())
    for line in reversed(lines[:number]):
        match = re.match(r"(\s*)(?:async\s+)?def\s+([A-Za-z_]\w*)", line)
        if match and len(match.group(1)) < indent:
            return match.group(2)
    return None


# a body that hands rows back newest first, or turns a newest-first read around: a reversal, a backwards file read,
# a Redis list read from its head after `lpush`, a descending order
_NEWEST_FIRST = re.compile(r"\[::-1\]|\breversed\(|\.reverse\(\)|ReadBackwards|\blrange\(|\.desc\(\)|\bdesc\(|order_by\(\s*[\"']-"
                           r"|\[-\s*[A-Za-z_]\w*\s*:\s*\]")


def reads_newest_first(filename: str, method: str, keyword: str | None = None) -> bool:
    """Whether a definition of `method` in the tree (`def read(self, lines)` of a message store; with `keyword`, one
    that takes a parameter of that name) reads the newest rows: its body reverses them, reads a file backwards, slices
    off the last n, or orders them descending. The tree is read once for every such definition, whatever is asked."""
    names = tree_pass(filename, _NEWEST, _newest_first_definitions) or frozenset()
    return any(name == method and (keyword is None or keyword in params) for name, params in names)


_NEWEST: dict[tuple[str, int], tuple[float, tuple[frozenset[tuple[str, frozenset[str]]], list[str]]]] = {}


def _newest_first_definitions(root: str) -> tuple[frozenset[tuple[str, frozenset[str]]], list[str]]:
    """(name, parameter names) of the functions of the tree whose body holds a newest-first read (_NEWEST_FIRST), and
    the files read. A call that asks `read(lines=8)` is answered by a `def read(self, lines)`, not by a log viewer's
    `def read(self, n=50)`."""
    names: set[tuple[str, frozenset[str]]] = set()
    read: list[str] = []
    for path, text in texts(root):
        read.append(path)
        if not _NEWEST_FIRST.search(text):
            continue
        lines = text.splitlines()
        offsets = [0]
        for line in lines:
            offsets.append(offsets[-1] + len(line) + 1)
        for match in _NEWEST_FIRST.finditer(text):
            number = min(bisect.bisect_right(offsets, match.start()) - 1, len(lines) - 1)
            owner = _enclosing_def_line(lines, number)
            if owner is not None:
                signature = re.match(r"\s*(?:async\s+)?def\s+([A-Za-z_]\w*)\s*\(([^)]*)", owner)
                if signature:
                    params = frozenset(re.findall(r"([A-Za-z_]\w*)\s*(?::[^,=]*)?(?:=[^,]*)?(?:,|$)", signature.group(2)))
                    names.add((signature.group(1), params))
    return frozenset(names), read


def _enclosing_def_line(lines: list[str], number: int) -> str | None:
    """The `def` line (and the next ones, for a signature over several lines) of the function that holds line `number`."""
    indent = len(lines[number]) - len(lines[number].lstrip())
    for index in range(number - 1, -1, -1):
        line = lines[index]
        match = re.match(r"(\s*)(?:async\s+)?def\s+", line)
        if match and len(match.group(1)) < indent:
            return " ".join(part.strip() for part in lines[index:index + 8])
    return None
