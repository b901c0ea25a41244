"""Round 35: what a spent set (holdout39) taught. Each class is written here in its own words, with the shape
beside it that must stay quiet."""

from __future__ import annotations

from _lint import lint

# --- CL301: the window a walk back from the newest message makes, not the repair after it ----------------------------

CUT_INDEX_AFTER_A_COUNT = '''
    import json
    from openai import OpenAI

    client = OpenAI()


    class Model:
        MAX_MESSAGE_HISTORY = 42

        def send(self, messages):
            non_tool_count = 0
            cutoff_idx = 0
            for i in range(len(messages) - 1, -1, -1):
                if messages[i]["role"] != "tool":
                    non_tool_count += 1
                    if non_tool_count > self.MAX_MESSAGE_HISTORY:
                        cutoff_idx = i + 1
                        break
            messages = messages[cutoff_idx:]

            # the first message cannot be a tool result
            while len(messages) > 0 and messages[0]["role"] == "tool":
                messages = messages[1:]
            return client.chat.completions.create(model="gpt-4o", messages=messages)
'''

SLICED_INSIDE_THE_WALK = '''
    import tiktoken
    from openai import OpenAI

    client = OpenAI()


    class RollingMemory:
        def __init__(self, token_limit=8000):
            self.token_limit = token_limit
            self.encoding = tiktoken.get_encoding("cl100k_base")

        def messages(self, boot_messages, history):
            total = 0
            for i in reversed(range(len(history))):
                total += len(self.encoding.encode(history[i]["content"]))
                if total > self.token_limit:
                    history = history[i + 1:]
                    break
            while history and history[0]["role"] != "user":
                history = history[1:]
            return boot_messages + history

        def ask(self, boot_messages, history):
            return client.chat.completions.create(model="gpt-4o", messages=self.messages(boot_messages, history))
'''

WALKED_BACK_BY_HAND = '''
    class Conversation:
        def __init__(self):
            self.messages = []

        def get_messages_for_api(self, max_chars: int = 100000):
            result = []
            total_chars = 0
            i = len(self.messages) - 1
            while i >= 0:
                msg = self.messages[i]
                msg_chars = len(msg["content"])
                if total_chars + msg_chars > max_chars and result:
                    break
                result.insert(0, msg)
                total_chars += msg_chars
                i -= 1
            while result and result[0]["role"] not in ("user",):
                result.pop(0)
            return result
'''

CONTEXT_SIZED_CHARACTERS = WALKED_BACK_BY_HAND.replace("max_chars: int = 100000", "max_chars: int = 400000")

REPAIR_ALONE = '''
    from openai import OpenAI

    client = OpenAI()


    def send(history):
        messages = list(history)
        while messages and messages[0]["role"] != "user":
            messages.pop(0)
        return client.chat.completions.create(model="gpt-4o", messages=messages)
'''

BUDGET_RUN_DOWN = '''
    class VLLM:
        def __init__(self, max_input_tokens: int = 10000):
            self.max_input_tokens = max_input_tokens

        def count(self, messages):
            return sum(len(m["content"]) // 4 for m in messages)

        def _truncate_messages(self, messages):
            system_messages = [m for m in messages if m["role"] == "system"]
            non_system_messages = [m for m in messages if m["role"] != "system"]
            result = system_messages.copy()
            token_budget = self.max_input_tokens - self.count(result)
            for message in reversed(non_system_messages):
                message_tokens = self.count([message])
                if message_tokens <= token_budget:
                    result.insert(len(system_messages), message)
                    token_budget -= message_tokens
                if token_budget <= 20:
                    break
            return result
'''

CONTEXT_WINDOW_RUN_DOWN = BUDGET_RUN_DOWN.replace("max_input_tokens: int = 10000", "max_input_tokens: int = 128000")


def test_a_cut_index_found_by_a_count_back_is_a_window_and_the_repair_after_it_is_not():
    found = lint(CUT_INDEX_AFTER_A_COUNT, {"CL301"})
    assert [f.row for f in found] == [19]  # messages = messages[cutoff_idx:]
    assert "truncates the history `messages`" in found[0].message


