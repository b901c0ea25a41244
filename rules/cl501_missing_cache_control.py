"""CL501 missing-cache-control."""

from __future__ import annotations

import dataclasses
import functools
import os
import re

import libcst as cst
from cachelint.rules.base import Invalid, Report, Rule

from cachelint.check.analysis import anthropic_minimum
from cachelint.check.depends import parameter_sources, parameters_of
from cachelint.check.gate import opened_alone
from cachelint.check.framework_models import (
    AGENT_WITH_MODEL_STRING, ANY_PROVIDER_MODELS, CACHE_SWITCH, CLAUDE_BY_DEFAULT, CLAUDE_MODELS, MODEL_KEYWORDS, MODEL_PARAM,
    OTHER_PROVIDER_MODEL, PYDANTIC_CLAUDE,
    caching_advice,
)
from cachelint.check.module import called_name, descendants, names_in, read_names
from cachelint.check.one_shot import one_shot_callers
from cachelint.check.sender_calls import bound_afresh
from cachelint.check.breakpoints import markers, static_text
from cachelint.check.history import LOG_NAME
from cachelint.check.renderers import SYSTEM_NAME
from cachelint.check.class_state import grown_attributes, method_of
from cachelint.check.static_prefix import (
    CLAUDE_MODEL,
    KEPT_HISTORY_ATTRIBUTE,
    callers_system_text,
    conversation_loops,
    converter_marks,
    conversation_object,
    forwarded_history,
    from_parameter,
    history_growth,
    leading_text,
    mentions_caching,
    tree_claude_model,
    tree_sets_breakpoints,
)
from cachelint.simulate.models import caches_prompts
from cachelint.check.values import string_value
from cachelint.tokens import counter_for

LONG = "You are the assistant of Acme Corp. " + "Follow the support handbook, cite its sections, and never promise refunds. " * 110


class MissingCacheControl(Rule):
    code = "CL501"
    without_sites = True  # a framework's Claude model, or a payload another module posts
    what = """
Finds an Anthropic request sent with no `cache_control` anywhere (no breakpoint on a block, no top-level
`cache_control`) whose repeated prefix can be cached (all but the first shape only where its module never
speaks of breakpoints, which a helper could set; an agent loop is reported there too when the function that sends
it says nothing of breakpoints and calls no function of the module that does, beside a request the module marks):
- its static prefix (tools and system prompt written as constants, here or in another module of the tree:
  `SystemPrompts.DEFAULT`, `prompts.HANDBOOK`) is at least the model's minimum cacheable length; where the
  system prompt is a constant followed by per-request parts (`HANDBOOK + files`), the constant start counts
  ("at least N tokens");
- it is an agent loop: it sends tools, and between two of its requests (a loop around it, also around a closure the
  loop's pass runs, `async def make_api_call(): ... lambda: client.messages.create(...)` then
  `await retry_with_backoff(make_api_call)`; or the function
  calling itself after a tool turn) the model's turn and the tool results are appended to the history it sends;
- it is a chat loop: no tools, but the loop around it (not a retry loop, nor one left by the first answer)
  appends each turn to the history it sends; a Streamlit app's script is such a loop (it runs again on every
  message, and `st.session_state` keeps the history it appends to);
- (`likely`) a loop of the module calls the sending function again and again with a list it appends to on
  every pass (or rebuilds from such a list), and the system prompt or the messages are built from that list:
  each request resends the previous one's text plus the newest entry (an orchestrator fed every earlier result);
- it is a provider wrapper whose system prompt is a parameter, and a caller in another file of the tree passes
  a constant prompt of at least the minimum through it (`llm.generate(messages=[{"role": "system", "content":
  EXTRACTION_PROMPT}, ...])`);
- it is a provider client that sends a conversation object of the tree (a parameter annotated with a class
  whose methods append each turn to its `self.messages`; not one whose appending method empties the list first,
  `self.messages.clear()`, which builds one request's messages anew): every request of a conversation resends all
  earlier turns;
- it is a provider adapter (`likely`): outside any loop, it sends the history its callers pass (the parameter,
  a copy, `[system] + messages`, a list converted from it message by message, or what a function named for
  converting makes of it: `system, messages = _convert_to_anthropic_messages(conversation)`, also from a closure
  nested in the adapter that streams the request) with a system prompt or tools
  that also come from outside (not written in the tree, and no caller in the tree passes them, a test's call not counted; or the tools as well
  as a system prompt its callers pass, however short: the tools and the growing history are the prefix); every
  conversation of the app goes through it (a system prompt the object was made with, `self.system_message` set in
  `__init__` from a parameter, comes from outside too: a chat UI's model adapter). Not where every caller in sight (by name, through the registry a
  decorator puts it in, `registry[kind](**kwargs)`, or through a builder of the tree; tests and a module's top-level
  statements not counted) passes a list made afresh for one question: an evaluation harness, where no request
  resends another. litellm
  requests count where the model, or the class that sends them, names Claude / Anthropic; and (`likely`) where the
  model is a setting (not a literal, nor a constant of the module), the project sets a Claude model that caches
  prompts as a default or a setting (`DEFAULT_MODEL = "anthropic/claude-3-5-sonnet-..."`, `model: str = ...`, an
  option's `default=`; not a table key, a call's keyword, a comment or a test) and no file of it sets a breakpoint,
  unless the class or function that sends it is named for another provider (`GroqModel`, `call_openai`);
- it is an Anthropic integration in a project where no file speaks of breakpoints (`likely`; the tree's
  files are searched once, and a breakpoint set anywhere quiets these): a request posted to Anthropic's HTTP API
  by hand from what the function's callers pass, an Anthropic request body (`"max_tokens"` and `"messages"`, in
  code named for Anthropic / Claude, or Bedrock's Claude body with its `"anthropic_version"`, also with `max_tokens` or
  `messages` set on it afterwards, `request["max_tokens"] = 4000` (unless a request of the module that sends what its
  callers build is reported already: one place to fix), reported at the one call of the function that posts
  it where there is one, `invoke_model(body=json.dumps(body))`;
  not by a function or into a name that names another provider:
  `_openai_body` beside `_anthropic_body`, `openai_request = {...}` in `convert_claude_to_openai`) built from what
  callers pass for a sender elsewhere, a client class named
  for Anthropic / Claude whose methods send a whole request dict their callers build (`create(**request_data)`,
  once per class), or a framework's Claude model (llama_index `Anthropic`, langchain `ChatAnthropic`; an agent SDK's
  Claude model made without the SDK's own caching switch: strands `AnthropicModel`, agno `Claude` without
  `cache_system_prompt=True`, pydantic-ai `AnthropicModel` and `Agent("anthropic:claude-...")`, autogen's
  `AnthropicChatCompletionClient`; a model held in a module constant is read there, and one unpacked from settings
  (`BedrockModel(**settings)`) is a setting;
  and a model that serves many providers, strands `BedrockModel` and `LiteLLMModel`, langchain's `ChatBedrock` and
  `ChatLiteLLM`, where the model it is made with names Claude, or is a setting in a project that names a Claude
  model, an app settings object's `LLMConfig(model_id="us.anthropic.claude-...")` included; strands' `BedrockModel()`
  with no model runs Claude; a pydantic-ai `Agent(model_obj)` or a many-provider model whose model is worked out from
  a parameter of the function that makes it, where that parameter is named for the model and defaults to a Claude
  model (`def create_chat_agent(model_name: str = "claude-sonnet-4-5")`; not a judge's or a summarizer's model, nor
  one beside a default that names another provider, `openai_model="gpt-4o"`); langchain's `AnthropicPromptCachingMiddleware` anywhere
  in the tree counts as a breakpoint), reported
  once per function that makes it, where the object that keeps it asks it (`self.llm.agenerate(...)`) when that is
  in sight (not one made in a branch of a factory over providers, beside `ChatOpenAI(...)`, with a configured model
  name: which provider runs is the user's setting), or a method named for chatting or generating (`chat`, `achat`,
`converse`, `reply`, `generate`, a private `_create_achat`) of a class named for Anthropic / Claude that sends the
conversation its callers hand it, converted but whole (`def chat(self, chat: Sequence[Message])`, `messages =
self._convert(chat)`; also from a closure it hands its retry helper, `def api_call(): return create(**kwargs)`), with
no system prompt of its own (one taken off the front of those messages, `system = messages.pop(0)["content"]`, is theirs),
outside any loop, with no caller's prompt in sight, and called by a module of the tree that is not a test: a
library's provider adapter (not a method that makes one question of its input, nor one nothing calls). An SDK helper that wraps a prompt string is left alone: it is as often a script with a short prompt.
An SDK method handed to a helper that calls it is a request too: a retry wrapper whose result is called with the
request's arguments (`retry(self.client.messages.create, should_retry)(**params)`), or a thread runner
(`asyncio.to_thread(client.messages.create, **params)`). A loop left as soon as the request succeeds, or one over a
bare `_` that changes nothing the request reads (n samples of one request), is a retry, not a conversation.
- (`likely`) a chat model class that sends the conversation it keeps on the object (`self.history`, `self.outgoing_messages`, or what a method
  of the class makes of it), grown by the class or a base class and not bound anew in the sending method, in a
  project where no file sets a breakpoint; or a client class whose sending method is handed, through at most one
  more call, the conversation another class of the module keeps and appends to turn by turn
  (`add_message` -> `self.call_llm(self.messages)` -> `self.llm.acall(messages)`); or a sender handed, by a caller in
  any module of the tree, the turns an object keeps and adds each exchange to, rebuilt from them or handed back by a
  method of that object (`message, memory = self.prepare_inputs(...)` where `prepare_inputs` returns `self.context`,
  then `self.actor.predict(message, context=memory)` and `self.context.append(...)`);
- (`likely`) a loop that appends to the list it hands as `messages=` to a function of the tree that sends it
  (`await generate_text(messages=messages, tools=schemas, model_name=name)` in another module, through its own
  `**kwargs` wrappers), or hands it a prompt built from that list (`user_prompt=TEMPLATE.format(already_written=
  "\\n\\n".join(sections))`, then `sections.append(response.content)`: a report written section by section, each
  request resending the sections written so far), reported at that call, when the request it reaches goes to Anthropic: the SDK, or litellm with
  a model that is not written at the call in a project that sets a Claude model (also as the model a model object is
  made with, `LLM("claude-3-5-sonnet-20241022", temperature=0.3)`) and no breakpoint anywhere.
Breakpoints that a module sets only behind a switch named for caching (`if self.config.automatic_prompt_caching:`),
which the tree declares off (`automatic_prompt_caching: bool = False`) and no file of it outside the tests turns on or
hands on with another value (`use_cache=message.cache`), are reported at that switch (`likely`) where the function sets
no breakpoint outside such switches: every request goes out without one.
Claude on Amazon Bedrock counts too: an InvokeModel request whose body is an Anthropic Messages body
(`client.invoke_model(modelId="anthropic.claude-...", body=json.dumps({"anthropic_version": ..., "messages": ...}))`),
and a Converse request (`client.converse(modelId=..., system=[...], messages=...)`) to a Claude model id, where a
breakpoint is a `{"cachePoint": {"type": "default"}}` block. So does Claude reached through OpenRouter with an
OpenAI client (`model="anthropic/claude-3.5-sonnet"`, written or the default of the constructor parameter that sets
`self.model`): OpenRouter caches Claude's prompts only at `cache_control` breakpoints too. A request body posted over
HTTP (`payload = {...}` then `session.post(url, json=payload)`) is reported where the body is built.
OpenAI caches automatically and is not concerned; nor is a Claude model from before prompt caching (`claude-2.1`,
`claude-instant-1.2`), where no breakpoint would help. A tool loop's history also grows through a helper of the
module that appends to the list it is handed (`self._add_to_history(message, messages)`) or in the request's own
dict (`create(**request_params)` after `request_params["messages"].append(...)`); where a function both sends the
history it is given and loops on tool calls, the loop's request is the one reported. An adapter whose retrying
closure hands on the method's parameter (`def _send(messages): ...` then `return _send(messages)`) is judged by
the method's callers: quiet where each asks one question with a list made for it.
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
        # a framework's model pinned to a Claude from before prompt caching
        """
