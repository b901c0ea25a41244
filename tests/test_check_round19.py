"""Round 19: classes read from a spent set's misses and false findings (holdout23: coding agents, chat bots, agent
frameworks, research agents).

- CL301: one conversation of a store kept per chat (`self.messages[chat_id][-10:]`); a history kept to the messages
  younger than a day; Anthropic's server-side tool-result clearing with no `clear_at_least`; the loop's own
  message blanked outside a window of the latest few (`if i not in keep: msg["content"] = ...`). Not: the newest
  messages that fit the model's context window, searched for in a loop; a breakpoint put on the newest user turn
  while walking from the end.
- CL401 / CL203: a cache-key setting written into the request's settings dict between two requests of one run,
  or before the recursive call that continues the tool loop (`parameters["function_call"] = "none"`); a model
  router choosing at random from `list(self.llms_for_routing.keys())`.
- CL501: an SDK resource returned by a property (`self._messages_api.create(...)`) is a request; a client made
  with `client or AsyncAnthropic()` is the SDK's; the keys of `**(kwargs | self.hyperparams)` are the request's.
- CL201: a list of the servers that offer a tool is not a list of tools.
"""

from __future__ import annotations

from _lint import lint

# --- CL301: one conversation of a store kept per chat --------------------------------------------------------

PER_CHAT_WINDOW = '''
from openai import OpenAI

client = OpenAI()


class ChatHistory:
    MAX_MESSAGES = 10

    def __init__(self):
        self.messages = {}

    def add_message(self, chat_id, message):
        if chat_id not in self.messages:
            self.messages[chat_id] = []
        self.messages[chat_id].append(message)
        if len(self.messages[chat_id]) > ChatHistory.MAX_MESSAGES:
            self.messages[chat_id] = self.messages[chat_id][-ChatHistory.MAX_MESSAGES:]

    def get_history(self, chat_id):
        return self.messages.get(chat_id, [])


history = ChatHistory()


def chat(chat_id, text):
    history.add_message(chat_id, {"role": "user", "content": text})
    reply = client.chat.completions.create(model="gpt-4.1", messages=history.get_history(chat_id))
    history.add_message(chat_id, {"role": "assistant", "content": reply.choices[0].message.content})
'''


def test_a_window_over_one_chat_of_a_store_kept_per_chat_is_found():
    found = lint(PER_CHAT_WINDOW, {"CL301"})
    assert [f.row for f in found] == [17], found
    assert "keeps only the latest messages of the conversation `self.messages[chat_id]`" in found[0].message


def test_a_message_of_a_list_taken_by_position_is_not_a_conversation():
    by_position = PER_CHAT_WINDOW.replace("self.messages[chat_id] = self.messages[chat_id][-ChatHistory.MAX_MESSAGES:]",
                                          "self.messages[i] = self.messages[i][-ChatHistory.MAX_MESSAGES:]")
    assert lint(by_position, {"CL301"}) == []


# --- CL301: the newest messages that fit the context window ---------------------------------------------------

FIT_TO_CONTEXT = '''
from anthropic import Anthropic

client = Anthropic()


class Chat:
    def __init__(self, max_context_size=200_000):
        self.max_context_size = max_context_size
        self.chat_history = []

    def get_prompt(self):
        max_size = self.max_context_size - 4096
        keep = len(self.chat_history)
        while keep >= 0:
            prompt = self.chat_history[-keep:]
            if count_tokens(prompt) <= max_size:
                break
            keep -= 1
        return self.chat_history[-keep:]

    def round(self, text):
        self.chat_history.append({"role": "user", "content": text})
        reply = client.messages.create(model="claude-sonnet-4-5", max_tokens=1024, messages=self.get_prompt())
        self.chat_history.append({"role": "assistant", "content": reply.content})
'''


def test_the_newest_messages_that_fit_the_context_window_are_not_a_sliding_window():
    assert lint(FIT_TO_CONTEXT, {"CL301"}) == []


def test_the_same_search_against_a_small_budget_is_a_window():
    small = (FIT_TO_CONTEXT.replace("self.max_context_size - 4096", "self.budget")
             .replace("max_context_size=200_000", "budget=2000").replace("self.max_context_size = max_context_size", "self.budget = budget"))
    found = lint(small, {"CL301"})
    assert [f.row for f in found] == [19], found


# --- CL301: walking from the end -----------------------------------------------------------------------------

NEWEST_MARKED = '''
from anthropic import Anthropic

client = Anthropic()


def apply_cache_control(messages):
    marked = []
    seen = 0
    for turn in reversed(messages):
        if turn["role"] == "user" and seen < 1:
            marked.append({"role": "user", "content": [{**turn["content"][0], "cache_control": {"type": "ephemeral"}}]})
            seen += 1
        else:
            marked.append(turn)
    return list(reversed(marked))


def loop(messages):
    while True:
        reply = client.messages.create(model="claude-sonnet-4-5", max_tokens=1024, messages=apply_cache_control(messages))
        messages.append({"role": "assistant", "content": reply.content})
'''


