"""CL401 param-change-mid-conversation."""

from __future__ import annotations

import libcst as cst

from cachelint.check.module import descendants
from cachelint.simulate.models import CACHE_KEY_PARAMS

from cachelint.rules.base import Invalid, Report, Rule

# the cache-key parameters of each API (tool_choice is not part of OpenAI's prefix); an output schema set inside the
# loop is most often structured output turned off after a model failed it, once (a side request with another output
# format is judged below)
PARAMS = {api: tuple(p for p in params if p not in ("response_format", "text")) for api, params in CACHE_KEY_PARAMS.items()}


class ParamChangeMidConversation(Rule):
    code = "CL401"
    what = """
Finds `model`, `tool_choice`, `thinking`, beta headers or reasoning effort chosen anew on each turn of a
conversation loop: assigned inside the loop, or picked with a conditional expression there. Also a model
router that picks the model of each request from a pool (`random.choice(self.models)`, or in turn with a call
counter; not the model after one that failed, picked in an `except` block or by a function that only `except`
blocks call: `(models.index(current) + 1) % len(models)`; camel's `ChatAgent(model=models,
scheduling_strategy="random_model")` or `"round_robin"`, and a `ModelManager` so made, where it is given several backends:
a list, a pool named for models, or a parameter typed as a list of them), wherever the request is sent from (confidence `likely`). Also a model
picked for each turn by a router of what the turn asks (`kwargs["model"] = self._get_routed_model_for_completion(kwargs["messages"],
...)`, `selected_model = MINI if not prediction["requires_actions"] else FULL` after `prediction =
predict_actions_required(user_input)`) where the same function sends it with the conversation; a routed one-off request
is not (confidence `likely`). Also a forced `tool_choice` reset once tools were used
(`replace(settings, tool_choice=None)` under `if tracker.has_used_tools(agent):`, or `tool_choice = "auto"` under
`if iteration == 0:` in the loop that hands it to the sender, also as a closure's default; confidence `likely`),
and a hand-off that swaps the object the request's model comes from inside the loop that keeps the
history (when the tools stay the same: otherwise CL202 says it). Also a side request of the conversation (a
reflection, a retry decision, a recovery turn) sent to the same client with the same store's messages but with
another output format or without the turns' tools (`client.create(messages, tool_choice="none")`, `json_output=`,
`response_format=`, an agent run's `result_type=` / `output_type=` with `message_history=`), confidence `likely`; a
provider adapter that sends one or the other as its caller asks is not, nor the turn whose reply the history goes
on from (`history = reply.all_messages()`).
A value bound inside the loop the same way on every turn is not reported: computed from inputs the loop never
changes on every pass (`model = config.get("model")`), or, under a condition, from names, attributes and
constants only, the condition too (`name = config.model`, then `if name is None: name = f"hosted/{model.name}"`);
a condition on this turn's input or on a call (`if user.startswith("/fast")`, `if traj.num_turns() > 5`) is a switch.
A loop left as soon as the request succeeds (`while True: try: r = create(...); return r`) is a retry, not turns.
Also (`likely`) the model picked from what the conversation holds: set under a test, or by a conditional expression,
that looks in the conversation for an image (`if has_images: conversation.model = image_model` with `has_images =
any(... for entry in conversation.entries)`): while it holds an image, its requests go to another model. (A model
picked by the conversation's size switches once, when it crosses the size, and is not reported.)

Also (`likely`) a cache-key setting written into the dict the requests are sent with, between two requests of one run
or before the recursive call that continues the tool loop (`parameters["function_call"] = "none"` after three searches,
then `return self.query(history, **parameters)`; `params["tool_choice"] = "none"`, a request, `del
params["tool_choice"]`, a second request). Keys set while the dict is first built, in an `except` handler, or after a
request returned on another path are not reported. A router's pool is read through `list(...)` and `.keys()`
(`random.choice(list(self.llms_for_routing.keys()))`).
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
        # a default filled in inside the loop from settings the loop never changes: the same model every turn
        """
from litellm import acompletion
async def rollout(model, traj, tools):
    while True:
        name = model.config.litellm_model_name
        if name is None:
            name = f"hosted_vllm/{model.name}"
        response = await acompletion(model=name, messages=traj.messages(), tools=tools)
        traj.messages().append(response.choices[0].message)
""",
    ]
    INVALID = [
        # the default is the same each turn, but the condition reads this turn's input: a per-turn switch
        Invalid("""
from openai import OpenAI
client = OpenAI()

