"""CL203 tools-differ-between-requests."""

from __future__ import annotations

import libcst as cst

from cachelint.rules.base import Invalid, Report, Rule


class ToolsDifferBetweenRequests(Rule):
    code = "CL203"
    what = """
Finds two requests of one conversation that send different tools: two call sites that send the same history
(the same name, with the same binding, in one function; or the same `self` attribute in one class), one with
`tools=` and the other without, or with two different constant tool lists. The usual shape is a follow-up
request after the tool results, sent without `tools`. A call of the module's own function that sends the
history it is handed with no tools (`return self._chat(history, conf)` once a tool loop runs out of rounds) counts
as a request of the calling function. A history rebuilt from itself (`history = self._append(history, results)`)
is the same conversation, and so is one returned with a flag (`history, done = self._step(history)`). Two calls of
the app's own LLM wrapper in one function with the same history, one with `tools=` (`self.llm.gen(messages=messages,
tools=None)` after the tool loop), are requests too (`likely`), also in a module that imports no SDK where they are
methods of an object named for a client (`client.chat(...)`, `self.llm.gen(...)`; a bare function, `chat(...)`, is a
request there only by `call-patterns`). A name that is only ever a copy of a `self` attribute
(`messages = copy.deepcopy(self.history)`, `list(self.history)`, `self.history + [q]`) sends that attribute's
conversation. Call sites in exclusive branches of one `if` (a configuration switch) are not paired. A request written
above the loop's request with the tools, under a test of the loop's step count (`while True: if rounds >= MAX:
return create(messages=messages)`), is sent after it once the loop goes round, and is paired with it.

Also (`likely`), where the request is sent by the app's own agent code: tools taken off the request object after a
step-limited loop before one more step (`self.req.func_tool = None`, then `await self.step()` to force an answer),
an agent's tools emptied between two runs of the same agent object, which keeps its memory (`agent.run(...)`, then
`agent.tools = []` and `agent.run(...)`; not when the agent is made anew in between), and a retry or finalization
request built with `tools=None` from the conversation a function (or the function around a closure handed to a
retry) is handed, beside calls of the same builder with tools.

Also (`likely`) tools taken off the last pass of the loop that sends them (`tools = None if i == max_steps else
tools`, `if i == max_steps: tools = None`, through a flag, `last = step == MAX_STEPS - 1`, or in the request itself,
`tools=TOOLS if step < MAX_STEPS - 1 else None`), a final step after a step-limited `for` loop's `else:` that resets them on
the request settings (`self._reset_function_choice_settings(settings)`), and tools emptied or narrowed to a few once
a step count reaches its limit while the other branch keeps them all (`if turn == self.max_turns - 1: tools = [t for
t in tools if t["name"] == "submit"]`). A token count (`litellm.token_counter(messages=..., tools=...)`) is not a
request.

Also (`likely`) tools put into a request only under a test of the last message's role (`if messages[-1]["role"]
== "user": params["tools"] = TOOLS`, or `tools=TOOLS if history[-1].role == "user" else None`): the request that
follows the tool results goes out without them.

Also (`likely`) the tools set to nothing before the loop that sends them goes round for the next request
(`current_tools = None; continue` once the model answered with tool calls only, so the spoken reply goes without
them), a request's tools switch turned off once the loop's step count passes its limit (`enable_tools=enable_tools and
loops <= self.max_loops`), and a function that sends the conversation, called with its tools switch off
(`self._start_generating(allow_tool_use=False)`, `process_message(..., enable_tools=False)`, the function in this
module or imported from the linted tree, its parameter `True` by default) where this module also calls it with the
tools on. Two requests whose history goes through the same function on its way in (`messages=_clip(messages, n)`)
send the same history.

Also (`likely`) the tools written into the dict the requests are sent with before the next request of the run or the
recursive call that continues the tool loop (`kwargs["functions"] = []` once a tool was called too often). And a
tool added on the first pass only (`if depth == 0: functions.append(DIRECT_ANSWER_TOOL)` in a function that calls
itself again with `depth + 1`, directly or through a helper it hands `depth` to, `likely`): the requests that follow
the tool results go without it.
"""
    why = """
Tools open the cached prefix. A request of the same history without them (or with another list) shares no
prefix with the requests that sent them: the system prompt and the whole history are prefilled again, and
the next tool turn, back with the tools, misses as well.
"""
    example = """
reply = client.chat.completions.create(model="gpt-4.1", tools=TOOLS, messages=messages)
messages += [reply.choices[0].message, *run_tools(reply)]
final = client.chat.completions.create(model="gpt-4.1", messages=messages)  # no tools: nothing cached is read
"""
    instead = """
reply = client.chat.completions.create(model="gpt-4.1", tools=TOOLS, messages=messages)
messages += [reply.choices[0].message, *run_tools(reply)]
# the same tools on every request of the conversation; forbid more calls with tool_choice if needed
final = client.chat.completions.create(model="gpt-4.1", tools=TOOLS, tool_choice="none", messages=messages)
"""
    fix_safety = "none."
    without_sites = True  # an agent's last step or retry that takes the tools off, its request sent by other code

    VALID = [
        # copies of two different lists of the object: two conversations, not one
        """
import copy
from anthropic import Anthropic
TOOLS = [{"name": "press", "input_schema": {"type": "object"}}]
class Agent:
    def __init__(self):
        self.client = Anthropic()
        self.history, self.notes = [], []
    def step(self):
        messages = copy.deepcopy(self.history)
        return self.client.messages.create(model="claude-sonnet-4-5", max_tokens=10, tools=TOOLS, messages=messages)
    def recap(self):
        messages = list(self.notes)
        return self.client.messages.create(model="claude-sonnet-4-5", max_tokens=10, messages=messages)
""",
        """
from openai import OpenAI
client = OpenAI()
TOOLS = [{"type": "function", "function": {"name": "lookup"}}]
def answer(messages):
    reply = client.chat.completions.create(model="gpt-4.1", tools=TOOLS, messages=messages)
    messages.append(reply.choices[0].message)
    return client.chat.completions.create(model="gpt-4.1", tools=TOOLS, tool_choice="none", messages=messages)
""",
        # a configuration switch: each run takes one branch, every request of it the same tools
        """
from anthropic import Anthropic
client = Anthropic()
TOOLS = [{"name": "lookup", "input_schema": {"type": "object"}}]
def step(history, use_tools):
    if use_tools:
        return client.messages.create(model="claude-sonnet-4-5", max_tokens=10, tools=TOOLS, messages=history)
    else:
        return client.messages.create(model="claude-sonnet-4-5", max_tokens=10, messages=history)
""",
        # tools cleared after the loop, with no further step: nothing is sent without them
        """
class Runner:
    async def run(self, max_steps):
        for _ in range(max_steps):
            await self.step()
        self.request.tools = None
        return self.summary()
""",
        # a tool list made ready under a test of itself after the loop, then filled: no request goes without tools
        """
class Runner:
    async def run(self, max_steps):
        for _ in range(max_steps):
            await self.step()
        if self.request.tools is None:
            self.request.tools = []
        self.request.tools.extend(self.user_tools)
        await self.step()
""",
        # a one-off request of a new prompt with tools=None beside the conversation's requests with tools
        """
class Runner:
    def _kwargs(self, messages, tools):
        return {"model": self.model, "messages": messages, "tools": tools}
    async def turn(self, messages):
        return await self.provider.chat(**self._kwargs(messages, tools=self.tools))
    async def title(self, text):
        return await self.provider.chat(**self._kwargs([{"role": "user", "content": text}], tools=None))
""",
        # two one-shot prompts that share only a name
        """
from openai import OpenAI
client = OpenAI()
TOOLS = [{"type": "function", "function": {"name": "lookup"}}]
def two_questions(a, b):
    messages = [{"role": "user", "content": a}]
    first = client.chat.completions.create(model="gpt-4.1", tools=TOOLS, messages=messages)
    messages = [{"role": "user", "content": b}]
    return first, client.chat.completions.create(model="gpt-4.1", messages=messages)
""",
    ]
    INVALID = [
        # a summary request on a copy of the agent's history, sent without the tools its steps send
        Invalid("""
import copy
from anthropic import Anthropic
TOOLS = [{"name": "press", "input_schema": {"type": "object"}}]
class Agent:
    def __init__(self):
        self.client = Anthropic()
        self.history = []
    def step(self):
        messages = copy.deepcopy(self.history)
        return self.client.messages.create(model="claude-sonnet-4-5", max_tokens=10, tools=TOOLS, messages=messages)
    def summarize(self):
        messages = copy.deepcopy(self.history)
        messages += [{"role": "user", "content": "Summarize the game so far."}]
        return self.client.messages.create(model="claude-sonnet-4-5", max_tokens=10, messages=messages)
""", line=15, message="self.history"),
        Invalid("""
from openai import OpenAI
client = OpenAI()
TOOLS = [{"type": "function", "function": {"name": "lookup"}}]
def answer(messages):
    reply = client.chat.completions.create(model="gpt-4.1", tools=TOOLS, messages=messages)
    messages.append(reply.choices[0].message)
    messages.extend(run_tools(reply))
    return client.chat.completions.create(model="gpt-4.1", messages=messages)
""", line=9, message="without the tools"),
        Invalid("""
from anthropic import Anthropic
READ_ONLY = [{"name": "read", "input_schema": {"type": "object"}}]
ALL_TOOLS = [{"name": "read", "input_schema": {"type": "object"}}, {"name": "write", "input_schema": {"type": "object"}}]
class Coder:
    def __init__(self):
        self.client = Anthropic()
        self.messages = []
    def plan(self):
        return self.client.messages.create(model="claude-sonnet-4-5", max_tokens=10, tools=READ_ONLY, messages=self.messages)
    def act(self):
        return self.client.messages.create(model="claude-sonnet-4-5", max_tokens=10, tools=ALL_TOOLS, messages=self.messages)
""", line=12, message="READ_ONLY"),
        # tools only on a user turn: the request after the tool results goes without them
        Invalid("""
from openai import OpenAI
client = OpenAI()
TOOLS = [{"type": "function", "function": {"name": "search"}}]
def complete(messages):
    args = {"model": "gpt-4.1", "messages": messages}
    if messages and messages[-1]["role"] == "user":
        args["tools"] = TOOLS
    return client.chat.completions.create(**args)
""", line=8, message="only when the last message"),
        # the step limit reached: the tools are taken off the request object and one more step forces an answer
        Invalid("""
class Runner:
    async def run(self, max_steps):
        steps = 0
        while not self.done() and steps < max_steps:
            steps += 1
            await self.step()
        if not self.done():
            self.request.tools = None
            self.messages.append({"role": "user", "content": "Answer now without tools."})
            await self.step()
""", line=9, message="before one more step"),
        # a finalization retry built from the same conversation with tools=None
        Invalid("""
class Runner:
    def _kwargs(self, messages, tools):
        return {"model": self.model, "messages": messages, "tools": tools}
    async def turn(self, messages):
        return await self.provider.chat(**self._kwargs(messages, tools=self.tools))
    async def finalize(self, messages):
        retry = list(messages)
        retry.append({"role": "user", "content": "Give your final answer."})
        return await self.provider.chat(**self._kwargs(retry, tools=None))
""", line=10, message="beside 1 call"),
    ]

    def check(self, analysis):
        from cachelint.check.conversation import delegated_requests, differing_requests, tools_by_last_role, wrapper_requests
        from cachelint.check.dropped_tools import LLM_CLIENT
        from cachelint.check.module import last_name
        from cachelint.check.dropped_tools import (
            tools_added_on_the_first_pass, tools_cleared_between_runs, tools_cleared_for_a_last_step, tools_dropped_on_a_last_pass,
            tools_flag_off_in_a_call, tools_flag_off_past_a_limit,
            tools_left_out_after_the_loop, tools_none_beside_tools)

        last_pass = tools_dropped_on_a_last_pass(analysis.ctx, [s for s in analysis.sites if analysis.cacheable(s)])
        for dropped in [*tools_cleared_for_a_last_step(analysis.ctx), *tools_cleared_between_runs(analysis.ctx),
                        *tools_none_beside_tools(analysis.ctx), *tools_left_out_after_the_loop(analysis.ctx), *last_pass,
                        *tools_flag_off_past_a_limit(analysis.ctx), *tools_flag_off_in_a_call(analysis.ctx)]:
            yield Report(dropped.node, f"`{dropped.what}` takes the tools off a request of the conversation {dropped.how}: tools open the "
                         "cached prefix, so that request shares no prefix with the ones sent with them and the whole history is "
                         "prefilled again (keep the same tools and forbid calls with tool_choice=\"none\")", confidence="likely")
        for added in tools_added_on_the_first_pass(analysis.ctx):
            yield Report(added.node, f"`{added.what}` adds a tool {added.how}: tools open the cached prefix, so the follow-up requests "
                         "share no prefix with the first and the whole history is prefilled again (send the same tools on every "
                         "request; forbid the tool on later passes with tool_choice, or ignore calls of it)", confidence="likely")
        wrapped = wrapper_requests(analysis.ctx, analysis.sites)  # `self.llm.gen(messages=..., tools=None)`: the app's own client
        if not analysis.sites:  # no SDK here: a method of the app's client object (`client.chat(...)`, `self.llm.gen(...)`),
            # not any function (`chat(...)`) nor any object's method (`report.create_completion(...)`)
            wrapped = [call for call in wrapped if isinstance(call.node.func, cst.Attribute)
                       and LLM_CLIENT.search(last_name(call.node.func.value) or "")]
        if not analysis.sites and not wrapped:
            return  # the pairs below are of requests in sight, or of the app's own client called twice with one history
        from cachelint.check.settings_writes import TOOL_KEYS, settings_written_between_requests

        for write in settings_written_between_requests(analysis.ctx, analysis.sites):
            if write.key in TOOL_KEYS and (write.site is None or analysis.cacheable(write.site)):
                yield Report(write.node, f"`{write.holder}[\"{write.key}\"]` is changed {write.how}, and `{write.holder}` is what "
                             "the requests are sent with: tools open the cached prefix, so the next request shares no prefix with the "
                             "ones before it and the whole history is prefilled again (keep the same tools and forbid calls with "
                             "tool_choice=\"none\")", confidence="likely")
        delegated = delegated_requests(analysis.ctx, analysis.sites)  # `self._chat(history)`: a request sent through a helper
        handed = {id(site) for site in delegated}
        for difference in differing_requests(analysis.ctx, [*analysis.sites, *delegated, *wrapped]):
            if difference.param != "tools" or not analysis.cacheable(difference.second) or id(difference.first) in handed:
                continue
            yield Report(difference.node, f"{analysis.describe_site(difference.second)} sends the history `{difference.history}` "
                         f"{difference.how}; tools open the cached prefix, so this request reads nothing the other one cached "
                         "(send the same tools on every request of a conversation; restrict them per turn with tool_choice)",
                         confidence=difference.confidence)
        for node, history in tools_by_last_role(analysis.ctx):
            yield Report(node, f"the tools are sent only when the last message of `{history}` has a given role: the request "
                         "that follows the tool results (or an assistant turn) goes out without them, so it shares no prefix "
                         "with the requests that sent them and the whole history is prefilled again, and so is the next one "
                         "with the tools back (send the same tools on every request; restrict them with tool_choice)",
                         confidence="likely")
