"""What part of an Anthropic request's prefix repeats, where the code that proves it is out of the request's sight.

CL501 reports a long prefix sent again and again with no breakpoint. The request itself often shows neither the
length nor the repetition: the system prompt is a constant of another module (`SystemPrompts.DEFAULT`), or is
passed in by callers in other modules through a provider wrapper (`llm.generate_response(messages=[{"role":
"system", "content": EXTRACTION_PROMPT}, ...])`); the repetition is an agent loop that appends the model's tool
calls and their results to the history it sends again. This module answers those questions, bounded:

- `leading_text`: the text a value certainly starts with, following constants, `+=` appends, f-strings,
  `.format` templates, class attributes and names imported from modules of the tree (one hop, through
  `cachelint.check.project`).
- `history_growth`: the call that appends to the sent history between two requests of one loop (a `for` /
  `while` around the request, or a function that calls itself after a tool turn).
- `callers_system_text`: for a request whose system prompt comes from a parameter of the sending function,
  the system prompts that callers in other files of the tree pass (a text search for the function's name
  first, then a parse of at most MAX_CALLER_FILES files, each parsed once per process).
- `forwarded_history` / `from_parameter`: whether a request sends the history (and the system prompt or tools)
  its own callers pass: a provider adapter, through which every conversation of an app goes.
"""

from __future__ import annotations

import functools
import io
import os
import re
import textwrap
import tokenize
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from weakref import WeakKeyDictionary

import libcst as cst

from cachelint.check import tree
from cachelint.check.breakpoints import static_text
from cachelint.check.callsites import CallSite, unpacked_values
from cachelint.check.module import LIST_GROWERS, ModuleContext, called_name, descendants, names_in
from cachelint.check.values import string_value

MAX_DEPTH = 10
MAX_CALLER_FILES = 8  # files with a caller that are parsed
# a module that puts breakpoints on its requests by code the analysis cannot follow (a helper that sets the key).
# Looser than BREAKPOINT_WORDS below on purpose: the two answer opposite questions. Any mention here (a
# `cache_control` parameter passed on, a flag) may mean a helper sets one, so a finding that rests on their absence
# stays quiet; the tree search below must show one being set before it quiets the whole project.
CACHE_WORDS = re.compile(r"cache_control|prompt_caching|cache_breakpoint|cachePoint|cache_point")  # also litellm's cache_control_injection_points
_CALLER_FILES: dict[tuple[str, str], tuple[float, list[str]]] = {}


# a breakpoint set somewhere: a "cache_control" key or keyword block, a caching switch or a Bedrock cache point
# (an HTTP `Cache-Control` header kept in a variable named cache_control is none)
BREAKPOINT_WORDS = re.compile(r"""["']cache_control["']|\bcache_control\s*=\s*\{|prompt_caching|cache_breakpoint|cachePoint|cache_point"""
                              r"|\bcache_control_injection_points\b"  # litellm adds the breakpoints it is told where
                              # an agent SDK's own switch, turned on: strands `cache_prompt="default"` / `cache_tools="default"` /
                              # `cache_config=CacheConfig(...)`, agno `cache_system_prompt=True`, pydantic-ai's
                              # `anthropic_cache=True` / `anthropic_cache_instructions=True` settings and its `CachePoint()` (not llama.cpp's
                              # `"cache_prompt": True`, a `self.cache_tools = {}` or an `anthropic_cache_dir`)
                              r"""|\b(?:cache_prompt|cache_tools)\s*=\s*["']default["']|\bcache_config\s*=\s*CacheConfig\("""
                              r"""|\bcache_system_prompt\s*=\s*True|\banthropic_cache(?:_instructions|_tool_definitions|_messages)?\b["']?\s*[=:]\s*(?!False)"""
                              r"""|\bCachePoint\("""
                              r"|\bAnthropicPromptCachingMiddleware\b")  # langchain's agent middleware that sets them on each call


def tree_sets_breakpoints(filename: str) -> bool:
    """Whether any .py file of the tree that holds `filename` speaks of Anthropic breakpoints. Where none does,
    no helper anywhere can add one to a request sent without them: an adapter's missing breakpoint is then
    a fact of the project, not of the module in sight."""
    return tree.first_file(filename, "breakpoints", lambda path, text: BREAKPOINT_WORDS.search(text) is not None) is not None


# a Claude model an app can be configured with, as litellm names it: "anthropic/claude-3-5-sonnet-20241022",
# "bedrock/anthropic.claude-3-haiku-...", "openrouter/anthropic/claude-3.5-sonnet", "claude-sonnet-4-5"
# (a version is required: `"claude-"` in `model.startswith("claude-")` or `"claude-code"` names no model)
CLAUDE_MODEL = re.compile(r"""["']((?:[\w.-]+[/.])*claude-(?:[a-z]+-)*\d[\w.:-]*)["']""")


def tree_claude_model(filename: str) -> str | None:
    """A Claude model that caches prompts, set as a default or a setting in some .py file of the tree that holds
    `filename` (the first found; tests left out), or None: an app whose model is a setting may be run with it. A
    Claude model named only as a key of a table (`"claude-3-5-sonnet": AnthropicModel`, a price list), in a
    condition, a comment or a call's keyword is not what this code is configured with."""
    from cachelint.check.config import project_root_of, test_path_below

    def configured(path: str, text: str) -> bool:
        return _cached_claude(text) is not None and not test_path_below(path, project_root_of(path) or os.getcwd())

    found = tree.first_file(filename, "claude model setting", configured)
    if found is None:
        return _configured_in_files(project_root_of(filename) or tree.root_of(filename)) if os.path.isfile(filename) else None
    with open(found, encoding="utf-8", errors="replace") as file:
        return _cached_claude(file.read())


# the app's own configuration files, at its root or in a config folder: `morphik.toml`, `config/models.yaml`
CONFIG_SUFFIXES = (".toml", ".yaml", ".yml")
CONFIG_FOLDERS = ("", "config", "configs", "conf", "settings")
# a model setting written in one: `model_name = "claude-3-7-sonnet-latest"` (a TOML key or inline table), `model:
# anthropic/claude-sonnet-4-5` (YAML), `model: bedrock/us.anthropic.claude-3-5-sonnet-...` (a litellm proxy's model list)
CONFIGURED_MODEL = re.compile(r"""(?im)\b[\w-]*model(?:_name|_id)?\s*[:=]\s*["']?((?:[\w-]+[/.])*claude-[\w.:@-]+)""")