def test_a_breakpoint_put_on_the_newest_user_turn_while_walking_from_the_end_is_no_rewrite():
    assert lint(NEWEST_MARKED, {"CL301"}) == []


STUBBED = '''
from openai import OpenAI

client = OpenAI()


def stub_old_results(history):
    kept = []
    seen = 0
    for event in reversed(history):
        if event["role"] == "tool":
            seen += 1
            if seen > 3:
                event = {"role": "tool", "content": "(omitted)", "tool_call_id": event["tool_call_id"]}
                event = dict(event)
        kept.append(event)
    return list(reversed(kept))


def loop(history, tools):
    while True:
        reply = client.chat.completions.create(model="gpt-4.1", messages=stub_old_results(history), tools=tools)
        history.append(reply.choices[0].message)
'''


def test_entries_past_the_latest_few_replaced_while_walking_from_the_end_are_found():
    found = lint(STUBBED, {"CL301"})
    assert [f.row for f in found] == [12], found


def test_the_newest_few_changed_while_walking_from_the_end_are_not_older_entries_replaced():
    assert lint(STUBBED.replace("if seen > 3:", "if seen < 2:"), {"CL301"}) == []


BLANKED_OUTSIDE_WINDOW = '''
import copy
from openai import OpenAI

client = OpenAI()


def omit_old_tool_results(history, keep):
    messages = copy.deepcopy(history)
    results = [i for i, m in enumerate(messages) if m["role"] == "tool"]
    kept = results[-keep:]
    for i, msg in enumerate(messages):
        if msg["role"] == "tool" and i not in kept:
            msg["content"] = "Tool result is omitted to save tokens."
    return messages


def run(history, tools):
    while True:
        reply = client.chat.completions.create(model="gpt-4.1", messages=omit_old_tool_results(history, 3), tools=tools)
        history.append(reply.choices[0].message)
'''


def test_the_loops_own_message_blanked_outside_a_window_of_the_latest_is_found():
    found = lint(BLANKED_OUTSIDE_WINDOW, {"CL301"})
    assert [f.row for f in found] == [13], found
    assert "replaces the content of earlier messages" in found[0].message


def test_every_message_normalized_alike_is_no_rewrite():
    alike = BLANKED_OUTSIDE_WINDOW.replace('if msg["role"] == "tool" and i not in kept:', 'if msg["role"] == "tool":').replace(
        '"Tool result is omitted to save tokens."', 'msg["content"].strip()')
    assert lint(alike, {"CL301"}) == []


# --- CL301: a history kept to the messages younger than a day ------------------------------------------------

SLACK_DM = '''
import time
from openai import OpenAI

openai_client = OpenAI()


def respond(client, channel_id, system_prompt):
    past_messages = client.conversations_history(channel=channel_id, limit=100).get("messages", [])
    past_messages.reverse()
    messages_in_context = []
    for message in past_messages:
        seconds = time.time() - float(message.get("ts"))
        if seconds < 86400:
            messages_in_context.append(message)
    messages = [{"role": "system", "content": system_prompt}]
    messages += [{"role": "user", "content": m["text"]} for m in messages_in_context]
    return openai_client.chat.completions.create(model="gpt-4.1", messages=messages)
'''


def test_a_history_kept_to_the_messages_younger_than_a_day_is_found():
    found = lint(SLACK_DM, {"CL301"})
    assert [f.row for f in found] == [11], found
    assert "younger than a span of time" in found[0].message


def test_a_filter_on_what_a_message_is_keeps_a_fixed_start():
    by_kind = SLACK_DM.replace('seconds = time.time() - float(message.get("ts"))', 'bot = message.get("bot_id")').replace(
        "if seconds < 86400:", "if bot is None:")
    assert lint(by_kind, {"CL301"}) == []


# --- CL301: server-side tool-result clearing -----------------------------------------------------------------

CONTEXT_EDITS = '''
from anthropic import AsyncAnthropic

client = AsyncAnthropic()


async def reply(history, tools, system):
    edits = [{
        "type": "clear_tool_uses_20250919",
        "trigger": {"type": "input_tokens", "value": 50000},
        "keep": {"type": "tool_uses", "value": 5},
    }]
    return await client.beta.messages.create(
        model="claude-sonnet-4-5", max_tokens=4096, system=system, tools=tools, messages=history,
        betas=["context-management-2025-06-27"], context_management={"edits": edits},
    )
'''


def test_tool_result_clearing_without_clear_at_least_is_found():
    found = lint(CONTEXT_EDITS, {"CL301"})
    assert [f.row for f in found] == [7], found
    assert "clear_at_least" in found[0].message


def test_tool_result_clearing_that_clears_a_large_step_is_not():
    stepped = CONTEXT_EDITS.replace('"keep": {"type": "tool_uses", "value": 5},',
                                    '"keep": {"type": "tool_uses", "value": 5},\n        "clear_at_least": {"type": "input_tokens", "value": 20000},')
    assert lint(stepped, {"CL301"}) == []


