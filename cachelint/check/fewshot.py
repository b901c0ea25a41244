"""Few-shot examples drawn at random for each request (CL101).

Eval harnesses and generators often pick their examples per request: `random.sample(EXAMPLES, k)`,
`rng.choices(pool, k=5)`, or a copy of the pool shuffled, joined into the start of the prompt. The examples are
the long part every request could share; drawn anew each time, no two requests share them as a prefix, and they are
prefilled (and billed as fresh input) on every call. Fix the examples (or draw them once per process) and put them
first.

Recognized in one function: a random draw from a pool that is not built per call (a module-level name or an
attribute of the object), the drawn examples read into a text or a message (a `join`, an f-string, a `+`, a
comprehension) that the function sends, returns or keeps under a prompt-like name. A generator made in the same
function with a constant seed (`random.Random(0)`), or `random.seed(0)` there, draws the same examples every call
and is quiet; so is a draw of one item (`random.choice`), which is as often a persona or a retry delay as an example.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from cachelint.check.module import ModuleContext, descendants

DRAWS = frozenset({"sample", "choices", "shuffle"})
PROMPT_WORD = re.compile(r"prompt|shot|example|demo|message|instruction|context|exemplar", re.I)
RANDOM_MODULES = frozenset({"random.sample", "random.choices", "random.shuffle", "numpy.random.choice", "numpy.random.shuffle"})


@dataclass(frozen=True, slots=True)
class RandomShots:
    node: cst.Call  # the draw
    pool: str  # what it draws from
    into: str  # where the drawn examples go
    sent: bool  # the function sends the request


def random_shots(ctx: ModuleContext, sites: list) -> Iterator[RandomShots]:
    sending = {id(ctx.enclosing_function(site.node)) for site in sites if isinstance(site.node, cst.Call)}
    for name in DRAWS:
        for call in ctx.calls_by_name.get(name, []):
            found = _judge(ctx, call, sending)
            if found is not None:
                yield found


def _judge(ctx: ModuleContext, call: cst.Call, sending: set[int]) -> RandomShots | None:
    function = ctx.enclosing_function(call)
    if function is None or not call.args or not _random_draw(ctx, call, function):
        return None
    pool = call.args[0].value
    if not _kept_between_calls(ctx, pool, function):
        return None
    drawn = _drawn_name(ctx, call)
    if drawn is None:
        return None
    into = _prompt_use(ctx, function, drawn, id(function) in sending)
    return RandomShots(call, ctx.code(pool), into, id(function) in sending) if into is not None else None


def _random_draw(ctx: ModuleContext, call: cst.Call, function: cst.FunctionDef) -> bool:
    """`random.sample(...)`, or `rng.sample(...)` on a generator not seeded with a constant in this function."""
    if ctx.qualified_name_in(call.func, RANDOM_MODULES) is not None:
        return not _seeded_here(ctx, function)
    func = call.func
    if not isinstance(func, cst.Attribute):
        return False
    receiver = ctx.code(func.value)
    if not re.search(r"(?:^|[._])(?:rng|random|rand|generator|rs)$", receiver, re.I):
        return False
    for node in descendants(function):  # rng = random.Random(0) made here: the same draw on every call
        if isinstance(node, cst.Assign) and any(ctx.code(t.target) == receiver for t in node.targets) and isinstance(node.value, cst.Call) \
                and node.value.args and isinstance(node.value.args[0].value, (cst.Integer, cst.SimpleString)):
            return False
    return True


def _seeded_here(ctx: ModuleContext, function: cst.FunctionDef) -> bool:
    return any(isinstance(n, cst.Call) and ctx.qualified_name_in(n.func, {"random.seed"}) is not None and n.args
               and isinstance(n.args[0].value, (cst.Integer, cst.SimpleString)) for n in descendants(function))


def _kept_between_calls(ctx: ModuleContext, pool: cst.BaseExpression, function: cst.FunctionDef) -> bool:
    """The pool outlives the call: a module-level name, `self.examples`, or a local copy of one (`list(EXAMPLES)`)."""
    if isinstance(pool, cst.Call) and pool.args and ctx.code(pool.func) in ("list", "copy.copy", "tuple"):
        pool = pool.args[0].value
    if isinstance(pool, cst.Attribute):
        return isinstance(pool.value, cst.Name) and pool.value.value in ("self", "cls")
    if isinstance(pool, cst.Name):
        bindings = list(ctx.assigned_values(pool))
        if bindings and all(ctx.enclosing_function(b) is None for b, _ in bindings):
            return True  # a module-level pool
        values = [v for b, v in bindings if ctx.contains(function, b)]
        return len(values) == 1 and values[0] is not None and _kept_between_calls(ctx, values[0], function)
    return False


def _drawn_name(ctx: ModuleContext, call: cst.Call) -> str | None:
    """The name holding the drawn examples: `shots = random.sample(...)`, or the list `random.shuffle(shots)` shuffles."""
    if isinstance(call.func, cst.Attribute) and call.func.attr.value == "shuffle" or ctx.qualified_name_in(call.func, {"random.shuffle"}):
        target = call.args[0].value
        return target.value if isinstance(target, cst.Name) else None
    parent = ctx.parent(call)
    if isinstance(parent, cst.Assign) and len(parent.targets) == 1 and isinstance(parent.targets[0].target, cst.Name):
        return parent.targets[0].target.value
    return None


def _prompt_use(ctx: ModuleContext, function: cst.FunctionDef, drawn: str, sends: bool) -> str | None:
    """Where the drawn examples go: a text or message the function sends (it holds a request), returns, or binds to a
    prompt-like name. Followed through the names assigned from them in the function."""
    names = {drawn}
    for _ in range(4):
        grown = False
        for node in descendants(function):
            targets: list[cst.BaseExpression] = []
            if isinstance(node, cst.Assign) and _reads(node.value, names):
                targets = [t.target for t in node.targets]
            elif isinstance(node, cst.AugAssign) and _reads(node.value, names):
                targets = [node.target]  # prompt += f"{sample['context']}"
            elif isinstance(node, cst.For) and _reads(node.iter, names):
                targets = [n for n in [node.target, *descendants(node.target)] if isinstance(n, cst.Name)]  # for i, s in enumerate(shots)
            for target in targets:
                if isinstance(target, cst.Name) and target.value not in names:
                    names.add(target.value)
                    grown = True
        if not grown:
            break
    texts = {n for n in names - {drawn} if PROMPT_WORD.search(n)}
    if PROMPT_WORD.search(drawn):
        texts.add(drawn)
    returned = [r for r in ctx.returns_of(function) if _reads(r, names)]
    if not _rendered(function, names):
        return None
    if texts and (sends or returned or PROMPT_WORD.search(function.name.value)):
        return min(texts)
    if returned and PROMPT_WORD.search(function.name.value):
        return f"{function.name.value}()"
    return None


def _reads(node: cst.CSTNode, names: set[str]) -> bool:
    return any(isinstance(n, cst.Name) and n.value in names for n in [node, *descendants(node)])


def _rendered(function: cst.FunctionDef, names: set[str]) -> bool:
    """The examples become text: joined, formatted into an f-string, added with `+`, or turned into messages."""
    for node in descendants(function):
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in ("join", "format", "extend") \
                and any(_reads(a.value, names) for a in node.args):
            return True
        if isinstance(node, (cst.FormattedStringExpression, cst.BinaryOperation, cst.ListComp, cst.GeneratorExp)) and _reads(node, names):
            return True
        if isinstance(node, cst.For) and _reads(node.iter, names):
            return True
    return False