def _configured_in_files(root: str) -> str | None:
    """A Claude model that caches prompts, set in a configuration file of the app (`morphik.toml`: `claude_sonnet = {
    model_name = "claude-3-7-sonnet-latest" }`), or None. pyproject.toml and lock files name packages, not models."""
    from cachelint.check.project import note_read
    from cachelint.simulate.models import caches_prompts

    for folder in CONFIG_FOLDERS:
        base = os.path.join(root, folder)
        try:
            names = sorted(os.listdir(base))
        except OSError:
            continue
        for name in names:
            path = os.path.join(base, name)
            if not name.endswith(CONFIG_SUFFIXES) or name in ("pyproject.toml", "poetry.lock", "uv.lock") or name.startswith(".") \
                    or not os.path.isfile(path) or os.path.getsize(path) > 256_000:
                continue
            note_read(path)
            with open(path, encoding="utf-8", errors="replace") as file:
                text = file.read()
            for line in text.splitlines():
                if line.lstrip().startswith("#"):
                    continue  # a commented-out choice is not the configured one
                for match in CONFIGURED_MODEL.finditer(line):
                    if caches_prompts(match.group(1)):
                        return match.group(1)
    return None


def _cached_claude(text: str) -> str | None:
    """The first Claude model that caches prompts set in `text`: the whole value of an assignment (`DEFAULT_MODEL =
    "..."`, `model: str = "..."`, `self.model = "..."`), an element of a list of defaults (`DEFAULT_MODELS = ["gpt-4o",
    "..."]`), the value of a dict's "model" key, an option's `default="..."`, or the model a model object is made with
    (`LLM("claude-...", temperature=0.3)`, its first argument); never a dict's key, a comparison, a
    call's other keywords, a comment or a docstring."""
    from cachelint.simulate.models import caches_prompts

    if "claude-" not in text:
        return None
    try:
        module = cst.parse_module(text)
    except (cst.ParserSyntaxError, RecursionError, ValueError):
        return None
    for candidate in _set_strings(module):
        match = CLAUDE_MODEL.fullmatch(f'"{candidate}"')
        if match and caches_prompts(match.group(1)):
            return match.group(1)
    return None


def _set_strings(module: cst.Module) -> Iterator[str]:
    def strings(value: cst.BaseExpression | None, listed: bool = True) -> Iterator[str]:
        if isinstance(value, (cst.SimpleString, cst.ConcatenatedString)) and isinstance(value.evaluated_value, str):
            yield value.evaluated_value
        elif listed and isinstance(value, (cst.List, cst.Tuple)):
            for element in value.elements:
                yield from strings(element.value, listed=False)

    def defaults(targets: list[cst.BaseExpression]) -> bool:  # DEFAULT_MODELS = [...]: a list of hints or prices is not
        return any("default" in (t.value if isinstance(t, cst.Name) else t.attr.value if isinstance(t, cst.Attribute) else "").lower()
                   for t in targets)

    for node in _walk(module):
        if isinstance(node, cst.Assign):
            yield from strings(node.value, listed=defaults([t.target for t in node.targets]))
        elif isinstance(node, cst.AnnAssign):
            yield from strings(node.value, listed=defaults([node.target]))
        elif isinstance(node, cst.Dict):
            for element in node.elements:
                if isinstance(element, cst.DictElement) and string_value(element.key) in ("model", "default_model", "llm", "model_name"):
                    yield from strings(element.value, listed=False)
        elif isinstance(node, cst.Arg) and node.keyword is not None and node.keyword.value == "default":
            yield from strings(node.value)
        elif isinstance(node, cst.Param) and node.default is not None and "model" in node.name.value.lower():
            yield from strings(node.default, listed=False)  # def __init__(self, model_id="anthropic.claude-3-5-sonnet-...")
        elif isinstance(node, cst.Call) and MODEL_CLASS.search(_called(node.func)) and node.args \
                and node.args[0].keyword is None and not node.args[0].star:
            # `LLM("claude-3-5-sonnet-20241022", temperature=0.3)`: the app's model object made with its model (a
            # framework's `LiteLlm(model="...")` in a sample agent is a call's keyword, not the app's setting)
            yield from strings(node.args[0].value, listed=False)
        elif isinstance(node, cst.Call) and SETTINGS_CLASS.search(_called(node.func)):
            # `LLMConfig(provider=ModelProvider.AWS_BEDROCK, model_id="us.anthropic.claude-sonnet-4-5-...")`: the model
            # an app's settings object holds is what it runs with (a framework's `LiteLlm(model=...)` is no settings)
            for arg in node.args:
                if arg.keyword is not None and arg.keyword.value in ("model", "model_id", "model_name", "default_model"):
                    yield from strings(arg.value, listed=False)


# an object of an app's settings: `LLMConfig(...)`, `ModelSettings(...)`, `AgentConfig(...)`
SETTINGS_CLASS = re.compile(r"^[A-Z]\w*(?:Config|Settings|Configuration)$")

# a class that makes a model or its settings: `LLM(...)`, `LLMConfig(...)`, `ModelSettings(...)`, `ChatModel(...)`
MODEL_CLASS = re.compile(r"^(?:[A-Z]\w*)?(?:LLM|Llm)(?:Config|Settings|Client)?$")  # not `PriceModel(...)`: a cost table's row


def _called(func: cst.BaseExpression) -> str:
    return func.value if isinstance(func, cst.Name) else func.attr.value if isinstance(func, cst.Attribute) else ""


def _walk(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(current.children))


def mentions_caching(source: str) -> bool:
    """Whether a module's code speaks of Anthropic breakpoints at all: then a request with no breakpoint in
    sight may still get one from a helper, and no finding rests on their absence. A comment is not code (`# a
    cache_control breakpoint would go here`), and neither is a mention that turns them off
    (`msg.to_anthropic_format(enable_cache_control=False)`): a module that speaks of breakpoints only to leave them
    out sets none."""
    return any(not _in_comment(source, match.start()) and not _turned_off(source, match) for match in CACHE_WORDS.finditer(source))


TURNED_OFF = re.compile(r"\w*\s*=\s*(?:False|None)\b")


def _turned_off(source: str, match: re.Match[str]) -> bool:
    """`enable_cache_control=False`, `cache_control=None`: the identifier the match is part of, set to nothing."""
    return TURNED_OFF.match(source, match.end()) is not None


# a keyword that turns a converter's breakpoints off: `to_anthropic_format(enable_cache_control=False)`
OFF_KEYWORD = re.compile(r"cach", re.I)
NOT_CONVERTERS = frozenset({"list", "dict", "tuple", "str", "len", "copy", "deepcopy", "append", "extend", "get", "items",
                            "values", "keys", "join", "format", "strip", "dumps", "loads", "model_dump", "isinstance"})