# --- CL401 / CL203: settings written between two requests of a run -------------------------------------------

RECURSIVE_LOOP = '''
import json
from openai import OpenAI

SEARCH_FUNCTIONS = {"web_search"}


class OpenAIModel:
    def __init__(self):
        self.client = OpenAI()
        self.func_call_history = []

    def query(self, chat_history, **kwargs):
        parameters = kwargs
        completion = self.client.chat.completions.create(model="gpt-4.1", messages=chat_history, **parameters)
        resp = completion.choices[0].message
        if resp.function_call:
            name = resp.function_call.name
            self.func_call_history.append(name)
            if len([n for n in self.func_call_history if n in SEARCH_FUNCTIONS]) > 3:
                parameters["function_call"] = "none"
            result = run_function(name, json.loads(resp.function_call.arguments))
            chat_history.append({"role": "function", "content": result, "name": name})
            return self.query(chat_history, **parameters)
        return resp.content
'''


def test_function_call_set_before_the_recursive_call_that_continues_the_tool_loop_is_found():
    found = lint(RECURSIVE_LOOP, {"CL401"})
    assert [f.row for f in found] == [20], found
    assert "`parameters[\"function_call\"]` is changed before the recursive call" in found[0].message


def test_tools_emptied_before_the_recursive_call_are_cl203():
    dropped = RECURSIVE_LOOP.replace('parameters["function_call"] = "none"', 'parameters["functions"] = []')
    found = lint(dropped, {"CL203", "CL401"})
    assert [(f.code, f.row) for f in found] == [("CL203", 20)], found


BETWEEN_TWO_REQUESTS = '''
from openai import AsyncOpenAI

client = AsyncOpenAI()


class Client:
    async def _create(self, params):
        return await client.chat.completions.create(**params)

    async def think_then_act(self, params, messages):
        params["tool_choice"] = "none"
        response = await self._create(params)
        messages.append({"role": "assistant", "content": response.choices[0].message.content})
        params["messages"] = messages
        del params["tool_choice"]
        return await self._create(params)
'''


def test_tool_choice_set_then_deleted_between_two_requests_of_one_run_is_found():
    found = lint(BETWEEN_TWO_REQUESTS, {"CL401"})
    assert [f.row for f in found] == [11], found
    assert "between two requests of the same run" in found[0].message


def test_settings_set_while_the_request_is_first_built_are_one_requests_settings():
    built = '''
    from openai import OpenAI

    client = OpenAI()


    def ask(messages, tools):
        params = {"model": "gpt-4.1", "messages": messages}
        if tools:
            params["tools"] = tools
            params["tool_choice"] = "auto"
        return client.chat.completions.create(**params)
    '''
    assert lint(built, {"CL401", "CL203"}) == []


def test_a_setting_changed_in_an_except_handler_is_a_recovery():
    recovery = '''
    from openai import OpenAI, BadRequestError

    client = OpenAI()


    def ask(params):
        try:
            return client.chat.completions.create(**params)
        except BadRequestError:
            params.pop("tool_choice")
            return client.chat.completions.create(**params)
    '''
    assert lint(recovery, {"CL401"}) == []


def test_a_request_returned_on_another_path_is_not_before_the_settings_that_follow_it():
    routed = '''
    from openai import AsyncOpenAI

    client = AsyncOpenAI()


    async def responses_raw(**kwargs):
        return await client.responses.create(**kwargs)


    async def chat_raw(model, messages, functions, tool_choice):
        if model.startswith("gpt-5.5"):
            return await responses_raw(model=model, input=messages, tools=functions)
        kwargs = {"model": model, "messages": messages}
        if functions:
            kwargs["tools"] = functions
            kwargs["tool_choice"] = tool_choice
        return await client.chat.completions.create(**kwargs)
    '''
    assert lint(routed, {"CL401", "CL203"}) == []


def test_a_side_request_before_the_settings_dict_is_made_is_not_a_request_sent_with_it():
    summary_first = '''
    from openai import AsyncOpenAI

    client = AsyncOpenAI()


    class Helper:
        async def _summarise(self, history):
            return await client.chat.completions.create(model="gpt-4.1-mini", messages=history)

        async def ask(self, history, functions):
            if len(history) > 40:
                await self._summarise(history[:-1])
            common_args = {"model": "gpt-4.1", "messages": history}
            if functions:
                common_args["functions"] = functions
                common_args["function_call"] = "auto"
            return await client.chat.completions.create(**common_args)
    '''
    assert lint(summary_first, {"CL401", "CL203"}) == []


# --- CL401: a model router --------------------------------------------------------------------------------

ROUTER = '''
import random


class RandomRouter:
    def __init__(self, llms_for_routing):
        self.llms_for_routing = llms_for_routing

    def select_llm(self, messages):
        return random.choice(list(self.llms_for_routing.keys()))
'''


