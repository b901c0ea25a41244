"""CL402 params-differ-between-requests."""

from __future__ import annotations

from cachelint.rules.base import Invalid, Report, Rule


class ParamsDifferBetweenRequests(Rule):
    code = "CL402"
    what = """
Finds two requests of one conversation sent with different cache-keying parameters: two call sites that send
the same history (the same name, with the same binding, in one function; or the same `self` attribute in one
class) with another `model`, or (Anthropic) another `tool_choice`, `thinking` or beta header set, or (OpenAI)
another reasoning effort, `prompt_cache_key`, or output schema: `response_format` (Chat Completions) or `text`
(Responses), where a class named in CapWords counts as a fixed schema (`response_format=AgentDecision` in a loop,
then `response_format=response_schema` on the same history: `likely`). Also, wherever the request is sent from (confidence `likely`): an LLM chosen per call from a factory
(`llm = self.get_llm(AGENT_NAME)`) while the same conversation object is passed to each (`await llm(convo)`),
in one function, or in a method that continues a conversation its caller sent with another LLM. A fallback to
another model inside an `except` block is not reported, nor call sites in exclusive branches of one `if`.
"""
    why = """
A model's cache holds only the prefixes sent to that model, Anthropic renders `tool_choice` and thinking
into the prompt, and OpenAI puts the structured output schema before the system message. The request that sends the history with another model or setting prefills the whole
history again, and so does every later turn on that other model.
"""
    example = """
plan = client.messages.create(model="claude-opus-4-1", max_tokens=1024, messages=history)
history.append({"role": "assistant", "content": plan.content})
history.append({"role": "user", "content": "Now write the code."})
code = client.messages.create(model="claude-sonnet-4-5", max_tokens=4096, messages=history)  # another model's cache
"""
    instead = """
MODEL = "claude-sonnet-4-5"  # one model for the conversation
plan = client.messages.create(model=MODEL, max_tokens=1024, messages=history)
history.append({"role": "assistant", "content": plan.content})
history.append({"role": "user", "content": "Now write the code."})
code = client.messages.create(model=MODEL, max_tokens=4096, messages=history)
# or give the side task its own short conversation (a summary of the plan), not the whole history
"""
    fix_safety = "none."

    VALID = [
        """
from anthropic import Anthropic
client = Anthropic()
MODEL = "claude-sonnet-4-5"
def run(history):
    plan = client.messages.create(model=MODEL, max_tokens=10, messages=history)
    history.append({"role": "assistant", "content": plan.content})
    return client.messages.create(model=MODEL, max_tokens=10, messages=history)
""",
        # a fallback to another model when the first one fails
        """
from openai import OpenAI
client = OpenAI()
def ask(messages):
    try:
        return client.chat.completions.create(model="gpt-4.1", messages=messages)
    except TimeoutError:
        return client.chat.completions.create(model="gpt-4.1-mini", messages=messages)
""",
        # one LLM per conversation, chosen once
        """
class Reviewer:
    async def review(self, convo):
        llm = self.get_llm("reviewer")
        first = await llm(convo)
        convo.user("And the tests?")
        return await llm(convo)
""",
    ]
    INVALID = [
        Invalid("""
from anthropic import Anthropic
client = Anthropic()
def run(history):
    plan = client.messages.create(model="claude-opus-4-1", max_tokens=10, messages=history)
    history.append({"role": "assistant", "content": plan.content})
    history.append({"role": "user", "content": "Now write the code."})
    return client.messages.create(model="claude-sonnet-4-5", max_tokens=10, messages=history)
""", line=8, message="claude-sonnet-4-5"),
        Invalid("""
class Debugger:
    async def pair(self, convo):
        llm = self.get_llm()
        await llm(convo)
        while True:
            convo.user(await self.ask())
            llm = self.get_llm(LOG_AGENT_NAME)
            await llm(convo)
""", line=8, message="LOG_AGENT_NAME"),
        Invalid("""
class Planner:
    async def find_solution(self, feedback):
        llm = self.get_llm(BUG_REPORT_AGENT)
        convo = Convo(self).template("iteration", feedback=feedback)
        solution = await llm(convo)
        return await self.chat(convo, solution)

    async def chat(self, convo, solution):
        llm = self.get_llm(BREAKDOWN_AGENT)
        while True:
            convo.user(await self.ask())
            solution = await llm(convo)
""", line=10, message="find_solution"),
    ]

    without_sites = True

    def check(self, analysis):
        from cachelint.check.conversation import differing_requests, factory_switches

        for difference in differing_requests(analysis.ctx, analysis.sites):
            if difference.param == "tools" or not analysis.cacheable(difference.second):
                continue
            yield Report(difference.node, f"{analysis.describe_site(difference.second)} sends the history `{difference.history}` "
                         f"{difference.how}; `{difference.param}` is part of the cache key, so this request reads nothing "
                         "the other one cached (keep one value per conversation; give a side task its own short conversation)",
                         confidence=difference.confidence)
        for switch in factory_switches(analysis.ctx):
            yield Report(switch.node, f"the conversation `{switch.convo}` is sent here with the LLM chosen by "
                         f"{_describe(switch.selector)} but {switch.where} with the one chosen by {_describe(switch.other)}: "
                         "if they are different models, each request prefills the whole conversation again on a model "
                         "that has not cached it (keep one LLM per conversation)", confidence="likely")


def _describe(selector: str) -> str:
    return f"`{selector}`" if selector else "the agent's default"
