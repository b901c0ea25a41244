"""A bounded, explainable data flow: where the values of a call's prefix arguments come from.

For each prefix argument of an LLM call site (system, tools, messages, instructions, input, ...) the walker
follows the expression back through assignments, f-strings, `.format`, `%`, `+`, `str.join`, list and
dict literals, `append` / `extend` / `insert` and same-module functions, and records facts about the
leaves: a volatile call, an unsorted `json.dumps`, an iteration over an unordered source, a per-request
parameter. Rules turn facts into findings. The walk is bounded in depth and never leaves the module.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, replace
from functools import cached_property

import libcst as cst

from cachelint.check.callsites import CallSite, is_system_message
from cachelint.check.depends import positional_index
from cachelint.check.module import LIST_GROWERS, ModuleContext, argument_for, called_name, declared_in, declared_outside, descendants, last_name

MAX_DEPTH = 24
MAX_FRAMES = 6  # calls followed into functions (or out to their callers) at once
MAX_CALLERS = 8  # callers of one function whose arguments are followed
MAX_CALLER_LEVELS = 2  # from a parameter out to its callers, and from theirs to their callers, no further
MAX_HOPS = 2  # modules of the linted tree followed from the linted one (a re-export counts as the same hop)

# qualified name -> (how the value changes, label)
VOLATILE_CALLS: dict[str, str] = {
    **{f"datetime.datetime.{n}": "call" for n in ("now", "utcnow", "today", "fromtimestamp")},
    "datetime.date.today": "day",
    **{f"time.{n}": "call" for n in ("time", "time_ns", "monotonic", "monotonic_ns", "perf_counter", "perf_counter_ns", "ctime", "asctime", "localtime", "gmtime")},
    "time.strftime": "call",
    **{f"uuid.{n}": "call" for n in ("uuid1", "uuid4", "uuid6", "uuid7")},
    **{f"random.{n}": "call" for n in ("random", "randint", "randrange", "choice", "choices", "sample", "uniform", "getrandbits", "randbytes", "gauss")},
    **{f"secrets.{n}": "call" for n in ("token_hex", "token_urlsafe", "token_bytes", "randbelow", "choice", "randbits")},
    "os.urandom": "call",
    "os.getpid": "process",
    "os.getppid": "process",
    "threading.get_ident": "call",
    **{f"arrow.{n}": "call" for n in ("now", "utcnow")},
    **{f"pendulum.{n}": "call" for n in ("now", "today", "yesterday", "tomorrow")},
    "pendulum.today": "day",
    **{f"pandas.Timestamp.{n}": "call" for n in ("now", "today", "utcnow")},
    "django.utils.timezone.now": "call",
    "pandas.Timestamp.today": "call",
    "os.path.getmtime": "file",
    "os.path.getctime": "file",
    "os.path.getatime": "call",
}
# a measure of the conversation so far: its context size or token count (`approximate_context_size`,
# `num_tokens_from_messages`, `count_message_tokens(messages)`)
CONVERSATION_SIZE = re.compile(r"^(?:get_|compute_|calc(?:ulate)?_|estimate_|approximate_)*(?:context|history|conversation|chat|thread|session)_"
                               r"(?:size|length|tokens|token_count)$|^(?:get_)?num_tokens_from_messages$|^count_(?:message_|history_|context_)tokens$")
LISTING_CALL = re.compile(r"\b(?:glob|iglob|rglob|listdir|scandir|iterdir)\(|os\.walk\(")
# a random draw: handed to the prompt's function by a caller, it is what that request is about
SAMPLED = ("random.",)
VOLATILE_NAMES = frozenset(VOLATILE_CALLS)  # what qualified_name_in looks clocks, randoms and ids up in
VOLATILE_ATTRIBUTES = {"st_mtime": "file", "st_ctime": "file", "st_atime": "call", "st_mtime_ns": "file"}
UNORDERED_CALLS = {
    "os.listdir": "os.listdir()",
    "os.scandir": "os.scandir()",
    "os.walk": "os.walk()",
    "glob.glob": "glob.glob()",
    "glob.iglob": "glob.iglob()",
    "builtins.set": "a set",
    "builtins.frozenset": "a set",
}
# (one MCP server's `list_tools()` is left out: a server lists its tools in its own fixed order; tools merged from
# several servers in connection order are CL201's merged_provider_tools)
UNORDERED_METHODS = {"iterdir": "Path.iterdir()", "glob": "Path.glob()", "rglob": "Path.rglob()"}
# a message object's constructor: `ChatMessage(message=text, message_type=SYSTEM)`, `SystemMessage(text)`: its text
# arguments are the prompt itself, not inputs of an unknown computation
MESSAGE_TEXT_ARGS = ("content", "message", "text")
SET_ANNOTATION = re.compile(r"(?:set|Set|frozenset|FrozenSet|AbstractSet)\b")  # def run(enabled: set[str])
MESSAGE_CLASS = re.compile(r"(?:Message|Content|Block|Part)(?:Simple|Param)?$")
STRING_BUILDERS = {"builtins.str", "builtins.repr", "textwrap.dedent", "textwrap.indent", "inspect.cleandoc", "builtins.list", "builtins.tuple"}
ORDERING = {"builtins.sorted"}
GRANULARITY_WORDS = {
    "call": "changes on every call",
    "second": "changes every second",
    "minute": "changes every minute",
    "hour": "changes every hour",
    "day": "changes every day",
    "month": "changes every month",
    "file": "changes whenever the file changes",
    "process": "differs per process",
    "turn": "changes every turn",
}
# a parameter annotated as a dict, optional or not: dict[str, Any], Optional[Dict[str, Any]], Mapping | None
DICT_ANNOTATION = re.compile(r"^(?:(?:typing\.)?Optional\[\s*)?(?:typing\.)?(?:dict|Dict|Mapping|MutableMapping)\b")
COARSE_GRANULARITY = frozenset({"day", "month", "process"})  # changes at most once a day (or per process)
_COARSE = COARSE_GRANULARITY
ARG_WORDS = {
    "system": "system prompt",
    "tools": "tool definitions",
    "messages": "earlier messages",
    "instructions": "instructions",
    "input": "earlier input items",
}


@dataclass(frozen=True, slots=True)
class Landing:
    """Where in the request a value ends up."""

    arg: str
    prefix: bool = True  # False: the newest turn (not reused yet)
    cache_block: cst.Dict | cst.Call | None = None  # the enclosing content block (a literal or `dict(...)`) that carries cache_control, if any
    role: str | None = None  # the role of the enclosing message dict, when it is a literal
    item: bool = False  # inside one element (a tool definition, a message): a comprehension here builds a field, not the list
    closing: bool = False  # in the last of the system messages that open a list, after one or more others: nothing static follows

    @property
    def words(self) -> str:
        if self.role in ("system", "developer") and self.arg in ("messages", "input"):
            return "system prompt"
        return ARG_WORDS[self.arg]


@dataclass(slots=True)
class Fact:
    kind: str  # volatile | unsorted_json | dict_repr | unordered | param | counter
    node: cst.CSTNode
    landing: Landing
    label: str  # what the value is, in the user's words: "datetime.now()", "os.listdir()"
    granularity: str = "call"
    when: str = "per call"  # per call | per conversation | per process
    extra: dict = field(default_factory=dict)

    @property
    def origin(self) -> str:
        """" (in prompts.py:4)" for a value found in another module of the tree, else ""."""
        return f" (in {self.extra['origin']})" if self.extra.get("origin") else ""

    @property
    def severe(self) -> bool:
        """Changes within a conversation, not just between processes or days."""
        return self.when == "per call" and self.granularity not in _COARSE


# a function named for building prompt text: get_system_message, prepare_system_prompt, get_tooluse_prompt
PROMPT_BUILDER = re.compile(r"prompt|system|instruction|template|messages?(?:$|_)|context|persona|preamble", re.I)
MOVED_KINDS = frozenset({"unordered", "unsorted_json", "dict_repr"})  # sorted, or dumped with sort_keys, where they are made


def builds_prompt_text(ctx: ModuleContext, function: cst.CSTNode | None) -> bool:
    """`function` (of another module, called by the prompt) is named for a prompt and returns text of its own: an
    f-string, a concatenation or a template's `.format(...)` (directly, or through a name bound to one), not a value
    it only hands back (`def get_system_time(): return datetime.now().strftime(...)`)."""
    return isinstance(function, cst.FunctionDef) and PROMPT_BUILDER.search(function.name.value) is not None and returns_text(ctx, function)


def returns_text(ctx: ModuleContext, function: cst.FunctionDef) -> bool:
    """`function` returns text it makes: an f-string, a literal, a concatenation, a `.format(...)` / `.join(...)` /
    `.render(...)` (directly, through `.strip()`, or through a name bound to one; `manual = ""` grown with `manual +=
    f.read()` is text too)."""
    for value in ctx.returns_of(function):
        for _ in range(3):
            if isinstance(value, cst.Name):
                bindings = [(b, v) for b, v in ctx.assigned_values(value) if v is not None]
                grown = bool(bindings) and all(isinstance(ctx.parent(b), cst.AugAssign) for b, _ in bindings[1:])
                value = bindings[0][1] if grown and isinstance(bindings[0][1], (cst.SimpleString, cst.FormattedString)) \
                    else bindings[-1][1] if bindings else None
            elif isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value in ("strip", "rstrip", "lstrip"):
                value = value.func.value
            else:
                break
        if isinstance(value, (cst.FormattedString, cst.ConcatenatedString, cst.BinaryOperation, cst.SimpleString)):
            return True
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value in ("format", "join", "render", "substitute"):
            return True
    return False


def reported_at_origin(fact: Fact) -> tuple[str, int, int, int, int, int] | None:
    """Where a value found in another module of the tree is reported: at the value itself (its file, row, column,
    end row, end column and the row its statement starts on), where it is fixed, when it is an order (a listing, a
    dict dumped without sort_keys: sorted where it is made) or when the function the prompt calls there builds prompt
    text around it (a clock written into `get_system_message()`'s text, also through a helper of that module). A value
    that the function called only hands back (`get_local_time()`, `generate_random_seed()`) stays reported where the
    prompt takes it in: the call is what to change. None: reported here."""
    at = fact.extra.get("at")
    if not at:
        return None
    if fact.kind in MOVED_KINDS or (fact.kind in ("volatile", "counter") and fact.extra.get("builds_text")):
        return tuple(at)  # type: ignore[return-value]
    return None


def closing_system_message(expr: cst.BaseExpression | None) -> cst.BaseExpression | None:
    """The last of the system messages that open a list literal, after one or more others
    (`[{"role": "system", "content": rules}, {"role": "system", "content": examples}, {"role": "system", "content": env}, ...]`):
    a value there that is fixed for the conversation follows every static instruction, so every conversation
    still shares the instructions before it, and the turns after it differ between conversations anyway. Not where
    static text follows it: a constant after the first value in the message (`f"Opened at {now}.\\n\\n{TOOL_MANUAL}"`),
    or messages written as constants after it (`*EXAMPLES`, a user message with a literal text)."""
    if not isinstance(expr, cst.List):
        return None
    leading = []
    elements = list(expr.elements)
    for element in elements:
        if isinstance(element, cst.StarredElement) or not is_system_message(element.value):
            break
        leading.append(element.value)
    if len(leading) < 2:
        return None
    closing = leading[-1]
    for element in elements[len(leading):]:
        if isinstance(element, cst.StarredElement) and _constant_name(element.value):
            return None  # `*EXAMPLES`: static few-shot messages after it
        fields = message_fields(element.value) if not isinstance(element, cst.StarredElement) else None
        content = (fields or {}).get("content")
        if content is not None and (string_value(content) is not None or _constant_name(content)):
            return None
    content = (message_fields(closing) or {}).get("content")
    if isinstance(content, cst.FormattedString):
        seen = False
        for part in content.parts:
            if isinstance(part, cst.FormattedStringExpression):
                if seen and any(_constant_name(n) for n in (part.expression, *descendants(part.expression))):
                    return None
                seen = True
            elif seen and len(part.value) > 400:
                return None
    return closing


def _constant_name(node: cst.CSTNode) -> bool:
    """`TOOL_MANUAL`, `prompts.EXAMPLES`: a module constant by its name."""
    name = node.value if isinstance(node, cst.Name) else node.attr.value if isinstance(node, cst.Attribute) else None
    return name is not None and len(name) > 1 and name.isupper()


def strftime_granularity(fmt: str) -> str:
    fmt = re.sub(r"%[-_0^#]+", "%", fmt)  # glibc's flags: %-d (no padding) is the day, %_H the hour
    if re.search(r"%[SfXcTsr]", fmt):
        return "second"
    if "%M" in fmt or "%R" in fmt:
        return "minute"
    if re.search(r"%[HIpk]", fmt):
        return "hour"
    if re.search(r"%[dajxDFeuwAU]", fmt):
        return "day"
    if re.search(r"%[mbBYyhG]", fmt):
        return "month"
    return "call"


def volatile_method(ctx: ModuleContext, call: cst.Call, attr: str, inner: cst.BaseExpression, volatile: dict[str, str] = VOLATILE_CALLS,
                    names: set[str] | frozenset[str] = VOLATILE_NAMES) -> tuple[cst.CSTNode, str] | None:
    """(the clock's call, its granularity) of `call`, a method called on a clock read: datetime.now().strftime("%Y-%m-%d")
    changes daily, not on every call. The clock read may be kept in a name first: `now = datetime.now(); stamp =
    now.strftime(...)`."""
    for _ in range(3):  # now = datetime.now().astimezone(); now.strftime(...): the same clock read, zoned
        if isinstance(inner, cst.Name):
            assigned = [v for _, v in ctx.assigned_values(inner)]
            inner = assigned[0] if len(assigned) == 1 and assigned[0] is not None else inner
        if not (isinstance(inner, cst.Call) and _rezoned(inner)):
            break
        inner = inner.func.value  # type: ignore[attr-defined]
    if not isinstance(inner, cst.Call):
        return None
    name = ctx.qualified_name_in(inner.func, names)
    if not name:
        return None
    base = volatile[name]
    if _rezoned(call):
        return inner, base
    if attr == "strftime" and call.args:
        fmt = string_value(call.args[0].value)
        return inner, strftime_granularity(fmt) if fmt is not None else base
    if attr == "date":
        return inner, "day"
    if attr in ("isoformat", "timestamp", "ctime", "hex", "__str__"):
        return inner, base
    return None


def assigned_once(ctx: ModuleContext, value: cst.BaseExpression) -> cst.BaseExpression:
    """A name with one assigned value in sight: that value (`qa_prompt = (...)`); anything else as it is."""
    if isinstance(value, cst.Name):
        values = [v for _, v in ctx.assigned_values(value) if v is not None]
        if len(values) == 1:
            return values[0]
    return value


def dict_entries(node: cst.CSTNode | None) -> list[tuple[str | None, cst.BaseExpression]]:
    """(key, value) of each entry of a dict literal, the key as its text when it is a string literal (else None);
    `**spread` entries are skipped, and anything but a dict literal has none."""
    if not isinstance(node, cst.Dict):
        return []
    return [(string_value(e.key), e.value) for e in node.elements if isinstance(e, cst.DictElement)]


def message_fields(node: cst.CSTNode | None) -> dict[str, cst.BaseExpression] | None:
    """The fields of a message (or content block) as the code writes it: a dict literal's string keys, or the keywords
    of a call (`dict(role="system", content=...)`, `Message(role=..., content=...)`); None for anything else. The one
    reader of a message's fields, so that a new way of writing one is read alike everywhere."""
    if isinstance(node, cst.Dict):
        return {key: value for key, value in dict_entries(node) if key is not None}
    if isinstance(node, cst.Call):
        return {a.keyword.value: a.value for a in node.args if a.keyword is not None}
    return None


def string_value(node: cst.BaseExpression | None) -> str | None:
    if not isinstance(node, (cst.SimpleString, cst.ConcatenatedString)):
        return None
    try:
        value = node.evaluated_value
    except (ValueError, SyntaxError, UnicodeError):  # an invalid escape that libcst accepts
        return None
    return value if isinstance(value, str) else None


def _attribute_stores_of(ctx: ModuleContext, function: cst.FunctionDef) -> dict[str, list[tuple[int, cst.Assign | cst.AugAssign]]]:
    """`obj.name` -> the (row, statement) of each store to it in `function`'s own body (not a nested function's), in
    source order: `obj.name = ...`, `obj.name += ...` (not `self.x`, which the class's own walk follows)."""
    index: dict[str, list[tuple[int, cst.Assign | cst.AugAssign]]] = {}
    for node in sorted(ctx.nodes_in(cst.AugAssign, function) + ctx.nodes_in(cst.Assign, function), key=lambda n: ctx.span(n).row):
        targets = [node.target] if isinstance(node, cst.AugAssign) else [t.target for t in node.targets]
        for target in targets:
            if isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) and target.value.value not in ("self", "cls") \
                    and ctx.enclosing_function(node) is function:
                index.setdefault(ctx.code(target), []).append((ctx.span(node).row, node))
    return index


class ValueWalker:
    def __init__(self, ctx: ModuleContext, site: CallSite, volatile_extra: dict[str, str] | None = None) -> None:
        self.ctx = ctx
        self.site = site
        self.volatile = {**VOLATILE_CALLS, **(volatile_extra or {})}
        self._volatile_names = set(self.volatile)  # what qualified_name_in looks names up in
        self.facts: list[Fact] = []
        self._seen: set[tuple[int, str, bool]] = set()
        self._site_function = ctx.enclosing_function(site.node)
        self._params_only = 0
        # calls followed into their functions: (call, function, {id(param): argument}), innermost last
        self._frames: list[tuple[cst.Call, cst.FunctionDef | None, dict[int, cst.BaseExpression]]] = []
        self._volatile_extra = volatile_extra
        self._outer: tuple[ValueWalker, cst.FunctionDef, dict[int, cst.BaseExpression]] | None = None  # the linted module's walker
        self._landing: Landing | None = None  # where the value followed into another module lands
        self._hops = 0  # modules crossed to get here
        self._site_loops = ctx.loops_around(site.node)
        self._entry: cst.Name | None = None  # the first parameter followed out of its function: where a caller's value enters the text

    # --- entry points ----------------------------------------------------------------------------------------

    def walk_argument(self, name: str) -> list[Fact]:
        expr = self.site.arg(name)
        if expr is None:
            return []
        start = len(self.facts)
        newest_last = name in ("messages", "input")
        if name == "input" and string_value(expr) is None and not isinstance(expr, (cst.List, cst.Name, cst.BinaryOperation)):
            return []
        if name == "input" and self.site.arg("previous_response_id") is not None:
            return []  # the earlier turns live on the server; everything sent here is new
        self.walk(expr, Landing(name, prefix=True), 0, newest_last=newest_last)
        return self.facts[start:]

    # --- the walk ---------------------------------------------------------------------------------------------

    def walk(self, expr: cst.BaseExpression | None, landing: Landing, depth: int, newest_last: bool = False, ordered: bool = False) -> None:
        if expr is None or depth > MAX_DEPTH:
            return
        frame = id(self._frames[-1][0]) if self._frames else 0  # a helper's body means something else per call
        # a value first met under an unknown call (only its parameters count there) is walked again in full when
        # it reaches the text directly: `text = helper(text)` and `text += f"{now}"` in one builder
        key = (id(expr), landing.arg + str(landing.prefix) + str(id(landing.cache_block)) + str(landing.item), ordered, frame, self._params_only > 0)
        if key in self._seen:
            return
        self._seen.add(key)
        d = depth + 1
        if isinstance(expr, (cst.SimpleString, cst.Integer, cst.Float, cst.Imaginary, cst.Ellipsis)):
            return
        if isinstance(expr, cst.ConcatenatedString):
            for part in concatenated_parts(expr):  # "a" "b" f"{c}": one level, however long
                self.walk(part, landing, depth)
        elif isinstance(expr, cst.FormattedString):
            for part in expr.parts:
                if isinstance(part, cst.FormattedStringExpression):
                    if part.format_spec and self._formatted_volatile(part, landing):
                        continue
                    if self._is_runtime_dict(part.expression):
                        self._fact("dict_repr", part.expression, landing, "a dict interpolated into an f-string")
                    self.walk(part.expression, landing, d)
        elif isinstance(expr, cst.BinaryOperation):
            operands = _operands(expr) if isinstance(expr.operator, cst.Add) else [expr.left, expr.right]
            for i, operand in enumerate(operands):  # a + b + c: one level; list + [newest]: the last holds the newest turn
                self.walk(operand, landing, depth if len(operands) > 2 else d, newest_last=newest_last and i == len(operands) - 1)
        elif isinstance(expr, cst.BooleanOperation):
            self.walk(expr.left, landing, d, newest_last, ordered)
            self.walk(expr.right, landing, d, newest_last, ordered)
        elif isinstance(expr, (cst.List, cst.Tuple, cst.Set)):
            if isinstance(expr, cst.Set):
                self._fact("unordered", expr, landing, "a set literal", ordered=ordered)
            elements = list(expr.elements)
            closing = closing_system_message(expr)
            for i, element in enumerate(elements):
                newest = newest_last and i == len(elements) - 1 and not isinstance(element, cst.StarredElement) and not is_system_message(element.value)
                item = landing.item or not isinstance(element, cst.StarredElement)
                inner = replace(landing, prefix=landing.prefix and not newest, item=item, closing=landing.closing or element.value is closing)
                self.walk(element.value, inner, d)
        elif isinstance(expr, cst.Dict):
            block = expr if any(_key_is(e, "cache_control") for e in expr.elements) else landing.cache_block
            role = next((string_value(e.value) for e in expr.elements if _key_is(e, "role")), None) or landing.role
            inner = replace(landing, cache_block=block, role=role, item=True)
            for element in expr.elements:
                if isinstance(element, cst.DictElement):
                    if _key_is(element, "cache_control"):
                        continue
                    self.walk(element.value, inner, d)
                else:
                    self.walk(element.value, inner, d)
        elif isinstance(expr, (cst.ListComp, cst.GeneratorExp, cst.SetComp, cst.DictComp)):
            self._comprehension(expr, landing, d, ordered)
        elif isinstance(expr, cst.IfExp):
            taken = self._flag_value(expr.test)  # `fine if include_hour_min else coarse`: the branch this call takes
            if taken is not False:
                self.walk(expr.body, landing, d, newest_last, ordered)
            if taken is not True:
                self.walk(expr.orelse, landing, d, newest_last, ordered)
        elif isinstance(expr, cst.Await):
            self.walk(expr.expression, landing, d, newest_last, ordered)
        elif isinstance(expr, cst.Call):
            self._call(expr, landing, d, newest_last, ordered)
        elif isinstance(expr, cst.Name):
            self._name(expr, landing, d, newest_last, ordered)
        elif isinstance(expr, cst.Attribute):
            self._attribute(expr, landing, d, ordered)
        elif isinstance(expr, cst.Subscript):
            self.walk(expr.value, landing, d)
        elif isinstance(expr, cst.NamedExpr):
            self.walk(expr.value, landing, d, newest_last, ordered)

    def _dict_call(self, call: cst.Call, landing: Landing, d: int) -> None:
        """`dict(role="system", content=prompt)`: a message or content block written as a call, read as its literal."""
        keywords = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
        block = call if "cache_control" in keywords else landing.cache_block
        inner = replace(landing, cache_block=block, role=string_value(keywords.get("role")) or landing.role, item=True)
        for arg in call.args:
            if arg.keyword is None or arg.keyword.value != "cache_control":
                self.walk(arg.value, inner, d)

    def _comprehension(self, expr, landing: Landing, d: int, ordered: bool) -> None:
        comp = expr.for_in
        while comp is not None:
            self._iterable(comp.iter, landing, d, ordered)
            if comp.ifs and not landing.item and self._chosen_per_turn([i.test for i in comp.ifs], expr):
                self._fact("filtered", expr, landing, "a filtered comprehension", ordered=ordered)
            comp = comp.inner_for_in
        element = replace(landing, item=True)  # each element is one tool / message / line
        if isinstance(expr, cst.DictComp):
            self.walk(expr.value, element, d, ordered=ordered)
        else:
            self.walk(expr.elt, element, d, ordered=ordered)  # where the whole order does not matter, nor does the elements'

    def _iterable(self, iterable: cst.BaseExpression, landing: Landing, d: int, ordered: bool) -> None:
        argument = self._argument_of(iterable)
        if argument is not None:  # a parameter of a helper being followed: the caller's argument is the source
            self._iterable(argument, landing, d, ordered)
            return
        label = self._unordered_source(iterable)
        if label:
            self._order_fact(iterable, landing, label, ordered)
        self.walk(iterable, landing, d, ordered=ordered or bool(label))  # reported here, not again at its source

    def _order_fact(self, iterable: cst.BaseExpression, landing: Landing, label: str, ordered: bool) -> None:
        """An unordered source reaching the prefix. A dict filled at run time keeps its insertion order, so its
        keys are no hazard in prompt text; but the functions that fill it also overwrite entries in place
        (`files[path] = new_content`): rendered into the prefix, an update changes text inside it (CL301).
        A registry of tools keeps the tools family (CL201)."""
        state = self._runtime_dict_view(iterable)
        if state is not None and landing.arg != "tools":
            writes = [self.ctx.span(n).row for n in self.ctx.subscript_assignments.get(self.ctx.code(state), [])
                      if self.ctx.enclosing_function(n) is not None][:4]
            where = f" (written on line{'s' if len(writes) > 1 else ''} {', '.join(map(str, writes))})" if writes else ""
            self._fact("state_dict", iterable, landing, f"`{self.ctx.code(state)}`{where}")
            self._filled_in_listing_order(state, landing)
            return
        self._fact("unordered", iterable, landing, label, ordered=ordered)

    def _filled_in_listing_order(self, state: cst.BaseExpression, landing: Landing) -> None:
        """The dict keeps its insertion order: entries added in a loop over a directory listing or a set enter
        the prefix in that loop's order (`for path in glob.glob(...): files[path] = read(path)`)."""
        for assign in self.ctx.subscript_assignments.get(self.ctx.code(state), []):
            loop = self.ctx.enclosing(assign, (cst.For,))
            if not isinstance(loop, cst.For) or self.ctx.enclosing_function(loop) is not self.ctx.enclosing_function(assign):
                continue
            label = self._unordered_source(loop.iter)
            if label:
                self._fact("unordered", loop.iter, landing, f"{label}, the order in which entries enter `{self.ctx.code(state)}`,")

    def _runtime_dict_view(self, expr: cst.BaseExpression) -> cst.BaseExpression | None:
        """The dict of `d.keys()` / `d.values()` / `d.items()` when `d` is filled at run time, else None."""
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value in ("values", "items", "keys"):
            if self._runtime_dict(expr.func.value):
                return expr.func.value
        return None

    def _unordered_source(self, expr: cst.BaseExpression, depth: int = 0) -> str | None:
        if depth > MAX_DEPTH:
            return None  # `agent = agent.parent` and arguments bound round a cycle: a bounded look
        if isinstance(expr, (cst.Set, cst.SetComp)):
            return "a set"
        if isinstance(expr, cst.Call):
            name = self.ctx.qualified_name_in(expr.func, set(UNORDERED_CALLS))
            if name:
                return UNORDERED_CALLS[name]
            if isinstance(expr.func, cst.Attribute):
                attr = expr.func.attr.value
                if attr in UNORDERED_METHODS and not self.ctx.qualified_name_in(expr.func, {"glob.glob"}):
                    return UNORDERED_METHODS[attr]
                if attr in ("values", "items", "keys") and self._runtime_dict(expr.func.value):
                    return f"{self.ctx.code(expr.func.value)}.{attr}() (a dict filled at run time)"
        if isinstance(expr, cst.Await):
            return self._unordered_source(expr.expression, depth + 1)
        if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value in ("self", "cls"):
            cls = self.ctx.enclosing(expr, (cst.ClassDef,))  # self.seen = set() in one method, iterated in another
            for value in _self_values(self.ctx, cls, expr.attr.value) if isinstance(cls, cst.ClassDef) else ():
                if not isinstance(value, cst.Attribute):
                    found = self._unordered_source(value, depth + 1)
                    if found:
                        return f"{found} (self.{expr.attr.value})"
            return None
        if isinstance(expr, cst.Attribute) and isinstance(expr.value, (cst.Call, cst.Await, cst.Name)):
            return self._unordered_source(expr.value, depth + 1)  # (await session.list_tools()).tools, listed.tools
        if isinstance(expr, cst.Name):
            for binding, value in self.ctx.assigned_values(expr):
                if isinstance(binding, cst.Param):
                    if binding.annotation is not None and SET_ANNOTATION.match(self.ctx.code(binding.annotation.annotation)):
                        return f"`{expr.value}`, a set (annotated `{self.ctx.code(binding.annotation.annotation)}`)"
                    value = self._bound_argument(binding)  # the argument of the call being followed
                if value is not None and not isinstance(value, cst.Name):
                    found = self._unordered_source(value, depth + 1)
                    if found:
                        return found
        return None

    def _runtime_dict(self, expr: cst.BaseExpression) -> bool:
        """A dict whose insertion order depends on run-time registration (decorators, imports, plugins)."""
        if not isinstance(expr, (cst.Name, cst.Attribute)):
            return False
        filled = [node for node in self.ctx.subscript_assignments.get(self.ctx.code(expr), []) if self.ctx.enclosing_function(node) is not None]
        function = self.ctx.enclosing_function(expr)
        bindings = list(self.ctx.assigned_values(expr)) if isinstance(expr, cst.Name) else []
        if isinstance(expr, cst.Name) and function is not None and expr.value not in declared_outside(function) \
                and any(self.ctx.enclosing_function(b) is function for b, _ in bindings) \
                and not any(isinstance(v, (cst.Attribute, cst.Name)) for _, v in bindings):  # `state = self.state`: an alias
            # a local name: another function's dict of the same name is another dict (`relevant_terms =
            # self.extract_relevant_terms(text)` here, `relevant_terms[term] = ...` in the fresh dict that method returns)
            filled = [node for node in filled if self.ctx.enclosing_function(node) is function]
        if not filled:
            return False
        return not (isinstance(expr, cst.Name) and self._filled_in_order_here(expr, filled))

    def _filled_in_order_here(self, name: cst.Name, filled: list[cst.CSTNode]) -> bool:
        """`properties = {}`, then `for item in text.split(","): properties[key] = ...` in the same function: a local
        dict filled from an ordered walk has the walk's order, the same on every call (a dict filled by other
        functions, registration by decorators or plugins, has the order they happen to run in)."""
        function = self.ctx.enclosing_function(name)
        bindings = list(self.ctx.assigned_values(name))
        if function is None or not bindings or not all(
                value is not None and self.ctx.enclosing_function(value) is function and (
                    isinstance(value, cst.Dict) and not value.elements or isinstance(value, cst.Call) and called_name(value) == "dict" and not value.args)
                for _, value in bindings):
            return False
        mine = [node for node in filled if self.ctx.enclosing_function(node) is function]
        return all(self._unordered_source(loop.iter) is None and not self._runtime_registry(loop.iter)
                   for node in mine for loop in self.ctx.loops_around(node) if isinstance(loop, cst.For) and self.ctx.contains(function, loop))

    def _runtime_registry(self, expr: cst.BaseExpression) -> bool:
        """`for name in REGISTRY:` over a dict that other functions fill (a registry): its keys come in registration order."""
        return isinstance(expr, (cst.Name, cst.Attribute)) and any(
            self.ctx.enclosing_function(node) is not None and self.ctx.enclosing_function(node) is not self.ctx.enclosing_function(expr)
            for node in self.ctx.subscript_assignments.get(self.ctx.code(expr), []))

    def _call(self, call: cst.Call, landing: Landing, d: int, newest_last: bool, ordered: bool) -> None:
        func = call.func
        name = self.ctx.qualified_name_in(func, self._volatile_names)
        if name:
            granularity = self.volatile[name]
            fmt = string_value(call.args[0].value) if name == "time.strftime" and call.args else None
            if fmt is not None:  # time.strftime("%H:%M %Y-%m-%d"): as fine as its format
                granularity = strftime_granularity(fmt)
            self._fact("volatile", call, landing, f"{name.split('.', 1)[-1]}()" if name.count(".") > 1 else f"{name}()", granularity)
            return
        if landing.prefix and landing.arg != "tools" and self._measures_the_conversation(call):
            self._fact("counter", call, landing, f"{_short_code(self.ctx, call.func)}()", "turn")  # the size of the conversation so far
            return
        if landing.arg == "tools" and not landing.item and self._selects_per_turn(call):
            self._fact("filtered", call, landing, f"{_short_code(self.ctx, call.func)}() called with this turn's values")
        if isinstance(func, cst.Attribute):
            attr = func.attr.value
            inner = func.value
            refined = self._volatile_method(call, attr, inner)
            if refined:
                root, granularity = refined
                self._fact("volatile", call, landing, f"{self.ctx.code(root)}.{attr}()", granularity)
                return
            if attr in ("format", "format_map", "substitute", "safe_substitute"):
                for arg in call.args:  # TEMPLATE.format(now=...), Template(...).substitute(...)
                    self.walk(arg.value, landing, d)
                    if isinstance(arg.value, cst.Name) and (arg.star == "**" or attr in ("format_map", "substitute", "safe_substitute")):
                        self._dict_stores(arg.value, landing, d)  # kwargs["date"] = now; TEMPLATE.format(**kwargs)
                if string_value(inner) is None:
                    self.walk(inner, landing, d)
                return
            if attr == "render" and self._jinja_template(inner, 0):
                for arg in call.args:  # template.render(now=..., **context): every value lands in the text
                    self.walk(arg.value, landing, d)
                    if isinstance(arg.value, cst.Name) and arg.star == "**":
                        self._dict_stores(arg.value, landing, d)
                return
            if attr == "join":
                for arg in call.args[:1]:
                    self._iterable(arg.value, landing, d, ordered)
                return
            if attr in ("strip", "lstrip", "rstrip", "upper", "lower", "replace", "encode", "decode", "title", "capitalize"):
                self.walk(inner, landing, d)
                if attr == "replace" and len(call.args) >= 2:
                    self.walk(call.args[1].value, landing, d)  # TEMPLATE.replace("{date}", now): the new text lands too
                return
        if self.ctx.qualified_name_in(func, {"json.dumps", "json.dump"}):
            self._json_dumps(call, landing, d)
            return
        if self.ctx.qualified_name_in(func, {"builtins.dict"}):
            self._dict_call(call, landing, d)
            return
        if self.ctx.qualified_name_in(func, ORDERING):
            for arg in call.args[:1]:
                self.walk(arg.value, landing, d, ordered=True)
            return
        if self.ctx.qualified_name_in(func, ITERATORS):
            for arg in call.args if called_name(call) == "zip" else call.args[:1]:
                self._iterable(arg.value, landing, d, ordered)  # `enumerate(sampled)`: the items, in the same order
            return
        builder = self.ctx.qualified_name_in(func, STRING_BUILDERS)
        if builder:
            for arg in call.args[:1]:
                if builder in ("builtins.str", "builtins.repr") and self._is_runtime_dict(arg.value):
                    self._fact("dict_repr", call, landing, f"{builder.split('.')[-1]}() of a dict")
                if builder in ("builtins.list", "builtins.tuple"):
                    self._iterable(arg.value, landing, d, ordered)
                else:
                    self.walk(arg.value, landing, d, ordered=ordered)
            return
        if self.ctx.qualified_name_in(func, MEASURES):
            return  # len(tools), bool(x), isinstance(x, T): a count or a test, in which no order or text of the value lands
        if self.ctx.qualified_name_in(func, PURE_BUILTINS):
            for arg in call.args:
                self.walk(arg.value, landing, d)
            return
        functions = self.ctx.called_functions(call)
        if not functions and isinstance(func, cst.Name) and not self._params_only:
            imports = [b for b, _ in self.ctx.assigned_values(func) if isinstance(b, cst.ImportFrom)]
            if imports and self._imported(func, imports[0], call, landing, d, newest_last, ordered):
                return
        if not functions and isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and not self._params_only:
            imports = [b for b, _ in self.ctx.assigned_values(func.value) if isinstance(b, (cst.ImportFrom, cst.Import))]
            if imports and self._imported(func.value, imports[0], call, landing, d, newest_last, ordered, attr=func.attr.value):
                return  # prompts.build_system(...): a function of a module of the tree
        if not functions and isinstance(func, cst.Attribute) and not self._params_only and self._instance_method(call, func, landing, d, newest_last, ordered) \
                and not self._built_by_local_class(call):
            return  # prompt.render(): a method of a class of the tree (a builder's chain also lands its arguments, below)
        for function in functions:
            self._frames.append((call, function, _bind_arguments(self.ctx, call, function)))
            try:
                for value in self.ctx.returns_of(function):
                    self.walk(value, landing, d, newest_last, ordered)
            finally:
                self._frames.pop()
        if self._built_by_local_class(call):
            chain = _call_chain(call)
            for link in chain:  # Builder(x).with_section(y).build(): every argument lands
                for arg in link.args:
                    self.walk(arg.value, landing, d)
            head = chain[-1].func
            if isinstance(head, cst.Attribute):
                self.walk(head.value, landing, d)  # builder.build(): what the builder was made of
            return
        texts = message_texts(call)
        for text in texts:  # a message object made here: its text is the prompt
            self.walk(text, landing, d, newest_last, ordered)
        self._params_only += 1  # an unknown call (or a helper's arguments): the result depends on per-request data
        try:
            for arg in call.args:
                if any(arg.value is t for t in texts):
                    continue
                self.walk(arg.value, landing, d)
            if isinstance(func, cst.Attribute):
                self.walk(func.value, landing, d)
        finally:
            self._params_only -= 1

    def _instance_method(self, call: cst.Call, func: cst.Attribute, landing: Landing, d: int, newest_last: bool, ordered: bool) -> bool:
        """`obj.method(...)` where `obj` is an instance of a class of the tree (`self.prompt = SystemPrompt(...)`,
        a class of this module or one imported from another module): the method's returns are followed, and its
        `self.x` reads find what the class stores. Returns whether the method was found."""
        constructor = self._constructor(func.value, 0)
        if constructor is None:
            return False
        cls_name = constructor.func
        assert isinstance(cls_name, cst.Name)
        methods = self.ctx.functions.get(f"{cls_name.value}.{func.attr.value}", []) if cls_name.value in self._local_classes else []
        if methods and len(self._frames) < MAX_FRAMES:
            for method in methods:
                self._frames.append((call, method, _bind_arguments(self.ctx, call, method)))
                try:
                    for value in self.ctx.returns_of(method):
                        self.walk(value, landing, d, newest_last, ordered)
                finally:
                    self._frames.pop()
            return True
        imports = [b for b, _ in self.ctx.assigned_values(cls_name) if isinstance(b, cst.ImportFrom)]
        return bool(imports) and self._imported(cls_name, imports[0], call, landing, d, newest_last, ordered, method=func.attr.value)

    def _constructor(self, expr: cst.BaseExpression, depth: int) -> cst.Call | None:
        """The `Class(...)` call an instance was made by: directly, through a name, or through `self.x`."""
        if depth > 3:
            return None
        if isinstance(expr, cst.Call):
            return expr if isinstance(expr.func, cst.Name) and expr.func.value[:1].isupper() else None
        values: list[cst.BaseExpression] = []
        if isinstance(expr, cst.Name) and expr.value not in ("self", "cls"):
            values = [v for _, v in self.ctx.assigned_values(expr) if v is not None]
        elif isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self":
            cls = self.ctx.enclosing(expr, (cst.ClassDef,))
            values = _self_values(self.ctx, cls, expr.attr.value) if isinstance(cls, cst.ClassDef) else []
        for value in values[:4]:
            found = self._constructor(value, depth + 1)
            if found is not None:
                return found
        return None

    def _formatted_volatile(self, part: cst.FormattedStringExpression, landing: Landing) -> bool:
        """f"{datetime.now():%Y-%m-%d}" changes daily: the format spec sets the granularity."""
        call = part.expression
        if not isinstance(call, cst.Call):
            return False
        name = self.ctx.qualified_name_in(call.func, self._volatile_names)
        if not name or not name.startswith(("datetime.", "pendulum.", "arrow.", "pandas.")):
            return False
        fmt = "".join(p.value for p in part.format_spec or () if isinstance(p, cst.FormattedStringText))
        label = f"{name.split('.', 1)[-1]}()" if name.count(".") > 1 else f"{name}()"
        self._fact("volatile", call, landing, label, strftime_granularity(fmt) if fmt else self.volatile[name])
        return True

    def _volatile_method(self, call: cst.Call, attr: str, inner: cst.BaseExpression) -> tuple[cst.CSTNode, str] | None:
        return volatile_method(self.ctx, call, attr, inner, self.volatile, self._volatile_names)

    def _json_dumps(self, call: cst.Call, landing: Landing, d: int) -> None:
        sort_keys = next((a for a in call.args if a.keyword is not None and a.keyword.value == "sort_keys"), None)
        value = call.args[0].value if call.args and call.args[0].keyword is None else None
        if (sort_keys is None or _is_false(sort_keys.value)) and value is not None and self._may_hold_runtime_dict(value):
            self._fact("unsorted_json", call, landing, "json.dumps() without sort_keys=True")
        if value is not None:
            self.walk(value, landing, d)

    def _may_hold_runtime_dict(self, expr: cst.BaseExpression) -> bool:
        """Not provably free of run-time dicts: anything but literals of constants (json.dumps' fix is harmless) and
        JSON schemas generated from a class (`Answer.model_json_schema()`): a generator writes keys in one order."""
        if isinstance(expr, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString, cst.Integer, cst.Float)):
            return False
        if _generated_schema(expr):
            return False
        if isinstance(expr, (cst.Dict, cst.List, cst.Tuple)):  # a literal's own key order is fixed
            return self._is_runtime_dict(expr) or any(self._is_runtime_dict(e.value) for e in expr.elements)
        if isinstance(expr, cst.Name):
            if self._known_not_a_dict(expr):
                return False
            values = [v for _, v in self.ctx.assigned_values(expr)]
            if values and all(v is not None and _generated_schema(v) for v in values) and not self._written_into(expr):
                return False  # schema = Answer.model_json_schema(), used as generated
            if values and all(v is not None and isinstance(v, (cst.Dict, cst.List, cst.Tuple, cst.SimpleString, cst.Integer)) for v in values):
                return any(self._may_hold_runtime_dict(v) for v in values) or self._mutated_dict(expr)  # type: ignore[arg-type]
            return True
        return True

    def _known_not_a_dict(self, name: cst.Name) -> bool:
        """`name` is used in the `else` of `if isinstance(name, dict): ...`: on this path it has no keys to order."""
        child: cst.CSTNode = name
        for ancestor in self.ctx.ancestors(name):
            if isinstance(ancestor, SCOPES_STOP):
                return False
            if isinstance(ancestor, cst.If) and child is ancestor.orelse and _isinstance_dict_test(ancestor.test, name.value):
                return True
            child = ancestor
        return False

    def _is_runtime_dict(self, expr: cst.BaseExpression, depth: int = 0) -> bool:
        """A dict built at run time (its key order depends on code paths or data), not a literal of constants."""
        if depth > 4:
            return False
        if isinstance(expr, cst.DictComp):
            return True
        if isinstance(expr, cst.IfExp):  # state if state is not None else {}
            return self._is_runtime_dict(expr.body, depth + 1) or self._is_runtime_dict(expr.orelse, depth + 1)
        if isinstance(expr, cst.Dict):
            return any(isinstance(e, cst.StarredDictElement) for e in expr.elements)
        if isinstance(expr, cst.Call):
            if self.ctx.qualified_name_in(expr.func, {"builtins.dict", "collections.OrderedDict"}):
                return True
            if isinstance(expr.func, cst.Attribute) and expr.func.attr.value in ("model_dump", "dict", "to_dict", "asdict", "__dict__", "json"):
                return True
            if self.ctx.qualified_name_in(expr.func, {"dataclasses.asdict", "vars"}):
                return True
            return any(self._is_runtime_dict(v, depth + 1) for f in self.ctx.called_functions(expr) for v in self.ctx.returns_of(f))
        if isinstance(expr, cst.Name):
            for binding, value in self.ctx.assigned_values(expr):
                if isinstance(binding, cst.Param):
                    annotation = binding.annotation.annotation if binding.annotation else None
                    if annotation is not None and DICT_ANNOTATION.match(self.ctx.code(annotation)):
                        return True
                if value is not None and self._is_runtime_dict(value, depth + 1):
                    return True
                if isinstance(value, cst.Dict) and self._mutated_dict(expr):
                    return True
                if isinstance(binding, cst.Name) and isinstance(value, cst.Dict) and not value.elements:
                    return True  # d = {} then filled
        return False

    def _written_into(self, name: cst.Name) -> bool:
        """Anything of the dict `name` changed after it was made, at any depth: `name[k] = v`, `name["a"]["b"] = v`,
        `name["properties"].update(extra)`."""
        function = self.ctx.enclosing_function(name)
        region = function if function is not None else self.ctx.module
        for node in self.ctx.nodes_in(cst.Call, region):
            if isinstance(node.func, cst.Attribute) and node.func.attr.value in ("update", "setdefault", "pop", "popitem", "clear") \
                    and _root_name(node.func.value) == name.value:
                return True
        for node in self.ctx.nodes_in(cst.Assign, region):
            if any(isinstance(t.target, cst.Subscript) and _root_name(t.target) == name.value for t in node.targets):
                return True
        return False

    def _mutated_dict(self, name: cst.Name) -> bool:
        return bool(self._stores(name))

    def _stores(self, name: cst.Name) -> list[cst.Assign]:
        """The `name[key] = value` statements of this scope (a dict filled key by key)."""
        scope = self.ctx.scope_of(name)
        return [node for node in self.ctx.subscript_assignments.get(name.value, [])
                if any(isinstance(t.target, cst.Subscript) and isinstance(t.target.value, cst.Name)
                       and self.ctx.scope_of(t.target.value) is scope for t in node.targets)]

    def _built_by_local_class(self, call: cst.Call, depth: int = 0) -> bool:
        """recv.method(...) where recv is (a name bound to) a chain starting at a class of this module.
        Bounded: `sig = sig.delete(name)` binds a name to a call on itself."""
        if depth > 4:
            return False
        chain = _call_chain(call)
        root = chain[-1].func if chain else None
        if isinstance(root, cst.Name) and root.value in self._local_classes:
            return True
        receiver = call.func.value if isinstance(call.func, cst.Attribute) else None
        while isinstance(receiver, cst.Attribute):
            receiver = receiver.value
        if isinstance(receiver, cst.Name):
            for _, value in self.ctx.assigned_values(receiver):
                if isinstance(value, cst.Call) and self._built_by_local_class(value, depth + 1):
                    return True
        return False

    def _closure_defined_later(self, name: cst.Name, increment: cst.CSTNode) -> bool:
        """The increment is in a function nested in the one that reads the counter, defined below the read and
        outside any loop there: when the read runs, no call of it has counted yet."""
        reader = self.ctx.enclosing_function(name)
        closure = self.ctx.enclosing_function(increment)
        if reader is None or closure is None or closure is reader or not self.ctx.contains(reader, closure):
            return False
        if not any(isinstance(n, cst.Nonlocal) and any(a.name.value == name.value for a in n.names) for n in descendants(closure.body)):
            return False  # `global calls; calls += 1`: the module's counter, kept from one call to the next
        while self.ctx.enclosing_function(closure) is not reader:
            closure = self.ctx.enclosing_function(closure)
        if any(isinstance(a, (cst.For, cst.While)) for a in self.ctx.ancestors(closure) if self.ctx.contains(reader, a)):
            return False
        return self.ctx.span(closure).row > self.ctx.span(name).row

    def _counted_afresh(self, name: cst.Name, increment: cst.CSTNode) -> bool:
        """`step = 1` (or `n = len(steps) + 1`) then `step += 1` for each section, outside any loop, in the function
        that builds the prompt: the counter starts again on every call, so it numbers the same items the same way (a
        counter kept on the module, `global`, or in an enclosing function, `nonlocal`, or counted in a loop, is not)."""
        function = self.ctx.enclosing_function(increment)
        if function is None or name.value in declared_in(self.ctx, function):
            return False
        for ancestor in self.ctx.ancestors(increment):
            if ancestor is function:
                break
            if isinstance(ancestor, cst.While) or isinstance(ancestor, cst.For) and not _numbers_items(self.ctx, ancestor):
                return False  # counted in a loop: it may count the turns (`while ...: count += 1; ask(step=count)`)
        return any(isinstance(self.ctx.parent(b), cst.AssignTarget) and self.ctx.enclosing_function(b) is function
                   for b, _ in self.ctx.assigned_values(name))  # its start (`n = len(steps) + 1`) is walked as any value

    @property
    def _local_classes(self) -> set[str]:
        return {c.name.value for c in self.ctx.nodes(cst.ClassDef)}

    def _name(self, name: cst.Name, landing: Landing, d: int, newest_last: bool, ordered: bool) -> None:
        for binding, value in self.ctx.assigned_values(name):
            parent = self.ctx.parent(binding)
            if isinstance(binding, cst.Param):
                self._param(name, binding, landing, d, newest_last, ordered)
                continue
            if isinstance(binding, cst.ImportFrom):
                self._imported(name, binding, None, landing, d, newest_last, ordered)
                continue
            if isinstance(parent, cst.AugAssign):
                if isinstance(parent.value, (cst.Integer, cst.Float)):
                    if self._closure_defined_later(name, binding):
                        continue  # `nonlocal n; n += 1` in a function defined after this read: it cannot have run yet
                    if self._counted_afresh(name, binding):
                        continue  # n = 1 ... n += 1 in one call: a number given to a list item, the same on every call
                    self._fact("counter", name, landing, f"{name.value} (incremented with {self.ctx.code(parent.operator).strip()})", "turn")
                else:
                    self.walk(parent.value, landing, d)  # text += f"...": follow what is appended
                continue
            loop = parent if isinstance(parent, (cst.For, cst.CompFor)) else None
            if loop is None and isinstance(parent, (cst.Tuple, cst.List)):
                grand = self.ctx.parent(self.ctx.parent(binding) or binding)
                loop = grand if isinstance(grand, (cst.For, cst.CompFor)) else None
            if loop is not None:
                self._loop_variable(name, loop, landing, d, ordered)
                continue
            if value is not None and self._default_not_taken(name, binding):
                continue  # `if names is None: names = os.listdir(...)` in a function followed from a call that passes names
            if value is not None:
                # messages = [system]; messages.append(turn): the literal's last element is not the newest turn
                grows = newest_last and isinstance(value, cst.List) and self._appended(name)
                self.walk(value, landing, d, newest_last and not grows, ordered)
        if landing.arg in ("messages", "input", "tools", "system"):
            self._list_mutations(name, landing, d, ordered)
        if landing.prefix and landing.words == "system prompt" and any(isinstance(v, cst.Dict) for _, v in self.ctx.assigned_values(name)):
            self._dict_stores(name, landing, d)  # prompt = {...}; prompt["context_size"] = size; json.dumps(prompt) as the system prompt

    def _default_not_taken(self, name: cst.Name, binding: cst.CSTNode) -> bool:
        """The assignment is a parameter's default, made under `if <param> is None:` (or `if not <param>:`), in a
        function followed from a call that passes the parameter a value: that branch does not run for this call."""
        guard = next((a for a in self.ctx.ancestors(binding) if isinstance(a, (cst.If, cst.FunctionDef))), None)
        if not isinstance(guard, cst.If) or not self.ctx.contains(guard.body, binding):
            return False
        test = guard.test
        tested = test.expression if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not) else None
        if tested is None and isinstance(test, cst.Comparison) and len(test.comparisons) == 1 \
                and isinstance(test.comparisons[0].operator, cst.Is) and isinstance(test.comparisons[0].comparator, cst.Name) \
                and test.comparisons[0].comparator.value == "None":
            tested = test.left
        if not (isinstance(tested, cst.Name) and tested.value == name.value):
            return False
        param = next((b for b, _ in self.ctx.assigned_values(name) if isinstance(b, cst.Param)), None)
        argument = self._passed_argument(param) if param is not None else None
        if argument is None:
            return False
        if isinstance(test, cst.UnaryOperation):  # `if not names:`: skipped only for a value known to be true
            return isinstance(argument, (cst.List, cst.Tuple, cst.Set, cst.Dict)) and bool(argument.elements) or (
                isinstance(argument, cst.Name) and argument.value.isupper()) or bool(string_value(argument))
        return not (isinstance(argument, cst.Name) and argument.value == "None") and not (
            isinstance(argument, cst.Call) and last_name(argument.func) == "get")  # settings.get("names") may be None

    def _dict_stores(self, name: cst.Name, landing: Landing, d: int) -> None:
        """`kwargs["date"] = now` then `TEMPLATE.format(**kwargs)`: the values a dict spread into a template is
        filled with, key by key, in this scope."""
        for node in self._stores(name):
            self.walk(node.value, landing, d)
            for target in node.targets:  # result[f.name] = desc in `for f in path.iterdir()`: the keys come in the loop's order
                key = target.target.slice[0].slice if isinstance(target.target, cst.Subscript) and target.target.slice else None
                if not isinstance(key, cst.Index) or string_value(key.value) is not None:
                    continue
                names = {n.value for n in (key.value, *descendants(key.value)) if isinstance(n, cst.Name)}
                loop = next((a for a in self.ctx.ancestors(node) if isinstance(a, cst.For) and isinstance(a.target, cst.Name)
                             and a.target.value in names), None)
                if loop is not None and LISTING_CALL.search(self.ctx.code(loop.iter)):
                    self._iterable(loop.iter, landing, d, False)  # a directory listing's order (a dict's own order is kept)
        scope = self.ctx.scope_of(name)
        for update in self.ctx.calls_on.get(name.value, []):  # context.update({"now": ...}) / context.update(now=...)
            if update.func.attr.value == "update" and self.ctx.scope_of(update) is scope:
                for arg in update.args:
                    self.walk(arg.value, landing, d)

    def _jinja_template(self, expr: cst.BaseExpression, depth: int) -> bool:
        """A Jinja template: `jinja2.Template(...)`, `env.from_string(...)` / `env.get_template(...)`, or a name bound to one."""
        if depth > 3:
            return False
        if isinstance(expr, cst.Name):
            return any(v is not None and self._jinja_template(v, depth + 1) for _, v in list(self.ctx.assigned_values(expr))[:4])
        if not isinstance(expr, cst.Call):
            return False
        if self.ctx.qualified_name_in(expr.func, {"jinja2.Template", "jinja2.environment.Template"}):
            return True
        return isinstance(expr.func, cst.Attribute) and expr.func.attr.value in ("from_string", "get_template", "select_template")

    def _imported(self, name: cst.Name, node: cst.CSTNode, call: cst.Call | None, landing: Landing, d: int, newest_last: bool, ordered: bool,
                  attr: str | None = None, anchor: cst.CSTNode | None = None, method: str | None = None) -> bool:
        """Follow a name imported from another module of the tree to its definition there; what is found
        is reported here, at the name, naming the other file's line. Returns whether it was followed."""
        from cachelint.check.project import imported_definition, module_attribute_definition
        from cachelint.check.shared_prompts import reported_in_renderer, shared_renderer

        if self._hops >= MAX_HOPS or self._params_only:
            return False
        try:
            if attr is not None:
                found = module_attribute_definition(self.ctx, node, name.value, attr)
            elif isinstance(node, cst.ImportFrom):
                found = imported_definition(self.ctx, node, name.value)
            else:
                found = None
        except (RecursionError, ValueError, OSError):
            return False  # another module that cannot be analysed costs this hop, never the linted file
        if found is None:
            return False
        other, definition = found
        sub = ValueWalker(other, self.site, self._volatile_extra)
        sub._hops = self._hops + 1
        sub._landing = landing
        if method is not None:  # SystemPrompt(...).render(): a method of a class of another module
            found_method = _method_of(definition, method) if isinstance(definition, cst.ClassDef) else None
            if found_method is None or call is None:
                return False
            sub._outer = (self, found_method, _bind_arguments(other, call, found_method))
            values = other.returns_of(found_method)
        elif isinstance(definition, cst.FunctionDef):
            if call is None:
                return False
            sub._outer = (self, definition, _bind_arguments_across(call, definition))
            values = other.returns_of(definition)
        elif isinstance(definition, cst.ClassDef):
            return False
        else:
            if call is not None:
                return False
            values = [definition]
        for value in values:
            sub.walk(value, landing, d, newest_last, ordered)
        anchor = call if call is not None else anchor if anchor is not None else name
        where = os.path.relpath(other.filename) if not os.path.isabs(self.ctx.filename) else other.filename
        shared: bool | None = None
        builds: bool | None = None  # whether the function called there builds prompt text (reported_at_origin)
        kept = self._when(anchor) == "per conversation"  # the call into the other module runs once per object or conversation
        for fact in sub.facts:
            if fact.kind == "param":
                continue
            if isinstance(definition, cst.FunctionDef) and method is None and reported_in_renderer(fact) and other.contains(definition, fact.node):
                if shared is None:
                    shared = bool(shared_renderer(other, definition))
                if shared:
                    continue  # a prompt renderer many modules call: reported once, in its own module
            span = other.span(fact.node)
            made_in = other.enclosing_function(fact.node)  # the function of the other module the value is made in
            if builds is None:
                builds = builds_prompt_text(other, found_method if method is not None else definition)
            origin = {"origin": f"{where}:{span.row}", "made_in": made_in.name.value if made_in else None, "builds_text": builds,
                      "at": (other.filename, span.row, span.column, span.end_row, span.end_column,
                             other.span(other.statement_of(fact.node)).row)}
            if fact.extra.get("origin"):  # found two modules away: the module it is made in, not the one between
                path, _, line = fact.extra["origin"].rpartition(":")
                if not os.path.isabs(self.ctx.filename) and os.path.isabs(path):
                    path = os.path.relpath(path)
                origin = {"origin": f"{path}:{line}", "made_in": fact.extra.get("made_in"), "at": fact.extra.get("at"),
                          "builds_text": builds or fact.extra.get("builds_text", False)}
            when = "per conversation" if kept and fact.when == "per call" else fact.when
            self.facts.append(Fact(fact.kind, anchor, replace(fact.landing, cache_block=landing.cache_block), fact.label,
                                   fact.granularity, when, origin))
        return True

    def _argument_of(self, expr: cst.BaseExpression) -> cst.BaseExpression | None:
        """The argument a followed call passes for `expr`, when `expr` names only a parameter."""
        if not isinstance(expr, cst.Name):
            return None
        bindings = list(self.ctx.assigned_values(expr))
        if len(bindings) == 1 and isinstance(bindings[0][0], cst.Param):
            return self._bound_argument(bindings[0][0])
        return None

    def _bound_argument(self, param: cst.Param) -> cst.BaseExpression | None:
        function = self.ctx.enclosing_function(param)
        for _, called, bound in reversed(self._frames):
            if called is function:
                return bound.get(id(param))
        return None

    def _passed_argument(self, param: cst.Param) -> cst.BaseExpression | None:
        """The argument the call being followed passes `param`: a call of this module, or the call in another module
        that led here (`_outer`); None when it passes none or nothing is followed."""
        found = self._bound_argument(param)
        function = self.ctx.enclosing_function(param)
        if found is None and self._outer is not None and self._outer[1] is function:
            found = self._outer[2].get(id(param))
        return found

    def _flag_value(self, test: cst.BaseExpression) -> bool | None:
        """The truth of a test that is a flag parameter of the function being followed (`flag` / `not flag`): the
        literal True / False / None its call passes, or the parameter's default when the call passes nothing.
        None when it is not known (not a parameter, a caller's function, a call with *args / **kwargs)."""
        negate = isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not)
        name = test.expression if negate else test  # type: ignore[attr-defined]
        if not isinstance(name, cst.Name):
            return None
        bindings = list(self.ctx.assigned_values(name))
        if len(bindings) != 1 or not isinstance(bindings[0][0], cst.Param):
            return None
        param = bindings[0][0]
        function = self.ctx.enclosing_function(param)
        frame = next(((call, bound) for call, called, bound in reversed(self._frames) if called is function), None)
        if frame is None and self._outer is not None and self._outer[1] is function:
            frame = (None, self._outer[2])
        if frame is None or (frame[0] is not None and any(a.star for a in frame[0].args)):
            return None
        value = frame[1].get(id(param), param.default)
        if not (isinstance(value, cst.Name) and value.value in ("True", "False", "None")):
            return None
        return (value.value == "True") != negate

    def _param(self, name: cst.Name, param: cst.Param, landing: Landing, d: int, newest_last: bool, ordered: bool) -> None:
        """A parameter: the argument of the call being followed into its function, else what the module's
        callers pass (bounded); a parameter of the function that sends the request is per-request data."""
        if self._entry is not None:
            self._follow_param(name, param, landing, d, newest_last, ordered)
            return
        self._entry = name
        try:
            self._follow_param(name, param, landing, d, newest_last, ordered)
        finally:
            self._entry = None

    def _follow_param(self, name: cst.Name, param: cst.Param, landing: Landing, d: int, newest_last: bool, ordered: bool) -> None:
        function = self.ctx.enclosing_function(param)
        for call, called, bound in reversed(self._frames):
            if called is function:
                value = bound.get(id(param))
                if value is not None:
                    self.walk(value, landing, d, newest_last, ordered)
                return
        if self._outer is not None and self._outer[1] is function:
            outer, _, bound = self._outer  # a function of another module called from the linted one
            value = bound.get(id(param))
            if value is not None:  # reached through an unknown call here (`has_tool(tools)`): a clock still lands, an order may not
                outer.walk(value, replace(landing, cache_block=self._landing.cache_block) if self._landing else landing, d, newest_last,
                           ordered or bool(self._params_only))
            return
        if function is not None and function is self._site_function:
            self._fact("param", name, landing, param.name.value)
        if function is None or len(self._frames) >= MAX_FRAMES or sum(called is None for _, called, _ in self._frames) >= MAX_CALLER_LEVELS:
            return
        for call in callers(self.ctx, function)[:MAX_CALLERS]:
            value = _bind_arguments(self.ctx, call, function).get(id(param))
            if value is not None:
                self._frames.append((call, None, {}))
                try:
                    self.walk(value, landing, d, newest_last, ordered)
                finally:
                    self._frames.pop()

    def _loop_variable(self, name: cst.Name, loop, landing: Landing, d: int, ordered: bool) -> None:
        iterable = loop.iter
        if isinstance(iterable, cst.Call) and self.ctx.qualified_name_in(iterable.func, {"builtins.enumerate", "builtins.range", "itertools.count"}):
            if isinstance(loop, cst.For) and any(l is loop for l in self._site_loops):
                self._fact("counter", name, landing, f"the loop counter {name.value}", "turn")
                return
            if isinstance(iterable.func, cst.Name) and iterable.func.value == "enumerate" and iterable.args:
                iterable = iterable.args[0].value
        iterable = self._argument_of(iterable) or iterable
        label = self._unordered_source(iterable)
        if label:
            self._order_fact(iterable, landing, label, ordered)
        self.walk(iterable, landing, d, ordered=ordered or bool(label))

    def _appended(self, name: cst.Name) -> bool:
        scope = self.ctx.scope_of(name)
        return any(
            c.func.attr.value in LIST_GROWERS and self.ctx.scope_of(c.func.value) is scope  # type: ignore[attr-defined]
            for c in self.ctx.calls_on.get(name.value, [])
        )

    def _list_mutations(self, name: cst.Name, landing: Landing, d: int, ordered: bool) -> None:
        scope = self.ctx.scope_of(name)
        for call in self.ctx.calls_on.get(name.value, []):
            func = call.func
            if self.ctx.scope_of(func.value) is not scope or func.attr.value not in LIST_GROWERS:  # type: ignore[attr-defined]
                continue
            appended = call.args[-1].value if call.args else None
            if landing.arg in ("messages", "input") and not (landing.item and landing.role in ("system", "developer")) \
                    and not (appended is not None and self._system_message(appended)):
                continue  # appended turns are rendered once and then kept: stable history (a system text's lines are not turns;
                # an appended system message is instructions, rendered again whenever the list is built)
            if landing.arg == "tools" and not landing.item and self._conditional(call) and self._inside_site_function(call) \
                    and self._chosen_per_turn([], call):
                self._fact("filtered", call, landing, f"{name.value}.{func.attr.value}() under a condition")
            values = call.args[1:] if func.attr.value == "insert" else call.args
            for arg in values[:1]:
                if func.attr.value == "extend":
                    self._iterable(arg.value, landing, d, ordered)
                else:
                    self.walk(arg.value, landing, d)

    def _system_message(self, appended: cst.BaseExpression) -> bool:
        """is_system_message, memoized on the module: every request on one history asks it of every append."""
        memo = self.ctx.__dict__.setdefault("_system_message", {})
        if id(appended) not in memo:
            memo[id(appended)] = is_system_message(appended)
        return memo[id(appended)]

    def _conditional(self, node: cst.CSTNode) -> bool:
        """Whether `node` runs only on some paths: under an `if` whose other branches do not all raise
        (`if tool: tools.append(tool) else: raise KeyError(name)` drops no tool: it fails instead)."""
        child = node
        for ancestor in self.ctx.ancestors(node):
            if isinstance(ancestor, SCOPES_STOP):
                return False
            if isinstance(ancestor, cst.If):
                other = ancestor.orelse if child is ancestor.body else ancestor.body if child is ancestor.orelse else None
                if other is None or not _always_raises(other):
                    return True
            child = ancestor
        return False

    def _chosen_per_turn(self, tests: list[cst.BaseExpression], node: cst.CSTNode) -> bool:
        """Whether the choice that keeps or drops tools at `node` can differ between turns of one conversation:
        its condition (`tests`, and the `if` / conditional expressions around `node` in its function) reads the
        conversation (the history sent, or state that holds it), a value that changes in a loop around the
        request, or an argument that the module's callers pass from a loop. A switch on configuration or on a
        capability (`if output_schema:`, `if user.is_admin:`) is the same for every turn: not reported."""
        conditions = list(tests)
        child = node
        for ancestor in self.ctx.ancestors(node):
            if isinstance(ancestor, SCOPES_STOP):
                break
            if isinstance(ancestor, cst.If) and child is not ancestor.test:
                other = ancestor.orelse if child is ancestor.body else ancestor.body
                if not _always_raises(other):
                    conditions.append(ancestor.test)
            elif isinstance(ancestor, cst.IfExp) and child is not ancestor.test:
                conditions.append(ancestor.test)
            child = ancestor
        return any(self._varies_per_turn(test, 0) for test in conditions)

    @cached_property
    def _history_roots(self) -> set[str]:
        """The names of the history the request sends (its `messages` / `input`, subscripts and attributes peeled)."""
        roots = set()
        for arg in ("messages", "input"):
            expr = self.site.arg(arg)
            while isinstance(expr, (cst.Subscript, cst.Attribute)) and not (isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self"):
                expr = expr.value
            if isinstance(expr, (cst.Name, cst.Attribute)):
                roots.add(self.ctx.code(expr))
        return roots

    def _varies_per_turn(self, expr: cst.CSTNode, depth: int) -> bool:
        if depth > 3:
            return False
        roots = self._history_roots
        comp_targets = {n.value for c in self.ctx.ancestors(expr) if isinstance(c, (cst.ListComp, cst.GeneratorExp, cst.SetComp, cst.DictComp))
                        for f in [c.for_in] for n in descendants(f.target) if isinstance(n, cst.Name)}
        for node in descendants(expr):
            if isinstance(node, cst.Call) and self.ctx.qualified_name_in(node.func, self._volatile_names):
                return True
            if isinstance(node, cst.Attribute) and self.ctx.code(node) in roots:
                return True  # self.history
            if self._turn_state(node, depth):
                return True  # self._user_turns_seen, counted by the method that sends, or read by a method the test calls
            if not isinstance(node, cst.Name) or node.value in comp_targets:
                continue
            parent = self.ctx.parent(node)
            if isinstance(parent, cst.Attribute) and parent.attr is node:
                continue
            if node.value in roots:
                return True  # the conversation itself: messages[-1], state["steps"]
            for binding, value in self.ctx.assigned_values(node):
                if any(self.ctx.contains(loop, binding) or binding is getattr(loop, "target", None) for loop in self._site_loops):
                    return True  # set in the loop that sends the requests
                loop = next((a for a in self.ctx.ancestors(binding) if isinstance(a, (cst.For, cst.CompFor))), None)
                if loop is not None and (binding is loop.target or self.ctx.contains(loop.target, binding)) and self._varies_per_turn(loop.iter, depth + 1):
                    return True  # for name in pick(history): ...
                if isinstance(binding, cst.Param):
                    argument = self._bound_argument(binding)
                    if argument is not None:
                        if self._varies_per_turn(argument, depth + 1):
                            return True
                    elif self._passed_from_a_loop(binding):
                        return True
                elif value is not None and self._varies_per_turn(value, depth + 1):
                    return True
        return False

    @cached_property
    def _changed_per_turn(self) -> frozenset[str]:
        """The attributes of `self` that the method sending the request changes on every call (`self._turns += 1`,
        `self.step = step`): state of the conversation, one value per turn."""
        function = self.ctx.enclosing_function(self.site.node) if isinstance(self.site.node, cst.CSTNode) else None
        if function is None or function.name.value == "__init__":
            return frozenset()
        changed = set()
        for node in descendants(function):
            targets = [node.target] if isinstance(node, (cst.AugAssign, cst.AnnAssign)) else \
                [t.target for t in node.targets] if isinstance(node, cst.Assign) else []
            changed |= {t.attr.value for t in targets if isinstance(t, cst.Attribute) and isinstance(t.value, cst.Name) and t.value.value == "self"}
        return frozenset(changed)

    def _turn_state(self, node: cst.CSTNode, depth: int) -> bool:
        """`self.<attr>` that the sending method changes every turn, read here or in the body of a method of the class
        called here (`self._tool_window_closed(t)`, which compares the turn count with the tool's window)."""
        if not self._changed_per_turn or depth > 2:
            return False
        if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == "self":
            return node.attr.value in self._changed_per_turn
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and isinstance(node.func.value, cst.Name) \
                and node.func.value.value == "self":
            cls = self.ctx.enclosing(node, (cst.ClassDef,))
            for method in self.ctx.functions.get(f"{cls.name.value}.{node.func.attr.value}", []) if isinstance(cls, cst.ClassDef) else []:
                if any(self._turn_state(inner, depth + 1) for inner in descendants(method.body) if isinstance(inner, (cst.Attribute, cst.Call))):
                    return True
        return False

    def tools_key_set_per_turn(self) -> cst.CSTNode | None:
        """`kwargs = {...}; if step < limit - 1: kwargs["tools"] = tools; client.messages.create(**kwargs)`: the request's
        tools key is set only on some turns of the conversation (a condition that reads it or a value its loop
        changes), so the requests of one conversation go out with and without tools."""
        if not isinstance(self.site.node, cst.Call):
            return None  # a message list by its shape: no request in sight
        for arg in self.site.node.args:
            if arg.star != "**" or not isinstance(arg.value, cst.Name):
                continue
            for assign in self.ctx.subscript_assignments.get(arg.value.value, []):
                target = assign.targets[0].target
                index = target.slice[0].slice if isinstance(target, cst.Subscript) and len(target.slice) == 1 else None
                if isinstance(index, cst.Index) and string_value(index.value) == "tools" and self._inside_site_function(assign) \
                        and self._conditional(assign) and not self._given_if_any(assign) and self._chosen_per_turn([], assign):
                    return assign
            for update in self.ctx.calls_on.get(arg.value.value, []):  # kwargs.update(tools=TOOLS)
                if update.func.attr.value == "update" and any(a.keyword is not None and a.keyword.value == "tools" for a in update.args) \
                        and self._inside_site_function(update) and self._conditional(update) and self._chosen_per_turn([], update):
                    return update
        return None

    def _given_if_any(self, assign: cst.Assign) -> bool:
        """`if tools: tool_list = tools.describe(); if tool_list: payload["tools"] = tool_list`: an adapter that sends
        the tools it is handed whenever there are any. Each test is of the tools themselves (or what they are made
        from), so whether they go out is its caller's choice, judged where the caller leaves them out."""
        sources = {n.value for n in descendants(assign.value) if isinstance(n, cst.Name)}
        if isinstance(assign.value, cst.Name):
            sources.add(assign.value.value)
        function = self.ctx.enclosing_function(assign)
        for node in descendants(function) if function is not None else ():
            if isinstance(node, cst.Assign) and any(isinstance(t.target, cst.Name) and t.target.value in sources for t in node.targets):
                sources |= {n.value for n in descendants(node.value) if isinstance(n, cst.Name)}
        tests = [a.test for a in self.ctx.ancestors(assign) if isinstance(a, cst.If) and self.ctx.contains(function, a)] if function else []
        if not tests or not all({n.value for n in (t, *descendants(t)) if isinstance(n, cst.Name)} - {"None"} <= sources for t in tests):
            return False
        # a caller here that hands it tools on some calls only (`tools if step < 9 else None`): the switch is in sight
        params = [p for p in (*function.params.params, *function.params.kwonly_params) if p.name.value in sources]  # type: ignore[union-attr]
        for call in callers(self.ctx, function):  # type: ignore[arg-type]
            for param in params:
                passed = argument_for(call, param.name.value, positional_index(function, param.name.value))  # type: ignore[arg-type]
                if isinstance(passed, cst.IfExp):
                    return False
        return True

    def _selects_per_turn(self, call: cst.Call) -> bool:
        """`tools = router.select(messages[-1]["content"], ALL_TOOLS)` in the function that sends the request: a call
        outside this module's code (its own functions are followed into) picks the tools from what changes between
        turns of the conversation (the history sent, a value set in the loop that sends it)."""
        sent = self.site.arg("tools")
        parent = self.ctx.parent(call)
        direct = call is sent or (isinstance(sent, cst.Name) and isinstance(parent, cst.Assign)
                                  and any(isinstance(t.target, cst.Name) and t.target.value == sent.value for t in parent.targets))
        if not direct:
            return False  # an item looked up (`REGISTRY.get(name)`) or a loop's source: the appends under their condition say it
        return not self.ctx.called_functions(call) and self._inside_site_function(call) \
            and any(self._reads_this_turn(arg.value) for arg in call.args)

    def _reads_this_turn(self, expr: cst.BaseExpression) -> bool:
        """`messages[-1]["content"]`, or a name the loop that sends the requests binds: what changes from one turn of
        the conversation to the next (not `session.user.role`, fixed for the conversation though it sits beside it)."""
        roots = {self.ctx.code(sent) for sent in (self.site.arg("messages"), self.site.arg("input")) if sent is not None}
        for node in [expr, *descendants(expr)]:
            if isinstance(node, (cst.Name, cst.Attribute, cst.Subscript)):
                code = self.ctx.code(node)
                if any(code == root or code.startswith((root + "[", root + ".")) for root in roots):
                    return True
            if isinstance(node, cst.Name) and any(self.ctx.contains(loop, binding) or binding is getattr(loop, "target", None)
                                                  for binding, _ in self.ctx.assigned_values(node) for loop in self._site_loops):
                return True
        return False

    def _passed_from_a_loop(self, param: cst.Param) -> bool:
        """A parameter of the sending function whose callers (in this module) pass a value that a loop around
        the call changes: `for agent in agents: act(agent, transcript)`."""
        function = self.ctx.enclosing_function(param)
        if function is None or function is not self._site_function:
            return False
        for call in callers(self.ctx, function)[:MAX_CALLERS]:
            argument = _bind_arguments(self.ctx, call, function).get(id(param))
            loops = self.ctx.loops_around(call)
            if argument is None or not loops:
                continue
            for name in (n for n in descendants(argument) if isinstance(n, cst.Name)):
                for binding, _ in self.ctx.assigned_values(name):
                    if any(self.ctx.contains(loop, binding) or binding is getattr(loop, "target", None) for loop in loops):
                        return True
        return False

    def _inside_site_function(self, node: cst.CSTNode) -> bool:
        return self._site_function is not None and self.ctx.contains(self._site_function, node)

    def _attribute(self, attr: cst.Attribute, landing: Landing, d: int, ordered: bool) -> None:
        if attr.attr.value in VOLATILE_ATTRIBUTES:
            self._fact("volatile", attr, landing, f".{attr.attr.value}", VOLATILE_ATTRIBUTES[attr.attr.value])
            return
        if isinstance(attr.value, cst.Name) and attr.value.value not in ("self", "cls"):
            stores = self._attribute_stores(attr)
            for store in stores:  # `settings.system_prompt += f"... {now}"` earlier in this function
                self.walk(store.value, landing, d, ordered=ordered)
            if any(isinstance(store, cst.Assign) for store in stores):
                return  # bound here: what the object held before is not this value
            for binding, _ in self.ctx.assigned_values(attr.value):
                if isinstance(binding, cst.Param) and self.ctx.enclosing_function(binding) is self._site_function:
                    self._fact("param", attr, landing, self.ctx.code(attr))
                    return
                if isinstance(binding, (cst.Import, cst.ImportFrom)) and self._imported(attr.value, binding, None, landing, d, False, ordered, attr=attr.attr.value, anchor=attr):
                    return  # prompts.SYSTEM: a value of a module of the tree
        if isinstance(attr.value, cst.Name) and attr.value.value in ("self", "cls"):
            cls = self.ctx.enclosing(attr, (cst.ClassDef,))
            if isinstance(cls, cst.ClassDef):
                self._self_attribute(cls, attr, landing, d, ordered)
            return
        if isinstance(attr.value, cst.Call):
            self.walk(attr.value, landing, d)

    def _attribute_stores(self, attr: cst.Attribute) -> list[cst.Assign | cst.AugAssign]:
        """The statements of `attr`'s function, before it, that make what the same `obj.name` holds there: the last
        plain binding (`state.prompt = ...`) and what extends it after (`settings.system_prompt += ...`). The
        function's stores to attributes of names are indexed once (by their code) and looked up per read."""
        function = self.ctx.enclosing_function(attr)
        if function is None:
            return []
        key = f"attribute_stores:{id(function)}"
        index = self.ctx.memo.get(key)
        if index is None:
            index = self.ctx.memo[key] = _attribute_stores_of(self.ctx, function)
        line = self.ctx.span(attr).row
        stores = [(row, node) for row, node in index.get(self.ctx.code(attr), ()) if row < line]  # type: ignore[union-attr]
        last_binding = max((i for i, (_, node) in enumerate(stores) if isinstance(node, cst.Assign)), default=0)
        return [node for _, node in stores[last_binding:]]

    def _self_attribute(self, cls: cst.ClassDef, attr: cst.Attribute, landing: Landing, d: int, ordered: bool) -> None:
        wanted = attr.attr.value
        for node in self.ctx.self_assignments(cls).get(wanted, ()):
            if isinstance(node, cst.AugAssign) and isinstance(node.value, (cst.Integer, cst.Float)):
                self._fact("counter", attr, landing, f"self.{wanted} (incremented with {self.ctx.code(node.operator).strip()})", "turn")
            elif isinstance(node, cst.AugAssign):
                self.walk(node.value, landing, d, ordered=ordered)
            elif node.value is not None:
                self.walk(node.value, landing, d, ordered=ordered)
        for stmt in cls.body.body:  # class attributes
            if isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    if isinstance(small, cst.Assign) and any(isinstance(t.target, cst.Name) and t.target.value == wanted for t in small.targets):
                        self.walk(small.value, landing, d, ordered=ordered)

    # --- facts ------------------------------------------------------------------------------------------------

    def _measures_the_conversation(self, call: cst.Call) -> bool:
        """`user.approximate_context_size(thread_id=...)`, `num_tokens_from_messages(messages)`: the size of the
        conversation so far, which grows with every turn."""
        name = _short_code(self.ctx, call.func).rsplit(".", 1)[-1]
        return CONVERSATION_SIZE.search(name) is not None  # not `len(old_messages)`: a count written once into a summary

    def _fact(self, kind: str, node: cst.CSTNode, landing: Landing, label: str, granularity: str = "call", ordered: bool = False) -> None:
        if kind == "unordered" and ordered:
            return
        if self._params_only and kind != "param":
            return
        if kind == "volatile" and label.startswith(SAMPLED) and any(called is None for _, called, _ in self._frames) and self._one_off():
            return  # `get_interested_topics(mbti, age=get_random_age(), ...)`: drawn by a caller and handed in to a request
            # with no conversation behind it, the draw is the case this request is about (a sampled persona), not noise
            # in a prefix the requests would share
        when = self._when(node)
        if granularity == "process":
            when = "per process"
        if kind == "counter" and self._entry is not None and self.ctx.enclosing_function(node) is not self.ctx.enclosing_function(self._entry):
            # a caller's loop counter passed in as an argument: the problem is where it enters the prompt text,
            # not at the call that passes it (possibly far away)
            label = f"{label}, passed in on line {self.ctx.span(node).row} as `{self._entry.value}`"
            node = self._entry
        self.facts.append(Fact(kind, node, landing, label, granularity, when))

    def _one_off(self) -> bool:
        """The request sends a fresh list of literal messages (`[{"role": "system", "content": prompt}]`), nothing
        kept from earlier turns: found at the request, or in the function that builds the prompt when the request
        is sent elsewhere."""
        messages = self.site.arg("messages") if isinstance(self.site.node, cst.Call) else None
        if messages is None and self._site_function is not None:
            messages = next((a.value for call in descendants(self._site_function) if isinstance(call, cst.Call)
                             for a in call.args if a.keyword is not None and a.keyword.value == "messages"), None)
        return isinstance(messages, cst.List) and bool(messages.elements) \
            and all(isinstance(e, cst.Element) and isinstance(e.value, cst.Dict) for e in messages.elements)

    def _when(self, node: cst.CSTNode) -> str:
        function = self.ctx.enclosing_function(node)
        if function is None:
            return "per call" if self.ctx.reruns_per_turn else "per process"  # a Streamlit script runs on every message
        for call, called, _ in reversed(self._frames):
            if called is function:  # PROMPT = f"Time: {get_time()}": a helper followed from a module-level value runs at import
                if self.ctx.enclosing_function(call) is None and not self.ctx.reruns_per_turn:
                    return "per process"
                break
        if any(_is_cache_decorator(self.ctx, dec) for dec in function.decorators):
            return "per process"
        if function.name.value in ("__init__", "__post_init__") and function is not self._site_function:
            return "per conversation"  # kept on the object: computed once when it is made, not on every request
        if not isinstance(self.site.node, cst.Call) and self._site_function is not None \
                and self._site_function.name.value in ("__init__", "__post_init__"):
            return "per conversation"  # a message list the object is made with (`self.chat_history = [system]`): once per object
        if function is self._site_function and self._site_loops:
            loop = self._site_loops[-1]  # the outermost loop around the call
            if not self.ctx.contains(loop, node):
                return "per conversation"
        return "per call"


ITERATORS = {f"builtins.{n}" for n in ("enumerate", "reversed", "iter", "zip")}  # the items of what they are given, in its order
MEASURES = {f"builtins.{n}" for n in ("len", "bool", "isinstance", "issubclass", "hasattr", "callable", "id", "type", "hash")}
PURE_BUILTINS = {f"builtins.{n}" for n in ("int", "float", "round", "abs", "min", "max", "format", "bool", "divmod", "hex", "oct")}


SCOPES_STOP = (cst.FunctionDef, cst.ClassDef, cst.Lambda)


def _self_values(ctx: ModuleContext, cls: cst.ClassDef, attr: str) -> list[cst.BaseExpression]:
    """Values assigned to `self.<attr>` anywhere in the class, and to `<attr>` in its body."""
    from cachelint.check.callsites import _self_assignments

    values = _self_assignments(ctx, cls, attr)
    for stmt in cls.body.body:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if isinstance(small, cst.Assign) and any(isinstance(t.target, cst.Name) and t.target.value == attr for t in small.targets):
                    values.append(small.value)
                elif isinstance(small, cst.AnnAssign) and small.value is not None and isinstance(small.target, cst.Name) and small.target.value == attr:
                    values.append(small.value)
    return values


def _method_of(cls: cst.ClassDef, name: str) -> cst.FunctionDef | None:
    """The method `name` defined in the body of `cls` (not inherited)."""
    for stmt in cls.body.body:
        if isinstance(stmt, cst.FunctionDef) and stmt.name.value == name:
            return stmt
    return None


def _is_method(ctx: ModuleContext, function: cst.FunctionDef) -> bool:
    params = function.params.params
    return (isinstance(ctx.parent(ctx.parent(function) or function), cst.ClassDef) and bool(params)
            and params[0].name.value in ("self", "cls")
            and not any(isinstance(dec.decorator, cst.Name) and dec.decorator.value == "staticmethod" for dec in function.decorators))


def _bind_arguments_across(call: cst.Call, function: cst.FunctionDef) -> dict[int, cst.BaseExpression]:
    """Arguments of a call of a module-level function of another module (not a method)."""
    params = list(function.params.params)
    by_name = {p.name.value: p for p in [*params, *function.params.kwonly_params]}
    bound: dict[int, cst.BaseExpression] = {}
    for position, arg in enumerate(call.args):
        if arg.star:
            break
        if arg.keyword is not None:
            if arg.keyword.value in by_name:
                bound[id(by_name[arg.keyword.value])] = arg.value
        elif position < len(params):
            bound[id(params[position])] = arg.value
    _bind_star_kwargs(call, function, by_name, bound)
    return bound


def _bind_star_kwargs(call: cst.Call, function: cst.FunctionDef, by_name: dict, bound: dict[int, cst.BaseExpression]) -> None:
    """`def build(persona, **extra)` called as `build("Ada", now=..., **options)`: `extra` is bound to a dict of
    the keywords no named parameter takes and the `**` dicts passed (a stand-in dict; its values are the
    call's own expressions, so what is found in them is reported where it is)."""
    star = function.params.star_kwarg
    if not isinstance(star, cst.Param):
        return
    elements: list[cst.BaseDictElement] = []
    for arg in call.args:
        if arg.star == "**":
            elements.append(cst.StarredDictElement(arg.value))
        elif arg.keyword is not None and arg.keyword.value not in by_name:
            elements.append(cst.DictElement(cst.SimpleString(repr(arg.keyword.value)), arg.value))
    if elements:
        bound[id(star)] = cst.Dict(elements)


def _bind_arguments(ctx: ModuleContext, call: cst.Call, function: cst.FunctionDef) -> dict[int, cst.BaseExpression]:
    """{id(param): argument expression} for a call of `function` (positional, keyword; `self` skipped)."""
    params = list(function.params.params)
    if _is_method(ctx, function):
        params = params[1:]
    by_name = {p.name.value: p for p in [*params, *function.params.kwonly_params]}
    bound: dict[int, cst.BaseExpression] = {}
    position = 0
    _bind_star_kwargs(call, function, by_name, bound)
    for arg in call.args:
        if arg.star:
            return bound  # *args / **kwargs: the rest is not known by position
        if arg.keyword is not None:
            param = by_name.get(arg.keyword.value)
            if param is not None:
                bound[id(param)] = arg.value
        else:
            if position < len(params):
                bound[id(params[position])] = arg.value
            position += 1
    for param in by_name.values():
        if id(param) not in bound and param.default is not None:
            bound[id(param)] = param.default
    return bound


def callers(ctx: ModuleContext, function: cst.FunctionDef) -> list[cst.Call]:
    """Calls in this module that run `function`: `f(...)`, `self.f(...)` / `obj.f(...)` for a method,
    `Class(...)` for `__init__`."""
    index = ctx.calls_by_name
    name = function.name.value
    cls = ctx.enclosing(function, (cst.ClassDef,))
    if name == "__init__" and isinstance(cls, cst.ClassDef):
        return index.get(cls.name.value, [])
    found = []
    for call in index.get(name, []):
        if ctx.contains(function, call):
            continue  # recursion
        if isinstance(call.func, cst.Name) or (isinstance(call.func, cst.Attribute) and isinstance(call.func.value, cst.Name) and call.func.value.value in ("self", "cls")):
            if any(f is function for f in ctx.called_functions(call)):
                found.append(call)
        elif isinstance(cls, cst.ClassDef) and len(ctx.functions.get(f"{cls.name.value}.{name}", [])) == 1 and sum(
                key.endswith(f".{name}") or key == name for key in ctx.functions) == 1:
            found.append(call)  # obj.method(...): the only function of this name in the module
    return found


def _always_raises(block: cst.CSTNode | None) -> bool:
    """An `if` branch (a body, an `else:`, an `elif` chain) that ends in `raise` on every path."""
    if block is None:
        return False
    if isinstance(block, cst.If):
        return _always_raises(block.body) and _always_raises(block.orelse)
    if isinstance(block, cst.Else):
        return _always_raises(block.body)
    body = getattr(block, "body", None)
    if not body:
        return False
    last = body[-1]
    if isinstance(last, cst.Raise):  # if x: ... else: raise E (one line)
        return True
    if isinstance(last, cst.SimpleStatementLine):
        return any(isinstance(small, cst.Raise) for small in last.body)
    if isinstance(last, cst.If):
        return _always_raises(last)
    return False


def concatenated_parts(node: cst.ConcatenatedString) -> list[cst.BaseExpression]:
    """`"a" "b" f"{c}"` as its strings in order, however deeply the implicit concatenation nests."""
    parts: list[cst.BaseExpression] = []
    stack: list[cst.BaseExpression] = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, cst.ConcatenatedString):
            stack += [current.right, current.left]
        else:
            parts.append(current)
    return parts