def test_a_slice_made_inside_the_walk_back_is_the_window():
    found = lint(SLICED_INSIDE_THE_WALK, {"CL301"})
    assert [f.row for f in found] == [17]  # history = history[i + 1:]


def test_a_walk_back_by_hand_is_reported_at_the_test_that_stops_it():
    found = lint(WALKED_BACK_BY_HAND, {"CL301"})
    assert [f.row for f in found] == [12]
    assert "fit a budget" in found[0].message


def test_a_character_budget_the_size_of_a_context_window_is_left_alone():
    assert lint(CONTEXT_SIZED_CHARACTERS, {"CL301"}) == []


def test_dropping_leading_messages_of_the_wrong_role_is_no_cut():
    assert lint(REPAIR_ALONE, {"CL301"}) == []


def test_a_budget_run_down_to_nothing_stops_a_window():
    found = lint(BUDGET_RUN_DOWN, {"CL301"})
    assert [f.row for f in found] == [13]  # the walk back
    assert "fit a budget" in found[0].message


def test_a_budget_an_attribute_defaults_to_the_context_window_is_left_alone():
    assert lint(CONTEXT_WINDOW_RUN_DOWN, {"CL301"}) == []


# --- CL301: a chat platform's latest messages, walked straight into the conversation ---------------------------------

DISCORD_WALK = '''
    from anthropic import Anthropic

    client = Anthropic()


    class ChatMessage:
        def __init__(self, role, content):
            self.role, self.content = role, content


    class Bot:
        async def previous_messages(self, channel, limit=6):
            chat_messages = []
            async for message in channel.history(limit=limit + 1):
                role = "assistant" if message.author.bot else "user"
                chat_messages.append(ChatMessage(role=role, content=message.content))
            chat_messages.reverse()
            return chat_messages
'''

DISCORD_OLDEST_FIRST = DISCORD_WALK.replace("channel.history(limit=limit + 1)", "channel.history(limit=limit + 1, after=self.start)")

SLACK_HISTORY = '''
    from slack_sdk.web.async_client import AsyncWebClient


    class ChatMessage:
        def __init__(self, role, content):
            self.role, self.content = role, content


    async def previous_messages(token, channel_id, limit=6):
        client = AsyncWebClient(token=token)
        params = {"channel": channel_id, "limit": limit + 1}
        response = await client.conversations_history(**params)
        chat_messages = []
        messages = response["messages"]
        for message in messages:
            role = "assistant" if "bot_id" in message else "user"
            chat_messages.append(ChatMessage(role=role, content=message["text"]))
        chat_messages.reverse()
        return chat_messages
'''

SLACK_THREAD = SLACK_HISTORY.replace("conversations_history", "conversations_replies")


def test_a_discord_channels_latest_messages_walked_into_chat_messages_are_a_window():
    found = lint(DISCORD_WALK, {"CL301"})
    assert [f.row for f in found] == [14]
    assert "latest stored messages" in found[0].message


def test_a_discord_history_read_oldest_first_is_not_a_window():
    assert lint(DISCORD_OLDEST_FIRST, {"CL301"}) == []


def test_a_slack_channels_history_with_a_limit_in_its_params_is_a_window():
    found = lint(SLACK_HISTORY, {"CL301"})
    assert [f.row for f in found] == [11]


def test_a_slack_threads_replies_come_oldest_first_and_are_not_a_window():
    assert lint(SLACK_THREAD, {"CL301"}) == []


# --- CL501: a request body built for another provider ----------------------------------------------------------------

