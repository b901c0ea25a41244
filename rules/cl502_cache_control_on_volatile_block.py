"""CL502 cache-control-on-volatile-block."""

from __future__ import annotations

import libcst as cst

from cachelint.rules.base import Invalid, Report, Rule


class CacheControlOnVolatileBlock(Rule):
    code = "CL502"
    what = """
Finds a `cache_control` breakpoint on a block of the cached prefix whose content changes every request (it
contains a time, a UUID, a counter, a random value), or, in a one-shot request whose messages are fixed text
(or repeat only arguments the cached block already holds: "analyze this code: {code}"), a cached system block
that holds the sending function's own arguments (all that differs between two calls is inside the cached block).
"""
    why = """
A breakpoint writes a cache entry for the prefix ending at its block. If that block changes every request,
every request writes a new entry and none is ever read: you pay the 1.25x write price each time and never
the 0.1x read price. Anthropic's docs call this the most common caching mistake.
"""
    example = """
system=[
    {"type": "text", "text": INSTRUCTIONS},
    {"type": "text", "text": f"Now: {datetime.now()}", "cache_control": {"type": "ephemeral"}},
]
"""
    instead = """
system=[
    {"type": "text", "text": INSTRUCTIONS, "cache_control": {"type": "ephemeral"}},
    {"type": "text", "text": f"Now: {datetime.now():%Y-%m-%d}"},
]
"""
    fix_safety = "none."

    VALID = [
        """
from anthropic import Anthropic
from datetime import datetime
client = Anthropic()
def ask(messages):
    return client.messages.create(model="claude-sonnet-4-5", max_tokens=10, system=[{"type": "text", "text": "Rules.", "cache_control": {"type": "ephemeral"}}], messages=messages)
""",
    ]
    INVALID = [
        Invalid("""
from anthropic import Anthropic
client = Anthropic()
def review(code, output):
    return client.messages.create(model="claude-sonnet-4-5", max_tokens=500,
        system=[{"type": "text", "text": f"Review this run.\\n{code}\\n{output}", "cache_control": {"type": "ephemeral"}}],
        messages=[{"role": "user", "content": f"Summarize the run of:\\n{code}"}])
""", line=6, message="only arguments"),
        Invalid("""
from anthropic import Anthropic
from datetime import datetime
client = Anthropic()
def ask(messages):
    return client.messages.create(model="claude-sonnet-4-5", max_tokens=10, messages=messages,
        system=[{"type": "text", "text": "Rules."}, {"type": "text", "text": f"Now: {datetime.now()}", "cache_control": {"type": "ephemeral"}}])
""", line=7),
    ]

    without_sites = True  # a message a serializer marks cacheable is built where no request is in sight

    def check(self, analysis):
        yield from _one_shot_with_arguments_cached(analysis)
        yield from _flagged_per_step_messages(analysis)
        for site, fact in analysis.facts({"volatile", "counter"}):
            if fact.landing.cache_block is None or not fact.severe:
                continue
            yield Report.at(site, fact.landing.cache_block, f"this {fact.landing.words} block of {analysis.describe_site(site)} carries a cache breakpoint "
                         f"but contains `{fact.label}`, which changes every request: each request writes a new entry and none is read")


def _flagged_per_step_messages(analysis):
    """A framework's message marked `cache=True` (its serializer writes the breakpoint) whose text holds the
    step counter: every step's message differs inside the cached block."""
    from cachelint.check.static_prefix import flagged_messages

    ctx = analysis.ctx
    for flagged in flagged_messages(ctx):
        row = ctx.span(flagged.counter).row
        yield Report(flagged.call, f"this message is marked cache=True, which the tree's serializer turns into a cache_control breakpoint, "
                     f"but its text holds `{ctx.code(flagged.counter)}` (line {row}), a step counter: the cached block differs every "
                     "step, so each step writes a cache entry that no later step reads; keep per-step state after the breakpoint "
                     "(or do not mark this message)", confidence="likely")


def _one_shot_with_arguments_cached(analysis):
    """A request whose messages are fixed text (no history, nothing of the call in them) and whose cached system
    block holds the sending function's own arguments: all that differs between two calls is inside the cached
    block, so each call writes an entry that no later call reads (or the calls are duplicates)."""
    from cachelint.check.breakpoints import static_text

    ctx = analysis.ctx
    reported: set[int] = set()
    found = list(analysis.facts({"param"}, args=("system",)))
    for site, fact in found:
        block = fact.landing.cache_block
        if block is None or id(block) in reported or site.api != "anthropic":
            continue
        messages = site.arg("messages")
        if not isinstance(messages, (cst.List, cst.Tuple)) or ctx.loops_around(site.node):
            continue  # a conversation: the cached block may well repeat
        cached = {f.label for s, f in found if s is site and f.landing.cache_block is block}
        fixed = static_text(ctx, messages) is not None
        if not fixed and not _only_parameters(ctx, messages, cached):
            continue  # other per-call data in the messages: calls that share the cached block may differ after it
        reported.add(id(block))
        messages_are = "the messages are fixed text" if fixed else "the messages hold only arguments the cached block holds too"
        yield Report.at(site, block, f"this system prompt block of {analysis.describe_site(site)} carries a cache breakpoint but contains "
                        f"`{fact.label}`, an argument of the call, while {messages_are}: every call differs only inside "
                        "the cached block, so each writes a new entry and none is read; put the per-call text after the breakpoint")


def _only_parameters(ctx, expr: cst.BaseExpression, allowed: set[str]) -> bool:
    """Whether the only run-time values in `expr` are parameters named in `allowed` (those the cached block
    holds too): then two calls that differ in the messages differ inside the cached block as well."""
    from cachelint.check.module import descendants

    for node in descendants(expr):
        if isinstance(node, (cst.Call, cst.Subscript, cst.Lambda, cst.ListComp, cst.GeneratorExp)):
            return False
        if not isinstance(node, cst.Name):
            continue
        parent = ctx.parent(node)
        if isinstance(parent, cst.Attribute) and parent.attr is node:
            continue
        bindings = [binding for binding, _ in ctx.assigned_values(node)]
        if not bindings or not all(isinstance(b, cst.Param) and b.name.value in allowed for b in bindings):
            return False
    return True
