"""Prompt material read from a directory listing in the file system's order (CL103).

Few-shot examples, documentation, skills or instructions kept as files are often loaded with `glob.glob`,
`Path.glob`, `os.listdir` or `os.walk` and joined into a prompt in the order the listing gives. That order is the
file system's: it differs between machines, file systems and checkouts, so two deployments (or a restart on
another node) build the same prompt in another order and share no cached prefix. The prompt itself is usually
assembled elsewhere (a template, a framework), so this is recognized by shape, in one function: an unsorted
listing, each listed file read, the contents collected, in a function or list named for prompt material.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from cachelint.check.module import COUNTED_NAME, ModuleContext, called_name, descendants, is_model_tool, last_name, sorted_in
from cachelint.check.values import returns_text

LISTING_FUNCTIONS = frozenset({"glob.glob", "glob.iglob", "os.listdir", "os.scandir", "os.walk"})
LISTING_METHODS = frozenset({"glob", "rglob", "iterdir"})  # pathlib.Path's
# reading what a listed path holds: open(path), path.read_text(), yaml.safe_load(f), Conversation.from_yaml(path)
READS = re.compile(r"^(?:open|read_text|read_bytes|read|readline|readlines|load|safe_load|loads|from_yaml|from_file|from_json|from_path"
                   r"|from_dict|load_file|load_yaml|load_json|parse_file|read_file|read_yaml)$|^_?(?:load|read|parse)_\w*(?:file|path|md|ya?ml|jsonl?|txt|toml|text)$"
                   r"|^_?(?:load|read|parse)_(?:\w+_)?skills?$")  # self.load_skill(path), self._parse_skill(path)
# what the collected text is for
PROMPT_MATERIAL = re.compile(r"prompt|example|instruction|docs?\b|docs_|_docs|template|system|few_?shot|knowledge|persona"
                             r"|guideline|\brules?\b|_rules?\b|rules?_|skill|haystack", re.I)
# a manual the agent is given (`manual`, `generate_manual`, `tool_manuals`): a noun, not `load_manual_overrides`
MANUAL = re.compile(r"(?:^|_)manuals?$", re.I)
COLLECTS = frozenset({"append", "extend", "join", "update"})


@dataclass(frozen=True, slots=True)
class ListedMaterial:
    node: cst.Call  # the listing
    listing: str  # its code: `glob.glob(path.join(folder, "*.yaml"))`
    collected: str  # where the contents go: `example_conv_pool`
    read: bool = True  # False: the entries are collected without being read (a skills folder's names and paths)
    text: bool = False  # the function returns text made of them (a prompt), not the objects read (tool schemas)


LISTED_NAMES = frozenset({"glob", "iglob", "listdir", "scandir", "walk"}) | LISTING_METHODS


def unsorted_listings(ctx: ModuleContext) -> Iterator[tuple[cst.Call, cst.FunctionDef, set[str]]]:
    """(listing, its function, the names that hold it) for each directory listing in a function that is never
    sorted: not inside `sorted(...)`, and no name holding it sorted in the function."""
    for call in ctx.nodes(cst.Call):
        if called_name(call) not in LISTED_NAMES:
            continue  # a syntactic test first: qualified names cost the module's scope metadata
        if not _is_listing(ctx, call) or _inside_sorted(ctx, call):
            continue
        function = ctx.enclosing_function(call)
        if function is None:
            continue
        holders = _holders(ctx, function, call)
        if not any(sorted_in(ctx, function, holder) for holder in holders):
            yield call, function, holders


def listed_prompt_material(ctx: ModuleContext) -> list[ListedMaterial]:
    """The module's listings of prompt material, worked out once (CL103 reports them, CL201 leaves them out)."""
    found = ctx.memo.get("listed_material")
    if found is None:
        found = ctx.memo["listed_material"] = list(_listed_prompt_material(ctx))
    return found  # type: ignore[return-value]