def test_a_router_choosing_a_model_at_random_from_a_dict_of_llms_is_found():
    found = lint(ROUTER, {"CL401"})
    assert [f.row for f in found] == [9], found
    assert "self.llms_for_routing" in found[0].message


# --- CL501: an SDK resource behind a property ---------------------------------------------------------------

ENGINE = '''
from anthropic import AsyncAnthropic


class AnthropicEngine:
    def __init__(self, model, client=None, **hyperparams):
        self.model = model
        self.client = client or AsyncAnthropic()
        self.hyperparams = hyperparams

    @property
    def _messages_api(self):
        return self.client.messages

    @staticmethod
    def _prepare_request(messages, functions):
        kwargs = {}
        kwargs["system"] = "\\n".join(m.text for m in messages if m.role == "system")
        if functions:
            kwargs["tools"] = [{"name": f.name, "description": f.desc, "input_schema": f.schema} for f in functions]
        return kwargs, [m.to_dict() for m in messages if m.role != "system"]

    async def predict(self, messages, functions=None, **hyperparams):
        kwargs, prompt_msgs = self._prepare_request(messages, functions)
        return await self._messages_api.create(
            model=self.model, max_tokens=1024, messages=prompt_msgs, **(kwargs | self.hyperparams | hyperparams)
        )
'''


def test_a_request_through_a_property_that_returns_the_sdk_resource_is_found():
    found = lint(ENGINE, {"CL501"})
    assert [f.row for f in found] == [24], found
    assert "`predict` sends the history its callers pass (`messages`) with their tools and system" in found[0].message


def test_the_same_engine_with_a_breakpoint_is_quiet():
    marked = ENGINE.replace("max_tokens=1024, messages=prompt_msgs,", 'max_tokens=1024, messages=prompt_msgs, cache_control={"type": "ephemeral"},')
    assert lint(marked, {"CL501"}) == []


# --- CL201: servers found, not tools merged -----------------------------------------------------------------

SERVERS_WITH_TOOL = '''
from mcp import ClientSession


async def find_servers_with_tool(server_configs, tool_name):
    servers_with_tool = []
    for config in server_configs:
        server_name = config["name"]
        async with ClientSession(*config["params"]) as session:
            listed = await session.list_tools()
            for tool in listed.tools:
                if tool.name == tool_name:
                    servers_with_tool.append(server_name)
                    break
    return servers_with_tool
'''


def test_a_list_of_the_servers_that_offer_a_tool_is_not_a_merge_of_tools():
    assert lint(SERVERS_WITH_TOOL, {"CL201"}) == []


def test_the_tools_themselves_merged_in_listing_order_still_are():
    merged = SERVERS_WITH_TOOL.replace("servers_with_tool.append(server_name)\n                    break", "servers_with_tool.append(tool)")
    found = lint(merged, {"CL201"})
    assert len(found) == 1, found


# --- CL201: tools added by coroutines that run concurrently ---------------------------------------------------

CONCURRENT_SERVERS = '''
import asyncio


class Toolset:
    def __init__(self, servers):
        self._servers = servers
        self._tools = {}

    def add(self, tool):
        self._tools[tool.name] = tool

    async def load_mcp_tools(self):
        async def _connect_server(name, server):
            async with server.client as client:
                for tool in await client.list_tools():
                    server.tools.append(tool)
            for tool in server.tools:
                self.add(tool)
            return name

        tasks = [asyncio.create_task(_connect_server(name, server)) for name, server in self._servers.items()]
        await asyncio.gather(*tasks)
'''


def test_tools_added_by_coroutines_that_connect_servers_concurrently_are_found():
    found = lint(CONCURRENT_SERVERS, {"CL201"})
    assert [f.row for f in found] == [18], found
    assert "runs concurrently for each server" in found[0].message


def test_the_same_servers_connected_one_after_another_are_not_reported_as_concurrent():
    sequential = CONCURRENT_SERVERS.replace(
        "        tasks = [asyncio.create_task(_connect_server(name, server)) for name, server in self._servers.items()]\n"
        "        await asyncio.gather(*tasks)\n",
        "        for name, server in self._servers.items():\n            await _connect_server(name, server)\n")
    assert all("concurrently" not in f.message for f in lint(sequential, {"CL201"}))


# --- CL103: files read into a table that is then sorted -------------------------------------------------------

SKILLS = '''
from pathlib import Path


def load_skills(skills_dir: Path):
    skills_by_name = {}
    for entry in skills_dir.iterdir():
        skill_md = entry / "SKILL.md"
        content = skill_md.read_text()
        skills_by_name[entry.name] = content
    return sorted(skills_by_name.values())


def skills_prompt(skills_dir):
    return "Skills:\\n" + "\\n".join(load_skills(skills_dir))
'''


def test_a_table_of_listed_files_returned_sorted_is_read_in_a_defined_order():
    assert lint(SKILLS, {"CL103"}) == []


