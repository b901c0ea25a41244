"""Round 21: what a spent set (holdout25) and a slow real shape taught.

- Many requests on one history in one function (a generated client, a long scripted conversation): each request
  is compared with the requests just before it, and what the loop does to the history is judged once, so the
  work grows with the requests, not with their square (100 requests took about a minute before). The findings are
  the same: the one request that switches the model is reported, and a cut of the history once, not once per
  request that sends it.
"""

from __future__ import annotations

from _lint import lint, lint_tree


def many_requests(count: int, last_model: str = "gpt-4o", cut: bool = False) -> str:
    lines = ["from openai import OpenAI", "", "client = OpenAI()", "", "",
             "def run(task):",
             "    history = [{'role': 'system', 'content': PROMPT}, {'role': 'user', 'content': task}]",
             "    for _ in range(10):"]
    for i in range(count):
        model = last_model if i == count - 1 else "gpt-4o"
        lines.append(f"        reply{i} = client.chat.completions.create(model='{model}', messages=history)")
        lines.append(f"        history.append({{'role': 'assistant', 'content': reply{i}.choices[0].message.content}})")
    if cut:
        lines.append("        history.pop(2)")
    return "\n".join(lines) + "\n"


def test_one_switched_model_among_many_requests_is_reported_once():
    found = lint(many_requests(120, last_model="gpt-4o-mini"), {"CL402"})
    assert [f.row for f in found] == [9 + 2 * 119], found
    assert "gpt-4o-mini" in found[0].message


def test_many_requests_on_one_model_are_quiet():
    assert lint(many_requests(120), {"CL402", "CL203"}) == []


def test_a_cut_of_a_history_many_requests_send_is_reported_once():
    found = lint(many_requests(120, cut=True), {"CL301"})
    assert [f.row for f in found] == [9 + 2 * 120], found


# --- CL301: a trim at the context window, wherever the window is named ----------------------------------------

NEWEST_THAT_FIT = '''
import anthropic

client = anthropic.Anthropic()


def trim_messages(messages, max_tokens):
    if not messages or max_tokens is None:
        return messages
    kept = []
    budget = max_tokens
    for message in reversed(messages):
        if count_tokens(message) > budget:
            break
        kept.append(message)
        budget -= count_tokens(message)
    return list(reversed(kept))


class Compiler:
    def __init__(self, max_tokens=None):
        self.max_tokens = max_tokens or settings.LIMIT

    def run(self, messages):
        while True:
            max_tokens = self.max_tokens - count_tokens(SYSTEM)
            sent = trim_messages(messages, max_tokens=max_tokens)
            reply = client.messages.create(model="claude-sonnet-4-5", max_tokens=1024, system=SYSTEM, messages=sent)
            messages.append({"role": "assistant", "content": reply.content})
'''


def test_newest_messages_that_fit_the_models_input_limit_are_no_window():
    at_the_window = NEWEST_THAT_FIT.replace("settings.LIMIT", "settings.max_input_tokens")
    assert lint(at_the_window, {"CL301"}) == []


def test_newest_messages_that_fit_a_small_budget_are_still_a_window():
    found = lint(NEWEST_THAT_FIT.replace("settings.LIMIT", "settings.history_tokens"), {"CL301"})
    assert [f.row for f in found] == [11], found


EARLY_RETURN = '''
import openai

client = openai.OpenAI()


def truncate_message_content(messages, max_tokens):
    total = sum(count(m["content"]) for m in messages)
    if total <= max_tokens:
        return messages
    kept = [messages[0]]
    budget = max_tokens - count(messages[0]["content"]) - count(messages[-1]["content"])
    used = 0
    for message in reversed(messages[1:-1]):
        if used + count(message["content"]) <= budget:
            used += count(message["content"])
            kept.insert(1, message)
        else:
            break
    kept.append(messages[-1])
    return kept


class Agent:
    def __init__(self, model):
        self.context_window = window_of(model)
        self.history = []

    def step(self, text):
        self.history.append({"role": "user", "content": text})
        self.history = truncate_message_content(self.history, BUDGET)
        reply = client.chat.completions.create(model="gpt-4.1", messages=self.history)
        self.history.append({"role": "assistant", "content": reply.choices[0].message.content})
'''


def test_a_helper_that_returns_the_history_untouched_while_it_fits_the_window_cuts_nothing():
    assert lint(EARLY_RETURN.replace("BUDGET", "self.context_window - 2000"), {"CL301"}) == []


def test_a_helper_handed_a_small_budget_still_cuts_every_turn():
    found = lint(EARLY_RETURN.replace("BUDGET", "4000"), {"CL301"})
    assert [f.row for f in found] == [13], found


