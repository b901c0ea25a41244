"""CL503 too-many-cache-breakpoints."""

from __future__ import annotations

import libcst as cst

from cachelint.check.module import LIST_GROWERS, descendants

from cachelint.check.breakpoints import markers
from cachelint.check.values import string_value
from cachelint.rules.base import Invalid, Report, Rule

LIMIT = 4


class TooManyCacheBreakpoints(Rule):
    code = "CL503"
    what = """
Finds Anthropic requests with more than 4 `cache_control` breakpoints (counting a top-level `cache_control`),
and code that adds a breakpoint to a message on every turn of a loop without removing the old ones, so the
markers pile up in the history. A breakpoint set on a deep copy made afresh on each turn (`messages =
copy.deepcopy(self.history)` inside the loop) leaves the kept history unmarked and is not reported.
"""
    why = """
The API allows at most 4 breakpoints per request and rejects the request with a 400 error ("A maximum of 4
blocks with cache_control may be provided") otherwise. Markers that accumulate in history hit that limit a
few turns into the conversation.
"""
    example = """
for turn in range(100):
    messages[-1]["content"][-1]["cache_control"] = {"type": "ephemeral"}
    reply = client.messages.create(model="claude-sonnet-4-5", max_tokens=1024, messages=messages)
"""
    instead = """
for turn in range(100):
    for m in messages:  # move the breakpoint: remove the old markers first
        for block in m["content"]:
            block.pop("cache_control", None)
    messages[-1]["content"][-1]["cache_control"] = {"type": "ephemeral"}
    reply = client.messages.create(model="claude-sonnet-4-5", max_tokens=1024, messages=messages)
"""
    fix_safety = "none."

    VALID = [
        """
from anthropic import Anthropic
client = Anthropic()
def run(messages):
    for _ in range(9):
        for m in messages:
            for b in m["content"]:
                b.pop("cache_control", None)
        messages[-1]["content"][-1]["cache_control"] = {"type": "ephemeral"}
        client.messages.create(model="claude-sonnet-4-5", max_tokens=10, messages=messages)
""",
        # each turn marks a fresh deep copy of the kept history: the markers go with the copy
        """
import copy
from anthropic import Anthropic
client = Anthropic()
class Agent:
    def run(self, steps):
        for _ in range(steps):
            messages = copy.deepcopy(self.history)
            messages[-1]["content"][-1]["cache_control"] = {"type": "ephemeral"}
            reply = client.messages.create(model="claude-sonnet-4-5", max_tokens=10, messages=messages)
            self.history.append({"role": "assistant", "content": reply.content})
""",
    ]
    INVALID = [
        Invalid("""
from anthropic import Anthropic
client = Anthropic()
E = {"type": "ephemeral"}
def ask(q):
    return client.messages.create(model="claude-sonnet-4-5", max_tokens=10, cache_control=E,
        tools=[{"name": "a", "input_schema": {}, "cache_control": E}],
        system=[{"type": "text", "text": "A", "cache_control": E}, {"type": "text", "text": "B", "cache_control": E}],
        messages=[{"role": "user", "content": [{"type": "text", "text": q, "cache_control": E}]}])
""", line=6, message="5 cache breakpoints"),
        Invalid("""
from anthropic import Anthropic
client = Anthropic()
def run(messages):
    while True:
        messages[-1]["content"][-1]["cache_control"] = {"type": "ephemeral"}
        client.messages.create(model="claude-sonnet-4-5", max_tokens=10, messages=messages)
""", line=6, message="accumulate"),
        # a shallow copy shares the message dicts: the marker lands in the kept history
        Invalid("""
from anthropic import Anthropic
client = Anthropic()
class Agent:
    def run(self, steps):
        for _ in range(steps):
            messages = list(self.history)
            messages[-1]["content"][-1]["cache_control"] = {"type": "ephemeral"}
            reply = client.messages.create(model="claude-sonnet-4-5", max_tokens=10, messages=messages)
            self.history.append({"role": "assistant", "content": reply.content})
""", line=8, message="accumulate"),
    ]

    def check(self, analysis):
        ctx = analysis.ctx
        for site in analysis.sites:
            if site.api != "anthropic":
                continue
            count = len(markers(ctx, site)) + (1 if "cache_control" in site.args else 0)
            if count > LIMIT:
                yield Report.at(site, site.node, f"{analysis.describe_site(site)} sends {count} cache breakpoints; the API accepts at most {LIMIT} and rejects the request")
            loops = ctx.loops_around(site.node)
            if not loops or _removes_markers(ctx, loops[-1]):
                continue
            for node in descendants(loops[-1]):
                if _adds_marker(ctx, node, loops[-1]):
                    yield Report.at(site, node, f"a cache breakpoint is added to a message on every turn of the loop around {analysis.describe_site(site)} and never removed: "
                                 f"the markers accumulate in the history and the API rejects the request past {LIMIT}")