def _listed_prompt_material(ctx: ModuleContext) -> Iterator[ListedMaterial]:
    for call, function, holders in unsorted_listings(ctx):
        if ".py" in ctx.code(call):
            continue  # `glob("skills/*.py")`: code to import or run, not text for a prompt
        if is_model_tool(function):
            continue  # what a tool returns is a tool result: the conversation keeps it as it was sent
        found, read = _collected_reads(ctx, function, call, holders), True
        if found is None and SKILL_FILE.search(ctx.code(function)):  # (the loop itself names the file: _collected_entries)
            found, read = _collected_entries(ctx, function, call, holders), False
        if found is not None and (PROMPT_MATERIAL.search(function.name.value) or PROMPT_MATERIAL.search(found)
                                  or any(PROMPT_MATERIAL.search(h) for h in holders) or PROMPT_MATERIAL.search(ctx.code(call))
                                  or any(MANUAL.search(name) for name in (function.name.value, found, *holders))) \
                and not _only_drawn_from(ctx, found):
            yield ListedMaterial(call, " ".join(ctx.code(call).split()), found, read, returns_text(ctx, function))


SKILL_FILE = re.compile(r"SKILL\.md", re.I)  # a skills folder: what is listed is the set of skills a prompt names


# a function that does something to the skills it lists (installs, checks, packages them), not one that finds them
SKILL_ACTION = re.compile(r"install|copy|sync|valid|check|verify|lint|doctor|package|export|upload|delete|remove|clean|migrat", re.I)


def _collected_entries(ctx: ModuleContext, function: cst.FunctionDef, call: cst.Call, holders: set[str]) -> str | None:
    """A skills folder listed into entries without reading them (`for d in base.iterdir(): entries.append({"name":
    d.name, "path": str(d / "SKILL.md")})`, or a comprehension over the listing): the list of skills the prompt names
    comes out in the listing's order. The list is what the function finds: returned, or kept on the object; not in a
    function named for what it does to them (`install_skills`, `validate_skills`)."""
    if SKILL_ACTION.search(function.name.value):
        return None
    pattern = call.args[0].value if call.args and called_name(call) in ("glob", "rglob") else None
    if isinstance(pattern, cst.SimpleString) and not SKILL_FILE.search(pattern.value):
        return None  # a listing of a skill's own files (packaging it, `rglob("*")`), not of the skills
    returned = {ctx.code(r) for r in ctx.returns_of(function) if r is not None}
    for loop in (n for n in descendants(function) if isinstance(n, (cst.For, cst.CompFor))):
        if not (loop.iter is call or ctx.code(loop.iter) in holders):
            continue
        scope = loop if isinstance(loop, cst.For) else ctx.parent(loop)
        if not SKILL_FILE.search(ctx.code(scope)):
            continue  # a loop that never looks for the skill's file
        if isinstance(loop, cst.CompFor):  # [{"name": d.name, ...} for d in base.iterdir() if (d / "SKILL.md").exists()]
            statement = ctx.enclosing(scope, (cst.Assign, cst.Return))
            if isinstance(statement, cst.Return) and statement.value is scope:
                return f"{function.name.value}()"
            target = statement.targets[0].target if isinstance(statement, cst.Assign) and len(statement.targets) == 1 else None
            if target is not None and (ctx.code(target) in returned or ctx.code(target).startswith("self.")):
                return ctx.code(target)
            continue
        element = {n.value for n in descendants(loop.target) if isinstance(n, cst.Name)}
        element |= {t.target.value for a in descendants(loop.body) if isinstance(a, cst.Assign) and _mentions(a.value, element)
                    for t in a.targets if isinstance(t.target, cst.Name)}  # name = skill_dir.name
        for node in descendants(loop.body):
            if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "append" \
                    and node.args and _mentions(node.args[0].value, element) and isinstance(node.func.value, (cst.Name, cst.Attribute)) \
                    and (ctx.code(node.func.value) in returned or ctx.code(node.func.value).startswith("self.")) \
                    and not sorted_in(ctx, function, ctx.code(node.func.value)):
                return ctx.code(node.func.value)
    return None


DRAWS = frozenset({"sample", "choice", "choices", "shuffle"})  # random's: what is drawn, not in what order


