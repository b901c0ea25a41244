"""CL505 ttl-order."""

from __future__ import annotations

from cachelint.check.breakpoints import markers
from cachelint.rules.base import Invalid, Report, Rule


class TtlOrder(Rule):
    code = "CL505"
    what = """
Finds an Anthropic request where a breakpoint with `"ttl": "1h"` comes after one with the default or
`"ttl": "5m"` in prefix order (tools, then system, then messages).
"""
    why = """
Longer-lived entries must come first: the API rejects the request with a 400 error ("A ttl='1h'
cache_control block must not come after a ttl='5m' cache_control block").
"""
    example = """
system=[
    {"type": "text", "text": RULES, "cache_control": {"type": "ephemeral"}},
    {"type": "text", "text": HANDBOOK, "cache_control": {"type": "ephemeral", "ttl": "1h"}},
]
"""
    instead = """
system=[
    {"type": "text", "text": RULES, "cache_control": {"type": "ephemeral", "ttl": "1h"}},
    {"type": "text", "text": HANDBOOK, "cache_control": {"type": "ephemeral", "ttl": "1h"}},
]
"""
    fix_safety = "none."

    VALID = [
        """
from anthropic import Anthropic
client = Anthropic()
def ask(messages):
    return client.messages.create(model="claude-sonnet-4-5", max_tokens=10, messages=messages, system=[
        {"type": "text", "text": "A", "cache_control": {"type": "ephemeral", "ttl": "1h"}},
        {"type": "text", "text": "B", "cache_control": {"type": "ephemeral"}}])
""",
    ]
    INVALID = [
        Invalid("""
from anthropic import Anthropic
client = Anthropic()
def ask(messages):
    return client.messages.create(model="claude-sonnet-4-5", max_tokens=10, messages=messages, system=[
        {"type": "text", "text": "A", "cache_control": {"type": "ephemeral"}},
        {"type": "text", "text": "B", "cache_control": {"type": "ephemeral", "ttl": "1h"}}])
""", line=7),
    ]

    def check(self, analysis):
        for site in analysis.sites:
            if site.api != "anthropic":
                continue
            seen_short = None
            for marker in markers(analysis.ctx, site):
                if marker.ttl == "1h" and seen_short is not None:
                    yield Report.at(site, marker.value, f"a 1h breakpoint comes after a 5m one (line {analysis.ctx.span(seen_short.node).row}) in "
                                 f"{analysis.describe_site(site)}; the API rejects it: put 1h breakpoints first")
                    break
                if marker.ttl in (None, "5m"):
                    seen_short = marker