def _operands(node: cst.BinaryOperation) -> list[cst.BaseExpression]:
    """a + b + c as [a, b, c] (left-nested chains of one operator)."""
    operands: list[cst.BaseExpression] = []
    current: cst.BaseExpression = node
    while isinstance(current, cst.BinaryOperation) and isinstance(current.operator, cst.Add) and (current is node or not current.lpar):
        operands.append(current.right)
        current = current.left
    operands.append(current)
    return operands[::-1]


def message_texts(call: cst.Call) -> list[cst.BaseExpression]:
    """The text arguments of a message object's constructor (a capitalized callee): `content=` / `message=` /
    `text=`, or the first positional argument of a class named for a message or block (`SystemMessage(text)`)."""
    func = call.func
    leaf = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
    if not leaf[:1].isupper():
        return []
    texts = [a.value for a in call.args if a.keyword is not None and a.keyword.value in MESSAGE_TEXT_ARGS]
    if not texts and MESSAGE_CLASS.search(leaf):
        texts = [a.value for a in call.args[:1] if a.keyword is None and not a.star]
    return texts


def _call_chain(call: cst.Call) -> list[cst.Call]:
    """x.a(1).b(2) -> [b-call, a-call] (outermost first)."""
    chain = []
    current: cst.BaseExpression = call
    while isinstance(current, cst.Call):
        chain.append(current)
        current = current.func.value if isinstance(current.func, cst.Attribute) else None  # type: ignore[assignment]
    return chain