def test_the_same_table_walked_unsorted_is_still_found():
    unsorted = SKILLS.replace("return sorted(skills_by_name.values())", "return list(skills_by_name.values())")
    found = lint(unsorted, {"CL103"})
    assert [f.row for f in found] == [6], found


# --- CL301: the older part of the history edited, or cut at a start counted back --------------------------------

PRUNE_OLD_RESULTS = '''
from openai import OpenAI

client = OpenAI()
PROTECT_RECENT = 6


def prune_old_tool_results(messages):
    if len(messages) <= PROTECT_RECENT:
        return
    cutoff = len(messages) - PROTECT_RECENT
    for msg in messages[:cutoff]:
        if msg.get("role") != "tool":
            continue
        msg["content"] = "[old tool result cleared]"


def loop(messages, tools):
    while True:
        prune_old_tool_results(messages)
        reply = client.chat.completions.create(model="gpt-4.1", messages=messages, tools=tools)
        messages.append(reply.choices[0].message)
'''


def test_results_older_than_the_latest_few_cleared_before_every_request_are_found():
    found = lint(PRUNE_OLD_RESULTS, {"CL301"})
    assert [f.row for f in found] == [14], found
    assert "older than the latest few" in found[0].message


def test_the_same_edit_over_the_whole_history_is_a_conversion_made_alike_each_time():
    whole = PRUNE_OLD_RESULTS.replace("for msg in messages[:cutoff]:", "for msg in messages:").replace(
        '"[old tool result cleared]"', 'msg["content"].strip()')
    assert lint(whole, {"CL301"}) == []


TURN_RETENTION = '''
from openai import OpenAI

client = OpenAI()


class Conversation:
    def __init__(self):
        self.messages = []

    def cleanup(self, retention):
        turns = 0
        keep_from = 0
        for idx in range(len(self.messages) - 1, -1, -1):
            if self.messages[idx]["role"] == "user":
                turns += 1
                if turns >= retention:
                    keep_from = idx
                    break
        if keep_from > 0:
            self.messages = self.messages[keep_from:]

    def ask(self, text):
        self.messages.append({"role": "user", "content": text})
        self.cleanup(10)
        reply = client.chat.completions.create(model="gpt-4.1", messages=self.messages)
        self.messages.append({"role": "assistant", "content": reply.choices[0].message.content})
'''


def test_a_history_cut_at_the_start_of_the_latest_turns_counted_back_is_found():
    found = lint(TURN_RETENTION, {"CL301"})
    assert [f.row for f in found] == [20], found


# --- the tree's index of called names -------------------------------------------------------------------------

def test_the_index_of_called_names_finds_calls_and_bound_methods_but_not_definitions(tmp_path, monkeypatch):
    from cachelint.check import tree

    (tmp_path / "defines.py").write_text("def build_prompt(x):\n    return x\n")
    (tmp_path / "calls.py").write_text("from defines import build_prompt\nsystem = build_prompt('a')\n")
    (tmp_path / "hands_on.py").write_text("import asyncio\nasyncio.to_thread(agent.build_prompt, 1)\n")
    (tmp_path / "similar.py").write_text("x = my_build_prompt('a')\n")
    monkeypatch.chdir(tmp_path)
    tree._CALLED.clear()
    tree._FILES.clear()
    found = {p.rsplit("/", 1)[-1] for p in tree.files_calling(str(tmp_path), "build_prompt")}
    assert found == {"calls.py", "hands_on.py"}


# --- CL401: a retry loop left as soon as the request succeeds ---------------------------------------------------

RETRYING_SAMPLER = '''
import openai
from openai import OpenAI


class ResponsesSampler:
    def __init__(self, model, reasoning_model, reasoning_effort=None):
        self.client = OpenAI()
        self.model = model
        self.reasoning_model = reasoning_model
        self.reasoning_effort = reasoning_effort

    def __call__(self, message_list):
        trial = 0
        while True:
            try:
                if self.reasoning_model:
                    reasoning = {"effort": self.reasoning_effort} if self.reasoning_effort else None
                    response = self.client.responses.create(model=self.model, input=message_list, reasoning=reasoning)
                else:
                    response = self.client.responses.create(model=self.model, input=message_list)
                return response.output_text
            except openai.RateLimitError:
                trial += 1
'''


def test_a_setting_bound_inside_a_retry_loop_left_on_success_is_not_a_per_turn_switch():
    assert lint(RETRYING_SAMPLER, {"CL401"}) == []


def test_the_same_binding_in_a_loop_that_goes_on_with_the_reply_is():
    conversation = RETRYING_SAMPLER.replace("                return response.output_text\n",
                                            "                message_list.append({'role': 'assistant', 'content': response.output_text})\n"
                                            "                self.reasoning_effort = None\n")
    found = lint(conversation, {"CL401"})
    assert [f.row for f in found] == [17], found


# --- CL301: a reply chain walked from the newest message back, capped at a count ------------------------------