def _adds_marker(ctx, node, loop) -> bool:
    """x[...]["cache_control"] = ... on a block that moves from turn to turn, or history.append({... "cache_control": ...}).

    Setting the key again on the same block each turn (`system[0]["cache_control"] = ...`, constant
    indices from a name bound outside the loop) adds no breakpoint: it is the same marker."""
    if isinstance(node, cst.Assign):
        return any(_marker_subscript(t.target) and _moving_block(ctx, t.target.value, loop) and not _fresh_deep_copy(ctx, t.target, loop)
                   for t in node.targets)
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in LIST_GROWERS:
        return any(isinstance(n, cst.DictElement) and string_value(n.key) == "cache_control" for a in node.args for n in descendants(a.value)) \
            and not _made_in_the_pass(ctx, node.func.value, loop)
    return False


def _made_in_the_pass(ctx, receiver, loop) -> bool:
    """`messages = []` (or a list literal) inside the loop, also in a closure its pass runs: each pass appends to a
    new list, so markers never pile up in one request."""
    if not isinstance(receiver, cst.Name):
        return False
    bindings = list(ctx.assigned_values(receiver))
    return bool(bindings) and all(ctx.contains(loop, binding) and isinstance(value, cst.List) for binding, value in bindings)


def _fresh_deep_copy(ctx, target, loop) -> bool:
    """`messages[-1]["content"][-1]["cache_control"] = ...` where `messages` is bound only to a deep copy made inside
    the loop (`copy.deepcopy(self.history)`, `json.loads(json.dumps(...))`): each turn marks a new copy, and the kept
    history never holds a marker. A shallow copy (`list(history)`, `history[:]`) shares the message dicts."""
    while isinstance(target, cst.Subscript):
        target = target.value
    if not isinstance(target, cst.Name):
        return False
    bindings = list(ctx.assigned_values(target))
    return bool(bindings) and all(ctx.contains(loop, binding) and _deep_copy(ctx, value) for binding, value in bindings)


def _deep_copy(ctx, value) -> bool:
    if not isinstance(value, cst.Call) or not value.args:
        return False
    if ctx.qualified_name_in(value.func, {"copy.deepcopy"}):
        return True
    inner = value.args[0].value  # json.loads(json.dumps(history))
    return bool(ctx.qualified_name_in(value.func, {"json.loads"}) and isinstance(inner, cst.Call) and ctx.qualified_name_in(inner.func, {"json.dumps"}))


def _removes_markers(ctx, region) -> bool:
    for node in descendants(region):
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "pop" and node.args:
            if string_value(node.args[0].value) == "cache_control":
                return True
        if isinstance(node, cst.Del) and _marker_subscript(node.target):
            return True
    return False


def _marker_subscript(target) -> bool:
    return isinstance(target, cst.Subscript) and isinstance(target.slice[0].slice, cst.Index) and string_value(target.slice[0].slice.value) == "cache_control"


def _moving_block(ctx, target, loop) -> bool:
    """Whether `messages[-1]["content"][-1]` may be another block on the next turn: an index that is not a
    non-negative constant, or a root name bound inside the loop (`last = messages[-1]`)."""
    while isinstance(target, cst.Subscript):
        for element in target.slice:
            index = element.slice
            if not isinstance(index, cst.Index):
                return True
            if not (isinstance(index.value, cst.Integer) or string_value(index.value) is not None):
                return True  # -1, i, len(x) - 1: a position that moves
        target = target.value
    if isinstance(target, cst.Name):
        return any(ctx.contains(loop, binding) for binding, _ in ctx.assigned_values(target))
    return True