def converter_marks(ctx: ModuleContext, site: CallSite) -> bool:
    """Whether the messages or system a request sends are made by a converter of the tree whose definition writes
    breakpoints (`[m.to_anthropic_format() for m in messages]` with `def to_anthropic_format` in another module
    setting `block["cache_control"]`): the markers are out of sight, not absent. A converter told to leave them out
    (`enable_cache_control=False`) adds none."""
    names: set[str] = set()
    seen: set[int] = set()
    sender = ctx.enclosing_function(site.node)
    frontier = [site.arg(arg) for arg in ("messages", "system", "input") if site.arg(arg) is not None]
    for _ in range(3):
        following: list[cst.BaseExpression] = []
        for expr in frontier:
            for node in (expr, *descendants(expr)):
                if id(node) in seen:
                    continue
                seen.add(id(node))
                if isinstance(node, cst.Call) and (node.args or (isinstance(node.func, cst.Attribute) and isinstance(node.func.value, cst.Name))):
                    # a converter is handed what it converts: `convert(messages)`, `m.to_anthropic_format()`
                    name = called_name(node)
                    off = any(a.keyword is not None and OFF_KEYWORD.search(a.keyword.value) and _nothing(a.value) for a in node.args)
                    if name and name not in NOT_CONVERTERS and not off:
                        names.add(name)
                elif isinstance(node, cst.Name):
                    following += [v for b, v in ctx.assigned_values(node) if v is not None and (sender is None or ctx.contains(sender, b))]
        frontier = following
    if not names:
        return False
    pattern = re.compile(r"^[ \t]*(?:async[ \t]+)?def[ \t]+(?:" + "|".join(sorted(re.escape(n) for n in names)) + r")\(", re.M)
    return tree.first_file(ctx.filename, "marking converter " + pattern.pattern, lambda path, text: _defines_marker_writer(text, pattern)) is not None


def _nothing(value: cst.BaseExpression) -> bool:
    return isinstance(value, cst.Name) and value.value in ("False", "None")


def _defines_marker_writer(text: str, pattern: re.Pattern[str]) -> bool:
    """A definition matched by `pattern` whose text (up to the next definition at its indentation or less) writes
    a breakpoint."""
    for match in pattern.finditer(text):
        end = _next_definition(len(match.group(0)) - len(match.group(0).lstrip())).search(text, match.end())
        if MARKER_WRITE.search(text, match.end(), end.start() if end else len(text)):
            return True
    return False


@functools.cache
def _next_definition(indent: int) -> re.Pattern[str]:
    """A `def` or `class` at `indent` columns or fewer: where the definition before it ends."""
    return re.compile(r"^[ \t]{0,%d}(?:async[ \t]+)?(?:def|class)[ \t]" % indent, re.M)


# a breakpoint written: `block["cache_control"] = ...`, `{"cache_control": ...}`, `TextBlockParam(..., cache_control=...)`
# (not a parameter that only speaks of them: `enable_cache_control: bool = True`, `cache_control=None`)
MARKER_WRITE = re.compile(r"""["'](?:cache_control|cachePoint)["']|(?<![\w.])(?:cache_control|cachePoint)\s*=(?!=)\s*(?!False\b|None\b)""")


def _in_comment(source: str, offset: int) -> bool:
    """Whether `offset` is inside a comment: its line, tokenized alone, has a comment that starts before it (a
    line that does not tokenize alone, inside a multi-line string, counts as code)."""
    start = source.rfind("\n", 0, offset) + 1
    end = source.find("\n", offset)
    line = source[start:end if end >= 0 else len(source)]
    if "#" not in line[: offset - start]:
        return False
    try:
        for token in tokenize.generate_tokens(io.StringIO(line.lstrip()).readline):
            if token.type == tokenize.COMMENT:
                return token.start[1] + (len(line) - len(line.lstrip())) <= offset - start
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return False
    return False


# --- the text a value starts with --------------------------------------------------------------------------


def leading_text(ctx: ModuleContext, expr: cst.BaseExpression | None, depth: int = 0) -> tuple[str, bool]:
    """(the text `expr` certainly starts with, whether that is all of it). A name assigned once and then only
    appended to (`prompt = BASE; if x: prompt += SUFFIX`) starts with what it was assigned."""
    if expr is None or depth > MAX_DEPTH:
        return "", False
    d = depth + 1
    value = string_value(expr)
    if value is not None:
        return value, True
    if isinstance(expr, (cst.List, cst.Tuple, cst.Dict)):  # system blocks, tool schemas: all static, or unknown
        whole = static_text(ctx, expr)
        return (whole, True) if whole is not None else ("", False)
    if isinstance(expr, cst.FormattedString):
        text = ""
        for part in expr.parts:
            if isinstance(part, cst.FormattedStringText):
                text += part.value
                continue
            inner, complete = leading_text(ctx, part.expression, d)  # type: ignore[union-attr]
            text += inner
            if not complete:
                return text, False
        return text, True
    if isinstance(expr, cst.ConcatenatedString) or (isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Add)):
        left, complete = leading_text(ctx, expr.left, d)
        if not complete:
            return left, False
        right, complete = leading_text(ctx, expr.right, d)
        return left + right, complete
    if isinstance(expr, cst.Name):
        return _name_text(ctx, expr, d)
    if isinstance(expr, cst.Attribute):
        found = attribute_definition(ctx, expr)
        return leading_text(found[0], found[1], d) if found is not None else ("", False)
    if isinstance(expr, cst.Call):
        return _call_text(ctx, expr, d)
    return "", False


def _name_text(ctx: ModuleContext, name: cst.Name, d: int) -> tuple[str, bool]:
    from cachelint.check.project import imported_definition, star_imported_definition

    assigned: list[cst.BaseExpression] = []
    appended = False
    bindings = list(ctx.assigned_values(name))
    if not bindings:  # `from .prompts import *`: a constant of a module of the tree
        found = star_imported_definition(ctx, name.value)
        if found is None or isinstance(found[1], (cst.FunctionDef, cst.ClassDef)):
            return "", False
        return leading_text(found[0], found[1], d)
    for binding, value in bindings:
        parent = ctx.parent(binding)
        if isinstance(binding, cst.ImportFrom):
            found = imported_definition(ctx, binding, name.value)
            if found is None or isinstance(found[1], (cst.FunctionDef, cst.ClassDef)):
                return "", False
            return leading_text(found[0], found[1], d)
        if isinstance(parent, cst.AugAssign):
            if not isinstance(parent.operator, cst.AddAssign):
                return "", False
            appended = True
            continue
        if value is None:
            return "", False  # a parameter, a loop variable: not known
        assigned.append(value)
    if len(assigned) != 1:
        return "", False
    text, complete = leading_text(ctx, assigned[0], d)
    return text, complete and not appended


def _call_text(ctx: ModuleContext, call: cst.Call, d: int) -> tuple[str, bool]:
    func = call.func
    if isinstance(func, cst.Attribute) and func.attr.value == "format":
        template, complete = leading_text(ctx, func.value, d)
        head = re.split(r"(?<!\{)\{(?!\{)", template, maxsplit=1)[0]  # up to the first placeholder
        return head.replace("{{", "{").replace("}}", "}"), complete and head == template and not call.args
    if isinstance(func, cst.Attribute) and func.attr.value in ("strip", "lstrip", "rstrip"):
        text, complete = leading_text(ctx, func.value, d)
        text = text.lstrip() if func.attr.value != "rstrip" else text
        return (text.rstrip() if complete and func.attr.value != "lstrip" else text), complete
    if ctx.qualified_name_in(func, {"textwrap.dedent", "inspect.cleandoc"}) and call.args:
        text, complete = leading_text(ctx, call.args[0].value, d)
        return (textwrap.dedent(text), True) if complete else (text, False)
    functions = ctx.called_functions(call)
    if len(functions) == 1:
        returns = ctx.returns_of(functions[0])
        if returns:
            results = [leading_text(ctx, value, d) for value in returns]
            return min(results, key=lambda r: len(r[0]))[0], all(r[1] for r in results)
    return "", False