REPLY_CHAIN = '''
from openai import AsyncOpenAI

client = AsyncOpenAI()


async def on_message(new_msg, nodes, max_messages=25):
    messages = []
    curr_msg = new_msg
    while curr_msg is not None and len(messages) < max_messages:
        node = nodes[curr_msg.id]
        messages.append(dict(role=node.role, content=node.text))
        curr_msg = node.parent_msg
    return await client.chat.completions.create(model="gpt-4.1", messages=messages[::-1])
'''


def test_a_reply_chain_walked_back_and_capped_at_a_message_count_is_found():
    found = lint(REPLY_CHAIN, {"CL301"})
    assert [f.row for f in found] == [9], found
    assert "from the newest message back and stops at `max_messages`" in found[0].message


def test_a_chain_walked_back_with_no_cap_keeps_its_start():
    uncapped = REPLY_CHAIN.replace(" and len(messages) < max_messages", "")
    assert lint(uncapped, {"CL301"}) == []


# --- CL201: a list of tools handed to a discovery call per server ----------------------------------------------

HANDED_TO_DISCOVERY = '''
import contextlib


class Agent:
    def __init__(self, servers):
        self.mcp_servers_config = servers
        self.mcp_tools = []
        self._tools = []

    async def discover_mcp_tools(self):
        for name, config in self.mcp_servers_config.items():
            client = MCPClient()
            try:
                await client.connect_and_discover(name, config, self.mcp_tools)
            except Exception:
                with contextlib.suppress(Exception):
                    await client.cleanup(name)
                continue
        self._tools.extend(self.mcp_tools)
'''


def test_tools_handed_to_a_discovery_call_per_server_are_merged_in_connection_order():
    found = lint(HANDED_TO_DISCOVERY, {"CL201"})
    assert [f.row for f in found] == [14], found
    assert "merged into `self.mcp_tools`" in found[0].message


def test_the_same_tools_sorted_once_discovered_are_not():
    assert lint(HANDED_TO_DISCOVERY.replace("self._tools.extend(self.mcp_tools)",
                                            "self.mcp_tools.sort(key=lambda t: t.name)\n        self._tools.extend(self.mcp_tools)"), {"CL201"}) == []


# --- modules with no request in sight still hold these shapes -------------------------------------------------

def test_a_history_module_with_no_request_is_read_for_an_age_window_and_a_capped_chain():
    history = '''
    import time


    def recent_messages(past_messages):
        kept = []
        for message in past_messages:
            if time.time() - message["ts"] < 86400:
                kept.append(message)
        return kept


    async def chain(new_msg, max_messages):
        messages = []
        msg = new_msg
        while msg is not None and len(messages) < max_messages:
            messages.append({"role": "user", "content": msg.text})
            msg = msg.reference
        return messages[::-1]
    '''
    assert [f.row for f in lint(history, {"CL301"})] == [6, 15]


def test_a_settings_module_with_tool_result_clearing_is_read():
    settings = '''
    CONTEXT_MANAGEMENT = {"edits": [{"type": "clear_tool_uses_20250919", "keep": {"type": "tool_uses", "value": 3}}]}
    '''
    assert [f.row for f in lint(settings, {"CL301"})] == [1]


# --- CL104: a default section, replaced only by a setting, after per-call data --------------------------------

RULES = "Rule: report only concrete, exploitable vulnerabilities with a clear attack path. " * 60

OVERRIDABLE_SECTION = f'''
import anthropic


def finding_prompt(finding, custom_instructions=None):
    if custom_instructions:
        section = custom_instructions
    else:
        section = """{RULES}"""
    return f"""Finding to analyze: {{finding}}

{{section}}
"""
'''


def test_a_long_default_section_after_the_per_call_value_is_found():
    found = lint(OVERRIDABLE_SECTION, {"CL104"})
    assert [f.row for f in found] == [9], found


def test_a_section_that_is_always_a_setting_is_not_measured():
    always = OVERRIDABLE_SECTION.replace(f'        section = """{RULES}"""', "        section = DEFAULT_SECTION_LOADED_AT_RUN_TIME")
    assert lint(always, {"CL104"}) == []


# --- CL401: tool_choice reset after the reply's tool calls were run -------------------------------------------

EPHEMERAL_CHOICE = '''
import asyncio


class Pipeline:
    async def _then_tools(self, chat, next_pipeline):
        results = await asyncio.gather(*[self._run_tool(call) for call in chat.last.tool_calls])
        if self.tool_mode == "api" and next_pipeline.params:
            next_pipeline.params.tool_choice = None
        return await next_pipeline.step()
'''


def test_tool_choice_reset_after_the_replys_tool_calls_were_run_is_found():
    found = lint(EPHEMERAL_CHOICE, {"CL401"})
    assert [f.row for f in found] == [8], found
    assert "tool_choice is reset once tools have been used" in found[0].message


