"""CL202 per-request-tool-list."""

from __future__ import annotations

from cachelint.rules.base import Invalid, Report, Rule


class PerRequestToolList(Rule):
    code = "CL202"
    what = """
Finds a `tools=` list that is filtered or chosen per request: a comprehension with a condition, a list
extended under an `if`, or a choice between lists, computed where the request is made.
"""
    why = """
Tools are the start of the prefix. Adding, removing or swapping one tool between turns invalidates
everything: tools, system prompt and the whole conversation are prefilled again.
"""
    example = """
def step(messages, allowed: set[str]):
    tools = [t for t in ALL_TOOLS if t["name"] in allowed]
    return client.messages.create(model="claude-sonnet-4-5", max_tokens=1024, tools=tools, messages=messages)
"""
    instead = """
def step(messages, allowed: set[str]):
    # keep one tool list for the conversation; restrict what the model may call per turn instead
    return client.messages.create(model="claude-sonnet-4-5", max_tokens=1024, tools=ALL_TOOLS,
                                  tool_choice={"type": "auto"}, messages=messages)
"""
    fix_safety = "none."

    VALID = [
        """
from anthropic import Anthropic
client = Anthropic()
ALL_TOOLS = [{"name": "a"}, {"name": "b"}]
def step(messages):
    return client.messages.create(model="claude-sonnet-4-5", max_tokens=10, tools=ALL_TOOLS, messages=messages)
""",
    ]
    INVALID = [
        Invalid("""
from anthropic import Anthropic
client = Anthropic()
ALL_TOOLS = [{"name": "a"}, {"name": "b"}]
def step(messages, allowed):
    tools = [t for t in ALL_TOOLS if t["name"] in allowed]
    return client.messages.create(model="claude-sonnet-4-5", max_tokens=10, tools=tools, messages=messages)
""", line=6),
        Invalid("""
from openai import OpenAI
client = OpenAI()
BASE = [{"type": "function", "function": {"name": "search"}}]
def step(messages, user):
    tools = list(BASE)
    if user.is_admin:
        tools.append({"type": "function", "function": {"name": "delete_user"}})
    return client.chat.completions.create(model="gpt-4.1", tools=tools, messages=messages)
""", line=8),
    ]

    def check(self, analysis):
        for site, fact in analysis.facts({"filtered"}, args=("tools",)):
            yield Report.at(site, fact.node, f"the tools of {analysis.describe_site(site)} are chosen per request ({fact.label}{fact.origin}); "
                         "keep one tool list per conversation and restrict tools per turn with tool_choice instead")
