"""CL202 per-request-tool-list."""

from __future__ import annotations

from cachelint.rules.base import Invalid, Report, Rule


class PerRequestToolList(Rule):
    code = "CL202"
    what = """
Finds a `tools=` list that is filtered or chosen per turn of a conversation: a comprehension with a condition,
a list extended under an `if`, or a choice between lists, where the condition reads the conversation (the
history sent, or the state that holds it), a value that changes in the loop that sends the requests, an
argument that callers pass from a loop (one transcript, several agents), or an attribute the sending method changes
on every call, read in the condition or in a method of the class it calls (`self._user_turns_seen += 1`, then
`[t for t in self._tools if not self._tool_window_closed(t)]`: tools offered only for the first turns). A switch on configuration or on a
capability (`if output_schema:`, `if user.is_admin:`) is the same for every turn of a conversation and is not
reported; neither is a comprehension that builds one tool's own fields (its `required` parameters).

Also a hand-off: the request's tools come from a parameter of the function that sends it (an agent), and a
caller in the same module passes the same growing history on each turn of its loop while it reassigns the
object for that parameter inside the loop (a tool returned another agent). A helper between them that only
hands both on (a retry or truncation wrapper) is followed to its callers. Reported at the reassignment.

Also (confidence `likely`) an agent middleware hook that runs around every model call (LangChain's
`wrap_model_call` / `awrap_model_call` / `modify_model_request`, or a method of its class it calls with the
request) and hands on the request with its tools filtered on what the request or the conversation's state
holds (`request.override(tools=[t for t in request.tools if t.name not in hidden(request.state)])`). A filter on
the middleware's own settings is the same on every call and is not reported.

Also, where no SDK request is in sight (confidence `likely`): a tools list rebuilt in a step function with tools
added under a condition on state read in that step (`viewport = await page.viewport()`, `if viewport.top > 0:
tools.append(SCROLL_UP)`) and sent by a framework's LLM call with the history (`client.create(history, tools=tools)`).

Also (`likely`) a tool's description written, in a function that builds the tools (or one it calls), as a text
holding a value computed there from a call (`param_def["description"] = f"{desc} Available: {names}"`, where
`names` lists the characters in the scene now): the schema changes as the conversation does.

Also tools picked on each turn by a call outside the module fed what changes between turns
(`tools = router.select(messages[-1]["content"], ALL_TOOLS)`; not `router.for_role(user.role)`, fixed for the
conversation), a `tools` key set in the request's `**kwargs` only on some turns (`if step < limit - 1:
kwargs["tools"] = tools`, or `kwargs.update(tools=...)`), and, in a class that keeps its conversation in an
attribute, tools that a method running during the conversation adds to (`self.add_tool(...)` from the method that
sends, `likely`; a list filled once behind `if self.tools: return` is not): register every tool before the first
request.

Also (`likely`) tools narrowed on each step by what the run has done so far, found by a call named for narrowing
tools and given the run's state (read by its keyword or its last name): `solver.get_allowed_tool_names(
last_function_response=self.last_function_response)` (tool rules: the tools allowed after the last call),
`filter_tools_by_group_and_state(tools, current_state=request.state)` (a state machine that moves after each tool
call), whose answer goes out as the tools (a `tools=` keyword, a list named for tools handed to a call, a returned
list), reported where the tools are narrowed (the comprehension whose list goes out, or the call). Not reported: a
filter given only settings, groups or permissions (`self.settings.state`, `initial_state`, `request.state.user`), one
run as the object is set up (`__init__`, `setup_tools`, `initialize`, a classmethod), one whose answer only checks a
call as it comes in or picks `tool_choice` (the tools sent stay the same: that is the fix), one of a tool's own
parameters (`filter_tool_parameters`) and one in a test.

Also (`likely`) tools bound to a model object (`llm.bind_tools(tools)`, `create_extractor(llm, tools=[...])`) that
change within one conversation sent through it with `invoke` / `ainvoke` / `stream` (the messages, or a payload dict
holding them): a loop that sends one growing conversation through objects bound with other tool lists, chosen by the
loop's step or by what the conversation holds (`if ix == max_steps - 1: chain = self.final_chain`; `if i == 1:
extractor = create_extractor(llm, tools=schemas + [Done])`; `chain = lean if len(messages) > 10 else full`),
reported at the `if` (or the conditional expression) that chooses; or tools extended under a condition on the
conversation before they are bound and sent with it (`if len(messages) > 0: tools.append(Ignore)` before
`llm.bind_tools(tools).ainvoke(messages)`), reported at the addition. Not reported: objects bound with the same tools
(a tool_choice or model switch: CL401), a loop whose every pass starts its own conversation, a choice on the item of
such a loop or on configuration, a retry that resends the same question, an addition made after the tools were bound.
"""
    why = """
Tools are the start of the prefix. Adding, removing or swapping one tool between turns invalidates
everything: tools, system prompt and the whole conversation are prefilled again.
"""
    example = """
def step(messages):
    wanted = route(messages[-1]["content"])  # tools picked from the newest message
    tools = [t for t in ALL_TOOLS if t["name"] in wanted]
    return client.messages.create(model="claude-sonnet-4-5", max_tokens=1024, tools=tools, messages=messages)
"""
    instead = """
def step(messages):
    # keep one tool list for the conversation; steer the model per turn with tool_choice instead
    return client.messages.create(model="claude-sonnet-4-5", max_tokens=1024, tools=ALL_TOOLS,
                                  tool_choice={"type": "auto"}, messages=messages)
"""
    fix_safety = "none."

    VALID = [
        """
from langchain.agents.middleware import AgentMiddleware

class DisabledTools(AgentMiddleware):
    def __init__(self, disabled):
        self.disabled = frozenset(disabled)

    def wrap_model_call(self, request, handler):
        return handler(request.override(tools=[t for t in request.tools if t.name not in self.disabled]))
""",
        """
from anthropic import Anthropic
client = Anthropic()
ALL_TOOLS = [{"name": "a"}, {"name": "b"}]
def step(messages):
    return client.messages.create(model="claude-sonnet-4-5", max_tokens=10, tools=ALL_TOOLS, messages=messages)
""",
        # a capability switch: the same for every turn of the conversation
        """
from openai import OpenAI
client = OpenAI()
BASE = [{"type": "function", "function": {"name": "search"}}]
def step(messages, user, schema=None):
    tools = list(BASE)
    if user.is_admin:
        tools.append({"type": "function", "function": {"name": "delete_user"}})
    if schema is not None:
        tools.append({"type": "function", "function": {"name": "respond", "parameters": schema}})
    return client.chat.completions.create(model="gpt-4.1", tools=tools, messages=messages)
""",
    ]
    INVALID = [
        # tools bound to the chain chosen by the loop's step: the last step offers only the answer tool
        Invalid("""
from trustcall import create_extractor
class Reflect:
    def __init__(self, llm):
        self.any_chain = create_extractor(llm, tools=[think, recommend])
        self.final_chain = create_extractor(llm, tools=[recommend], tool_choice="recommend")
    def run(self, messages, max_steps):
        for ix in range(max_steps):
            if ix == max_steps - 1:
                chain = self.final_chain
            else:
                chain = self.any_chain
            response = chain.invoke(messages)
            messages.append(response["messages"][-1])
""", line=9, message="loop's step"),
        # the hand-off two calls up: the loop calls a retry wrapper that calls the sender
        Invalid("""
import json
from openai import OpenAI
client = OpenAI()
def complete(agent, history):
    tools = [t.schema for t in agent.tools]
    return client.chat.completions.create(model="gpt-4.1", tools=tools, messages=[{"role": "system", "content": agent.prompt}] + history)
def complete_with_retry(agent, history):
    try:
        return complete(agent, history)
    except TimeoutError:
        return complete(agent, history)
def run(agent, history):
    while True:
        message = complete_with_retry(agent, history).choices[0].message
        history.append(message.model_dump())
        for call in message.tool_calls or []:
            result = agent.call(call.function.name, json.loads(call.function.arguments))
            history.append({"role": "tool", "tool_call_id": call.id, "content": str(result)})
            if hasattr(result, "tools"):
                agent = result
""", line=21, message="is swapped here"),
        Invalid("""
from anthropic import Anthropic
client = Anthropic()
ALL_TOOLS = [{"name": "a"}, {"name": "b"}]
def step(messages):
    wanted = route(messages[-1]["content"])
    tools = [t for t in ALL_TOOLS if t["name"] in wanted]
    return client.messages.create(model="claude-sonnet-4-5", max_tokens=10, tools=tools, messages=messages)
""", line=7),
        Invalid("""
from openai import OpenAI
client = OpenAI()
BASE = [{"type": "function", "function": {"name": "search"}}]
def run(messages):
    for turn in range(10):
        tools = list(BASE)
        if turn > 3:
            tools.append({"type": "function", "function": {"name": "give_up"}})
        reply = client.chat.completions.create(model="gpt-4.1", tools=tools, messages=messages)
        messages.append(reply.choices[0].message)
""", line=9),
        Invalid("""
from anthropic import Anthropic
client = Anthropic()
ALL_TOOLS = [{"name": "a"}, {"name": "b"}]
def act(agent, transcript):
    tools = [t for t in ALL_TOOLS if t["name"] in agent.allowed]
    return client.messages.create(model="claude-sonnet-4-5", max_tokens=10, tools=tools, messages=transcript)
def meeting(agents, transcript):
    for agent in agents:
        transcript.append({"role": "user", "content": act(agent, transcript).content[0].text})
""", line=6),
        Invalid("""
from openai import OpenAI
client = OpenAI()
def complete(agent, history):
    tools = [to_schema(f) for f in agent.functions]
    return client.chat.completions.create(model=agent.model, tools=tools, messages=[{"role": "system", "content": agent.instructions}, *history])
def run(agent, history):
    active = agent
    while True:
        message = complete(active, history).choices[0].message
        history.append(message)
        if not message.tool_calls:
            return history
        results, next_agent = call_tools(message.tool_calls, active)
        history.extend(results)
        if next_agent:
            active = next_agent
""", line=17, message="hand"),
        Invalid("""
class Surfer:
    async def step(self, history):
        viewport = await self.page.viewport()
        tools = self.default_tools.copy()
        if viewport["top"] > 5:
            tools.append(SCROLL_UP)
        return await self.model_client.create(history, tools=tools)
""", line=7, message="state read in this step"),
        Invalid("""
from langchain.agents.middleware import AgentMiddleware

class DeferredToolFilter(AgentMiddleware):
    def _filter(self, request):
        promoted = set(request.state.get("promoted_tools", ()))
        active = [t for t in request.tools if t.name not in self.deferred or t.name in promoted]
        return request.override(tools=active)

    def wrap_model_call(self, request, handler):
        return handler(self._filter(request))
""", line=7, message="middleware filters the tools"),
    ]

    without_sites = True

    def check(self, analysis):
        from cachelint.check.conversation import handoffs, per_cycle_arguments, step_state_tools
        from cachelint.check.class_state import class_state_in_tools
        from cachelint.check.middleware import tool_filters
        from cachelint.check.values import ValueWalker
        from cachelint.check.gate import opened_alone
        from cachelint.check.state_tool_filters import state_filtered_tools

        for found in state_filtered_tools(analysis.ctx):
            yield Report(found.node, f"`{found.callee}` narrows the tools to those allowed by `{found.reads}`, what the run has done so far: "
                         "the tool list changes between the steps of one conversation, and the tools open the prefix, so each change "
                         "prefills the whole conversation again; send every tool on every step and enforce the rules when a call "
                         "comes in (or with tool_choice)", confidence="likely")
        from cachelint.check.bound_tools import bound_tool_switches
        for found in bound_tool_switches(analysis.ctx):
            yield Report(found.node, f"the tools bound to `{found.holder}` change {found.why} while it sends one conversation: "
                         "the tools open the prefix, so each change prefills the whole conversation again; bind one tool list "
                         "for the conversation and steer each step with tool_choice or the message", confidence="likely")
        if not analysis.sites and opened_alone(analysis.ctx.source):
            return  # a module opened for that shape alone

        for found in tool_filters(analysis.ctx):
            yield Report(found.node, f"this middleware filters the tools of every model call ({found.hook}) on what `{found.reads}` holds: "
                         "when that changes within a conversation (a tool promoted, a skill activated), the next call goes out with "
                         "another tool list, and the tools open the prefix, so the whole conversation is prefilled again; send one "
                         "tool list for the conversation (promote tools at its start) and restrict calls with tool_choice or the "
                         "tool's own check", confidence="likely")

        for found in per_cycle_arguments(analysis.ctx, analysis.sites, "tools"):
            yield Report(found.node, f"the tools handed to the sender change inside the loop that continues the conversation ({found.shown}): "
                         "the tools open the prefix, so each switch prefills the whole conversation again; send the same tools on "
                         "every cycle and steer with tool_choice or the message", confidence="likely")

        from cachelint.check.tool_descriptions import descriptions_filled_per_turn

        for found in descriptions_filled_per_turn(analysis.ctx):
            yield Report(found.node, f"a tool's description is written with `{found.value}`, what the conversation holds now (the "
                         "characters present, the files open): the tool list is rebuilt with this turn's data, the tools open the "
                         "prefix, so each change prefills the whole conversation again; keep tool schemas fixed and say what is "
                         "available in the newest message", confidence="likely")

        if not analysis.sites:  # where a request is in sight, the data flow judges its tools
            for found in step_state_tools(analysis.ctx):
                yield Report(found.node, f"`{found.tools}` is rebuilt on every step and this tool is added only when `{found.condition}`, "
                             "state read in this step; the list goes out with the same history each turn, so the tools at the head of "
                             "the prefix change between turns and nothing after them is read from cache; send every tool on every turn "
                             "and say in the step's message which ones apply", confidence="likely")

        filtered = list(analysis.facts({"filtered"}, args=("tools",)))
        for site, fact in filtered:
            yield Report.at(site, fact.node, f"the tools of {analysis.describe_site(site)} are chosen per request ({fact.label}{fact.origin}); "
                         "keep one tool list per conversation and restrict tools per turn with tool_choice instead")
        said = {id(site) for site, _ in filtered}  # a tool list filtered per agent already says it
        for state in class_state_in_tools(analysis.ctx, analysis.sites):
            if id(state.site) in said or not analysis.cacheable(state.site):
                continue
            said.add(id(state.site))
            yield Report(state.node, f"the tools of {analysis.describe_site(state.site)} are `{state.state}`, which `{state.method}` adds to "
                         f"while the conversation in `{state.history}` runs (line {analysis.ctx.span(state.mutation).row}): the tools open "
                         "the prefix, so after each addition the whole conversation is prefilled again; register every tool before "
                         "the first request and restrict calls with tool_choice", confidence="likely")
        for site in analysis.sites:
            if id(site) in said or not analysis.cacheable(site):
                continue
            keyed = ValueWalker(analysis.ctx, site).tools_key_set_per_turn()
            if keyed is not None:
                said.add(id(site))
                yield Report.at(site, keyed, f"the tools of {analysis.describe_site(site)} are sent only on some turns of the "
                                "conversation (this key is set under a condition that changes between turns): the requests without "
                                "them start with another prefix, so the whole conversation is prefilled again; send the same tools "
                                "on every turn and use tool_choice (\"none\") where no tool may be called")
        for handoff in handoffs(analysis.ctx, analysis.sites):
            if "tools" in handoff.params and id(handoff.site) not in said and analysis.cacheable(handoff.site):
                yield Report.at(handoff.site, handoff.node, _handoff_message(analysis, handoff))


def _handoff_message(analysis, handoff) -> str:
    what = ", ".join(f"`{p}`" for p in handoff.params)
    return (f"`{handoff.holder}` is swapped here inside the loop that sends the history `{handoff.history}` again: "
            f"{what} of {analysis.describe_site(handoff.site)} in {handoff.function}() come from it, so after the "
            "hand-off the same conversation goes out with other tools and nothing of it is read from cache; keep "
            "one tool list for the whole conversation (the union of the agents' tools) and steer each agent with "
            "its instructions and tool_choice, or start the next agent with a fresh, short history")