def chat():
    messages = [{"role": "system", "content": "You are helpful."}]
    while True:
        user = input("> ")
        model = "gpt-4o"
        if user.startswith("/fast"):
            model = "gpt-4o-mini"
        messages.append({"role": "user", "content": user})
        resp = client.chat.completions.create(model=model, messages=messages)
        messages.append({"role": "assistant", "content": resp.choices[0].message.content})
""", line=11, message="assigned inside the conversation loop"),
        # the same shape, but the condition counts turns: the later turns go to another model
        Invalid("""
from litellm import acompletion
async def rollout(model, traj, tools):
    turn = 0
    while True:
        turn += 1
        name = model.config.litellm_model_name
        if turn > 3:
            name = "gpt-4o-mini"
        response = await acompletion(model=name, messages=traj.messages(), tools=tools)
        traj.messages().append(response.choices[0].message)
""", line=9, message="assigned inside the conversation loop"),
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
        Invalid("""
import dataclasses
def settings_for_next_turn(agent, tracker, settings):
    if agent.reset_tool_choice and tracker.has_used_tools(agent):
        return dataclasses.replace(settings, tool_choice=None)
    return settings
""", line=5, message="tool_choice"),
        Invalid("""
class Agent:
    async def step(self):
        messages = await self.context.get_messages()
        return await self.client.create(messages, tools=self.tools)

    async def reflect(self):
        messages = await self.context.get_messages()
        return await self.client.create(messages, tool_choice="none")
