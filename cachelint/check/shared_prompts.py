"""One prompt renderer that many modules call: what varies inside it is reported once, where it is made.

`load_and_render_prompt(template, context)` adds the clock to the context of every template it renders, and a
dozen modules of the project call it to build their system prompts. Followed from each caller, the same clock read
would be reported a dozen times, once at each call, while the fix is one line in the renderer.

A module-level function named for prompts, templates or instructions (or taking a parameter so named), called from
functions in MIN_CALLERS or more places in other modules of the tree (tests left out), is a shared renderer. What
varies inside it is reported in its own module, at the value (a stand-in system prompt built by the function's
returns, `likely`: its callers say how the text is sent), and the callers' walks leave those values out.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import libcst as cst

from cachelint.check import tree
from cachelint.check.module import ModuleContext

MIN_CALLERS = 2  # calls, in other modules, of a renderer shared across the project
SHARED_KINDS = frozenset({"volatile", "counter"})  # what a shared renderer is judged on: a value that changes per call
PROMPTISH = re.compile(r"prompt|template|instruction", re.I)
# what may vary in a renderer's own text: a clock, a random id, a listing, an unsorted dump, a set
SUSPECT = re.compile(r"\.now\(|\btime\(\)|\buuid\d?\(|\brandom\.|\btoken_hex\(|\blistdir\(|\bglob\(|\biterdir\(|\bjson\.dumps\(|\bset\(")

_SHARED: dict = {}  # (file, function name) -> the calls of a shared renderer in other modules, or ()


def shared_renderer(ctx: ModuleContext, function: cst.FunctionDef) -> tuple[str, ...]:
    """The places (`path:line`) other modules call `function` from, when it is a shared prompt renderer; else ()."""
    if ctx.enclosing(function, (cst.FunctionDef, cst.ClassDef)) is not None:
        return ()  # a method or a nested helper: its callers are not found by name
    name = function.name.value
    params = [p.name.value for p in (*function.params.posonly_params, *function.params.params, *function.params.kwonly_params)]
    if not (PROMPTISH.search(name) or any(PROMPTISH.search(p) for p in params)):
        return ()
    if not SUSPECT.search(ctx.code(function)):
        return ()  # nothing in its own text varies: the callers' search is not worth its cost
    key = (ctx.filename, name)
    found = tree.recalled(_SHARED, key)
    if found is None:
        found = tree.remember(_SHARED, key, tuple(_callers(ctx, name)))
    return found if len(found) >= MIN_CALLERS else ()


def _callers(ctx: ModuleContext, name: str) -> list[str]:
    """`path:line` of each call of `name` inside a function (an indented line) of another non-test module of the tree
    that does not define a function of that name itself; found by text, so that no caller has to be parsed."""
    from cachelint.check.config import project_root_of, test_path_below
    from cachelint.check.project import note_read
    from cachelint.check.static_prefix import caller_files

    call = re.compile(rf"(?<![\w]){re.escape(name)}\s*\(")
    own = re.compile(rf"^[ \t]*(?:async[ \t]+)?def[ \t]+{re.escape(name)}\b", re.M)
    places: list[str] = []
    for path in caller_files(ctx.filename, name):
        if test_path_below(path, project_root_of(path) or os.getcwd()):
            continue
        note_read(path)
        try:
            text = Path(path).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        if own.search(text):
            continue  # a module with a function of the same name calls its own
        where = path if os.path.isabs(ctx.filename) else os.path.relpath(path)
        for match in call.finditer(text):
            start = text.rfind("\n", 0, match.start()) + 1
            if text[start:start + 1] in (" ", "\t") and not text[start:match.start()].lstrip().startswith("#"):
                places.append(f"{where}:{text.count(chr(10), 0, match.start()) + 1}")
    return places


def reported_in_renderer(fact) -> bool:
    """Whether the renderer's own module reports `fact`: a value that changes per call (an unordered listing or dict
    in a renderer is left to the callers' walks, where the request is in sight)."""
    from cachelint.check.values import COARSE_GRANULARITY

    if fact.kind not in SHARED_KINDS or not fact.landing.prefix or fact.when == "per process":
        return False
    return not (fact.kind == "volatile" and fact.granularity in COARSE_GRANULARITY)