def _only_drawn_from(ctx: ModuleContext, collected: str) -> bool:
    """Every read of the collection elsewhere in the module draws from it at random (`sample(self.templates, 1)[0]`,
    `random.choice(pool)`): a pool, each prompt made from one item of it, so the order it was listed in never becomes
    the order of a prompt's text."""
    last = collected.split(".")[-1]
    uses = [n for n in ctx.nodes(cst.Attribute) if n.attr.value == last and ctx.code(n) == collected] if "." in collected \
        else [n for n in ctx.nodes(cst.Name) if n.value == collected]
    reads = 0
    for node in uses:
        parent = ctx.parent(node)
        if isinstance(parent, cst.AssignTarget) or (isinstance(parent, cst.Attribute) and parent.value is node
                                                    and parent.attr.value in ("append", "extend")):
            continue  # the binding (`self.pool = []`) and what fills it
        call = ctx.parent(parent) if isinstance(parent, cst.Arg) else None
        if not (isinstance(call, cst.Call) and call.args[0] is parent and called_name(call) in DRAWS):
            return False
        reads += 1
    return reads > 0


def _is_listing(ctx: ModuleContext, call: cst.Call) -> bool:
    """By the code alone (no scope metadata): `glob.glob(...)`, `os.listdir(...)`, `listdir(...)` imported by name,
    `path.glob(...)` / `rglob` / `iterdir` on a path."""
    if ctx.code(call.func) in LISTING_FUNCTIONS:
        return True
    if isinstance(call.func, cst.Name):  # from glob import glob; from os import listdir
        return any(f"{module}.{call.func.value}" in LISTING_FUNCTIONS for module in ("glob", "os"))
    return isinstance(call.func, cst.Attribute) and call.func.attr.value in LISTING_METHODS and not (
        isinstance(call.func.value, cst.Name) and call.func.value.value == "glob")


def _inside_sorted(ctx: ModuleContext, call: cst.Call) -> bool:
    for ancestor in ctx.ancestors(call):
        if isinstance(ancestor, cst.Call) and isinstance(ancestor.func, cst.Name) and ancestor.func.value == "sorted":
            return True
        if isinstance(ancestor, (cst.SimpleStatementLine, cst.For, cst.FunctionDef)):
            return False
    return False


def _holders(ctx: ModuleContext, function: cst.FunctionDef, call: cst.Call) -> set[str]:
    """Names of `function` that hold the listing: assigned from it, filtered or joined from such a name, or the
    file names of `for root, dirs, files in os.walk(...)`."""
    holders: set[str] = set()
    statement = ctx.enclosing(call, (cst.Assign, cst.For, cst.AnnAssign))
    if isinstance(statement, cst.Assign) and len(statement.targets) == 1 and isinstance(statement.targets[0].target, cst.Name):
        holders.add(statement.targets[0].target.value)
    elif isinstance(statement, cst.AnnAssign) and isinstance(statement.target, cst.Name):
        holders.add(statement.target.value)
    elif isinstance(statement, cst.For) and statement.iter is call and isinstance(statement.target, cst.Tuple):
        holders |= {n.value for n in descendants(statement.target) if isinstance(n, cst.Name)}
    for _ in range(3):
        for assign in (n for n in descendants(function) if isinstance(n, cst.Assign)):
            target = assign.targets[0].target if len(assign.targets) == 1 else None
            if isinstance(target, cst.Name) and target.value not in holders and any(
                    isinstance(n, cst.Name) and n.value in holders for n in descendants(assign.value)) and _passes_on(assign.value):
                holders.add(target.value)
    return holders


def _passes_on(value: cst.BaseExpression) -> bool:
    """A list made of the listing's entries: a comprehension over it, a concatenation, `list(...)`."""
    if isinstance(value, (cst.ListComp, cst.GeneratorExp, cst.BinaryOperation, cst.Name)):
        return True
    return isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and value.func.value in ("list", "filter")