def attribute_definition(ctx: ModuleContext, attr: cst.Attribute) -> tuple[ModuleContext, cst.BaseExpression] | None:
    """(module, value) of `Cls.NAME` (a class of this module or one imported from the tree) or `module.NAME`."""
    from cachelint.check.project import imported_definition, module_attribute_definition

    if not isinstance(attr.value, cst.Name):
        return None
    owner = attr.value
    for binding, value in ctx.assigned_values(owner):
        if isinstance(binding, cst.ClassDef):
            return class_attribute(ctx, binding, attr.attr.value)
        if isinstance(binding, cst.ImportFrom):
            found = imported_definition(ctx, binding, owner.value)
            if found is not None and isinstance(found[1], cst.ClassDef):
                return class_attribute(found[0], found[1], attr.attr.value)
            if found is None:
                found = module_attribute_definition(ctx, binding, owner.value, attr.attr.value)
                if found is not None and not isinstance(found[1], (cst.FunctionDef, cst.ClassDef)):
                    return found
            return None
        if isinstance(binding, cst.Import):
            found = module_attribute_definition(ctx, binding, owner.value, attr.attr.value)
            if found is not None and not isinstance(found[1], (cst.FunctionDef, cst.ClassDef)):
                return found
            return None
    for cls in ctx.nodes(cst.ClassDef):  # a class of this module (scopes name its binding a ClassDef, too)
        if cls.name.value == owner.value and ctx.parent(cls) is ctx.module:
            return class_attribute(ctx, cls, attr.attr.value)
    return None


def class_attribute(ctx: ModuleContext, cls: cst.ClassDef, name: str) -> tuple[ModuleContext, cst.BaseExpression] | None:
    """(module, value) of `NAME = ...` in the class's own body (its last assignment)."""
    found = None
    for stmt in cls.body.body:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                assigned = isinstance(small, cst.Assign) and any(isinstance(t.target, cst.Name) and t.target.value == name for t in small.targets)
                annotated = isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name) and small.target.value == name
                if (assigned or annotated) and small.value is not None:  # type: ignore[union-attr]
                    found = (ctx, small.value)  # type: ignore[union-attr]
    return found


# --- the history that grows between two requests of one loop -------------------------------------------------


@dataclass(frozen=True, slots=True)
class Growth:
    node: cst.CSTNode  # the call (or `+=`) that appends to the history
    history: str  # the code of the history: `messages`, `self.conversation_history`
    how: str  # "loop" | "recursion"


def history_growth(ctx: ModuleContext, site: CallSite) -> Growth | None:
    """The append to the history a request sends that runs between this request and the next one of the same
    run: in a loop around the request, or in the function that sends it and then calls itself again."""
    messages = site.arg("messages")
    roots: set[str] = {ctx.code(messages)} if isinstance(messages, (cst.Name, cst.Attribute)) else set()
    star = next((a.value for a in getattr(site.node, "args", ()) if a.star == "**"), None)
    if isinstance(star, cst.Name):  # create(**request_params), then request_params["messages"].append(...)
        roots |= {f'{star.value}["messages"]', f"{star.value}['messages']"}
    if not roots:
        return None
    function = ctx.enclosing_function(site.node)
    if isinstance(messages, cst.Name):  # messages = [*history, ...] rebuilt each step: the history it holds
        for _, value in ctx.assigned_values(messages):
            if value is not None and function is not None and ctx.contains(function, value):
                roots |= {ctx.code(n) for n in descendants(value) if isinstance(n, (cst.Name, cst.Attribute))} - {"self"}
    loops = ctx.loops_around(site.node)
    scope: cst.CSTNode | None = loops[-1] if loops else None
    how = "loop"
    if scope is None and function is not None and _calls_itself(ctx, function):
        scope, how = function, "recursion"
    if scope is None and function is None and ctx.reruns_per_turn:
        scope, how = ctx.module, "rerun"  # a Streamlit app: the script is the turn, st.session_state the history
    if scope is None:
        return None
    if isinstance(messages, cst.Name) and any(isinstance(value, (cst.List, cst.ListComp)) and ctx.contains(scope, value)
                                              and not any(isinstance(e, cst.StarredElement) for e in getattr(value, "elements", ()))
                                              for _, value in ctx.assigned_values(messages)):
        return None  # a new conversation each time round: what is appended is gone by the next one
    for node in descendants(scope):
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in LIST_GROWERS \
                and ctx.code(node.func.value) in roots:
            return Growth(node, ctx.code(node.func.value), how)
        if isinstance(node, cst.AugAssign) and isinstance(node.operator, cst.AddAssign) and ctx.code(node.target) in roots:
            return Growth(node, ctx.code(node.target), how)
    for node in descendants(scope):
        if isinstance(node, cst.Call) and (handed := _grown_by_helper(ctx, node, roots)) is not None:
            return Growth(node, handed, how)
    return None


def _grown_by_helper(ctx: ModuleContext, call: cst.Call, roots: set[str]) -> str | None:
    """The history handed to a function of this module that appends to that parameter
    (`self._add_to_history(message, messages)`, `def _add_to_history(self, message, messages): messages.append(message)`)."""
    handed = [(i, a) for i, a in enumerate(a for a in call.args if not a.star) if ctx.code(a.value) in roots]
    if not handed:
        return None
    for function in ctx.called_functions(call):
        params = [p.name.value for p in (*function.params.posonly_params, *function.params.params) if p.name.value not in ("self", "cls")]
        for index, arg in handed:
            name = arg.keyword.value if arg.keyword is not None else params[index] if index < len(params) else None
            if name is not None and any(grower.func.attr.value in LIST_GROWERS and ctx.contains(function, grower)  # type: ignore[attr-defined]
                                        for grower in ctx.calls_on.get(name, ())):
                return ctx.code(arg.value)
    return None


def _calls_itself(ctx: ModuleContext, function: cst.FunctionDef) -> bool:
    for call in ctx.calls_by_name.get(function.name.value, []):
        if ctx.contains(function, call) and any(f is function for f in ctx.called_functions(call)):
            return True
    return False


# --- system prompts passed in by callers in other files -----------------------------------------------------


@dataclass(frozen=True, slots=True)
class CallerPrompt:
    where: str  # "mem0/memory/main.py:956"
    text: str  # the text the system prompt it passes starts with