def _isinstance_dict_test(test: cst.BaseExpression, name: str) -> bool:
    """`isinstance(name, dict)` (or a tuple naming dict / Mapping) and nothing else."""
    if not (isinstance(test, cst.Call) and isinstance(test.func, cst.Name) and test.func.value == "isinstance" and len(test.args) == 2):
        return False
    subject, kinds = test.args[0].value, test.args[1].value
    if not (isinstance(subject, cst.Name) and subject.value == name):
        return False
    names = [e.value for e in kinds.elements] if isinstance(kinds, cst.Tuple) else [kinds]
    return any(isinstance(k, (cst.Name, cst.Attribute)) and (k.value if isinstance(k, cst.Name) else k.attr.value) in ("dict", "Dict", "Mapping", "MutableMapping") for k in names)


def _key_is(element: cst.BaseDictElement, key: str) -> bool:
    return isinstance(element, cst.DictElement) and string_value(element.key) == key


# pydantic's `model_json_schema()` / `TypeAdapter(...).json_schema()`, `to_json_schema()`: a schema generated
# from a class, its keys written in the generator's fixed order
SCHEMA_GENERATORS = frozenset({"model_json_schema", "json_schema", "get_json_schema", "to_json_schema", "openai_schema"})


def _root_name(expr: cst.BaseExpression) -> str | None:
    """`schema["properties"]["x"]` -> "schema"."""
    while isinstance(expr, (cst.Subscript, cst.Attribute)):
        expr = expr.value
    return expr.value if isinstance(expr, cst.Name) else None