def _collected_reads(ctx: ModuleContext, function: cst.FunctionDef, call: cst.Call, holders: set[str]) -> str | None:
    """Where the contents of the listed files are collected, when a loop over the listing reads each file."""
    for loop in (n for n in descendants(function) if isinstance(n, (cst.For, cst.CompFor))):
        iterated = loop.iter
        if not (iterated is call or ctx.contains(iterated, call) or ctx.code(iterated) in holders):
            continue
        element = {n.value for n in descendants(loop.target) if isinstance(n, cst.Name)}
        body = loop.body if isinstance(loop, cst.For) else ctx.parent(loop)
        element = _paths_of(body, element)  # full_path = os.path.join(folder, entry); skill_file = os.path.join(full_path, "SKILL.md")
        reads = [c for c in descendants(body) if isinstance(c, cst.Call) and READS.match(called_name(c)) and _mentions(c, element)]
        if not reads:
            continue
        contents, handles = _contents(ctx, body, reads)
        if isinstance(loop, cst.CompFor):  # [open(p).read() for p in listing]: the comprehension is the collection
            statement = ctx.enclosing(loop, (cst.Assign,))
            target = statement.targets[0].target if isinstance(statement, cst.Assign) and len(statement.targets) == 1 else None
            return ctx.code(target) if target is not None else "the list"
        for node in descendants(body):
            if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in COLLECTS \
                    and not isinstance(node.func.value, (cst.SimpleString, cst.FormattedString)) \
                    and ctx.code(node.func.value) not in ("os.path", "posixpath", "ntpath") \
                    and _holds_text(ctx, node, reads, contents, handles):
                return ctx.code(node.func.value)  # (a path joined, or names and paths collected while the text goes elsewhere, are not)
            if isinstance(node, cst.AugAssign) and isinstance(node.operator, cst.AddAssign) and not isinstance(node.value, (cst.Integer, cst.Float)) \
                    and not COUNTED_NAME.search(last_name(node.target) or ""):
                return ctx.code(node.target)  # `text += content`; `idx += 1`, `total_tokens += usage[...]` count, they collect nothing
            if isinstance(node, cst.Assign) and isinstance(node.targets[0].target, cst.Subscript) \
                    and isinstance(node.targets[0].target.slice[0].slice, cst.Index):  # `dirs[:] = ...` prunes a walk, keys nothing
                table = ctx.code(node.targets[0].target.value)
                if _read_in_order(ctx, table) or (table in {ctx.code(r) for r in ctx.returns_of(function)}
                                                  and _read_in_order(ctx, f"{function.name.value}()")):
                    return table  # a table looked up by key is not read in order; a later collection may be
    return None


WALKS = frozenset({"values", "items", "keys"})
WHOLE = frozenset({"dumps", "str", "repr", "list", "tuple", "join"})  # the whole table rendered, in its order


def _read_in_order(ctx: ModuleContext, table: str) -> bool:
    """A dict filled file by file (`configs[example["name"]] = example`) is a table looked up by key, whose order
    matters only where the module walks it: `table.values()` / `.items()` / `.keys()`, a loop over it, or the whole
    of it rendered (`json.dumps(table)`, `str(table)`); `table` may be the call of the function that returns it
    (`load_examples()`)."""
    for node in ctx.nodes(cst.Call):
        if isinstance(node.func, cst.Attribute) and node.func.attr.value in WALKS and ctx.code(node.func.value) == table \
                and not _inside_sorted(ctx, node):  # sorted(table.values(), key=...): read in a defined order
            return True
        if called_name(node) in WHOLE and any(ctx.code(a.value) == table for a in node.args):
            return True
    return any(ctx.code(loop.iter) == table for loop in (*ctx.nodes(cst.For), *ctx.nodes(cst.CompFor)))


def _paths_of(body: cst.CSTNode, element: set[str]) -> set[str]:
    """The loop's element and the names bound from it in the body, step by step (`skill_dir = join(folder, entry)`, then
    `skill_file = join(skill_dir, "SKILL.md")`)."""
    assigns = [a for a in descendants(body) if isinstance(a, cst.Assign)]
    for _ in range(4):
        more = {t.target.value for a in assigns if _mentions(a.value, element) for t in a.targets if isinstance(t.target, cst.Name)}
        if more <= element:
            break
        element = element | more
    return element