TWO_BODIES = '''
    import json
    import urllib.request

    ANTHROPIC_API_VERSION = "2023-06-01"


    class LLMClient:
        def __init__(self, provider, model, api_key):
            self.provider, self.model, self.api_key = provider, model, api_key

        def _openai_body(self, messages, system, stream):
            msgs = [{"role": "system", "content": system}] + messages
            return {"model": self.model, "messages": msgs, "max_tokens": 4096, "stream": stream}

        def _anthropic_body(self, messages, system, stream):
            return {"model": self.model, "messages": messages, "system": system, "max_tokens": 4096, "stream": stream}

        def send(self, messages, system):
            headers = {"x-api-key": self.api_key, "anthropic-version": ANTHROPIC_API_VERSION}
            body = self._anthropic_body(messages, system, False) if self.provider == "anthropic" else self._openai_body(messages, system, False)
            request = urllib.request.Request(self.url, data=json.dumps(body).encode(), headers=headers)
            return json.load(urllib.request.urlopen(request))
'''

CONVERTER = '''
    def convert_claude_to_openai(claude_request, model):
        messages = [{"role": "system", "content": claude_request.system}]
        messages += [{"role": m.role, "content": m.content} for m in claude_request.messages]
        openai_request = {"model": model, "messages": messages, "max_tokens": claude_request.max_tokens}
        return openai_request


    def convert_openai_to_claude(openai_request):
        claude_request = {"model": "claude-sonnet-4-5", "messages": openai_request["messages"][1:], "max_tokens": 4096}
        return claude_request
'''


def test_a_body_built_by_a_function_named_for_openai_is_not_an_anthropic_request():
    found = lint(TWO_BODIES, {"CL501"})
    assert [f.row for f in found] == [16]
    assert "`_anthropic_body`" in found[0].message


def test_a_converter_is_judged_by_the_provider_it_converts_to():
    found = lint(CONVERTER, {"CL501"})
    assert [f.row for f in found] == [9]
    assert "`convert_openai_to_claude`" in found[0].message


# --- CL401: a router of what the turn asks picks the model of a turn that sends the conversation ---------------------

ROUTED_PER_TURN = '''
    from openai import OpenAI

    client = OpenAI()
    MINI, FULL = "gpt-4.1-mini", "gpt-4.1"


    def predict_actions_required(text):
        return {"requires_actions": "attack" in text}


    def turn(conversation_history, user_input):
        conversation_history.append({"role": "user", "content": user_input})
        prediction = predict_actions_required(user_input)
        selected_model = MINI if not prediction["requires_actions"] else FULL
        reply = client.chat.completions.create(model=selected_model, messages=conversation_history)
        conversation_history.append({"role": "assistant", "content": reply.choices[0].message.content})
        return reply
'''

ROUTED_ONE_OFF = ROUTED_PER_TURN.replace("messages=conversation_history)", 'messages=[{"role": "user", "content": user_input}])')

ROUTER_CONTROLLER = '''
    from litellm import completion


    class Controller:
        def _get_routed_model_for_completion(self, messages, router, threshold):
            return self.routers[router].route(messages[-1]["content"], threshold, self.model_pair)

        def completion(self, *, router=None, threshold=None, **kwargs):
            kwargs["model"] = self._get_routed_model_for_completion(kwargs["messages"], router, threshold)
            return completion(api_base=self.api_base, **kwargs)
'''


def test_a_model_routed_by_what_the_turn_asks_is_a_switch_mid_conversation():
    found = lint(ROUTED_PER_TURN, {"CL401"})
    assert [f.row for f in found] == [14]
    assert "router of what the turn asks" in found[0].message


def test_a_routed_one_off_request_is_left_alone():
    assert lint(ROUTED_ONE_OFF, {"CL401"}) == []


def test_a_router_handing_the_callers_messages_on_is_a_switch():
    found = lint(ROUTER_CONTROLLER, {"CL401"})
    assert [f.row for f in found] == [9]


# --- CL103: a skills folder listed and read through a path built in two steps -----------------------------------------

