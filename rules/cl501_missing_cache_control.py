"""CL501 missing-cache-control."""

from __future__ import annotations

from cachelint.check.analysis import anthropic_minimum
from cachelint.check.breakpoints import leading_static_text, markers, static_text
from cachelint.rules.base import Invalid, Report, Rule
from cachelint.tokens import counter_for

LONG = "You are the assistant of Acme Corp. " + "Follow the support handbook, cite its sections, and never promise refunds. " * 110


class MissingCacheControl(Rule):
    code = "CL501"
    what = """
Finds an Anthropic request whose static prefix (tools and system prompt written as constants in the code)
is at least the model's minimum cacheable length, sent with no `cache_control` anywhere: no breakpoint on a
block and no top-level `cache_control`. Where the system prompt is a constant followed by per-request parts
(`HANDBOOK + files`, or a function of the module that returns it), the static tools and the constant start
count ("at least N tokens").
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
def system_prompt(files):
    return HANDBOOK + "\\n".join(files)
def ask(messages, files):
    return client.messages.create(model="claude-sonnet-4-5", max_tokens=10, system=system_prompt(files), messages=messages)
""", line=8, message="at least"),
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
            if not texts:
                continue
            exact = not any(t is None for t in texts)
            if not exact:
                texts = _static_prefix(ctx, site)  # the tools and the start of the system prompt that never change
            model = analysis.model_of(site)
            text = " ".join(t for t in texts if t)
            minimum = anthropic_minimum(model)
            if len(text.encode("utf-8", "surrogatepass")) < minimum:
                continue  # fewer bytes than the minimum is fewer tokens: no tokenizer needed to know it
            tokens = counter_for("anthropic", model).count(text)
            if tokens >= minimum:
                how = "about" if exact else "at least"
                yield Report.at(site, site.node, f"{how} {tokens:,} tokens of static tools and system prompt are sent with no cache_control "
                             f"(the minimum for {model or 'the model'} is {minimum:,}): nothing is cached; add a breakpoint "
                             "on the last static block or a top-level cache_control")


def _static_prefix(ctx, site) -> list[str]:
    """The static tools (all or nothing: the tools come first) and the text the system prompt always starts with
    (a constant followed by per-request parts, `BASE_PROMPT + files`, or a function of this module returning it)."""
    tools = site.arg("tools")
    texts: list[str] = []
    if tools is not None:
        text = static_text(ctx, tools)
        if text is None:
            return []  # tools built at run time: nothing after them is known to repeat
        texts.append(text)
    system = site.arg("system")
    if system is not None:
        texts.append(leading_static_text(ctx, system)[0])
    return texts