def _contents(ctx: ModuleContext, body: cst.CSTNode, reads: list[cst.Call]) -> tuple[set[str], set[str]]:
    """(contents, handles): the names in the loop's body bound to what the listed files say (from a read, `text =
    path.read_text()`, or from such a name or a handle, `example = json.load(f)`), and the file handles (`with
    open(path) as f`), which are not the text themselves (`f.name`, `f.tell()`)."""
    handles = {node.asname.name.value for node in descendants(body) if isinstance(node, cst.WithItem) and node.asname is not None
               and isinstance(node.asname.name, cst.Name) and any(_holds(ctx, node.item, r) for r in reads)}
    names: set[str] = set()
    for _ in range(3):
        for node in descendants(body):
            if isinstance(node, cst.Assign) and (any(_holds(ctx, node.value, r) for r in reads) or _mentions(node.value, names)
                                                 or _reads_handle(node.value, handles)):
                names |= {t.target.value for t in node.targets if isinstance(t.target, cst.Name)}
    return names, handles


def _reads_handle(node: cst.CSTNode, handles: set[str]) -> bool:
    """A read of an open file's text: `f.read()`, `json.load(f)`, `yaml.safe_load(f)`."""
    return any(isinstance(n, cst.Call) and READS.match(called_name(n)) and _mentions(n, handles) for n in (node, *descendants(node)))


def _holds_text(ctx: ModuleContext, node: cst.CSTNode, reads: list[cst.Call], contents: set[str], handles: set[str]) -> bool:
    return _mentions(node, contents) or any(_holds(ctx, node, r) for r in reads) or _reads_handle(node, handles)


def _holds(ctx: ModuleContext, outer: cst.CSTNode, node: cst.CSTNode) -> bool:
    return outer is node or ctx.contains(outer, node)


def _mentions(node: cst.CSTNode, names: set[str]) -> bool:
    return any(isinstance(n, cst.Name) and n.value in names for n in descendants(node))


# --- tools loaded from a directory listing (CL201) ------------------------------------------------------------

# a function that adds one tool to an agent or a registry: add_tool(agent, tool), self.register_tool(t)
TOOL_ADDERS = re.compile(r"^_?(?:add|register|append|attach|include)_(?:\w+_)?tools?$|^_?(?:add|register)tools?$"
                         r"|^_?(?:load|register)_(?:\w+_)?(?:tools?|actions?|plugins?)_(?:file|def|definition|spec|schema)s?$", re.I)
# a list of tools, not of their names, metadata or past calls: tools, tools_to_add, all_tools, all_toolsets, tool_modules
TOOL_HOLDER = re.compile(r"^(?:\w+_)?(?:tools|toolsets|toolkits)(?:_to_add|_list)?$|^tool_(?:list|modules?|specs?|defs?|schemas?)$", re.I)
# a function that lists what is there to show or pick from, not what an agent is given: _get_available_tools()
LISTS_FOR_DISPLAY = re.compile(r"available|metadata|catalog|^_?(?:list|show|print|display)_", re.I)


@dataclass(frozen=True, slots=True)
class ListedTools:
    node: cst.Call  # the listing
    listing: str  # its code: `folder_path.iterdir()`
    tools: str  # where the tools go: `tools_to_add`, `add_tool()`, or the generator that yields them: `_iter_tool_classes()`
    yielded: bool = False  # the tools are yielded by a generator named for them, not put into a list or a registry


def tools_loaded_from_listings(ctx: ModuleContext) -> Iterator[ListedTools]:
    """`for file in tools_folder.iterdir(): for tool in load(file): add_tool(agent, tool)`: tools (tool files, OpenAPI
    schemas, plug-ins) loaded in a loop over an unsorted directory listing. The tool list takes the file system's
    order, which differs between machines, file systems and checkouts, and tools open the prefix."""
    for call, function, holders in unsorted_listings(ctx):
        if LISTS_FOR_DISPLAY.search(function.name.value):
            continue
        added = _tools_added(ctx, function, call, holders)
        if added is not None:
            yield ListedTools(call, " ".join(ctx.code(call).split()), *added)