SKILLS_REGISTRY = '''
    import os


    class SkillsRegistry:
        def __init__(self, skills_dir):
            self._skills = {}
            self._scan_skills_dir(skills_dir)

        def _scan_skills_dir(self, skills_dir):
            for entry in os.listdir(skills_dir):
                skill_dir = os.path.join(skills_dir, entry)
                skill_file = os.path.join(skill_dir, "SKILL.md")
                with open(skill_file, encoding="utf-8") as f:
                    content = f.read()
                self._skills[entry] = {"name": entry, "description": content.splitlines()[0]}

        def get_descriptions(self):
            return "\\n".join(f"### {s['name']}\\n{s['description']}" for s in self._skills.values())
'''

WALK_PRUNED = '''
    import os


    def generate_api_docs(base_path, exclude_list):
        for root, dirs, files in os.walk(base_path):
            dirs[:] = [d for d in dirs if os.path.join(root, d) not in exclude_list]
            for file in files:
                path = os.path.join(root, file)
                with open(path) as f:
                    text = f.read()
                print(len(text))
'''


def test_a_skills_folder_read_through_a_path_made_in_two_steps_is_reported():
    found = lint(SKILLS_REGISTRY, {"CL103"})
    assert [f.row for f in found] == [10]
    assert "self._skills" in found[0].message


def test_a_walk_pruned_in_place_collects_nothing():
    assert lint(WALK_PRUNED, {"CL103"}) == []


# --- CL301: a block for this request put on the newest user message, past the tool loop after it ---------------------

CONTEXT_ON_LAST_USER = '''
    class Engine:
        def _outbound_messages(self, messages):
            out = [dict(m) for m in messages]
            context = self.context_provider() if self.context_provider is not None else ""
            if not context:
                return out
            block = f"\\n\\n<system-context>\\n{context}\\n</system-context>"
            for i in range(len(out) - 1, -1, -1):
                if out[i].get("role") != "user":
                    continue
                msg = dict(out[i])
                msg["content"] = msg["content"] + block
                out[i] = msg
                break
            return out
'''

LAST_MESSAGE_ONLY = '''
    class Engine:
        def _outbound_messages(self, messages):
            out = [dict(m) for m in messages]
            block = f"\\n\\n<system-context>\\n{self.context_provider()}\\n</system-context>"
            out[-1] = {**out[-1], "content": out[-1]["content"] + block}
            return out
'''


def test_a_block_added_to_the_newest_user_message_past_the_tool_loop_is_reported_where_it_is_made():
    found = lint(CONTEXT_ON_LAST_USER, {"CL301"})
    assert [f.row for f in found] == [7]
    assert "newest user message" in found[0].message


def test_a_block_added_to_the_last_message_itself_is_left_alone():
    assert lint(LAST_MESSAGE_ONLY, {"CL301"}) == []


# --- CL301: tool outputs cut short once they are more than a few messages old ------------------------------------------

AGED_TOOL_OUTPUTS = '''
    import json


    class Model:
        TRUNCATE_AFTER = 10
        MAX_LENGTH = 2000

        def task_input(self, messages):
            history = []
            for i, message in enumerate(messages):
                content = message["content"]
                age = len(messages) - 1 - i
                if age > self.TRUNCATE_AFTER and len(content) > self.MAX_LENGTH:
                    content = content[:self.MAX_LENGTH] + "...[truncated]"
                history.append(json.dumps({"role": message["role"], "content": content}))
            return history
'''

EVERY_TOOL_OUTPUT_CUT = AGED_TOOL_OUTPUTS.replace("age > self.TRUNCATE_AFTER and ", "")


def test_tool_outputs_cut_short_once_old_enough_are_reported():
    found = lint(AGED_TOOL_OUTPUTS, {"CL301"})
    assert [f.row for f in found] == [13]


def test_every_output_cut_the_same_way_whatever_its_age_is_left_alone():
    assert lint(EVERY_TOOL_OUTPUT_CUT, {"CL301"}) == []


# --- CL501: an Anthropic body whose max_tokens is set after the dict is made ------------------------------------------

