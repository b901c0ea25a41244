"""CL101 volatile-value-in-prefix."""

from __future__ import annotations

import libcst as cst

from cachelint.check import minted_ids
from cachelint.check.renderers import describe, describe_system, filled_placeholder, is_rendered, is_system_built, rendered_facts, system_facts
from cachelint.check.values import GRANULARITY_WORDS, reported_at_origin
from cachelint.rules.base import Invalid, Report, Rule


class VolatileValueInPrefix(Rule):
    code = "CL101"
    what = """
Finds a time, date, UUID, random number, process id, counter or file timestamp that reaches the cached
prefix of an LLM request: the tools, the system prompt, the instructions, or messages before the newest
turn. It follows the value through assignments, f-strings, `.format`, `%`, `+`, `str.join`, list and dict
literals and functions of the same module, and says how often the value changes and whether it is computed
per call, per conversation or once per process. A counter that starts again in the function that builds the prompt
(`n = 1` ... `n += 1` to number its items, outside any loop or in a loop over a collection such as one lookup's rows)
is the same on every call and is not reported; one kept on the module, the object or an enclosing function, or
counted in a `while` loop, a loop over `range(...)` or a loop that awaits, is; so is the size of the conversation so far
(`user.approximate_context_size(thread_id)`, `num_tokens_from_messages(messages)`), which grows every turn. So is
(`likely`) a step or turn counter that a function named for the system prompt or the instructions it builds is
handed and writes into the text (`def get_system_prompt(target, current_step=0): ... f"Current step: {current_step}"`,
`update_system_prompt(current_iteration=...)`, `"Current step: %d" % current_step`; not `max_steps`, a parameter
annotated as a text, `turn: str`, nor a builder the module calls only at its top level): built again as the run goes
on, each count changes the prompt ahead of the whole conversation. A random draw that a caller makes and hands in as an
argument of the function that builds the prompt (`describe(age=get_random_age(), gender=random.choice(GENDERS))`),
for a request that sends a fresh list of messages with no conversation behind them, is not reported: the draw is what
that request is about (a sampled persona, a sampled case), not noise in a prefix the requests would share; one drawn
for the prompt itself (a random seed block, a sample of examples), or handed to a request that sends a conversation
after it (a nonce per turn), is. Django's
`timezone.now()` is a clock. A date (day or month resolution) is not reported, wherever
it is computed: the prefix changes once a day, which costs one cache write a day, not one a turn.

A system prompt that a framework builds here and sends from elsewhere is recognized by its shape (confidence
`likely`): a message object with the system role (`Message(role="system", content=...)`, a role setting such as
`agent.system_message_role`, `SystemMessage(...)`, `("system", text)`), or what a function named for building
it returns (`get_system_message`, `_build_system_prompt`, `_build_enhance_system_prompt`), or a prompt template's placeholder filled with a value, in
a module that speaks of prompts (`text.replace("{DATE}", time.strftime("%H:%M %Y-%m-%d"))`, or a table of them,
`{"{DATE}": ..., "{USER}": ...}`, or a variable of the dict a template is rendered with,
`prompt_context["current_datetime"] = datetime.now()`; not where the function puts the filled text into a user
message and builds no system message). There only values that change within a day are
reported (not in a builder whose every caller in the tree keeps what it returns for the conversation: in an
`__init__`, on the object in a method that starts one (`start_session`, `set_instructions`), or through a setter of
the object, `self._update_system_prompt(x.make_system_prompt())`), and a lone short f-string (below every minimum cacheable length) is not judged. So are the earlier turns
of a conversation that a function renders into messages again for every request (one message per stored turn, in a
loop, returned): a fresh id or time written there (`call_id = r.call_id or f"call_{uuid.uuid4().hex}"`) makes an
old turn differ on every request (`likely`). The same holds for a converter of one message applied to every stored
turn (`[to_template_message(m) for m in messages]`, a single-dispatch `to_openai.register(...)`) that writes a fresh
tool-call id into what it returns or into the stored message itself (`call["id"] = new_call_id()`); one applied to
a reply parsed once (`for choice in response.choices`) makes new turns, and is not reported; nor is an Anthropic
tool-use block's id in a project that sets no breakpoint anywhere, where nothing is cached.

Messages written as `dict(role="system", content=...)` are read like literals, a clock zoned with `.astimezone()` is
the same clock, and a Jinja template's `render(**context)` lands every value put into its context
(`context.update({"now": ...})`). A prompt renderer that other modules of the project call from two or more places
(a module-level function named for prompts, templates or instructions, or taking such a parameter:
`load_and_render_prompt(template, context)`) is reported once, where the value is read in it (`likely`, naming its
callers), and not again at each caller. A clock read in another module of the tree, through a function there that
builds prompt text (named for a prompt, a system message, instructions, a template, a context or a persona, and
returning text it makes: `get_system_message()`, `prepare_system_prompt()`; also where it gets the clock from a helper
of its module), is reported in that module, at the clock (naming the request it reaches: "reached from agent.py:12"),
once however many modules call it, obeying that module's noqa, per-file ignores and excludes; a clock a function only
hands back (`get_local_time()`, `get_system_time()`, `generate_random_id()`) is reported where the prompt takes it in,
the call to change. (The editor shows such a finding on the document that reaches it.) A clock (`time.time() - self.start_time`) or a counter of a loop's passes that
the module counts up (`self.iteration += 1`) rendered into a prompt text ahead of the conversation the same text holds
(`f"Iteration: {self.iteration}\n...HISTORY:\n{self.conversation.compile_history() or 'None yet.'}"`) is reported
there too (`likely`): the history grows by appending, but behind a value that changes on every pass none of it is
read from cache. And a clock read in a prompt template's own Jinja text (`Current Time: {{now()}}` in a module
constant named for a prompt, as Home Assistant's conversation agents write it; `now().date()` or a format with no
time of day is a date), reported at the expression (`likely`). An agent framework's switch that appends the
current time to the system message of every run (Agno's `add_datetime_to_context=True`, `add_datetime_to_instructions`
in Agno 1 and phidata) is reported at the switch (`likely`). A converter's output is also what it appends to a list its
caller hands it and returns (`self.getMessages(m, dialogue)` ... `return dialogue`), and the stored turns it loops
over may be a local name bound to them (`complete = self._ensure_complete(actual_messages)`).

A value fixed for the conversation (computed when the object that keeps it is made) in the last of the system
messages that open the conversation, after one or more others (`[{"role": "system", "content": rules}, {"role":
"system", "content": examples}, {"role": "system", "content": env_info()}]`), is not reported: every conversation
still shares the instructions before it, and the turns after it differ between conversations anyway. The same message
ahead of the instructions is, and so is one followed by static text (a constant after the value in the message,
`f"Opened at {now}. {TOOL_MANUAL}"`, or constant messages after it, `*EXAMPLES`). A counter that a function nested below the read bumps (`nonlocal n; n += 1`) cannot
have counted yet when the prompt is built, and numbers the same items the same way on every call.

Also (`likely`) a clock filled into a long template named for a prompt, sent as one message
(`EXTRACTION_PROMPT.format(current_datetime=datetime.now().strftime("%H:%M"), message=text)`, a module constant,
one imported from the tree, or a class attribute read through `self`): each call asks its own question, but every
call shares the template's rules, which OpenAI caches on its own from 1,024 tokens. Reported where the static text
after the clock, up to the first placeholder filled per call, reaches that minimum (counted with o200k_base), or
the text before and after it together does while the text before it alone does not; no per-call data may come
before the clock, and a date is not reported (`(datetime.now() + timedelta(days=7)).strftime("%Y-%m-%d")`).
"""
    why = """
Providers and engines reuse KV state only for an exact token prefix. A value that changes between requests
changes every token after it: the whole rest of the prompt is prefilled again (and billed as fresh input or
a cache write) on every call. A date in the newest user message is fine: that turn is not reused yet, and
once sent it stays the same in the history. A prefix that is provably shorter than the provider's minimum
cacheable length (a short system prompt and no history) is never cached, so nothing there is reported.
"""
    example = """
from datetime import datetime
import anthropic

client = anthropic.Anthropic()

def answer(history: list, question: str):
    return client.messages.create(
        model="claude-sonnet-4-5",
        max_tokens=1024,
        system=f"You are a helpful assistant. Current time: {datetime.now():%H:%M:%S}.",
        messages=[*history, {"role": "user", "content": question}],
    )
"""
    instead = """
from datetime import datetime
import anthropic

client = anthropic.Anthropic()
SYSTEM = "You are a helpful assistant."

def answer(history: list, question: str):
    return client.messages.create(
        model="claude-sonnet-4-5",
        max_tokens=1024,
        system=SYSTEM,
        messages=[*history, {"role": "user", "content": f"(Current time: {datetime.now():%H:%M:%S}) {question}"}],
    )
"""
    fix_safety = "none (moving a value changes what the model sees; do it by hand)."
    options = "`volatile-functions`: more qualified names that return volatile values (e.g. `myapp.clock.now`)."

    VALID = [
        # the newest user turn is not reused yet
        """
import anthropic, datetime
client = anthropic.Anthropic()
def ask(q):
    return client.messages.create(model="claude-sonnet-4-5", max_tokens=100, system="Be brief.",
        messages=[{"role": "user", "content": f"{datetime.datetime.now()}: {q}"}])
""",
        # computed, but not sent
        """
import openai, time
client = openai.OpenAI()
def ask(q):
    started = time.time()
    r = client.chat.completions.create(model="gpt-4o", messages=[{"role": "system", "content": "Be brief."}, {"role": "user", "content": q}])
    print(time.time() - started)
    return r
""",
        # no LLM client: not our business
        """
from datetime import datetime
def log(x):
    print(f"{datetime.now()} {x}")
""",
        # a converter that mints ids for a reply parsed once: new turns, stored with their ids
        """
import uuid
def to_message(choice):
    return {"role": "assistant", "tool_calls": [{"id": str(uuid.uuid4()), "type": "function", "function": choice.call}]}
def parse(response):
    return [to_message(c) for c in response.choices]
""",
        # a user message appended once and kept is stable history
        """
from openai import OpenAI
from datetime import date
client = OpenAI()
messages = [{"role": "system", "content": "You are a travel agent."}]
while True:
    messages.append({"role": "user", "content": f"Today is {date.today()}. " + input()})
    reply = client.chat.completions.create(model="gpt-4o", messages=messages)
    messages.append({"role": "assistant", "content": reply.choices[0].message.content})
""",
        # the environment's message, made once per conversation after the instructions: every conversation shares them
        """
import datetime
from litellm import completion
RULES = "You write Python scripts for the user."
class Session:
    def __init__(self):
        env = f"Now: {datetime.datetime.now():%Y-%m-%d %H:%M:%S}. OS: Linux."
        self.conversation = [{"role": "system", "content": RULES}, {"role": "system", "content": env}]
    def ask(self, text):
        self.conversation.append({"role": "user", "content": text})
        return completion(model="gpt-4o", messages=self.conversation)
""",
    ]
    INVALID = [
        # the same environment message ahead of the instructions: no two conversations share them
        Invalid("""
import datetime
from litellm import completion
RULES = "You write Python scripts for the user."
class Session:
    def __init__(self):
        env = f"Now: {datetime.datetime.now():%Y-%m-%d %H:%M:%S}. OS: Linux."
        self.conversation = [{"role": "system", "content": env}, {"role": "system", "content": RULES}]
    def ask(self, text):
        self.conversation.append({"role": "user", "content": text})
        return completion(model="gpt-4o", messages=self.conversation)
""", line=7, message="computed once per conversation"),
        Invalid("""
from datetime import datetime
import anthropic
client = anthropic.Anthropic()
def ask(history):
    return client.messages.create(model="claude-sonnet-4-5", max_tokens=100,
        system=f"You are helpful. Now: {datetime.now().isoformat()}",
        messages=history)
""", line=7, message="changes on every call"),
        Invalid("""
import uuid
from openai import OpenAI
client = OpenAI()
def run(history, task):
    request_id = str(uuid.uuid4())
    system = "Request " + request_id + ". You are a careful planner."
    return client.chat.completions.create(model="gpt-4.1", messages=[{"role": "system", "content": system}, *history, {"role": "user", "content": task}])
""", line=6, message="system prompt"),
        # module level: once per process, a warning
        Invalid("""
import time
from openai import OpenAI
client = OpenAI()
INSTRUCTIONS = "You review code. Session started at %d." % time.time()
def review(diff):
    return client.responses.create(model="gpt-5", instructions=INSTRUCTIONS, input=diff)
""", line=5, message="once per process"),
        # a helper of the same module builds the prompt
        Invalid("""
import anthropic
from datetime import datetime
client = anthropic.Anthropic()
def build_system():
    stamp = datetime.now().strftime("%Y-%m-%d %H:%M")
    return "\\n".join(["You are Acme's support bot.", f"Local time: {stamp}"])
def chat(history):
    return client.messages.create(model="claude-sonnet-4-5", max_tokens=512, system=build_system(), messages=history)
""", line=6, message="every minute"),
        # a turn counter in the system prompt of an agent loop
        Invalid("""
import anthropic
client = anthropic.Anthropic()
messages = []
for turn in range(10):
    messages.append({"role": "user", "content": input()})
    r = client.messages.create(model="claude-sonnet-4-5", max_tokens=512, system=f"Turn {turn} of the session. Be concise.", messages=messages)
""", line=7, message="loop counter"),
        # rebuilt history with timestamps re-rendered each call
        Invalid("""
import openai, time
client = openai.OpenAI()
def reply(history, question):
    messages = [{"role": "system", "content": f"Clock: {time.time()}"}, *history, {"role": "user", "content": question}]
    return client.chat.completions.create(model="gpt-4o-mini", messages=messages)
""", line=5),
        # self.client set in __init__, value from a method
        Invalid("""
import random
from anthropic import AsyncAnthropic
class Agent:
    def __init__(self):
        self.client = AsyncAnthropic()
        self.seed = random.randint(0, 10**6)
    async def step(self, messages):
        return await self.client.messages.create(model="claude-opus-4-5", max_tokens=256, system=f"Seed {self.seed}. Follow the plan.", messages=messages)
""", line=7),
        # a converter applied to every stored turn gives each old tool call a new id (likely)
        Invalid("""
import uuid
def to_template_message(message):
    if message["role"] == "tool":
        return dict(role="tool", content=message["content"], tool_call_id=str(uuid.uuid4()))
    return {"role": message["role"], "content": message["content"]}
def render(tokenizer, messages):
    return tokenizer.apply_chat_template([to_template_message(m) for m in messages], tokenize=False)
""", line=5, message="writes into every stored turn"),
        # a framework's system message, built here and sent by the agent's model class elsewhere (likely)
        Invalid("""
from datetime import datetime
def get_system_message(agent):
    lines = [agent.description, *agent.instructions]
    if agent.add_datetime_to_context:
        lines.append(f"The current time is {datetime.now()}.")
    return Message(role=agent.system_message_role, content="\\n".join(lines))
""", line=6, message="system prompt built on line 7"),
        # an agent framework's switch that appends the time to the system message of every run (likely)
        Invalid("""
from agno.agent import Agent
from agno.db.in_memory import InMemoryDb
agent = Agent(instructions=["You research companies."], db=InMemoryDb(),
              add_datetime_to_context=True, add_history_to_context=True)
""", line=5, message="append the current time"),
    ]

    without_sites = True  # a system prompt built as a message object or by a builder, sent elsewhere

    def check(self, analysis):
        from cachelint.check.gate import holds_shared_renderer, opened_alone
        from cachelint.check.framework_agents import clock_switches
        from cachelint.check.template_clocks import template_clocks

        for clock in template_clocks(analysis.ctx):
            yield Report(clock.node, f"the prompt template `{clock.name}` reads the clock in its own text (`{clock.expression}`): each "
                         "rendering differs to the second, so the prompt changes on every request and everything after that line "
                         "is prefilled again; render the time outside the cached prefix (in the newest message), or at the "
                         "resolution the model needs (the date)", severity="warning", confidence="likely", position=clock.position)
        for switch in clock_switches(analysis.ctx):
            yield Report(switch.node, f"{switch.what}: the system message differs on every run, so no run of a conversation reads the "
                         "history the previous one cached; leave the switch off and put the date (at the resolution the agent needs) "
                         "into the user's message", severity="warning", confidence="likely")
        source = analysis.ctx.source
        if not analysis.sites and opened_alone(source) and not holds_shared_renderer(source):
            yield from _filled_clocks(analysis, set())
            yield from _counters_in_builders(analysis, set())
            return  # a prompts module, analysed for its templates alone
        found = list(analysis.facts({"volatile", "counter"})) + list(system_facts(analysis, {"volatile", "counter"}))
        found += list(rendered_facts(analysis, {"volatile"}))  # an earlier turn rendered again with a fresh id or time
        reported = {id(fact.node) for _, fact in found}
        found += [(site, fact) for site, fact in minted_ids.minted_ids(analysis)
                  if id(fact.node) not in reported and fact.extra.get("source") not in reported]
        for site, fact in found:
            if fact.when == "per conversation" and fact.landing.arg in ("messages", "input") and fact.landing.words != "system prompt":
                continue  # a turn rendered once per conversation and then kept is stable history
            if fact.when == "per conversation" and (fact.landing.closing or _closes_the_system_messages(analysis, site)):
                continue  # an environment message after the instructions, fixed for the conversation: nothing static follows it
            if fact.granularity in ("day", "month"):
                continue  # a date: the prefix changes once a day (one cache miss a day), not between the turns of a conversation
            where = fact.landing.words
            changes = GRANULARITY_WORDS.get(fact.granularity, "changes")
            if fact.when == "per process":
                detail = "it is computed once per process, so the prefix differs between processes, workers and restarts"
            elif fact.when == "per conversation":
                detail = f"it {changes} and is computed once per conversation, so no two conversations share the prefix"
            elif fact.granularity == "call":
                detail = "it changes on every call"
            else:
                detail = f"it {changes} and is computed on every call"
            if minted_ids.is_minted(site):
                message = (f"`{fact.label}`{fact.origin} is {minted_ids.describe(analysis, site, fact)}: an old turn gets a new id "
                           "on every request, so the history differs from the previous request's from there on; "
                           "keep the id the turn was stored with")
                yield Report.at(site, fact.node, message, severity="error")
                continue
            if is_system_built(site) and (placeholder := filled_placeholder(analysis.ctx, site.node)) is not None:
                message = (f"`{fact.label}`{fact.origin} fills the prompt template's placeholder `{placeholder}` (line "
                           f"{analysis.ctx.span(site.node).row}; a prompt by its shape, sent elsewhere): {detail}; every "
                           "prompt filled from it differs from there on, so put the value in the newest message instead")
            else:
                message = f"`{fact.label}`{fact.origin} reaches the {where} of {_place(analysis, site)}: {detail}"
            yield Report.at(site, fact.node, message, severity="error" if fact.severe else "warning", elsewhere=reported_at_origin(fact))
        reported |= {id(fact.node) for _, fact in found}
        yield from _counters_in_builders(analysis, {analysis.ctx.span(fact.node).row for _, fact in found})
        yield from _ahead_of_a_rendered_history(analysis, reported)
        yield from _filled_clocks(analysis, reported)