def _tools_added(ctx: ModuleContext, function: cst.FunctionDef, call: cst.Call, holders: set[str]) -> tuple[str, bool] | None:
    """Where a loop over the listing puts tools (a list or registry named for tools, or a function that adds one), and
    whether it yields them instead (a generator named for tools)."""
    for loop in (n for n in descendants(function) if isinstance(n, cst.For)):
        if not (loop.iter is call or ctx.contains(loop.iter, call) or ctx.code(loop.iter) in holders):
            continue
        for node in descendants(loop.body):
            if not isinstance(node, cst.Call):
                continue
            name = called_name(node)
            if TOOL_ADDERS.match(name) and not _registry_sorted(ctx, name):
                return f"{name}()", False
            if isinstance(node.func, cst.Attribute) and name in ("append", "extend", "add", "insert", "register") \
                    and TOOL_HOLDER.search(last_name(node.func.value) or ""):
                return ctx.code(node.func.value), False
        if TOOL_YIELDER.search(function.name.value) and any(isinstance(n, cst.Yield) and ctx.enclosing_function(n) is function
                                                            for n in descendants(loop.body)):
            return f"{function.name.value}()", True  # def _iter_tool_classes(paths): for path in base.rglob("*.py"): yield ...
        if TOOL_YIELDER.search(function.name.value) and _collected_and_returned(ctx, function, loop):
            return f"{function.name.value}()", True  # def discover_module_tools(name): for py in d.glob("*.py"): results.append(...)
    return None


def _collected_and_returned(ctx: ModuleContext, function: cst.FunctionDef, loop: cst.For) -> bool:
    """The loop appends to a list that its function returns, unsorted: a function named for the tools it finds hands
    them back in the listing's order. Not where the function sorts the list (`results.sort()`), nor where a caller
    in the tree sorts what it hands back (`sorted(discover_tools(d))`)."""
    collected = {ctx.code(n.func.value) for n in descendants(loop.body) if isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute)
                 and n.func.attr.value in ("append", "extend") and isinstance(n.func.value, cst.Name)}
    returned = {n.value.value for n in descendants(function.body) if isinstance(n, cst.Return) and isinstance(n.value, cst.Name)
                and n.value.value in collected and ctx.enclosing_function(n) is function}
    if not returned:
        return False
    body = ctx.code(function.body)
    if any(re.search(rf"\b{re.escape(name)}\.sort\(|\b{re.escape(name)}\s*=\s*sorted\(", body) for name in returned):
        return False
    return not _sorted_by_a_caller(ctx, function.name.value)


def _sorted_by_a_caller(ctx: ModuleContext, name: str) -> bool:
    """A caller in this module or another of the tree sorts what `name` hands back: `sorted(discover_tools(d))`."""
    from cachelint.check.static_prefix import caller_files

    wrapped = re.compile(rf"\bsorted\(\s*(?:[\w.]+\.)?{re.escape(name)}\(")
    if wrapped.search(ctx.source):
        return True
    for path in caller_files(ctx.filename, name):
        try:
            with open(path, encoding="utf-8", errors="replace") as file:
                if wrapped.search(file.read()):
                    return True
        except OSError:
            continue
    return False


def _registry_sorted(ctx: ModuleContext, loader: str) -> bool:
    """The loader (`_load_action_file`) fills a registry (`FunctionManager._actions[key] = data`) that this module reads
    only sorted (`sorted(FunctionManager._actions.items())`): the load order never reaches the tools."""
    filled = {ctx.code(t.target.value) for f in ctx.functions.get(loader, []) + [f for k, fs in ctx.functions.items()
                                                                                  if k.endswith("." + loader) for f in fs]
              for n in descendants(f.body) if isinstance(n, cst.Assign) for t in n.targets if isinstance(t.target, cst.Subscript)}
    if not filled:
        return False
    return any(any(code in ctx.code(a.value) for code in filled for a in call.args) for call in ctx.calls_by_name.get("sorted", []))


# a generator named for the tools it yields: _iter_tool_classes, discover_tools, load_plugins
TOOL_YIELDER = re.compile(r"(?:^|_)(?:tools|tool_?class(?:es)?|plugins)$", re.I)