BODY_FINISHED_LATER = '''
    from anthropic import AsyncAnthropic


    class AnthropicLLMUnit:
        async def _build_request(self, in_messages, tools, system_prompt):
            messages = [{"role": m.role, "content": m.content} for m in in_messages]
            request = {"messages": messages, "model": self.model, "temperature": 0}
            if system_prompt:
                request["system"] = system_prompt
            if tools:
                request["tools"] = tools
            request["max_tokens"] = 4000
            return request
'''

NOT_FINISHED_AS_A_BODY = BODY_FINISHED_LATER.replace('request["max_tokens"] = 4000', 'request["metadata"] = {}')


def test_an_anthropic_body_finished_by_keys_set_later_is_reported():
    found = lint(BODY_FINISHED_LATER, {"CL501"})
    assert [f.row for f in found] == [7]
    assert "`_build_request` builds an Anthropic request" in found[0].message


def test_a_dict_never_given_max_tokens_is_not_taken_for_a_body():
    assert lint(NOT_FINISHED_AS_A_BODY, {"CL501"}) == []


BEDROCK_BODY_POSTED = '''
    import json

    import boto3


    class Access:
        def __init__(self):
            self.bedrock_client = boto3.client("bedrock-runtime")

        def complete_chat_bedrock(self, model_id, messages, max_tokens, stop):
            body_kwargs = {"max_tokens": max_tokens, "stop_sequences": stop, "anthropic_version": "bedrock-2023-05-31"}
            if messages[0]["role"] == "system":
                body_kwargs["system"] = messages.pop(0)["content"]
            body_kwargs["messages"] = messages
            response = self.bedrock_client.invoke_model(body=json.dumps(body_kwargs).encode("utf-8"), modelId=model_id)
            return json.loads(response["body"].read())
'''


def test_a_bedrock_claude_body_finished_later_is_reported_where_it_is_posted():
    found = lint(BEDROCK_BODY_POSTED, {"CL501"})
    assert [f.row for f in found] == [15]
    assert "`complete_chat_bedrock`" in found[0].message


# --- the review's probes (round 35) -------------------------------------------------------------------------------

COUNTED_BY_HAND = '''
    class Conversation:
        def __init__(self):
            self.messages = []

        def recent(self, max_turns: int = 10):
            result = []
            turns = 0
            i = len(self.messages) - 1
            while i >= 0:
                msg = self.messages[i]
                if turns >= max_turns:
                    break
                result.insert(0, msg)
                turns += 1
                i -= 1
            return result
'''

CUT_INSIDE_A_REPAIR = '''
    from openai import OpenAI

    client = OpenAI()


    def too_long(messages):
        return sum(len(m["content"]) for m in messages) > 8000


    def send(history):
        messages = list(history)
        while messages and (messages[0]["role"] != "user" or too_long(messages)):
            messages.pop(0)
        return client.chat.completions.create(model="gpt-4o", messages=messages)
'''

TURN_WINDOW_AT_THE_FRONT = '''
    from openai import OpenAI

    client = OpenAI()


    class Chat:
        def __init__(self):
            self.history = []
            self.turn = 0

        def send(self, text):
            self.turn += 1
            self.history.append({"role": "user", "content": text, "turn": self.turn})
            while self.history and self.history[0]["turn"] not in (self.turn, self.turn - 1, self.turn - 2):
                self.history.pop(0)
            msgs = [{"role": m["role"], "content": m["content"]} for m in self.history]
            return client.chat.completions.create(model="gpt-4o", messages=msgs)
'''

EACH_MESSAGE_ALONE = '''
    from langchain_core.messages import HumanMessage, SystemMessage
    from langchain_openai import ChatOpenAI

    llm = ChatOpenAI(model="gpt-4o-mini")


    class Moderator:
        async def scan_recent(self, channel):
            flagged = []
            async for message in channel.history(limit=10):
                verdict = llm.invoke([SystemMessage(content="Is this spam? yes/no"), HumanMessage(content=message.content)])
                if verdict.content.strip().lower() == "yes":
                    flagged.append(message.id)
            return flagged
'''

