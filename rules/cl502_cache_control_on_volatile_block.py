"""CL502 cache-control-on-volatile-block."""

from __future__ import annotations

from cachelint.rules.base import Invalid, Report, Rule


class CacheControlOnVolatileBlock(Rule):
    code = "CL502"
    what = """
Finds a `cache_control` breakpoint on a block of the cached prefix whose content changes every request (it
contains a time, a UUID, a counter, a random value).
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
from datetime import datetime
client = Anthropic()
def ask(messages):
    return client.messages.create(model="claude-sonnet-4-5", max_tokens=10, messages=messages,
        system=[{"type": "text", "text": "Rules."}, {"type": "text", "text": f"Now: {datetime.now()}", "cache_control": {"type": "ephemeral"}}])
""", line=7),
    ]

    def check(self, analysis):
        for site, fact in analysis.facts({"volatile", "counter"}):
            if fact.landing.cache_block is None or not fact.severe:
                continue
            yield Report.at(site, fact.landing.cache_block, f"this {fact.landing.words} block of {analysis.describe_site(site)} carries a cache breakpoint "
                         f"but contains `{fact.label}`, which changes every request: each request writes a new entry and none is read")