def test_tool_choice_set_before_any_tool_call_ran_is_not_a_reset():
    before = EPHEMERAL_CHOICE.replace(
        "        results = await asyncio.gather(*[self._run_tool(call) for call in chat.last.tool_calls])\n", "").replace(
        "        return await next_pipeline.step()", "        return await next_pipeline.step(chat.last.tool_calls)")
    assert lint(before, {"CL401"}) == []


def test_an_object_made_with_the_context_length_is_no_context_window_budget():
    condense = '''
    class Chain:
        def answer(self, model, api_context_length, chat_history, query):
            custom_llm = OpenAILLM(model, api_context_length)
            formatted_chat_history = []
            for msg in chat_history:
                formatted_chat_history += [HumanMessage(content=msg[0]), AIMessage(content=msg[1])]
            full_prompt = PROMPT.format(chat_history=formatted_chat_history, question=query)
            while custom_llm.num_tokens_from_messages([full_prompt]) >= 4096 - 256:
                formatted_chat_history = formatted_chat_history[2:]
                full_prompt = PROMPT.format(chat_history=formatted_chat_history, question=query)
            return custom_llm.generate(full_prompt)
    '''
    found = lint(condense, {"CL301"})
    assert [f.row for f in found] == [9], found


# --- CL203: the last pass of two loops that send the same name ------------------------------------------------

TWO_LOOPS = '''
class ToolCallingLLM:
    def call(self, messages, tools):
        i = 0
        while i < self.max_steps:
            i += 1
            tools = None if i == self.max_steps else tools
            reply = self.llm.completion(messages=messages, tools=tools)
            messages.append(reply)

    def call_stream(self, messages, tools):
        i = 0
        while i < self.max_steps:
            i += 1
            tools = None if i == self.max_steps else tools
            reply = self.llm.completion(messages=messages, tools=tools, stream=True)
            messages.append(reply)
'''


def test_the_last_pass_of_each_of_two_loops_sending_the_same_name_is_found():
    found = lint(TWO_LOOPS, {"CL203"})
    assert [f.row for f in found] == [6, 14], found


# --- the review of round 19's change: shapes that must stay quiet (each reproduced on the change first) ---------