def callers_system_text(ctx: ModuleContext, function: cst.FunctionDef, param: str) -> list[CallerPrompt]:
    """System prompts that calls of `function` in the tree's other files pass through its parameter `param`:
    the parameter itself (`system=`), or the system message of a message list passed for it (tests are not
    callers: caller_files)."""
    params = [p for p in function.params.params if p.name.value not in ("self", "cls")]
    index = next((i for i, p in enumerate(params) if p.name.value == param), None)
    found: list[CallerPrompt] = []
    for path in caller_files(ctx.filename, function.name.value):
        from cachelint.check.project import module_context

        other = module_context(Path(path))
        if other is None:
            continue
        for call in other.calls_by_name.get(function.name.value, []):
            argument = _argument(call, param, index)
            if argument is None:
                continue
            text = _system_text(other, argument)
            if text:
                where = os.path.relpath(path, tree.root_of(ctx.filename))
                found.append(CallerPrompt(f"{where}:{other.span(call).row}", text))
    return found


def _argument(call: cst.Call, param: str, index: int | None) -> cst.BaseExpression | None:
    for position, arg in enumerate(call.args):
        if arg.keyword is not None and arg.keyword.value == param:
            return arg.value
        if arg.keyword is None and not arg.star and position == index:
            return arg.value
    return None


def _system_text(ctx: ModuleContext, argument: cst.BaseExpression) -> str:
    """The text a system prompt passed as `argument` starts with: a string value, or the `content` of the
    system message of a message list literal."""
    from cachelint.check.callsites import is_system_message, message_content

    if isinstance(argument, cst.Name):
        values = [v for _, v in ctx.assigned_values(argument) if v is not None]
        if len(values) == 1 and isinstance(values[0], cst.List):
            argument = values[0]
    if isinstance(argument, cst.List):
        for element in argument.elements:
            if is_system_message(element.value) and (content := message_content(element.value)) is not None:
                return leading_text(ctx, content)[0]
        return ""
    return leading_text(ctx, argument)[0]


def caller_files(filename: str, name: str) -> list[str]:
    """Files of the tree (other than `filename`) whose text calls `name(`: found by a text search, at most
    MAX_CALLER_FILES of them, test modules left out (a test's call says nothing of what the app passes)."""
    from cachelint.check.config import project_root_of, test_path_below

    root = tree.root_of(filename)
    key = (root, name)
    cached = tree.recalled(_CALLER_FILES, key)
    if cached is None:
        found = tree.files_calling(root, name)[:MAX_CALLER_FILES]  # f(...) / obj.f(...) / to_thread(obj.f, ...)
        cached = tree.remember(_CALLER_FILES, key, [p for p in found if not test_path_below(p, project_root_of(p) or os.getcwd())])
    return [p for p in cached if p != os.path.abspath(filename)]




# --- a message that a serializer turns into a breakpoint ------------------------------------------------------

# a step or turn counter by its name (`self.step_info.step_number + 1`, `f"Iteration {iteration}"`): plural
# names (`steps`: a list) and limits (`max_steps`) are no counter
STEP_COUNTER = re.compile(r"^(?:step|step_number|step_num|step_no|step_index|step_idx|step_count|current_step|n_step|iteration|iteration_count|"
                          r"current_iteration|iteration_number|turn_number|turn_count|current_turn|round_number|current_round)$")


@dataclass(frozen=True, slots=True)
class FlaggedMessage:
    call: cst.Call  # UserMessage(content=..., cache=True)
    counter: cst.CSTNode  # the step counter its text holds


def flagged_messages(ctx: ModuleContext) -> list[FlaggedMessage]:
    """Messages of a framework's own message classes marked `cache=True` (a serializer of the tree turns the flag
    into a `cache_control` breakpoint) whose text holds a step counter: the cached block changes every step.
    Only a text content is judged: on a list of parts, where the serializer puts the breakpoint is not known."""
    found: list[FlaggedMessage] = []
    if not re.search(r"\bcache\s*=\s*True", ctx.source):
        return found  # most modules: no call to walk
    for call in ctx.nodes(cst.Call):
        func = call.func
        name = func.value if isinstance(func, cst.Name) else func.attr.value if isinstance(func, cst.Attribute) else ""
        if not name.endswith("Message") or not any(a.keyword is not None and a.keyword.value == "cache" and isinstance(a.value, cst.Name)
                                                    and a.value.value == "True" for a in call.args):
            continue
        content = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == "content"), None)
        if content is None and call.args and call.args[0].keyword is None:
            content = call.args[0].value
        if content is None or not _text_valued(ctx, content):
            continue
        counter = step_counter(ctx, content)
        if counter is not None and serializer_marks_cache(ctx.filename):
            found.append(FlaggedMessage(call, counter))
    return found


def _text_valued(ctx: ModuleContext, expr: cst.BaseExpression) -> bool:
    if isinstance(expr, (cst.List, cst.Tuple, cst.ListComp)):
        return False
    if isinstance(expr, cst.Name):
        values = [v for _, v in ctx.assigned_values(expr)]
        return bool(values) and all(v is not None and not isinstance(v, (cst.List, cst.Tuple, cst.ListComp)) for v in values)
    return isinstance(expr, (cst.SimpleString, cst.FormattedString, cst.ConcatenatedString, cst.BinaryOperation, cst.Call))


def step_counter(ctx: ModuleContext, expr: cst.BaseExpression | None, depth: int = 0, seen: set[int] | None = None) -> cst.CSTNode | None:
    """A step counter (by its name) that the text of `expr` is built from: followed through names (their
    assignments and `+=`), f-strings, `+`, the functions of this module it calls and their returns."""
    seen = set() if seen is None else seen
    if expr is None or depth > MAX_DEPTH or id(expr) in seen or len(seen) > 400:
        return None
    seen.add(id(expr))
    d = depth + 1
    if isinstance(expr, cst.Attribute):
        if STEP_COUNTER.match(expr.attr.value):
            return expr
        return step_counter(ctx, expr.value, d, seen) if isinstance(expr.value, cst.Call) else None
    if isinstance(expr, cst.Name):
        if STEP_COUNTER.match(expr.value):
            return expr
        for _, value in ctx.assigned_values(expr):
            found = step_counter(ctx, value, d, seen)
            if found is not None:
                return found
        return None
    if isinstance(expr, cst.FormattedString):
        parts = [p.expression for p in expr.parts if isinstance(p, cst.FormattedStringExpression)]
    elif isinstance(expr, (cst.BinaryOperation, cst.ConcatenatedString)):
        parts = [expr.left, expr.right]
    elif isinstance(expr, cst.IfExp):
        parts = [expr.body, expr.orelse]
    elif isinstance(expr, cst.Call):
        parts = [a.value for a in expr.args]
        if isinstance(expr.func, cst.Attribute) and not (isinstance(expr.func.value, cst.Name) and expr.func.value.value in ("self", "cls")):
            parts.append(expr.func.value)  # text.strip(): the text
        for function in ctx.called_functions(expr):
            parts += ctx.returns_of(function)
    else:
        return None
    for part in parts:
        found = step_counter(ctx, part, d, seen)
        if found is not None:
            return found
    return None


def serializer_marks_cache(filename: str) -> bool:
    """Whether a module of the tree reads a message's `.cache` flag where it writes `cache_control` (a
    serializer for Anthropic): searched once per tree, by text. The serializer found is a file the finding
    depends on (project.note_read)."""
    flag = re.compile(r"\.cache\b(?!_)")
    return tree.first_file(filename, "serializer", lambda path, text: "cache_control" in text and flag.search(text) is not None) is not None