def _counters_in_builders(analysis, rows: set[int]):
    """(likely) A system prompt's builder writes the step or turn counter it is handed into the prompt
    (builder_counters.py): called again as the run goes on, it changes the prefix of every later request."""
    from cachelint.check.builder_counters import counters_in_system_builders

    for found in counters_in_system_builders(analysis.ctx):
        if analysis.ctx.span(found.node).row in rows:
            continue  # the value flow has followed the count from the loop that makes it: reported there
        yield Report(found.node, f"`{found.builder}` writes the counter `{found.counter}` it is handed into the system prompt: each new "
                     "count changes the prompt ahead of the whole conversation, so when it is built again as the run goes on, "
                     "nothing after it is read from cache; keep the count out of the system prompt (put it in the newest message)",
                     severity="warning", confidence="likely")


def _filled_clocks(analysis, reported: set[int]):
    """(likely) A clock filled into a long one-message template ahead of its static text (template_fill_clocks.py):
    not the value flow's to judge, since the newest message is not reused within a conversation."""
    from cachelint.check.template_fill_clocks import filled_clocks

    for clock in filled_clocks(analysis.ctx):
        if id(clock.node) in reported:
            continue
        changes = GRANULARITY_WORDS.get(clock.granularity, "changes")
        yield Report(clock.node, f"`{clock.label}` fills `{{{clock.placeholder}}}` of a long prompt template ahead of "
                     f"{clock.after:,} tokens of its static text ({clock.shared:,} that every call would share without it): "
                     f"it {changes}, so the prompt differs from there on and that text is prefilled again on every call; put "
                     "the value after the static text (with the call's own data)", severity="warning", confidence="likely")