TREE_HELPER = {
    "pkg/__init__.py": "",
    "pkg/utils.py": '''
        def truncate_messages(messages, model):
            limit = MODELS.get(model, {}).get("max_input_tokens", 32768)
            total = sum(len(m["content"]) // 4 for m in messages)
            if total <= limit - 100:
                return messages
            longest = max(messages, key=lambda m: len(m["content"]))
            longest["content"] = longest["content"][: limit * 2]
            return messages
        ''',
    "pkg/agent.py": '''
        from litellm import completion
        IMPORT


        def run(messages, model):
            for _ in range(20):
                messages = truncate_messages(messages, model)
                reply = completion(model=model, messages=messages)
                messages.append({"role": "assistant", "content": reply.choices[0].message.content})
        ''',
}


def test_a_trimming_function_of_the_tree_is_judged_by_its_body_not_its_name(tmp_path):
    files = dict(TREE_HELPER, **{"pkg/agent.py": TREE_HELPER["pkg/agent.py"].replace("IMPORT", "from pkg.utils import truncate_messages")})
    assert lint_tree(tmp_path, files, "pkg/agent.py", {"CL301"}) == []


def test_a_trimming_function_of_a_package_out_of_sight_is_judged_by_its_name(tmp_path):
    files = dict(TREE_HELPER, **{"pkg/agent.py": TREE_HELPER["pkg/agent.py"].replace("IMPORT", "from tokentrim import truncate_messages")})
    found = lint_tree(tmp_path, files, "pkg/agent.py", {"CL301"})
    assert [f.row for f in found] == [7], found


# --- CL101: a prompt template's placeholder filled with a clock ----------------------------------------------

PLACEHOLDERS = '''
import os
import time


def replace_variables(text: str) -> str:
    """Fill the variables of a system prompt."""
    text = text.replace("{DIR}", os.getcwd())
    if "{DATE}" in text:
        text = text.replace("{DATE}", str(time.strftime("FORMAT")))
    return text


def replace_variables_dict() -> dict:
    return {
        "{DIR}": os.getcwd(),
        "{DATE}": str(time.strftime("FORMAT")),
    }
'''


def test_a_placeholder_filled_with_the_time_of_day_is_reported_in_both_shapes():
    found = lint(PLACEHOLDERS.replace("FORMAT", "%H:%M %Y-%m-%d"), {"CL101"})
    assert [f.row for f in found] == [9, 16], found
    assert "placeholder `{DATE}`" in found[0].message and "every minute" in found[0].message
    assert all(f.confidence == "likely" for f in found)


def test_a_placeholder_filled_with_the_date_is_quiet():
    assert lint(PLACEHOLDERS.replace("FORMAT", "%Y-%m-%d"), {"CL101"}) == []


def test_a_placeholder_in_a_module_that_never_speaks_of_prompts_is_quiet():
    no_prompt = PLACEHOLDERS.replace("FORMAT", "%H:%M").replace("Fill the variables of a system prompt.", "Fill a log file name.")
    assert lint(no_prompt, {"CL101"}) == []


# --- CL501: an adapter that converts its callers' conversation and streams it from a closure ------------------

CONVERTING_ADAPTER = '''
from anthropic import AsyncAnthropic


class AnthropicBackend:
    async def _generate_stream(self, conversation, llm_api, model_name):
        system_prompt, messages = CONVERT(conversation)
        tools = _convert_tools_to_anthropic_format(llm_api) if llm_api else None

        async def next_token():
            client = AsyncAnthropic()
            params = {"model": model_name, "max_tokens": 1024, "messages": messages}
            if system_prompt:
                params["system"] = system_prompt
            if tools:
                params["tools"] = tools
            async with client.messages.stream(**params) as stream:
                async for event in stream:
                    yield event

        return next_token()
'''


def test_an_adapter_that_converts_its_callers_conversation_and_sends_it_from_a_closure_is_found():
    found = lint(CONVERTING_ADAPTER.replace("CONVERT", "_convert_to_anthropic_messages"), {"CL501"})
    assert [f.row for f in found] == [16], found
    assert "`_generate_stream` sends the history its callers pass (`conversation`)" in found[0].message


def test_a_builder_of_its_own_prompt_from_the_conversation_is_not_a_converter():
    # `summarize(conversation)` writes its own text: the callers' instructions do not reach the request
    assert lint(CONVERTING_ADAPTER.replace("CONVERT", "summarize").replace(
        "_convert_tools_to_anthropic_format(llm_api) if llm_api else None", "None"), {"CL501"}) == []


# --- quiet: a local dict filled in order, a system note appended in a loop ------------------------------------