REVIEWED_QUIET = {
    "chain_hex": "from openai import OpenAI\nclient = OpenAI()\n\ndef gather(msg):\n    messages = []\n    while msg is not None and len(messages) < 0x10:\n        messages.append({\"role\": \"user\", \"content\": msg.text})\n        msg = msg.parent_msg\n    return client.chat.completions.create(model=\"gpt-4o\", messages=messages[::-1])\n",
    "settings_classifier": "import anthropic\nclient = anthropic.Anthropic()\nSYSTEM = \"You are a careful assistant for our support desk. \" * 200\n\ndef answer(history, toolsets):\n    params = {\"model\": \"claude-sonnet-4-5\", \"max_tokens\": 1024, \"system\": SYSTEM, \"messages\": history}\n    topic = client.messages.create(model=\"claude-haiku-4-5\", max_tokens=5,\n                                   messages=[{\"role\": \"user\", \"content\": \"One word topic: \" + history[-1][\"content\"]}])\n    params[\"tools\"] = toolsets[topic.content[0].text.strip()]\n    return client.messages.create(**params)\n",
    "settings_branches": "import anthropic\nclient = anthropic.Anthropic()\nSYSTEM = \"You are a careful assistant for our support desk. \" * 200\n\ndef answer(history, fast, tools):\n    params = {\"model\": \"claude-sonnet-4-5\", \"max_tokens\": 1024, \"system\": SYSTEM, \"messages\": history, \"tools\": tools}\n    if fast:\n        reply = client.messages.create(**params)\n    else:\n        params[\"tool_choice\"] = {\"type\": \"any\"}\n        reply = client.messages.create(**params)\n    return reply\n",
    "settings_annassign": "from typing import Any\nfrom openai import OpenAI\nclient = OpenAI()\n\ndef answer(history, question, tools):\n    summary = client.chat.completions.create(model=\"gpt-4o-mini\", messages=history + [{\"role\": \"user\", \"content\": \"Summarize\"}])\n    params: dict[str, Any] = {\"model\": \"gpt-4o\", \"messages\": [{\"role\": \"system\", \"content\": summary.choices[0].message.content},\n                                                              {\"role\": \"user\", \"content\": question}]}\n    params[\"tools\"] = tools\n    return client.chat.completions.create(**params)\n",
    "fit_int": "from openai import OpenAI\nclient = OpenAI()\n\nclass Chat:\n    def __init__(self, max_context_size=8192):\n        self.max_context_size = max_context_size\n        self.history = []\n\n    def count(self, messages):\n        return sum(len(m[\"content\"]) for m in messages) // 4\n\n    def fitted(self):\n        max_size = int(self.max_context_size * 0.9)\n        keep = len(self.history)\n        while keep > 0:\n            prompt = self.history[-keep:]\n            if self.count(prompt) <= max_size:\n                break\n            keep -= 1\n        return self.history[-keep:]\n\n    def ask(self, text):\n        self.history.append({\"role\": \"user\", \"content\": text})\n        reply = client.chat.completions.create(model=\"gpt-4o\", messages=self.fitted())\n        self.history.append({\"role\": \"assistant\", \"content\": reply.choices[0].message.content})\n        return reply\n",
    "age_ratelimit": "import time\nfrom openai import OpenAI\nclient = OpenAI()\n\ndef too_many_recent(user_messages):\n    recent = []\n    for m in user_messages:\n        if time.time() - m[\"ts\"] < 60:\n            recent.append(m)\n    return len(recent) > 5\n\ndef reply(user_messages, history):\n    if too_many_recent(user_messages):\n        return \"Slow down\"\n    return client.chat.completions.create(model=\"gpt-4o\", messages=history)\n",
    "concurrent_sorted": "import asyncio\nfrom anthropic import AsyncAnthropic\n\nclass Host:\n    def __init__(self, servers):\n        self.servers = servers\n        self.tools = []\n        self.client = AsyncAnthropic()\n\n    async def connect(self, name, session):\n        listed = await session.list_tools()\n        for tool in listed.tools:\n            self.tools.append({\"name\": tool.name, \"description\": tool.description, \"input_schema\": tool.inputSchema})\n\n    async def start(self):\n        await asyncio.gather(*[self.connect(name, s) for name, s in self.servers.items()])\n        self.tools.sort(key=lambda t: t[\"name\"])\n\n    async def ask(self, messages):\n        return await self.client.messages.create(model=\"claude-sonnet-4-5\", max_tokens=1024, tools=self.tools, messages=messages)\n",
    "concurrent_keyed": "import asyncio\nfrom anthropic import AsyncAnthropic\n\nclass Host:\n    def __init__(self, servers):\n        self.servers = servers\n        self.server_tools = {name: [] for name in servers}\n        self.client = AsyncAnthropic()\n\n    async def connect(self, name, session):\n        listed = await session.list_tools()\n        for tool in listed.tools:\n            self.server_tools[name].append({\"name\": tool.name, \"description\": tool.description, \"input_schema\": tool.inputSchema})\n\n    async def start(self):\n        await asyncio.gather(*[self.connect(name, s) for name, s in self.servers.items()])\n\n    def tools(self):\n        return [t for name in sorted(self.server_tools) for t in self.server_tools[name]]\n\n    async def ask(self, messages):\n        return await self.client.messages.create(model=\"claude-sonnet-4-5\", max_tokens=1024, tools=self.tools(), messages=messages)\n",
    "edits_later_key": "import anthropic\nclient = anthropic.Anthropic()\n\ndef build_edit(min_tokens):\n    edit = {\"type\": \"clear_tool_uses_20250919\", \"trigger\": {\"type\": \"input_tokens\", \"value\": 100000}}\n    edit[\"clear_at_least\"] = {\"type\": \"input_tokens\", \"value\": min_tokens}\n    return edit\n\ndef run(messages, tools):\n    return client.beta.messages.create(model=\"claude-sonnet-4-5\", max_tokens=1024, messages=messages, tools=tools,\n                                       context_management={\"edits\": [build_edit(20000)]}, betas=[\"context-management-2025-06-27\"])\n",
    "edits_update": "import anthropic\nclient = anthropic.Anthropic()\nMINIMUM = {\"clear_at_least\": {\"type\": \"input_tokens\", \"value\": 20000}}\n\ndef run(messages, tools):\n    edit = dict({\"type\": \"clear_tool_uses_20250919\"}, **MINIMUM)\n    return client.beta.messages.create(model=\"claude-sonnet-4-5\", max_tokens=1024, messages=messages, tools=tools,\n                                       context_management={\"edits\": [edit]}, betas=[\"context-management-2025-06-27\"])\n",
}


def test_the_reviewed_shapes_make_no_finding_and_no_crash():
    for name, source in REVIEWED_QUIET.items():
        codes = {"CL999"} if name == "chain_hex" else {"CL999", "CL201", "CL203", "CL301", "CL401"}  # a hex cap: a window, no crash
        found = lint(source, codes)
        assert found == [], (name, found)


def test_a_cut_made_every_turn_in_a_loop_that_only_logs_the_budget_is_still_found():
    found = lint(FIT_SUPPRESSED, {"CL301"})
    assert len(found) == 1, found


FIT_SUPPRESSED = "from openai import OpenAI\nclient = OpenAI()\n\ndef chat_loop(messages, tools, max_context_tokens):\n    while True:\n        messages = messages[-20:]\n        used = sum(len(str(m)) for m in messages) // 4\n        if used > max_context_tokens:\n            print(\"warning: prompt larger than the context window\")\n        reply = client.chat.completions.create(model=\"gpt-4o\", messages=messages, tools=tools)\n        messages.append(reply.choices[0].message)\n        if not reply.choices[0].message.tool_calls:\n            return reply\n"