# --- a conversation object of the tree sent as the history ----------------------------------------------------

HISTORY_ATTRIBUTE = re.compile(r"^_?(?:messages|history|turns|conversation|chat_history|message_history)$")
# a conversation kept on an object, by a wider reading of its name (CL501's chat model classes): words may lead it
# (`self.outgoing_messages`, `self.current_chat_messages`, `self.chatHistory`), but not an outbox sent once and emptied
# (`self.pending_messages`); a log's or a screen's lines are history.LOG_NAME's
KEPT_HISTORY_ATTRIBUTE = re.compile(r"^_?(?!(?:pending|queued|unsent|new|outbox|buffered|incoming|received|printed|shown)_)(?:[a-z]+_){0,2}"
                                    r"(?:history|messages|chat_history|conversation|conversation_history|message_history|msgs|dialog|dialogue)$"
                                    r"|^_?[a-z]+(?:History|Messages)$")


@dataclass(frozen=True, slots=True)
class ConversationObject:
    param: str  # the parameter that brings it: `convo`
    cls: str  # its class: `Convo`
    where: str  # "core/llm/convo.py:72", the append that makes it grow


def conversation_object(ctx: ModuleContext, site: CallSite) -> ConversationObject | None:
    """The sent history comes from a parameter annotated with a class of the tree whose methods append to its
    `self.messages` (a conversation continued turn after turn), directly (`convo.messages`) or through a
    function it is passed to (`self._adapt(convo)`)."""
    messages = site.arg("messages")
    if messages is None:
        return None
    exprs: list[cst.BaseExpression] = [messages]
    if isinstance(messages, cst.Name):
        exprs += [v for _, v in ctx.assigned_values(messages) if v is not None]
    names = [n for e in exprs for n in descendants(e) if isinstance(n, cst.Name)]
    for name in names[:32]:
        for binding, _ in ctx.assigned_values(name):
            if isinstance(binding, cst.Param) and binding.annotation is not None:
                found = _growing_class(ctx, binding.annotation.annotation)
                if found is not None:
                    return ConversationObject(binding.name.value, *found)
    return _own_conversation(ctx, site, exprs)


def _own_conversation(ctx: ModuleContext, site: CallSite, exprs: list[cst.BaseExpression]) -> ConversationObject | None:
    """The sent history is the sender's own `self.messages`, which another of its class's methods appends each
    turn to (`def chat(self, content): self.messages.append(...)`): the object is the conversation."""
    cls = ctx.enclosing(site.node, (cst.ClassDef,))
    if not isinstance(cls, cst.ClassDef):
        return None
    attrs = {n.attr.value for e in exprs for n in [e, *descendants(e)] if isinstance(n, cst.Attribute)
             and isinstance(n.value, cst.Name) and n.value.value == "self" and HISTORY_ATTRIBUTE.match(n.attr.value)}
    if not attrs:
        return None
    for node in descendants(cls):
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in LIST_GROWERS:
            target = node.func.value
            if isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) and target.value.value == "self" \
                    and target.attr.value in attrs and ctx.enclosing_function(node) is not None \
                    and not _restarted(ctx.enclosing_function(node), target.attr.value):
                return ConversationObject("self." + target.attr.value, cls.name.value, f"line {ctx.span(node).row}")
    return None


def _restarted(function: cst.FunctionDef, attribute: str) -> bool:
    """The method that appends to `self.<attribute>` empties it first (`self.messages.clear()`, `self.messages = []`):
    it builds the messages of one request anew each time it runs, not a conversation that grows turn by turn. Only a
    statement of the method's own body counts (`if new_chat: self.messages = []` starts a conversation now and then)."""
    statements = [line for statement in function.body.body if isinstance(statement, cst.SimpleStatementLine) for line in statement.body]
    for node in statements:
        node = node.value if isinstance(node, cst.Expr) else node
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "clear" \
                and self_attribute(node.func.value) == attribute:
            return True
        if isinstance(node, cst.Assign) and isinstance(node.value, cst.List) and not node.value.elements \
                and any(self_attribute(t.target) == attribute for t in node.targets):
            return True
    return False


def self_attribute(expr: cst.BaseExpression) -> str | None:
    """`name` of `self.name`, else None."""
    return expr.attr.value if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self" else None


def _growing_class(ctx: ModuleContext, annotation: cst.BaseExpression) -> tuple[str, str] | None:
    """(class name, where it appends) for an annotation naming a class of the tree that grows a history."""
    from cachelint.check.project import imported_definition

    if isinstance(annotation, cst.SimpleString):
        return None
    if not isinstance(annotation, cst.Name):
        return None
    for binding, _ in ctx.assigned_values(annotation):
        other, cls = ctx, None
        if isinstance(binding, cst.ClassDef):
            cls = binding
        elif isinstance(binding, cst.ImportFrom):
            found = imported_definition(ctx, binding, annotation.value)
            if found is not None and isinstance(found[1], cst.ClassDef):
                other, cls = found
        if cls is None:
            continue
        for node in descendants(cls):
            if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in LIST_GROWERS:
                target = node.func.value
                if isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) and target.value.value == "self" \
                        and HISTORY_ATTRIBUTE.match(target.attr.value) and other.enclosing_function(node) is not None \
                        and not _restarted(other.enclosing_function(node), target.attr.value):
                    where = os.path.relpath(other.filename, tree.root_of(other.filename))
                    return cls.name.value, f"{where}:{other.span(node).row}"
    return None


# --- a provider adapter that sends the history its callers pass ------------------------------------------------

FORWARDING_CALLS = frozenset({"list", "tuple", "deepcopy", "copy"})


@dataclass(frozen=True, slots=True)
class Forwarded:
    param: str  # the parameter whose messages are sent: `messages`, `prompt_stack`
    function: str  # the adapter: `chat_completion`


RETRY_NAME = re.compile(r"retr|attempt|tries", re.I)


def conversation_loops(ctx: ModuleContext, node: cst.CSTNode) -> list[cst.CSTNode]:
    """The loops around `node` that may send a conversation again, without retry loops (`for _ in
    range(self.max_retry):`, `while attempts < 3:`, `while True:` left by a `break` right after the request)
    that resend the same request until it succeeds."""
    return [loop for loop in ctx.loops_around(node) if not retry_loop(ctx, loop, node)]


def retry_loop(ctx: ModuleContext, loop: cst.CSTNode, node: cst.CSTNode) -> bool:
    """The loop around the request `node` resends it until it succeeds: it is left as soon as the request succeeds
    (`for _ in range(3): try: r = create(...); break`), or it counts attempts by name (`for attempt in range(n)`,
    `while retries < 3`). A loop over a bare `_` that goes on after a success is a run of steps
    (`for _ in range(max_steps):`), not a retry."""
    if left_on_success(ctx, loop, node):
        return True
    if isinstance(loop, cst.For) and isinstance(loop.target, cst.Name) and not loop.target.value.strip("_"):
        return not _changes_the_request(ctx, loop, node)  # `for _ in range(n)`: n samples of one request, or n steps
    if isinstance(loop, cst.For):
        return isinstance(loop.target, cst.Name) and RETRY_NAME.search(loop.target.value) is not None
    if isinstance(loop, cst.While):
        return any(isinstance(n, cst.Name) and RETRY_NAME.search(n.value) and n.value.strip("_") for n in descendants(loop.test))
    return False


