"""CL401 param-change-mid-conversation."""

from __future__ import annotations

import libcst as cst

from cachelint.rules.base import Invalid, Report, Rule

PARAMS = ("model", "tool_choice", "thinking", "extra_headers", "betas", "reasoning_effort", "reasoning")


class ParamChangeMidConversation(Rule):
    code = "CL401"
    what = """
Finds `model`, `tool_choice`, `thinking`, beta headers or reasoning effort chosen anew on each turn of a
conversation loop: assigned inside the loop, or picked with a conditional expression there.
"""
    why = """
Caches are per model, and these parameters are part of the cache key (Anthropic renders `tool_choice` and
thinking settings into the prompt; the set of beta headers and OpenAI's reasoning effort change it too).
Switching them mid-conversation makes the next request prefill the conversation again.
"""
    example = """
for turn in range(20):
    model = "claude-haiku-4-5" if turn % 2 else "claude-sonnet-4-5"
    reply = client.messages.create(model=model, max_tokens=1024, messages=messages)
"""
    instead = """
model = "claude-sonnet-4-5"  # one model per conversation; send side tasks as their own conversations
for turn in range(20):
    reply = client.messages.create(model=model, max_tokens=1024, messages=messages)
"""
    fix_safety = "none."

    VALID = [
        """
from anthropic import Anthropic
client = Anthropic()
messages = []
model = "claude-sonnet-4-5"
for turn in range(3):
    client.messages.create(model=model, max_tokens=10, messages=messages)
""",
    ]
    INVALID = [
        Invalid("""
from anthropic import Anthropic
client = Anthropic()
messages = []
for turn in range(3):
    model = "claude-haiku-4-5" if turn % 2 else "claude-sonnet-4-5"
    client.messages.create(model=model, max_tokens=10, messages=messages)
""", line=6, message="model"),
        Invalid("""
from anthropic import Anthropic
client = Anthropic()
def agent(messages):
    while True:
        r = client.messages.create(model="claude-sonnet-4-5", max_tokens=10, messages=messages,
                                   tool_choice={"type": "any"} if len(messages) < 3 else {"type": "auto"})
        messages.append({"role": "assistant", "content": r.content})
""", line=7, message="tool_choice"),
    ]

    def check(self, analysis):
        ctx = analysis.ctx
        for site in analysis.sites:
            loops = ctx.loops_around(site.node)
            if not loops:
                continue
            for name in PARAMS:
                expr = site.arg(name)
                if expr is None:
                    continue
                if isinstance(expr, cst.IfExp):
                    yield Report(expr, f"`{name}` of {analysis.describe_site(site)} is chosen per turn inside the conversation loop; it is part of the cache key")
                elif isinstance(expr, cst.Name):
                    for binding, value in ctx.assigned_values(expr):
                        if value is None or isinstance(value, (cst.SimpleString, cst.Integer)) and len(list(ctx.assigned_values(expr))) == 1:
                            continue
                        if ctx.contains(loops[-1], binding):
                            yield Report(ctx.statement_of(binding), f"`{name}` of {analysis.describe_site(site)} is assigned inside the conversation loop, so it can change between turns; it is part of the cache key")
                            break
