"""One prompt renderer that many modules call: what varies inside it is reported once, where it is made.

`load_and_render_prompt(template, context)` adds the clock to the context of every template it renders, and a
dozen modules of the project call it to build their system prompts. Followed from each caller, the same clock read
would be reported a dozen times, once at each call, while the fix is one line in the renderer.

A module-level function named for prompts, templates or instructions, imported and called from functions in
MIN_CALLERS or more places in other modules of the tree (tests left out) that keep what it returns as a system prompt
(`system_prompt = load_and_render_prompt(...)`), is a shared renderer. A clock or a random value inside it is
reported in its own module, at the value (a stand-in system prompt built by the function's returns, `likely`), and
the callers' walks leave it out. A module left out of the run (a pre-commit run on the callers alone) reports nothing
of it: the finding belongs to the renderer's file.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import libcst as cst

from cachelint.check import tree
from cachelint.check.module import ModuleContext

MIN_CALLERS = 2  # calls, in other modules, of a renderer shared across the project, whose result is a system prompt
SHARED_KINDS = frozenset({"volatile"})  # what a shared renderer is judged on: a value that changes per call
# a function named for rendering prompts: `load_and_render_prompt`, `render_template`, `build_instructions` (a name
# part, not `prompt_tokens` or `template_id`)
PROMPTISH = re.compile(r"(?:^|_)(?:prompts?|templates?|instructions?)(?:$|_)", re.I)
NOT_TEXT = re.compile(r"_(?:tokens?|ids?|len|length|count|name|names|path|file)$", re.I)
# what may vary in a renderer's own text: a clock or a random id (gate.RENDERED_VOLATILE)
SUSPECT = re.compile(r"\buuid\d?\(|\.now\(|\btime\(\)|\brandom\.|\btoken_hex\(|\burandom\(")
# the name a caller keeps the rendered text in, when it is a system prompt: system_prompt, system_prompt_with_tools,
# sys_prompt, instructions, system_message
SYSTEM_RESULT = re.compile(r"^[ \t]*(?:[\w.]*\.)?(?:\w*system\w*|\w*sys_prompt\w*|\w*instructions?)[ \t]*(?::[^=\n]+)?=[ \t]*(?:await[ \t]+)?(?:[\w.]+\.)?$",
                           re.I)

_SHARED: dict = {}  # (file, function name) -> the calls of a shared renderer in other modules, or ()


def shared_renderer(ctx: ModuleContext, function: cst.FunctionDef) -> tuple[str, ...]:
    """The places (`path:line`) other modules call `function` from, when it is a shared system-prompt renderer (called
    from MIN_CALLERS places or more that keep the text as a system prompt); else ()."""
    if ctx.enclosing(function, (cst.FunctionDef, cst.ClassDef)) is not None:
        return ()  # a method or a nested helper: its callers are not found by name
    name = function.name.value
    if not PROMPTISH.search(name) or NOT_TEXT.search(name):
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
    that imports it from this module and keeps what it returns as a system prompt (`system_prompt = name(...)`); found
    by text, so that no caller has to be parsed. Every file of the tree is noted as read: a caller added later makes
    the cached answer stale."""
    from cachelint.check.project import note_read
    from cachelint.check.static_prefix import caller_files

    module = Path(ctx.filename).parent.name if Path(ctx.filename).stem == "__init__" else Path(ctx.filename).stem
    imported = re.compile(rf"^[ \t]*from[ \t]+\.*(?:[\w.]*\.)?{re.escape(module)}[ \t]+import[ \t]+(?:\([^)]*|[^\n]*)\b{re.escape(name)}\b", re.M)
    call = re.compile(rf"(?<![\w.]){re.escape(name)}\s*\(")
    own = re.compile(rf"^[ \t]*(?:async[ \t]+)?def[ \t]+{re.escape(name)}\b", re.M)
    for path in tree.files(tree.root_of(ctx.filename)):
        note_read(path)
    places: list[str] = []
    for path in caller_files(ctx.filename, name):  # (no test module among them)
        try:
            text = Path(path).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        if own.search(text) or not imported.search(text):
            continue  # a module with a function of the same name calls its own; another package's `render_template`
        where = path if os.path.isabs(ctx.filename) else os.path.relpath(path)
        for match in call.finditer(text):
            start = text.rfind("\n", 0, match.start()) + 1
            if text[start:start + 1] in (" ", "\t") and SYSTEM_RESULT.match(text[start:match.start()]):
                places.append(f"{where}:{text.count(chr(10), 0, match.start()) + 1}")
    return places


def reported_in_renderer(fact) -> bool:
    """Whether the renderer's own module reports `fact`: a value that changes per call (an unordered listing or dict
    in a renderer is left to the callers' walks, where the request is in sight)."""
    from cachelint.check.values import COARSE_GRANULARITY

    if fact.kind not in SHARED_KINDS or not fact.landing.prefix or fact.when == "per process":
        return False
    return not (fact.kind == "volatile" and fact.granularity in COARSE_GRANULARITY)