def left_on_success(ctx: ModuleContext, loop: cst.CSTNode, node: cst.CSTNode) -> bool:
    """`while True: try: response = post(...); break` (or `return ...`): the loop ends as soon as the request succeeds.
    The statement that follows the request is looked for past the end of the blocks it ends (`if reasoning: r =
    create(...)` then `return r` after the `if` / `else`)."""
    statement = ctx.statement_of(node)
    if not isinstance(loop, (cst.While, cst.For)) or not isinstance(statement, cst.SimpleStatementLine):
        return False
    # a `break` leaves only the innermost loop around the request; a `return` leaves them all
    leaves = (cst.Break, cst.Return) if ctx.enclosing(node, (cst.For, cst.While)) is loop else (cst.Return,)
    if any(isinstance(small, leaves) for small in statement.body):
        return True
    current: cst.CSTNode = statement
    while current is not loop:
        block = ctx.parent(current)
        body = list(getattr(block, "body", ()))
        position = next((i for i, s in enumerate(body) if s is current), None)
        if position is None:
            return False
        if position + 1 < len(body):
            following = body[position + 1]
            return isinstance(following, cst.SimpleStatementLine) and any(isinstance(small, leaves) for small in following.body)
        holder = ctx.parent(block)  # the if / else / try whose block this statement ends
        if isinstance(holder, (cst.Else, cst.Finally)) or (isinstance(holder, cst.If) and ctx.parent(holder) is not None
                                                             and isinstance(ctx.parent(holder), cst.If)):
            holder = _compound_of(ctx, holder)
        if holder is None or holder is loop or not isinstance(holder, (cst.If, cst.Try, cst.With)):
            return False
        current = holder
    return False


def _changes_the_request(ctx: ModuleContext, loop: cst.CSTNode, node: cst.CSTNode) -> bool:
    """A value the request reads is bound, grown or edited in the loop's body (`messages.append(...)`,
    `self.messages.append(...)`, `history = ...`): the loop sends a different request each pass. What it reads are the
    names and attribute chains of its argument values (not the keywords, nor the method called)."""
    memo = _CHANGES.setdefault(ctx, {})
    key = (id(loop), id(node))
    if key not in memo:
        memo[key] = _changed_in(ctx, loop, node)
    return memo[key]


_CHANGES: WeakKeyDictionary[ModuleContext, dict[tuple[int, int], bool]] = WeakKeyDictionary()


def _changed_in(ctx: ModuleContext, loop: cst.CSTNode, node: cst.CSTNode) -> bool:
    values = [a.value for a in node.args] if isinstance(node, cst.Call) else [node]
    read = {ctx.code(n) for v in values for n in (v, *descendants(v)) if isinstance(n, (cst.Name, cst.Attribute))} - {"self", "cls"}
    for changed in descendants(loop.body):
        if isinstance(changed, (cst.Assign, cst.AugAssign, cst.AnnAssign)):
            targets = [t.target for t in changed.targets] if isinstance(changed, cst.Assign) else [changed.target]
            if any(ctx.code(n) in read for t in targets for n in (t, *descendants(t)) if isinstance(n, (cst.Name, cst.Attribute))):
                if not (isinstance(changed, (cst.Assign, cst.AnnAssign)) and ctx.contains(changed, node)):
                    return True  # (the request's own `response = create(...)` changes nothing it reads)
        elif isinstance(changed, cst.Call) and isinstance(changed.func, cst.Attribute) and changed.func.attr.value in LIST_GROWERS \
                and ctx.code(changed.func.value) in read:
            return True
    return False


def _compound_of(ctx: ModuleContext, node: cst.CSTNode) -> cst.CSTNode | None:
    """The statement an `else:` / `elif` / `finally:` belongs to (the outermost `if` of an `elif` chain)."""
    current = ctx.parent(node)
    while isinstance(current, (cst.If, cst.Else)) and isinstance(ctx.parent(current), cst.If) and ctx.parent(current).orelse is current:
        current = ctx.parent(current)
    return current


def forwarded_history(ctx: ModuleContext, site: CallSite) -> Forwarded | None:
    """The sent messages are a history the sending function is given: the parameter itself, a copy, the
    parameter behind a leading system message (`[system] + messages`), or a list converted from it (a loop or a
    comprehension over it, a converter called with it). Such a function is a provider adapter, the one place all
    of an app's conversations go through. A list of new messages that only holds a parameter's text
    (`[{"role": "user", "content": prompt}]`) is a one-off request, not a forwarded history."""
    function = ctx.enclosing_function(site.node)
    messages = site.arg("messages")
    if function is None or messages is None:
        return None
    seen: set[int] = set()
    frontier: list[cst.BaseExpression] = [messages]
    for _ in range(4):
        following: list[cst.BaseExpression] = []
        for expr in frontier:
            for name in _list_sources(ctx, expr):
                bindings = list(ctx.assigned_values(name))
                param = next((b for b, _ in bindings if isinstance(b, cst.Param)), None)
                if param is not None:  # the sender, whichever of its helpers takes the parameter (or the function a
                    # closure that sends is nested in: `async def anext_token(): ... messages=messages` in `_async_generate`)
                    owner = ctx.enclosing_function(param)
                    outer = owner if owner is not None and ctx.contains(owner, function) else function
                    return Forwarded(name.value, outer.name.value)
                if id(name) in seen:
                    continue
                seen.add(id(name))
                following += [found for b, v in bindings for found in ([v] if v is not None else unpacked_values(ctx, b, into_functions=False))]
                scope = ctx.scope_of(name)
                for call in ctx.calls_on.get(name.value, []):  # `out.append(convert(m))` in `for m in messages:`
                    if not (call.func.attr.value in LIST_GROWERS and call.args and ctx.scope_of(call.func.value) is scope):  # type: ignore[attr-defined]
                        continue
                    added = call.args[-1].value
                    if call.func.attr.value == "extend":  # type: ignore[attr-defined]
                        following.append(added)
                    following += [_walked(loop) for loop in ctx.loops_around(call) if _converts_each(ctx, loop, added, name.value)]
        frontier = following
    return None