ROUTED_ONCE = '''
    from openai import OpenAI

    client = OpenAI()


    class Conversation:
        def __init__(self):
            self.messages = []
            self.model = None


    def turn(conv: Conversation, router, user_input):
        conv.messages.append({"role": "user", "content": user_input})
        if conv.model is None:
            conv.model = router.route(user_input)
        reply = client.chat.completions.create(model=conv.model, messages=conv.messages)
        conv.messages.append({"role": "assistant", "content": reply.choices[0].message.content})
        return reply
'''

BUDGET_READ_THROUGH_A_NAME = '''
    class Memory:
        def __init__(self, max_context_tokens: int = 4000):
            self.messages = []
            self.max_context_tokens = max_context_tokens

        def window(self):
            kept = []
            total = 0
            limit = self.max_context_tokens
            for message in reversed(self.messages):
                tokens = len(message["content"]) // 4
                if total + tokens > limit:
                    break
                kept.insert(0, message)
                total += tokens
            return kept
'''

ROUTED_BY_AN_IF = '''
    from openai import OpenAI

    client = OpenAI()
    MINI, FULL = "gpt-4.1-mini", "gpt-4.1"


    def predict_actions_required(text):
        return {"requires_actions": "attack" in text}


    def turn(conversation_history, user_input):
        conversation_history.append({"role": "user", "content": user_input})
        prediction = predict_actions_required(user_input)
        if prediction["requires_actions"]:
            selected_model = FULL
        else:
            selected_model = MINI
        reply = client.chat.completions.create(model=selected_model, messages=conversation_history)
        conversation_history.append({"role": "assistant", "content": reply.choices[0].message.content})
        return reply


    def turn2(conversation_history, user_input):
        conversation_history.append({"role": "user", "content": user_input})
        selected_model = FULL if predict_actions_required(user_input)["requires_actions"] else MINI
        reply = client.chat.completions.create(model=selected_model, messages=conversation_history)
        conversation_history.append({"role": "assistant", "content": reply.choices[0].message.content})
        return reply
'''


def test_a_walk_counted_down_by_hand_that_stops_at_a_count_does_not_crash():
    assert [f.code for f in lint(COUNTED_BY_HAND, {"CL301", "CL999"})] == []


def test_a_repair_loop_that_also_measures_the_history_is_a_cut():
    assert [f.row for f in lint(CUT_INSIDE_A_REPAIR, {"CL301"})] == [13]


def test_a_front_test_of_something_else_than_the_role_is_a_cut():
    assert [f.row for f in lint(TURN_WINDOW_AT_THE_FRONT, {"CL301"})] == [15]


def test_channel_messages_sent_each_on_its_own_are_no_window():
    assert lint(EACH_MESSAGE_ALONE, {"CL301"}) == []


def test_a_model_routed_once_when_the_conversation_starts_is_quiet():
    assert lint(ROUTED_ONCE, {"CL401"}) == []


def test_a_small_budget_default_read_through_a_local_name_is_a_window():
    assert [f.row for f in lint(BUDGET_READ_THROUGH_A_NAME, {"CL301"})] == [10]


def test_a_model_routed_by_an_if_statement_is_reported_once_per_switch():
    assert [f.row for f in lint(ROUTED_BY_AN_IF, {"CL401"})] == [15, 25]


SENT_HERE_AND_BUILT_LATER = '''
    import anthropic


    class AnthropicClient:
        def request(self, request_data):
            client = anthropic.Anthropic()
            return client.beta.messages.create(**request_data)

        def build_request_data(self, messages, llm_config, tools):
            data = {"model": llm_config.model, "max_tokens": llm_config.max_tokens}
            data["tools"] = tools
            data["messages"] = [{"role": m.role, "content": m.text} for m in messages]
            return data
'''


def test_a_body_built_for_a_request_of_the_module_already_reported_is_not_reported_again():
    found = lint(SENT_HERE_AND_BUILT_LATER, {"CL501"})
    assert [f.row for f in found] == [7]
