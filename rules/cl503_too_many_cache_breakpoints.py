"""CL503 too-many-cache-breakpoints."""

from __future__ import annotations

import libcst as cst

from cachelint.check.breakpoints import markers
from cachelint.check.values import string_value
from cachelint.rules.base import Invalid, Report, Rule

LIMIT = 4


class TooManyCacheBreakpoints(Rule):
    code = "CL503"
    what = """
Finds Anthropic requests with more than 4 `cache_control` breakpoints (counting a top-level `cache_control`),
and code that adds a breakpoint to a message on every turn of a loop without removing the old ones, so the
markers pile up in the history.
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
    ]

    def check(self, analysis):
        ctx = analysis.ctx
        removes = any(
            isinstance(c.func, cst.Attribute) and c.func.attr.value == "pop" and c.args and string_value(c.args[0].value) == "cache_control"
            for c in ctx.nodes(cst.Call)
        ) or any(string_value(s.slice[0].slice.value) == "cache_control" for d in ctx.nodes(cst.Del) for s in [d.target] if isinstance(s, cst.Subscript) and isinstance(s.slice[0].slice, cst.Index))
        for site in analysis.sites:
            if site.api != "anthropic":
                continue
            count = len(markers(ctx, site)) + (1 if "cache_control" in site.args else 0)
            if count > LIMIT:
                yield Report(site.node, f"{analysis.describe_site(site)} sends {count} cache breakpoints; the API accepts at most {LIMIT} and rejects the request")
            loops = ctx.loops_around(site.node)
            if not loops or removes:
                continue
            for assign in ctx.nodes(cst.Assign):
                for target in assign.targets:
                    t = target.target
                    if isinstance(t, cst.Subscript) and isinstance(t.slice[0].slice, cst.Index) and string_value(t.slice[0].slice.value) == "cache_control" and ctx.contains(loops[-1], assign):
                        yield Report(assign, f"a cache breakpoint is added to a message on every turn of the loop around {analysis.describe_site(site)} and never removed: "
                                     f"the markers accumulate in the history and the API rejects the request past {LIMIT}")
