"""CL504 cache-breakpoint-below-minimum."""

from __future__ import annotations

from cachelint.check.analysis import anthropic_minimum
from cachelint.check.breakpoints import literal, markers, static_text
from cachelint.rules.base import Invalid, Report, Rule
from cachelint.tokens import counter_for


class CacheBreakpointBelowMinimum(Rule):
    code = "CL504"
    what = """
Finds an Anthropic breakpoint on a block of the tools or system prompt whose whole prefix (everything up to
and including that block) is static in the code and shorter than the model's minimum cacheable length.
"""
    why = """
Below the minimum the request succeeds but nothing is cached, and the API says nothing: both
`cache_creation_input_tokens` and `cache_read_input_tokens` stay 0. The breakpoint gives a false sense of
caching (and uses one of the 4 slots).
"""
    example = """
client.messages.create(model="claude-haiku-4-5", max_tokens=1024, messages=messages,
                       system=[{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}])
"""
    instead = """
# cache a prefix that is long enough (4,096 tokens on Haiku 4.5), or drop the breakpoint
"""
    fix_safety = "none."
    options = "`model`: the default model for minimum lengths when `model=` is not a literal."

    VALID = [
        """
from anthropic import Anthropic
client = Anthropic()
def ask(messages, handbook):
    return client.messages.create(model="claude-sonnet-4-5", max_tokens=10, messages=messages,
        system=[{"type": "text", "text": handbook, "cache_control": {"type": "ephemeral"}}])
""",
    ]
    INVALID = [
        Invalid("""
from anthropic import Anthropic
client = Anthropic()
def ask(messages):
    return client.messages.create(model="claude-haiku-4-5", max_tokens=10, messages=messages,
        system=[{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}])
""", line=6, message="4,096"),
    ]

    def check(self, analysis):
        ctx = analysis.ctx
        for site in analysis.sites:
            if site.api != "anthropic":
                continue
            model = analysis.model_of(site)
            minimum = anthropic_minimum(model)
            counter = counter_for("anthropic", model)
            for marker in markers(ctx, site):
                if marker.arg == "messages":
                    break
                text = _prefix_text(ctx, site, marker)
                if text is None:
                    break
                tokens = counter.count(text)
                if tokens < minimum:
                    yield Report.at(site, marker.node, f"the prefix up to this breakpoint is about {tokens:,} tokens, below the {minimum:,}-token "
                                 f"minimum of {model or 'the model'}: the breakpoint silently caches nothing")


def _prefix_text(ctx, site, marker) -> str | None:
    """Static text of tools (and system, for a system block) up to and including the marked block."""
    parts = []
    for arg in ("tools", "system"):
        expr = literal(ctx, site.arg(arg))
        if expr is None:
            continue
        elements = [literal(ctx, e.value) for e in expr.elements] if hasattr(expr, "elements") and not hasattr(expr, "keys") else [expr]
        for element in elements:
            text = static_text(ctx, element)
            if text is None:
                return None
            parts.append(text)
            if element is marker.node:
                return " ".join(parts)
        if arg == marker.arg:
            break
    return " ".join(parts)