def _ahead_of_a_rendered_history(analysis, reported: set[int]):
    """(likely) A clock or a counter of the loop's passes rendered into a prompt text ahead of the conversation it holds
    (`f"Iteration: {self.iteration}\nElapsed: {time.time() - start:.1f}s\n...HISTORY:\n{history}"`): the history grows
    by appending, but behind a value that changes on every pass none of it is read from cache."""
    from cachelint.check.text_history import describe, late_histories

    for late in late_histories(analysis.ctx):
        if not late.volatile or id(late.node) in reported:
            continue
        ahead, history = describe(late)
        yield Report(late.node, f"{ahead.split(', ')[0]} changes on every pass and comes before {history} in this prompt text: the "
                     "history grows turn by turn, but behind a clock or a counter none of it is read from cache; render the "
                     "history first and the values of this pass after it", severity="warning", confidence="likely")


def _closes_the_system_messages(analysis, site) -> bool:
    """The system message built here is the last of those that open the conversation's list literal, after one or
    more others (`self.conversation = [{"role": "system", ...}, ..., {"role": "system", "content": env_info()}]`)."""
    from cachelint.check.values import closing_system_message

    if not is_system_built(site):
        return False
    element = analysis.ctx.parent(site.node)
    listed = analysis.ctx.parent(element) if isinstance(element, cst.Element) else None
    return listed is not None and closing_system_message(listed) is site.node


def _place(analysis, site) -> str:
    """The request a finding is about, or the system prompt built here and sent elsewhere."""
    if is_rendered(site):
        return describe(analysis, site)
    return describe_system(analysis, site) if is_system_built(site) else analysis.describe_site(site)
