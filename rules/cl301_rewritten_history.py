"""CL301 rewritten-history."""

from __future__ import annotations

import libcst as cst

from cachelint.rules.base import Invalid, Report, Rule


class RewrittenHistory(Rule):
    code = "CL301"
    what = """
Finds code that edits, deletes, re-orders or truncates earlier messages of a conversation that is sent to
an LLM turn after turn: `messages = messages[-N:]`, `del messages[0]`, `messages.pop(0)`,
`messages.insert(0, ...)`, `messages[i]["content"] = ...`, `messages.sort()` / `.reverse()` / `.remove()`.
"""
    why = """
The earlier messages are the cached prefix of the next turn. Changing or dropping one makes everything after
it be prefilled again; a sliding window that drops the oldest message every turn never reads the cache at
all.
"""
    example = """
messages = []
while True:
    messages.append({"role": "user", "content": input()})
    messages = messages[-20:]  # keep the last 20 turns
    reply = client.messages.create(model="claude-sonnet-4-5", max_tokens=1024, messages=messages)
"""
    instead = """
messages = []
while True:
    messages.append({"role": "user", "content": input()})
    if len(messages) > 200:  # compact rarely and in one large step, so the new prefix is reused many times
        messages = summarize(messages)
    reply = client.messages.create(model="claude-sonnet-4-5", max_tokens=1024, messages=messages)
"""
    fix_safety = "none."

    VALID = [
        """
from anthropic import Anthropic
client = Anthropic()
messages = []
while True:
    messages.append({"role": "user", "content": input()})
    reply = client.messages.create(model="claude-sonnet-4-5", max_tokens=10, messages=messages)
    messages.append({"role": "assistant", "content": reply.content})
""",
        # a one-shot request built fresh each time is not a conversation
        """
from openai import OpenAI
client = OpenAI()
def ask(q):
    messages = [{"role": "user", "content": q}]
    messages[0]["content"] = q.strip()
    return client.chat.completions.create(model="gpt-4o", messages=messages)
""",
    ]
    INVALID = [
        Invalid("""
from anthropic import Anthropic
client = Anthropic()
messages = []
while True:
    messages.append({"role": "user", "content": input()})
    messages = messages[-20:]
    reply = client.messages.create(model="claude-sonnet-4-5", max_tokens=10, messages=messages)
""", line=7, message="truncates"),
        Invalid("""
from openai import OpenAI
client = OpenAI()
def chat(messages):
    for _ in range(5):
        if len(messages) > 10:
            messages.pop(1)
        r = client.chat.completions.create(model="gpt-4o", messages=messages)
        messages.append(r.choices[0].message)
""", line=7),
        Invalid("""
from anthropic import Anthropic
class Agent:
    def __init__(self):
        self.client = Anthropic()
        self.history = []
    def step(self, text):
        self.history.append({"role": "user", "content": text})
        for m in self.history:
            m["content"] = m["content"].strip()
        return self.client.messages.create(model="claude-sonnet-4-5", max_tokens=10, messages=self.history)
""", line=10),
        Invalid("""
from anthropic import Anthropic
client = Anthropic()
def loop(messages, reminder):
    while True:
        messages.insert(0, {"role": "user", "content": reminder})
        client.messages.create(model="claude-sonnet-4-5", max_tokens=10, messages=messages)
""", line=6),
    ]

    def check(self, analysis):
        ctx = analysis.ctx
        for site in analysis.sites:
            history = site.arg("messages") or site.arg("input")
            if not isinstance(history, (cst.Name, cst.Attribute)):
                continue
            target = ctx.code(history)
            persistent = isinstance(history, cst.Attribute) and ctx.code(history.value) == "self"
            loops = ctx.loops_around(site.node)
            if not persistent and not loops:
                continue
            region = ctx.enclosing(site.node, (cst.ClassDef,)) if persistent else loops[-1]
            for node, what in _rewrites(ctx, region, target):
                yield Report(node, f"{what} the history `{target}` sent by {analysis.describe_site(site)} every turn; "
                             "earlier messages are the cached prefix: keep history append-only")


def _rewrites(ctx, region, target: str):
    """(node, description) for statements in `region` that rewrite the list named `target`."""
    nodes = _all(region)
    names = {target}
    changed = True
    while changed:  # for m in history[:-2]: for block in m["content"]: block[...] = ...
        changed = False
        for node in nodes:
            if isinstance(node, cst.For) and isinstance(node.target, cst.Name) and node.target.value not in names:
                if _root(ctx, node.iter) in names:
                    names.add(node.target.value)
                    changed = True
    for node in nodes:
        if isinstance(node, cst.Assign):
            for t in node.targets:
                tgt = t.target
                if ctx.code(tgt) == target and _has_late_slice(ctx, node.value, target):
                    yield node, "truncates"
                elif isinstance(tgt, cst.Subscript) and _root(ctx, tgt) in names and not _is_marker_or_newest(ctx, tgt, target):
                    yield node, "edits an earlier message of"
        elif isinstance(node, cst.Del):
            for t in _targets(node.target):
                if isinstance(t, cst.Subscript) and _root(ctx, t) in names and not _is_marker_or_newest(ctx, t, target):
                    yield node, "deletes messages from"
        elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and ctx.code(node.func.value) == target:
            method = node.func.attr.value
            if method == "pop" and node.args and ctx.code(node.args[0].value) not in ("-1",):
                yield node, "removes an earlier message from"
            elif method == "insert" and node.args and ctx.code(node.args[0].value) not in ("len(%s)" % target,):
                yield node, "inserts a message into the middle of"
            elif method in ("sort", "reverse", "remove", "clear"):
                yield node, {"sort": "re-orders", "reverse": "re-orders", "remove": "removes a message from", "clear": "clears"}[method]


def _has_late_slice(ctx, value, target: str) -> bool:
    """history[-20:] or [history[0]] + history[-20:] anywhere in the new value."""
    return any(isinstance(n, cst.Subscript) and ctx.code(n.value) == target and _slice_starts_late(n) for n in _all(value))


def _is_marker_or_newest(ctx, sub: cst.Subscript, target: str) -> bool:
    """Moving a cache_control marker is no rewrite; neither is editing the newest message (history[-1])."""
    keys = []
    node = sub
    while isinstance(node, cst.Subscript):
        index = node.slice[0].slice
        keys.append(ctx.code(index.value) if isinstance(index, cst.Index) else ":")
        node = node.value
    if any(k.strip("'\"") == "cache_control" for k in keys):
        return True
    return ctx.code(node) == target and keys and keys[-1] == "-1"


def _slice_starts_late(sub: cst.Subscript) -> bool:
    for element in sub.slice:
        index = element.slice
        if isinstance(index, cst.Slice) and index.lower is not None:
            return True
    return False


def _root(ctx, node) -> str:
    while isinstance(node, cst.Subscript):
        node = node.value
    return ctx.code(node)


def _targets(node):
    if isinstance(node, (cst.Tuple, cst.List)):
        return [e.value for e in node.elements]
    return [node]


def _all(root):
    found = []

    class Collect(cst.CSTVisitor):
        def on_visit(self, node):
            found.append(node)
            return True

    root.visit(Collect())
    return found