from llama_index.llms.anthropic import Anthropic
def make_llm():
    return Anthropic(model="claude-2.1", max_tokens=4096)
""",
        # a Claude model from before prompt caching: no breakpoint would help
        """
from anthropic import Anthropic
client = Anthropic()
def run(messages, tools, execute):
    while True:
        response = client.messages.create(model="claude-2.1", max_tokens=1024, tools=tools, messages=messages)
        messages.append({"role": "assistant", "content": response.content})
        results = [execute(block) for block in response.content if block.type == "tool_use"]
        if not results:
            return response
        messages.append({"role": "user", "content": results})
""",
        # a batch: each call gets a slice of its own, nothing carries over from one call to the next
        """
import anthropic
client = anthropic.Anthropic()
def label(goal, items):
    text = "\\n".join(items)
    return client.messages.create(model="claude-sonnet-4-5", max_tokens=256, messages=[{"role": "user", "content": f"{goal}\\n{text}"}])
def run(goal, items):
    labels = []
    for start in range(0, len(items), 10):
        batch = items[start:start + 10]
        labels.append(label(goal, batch))
""",
        # a retry loop left by the first answer: one request, not a conversation
        """
import anthropic
client = anthropic.Anthropic()
def ask(messages):
    for attempt in range(3):
        try:
            return client.messages.create(model="claude-sonnet-4-5", max_tokens=10, messages=messages)
        except anthropic.APIError:
            messages.append({"role": "user", "content": "Try again."})
""",
        """