""", line=9, message="side request"),
    ]

    without_sites = True

    def check(self, analysis):
        from cachelint.check.conversation import handoffs, per_cycle_arguments, tool_choice_resets, tool_choice_step_resets
        from cachelint.check.history import format_switches, model_switches
        from cachelint.check.static_prefix import conversation_loops

        for found in per_cycle_arguments(analysis.ctx, analysis.sites, "tool_choice"):
            yield Report(found.node, f"the tool_choice handed to the sender changes inside the loop that continues the conversation "
                         f"({found.shown}); on Anthropic it is part of the cached prefix, so each change prefills the conversation "
                         "again; keep one tool_choice per conversation", confidence="likely")

        from cachelint.check.settings_writes import TOOL_KEYS, settings_written_between_requests

        for write in settings_written_between_requests(analysis.ctx, analysis.sites):
            if write.key not in TOOL_KEYS and (write.site is None or analysis.cacheable(write.site)):
                yield Report(write.node, f"`{write.holder}[\"{write.key}\"]` is changed {write.how}, and `{write.holder}` is what the "
                             f"requests are sent with: `{write.key}` is part of the cache key (Anthropic renders tool_choice into the "
                             "prompt; a model's cache holds only its own prefixes), so the next request reads nothing the earlier ones "
                             f"cached; keep one `{write.key}` per conversation", confidence="likely")

        for node in tool_choice_resets(analysis.ctx):
            yield Report(node, "tool_choice is reset once tools have been used: the requests after the first tool call go out "
                         "with another tool_choice than the run's first ones; on Anthropic tool_choice is part of the cached "
                         "prefix, so the first request after the reset prefills the conversation again (keep one tool_choice "
                         "per conversation, or force the tool only on a conversation's first request)", confidence="likely")
        for node, test in tool_choice_step_resets(analysis.ctx):
            yield Report(node, f"tool_choice is changed on a step of the loop (`if {test}`): the loop's later requests go out with "
                         "another tool_choice than its earlier ones, and on Anthropic tool_choice is part of the cached prefix, so "
                         "the first request after the change prefills the conversation again; keep one tool_choice for the loop "
                         "(steer the step with its message), or force the tool only on a conversation's first request",
                         confidence="likely")
        for handoff in handoffs(analysis.ctx, analysis.sites):
            if "tools" not in handoff.params and analysis.cacheable(handoff.site):
                what = ", ".join(f"`{p}`" for p in handoff.params)
                yield Report.at(handoff.site, handoff.node, f"`{handoff.holder}` is swapped here inside the loop that sends the history "
                                f"`{handoff.history}` again: {what} of {analysis.describe_site(handoff.site)} in {handoff.function}() "
                                "come from it, and they are part of the cache key; keep them for the whole conversation")

        from cachelint.check.model_routing import content_routed_models, message_routed_models

        for routed in message_routed_models(analysis.ctx):
            yield Report(routed.node, f"the model of each turn is picked by a router of what the turn asks (`{routed.test}`), and the "
                         "turn sends the whole conversation: the turns of one conversation land on different models, and a model's "
                         "cache holds only the prefixes sent to it, so each switch prefills the whole conversation again; keep one "
                         "model per conversation (route once, when it starts), or route only one-off requests", confidence="likely")

        for routed in content_routed_models(analysis.ctx):
            yield Report(routed.node, f"the model is picked from what the conversation holds (`{routed.test}`): while it holds an image, "
                         "its requests go to another model than the turns before them, and a model's "
                         "cache holds only the prefixes sent to it, so each switch (and each switch back) prefills the whole "
                         "conversation again; keep one model per conversation (describe images with a side request, or pick a "
                         "model that takes them from the start)", confidence="likely")
        for switch in model_switches(analysis.ctx):
            yield Report(switch.node, f"each request goes to a model picked from `{switch.pool}` {switch.how}: the requests of one conversation "
                         "land on different models, and a model's cache holds only the prefixes sent to it; keep one model per "
                         "conversation (pick it once, when the conversation starts)", confidence="likely")
        for switch in format_switches(analysis.ctx):
            yield Report(switch.node, f"a side request sends the conversation `{switch.history}` {switch.how}: the tools and the "
                         "output format are rendered before the messages (or key the provider's cache), so this request reads "
                         "nothing the conversation's turns cached and the next turn reads nothing it cached; send the side "
                         "question with the turns' tools and format (ask in a message), or as its own short conversation",
                         confidence="likely")
        ctx = analysis.ctx
        for site in analysis.sites:
            if not analysis.cacheable(site):
                continue  # nothing of this request is ever cached
            loops = conversation_loops(ctx, site.node)  # not a retry loop
            if not loops:
                continue
            loop = loops[-1]
            for name in PARAMS.get(site.api, ()):
                expr = site.arg(name)
                if expr is None:
                    continue
                found = self._changing(ctx, expr, loop)
                if found is not None:
                    node, how = found
                    yield Report.at(site, node, f"`{name}` of {analysis.describe_site(site)} {how}, so it can change between turns of the conversation; it is part of the cache key")

    def _changing(self, ctx, expr, loop):
        """(node, how) when the value of `expr` is chosen anew inside `loop`."""
        for node in descendants(expr):
            if isinstance(node, cst.IfExp) and not (_loop_invariant(ctx, node, loop) and not _attributes_set_in(ctx, node, loop)):
                return node, "is chosen per turn with a conditional expression"  # `a if a else b` on settings is one value
        if isinstance(expr, cst.Name):
            bindings = list(ctx.assigned_values(expr))
            for binding, value in bindings:
                if value is None or (isinstance(value, (cst.SimpleString, cst.Integer)) and len(bindings) == 1):
                    continue
                if ctx.contains(loop, binding) and not _same_every_turn(ctx, binding, value, loop):
                    return ctx.statement_of(binding), "is assigned inside the conversation loop"
                if ctx.contains(loop, binding) and _reset_after_first_turn(ctx, bindings, value, loop):
                    return ctx.statement_of(binding), ("is set to one value before the conversation loop and to another inside it "
                                                       "(the first turn and the later ones differ)")
        if isinstance(expr, cst.Call):
            for arg in expr.args:
                for name in [n for n in descendants(arg.value) if isinstance(n, cst.Name)]:
                    if any(ctx.contains(loop, b) and not isinstance(b, cst.Param) for b, _ in ctx.assigned_values(name)):
                        return arg.value, f"is computed from `{name.value}`, which changes inside the conversation loop"
        return None


MUTATORS = {"append", "extend", "insert", "pop", "remove", "clear", "update", "setdefault", "popitem", "sort", "reverse"}


def _same_every_turn(ctx, binding, value, loop, depth: int = 0) -> bool:
    """A binding inside the loop that gives the name the same value on every turn: a loop-invariant value, bound on
    every pass or under conditions that are themselves loop-invariant (`name = config.model` then `if name is None:
    name = f"hosted/{model.name}"`: a default filled in the same way each turn)."""
    if depth > 2 or isinstance(ctx.parent(binding), cst.AugAssign):
        return False  # `turn += 1` is another value each turn
    tests = []
    for ancestor in ctx.ancestors(binding):
        if ancestor is loop:
            break
        if isinstance(ancestor, cst.If):
            tests.append(ancestor.test)
        elif isinstance(ancestor, (cst.Try, cst.ExceptHandler, cst.For, cst.While, cst.Match, cst.With)):
            return False
    if (tests or depth) and not all(_plain_data(node) for node in (*tests, value)):
        return False  # a binding made on every pass may call a settings getter; a conditional or followed one may not
    return all(_loop_invariant(ctx, test, loop, depth + 1) for test in tests) and _loop_invariant(ctx, value, loop, depth + 1)


def _plain_data(node) -> bool:
    """Names, attributes, constants and operators only: no call, whose result (`input()`, `router.classify(...)`,
    `traj.num_turns()`) can differ from one turn to the next. (A binding the request reads directly, made on every
    pass, may still call a getter of settings bound outside the loop: `config.get("model")`.)"""
    return not any(isinstance(n, (cst.Call, cst.Await, cst.Yield)) for n in (node, *descendants(node)))


def _loop_invariant(ctx, value, loop, depth: int = 0) -> bool:
    """A value computed inside the loop from inputs the loop never changes: the same on every turn.

    Every name it reads is bound outside the loop, or inside it only the same way on every turn, and not
    mutated inside it, and it calls no volatile function (a clock, a random choice)."""
    from cachelint.check.values import VOLATILE_CALLS

    volatile = set(VOLATILE_CALLS)
    for node in descendants(value):
        if isinstance(node, (cst.Await, cst.Yield)):
            return False  # a conditional expression is as invariant as its condition and branches (checked below)
        if isinstance(node, cst.Call) and ctx.qualified_name_in(node.func, volatile):
            return False
        if not isinstance(node, cst.Name) or _not_a_read(ctx, node):
            continue
        if any(not (bound is not None and _same_every_turn(ctx, binding, bound, loop, depth + 1))
               for binding, bound in _reaching_in_loop(ctx, node, loop)):
            return False
        for call in ctx.calls_on.get(node.value, []):
            if call.func.attr.value in MUTATORS and ctx.contains(loop, call) and ctx.scope_of(call.func.value) is ctx.scope_of(node):
                return False
        for assign in ctx.subscript_assignments.get(node.value, []):
            if ctx.contains(loop, assign):
                return False
    return True


def _reaching_in_loop(ctx, name, loop) -> list:
    """The bindings inside `loop` that can give `name` its value where it is read: all of them, or, after a binding
    made on every pass (`x = settings.model` at the top of the body), only that one and those between it and the read."""
    inside = [(b, v) for b, v in ctx.assigned_values(name) if ctx.contains(loop, b)]
    row = ctx.span(name).row
    before = [(b, v) for b, v in inside if ctx.span(b).row < row]
    killers = [(b, v) for b, v in before if _unconditional(ctx, b, loop) and not isinstance(ctx.parent(b), cst.AugAssign)]
    if not killers:
        return inside
    start = max(ctx.span(b).row for b, _ in killers)
    return [(b, v) for b, v in before if ctx.span(b).row >= start]


def _attributes_set_in(ctx, value, loop) -> bool:
    """An attribute the value reads (`self.reflect_llm`) is assigned inside the loop."""
    read = {ctx.code(n) for n in descendants(value) if isinstance(n, cst.Attribute)}
    for node in descendants(loop):
        if isinstance(node, cst.Assign) and any(ctx.code(t.target) in read for t in node.targets):
            return True
        if isinstance(node, (cst.AugAssign, cst.AnnAssign)) and ctx.code(node.target) in read:
            return True
    return False


def _reset_after_first_turn(ctx, bindings, value, loop) -> bool:
    """`tool_choice = {"type": "any"}` before the loop and `tool_choice = {"type": "auto"}` inside it: the same
    on every later turn, but not the value the first turn sent."""
    text = " ".join(ctx.code(value).split())
    start = ctx.span(loop).row
    return any(other is not None and not ctx.contains(loop, binding) and ctx.span(binding).row < start
               and " ".join(ctx.code(other).split()) != text for binding, other in bindings)


def _unconditional(ctx, node, loop) -> bool:
    """Whether `node` runs on every turn of `loop` (no `if`, `try` or inner loop between them)."""
    for ancestor in ctx.ancestors(node):
        if ancestor is loop:
            return True
        if isinstance(ancestor, (cst.If, cst.Try, cst.ExceptHandler, cst.For, cst.While, cst.Match)):
            return False
    return False


def _not_a_read(ctx, name) -> bool:
    """The attribute part of `x.attr`, or the keyword of `f(k=...)`: not a name the value reads."""
    parent = ctx.parent(name)
    if isinstance(parent, cst.Attribute) and parent.attr is name:
        return True
    return isinstance(parent, cst.Arg) and parent.keyword is name
