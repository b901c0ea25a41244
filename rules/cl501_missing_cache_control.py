"""CL501 missing-cache-control."""

from __future__ import annotations

from cachelint.check.analysis import anthropic_minimum
from cachelint.check.breakpoints import markers, static_text
from cachelint.rules.base import Invalid, Report, Rule
from cachelint.tokens import counter_for

LONG = "You are the assistant of Acme Corp. " + "Follow the support handbook, cite its sections, and never promise refunds. " * 110


class MissingCacheControl(Rule):
    code = "CL501"
    what = """
Finds an Anthropic request whose static prefix (tools and system prompt written as constants in the code)
is at least the model's minimum cacheable length, sent with no `cache_control` anywhere: no breakpoint on a
block and no top-level `cache_control`.
"""
    why = """
Anthropic caches only at breakpoints. Without one, the same long instructions are prefilled and billed in
full on every request, where a cache read would cost a tenth.
"""
    example = """
client.messages.create(model="claude-sonnet-4-5", max_tokens=1024, system=LONG_HANDBOOK, messages=messages)
"""
    instead = """
client.messages.create(model="claude-sonnet-4-5", max_tokens=1024,
                       system=[{"type": "text", "text": LONG_HANDBOOK, "cache_control": {"type": "ephemeral"}}],
                       messages=messages)
# or let the API place the breakpoint: client.messages.create(..., cache_control={"type": "ephemeral"})
"""
    fix_safety = "none (where to cache is a design choice)."
    options = "`model`: the default model for minimum lengths when `model=` is not a literal."

    VALID = [
        f"""
from anthropic import Anthropic
client = Anthropic()
HANDBOOK = {LONG!r}
def ask(messages):
    return client.messages.create(model="claude-sonnet-4-5", max_tokens=10, system=[{{"type": "text", "text": HANDBOOK, "cache_control": {{"type": "ephemeral"}}}}], messages=messages)
""",
        """
from anthropic import Anthropic
client = Anthropic()
def ask(messages):
    return client.messages.create(model="claude-sonnet-4-5", max_tokens=10, system="Be brief.", messages=messages)
""",
    ]
    INVALID = [
        Invalid(f"""
from anthropic import Anthropic
client = Anthropic()
HANDBOOK = {LONG!r}
def ask(messages):
    return client.messages.create(model="claude-sonnet-4-5", max_tokens=10, system=HANDBOOK, messages=messages)
""", line=6, message="tokens"),
    ]

    def check(self, analysis):
        ctx = analysis.ctx
        for site in analysis.sites:
            if site.api != "anthropic" or "cache_control" in site.args or markers(ctx, site):
                continue
            texts = [static_text(ctx, site.arg(arg)) for arg in ("tools", "system") if site.arg(arg) is not None]
            if not texts or any(t is None for t in texts):
                continue
            model = analysis.model_of(site)
            tokens = counter_for("anthropic", model).count(" ".join(texts))  # type: ignore[arg-type]
            minimum = anthropic_minimum(model)
            if tokens >= minimum:
                yield Report.at(site, site.node, f"about {tokens:,} tokens of static tools and system prompt are sent with no cache_control "
                             f"(the minimum for {model or 'the model'} is {minimum:,}): nothing is cached; add a breakpoint "
                             "on the last static block or a top-level cache_control")