def from_parameter(ctx: ModuleContext, expr: cst.BaseExpression) -> bool:
    """Whether a value is made from a parameter of the function it is in (`system`, `messages[0]["content"]`,
    `self._format_tools(tools)`, `msg["content"]` for `msg in messages`), following names a few assignments back."""
    seen: set[int] = set()
    frontier = [expr]
    for _ in range(4):
        following: list[cst.BaseExpression] = []
        for node in frontier:
            for name in _text_names(ctx, node):
                if id(name) in seen or name.value in ("self", "cls"):
                    continue
                seen.add(id(name))
                for binding, value in ctx.assigned_values(name):
                    if isinstance(binding, cst.Param):
                        return True
                    loop = ctx.parent(binding)
                    if isinstance(loop, (cst.For, cst.CompFor)) and loop.target is binding:
                        following.append(loop.iter)
                    elif value is not None:
                        following.append(value)
                    else:
                        following += unpacked_values(ctx, binding, into_functions=False)
        frontier = following
    return False


# a function named for converting what it is given into a provider's format: `_convert_to_anthropic_messages`,
# `convert_tools_to_openai`, `to_anthropic_format`, `format_messages` (it carries its argument's text, not its own)
CONVERTER = re.compile(r"^_*(?:convert|transform|translate|adapt)_|_to_(?:anthropic|openai|claude|provider|api|llm)(?:_|$)"
                       r"|^_*to_(?:anthropic|openai|claude|provider|api)(?:_|$)|^_*format_(?:messages|tools|history|conversation)$", re.I)


def _text_names(ctx: ModuleContext, node: cst.CSTNode) -> Iterator[cst.Name]:
    """The names whose text a value carries: not the arguments of a function called by name (`render(user)`
    builds its own text from them, a builder of the tree or a library's), but those of methods
    (`self._format_tools(tools)`, `"\\n".join(parts)`) and of `str()` / `list()`."""
    if isinstance(node, cst.Name):
        yield node
        return
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and CONVERTER.search(node.func.value):
        for arg in node.args:  # `_convert_to_anthropic_messages(conversation)`: the callers' text, in the provider's format
            yield from _text_names(ctx, arg.value)
        return
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value not in FORWARDING_CALLS | {"str"}:
        return
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
        root = node.func.value
        while isinstance(root, cst.Attribute):
            root = root.value
        if isinstance(root, cst.Name) and any(isinstance(b, (cst.Import, cst.ImportFrom)) for b, _ in ctx.assigned_values(root)):
            return  # prompts.render(user): a function of a module
    if isinstance(node, (cst.ListComp, cst.GeneratorExp)):  # what is listed, not what picks it (`if t in agent.allowed`)
        yield from _text_names(ctx, node.elt)
        yield from _text_names(ctx, node.for_in.iter)
        return
    for child in node.children:
        yield from _text_names(ctx, child)


def _walked(loop: cst.CSTNode) -> cst.BaseExpression:
    """What a loop walks: `messages` of `for m in messages:` or of `while i < len(messages):`."""
    if isinstance(loop, cst.For):
        return loop.iter
    return _indexed_list(loop)  # type: ignore[return-value]


def _indexed_list(loop: cst.CSTNode) -> cst.BaseExpression | None:
    """`messages` of `while i < len(messages):` (a loop that walks a list by index)."""
    test = loop.test if isinstance(loop, cst.While) else None
    for node in descendants(test) if test is not None else ():
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "len" and node.args:
            return node.args[0].value
    return None


def _converts_each(ctx: ModuleContext, loop: cst.CSTNode, added: cst.BaseExpression, target: str) -> bool:
    """`for m in messages: out.append({... m ...})` (or `while i < len(messages): m = messages[i]` ...) with `out` made
    before the loop: each message converted into the list that is sent, directly or through a local built from
    the element (`cleaned = {"role": m["role"], ...}; out.append(cleaned)`). A list made anew inside the loop
    (`messages = [...]` per document) starts a new conversation each time round."""
    body = descendants(loop.body)  # type: ignore[attr-defined]
    if isinstance(loop, cst.For):
        element = {n.value for n in descendants(loop.target) if isinstance(n, cst.Name)}
    elif (walked := _indexed_list(loop)) is not None:
        source = ctx.code(walked)
        element = {t.target.value for n in body if isinstance(n, cst.Assign)
                   for t in n.targets if isinstance(t.target, cst.Name) and source in ctx.code(n.value)}
    else:
        return False
    for _ in range(2):  # role = m.role; blocks.append({"text": m.content}); msg["content"] = m.text: built from the element
        element |= {t.target.value for n in body if isinstance(n, cst.Assign) and names_in(n.value) & element
                    for t in n.targets if isinstance(t.target, cst.Name)}
        element |= {t.target.value.value for n in body if isinstance(n, cst.Assign) and names_in(n.value) & element
                    for t in n.targets if isinstance(t.target, cst.Subscript) and isinstance(t.target.value, cst.Name)}
        element |= {n.func.value.value for n in body if isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute)
                    and n.func.attr.value in LIST_GROWERS and isinstance(n.func.value, cst.Name) and n.args
                    and names_in(n.args[-1].value) & element}
    element.discard(target)
    made_inside = any(isinstance(n, cst.Assign) and any(ctx.code(t.target) == target for t in n.targets) for n in descendants(loop.body))
    return not made_inside and any(isinstance(n, cst.Name) and n.value in element for n in descendants(added))


def _list_sources(ctx: ModuleContext, expr: cst.BaseExpression) -> Iterator[cst.Name]:
    """The names whose list of messages `expr` passes on."""
    if isinstance(expr, cst.Await):
        expr = expr.expression
    if isinstance(expr, cst.Name):
        yield expr
    elif isinstance(expr, cst.Attribute):  # prompt_stack.messages: the object the messages belong to
        root = expr
        while isinstance(root, cst.Attribute):
            root = root.value
        if isinstance(root, cst.Name) and root.value not in ("self", "cls"):
            yield root
    elif isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Add):
        yield from _list_sources(ctx, expr.left)
        yield from _list_sources(ctx, expr.right)
    elif isinstance(expr, (cst.List, cst.Tuple)):
        for element in expr.elements:
            if isinstance(element, cst.StarredElement):
                yield from _list_sources(ctx, element.value)
    elif isinstance(expr, (cst.ListComp, cst.GeneratorExp)):
        yield from _list_sources(ctx, expr.for_in.iter)
    elif isinstance(expr, cst.BooleanOperation):  # llm_request.contents or []
        yield from _list_sources(ctx, expr.left)
    elif isinstance(expr, cst.Subscript):
        yield from _list_sources(ctx, expr.value)
    elif isinstance(expr, cst.Call):
        func = expr.func
        called = func.value if isinstance(func, cst.Name) else func.attr.value if isinstance(func, cst.Attribute) else ""
        if called == "copy" and isinstance(func, cst.Attribute):
            yield from _list_sources(ctx, func.value)
        elif expr.args and (called in FORWARDING_CALLS or CONVERTER.search(called)):
            for arg in expr.args:
                if arg.keyword is None:
                    yield from _list_sources(ctx, arg.value)


# a function that converts a whole history into the provider's format: `self._format_messages(messages)`,
# `to_anthropic(msgs)`, `self.__to_anthropic_messages(prompt_stack.messages)`
CONVERTER = re.compile(r"messages|history|convert|format|to_|transform|prepare|build|serialize|adapt", re.I)