SCHEMA_TOOLS = '''
import litellm


def convert_val(value):
    if value.startswith("{"):
        properties = {}
        for item in value[1:-1].split(","):
            key, val = item.split(":")
            properties[key.strip()] = {"type": val.strip()}
        return {"type": "object", "properties": properties, "required": list(properties.keys())}
    return {"type": value}


REGISTRY = {}


def register(name, fn):
    REGISTRY[name] = fn


def ask(messages, schema):
    tools = [{"type": "function", "function": {"name": "send_output", "parameters": convert_val(schema)}}]
    REGISTERED = [{"type": "function", "function": {"name": n}} for n in REGISTRY.keys()]
    return litellm.completion(model="gpt-4.1", messages=messages, tools=tools + REGISTERED)
'''


def test_a_local_dict_filled_from_an_ordered_walk_is_in_order_and_a_registry_is_not():
    found = lint(SCHEMA_TOOLS, {"CL201"})
    assert [f.row for f in found] == [23], found
    assert "REGISTRY.keys()" in found[0].message


APPENDED_NOTE = '''
import time


def instantiate(messages, directive, count):
    history = list(messages)
    for i in range(count):
        note = f"This is instantiation {i + 1} of {count} for {directive}. " + "Vary the approach. " * 200
        variation_msg = {"role": "system", "content": note}
        history.append(variation_msg)
        history = directive.instantiate(history)
    return history
'''


def test_a_system_note_appended_to_the_history_on_each_pass_is_the_newest_message():
    assert lint(APPENDED_NOTE, {"CL101"}) == []


# --- CL402: two requests of one conversation with different output schemas -----------------------------------

TWO_SCHEMAS = '''
from litellm import completion


class Explorer:
    def run(self, response_schema, steps):
        for _ in range(steps):
            decision = completion(model="gpt-4.1", messages=self.message_history, response_format=AgentDecision)
            self.message_history.append({"role": "assistant", "content": decision.choices[0].message.content})
            self.message_history.append({"role": "user", "content": read_more()})
        final = completion(model="gpt-4.1", messages=self.message_history, response_format=LAST)
        return final
'''


def test_a_final_request_with_another_output_schema_on_the_same_history_is_reported():
    found = lint(TWO_SCHEMAS.replace("LAST", "response_schema"), {"CL402"})
    assert [f.row for f in found] == [10], found
    assert "response_format=response_schema" in found[0].message and "AgentDecision" in found[0].message


def test_the_same_output_schema_on_every_request_is_quiet():
    assert lint(TWO_SCHEMAS.replace("LAST", "AgentDecision"), {"CL402"}) == []


# --- a value followed two modules away -------------------------------------------------------------------------

RULES_TREE = {
    "app/__init__.py": "",
    "app/rules.py": '''
        import os

        RULES = os.path.expanduser("~/.app/rules")


        def get_all_rules():
            return [f for f in os.listdir(RULES) if f.endswith(".md")]


        def get_default_rules_content():
            parts = []
            for name in get_all_rules():
                parts.append(f"{name}:\\n\\n{open(os.path.join(RULES, name)).read()}")
            return "\\n\\n".join(parts)
        ''',
    "app/prompts.py": '''
        from app.rules import get_default_rules_content


        def create_system_prompt():
            return "You are a notebook agent.\\n\\n" + get_default_rules_content()
        ''',
    "app/agent.py": '''
        import anthropic
        from app.prompts import create_system_prompt

        client = anthropic.Anthropic()


        def run(messages):
            while True:
                system = [{"type": "text", "text": create_system_prompt(), "cache_control": {"type": "ephemeral"}}]
                reply = client.messages.create(model="claude-sonnet-4-5", max_tokens=1024, system=system, messages=messages)
                messages.append({"role": "assistant", "content": reply.content})
        ''',
}


def test_a_listing_two_modules_away_from_the_request_is_found_and_named_where_it_is_made(tmp_path):
    found = lint_tree(tmp_path, RULES_TREE, "app/agent.py", {"CL103"})
    # reported where the listing is made (and sorted), naming the request it reaches
    assert [(f.filename.endswith("app/rules.py"), f.row) for f in found] == [(True, 7)], found
    assert "(reached from agent.py:9)" in found[0].message  # named from the origin's folder


# --- a parameter's default filled from a listing, when the caller passes the parameter -----------------------

DEFAULT_LISTING = {
    "pkg/__init__.py": "",
    "pkg/primitives.py": '''
        import os


        def load_primitives(names=None):
            if names is None:
                names = [p[:-3] for p in os.listdir("primitives") if p.endswith(".js")]
            return [open(f"primitives/{n}.js").read() for n in names]
        ''',
    "pkg/agent.py": '''
        import anthropic
        from pkg.primitives import load_primitives

        client = anthropic.Anthropic()
        BASE = ["mine_block", "craft_item", "place_item"]


        def run(messages):
            while True:
                system = "You write Minecraft code.\\n\\n" + "\\n\\n".join(load_primitives(ARGS))
                block = [{"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}]
                reply = client.messages.create(model="claude-sonnet-4-5", max_tokens=1024, system=block, messages=messages)
                messages.append({"role": "assistant", "content": reply.content})
        ''',
}