import requests
ANTHROPIC_URL = "https://api.anthropic.com/v1/messages"
def complete(prompt, system):
    payload = {"model": "claude-sonnet-4-5", "max_tokens": 4096, "system": [{"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}],
               "messages": [{"role": "user", "content": prompt}]}
    return requests.post(ANTHROPIC_URL, headers=HEADERS, json=payload).json()
""",
        """
def build_payload(messages, model):
    return {"model": model, "max_tokens": 4096, "messages": messages}
""",
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
        # an adapter whose only caller asks one question with a list made for it: an evaluation harness
        """
import anthropic
def complete(model, messages):
    system, rest = messages[0]["content"], messages[1:]
    return anthropic.Anthropic().messages.create(model=model, max_tokens=1024, system=system, messages=rest)
def judge(settings, question, answer):
    messages = [{"role": "system", "content": settings["judge_prompt"]}, {"role": "user", "content": question + answer}]
    return complete(settings["model"], messages)
""",
    ]
    INVALID = [
        # an orchestrator fed every earlier result: the prompt grows by one result per call
        Invalid("""
import anthropic
client = anthropic.Anthropic()
def plan_next(goal, results):
    done = "\\n".join(results)
    return client.messages.create(model="claude-sonnet-4-5", max_tokens=2048,
                                  messages=[{"role": "user", "content": f"Goal: {goal}\\nDone so far:\\n{done}\\nWhat next?"}])
def run(goal):
    results = []
    while len(results) < 20:
        step = plan_next(goal, results).content[0].text
        results.append(step)
""", line=6, message="which grows every pass"),
        # a chat loop without tools: every turn resends the whole conversation
        Invalid("""
import anthropic
client = anthropic.Anthropic()
def main():
    messages = []
    while True:
        messages.append({"role": "user", "content": input("> ")})
        reply = client.messages.create(model="claude-sonnet-4-5", max_tokens=1024, messages=messages)
        messages.append({"role": "assistant", "content": reply.content[0].text})
""", line=8, message="this chat loop"),
        # a Streamlit chat: the script runs again on every message, st.session_state keeps the conversation
        Invalid("""
import anthropic
import streamlit as st
client = anthropic.Anthropic()
if "history" not in st.session_state:
    st.session_state.history = []
if prompt := st.chat_input("Ask"):
    st.session_state.history.append({"role": "user", "content": prompt})
    reply = client.messages.create(model="claude-sonnet-4-5", max_tokens=1024, messages=st.session_state.history)
    st.session_state.history.append({"role": "assistant", "content": reply.content[0].text})
""", line=9, message="Streamlit runs the script again"),
        Invalid("""
from anthropic import Anthropic
client = Anthropic()
def run(messages, tools, execute):
    while True:
        response = client.messages.create(model="claude-sonnet-4-5", max_tokens=1024, tools=tools, messages=messages)
        messages.append({"role": "assistant", "content": response.content})
        results = [execute(block) for block in response.content if block.type == "tool_use"]
        if not results:
            return response
        messages.append({"role": "user", "content": results})
""", line=6, message="agent loop"),
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
        Invalid("""
from anthropic import Anthropic
class ClaudeBackend:
    def __init__(self):
        self.client = Anthropic()
    def chat(self, messages, tools):
        system = [m["content"] for m in messages if m["role"] == "system"]
        rest = [m for m in messages if m["role"] != "system"]
        return self.client.messages.create(model="claude-sonnet-4-5", max_tokens=1024, system="\\n".join(system), tools=tools, messages=rest)
""", line=9, message="history its callers pass"),
        Invalid("""
import requests
ANTHROPIC_URL = "https://api.anthropic.com/v1/messages"
def complete(prompt, system):
    payload = {"model": "claude-sonnet-4-5", "max_tokens": 4096, "system": system,
               "messages": [{"role": "user", "content": prompt}]}
    return requests.post(ANTHROPIC_URL, headers=HEADERS, json=payload).json()
""", line=5, message="no file of this project sets a breakpoint"),
        Invalid("""
def build_anthropic_payload(messages, model):
    system = [m["content"] for m in messages if m["role"] == "system"]
    turns = [m for m in messages if m["role"] != "system"]
    return {"model": model, "max_tokens": 4096, "system": "\\n".join(system), "messages": turns}
""", line=5, message="builds an Anthropic request"),
        Invalid("""
from llama_index.llms.anthropic import Anthropic
def make_llm(model="claude-sonnet-4-5"):
    return Anthropic(model=model, max_tokens=4096)
""", line=4, message="runs `claude-sonnet-4-5` unless its caller names another model"),
    ]

    def check(self, analysis):
        ctx = analysis.ctx
        if not analysis.sites and opened_alone(ctx.source):
            yield from _loops_through_senders(analysis, functools.cache(lambda: tree_sets_breakpoints(ctx.filename)))
            return  # a loop that hands its sections to the app's sender, analysed for that alone
        quiet = mentions_caching(ctx.source)  # a helper may set the breakpoints: the absence of a marker proves nothing
        tree_marks = functools.cache(lambda: tree_sets_breakpoints(ctx.filename))  # asked at most once per module
        reported: set[int] = set()  # places to fix already reported (a payload builder shared by two requests)
        for site in analysis.sites:
            if "cache_control" in site.args or markers(ctx, site) or _marked_by_a_helper(ctx, site):
                continue
            configured = None  # a litellm request whose model is configured: a Claude model the tree names
            if not _to_anthropic(analysis, site):
                configured = _configured_claude(analysis, site, tree_marks)
                if configured is None:
                    continue
            if not caches_prompts(analysis.model_of(site)):
                continue  # claude-2: a model before prompt caching, where no breakpoint would help
            report = _long_static_prefix(analysis, site) if site.api in ("anthropic", "bedrock-converse") else None
            if report is None and not quiet:
                report = _agent_loop(analysis, site)
                callers = _caller_prompts(analysis, site) if report is None else []  # a tree search: once per request
                report = report or _prompt_from_callers(analysis, site, callers)
                report = report or _conversation_object(analysis, site) or _adapter(analysis, site, callers)
                report = report or _grown_by_callers(analysis, site)
            if report is None and quiet and _sent_bare(analysis, site):
                report = _agent_loop(analysis, site)  # a module that marks its other requests, but not this loop's
            if report is None and not quiet:
                report = _unmarked_adapter(analysis, site, tree_marks, callers) or _object_history(analysis, site, tree_marks)
                report = report or _object_conversation_through(analysis, site, tree_marks)
                report = report or _stored_conversation_through(analysis, site, tree_marks)
            if report is None or (not quiet and converter_marks(ctx, site)):
                continue  # (a tree search, asked last) `[m.to_anthropic_format() for m in messages]`, whose definition elsewhere sets the breakpoints
            if configured is not None:
                report = _when_claude(report, configured)
            if site.api == "bedrock-converse":
                report = _in_converse_terms(report)
            elif site.api == "openai-chat" and not site.callee.startswith("litellm"):  # Claude through OpenRouter (_openrouter_claude)
                report = Report(report.node, report.message.replace("to Anthropic", "to Claude through OpenRouter"), report.severity,
                                report.fix, confidence=report.confidence, position=report.position)
            if report.node is not site.node and report.also_at is None:
                report = dataclasses.replace(report, also_at=site.node)  # moved to the body it sends: a noqa on the request holds
            place = _fix_place(ctx, site, report)
            if place in reported:
                continue  # the create and stream paths take their messages from one builder: one place to fix
            reported.add(place)
            yield report  # otherwise each request: a client's stream and create paths each need their breakpoint
        yield from _off_switches(analysis)  # breakpoints the module sets, but only behind a switch nothing turns on
        if quiet:
            return
        yield from _loops_through_senders(analysis, tree_marks)
        unsent = [*_unsent_payloads(analysis, reported), *_framework_models(analysis)]
        if unsent and not tree_marks():  # the tree is searched only for a module with one
            yield from unsent


def _sent_bare(analysis, site) -> bool:
    """The function that sends the request says nothing of breakpoints and calls no function of this module that
    does: in a module that sets them for another request, this one goes out with none (themis' tool loop beside
    the `_call_anthropic_api` that marks its system prompt)."""
    ctx = analysis.ctx
    function = ctx.enclosing_function(site.node)
    if function is None or mentions_caching(ctx.code(function)):
        return False
    if _marking_calls(ctx, function):
        return False  # `mark_last_turn(messages)`, imported from elsewhere: it may set the breakpoint in place
    cls = ctx.enclosing(function, (cst.ClassDef,))
    if isinstance(cls, cst.ClassDef):  # `system=self.system`, made with its breakpoint in `__init__`
        assigned = ctx.self_assignments(cls)
        read = {n.attr.value for arg in site.args.values() if arg is not None for n in (arg, *descendants(arg))
                if isinstance(n, cst.Attribute) and isinstance(n.value, cst.Name) and n.value.value == "self"}
        if any(mentions_caching(ctx.code(statement)) for attr in read for statement in assigned.get(attr, ())):
            return False
    return not any(mentions_caching(ctx.code(helper)) for call in ctx.nodes_in(cst.Call, function) for helper in ctx.called_functions(call))


MARKING_CALL = re.compile(r"cach|mark|breakpoint", re.I)


def _marking_calls(ctx, function) -> list[cst.Call]:
    """The calls in `function` of something named for breakpoints (`mark_last_turn(...)`, `add_cache_markers(...)`)."""
    return [call for call in ctx.nodes_in(cst.Call, function) if MARKING_CALL.search(called_name(call) or "")]


def _marked_by_a_helper(ctx, site) -> bool:
    """The sending function hands the messages it sends to a helper named for breakpoints (`mark_last_turn(messages)`,
    `add_cache_markers(history)`, imported from another module): it may set them in place."""
    messages = site.arg("messages")
    function = ctx.enclosing_function(site.node)
    if not isinstance(messages, cst.Name) or function is None:
        return False
    return any(isinstance(a.value, cst.Name) and a.value.value == messages.value for call in _marking_calls(ctx, function) for a in call.args)


def _long_static_prefix(analysis, site):
    """The tools and the system prompt written in this module reach the minimum on their own."""
    ctx = analysis.ctx
    texts = [static_text(ctx, site.arg(arg)) for arg in ("tools", "system") if site.arg(arg) is not None]
    if not texts:
        return None
    exact = not any(t is None for t in texts)
    if not exact:
        texts = _static_prefix(ctx, site)  # the tools and the start of the system prompt that never change
    model = analysis.model_of(site)
    tokens, minimum = _tokens(model, " ".join(t for t in texts if t))
    if tokens < minimum:
        return None
    how = "about" if exact else "at least"
    return Report.at(site, site.node, f"{how} {tokens:,} tokens of static tools and system prompt are sent with no cache_control "
                     f"(the minimum for {model or 'the model'} is {minimum:,}): nothing is cached; add a breakpoint "
                     "on the last static block or a top-level cache_control")


def _agent_loop(analysis, site):
    """`_loop_report`, asked once per request (the check asks it of each request, `_adapter` of a function's others)."""
    reports = analysis.__dict__.setdefault("_agent_loops", {})
    if id(site) not in reports:
        reports[id(site)] = _loop_report(analysis, site)
    return reports[id(site)]


def _loop_report(analysis, site):
    """An agent loop: the request goes out again after the model's tool calls and their results are appended to
    the history it sends, with the same tools and system prompt ahead of them. From the second step on, all of
    it is a prefix the previous request already sent; without a breakpoint it is prefilled in full every step."""
    tools = site.arg("tools")
    if tools is None or (isinstance(tools, cst.Name) and tools.value == "None") or (isinstance(tools, cst.List) and not tools.elements):
        return _chat_loop(analysis, site)
    growth = history_growth(analysis.ctx, site)
    if growth is None:
        return None
    row = analysis.ctx.span(growth.node).row
    again = {"loop": "the loop around it", "rerun": "Streamlit, running the script again on the next message,"}.get(growth.how, "the function calling itself")
    first = _first_requests(analysis, site)
    also = f"; the request on line{'s' if len(first) > 1 else ''} {', '.join(map(str, first))} sends the same history first, bare too" if first else ""
    return Report.at(site, site.node, f"this agent loop resends the tools, the system prompt and a history that grows every step "
                     f"(`{growth.history}` appended on line {row}, then {again} sends it again) to Anthropic with no cache_control: "
                     "nothing is ever read from cache and each step prefills the whole conversation again; put a breakpoint "
                     f"on the last message (or a top-level cache_control){also}")


def _first_requests(analysis, site) -> list[int]:
    """The lines of the function's other requests, before its loop, that send the same history with no breakpoint
    (`response = create(messages=messages)` then `while True: ... create(messages=messages)`): one fix, named once."""
    ctx = analysis.ctx
    function = ctx.enclosing_function(site.node)
    messages = ctx.code(site.arg("messages")) if site.arg("messages") is not None else None
    return [ctx.span(other.node).row for other in analysis.sites
            if other is not site and ctx.enclosing_function(other.node) is function and not conversation_loops(ctx, other.node)
            and ctx.span(other.node).row < ctx.span(site.node).row and "cache_control" not in other.args
            and other.arg("messages") is not None and ctx.code(other.arg("messages")) == messages]


def _chat_loop(analysis, site):
    """A chat loop with no tools: the loop around the request appends each turn to the history it sends, so from
    the second turn on every request starts with the previous one; without a breakpoint all of it is prefilled
    again on every turn."""
    ctx = analysis.ctx
    rerun = ctx.reruns_per_turn and ctx.enclosing_function(site.node) is None  # a Streamlit app's script is its loop
    if not (rerun or conversation_loops(ctx, site.node)) or ctx.enclosing(site.node, (cst.Return,)) is not None:
        return None  # a retry loop, or one left by the first answer (`return client.messages.create(...)`)
    growth = history_growth(ctx, site)
    if growth is None or growth.how not in ("loop", "rerun"):
        return None
    row = ctx.span(growth.node).row
    again = "Streamlit runs the script again on the next message and sends it" if growth.how == "rerun" else "the loop sends it again"
    return Report.at(site, site.node, f"this chat loop resends the system prompt and a history that grows every turn "
                     f"(`{growth.history}` appended on line {row}, then {again}) to Anthropic with no "
                     "cache_control: nothing is ever read from cache and each turn prefills the whole conversation again; put "
                     "a breakpoint on the last message (or a top-level cache_control)")


def _grown_by_callers(analysis, site):
    """The prompt is built from a list that a loop of this module grows while it calls the sending function again
    and again (`for step: result = ask(objective, results); results.append(result)`): each request starts with
    the previous one's text and adds the newest entry, a prefix that grows like a conversation's."""
    from cachelint.check.conversation import grows_in
    from cachelint.check.module import argument_for
    from cachelint.check.values import callers

    ctx = analysis.ctx
    function = ctx.enclosing_function(site.node)
    if function is None or conversation_loops(ctx, site.node):
        return None
    names = [p.name.value for p in function.params.params]
    method = bool(names) and names[0] in ("self", "cls")
    params = set(names) - {"self", "cls"}
    used = {p for arg in ("system", "messages") for p in parameter_sources(ctx, site.arg(arg), params, within=function)}
    for call in callers(ctx, function):
        loops = conversation_loops(ctx, call)
        if not loops:
            continue
        for param in sorted(used):
            value = argument_for(call, param, names.index(param) - method)
            grown = _grown_list(ctx, value, loops[-1], grows_in)
            if grown is not None:
                row = ctx.span(call).row
                return Report(site.node, f"the loop that calls `{function.name.value}` on line {row} passes `{grown}`, which grows every "
                              f"pass, as `{param}`, which this prompt is built from: each request resends the previous one's text "
                              "with the newest entry added, to Anthropic with no cache_control, so all of it is prefilled again on "
                              "every call; put a breakpoint after the text that grows (or a top-level cache_control)",
                              confidence="likely")
    return None


def _grown_list(ctx, value, loop, grows_in) -> str | None:
    """`results` appended to in the loop, or `texts = [r for _, r in results]` rebuilt in it from such a list."""
    if not isinstance(value, cst.Name):
        return None
    if grows_in(ctx, value, loop):
        return value.value
    for binding, bound in ctx.assigned_values(value):
        if bound is not None and ctx.contains(loop, binding) and isinstance(bound, (cst.ListComp, cst.GeneratorExp)):
            source = bound.for_in.iter
            if isinstance(source, cst.Name) and grows_in(ctx, source, loop):
                return source.value
    return None


def _caller_prompts(analysis, site) -> list:
    """The system prompts that callers in other files pass through the parameter the request's system prompt
    comes from (a wrapper), empty when there is none or no caller."""
    function = analysis.ctx.enclosing_function(site.node)
    if function is None or site.arg("system") is None:
        return []
    params = {fact.label for found, fact in analysis.facts({"param"}, args=("system",)) if found is site}
    return [prompt for param in sorted(params) for prompt in callers_system_text(analysis.ctx, function, param)]


def _prompt_from_callers(analysis, site, callers: list):
    """A wrapper whose system prompt is a parameter: the long constant prompts that callers in other files pass
    through it are sent with no breakpoint."""
    if not callers:
        return None
    best = max(callers, key=lambda prompt: len(prompt.text))
    model = analysis.model_of(site)
    tokens, minimum = _tokens(model, best.text)
    if tokens < minimum:
        return None
    return Report.at(site, site.node, f"the system prompt comes from the callers, and {best.where} passes one of at least {tokens:,} "
                     f"static tokens (the minimum for {model or 'the model'} is {minimum:,}); it is sent with no cache_control, "
                     "so every call prefills it in full; put a breakpoint on the system block")


def _conversation_object(analysis, site):
    """A client that sends a conversation object of the tree (its class appends each turn to its messages):
    every request of a multi-turn conversation resends all earlier turns, and none is read from cache."""
    found = conversation_object(analysis.ctx, site)
    if found is None:
        return None
    return Report.at(site, site.node, f"the history sent here is `{found.param}`, a {found.cls} that grows turn by turn ({found.where} "
                     "appends to it), sent to Anthropic with no cache_control: each request of a conversation prefills all earlier "
                     "turns again and nothing is read from cache; put a breakpoint on the last message (or a top-level cache_control)")


def _to_anthropic(analysis, site) -> bool:
    """An Anthropic request: the Anthropic SDK, or litellm with a Claude model (named in `model=`, or sent by a
    class named for Anthropic / Claude)."""
    if site.api == "anthropic":
        return True
    if site.api == "bedrock-converse":  # Bedrock's Converse API: Claude by its model id (`anthropic.claude-...`), at the call
        model = analysis.model_of(site)  # or, where it is a setting, the one its module names (`model_id="anthropic.claude-..."`)
        return bool(CLAUDE.search(model)) if model is not None else CLAUDE_MODEL.search(analysis.ctx.source) is not None
    if site.api == "openai-chat" and not site.callee.startswith("litellm"):
        return _openrouter_claude(analysis, site)
    if not site.callee.startswith("litellm"):
        return False
    model = analysis.model_of(site) or ""
    cls = analysis.ctx.enclosing(site.node, (cst.ClassDef,))
    return bool(CLAUDE.search(model) or (isinstance(cls, cst.ClassDef) and CLAUDE.search(cls.name.value)))


OPENROUTER_CLAUDE = re.compile(r"^anthropic/claude", re.I)


def _openrouter_claude(analysis, site) -> bool:
    """An OpenAI-compatible request to OpenRouter with a Claude model (`model="anthropic/claude-3.5-sonnet"`, written
    or the default of the constructor parameter that sets `self.model`): OpenRouter caches Claude's prompts only at
    `cache_control` breakpoints (or a top-level `cache_control`), as Anthropic does."""
    model = site.arg("model")
    name = string_value(model) or analysis.options.model or _constructor_default(analysis.ctx, site.node, model)
    return name is not None and OPENROUTER_CLAUDE.match(name) is not None


def _constructor_default(ctx, node, expr) -> str | None:
    """`self.model`, set in the class's `__init__` from a parameter (`def __init__(self, model="anthropic/claude-3.5-sonnet")`):
    that parameter's default text."""
    if not (isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self"):
        return None
    cls = ctx.enclosing(node, (cst.ClassDef,))
    init = method_of(cls, "__init__") if isinstance(cls, cst.ClassDef) else None
    if init is None:
        return None
    defaults = {p.name.value: string_value(p.default) for p in init.params.params if p.default is not None}
    for n in descendants(init.body):
        if isinstance(n, cst.Assign) and any(ctx.code(t.target) == ctx.code(expr) for t in n.targets) and isinstance(n.value, cst.Name):
            return defaults.get(n.value.value)
    return None


def _configured_claude(analysis, site, tree_marks) -> str | None:
    """A litellm request whose model is not written at the call or in a constant of the module (a parameter, an
    attribute, a setting), in a project that names a Claude model it can be run with
    (`"anthropic/claude-3-sonnet-20240229"`, a Bedrock or OpenRouter Claude) and sets no breakpoint anywhere: that
    model, or None. The tree searches are memoized per tree (`tree.first_file`)."""
    model = site.arg("model")
    if not (site.callee.startswith("litellm") or site.api == "bedrock-converse") or string_value(model) is not None or analysis.options.model:
        return None
    if isinstance(model, cst.Name) and (bound := [v for _, v in analysis.ctx.assigned_values(model)]) \
            and all(string_value(v) is not None for v in bound):
        return None  # `model=MODEL` with `MODEL = "gpt-4o"`: written in the module, and not a Claude
    owner = analysis.ctx.enclosing(site.node, (cst.ClassDef,)) or analysis.ctx.enclosing_function(site.node)
    if owner is not None and OTHER_PROVIDER.search(owner.name.value):
        return None  # `class GroqModel` / `def call_openai(...)`: the adapter of another provider (Devon: one class each)
    model = tree_claude_model(analysis.ctx.filename)
    if model is None or not caches_prompts(model) or tree_marks():
        return None
    return model


# a class or function named for a provider other than Anthropic (Bedrock and Vertex also serve Claude)
# (a leading word of the name: `GroqModel`, `OpenAiModel`, `call_openai`, `openai_chat`; not `OpenAICompatibleAgent`)
OTHER_PROVIDER = re.compile(r"^(?:OpenA[Ii]|Gpt|GPT|Groq|Ollama|Gemini|Mistral|Cohere|DeepSeek|Deepseek|Fireworks|Qwen|Grok|XAI|Xai)(?![a-z])(?!Compatible)"
                            r"|(?:^|_)(?:openai|gpt|groq|ollama|gemini|mistral|cohere|deepseek|fireworks|qwen|grok|xai)(?:$|_)")


def _for_another_provider(ctx, function, body) -> bool:
    """The body is built for another provider: the function that builds it, or the name it is bound to, is named for
    one (`_openai_body`, `openai_request = {...}`), and where that name also names Claude, the other provider is what it
    converts to (`convert_claude_to_openai`)."""
    parent = ctx.parent(body)
    names = [function.name.value]
    if isinstance(parent, cst.Assign) and len(parent.targets) == 1 and isinstance(parent.targets[0].target, cst.Name):
        names.append(parent.targets[0].target.value)
    for name in names:
        if not OTHER_PROVIDER.search(name):
            continue
        to = re.split(r"_to_|(?<=[a-z])2(?=[a-z])", name, maxsplit=1)
        if not CLAUDE.search(name) or (len(to) == 2 and OTHER_PROVIDER.search("_" + to[1]) and not CLAUDE.search(to[1])):
            return True
    return False


def _in_converse_terms(report):
    """Bedrock's Converse API marks a breakpoint with a `{"cachePoint": {"type": "default"}}` block, not `cache_control`."""
    message = report.message.replace("(or a top-level cache_control)", "").replace("a top-level cache_control", "a cache point")
    message = message.replace("cache_control", "cache point").replace("to Anthropic", "to Claude on Bedrock").replace("put a breakpoint", 'put a `{"cachePoint": {"type": "default"}}` block')
    return Report(report.node, message.replace("  ", " ").replace(" ;", ";"), report.severity, report.fix, confidence=report.confidence)


def _when_claude(report, model: str):
    """A report about a request that goes to Anthropic only when the app is run with a Claude model."""
    return Report(report.node, f"{report.message} (when run with a Claude model: the project names `{model}`, and no "
                  "file of it sets a breakpoint)", report.severity, report.fix, confidence="likely")


def _adapter(analysis, site, callers: list):
    """A provider adapter: the function sends the history its callers pass (and their system prompt or tools),
    so every conversation of the app goes through it, and none of them ever gets a breakpoint."""
    ctx = analysis.ctx
    if conversation_loops(ctx, site.node):
        return None  # a loop here decides by itself whether its history grows (_agent_loop); a retry loop does not count
    found = forwarded_history(ctx, site)
    if found is None:
        return None
    function = ctx.enclosing_function(site.node)
    if any(other is not site and ctx.enclosing_function(other.node) is function and _agent_loop(analysis, other) is not None
           for other in analysis.sites):
        return None  # the function's own loop sends the history again after each tool step: reported there, one place to fix
    # the tools or the system prompt come from the callers too (a builder of the tree is not the callers'; a prompt
    # that starts with text written here is measured by _long_static_prefix)
    carries = [arg for arg in ("tools", "system") if site.arg(arg) is not None
               and (from_parameter(ctx, site.arg(arg)) or _constructor_setting(ctx, site.node, site.arg(arg)))
               and not leading_text(ctx, site.arg(arg))[0]]
    if not carries and site.arg("tools") is not None:  # `chat_completion(self, messages, tools)` hands both to a payload builder
        carries = ["tools"] if _passes_on_parameter(ctx, site, "tools") else []
    if not carries and not _leads_with_a_system_message(ctx, site.arg("messages")):
        return None  # a bare forwarder of messages: the instructions that make a prefix long are out of sight
    if "system" in carries and callers and "tools" not in carries:
        return None  # callers in the tree pass the system prompt: their prompts decide (_prompt_from_callers); with the
        # tools of a tool loop as well, the prefix each turn resends is the tools and the growing history, not the prompt alone
    if one_shot_callers(ctx, ctx.enclosing_function(site.node), found.param):
        return None  # every caller in sight asks one question with a list made for it: no request resends another
    made_with = "system" in carries and not from_parameter(ctx, site.arg("system"))  # self.system_message from __init__
    what = f"their {' and '.join(carries)}" if carries and not made_with else "a system message ahead of it" if not carries else \
        " and ".join(["the system prompt the object was made with", *(["their tools"] if "tools" in carries else [])])
    node = _built_by_caller(ctx, site) or _body_built_before(ctx, site) or site.node
    return Report(node, f"`{found.function}` sends the history its callers pass (`{found.param}`) with {what} to "
                     "Anthropic with no cache_control: every request of every conversation through it prefills the whole prompt "
                     "again and nothing is read from cache; put a breakpoint on the last message (or a top-level cache_control)",
                     confidence="likely")


def _constructor_setting(ctx, node, expr, handed: frozenset[str] | None = None, seen: frozenset[int] = frozenset()) -> bool:
    """`system=self.system_message` where the class's `__init__` sets `self.system_message = system_message` from one of
    its parameters: the prompt the object was made with, which the adapter's users choose (mo.ai.llm.anthropic's
    `system_message`), as much from outside as a parameter of the sending method. Also where `__init__` hands its own
    parameter to a base class of the module (`super().__init__(system_prompt)`, `LLM.__init__(self, system_prompt)`)
    whose `__init__` sets the attribute from the parameter it is handed there (`handed`)."""
    if isinstance(expr, cst.List) and len(expr.elements) == 1 and isinstance(expr.elements[0].value, cst.Dict):
        # Bedrock's `system=[{"text": self.system_message}]`: one text block holding the setting
        expr = next((e.value for e in expr.elements[0].value.elements if isinstance(e, cst.DictElement)
                     and isinstance(e.key, cst.SimpleString) and e.key.value.strip("'\"") == "text"), expr)
    if not (isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self"):
        return False
    cls = ctx.enclosing(node, (cst.ClassDef,))
    init = method_of(cls, "__init__") if isinstance(cls, cst.ClassDef) else None
    if init is None or id(cls) in seen:
        return False
    params = parameters_of(init) if handed is None else set(handed)
    def given(value) -> bool:  # `system_message`, or `system_message or DEFAULT_SYSTEM_MESSAGE` (not `or ""`: no prompt)
        if isinstance(value, cst.BooleanOperation) and isinstance(value.operator, cst.Or):
            if string_value(value.right) == "":
                return False
            value = value.left
        return isinstance(value, cst.Name) and value.value in params
    if any(isinstance(n, cst.Assign) and any(isinstance(t.target, cst.Attribute) and ctx.code(t.target) == ctx.code(expr)
                                             for t in n.targets)
           and given(n.value) for n in descendants(init.body)):
        return True
    # vulnhuntr's `Claude(LLM)`: `super().__init__(system_prompt)`, and `LLM.__init__` sets `self.system_prompt = system_prompt`
    own = parameters_of(init) if handed is None else set(handed)
    bases = {b.value.value: b for b in cls.bases if isinstance(b.value, cst.Name)}
    for call in (n for n in descendants(init.body) if isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute)
                 and n.func.attr.value == "__init__"):
        receiver = call.func.value
        explicit = isinstance(receiver, cst.Name) and receiver.value in bases  # `LLM.__init__(self, ...)`
        if not (explicit or isinstance(receiver, cst.Call) and called_name(receiver) == "super"):
            continue
        args = call.args[1:] if explicit else call.args
        for base in (c for c in ctx.nodes(cst.ClassDef) if c.name.value in bases and c is not cls):
            base_init = method_of(base, "__init__")
            if base_init is None:
                continue
            names = [p.name.value for p in base_init.params.params][1:]  # after self
            mapped = frozenset(
                (arg.keyword.value if arg.keyword is not None else names[i] if i < len(names) else "")
                for i, arg in enumerate(args) if not arg.star and isinstance(arg.value, cst.Name) and arg.value.value in own)
            if mapped and _constructor_setting(ctx, base.body, expr, mapped - {""}, seen | {id(cls)}):
                return True
    return False


def _leads_with_a_system_message(ctx, messages) -> bool:
    """The sent list writes a system message of its own ahead of the history: `[{"role": "system", ...}, *history]`,
    or `[system_message] + history_messages + [user_message]` bound to the name that is sent (one hop), where the first
    element is named for the system prompt and made here (`system_message = build_system_message(...)`)."""
    if messages is None:
        return False
    if SYSTEM_ROLE.search(ctx.code(messages)):
        return True
    if isinstance(messages, cst.Name):
        values = [v for _, v in ctx.assigned_values(messages)]
        if len(values) != 1 or values[0] is None:
            return False
        messages = values[0]
        if SYSTEM_ROLE.search(ctx.code(messages)):
            return True
    first = messages
    while isinstance(first, cst.BinaryOperation):
        first = first.left
    if isinstance(first, cst.List) and first.elements and isinstance(first.elements[0], cst.Element):
        lead = first.elements[0].value
        return isinstance(lead, cst.Name) and SYSTEM_NAME.match(lead.value) is not None
    return False


def _passes_on_parameter(ctx, site, name: str) -> bool:
    """The sending function takes a parameter `name` and hands it on in the call that builds the request's
    arguments (`self._adapt(messages=messages, tools=tools)`, whose return is `**`-passed to the request)."""
    function = ctx.enclosing_function(site.node)
    if function is None or name not in {p.name.value for p in (*function.params.params, *function.params.kwonly_params)}:
        return False
    return any(isinstance(n, cst.Arg) and isinstance(n.value, cst.Name) and n.value.value == name
               and ctx.enclosing_function(n) is function for n in descendants(function.body))


def _unmarked_adapter(analysis, site, tree_marks, callers=()):
    """(likely) An Anthropic adapter in a tree where no file sets a breakpoint: the request sends what the
    function's callers pass (the history, a prompt, the system prompt), so every request of the app goes through
    it and none can ever be read from cache. Its module alone cannot say how long the prompts are; the tree can
    say that nothing anywhere adds a breakpoint (`tree_marks()`: whether it does, searched once per module)."""
    ctx = analysis.ctx
    function = ctx.enclosing_function(site.node)
    if function is None:
        return None
    forwarding = _claude_class_forwards(ctx, site, function) if not callers else None
    whole = _request_passed_whole(ctx, site, function) or forwarding is not None
    if not site.http and not whole:
        return None  # an SDK helper wrapping a prompt string is as often a one-off script with a short prompt
    sent = [site.arg(name) for name in ("messages", "system", "input") if site.arg(name) is not None]
    if not whole and (not sent or not any(from_callers(ctx, expr, function) for expr in sent)):
        return None
    if tree_marks():
        return None
    if _one_question_each(ctx, function, site.arg("messages")):
        return None  # every caller in sight asks one question with a list made for it
    name = (forwarding or function).name.value  # `generate`, whose closure `api_call` makes the request for it
    return Report(_payload_of(ctx, site), f"`{name}` sends what its callers pass to Anthropic with no cache_control, "
                  "and no file of this project sets a breakpoint anywhere: every request through it prefills its whole prompt "
                  "again and nothing is read from cache; put a breakpoint on the system prompt or the last message "
                  "(or a top-level cache_control)", confidence="likely")



def _request_passed_whole(ctx, site, function) -> bool:
    """`async def request(self, request_data: dict): return await client.beta.messages.create(**request_data)` in a
    class named for Anthropic / Claude: a provider client that sends whatever request its callers build, so every
    request of the app to Anthropic goes through it."""
    if site.api != "anthropic" or function is None or any(site.arg(key) is not None for key in ("messages", "system")):
        return False  # the messages or the system prompt in sight (`messages=messages`, `kwargs["messages"] = [...]`): judged by them
    if site.forwarded:
        return False  # a call of the module's own forwarding wrapper (`self.basic_request(prompt, **kwargs)`): judged where it sends
    params = parameters_of(function)
    if function.params.star_kwarg is not None and isinstance(function.params.star_kwarg, cst.Param):
        params = params | {function.params.star_kwarg.name.value}
    passed = any(a.star == "**" and isinstance(a.value, cst.Name) and a.value.value in params for a in site.node.args)
    cls = ctx.enclosing(site.node, (cst.ClassDef,))
    return passed and isinstance(cls, cst.ClassDef) and bool(CLAUDE.search(cls.name.value))


def _claude_class_forwards(ctx, site, function) -> cst.FunctionDef | None:
    """A method named for chatting or generating (`chat`, `achat`, `converse`, `reply`, `generate`, `_create_achat`) of
    a class named for Anthropic / Claude (`class AnthropicLMM`, `class ClaudeWrapper`) that sends the conversation its
    callers hand it, converted but whole (`def chat(self, chat: Sequence[Message])`, `messages = self._convert(chat)`,
    also from a closure the method hands to its retry helper): a library's provider adapter, which every conversation
    of the library goes through, its instructions inside the messages (a system prompt taken off their front,
    `system = messages.pop(0)["content"]`, is theirs too). Not a request with a system prompt of its own (what that
    prompt is decides), not a method that makes one question of a prompt (`messages=[{"role": "user", "content":
    prompt}]`), nor one that loops over conversations. Asked only where no caller's prompt is in sight (those decide:
    `_prompt_from_callers`). The method that sends, or None."""
    cls = ctx.enclosing(site.node, (cst.ClassDef,))
    messages = site.arg("messages")
    outer = ctx.enclosing_function(function)
    handed = None  # the method's parameter a closure reads as it is
    if outer is not None and isinstance(messages, cst.Name) and cls is ctx.enclosing(outer, (cst.ClassDef,)):
        # `def generate(self, messages): converted = self._convert(messages)`, then `def api_call(): return
        # create(messages=converted)` handed to a retry helper: the method sends what it was handed
        bound = [a.value for a in descendants(outer.body) if ctx.enclosing_function(a) is outer and (
            isinstance(a, cst.Assign) and len(a.targets) == 1 and ctx.code(a.targets[0].target) == messages.value
            or isinstance(a, cst.AnnAssign) and a.value is not None and ctx.code(a.target) == messages.value)]
        if messages.value in parameters_of(outer) and not bound:
            function, handed = outer, messages.value  # the closure reads the method's own parameter
        elif len(bound) == 1:
            function, messages = outer, bound[0]
        else:
            return None
    if site.api != "anthropic" or not isinstance(cls, cst.ClassDef) or not CLAUDE.search(cls.name.value) \
            or messages is None or not isinstance(messages, (cst.Name, cst.Call)) or ctx.loops_around(site.node) \
            or not CHAT_METHOD.match(function.name.value):
        return None
    params = parameters_of(function)
    sources = {handed} if handed else set(parameter_sources(ctx, messages, params, within=function))
    given = [p for p in function.params.params if p.name.value in sources]
    if len(given) != 1:
        return None
    system = site.arg("system")
    if system is not None and (set(parameter_sources(ctx, system, params, within=function)) != {given[0].name.value}
                               or _adds_text(ctx, system)):
        return None  # a system prompt of its own (or with text of its own), or the caller's other argument: it decides
    forwards = _a_conversation(ctx, given[0]) and _whole(ctx, function, messages, given[0].name.value) \
        and not _one_question_each(ctx, function, messages) and _called_in_tree(ctx, function.name.value)
    return function if forwards else None


def _adds_text(ctx, system: cst.BaseExpression) -> bool:
    """`f"Today is {now}. " + messages.pop(0)["content"]`: text written here around what the callers' messages hold
    (seen through one name bound once); `messages.pop(0)["content"]` alone adds none."""
    if isinstance(system, cst.Name):
        values = [v for _, v in ctx.assigned_values(system)]
        system = values[0] if len(values) == 1 and values[0] is not None else system
    return any(isinstance(n, (cst.FormattedString, cst.BinaryOperation, cst.ConcatenatedString))
               or (isinstance(n, cst.SimpleString) and not isinstance(ctx.parent(ctx.parent(n)), cst.SubscriptElement)
                   and not isinstance(ctx.parent(n), cst.Arg))
               for n in (system, *descendants(system)))


def _called_in_tree(ctx, name: str) -> bool:
    """Some module of the tree that is not a test calls a function of this name (`self.chat(input)` in the class's
    `__call__` counts): an adapter nothing calls sends nothing (sweep's `get_response_message`, left for another
    client)."""
    from cachelint.check.config import test_path_below
    from cachelint.check.tree import files_calling, root_of

    if not os.path.isfile(ctx.filename):
        return True  # a source with no tree: judged by itself
    root = root_of(ctx.filename)
    return any(not test_path_below(path, root) for path in files_calling(root, name))


def _whole(ctx, function, messages: cst.BaseExpression, param: str) -> bool:
    """The messages sent are the conversation handed in, or that conversation converted: the parameter itself, a call
    given it (`self._convert(chat)`, `list(history)`), or a comprehension over it; not a list written here around
    a text made of it (`[{"role": "user", "content": f"...{listing}"}]`: one question)."""
    if not isinstance(messages, cst.Name):
        values = [messages]
    elif messages.value == param:
        return True
    else:
        values = [v for b, v in ctx.assigned_values(messages) if ctx.enclosing_function(b) is function]
    if not values:
        return False
    for value in values:
        if isinstance(value, cst.Call) and any(isinstance(a.value, cst.Name) and a.value.value == param for a in value.args):
            continue
        if isinstance(value, (cst.ListComp, cst.GeneratorExp)) and isinstance(value.for_in.iter, cst.Name) and value.for_in.iter.value == param:
            continue
        return False
    return True


# a method named for carrying on a conversation or generating its next turn (`generate(messages)`; not
# `generate_message(messages)`, a completion an eval harness asks once per datapoint)
CHAT_METHOD = re.compile(r"^_*a?(?:chat|converse|continue_conversation|respond|reply)(?:_\w+)?$|^_*a?generate$|^_*create_a?chat$")
CONVERSATION_PARAM = re.compile(r"^(?:chat|messages|msgs|history|chat_history|conversation_history)$")


def _a_conversation(ctx, param) -> bool:
    """A parameter that holds a conversation: named for one, or annotated as a sequence of messages."""
    annotation = ctx.code(param.annotation.annotation) if param.annotation is not None else ""
    return bool(CONVERSATION_PARAM.match(param.name.value)) or bool(re.search(r"(?:Sequence|List|list|Iterable)\[\w*Message", annotation))


def _one_question_each(ctx, function, messages) -> bool:
    """The messages sent are one parameter of the function, and every caller in sight passes a list it makes for one
    question (one_shot.one_shot_callers): an evaluation harness or a labeller, where no request resends another."""
    given = parameters_of(function) & names_in(messages) if messages is not None else set()
    return len(given) == 1 and one_shot_callers(ctx, function, given.pop())


def _object_history(analysis, site, tree_marks):
    """(likely) A chat model class that sends its own conversation: the messages are `self.history` (or what a method
    of the class makes of it, `self._get_claude_style_history()`), kept on the object from turn to turn, and no file
    of the project sets a breakpoint: each turn resends every earlier one, and none is read from cache."""
    ctx = analysis.ctx
    cls = ctx.enclosing(site.node, (cst.ClassDef,))
    history = site.arg("messages")
    if not isinstance(cls, cst.ClassDef) or history is None or conversation_loops(ctx, site.node):
        return None
    kept = _object_conversation(ctx, cls, history)
    sender = ctx.enclosing_function(site.node)
    if kept is None or sender is None or bound_afresh(ctx, sender, kept):
        return None
    inherited = any(ctx.code(base.value) not in ("object", "ABC") for base in cls.bases)
    if kept not in grown_attributes(cls) and not inherited:
        return None  # nothing here or in a base class adds turns to it: a fixed list
    if tree_marks():
        return None
    return Report(site.node, f"`{cls.name.value}` sends its conversation `self.{kept}`, kept on the object from turn to turn, "
                     "to Anthropic with no cache_control, and no file of this project sets a breakpoint: each turn prefills every "
                     "earlier turn again and nothing is read from cache; put a breakpoint on the last message (or a top-level "
                     "cache_control)", confidence="likely")


def _object_conversation_through(analysis, site, tree_marks):
    """(likely) The request sends what its function is given, and a method of this module hands it, through at most
    one more call, the conversation its object keeps (`self.call_llm(self.messages)` in `add_message`, which appends
    each turn to `self.messages`), in a project that sets no breakpoint anywhere."""
    from cachelint.check.sender_calls import object_conversation_callers

    kept = object_conversation_callers(analysis.ctx, site)
    if kept is None or tree_marks():
        return None
    function = analysis.ctx.enclosing_function(site.node)
    return Report(_payload_of(analysis.ctx, site), f"`{function.name.value}` sends `{kept}`, a conversation its callers' object keeps "
                  "from turn to turn, to Anthropic with no cache_control, and no file of this project sets a breakpoint: each "
                  "turn prefills every earlier turn again and nothing is read from cache; put a breakpoint on the last message "
                  "(or a top-level cache_control)", confidence="likely")


def _off_switches(analysis):
    """(likely) The module sets breakpoints only behind a switch that the tree declares off and never turns on
    (opt_in_caching.py): every request goes out without one."""
    from cachelint.check.opt_in_caching import breakpoints_behind_off_switches

    for found in breakpoints_behind_off_switches(analysis.ctx):
        yield Report(found.node, f"the breakpoints here are set only when `{found.switch}` is on, which is declared off "
                     f"({found.declared}) and which nothing in this project turns on: every request goes out with no cache_control "
                     "and nothing is read from cache; turn it on by default (or set the breakpoint unconditionally)",
                     confidence="likely")


def _stored_conversation_through(analysis, site, tree_marks):
    """(likely) The request sends what its function is handed, and a caller in the tree hands it a conversation
    rebuilt from the turns an object keeps and adds each new turn to (a chat handler that stores the exchange, then
    resends it all on the next message), in a project that sets no breakpoint anywhere."""
    from cachelint.check.sender_calls import stored_conversation_callers

    found = stored_conversation_callers(analysis.ctx, site)
    if found is None or tree_marks():
        return None
    function = analysis.ctx.enclosing_function(site.node)
    return Report(_payload_of(analysis.ctx, site), f"`{function.name.value}` sends the conversation {found.caller} rebuilds from "
                  f"`{found.stored}`, which keeps every turn, to Anthropic with no cache_control, and no file of this project sets a "
                  "breakpoint: each new message resends all earlier turns and none is read from cache; put a breakpoint on the "
                  "last message (or a top-level cache_control)", confidence="likely")


def _loops_through_senders(analysis, tree_marks):
    """(likely) A loop of this module appends to the list it hands, as `messages`, to a function of the tree that sends it
    (`await generate_text(messages=messages, tools=schemas, model_name=name)`): each pass resends the conversation so far.
    Reported at that call when the request it reaches is litellm's with a Claude model (written, or a setting in a tree
    that names a Claude model; not one the caller names, nor an `f"openai/{name}"`) and no file of the tree sets a
    breakpoint. An SDK's own request is judged in its module, where the breakpoint goes."""
    from cachelint.check.sender_calls import loops_through_a_sender
    from cachelint.check.static_prefix import tree_claude_model

    ctx = analysis.ctx
    if not LOOP_THROUGH_SENDER.search(ctx.source):
        return
    for found in loops_through_a_sender(ctx):
        site = found.site
        model = string_value(site.arg("model")) if site.arg("model") is not None else None
        if "litellm" not in site.callee:
            continue  # an SDK's own request (Anthropic, Bedrock): its module says what it lacks, at the place to fix
        if model is None:  # `completion_with_backoff (litellm.acompletion)` with the model it is handed
            claude = tree_claude_model(ctx.filename)
        else:
            claude = model if CLAUDE.search(model) else None
        if claude is None or not caches_prompts(claude) or tree_marks() or _another_provider_prefix(site.arg("model")):
            continue
        when = f" (when run with a Claude model: the project names `{claude}`)" if model is None else ""
        handed = f"a prompt built from it (`{found.prompt}=`)" if found.prompt is not None else "it"
        yield Report(found.call, f"this loop appends to `{found.history}` and hands {handed} to `{found.sender}`, which sends it to "
                     f"Anthropic (`{site.callee}`){when} with no cache_control, and no file of this project sets a breakpoint: "
                     "each pass prefills the whole conversation again and nothing is read from cache; put a breakpoint on the last "
                     f"message where `{found.sender}` builds the request (or a top-level cache_control)", confidence="likely")


def _another_provider_prefix(model) -> bool:
    """`model=f"openai/{model_name}"`: every request goes to another provider, whatever the name."""
    if isinstance(model, cst.FormattedString) and model.parts and isinstance(model.parts[0], cst.FormattedStringText):
        head = model.parts[0].value
        return "/" in head and not CLAUDE.search(head)
    return False


LOOP_THROUGH_SENDER = re.compile(r"\bmessages\s*=\s*[A-Za-z_]\w*\s*[,)]|\b(?:prompt|user_prompt|system_prompt|user_message|instructions?)\s*=\s*[A-Za-z_]")


def _object_conversation(ctx, cls, history, depth: int = 0):
    """The history-named attribute of `self` that the messages sent are made of: read in the expression, in the value a
    local name is assigned once (or a loop over it fills), or in what a method of the class the expression calls
    returns."""
    if depth > 4:
        return None
    if isinstance(history, cst.Name):
        function = ctx.enclosing_function(history)
        for loop in (n for n in descendants(function) if isinstance(n, cst.For)) if function is not None else ():
            appends = any(isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute) and n.func.attr.value in ("append", "extend")
                          and isinstance(n.func.value, cst.Name) and n.func.value.value == history.value for n in descendants(loop.body))
            found = _object_conversation(ctx, cls, loop.iter, depth + 1) if appends else None
            if found is not None:
                return found  # for message in self.history: converted.append(...)
        values = [v for _, v in ctx.assigned_values(history) if v is not None]
        return _object_conversation(ctx, cls, values[0], depth + 1) if len(values) == 1 else None
    for node in [history, *descendants(history)]:
        if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == "self" \
                and KEPT_HISTORY_ATTRIBUTE.search(node.attr.value) and not LOG_NAME.match(node.attr.value):
            parent = ctx.parent(node)
            if not (isinstance(parent, cst.Call) and parent.func is node):
                return node.attr.value
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and isinstance(node.func.value, cst.Name) \
                and node.func.value.value == "self":
            method = method_of(cls, node.func.attr.value)
            if method is not None:
                for value in ctx.returns_of(method):
                    found = _object_conversation(ctx, cls, value, depth + 1)
                    if found is not None:
                        return found
    return None





def _unsent_payloads(analysis, reported: set[int]):
    """(likely) An Anthropic request body built as a dict (`{"model": ..., "max_tokens": ..., "messages": ...}`)
    in code named for Anthropic / Claude, with the messages the function's callers pass (converted or not; a
    list of new messages written in the body is a one-off question or a record, not a conversation), that no request of this module
    sends (a generic HTTP sender elsewhere posts it), in a tree that sets no breakpoint anywhere."""
    ctx = analysis.ctx
    # builders whose body a request of this module sends itself (`create(**self._kwargs(messages))`): judged there
    sent = {id(function) for site in analysis.sites if _to_anthropic(analysis, site)
            for call in descendants(site.node) if isinstance(call, cst.Call) for function in ctx.called_functions(call)}
    own = [site.arg("messages") for site in analysis.sites if site.arg("messages") is not None]
    named_file = bool(CLAUDE.search(os.path.basename(ctx.filename)) or ANTHROPIC_API.search(ctx.source))
    for node in ctx.nodes(cst.Dict):
        keys = _string_keys(node)
        finished_later = ("messages" in keys) != ("max_tokens" in keys)
        if finished_later and reported:
            continue  # a request of this module that sends what its callers build is reported already: one place to fix
        if finished_later:
            keys = {**_keys_set_later(ctx, node), **keys}  # request = {"messages": ...}; ...; request["max_tokens"] = 4000
        if not {"messages", "max_tokens"} <= set(keys) or id(node) in reported or "cache_control" in ctx.code(node):
            continue
        if any(ctx.contains(node, messages) or ctx.contains(messages, node) for messages in own):
            continue  # a request of this module sends it: judged there
        function = ctx.enclosing_function(node)
        if function is None or id(function) in sent:
            continue
        cls = ctx.enclosing(node, (cst.ClassDef,))
        named = named_file or CLAUDE.search(function.name.value) or (isinstance(cls, cst.ClassDef) and CLAUDE.search(cls.name.value)) \
            or (finished_later and "anthropic_version" in keys)  # Bedrock's body for Claude, its messages set later
        # (a whole body written at once beside `invoke_model` is judged at that request)
        if not named or isinstance(keys["messages"], cst.List) or not from_callers(ctx, keys["messages"], function):
            continue  # a list written here holds new messages (one question, a record): not a conversation passed on
        if _for_another_provider(ctx, function, node):
            continue  # `def _openai_body(...)` beside `_anthropic_body`, `convert_claude_to_openai`: the other provider's request
        if _one_question_each(ctx, function, keys["messages"]):
            continue  # every caller in sight asks one question with a list made for it
        reported.add(id(node))
        posted = _posted_by(ctx, function, node)
        yield Report(posted or node, f"`{function.name.value}` builds an Anthropic request from what its callers pass with no cache_control, "
                     "and no file of this project sets a breakpoint anywhere: every request sent with it prefills its whole "
                     "prompt again and nothing is read from cache; put a breakpoint on the system prompt or the last message "
                     "(or a top-level cache_control)", confidence="likely")


# the test of a switch over providers: `provider == "anthropic"`, `model_family == "anthropic"`, `llm_type == LLMType.CLAUDE`
PROVIDER_TEST = re.compile(r"provider|family|vendor|backend|api_type|llm_type|model_type|anthropic|claude", re.I)
# a framework's chat model of some provider: ChatOpenAI, AzureChatOpenAI, ChatGooglePalm, ChatCohere, ChatOllama, Gemini
OTHER_CHAT_MODEL = re.compile(r"^(?:Azure)?Chat[A-Z]\w*$|^(?:OpenAI|AzureOpenAI|Gemini|Ollama|Groq|MistralAI|Cohere|VertexAI|Bedrock\w*)$")


def _one_provider_of_several(ctx, call: cst.Call) -> bool:
    """The Claude model is made in one branch of a switch over providers (the function that makes it under an `if` makes
    another provider's chat model too), with its model name from configuration: which one runs is the user's setting."""
    own = called_name(call)
    function = ctx.enclosing_function(call)
    tests = [a.test for a in ctx.ancestors(call) if isinstance(a, cst.If) and function is not None and ctx.contains(function, a)]
    if function is None or not any(PROVIDER_TEST.search(ctx.code(test)) for test in tests):
        return False  # `if provider == "anthropic":`, `elif model_family == ANTHROPIC:`: a switch over providers
    if any(CLAUDE_MODEL.search(ctx.code(v)) for a in call.args if a.keyword is not None and isinstance(a.value, cst.Name)
           for _, v in ctx.assigned_values(a.value) if v is not None):
        return False  # `model_name = os.environ.get("MODEL", "claude-sonnet-4-5")`: Claude unless told otherwise
    return any(isinstance(n, cst.Call) and n is not call and called_name(n) != own and OTHER_CHAT_MODEL.match(called_name(n))
               for n in descendants(function))


def _framework_models(analysis):
    """(likely) A framework's Claude chat model (llama_index's `Anthropic`, langchain's `ChatAnthropic`) made in
    a tree that sets no breakpoint anywhere: the framework sends the app's prompts without one unless the
    messages carry it, so nothing the app sends through it is ever read from cache."""
    ctx = analysis.ctx
    places: set[int] = set()  # one finding per function that makes them (a text and a vision model of one context)
    named = [(call, ctx.qualified_name_in(call.func, FRAMEWORK_MODELS)) for call in ctx.nodes(cst.Call)]
    for call, name in sorted(((c, n) for c, n in named if n is not None), key=lambda found: ctx.span(found[0]).row):
        place = id(ctx.enclosing_function(call) or call)
        if place in places or any(a.keyword is not None and a.keyword.value in CACHE_SWITCH for a in call.args):
            continue  # BedrockModel(..., cache_config=CacheConfig(...)): the framework sets the breakpoints itself
        given = next((a.value for a in call.args if a.keyword is not None and a.keyword.value in MODEL_KEYWORDS), None)
        if given is None and call.args and call.args[0].keyword is None and not call.args[0].star:
            given = call.args[0].value  # Claude("claude-sonnet-4-5") / AnthropicModel("claude-...")
        unpacked = given is None and any(a.star == "**" for a in call.args)  # BedrockModel(**settings): a model unknown here
        model = _model_text(ctx, given)
        default = _claude_default(ctx, call, given) if model is None else None
        if default is not None:
            model = default  # `def create_chat_agent(model_name: str = "claude-sonnet-4-5")`: what the agent runs unless told
        if name in AGENT_WITH_MODEL_STRING:
            if model is None or not (PYDANTIC_CLAUDE.match(model) or (default is not None and caches_prompts(model))):
                continue  # pydantic-ai's Agent("openai:gpt-4o"), or a model object made elsewhere
        elif not caches_prompts(model):
            continue  # ChatAnthropic(model="claude-2"): a model before prompt caching
        if name in ANY_PROVIDER_MODELS and not _claude_through(ctx, name, given, model, unpacked):
            continue  # ChatLiteLLM(model="gpt-4o"), BedrockModel(model_id="amazon.nova-pro-v1:0"), or a setting in a
            # project that names no Claude model
        if model is None and _one_provider_of_several(ctx, call) and tree_claude_model(ctx.filename) is None:
            continue  # `if provider == "anthropic": return ChatAnthropic(model=model_name)` beside ChatOpenAI(...), in a
            # project that sets no Claude model as its default: which provider runs is the user's setting
        places.add(place)
        short = name.rsplit(".", 1)[-1]
        asked = _framework_request(ctx, call)
        made = f", made on line {ctx.span(call).row}," if asked is not None else ""
        configured = tree_claude_model(ctx.filename) if model is None and (given is not None or unpacked) and name in ANY_PROVIDER_MODELS else None
        what = f"runs the Claude model this project is set up with (`{configured}`)" if configured else "is a Claude model of this code"
        if default is not None:
            what = f"runs `{default}` unless its caller names another model (the default of `{ctx.enclosing_function(call).name.value}`)"
        yield Report(asked or call, f"`{short}(...)` ({name.split('.')[0]}){made} {what}, and no file of this project sets "
                     "a cache_control breakpoint: the framework sends every prompt through it without one, so nothing is read "
                     "from cache and each request prefills its whole prompt again; " + caching_advice(name), confidence="likely")


def _model_text(ctx, given) -> str | None:
    """The model a framework model is made with: a string, or a name the module binds only to one string
    (`MODEL_ID = "amazon.nova-pro-v1:0"`)."""
    if given is None:
        return None
    if isinstance(given, cst.Name):
        bound = {string_value(v) for _, v in ctx.assigned_values(given) if v is not None}
        return bound.pop() if len(bound) == 1 and None not in bound else None
    return string_value(given)


FRAMEWORK_MODELS = CLAUDE_MODELS | ANY_PROVIDER_MODELS | AGENT_WITH_MODEL_STRING


def _claude_default(ctx, call, given) -> str | None:
    """The Claude model a parameter of the function that makes the framework model defaults to, where the model it is
    made with is worked out from that parameter (`def create_chat_agent(model_provider="anthropic", model_name=
    "claude-sonnet-4-5")`, then `model_obj = create_model_with_provider(model_provider, model_name)` and
    `Agent(model_obj, ...)`): unless a caller says otherwise, the agent runs Claude. None otherwise."""
    function = ctx.enclosing_function(call)
    if function is None or not isinstance(given, cst.Name):
        return None
    defaults = {p.name.value: string_value(p.default) for p in (*function.params.params, *function.params.kwonly_params)
                if p.default is not None and string_value(p.default) is not None}
    claude = {param: text for param, text in defaults.items() if MODEL_PARAM.match(param) and "claude-" in text.lower() and caches_prompts(text)}
    if len(claude) != 1 or any(OTHER_PROVIDER_MODEL.match(text) for text in defaults.values()):
        return None  # `openai_model="gpt-4o", anthropic_model="claude-..."`: which one runs is a switch's choice
    names, seen = {given.value}, set()
    for _ in range(3):
        if names & claude.keys():
            return claude[sorted(names & claude.keys())[0]]
        seen |= names
        names = {n for node in descendants(function.body) if isinstance(node, cst.Assign)
                 for t in node.targets if isinstance(t.target, cst.Name) and t.target.value in seen
                 for n in _value_names(ctx, node.value)} - seen
    return None


def _value_names(ctx, node: cst.CSTNode) -> set[str]:
    """The names read as values in `node` (module.read_names, which leaves out an attribute's, `x.model`), and not a
    keyword's name (`summarizer=None`)."""
    return {n.value for n in read_names(ctx, node) if not (isinstance(ctx.parent(n), cst.Arg) and ctx.parent(n).keyword is n)}


def _claude_through(ctx, name: str, given, model: str | None, unpacked: bool = False) -> bool:
    """A framework model that serves many providers (strands' `BedrockModel` and `LiteLLMModel`, langchain's
    `ChatBedrock`, `ChatLiteLLM`) runs Claude here: the model it is made with names Claude, or is a setting (not a
    literal) in a project that names a Claude model it can be run with; Bedrock's strands model runs Claude when it
    is given no model at all."""
    if model is not None:
        return CLAUDE.search(model) is not None
    if given is None and not unpacked:
        return name in CLAUDE_BY_DEFAULT or tree_claude_model(ctx.filename) is not None
    return tree_claude_model(ctx.filename) is not None


# what a framework's chat model is asked with (langchain's runnables, llama_index's LLMs)
FRAMEWORK_ASKS = frozenset({"invoke", "ainvoke", "generate", "agenerate", "stream", "astream", "batch", "abatch", "predict",
                            "apredict", "predict_messages", "chat", "achat", "complete", "acomplete", "stream_chat", "astream_chat"})


def _framework_request(ctx, call):
    """Where the model made by `call` and kept on the object (`self.llm = ChatAnthropic(...)`) is asked in its class
    (`await self.llm.agenerate(prompts)`): the request a breakpoint belongs to."""
    parent = ctx.parent(call)
    if not isinstance(parent, cst.Assign) or len(parent.targets) != 1:
        return None
    target = parent.targets[0].target
    cls = ctx.enclosing(call, (cst.ClassDef,))
    if not (isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) and target.value.value == "self") or cls is None:
        return None
    for node in descendants(cls):
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in FRAMEWORK_ASKS \
                and ctx.code(node.func.value) == ctx.code(target):
            return node
    return None


def from_callers(ctx, expr, function) -> bool:
    """Whether `expr` is computed from a parameter of `function`: a parameter, or a local assigned from one
    (`system, rest = split(messages)` too) or grown with one (`messages.append({"role": "user", "content": prompt})`)."""
    return bool(parameter_sources(ctx, expr, parameters_of(function), within=function, grown=True, unpack=True))


def _payload_of(ctx, site):
    """Where the breakpoint goes: the dict the sent messages are an entry of when it is built apart from the call
    (`params = {..., "messages": messages}` then `create(**params)`), else the request."""
    messages = site.arg("messages")
    if messages is None or ctx.contains(site.node, messages):
        return site.node
    parent = ctx.parent(messages)
    for _ in range(2):
        if isinstance(parent, cst.Dict):
            return parent
        parent = ctx.parent(parent) if parent is not None else None
    return site.node


POST_KEYWORDS = frozenset({"body", "json", "data", "content"})


def _posted_by(ctx, function, node: cst.Dict):
    """The one call of the function that posts the body (`invoke_model(body=json.dumps(body_kwargs))`,
    `httpx.post(url, json=payload)`): the request the finding is about, reported there."""
    parent = ctx.parent(node)
    if not (isinstance(parent, cst.Assign) and len(parent.targets) == 1 and isinstance(parent.targets[0].target, cst.Name)):
        return None
    name = parent.targets[0].target.value
    posts = [call for call in descendants(function) if isinstance(call, cst.Call) and any(
        arg.keyword is not None and arg.keyword.value in POST_KEYWORDS
        and any(isinstance(n, cst.Name) and n.value == name for n in (arg.value, *descendants(arg.value))) for arg in call.args)]
    return posts[0] if len(posts) == 1 and ctx.span(posts[0]).row > ctx.span(node).row else None


def _keys_set_later(ctx, node: cst.Dict) -> dict[str, cst.BaseExpression]:
    """The keys the dict holds with those set on it after it is bound to a name (`request["system"] = system_prompt`),
    as `callsites.dict_entries` reads a name."""
    from cachelint.check.callsites import dict_entries

    parent = ctx.parent(node)
    if not (isinstance(parent, cst.Assign) and len(parent.targets) == 1 and isinstance(parent.targets[0].target, cst.Name)):
        return {}
    return dict_entries(ctx, parent.targets[0].target, 0)


def _string_keys(node: cst.Dict) -> dict[str, cst.BaseExpression]:
    found: dict[str, cst.BaseExpression] = {}
    for element in node.elements:
        if isinstance(element, cst.DictElement) and isinstance(element.key, cst.SimpleString):
            found[element.key.evaluated_value] = element.value  # type: ignore[index]
    return found


def _fix_place(ctx, site, report) -> int:
    """Where the breakpoint would be added: the payload the sent messages come from when it is built outside the
    call (`**kwargs` posted by a create and a stream path, `**self._kwargs(messages, stream)`, a payload a caller
    builds), else the request itself."""
    messages = site.arg("messages")
    if messages is None and _request_passed_whole(ctx, site, ctx.enclosing_function(site.node)):
        return id(ctx.enclosing(site.node, (cst.ClassDef,)))  # the callers build every request the client's methods send
    return id(messages) if messages is not None and not ctx.contains(site.node, messages) else id(report.node)


def _built_by_caller(ctx, site):
    """The sent messages where a caller of the sending helper builds the payload it passes (`self._sync(request_params)`
    with `request_params = {"messages": ...}`): the place to fix, shared by the helpers that post it."""
    messages = site.arg("messages")
    sender = ctx.enclosing_function(site.node)
    builder = ctx.enclosing_function(messages) if messages is not None else None
    if builder is None or builder is sender:
        return None
    calls_sender = any(isinstance(c, cst.Call) and any(f is sender for f in ctx.called_functions(c)) for c in descendants(builder))
    return messages if calls_sender else None


def _body_built_before(ctx, site):
    """The request body a sending function builds before it posts over HTTP (`payload = {"model": ..., "messages":
    msgs}` ... `session.post(url, json=payload)`): the place a breakpoint goes, reported there. An SDK's method
    handed a dict of its arguments (`client.messages.create(**params)`) is the request itself."""
    if not (isinstance(site.node, cst.Call) and any(a.keyword is not None and a.keyword.value in ("json", "data", "body", "content")
                                                    for a in site.node.args)):
        return None
    messages = site.arg("messages")
    # `payload = {...}`, or `payload = dict(model=..., messages=...)`
    body = next((a for a in ctx.ancestors(messages) if isinstance(a, cst.Dict) or isinstance(a, cst.Call) and called_name(a) == "dict"),
                None) if messages is not None else None
    if body is None or ctx.enclosing_function(body) is not ctx.enclosing_function(site.node):
        return None
    return None if any(n is body for n in descendants(site.node)) else body


CLAUDE = re.compile(r"claude|anthropic", re.I)
ANTHROPIC_API = re.compile(r"[\"']anthropic-version[\"']")
SYSTEM_ROLE = re.compile(r"""["']role["']\s*:\s*["']system["']""")


def _tokens(model, text: str) -> tuple[int, int]:
    """(tokens of `text`, the model's minimum); fewer bytes than the minimum is fewer tokens: no tokenizer needed."""
    minimum = anthropic_minimum(model)
    if len(text.encode("utf-8", "surrogatepass")) < minimum:
        return 0, minimum
    return counter_for("anthropic", model).count(text), minimum


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
    if system is not None:  # written here, or a constant / class attribute of another module of the tree
        texts.append(leading_text(ctx, system)[0])
    return texts