def _generated_schema(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value in SCHEMA_GENERATORS


def _is_false(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value in ("False", "None")


def _is_cache_decorator(ctx: ModuleContext, decorator: cst.Decorator) -> bool:
    target = decorator.decorator
    target = target.func if isinstance(target, cst.Call) else target
    return bool(ctx.qualified_name_in(target, {"functools.lru_cache", "functools.cache", "functools.cached_property"}))


def _short_code(ctx: ModuleContext, node: cst.CSTNode, limit: int = 40) -> str:
    code = ctx.code(node)
    return code if len(code) <= limit else code[: limit - 3] + "..."


def _rezoned(call: cst.Call) -> bool:
    """`t.astimezone(...)`, `t.replace(tzinfo=...)`: the same instant in another zone, as fine-grained as `t`."""
    if not isinstance(call.func, cst.Attribute):
        return False
    if call.func.attr.value == "astimezone":
        return True
    return call.func.attr.value == "replace" and bool(call.args) and all(a.keyword is not None and a.keyword.value == "tzinfo" for a in call.args)


TURN_ITERABLES = frozenset({"range", "count", "repeat", "cycle", "input", "iter"})
REQUEST_KEYWORDS = frozenset({"messages", "system", "input", "prompt", "instructions", "contents"})
TURN_SOURCE = re.compile(r"stdin|input|stream|events|queue|socket|websocket|updates", re.I)


def _numbers_items(ctx: ModuleContext, loop: cst.For) -> bool:
    """`for row in results: n += 1; parts.append(f"[Source {n}] ...")`: a loop over a collection, waiting on nothing
    and sending nothing, numbers its items the same way on every call. A loop over `range(...)`, `count()`, stdin or a
    stream, one that awaits, or one that sends a request or grows a history may be the loop of turns."""
    iterable = loop.iter
    if isinstance(iterable, cst.Call) and called_name(iterable) in TURN_ITERABLES:
        return False
    if TURN_SOURCE.search(ctx.code(iterable)) or loop.asynchronous is not None:
        return False
    for node in descendants(loop.body):
        if isinstance(node, (cst.Await, cst.Yield)):
            return False
        if isinstance(node, cst.Arg) and node.keyword is not None and node.keyword.value in REQUEST_KEYWORDS:
            return False  # a request made for each item: the counter numbers the requests
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in ("append", "extend") \
                and MESSAGES_HOLDER.search(ctx.code(node.func.value)):
            return False
    return True


MESSAGES_HOLDER = re.compile(r"(?:^|[._])(?:messages|history|conversation|chat_history|msgs|turns)$", re.I)