def test_a_listing_that_only_fills_a_default_the_caller_passes_is_quiet(tmp_path):
    files = dict(DEFAULT_LISTING, **{"pkg/agent.py": DEFAULT_LISTING["pkg/agent.py"].replace("ARGS", "BASE")})
    assert lint_tree(tmp_path, files, "pkg/agent.py", {"CL103"}) == []


def test_a_listing_that_fills_a_default_the_caller_leaves_out_is_reported(tmp_path):
    files = dict(DEFAULT_LISTING, **{"pkg/agent.py": DEFAULT_LISTING["pkg/agent.py"].replace("ARGS", "")})
    found = lint_tree(tmp_path, files, "pkg/agent.py", {"CL103"})
    assert [(f.filename.endswith("pkg/primitives.py"), f.row) for f in found] == [(True, 6)], found
    assert "(reached from agent.py:10)" in found[0].message


# --- call sites: a partial of an SDK method run in an executor ------------------------------------------------

EXECUTOR_PARTIAL = '''
import asyncio
import functools
import anthropic

client = anthropic.Anthropic()


async def run(history):
    loop = asyncio.get_running_loop()
    while True:
        call = functools.partial(client.messages.create, model="claude-sonnet-4-5", max_tokens=1024, system=SYSTEM,
                                 messages=history)
        reply = await loop.run_in_executor(None, call)
        history.append({"role": "assistant", "content": reply.content})
'''


def test_a_partial_of_an_sdk_method_run_in_an_executor_is_a_request():
    inline = EXECUTOR_PARTIAL.replace("""        call = functools.partial(client.messages.create, model="claude-sonnet-4-5", max_tokens=1024, system=SYSTEM,
                                 messages=history)
        reply = await loop.run_in_executor(None, call)""", """        reply = await loop.run_in_executor(None, functools.partial(
            client.messages.create, model="claude-sonnet-4-5", max_tokens=1024, system=SYSTEM, messages=history))""")
    found = lint(inline, {"CL501"})
    assert [f.row for f in found] == [11], found
    assert "history that grows every turn" in found[0].message


def test_a_partial_of_something_else_run_in_an_executor_is_no_request():
    other = EXECUTOR_PARTIAL.replace("""        call = functools.partial(client.messages.create, model="claude-sonnet-4-5", max_tokens=1024, system=SYSTEM,
                                 messages=history)
        reply = await loop.run_in_executor(None, call)""", """        reply = await loop.run_in_executor(None, functools.partial(
            render_page, model="claude-sonnet-4-5", system=SYSTEM, messages=history))""")
    assert lint(other, {"CL501"}) == []


def test_a_partial_kept_in_a_name_and_run_in_an_executor_is_a_request():
    found = lint(EXECUTOR_PARTIAL, {"CL501"})
    assert [f.row for f in found] == [13], found


# --- quiet: structured output turned off once; tool results of this reply built with a timestamp ----------------

STRUCTURED_OFF = '''
import litellm


def call(messages, tools, response_format):
    for _ in range(20):
        reply = litellm.completion(model="gpt-4.1", messages=messages, tools=tools, response_format=response_format)
        if reply.choices[0].message.tool_calls is None and response_format and looks_wrong(reply):
            response_format = None  # the model failed structured output: turn it off and retry
            continue
        messages.append(reply.choices[0].message)
        messages.extend(run_tools(reply))
'''


def test_structured_output_turned_off_after_a_failure_is_no_switch_per_turn():
    assert lint(STRUCTURED_OFF, {"CL401"}) == []


NEW_TOOL_RESULTS = '''
from datetime import datetime


def package_response(ok, text):
    return f"Status: {'OK' if ok else 'Failed'}, time: {datetime.now().strftime('%H:%M:%S')}\\n{text}"


def tool_messages(response_message):
    out = []
    for tool_call in response_message.tool_calls:
        out.append({"role": "tool", "tool_call_id": tool_call.id, "content": package_response(True, run(tool_call))})
    return out


def replay(history):
    out = []
    for record in history:
        out.append({"role": "tool", "tool_call_id": record.id, "content": package_response(True, record.text)})
    return out
'''


def test_tool_results_of_this_reply_are_new_turns_and_stored_ones_rendered_again_are_not():
    found = lint(NEW_TOOL_RESULTS, {"CL101"})
    assert [f.row for f in found] == [5], found  # the clock, read for the stored turns replay() renders again
    assert lint(NEW_TOOL_RESULTS[:NEW_TOOL_RESULTS.index("def replay")], {"CL101"}) == []
