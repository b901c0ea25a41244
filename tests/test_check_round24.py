"""Round 24: what a spent set (holdout28) taught. Each class is written here in its own words, with the shape
beside it that must stay quiet."""

from __future__ import annotations

from _lint import lint, lint_tree

# --- CL203: the follow-up after the tool results, the history passed through a fitting function --------------------

FITTED = '''
from litellm import completion


def answer(messages, tools, limit):
    first = completion(model="claude-sonnet-4-5", messages=fit(messages, limit), tools=tools, tool_choice="auto")
    calls = first.choices[0].message.tool_calls
    if calls:
        messages.append(first.choices[0].message.to_dict())
        messages.extend(run_tools(calls))
        return completion(model="claude-sonnet-4-5", messages=fit(messages, limit))
    return first
'''


def test_a_follow_up_without_tools_is_found_when_the_history_goes_through_a_fitting_function():
    found = lint(FITTED, {"CL203"})
    assert [f.row for f in found] == [10], found
    assert "without the tools" in found[0].message


def test_two_requests_of_a_history_passed_through_different_functions_are_not_paired():
    source = FITTED.replace("return completion(model=\"claude-sonnet-4-5\", messages=fit(messages, limit))",
                            "return completion(model=\"claude-sonnet-4-5\", messages=summary_prompt(messages))")
    assert lint(source, {"CL203"}) == []


# --- CL203: tools set to nothing before the loop goes round for the next request ----------------------------------

GO_ROUND = '''
class Speaker:
    async def speak(self, client, messages, tools):
        current_tools = tools
        done = False
        tries = 0
        while not done and tries < 3:
            tries += 1
            calls, text = [], ""
            async for item in client.streaming_call(messages=messages, tools=current_tools):
                if item.tool_call:
                    calls.append(item.tool_call)
                else:
                    text += item.text
            if calls and not text:
                messages.extend(self.run(calls))
                current_tools = None
                continue
            done = True
        return text
'''


def test_tools_taken_off_before_the_loop_goes_round_for_the_spoken_reply_are_found():
    found = lint(GO_ROUND, {"CL203"})
    assert [f.row for f in found] == [16], found
    assert "goes round" in found[0].message


def test_tools_set_to_nothing_once_the_loop_is_done_are_quiet():
    source = GO_ROUND.replace("                current_tools = None\n                continue\n",
                              "                continue\n").replace("            done = True\n",
                                                                      "            done = True\n            current_tools = None\n")
    assert lint(source, {"CL203"}) == []


def test_an_editors_call_with_tools_is_no_request_of_the_loop():
    source = GO_ROUND.replace("client.streaming_call(", "editor.streaming_call(").replace("(self, client,", "(self, editor,")
    assert lint(source, {"CL203"}) == []


# --- CL203: a request's tools switch turned off once the loop's step count passes its limit ------------------------

FLAG_LIMIT = '''
class Orchestrator:
    def run(self, context, new_msgs, enable_tools):
        loops = 0
        while True:
            stream = self.llm.generate(
                messages=context + new_msgs,
                tool_schemas=self.tool_schemas,
                enable_tools=enable_tools and loops <= self.max_assistant_loops,
            )
            results = self.execute(stream)
            new_msgs += results
            if results:
                loops += 1
                continue
            return new_msgs
'''


def test_a_tools_switch_that_turns_off_past_the_step_limit_is_found():
    found = lint(FLAG_LIMIT, {"CL203"})
    assert [f.row for f in found] == [8], found
    assert "enable_tools=" in found[0].message


def test_a_tools_switch_from_the_settings_alone_is_quiet():
    source = FLAG_LIMIT.replace("enable_tools=enable_tools and loops <= self.max_assistant_loops,",
                                "enable_tools=enable_tools and self.settings.tools_on,")
    assert lint(source, {"CL203"}) == []


# --- CL203: a function that sends the conversation, called with its tools switch off beside calls with it on --------

SWITCH_OFF = '''
class Conversation:
    def on_player_line(self, line):
        self.messages.append(line)
        self._start_generating()

    def on_action_result(self, result):
        self.messages.append(result)
        self._start_generating(allow_tool_use=False)

    def _start_generating(self, allow_tool_use: bool = True):
        tools = self.tools if allow_tool_use else None
        self.output.generate(messages=self.messages, tools=tools)
'''


def test_the_turn_after_an_action_sent_with_the_tools_switch_off_is_found():
    found = lint(SWITCH_OFF, {"CL203"})
    assert [f.row for f in found] == [8], found
    assert "allow_tool_use=False" in found[0].message


def test_a_switch_whose_default_is_off_is_quiet():
    source = SWITCH_OFF.replace("allow_tool_use: bool = True", "allow_tool_use: bool = False")
    assert lint(source, {"CL203"}) == []


def test_a_function_called_only_with_the_switch_off_is_quiet():
    source = SWITCH_OFF.replace("        self._start_generating()\n", "        self._start_generating(allow_tool_use=False)\n")
    assert lint(source, {"CL203"}) == []


def test_a_switch_off_in_a_call_of_a_function_imported_from_the_tree_is_found(tmp_path):
    files = {
        "app/messenger.py": '''
            def process_message(session, msg, enable_tools: bool = True):
                history = session.history + [msg]
                return session.llm.generate(messages=history, tools=session.tools if enable_tools else None)
        ''',
        "app/session.py": '''
            class Session:
                def greeting(self):
                    from .messenger import process_message
                    return process_message(self, "<hello>", enable_tools=False)

                def chat(self, text):
                    from .messenger import process_message
                    return process_message(self, text)
        ''',
        "app/__init__.py": "",
    }
    found = lint_tree(tmp_path, files, "app/session.py", {"CL203"})
    assert [f.row for f in found] == [4], found


# --- CL201: tool definitions loaded by a loader in a loop over an unsorted listing ---------------------------------

ACTIONS = '''
import json
from pathlib import Path


class FunctionManager:
    _actions = {}

    @staticmethod
    def load_all(actions_dir: Path):
        for file_path in actions_dir.glob("*.json"):
            FunctionManager._load_action_file(file_path)

    @staticmethod
    def _load_action_file(file_path):
        data = json.loads(file_path.read_text())
        FunctionManager._actions[data["identifier"]] = data

    @staticmethod
    def tools():
        return [{"type": "function", "function": a} for a in FunctionManager._actions.values()]
'''


def test_actions_loaded_from_an_unsorted_glob_are_found():
    found = lint(ACTIONS, {"CL201"})
    assert [f.row for f in found] == [10], found


def test_actions_loaded_from_a_sorted_glob_are_quiet():
    assert lint(ACTIONS.replace('actions_dir.glob("*.json")', 'sorted(actions_dir.glob("*.json"))'), {"CL201"}) == []


# --- quiet: request parameters set on the dict a request is sent with; a validator's repair -------------------------

TWO_ADAPTERS = '''
from anthropic import Anthropic
from openai import OpenAI


class anthropic_chat:
    def _stream_response(self, client, params):
        with client.messages.stream(**params) as stream:
            yield from stream.text_stream

    def __call__(self, messages, config):
        params = {"model": self.model, "max_tokens": 4096, "messages": convert(messages)}
        if config.top_p is not None:
            params["top_p"] = config.top_p
        return self._stream_response(Anthropic(), params)


class groq_chat:
    def _stream_response(self, client, groq_messages, config):
        return client.chat.completions.create(model=self.model, messages=groq_messages, stream=True)

    def __call__(self, messages, config):
        return self._stream_response(OpenAI(), convert(messages), config)
'''


def test_a_method_of_another_class_with_the_same_name_is_not_the_one_self_calls():
    # `self._stream_response(client, params)` in one adapter runs that adapter's method, not another class's
    # `_stream_response(self, client, groq_messages, config)`: `params` is no history that the other one sends
    assert lint(TWO_ADAPTERS, {"CL301"}) == []


KEPT = '''
from openai import OpenAI

client = OpenAI()


class Bot:
    def __init__(self):
        self.history = [{"role": "system", "content": "You are terse."}]

    def turn(self, text, params):
        self.history.append({"role": "user", "content": text})
        self.history[1]["content"] = "(earlier question omitted)"
        params["temperature"] = 0.2
        return client.chat.completions.create(model="gpt-4.1", messages=self.history, **params)
'''


def test_an_earlier_message_of_a_kept_history_edited_by_key_is_still_a_rewrite():
    found = lint(KEPT, {"CL301"})
    assert [f.row for f in found] == [12], found


REPAIR = '''
from openai import OpenAI

client = OpenAI()


class Validator:
    def __init__(self, messages):
        self.messages = messages
        self.errors = []

    def tool_calls_followed_by_results(self, messages):
        history = list(messages)
        for idx, message in enumerate(history):
            if message.role == "assistant" and message.tool_calls is not None:
                if idx == len(history) - 1:
                    self.errors.append("dangling tool calls")
                    message.id = None
                    message.tool_calls = None
        return history


def reply(history):
    messages = Validator(history).tool_calls_followed_by_results(history)
    return client.chat.completions.create(model="gpt-4.1", messages=messages)
'''


def test_a_validator_that_repairs_dangling_tool_calls_is_quiet():
    assert lint(REPAIR, {"CL301"}) == []


# --- CL501: a chat-model adapter whose system prompt is the object's setting; a factory over providers ---------------

ADAPTER = '''
from anthropic import Anthropic

DEFAULT_SYSTEM_MESSAGE = "You are a helpful assistant for data notebooks."


class claude_chat:
    def __init__(self, model: str, system_message: str = DEFAULT_SYSTEM_MESSAGE, api_key: str | None = None):
        self.model = model
        self.system_message = system_message
        self.api_key = api_key

    def __call__(self, messages, config):
        client = Anthropic(api_key=self.api_key)
        converted = convert_to_anthropic_messages(messages)
        response = client.messages.create(model=self.model, system=self.system_message, max_tokens=4096, messages=converted)
        return response.content[0].text
'''


def test_a_chat_adapter_sending_the_chats_history_with_the_system_prompt_it_was_made_with_is_found():
    found = lint(ADAPTER, {"CL501"})
    assert [f.row for f in found] == [15], found
    assert found[0].confidence == "likely"


def test_an_adapter_whose_system_prompt_is_written_in_the_class_is_judged_by_its_length():
    source = ADAPTER.replace("self.system_message = system_message", "self.system_message = DEFAULT_SYSTEM_MESSAGE")
    assert lint(source, {"CL501"}) == []


FACTORY = '''
from langchain_anthropic import ChatAnthropic
from langchain_openai import ChatOpenAI


def get_llm(provider, model_name, api_key):
    if provider == "openai":
        return ChatOpenAI(model=model_name, api_key=api_key)
    if provider == "anthropic":
        return ChatAnthropic(model_name=model_name, api_key=api_key)
    raise ValueError(provider)
'''


def test_a_claude_model_in_one_branch_of_a_factory_over_providers_is_quiet():
    assert lint(FACTORY, {"CL501"}) == []


def test_a_claude_model_of_a_factory_named_by_its_claude_id_is_still_found():
    source = FACTORY.replace("ChatAnthropic(model_name=model_name,", 'ChatAnthropic(model_name="claude-sonnet-4-5",')
    assert [f.row for f in lint(source, {"CL501"})] == [9]


# --- CL301: the latest n rounds, from the position of the n-th last user message -----------------------------------

ROUNDS = '''
from openai import OpenAI

client = OpenAI()


def last_rounds(messages, rounds=3):
    human_indices = []
    for index, msg in enumerate(messages):
        if msg.get("type") == "human":
            human_indices.append(index)
    if not human_indices:
        return []
    if len(human_indices) <= rounds:
        start_index = human_indices[0]
    else:
        start_index = human_indices[-rounds]
    return messages[start_index:]


def answer(log, question):
    history = last_rounds(log.messages)
    history.append({"role": "user", "content": question})
    return client.chat.completions.create(model="gpt-4.1", messages=history)
'''


def test_the_latest_rounds_counted_from_the_nth_last_user_message_are_a_window():
    found = lint(ROUNDS, {"CL301"})
    assert [f.row for f in found] == [17], found


def test_a_cut_at_the_first_user_message_is_no_window():
    source = ROUNDS.replace("start_index = human_indices[-rounds]", "start_index = human_indices[0]")
    assert lint(source, {"CL301"}) == []


# --- CL301: the newest turns that fit a budget, walked back over a copy or by index -------------------------------

BUDGET_COPY = '''
import json

from openai import OpenAI

client = OpenAI()


def split_to_budget(turns, max_tokens):
    kept_rev = []
    total = 0
    ordered = list(turns)
    for turn in reversed(ordered):
        cost = len(json.dumps(turn)) // 4
        if total + cost > max_tokens:
            break
        total += cost
        kept_rev.append(turn)
    return list(reversed(kept_rev))


def reply(turns, budget):
    return client.chat.completions.create(model="gpt-4.1", messages=split_to_budget(turns, budget))
'''


def test_the_newest_turns_that_fit_a_budget_walked_back_over_a_copy_are_a_window():
    found = lint(BUDGET_COPY, {"CL301"})
    assert [f.row for f in found] == [12], found


BUDGET_INDEX = '''
from openai import OpenAI

client = OpenAI()


def collect_dialogue(scene, budget, count_tokens):
    parts = []
    history_len = len(scene.history)
    for i in range(history_len - 1, -1, -1):
        message = scene.history[i]
        if count_tokens(parts) + count_tokens(message) > budget:
            break
        parts.insert(0, message.as_format("chat"))
    return parts


def narrate(scene, budget, count_tokens):
    text = "\\n".join(collect_dialogue(scene, budget, count_tokens))
    return client.chat.completions.create(model="gpt-4.1", messages=[{"role": "user", "content": text}])
'''


def test_the_newest_messages_that_fit_a_budget_walked_back_by_index_are_a_window():
    found = lint(BUDGET_INDEX, {"CL301"})
    assert [f.row for f in found] == [9], found


def test_a_walk_back_by_index_with_no_budget_is_quiet():
    source = BUDGET_INDEX.replace("        if count_tokens(parts) + count_tokens(message) > budget:\n            break\n", "")
    assert lint(source, {"CL301"}) == []


# --- CL202: a tool's description written with what the conversation holds now --------------------------------------

SCOPED = '''
import copy


class FunctionManager:
    _actions = {}

    @staticmethod
    def generate_context_aware_tools(context):
        tools = []
        for action in FunctionManager._actions.values():
            tool = copy.deepcopy(action)
            FunctionManager._add_npc_context(tool["function"]["parameters"], context)
            tools.append(tool)
        return tools

    @staticmethod
    def _add_npc_context(parameters, context):
        for name, param_def in parameters["properties"].items():
            current_desc = param_def.get("description", "")
            names = context.get_character_names_as_text(include_player=True)
            if names:
                param_def["description"] = f"{current_desc} Available: {names}".strip()
            else:
                param_def["description"] = f"{current_desc} No one is nearby."
'''


def test_a_tools_description_filled_with_the_characters_present_is_found():
    found = lint(SCOPED, {"CL202"})
    assert [f.row for f in found] == [22], found
    assert "names" in found[0].message


def test_a_description_written_from_the_schema_itself_is_quiet():
    source = SCOPED.replace('names = context.get_character_names_as_text(include_player=True)', 'names = param_def.get("hint")')
    assert lint(source, {"CL202"}) == []


BEDROCK_ADAPTER = '''
import boto3


class bedrock_chat:
    """Chat model on Amazon Bedrock, e.g. bedrock_chat("anthropic.claude-3-5-sonnet-20241022-v2:0")."""

    def __init__(self, model_id: str, system_message: str = "You are a helpful assistant."):
        self.model_id = model_id
        self.system_message = system_message

    def __call__(self, messages, config):
        client = boto3.client("bedrock-runtime")
        converse_messages = [{"role": m.role, "content": [{"text": str(m.content)}]} for m in messages]
        response = client.converse(modelId=self.model_id, messages=converse_messages, system=[{"text": self.system_message}])
        return response["output"]["message"]["content"][0]["text"]
'''


def test_a_bedrock_chat_adapter_with_the_system_prompt_it_was_made_with_is_found():
    found = lint(BEDROCK_ADAPTER, {"CL501"})
    assert [f.row for f in found] == [14], found
    assert "Bedrock" in found[0].message


def test_a_bedrock_adapter_of_a_module_that_names_no_claude_model_is_quiet():
    source = BEDROCK_ADAPTER.replace('e.g. bedrock_chat("anthropic.claude-3-5-sonnet-20241022-v2:0")', 'e.g. a Llama model')
    assert lint(source, {"CL501"}) == []


SANITIZE = '''
from anthropic import Anthropic

client = Anthropic()
KEEP_RECENT = 6


def sanitize_messages(messages):
    cleaned = []
    for index, message in enumerate(messages):
        data = message.copy()
        if message["role"] == "user" and index < len(messages) - KEEP_RECENT:
            data["content"] = "(output omitted)"
        cleaned.append(data)
    return cleaned


def run(messages, tools):
    while True:
        reply = client.messages.create(model="claude-sonnet-4-5", max_tokens=4096, tools=tools,
                                       messages=sanitize_messages(messages))
        messages.append({"role": "assistant", "content": reply.content})
        if reply.stop_reason != "tool_use":
            return reply
        messages.append({"role": "user", "content": run_tools(reply.content)})
'''


def test_a_sanitizer_that_blanks_old_tool_outputs_is_still_a_rewrite():
    # a name like a validator's says nothing: only dangling tool calls taken out are a repair
    found = lint(SANITIZE, {"CL301"})
    assert [f.row for f in found] == [12], found


# --- the review's false findings and regressions (each reproduced on this round's first change) --------------------

def test_a_one_shot_title_request_with_the_tools_switch_off_is_quiet():
    source = SWITCH_OFF.replace(
        "    def on_action_result(self, result):\n        self.messages.append(result)\n        self._start_generating(allow_tool_use=False)\n",
        "    def title(self, text):\n        prompt = [{\"role\": \"user\", \"content\": text}]\n"
        "        return self._send(prompt, allow_tool_use=False)\n\n"
        "    def _send(self, messages, allow_tool_use: bool = True):\n"
        "        return self.output.generate(messages=messages, tools=self.tools if allow_tool_use else None)\n\n"
        "    def again(self):\n        return self._send(self.messages)\n")
    assert lint(source, {"CL203"}) == []


def test_a_switch_of_what_an_export_writes_is_quiet():
    source = '''
import json


class Conversation:
    def export(self, include_tools: bool = True) -> str:
        data = {"messages": self.messages}
        if include_tools:
            data["tools"] = self.tools
        return json.dumps(data)

    def save(self, path):
        path.write_text(self.export())

    def share(self, store):
        return store.publish(self.export(include_tools=False))
'''
    assert lint(source, {"CL203"}) == []


def test_a_batch_of_one_shot_requests_with_lookups_capped_is_quiet():
    source = '''
def enrich(llm, companies, web_search):
    rows = []
    for index, company in enumerate(companies):
        prompt = [{"role": "user", "content": f"What does {company.name} sell?"}]
        rows.append(llm.generate(messages=prompt, tool_schemas=[web_search], enable_tools=index < MAX_LOOKUPS))
    return rows
'''
    assert lint(source, {"CL203"}) == []


def test_tools_dropped_when_the_model_refuses_them_is_quiet():
    source = GO_ROUND.replace(
        "            async for item in client.streaming_call(messages=messages, tools=current_tools):\n",
        "            try:\n                stream = client.streaming_call(messages=messages, tools=current_tools)\n"
        "            except ToolsUnsupported:\n                current_tools = None\n                continue\n"
        "            async for item in stream:\n").replace("                current_tools = None\n                continue\n            done",
                                                           "                continue\n            done")
    assert lint(source, {"CL203"}) == []


def test_two_prompts_made_by_one_builder_with_other_instructions_are_not_paired():
    source = '''
from openai import OpenAI

client = OpenAI()
RECORD = {"type": "function", "function": {"name": "record", "parameters": {"type": "object"}}}


def prompt(document, instructions):
    return [{"role": "system", "content": instructions}, {"role": "user", "content": document}]


def process(document):
    fields = client.chat.completions.create(model="gpt-4.1", messages=prompt(document, EXTRACT), tools=[RECORD])
    summary = client.chat.completions.create(model="gpt-4.1", messages=prompt(document, SUMMARIZE))
    return fields, summary
'''
    assert lint(source, {"CL203"}) == []


def test_a_description_filled_from_settings_once_is_quiet():
    source = '''
def build_sql_tools(engine):
    tool = {"name": "run_sql", "description": "", "input_schema": {"type": "object"}}
    tables = inspect(engine).get_table_names(schema="public")
    tool["description"] = f"Run a read-only query. Tables: {', '.join(sorted(tables))}"
    return [tool]
'''
    assert lint(source, {"CL202"}) == []


def test_this_turn_cut_from_the_latest_user_message_is_no_window():
    assert lint(ROUNDS.replace("human_indices[-rounds]", "human_indices[-1]"), {"CL301"}) == []


def test_the_newest_text_walked_back_for_a_search_query_is_quiet():
    source = BUDGET_INDEX.replace("def collect_dialogue(", "def search_query(").replace("collect_dialogue(scene", "search_query(scene")
    assert lint(source, {"CL301"}) == []


def test_a_claude_model_beside_another_providers_helper_is_still_found():
    source = '''
import os

from langchain_anthropic import ChatAnthropic
from langchain_openai import ChatOpenAI


def build_models(channel):
    model_name = os.environ.get("SUPPORT_MODEL", "claude-sonnet-4-5")
    if channel == "web":
        answerer = ChatAnthropic(model=model_name, streaming=True)
    else:
        answerer = ChatAnthropic(model=model_name)
    router = ChatOpenAI(model="gpt-4.1-mini")
    return answerer, router
'''
    assert [f.row for f in lint(source, {"CL501"})] == [10]


def test_a_grader_asked_one_question_each_time_is_quiet_beside_a_method_of_the_same_name_elsewhere(tmp_path):
    # the one-shot callers decide; a REPL's own `Candidate.chat(history)` in another module is another method
    files = {
        "evals/__init__.py": "",
        "evals/grader.py": '''
            from anthropic import Anthropic


            class ClaudeGrader:
                def __init__(self, model, system_message):
                    self.model = model
                    self.system_message = system_message
                    self.client = Anthropic()

                def chat(self, messages):
                    return self.client.messages.create(model=self.model, system=self.system_message, max_tokens=5,
                                                       messages=messages)
        ''',
        "evals/run_eval.py": '''
            from .grader import ClaudeGrader


            def grade(rows, model):
                grader = ClaudeGrader(model, "Grade the answer from 1 to 5.")
                return [grader.chat([{"role": "user", "content": row}]) for row in rows]
        ''',
        "evals/repl.py": '''
            class Candidate:
                def chat(self, history):
                    return self.client.chat.completions.create(model="m", messages=history)


            def main(candidate):
                history = []
                while True:
                    history.append({"role": "user", "content": input()})
                    history.append({"role": "assistant", "content": candidate.chat(history)})
        ''',
    }
    assert lint_tree(tmp_path, files, "evals/grader.py", {"CL501"}) == []


def test_an_adapters_report_says_where_its_system_prompt_comes_from():
    found = lint(ADAPTER, {"CL501"})
    assert "the system prompt the object was made with" in found[0].message


# --- the review's misses: close spellings of this round's shapes ---------------------------------------------------

def test_a_history_handed_to_the_fitting_function_by_keyword_is_the_same_history():
    source = FITTED.replace("fit(messages, limit)", "fit(messages=messages, max_tokens=limit)")
    assert [f.row for f in lint(source, {"CL203"})] == [10]


def test_a_history_walked_back_over_reversed_range_is_a_budget_window():
    source = BUDGET_INDEX.replace("for i in range(history_len - 1, -1, -1):", "for i in reversed(range(history_len)):")
    assert [f.row for f in lint(source, {"CL301"})] == [9]


def test_a_system_prompt_the_object_was_made_with_or_a_default_is_a_setting():
    source = ADAPTER.replace("self.system_message = system_message", "self.system_message = system_message or DEFAULT_SYSTEM_MESSAGE")
    assert [f.row for f in lint(source, {"CL501"})] == [15]


def test_a_factory_over_providers_in_a_project_whose_default_model_is_claude_is_found(tmp_path):
    files = {"app/__init__.py": "", "app/config.py": 'DEFAULT_MODEL = "claude-3-7-sonnet-20250219"\n', "app/llm.py": FACTORY}
    found = lint_tree(tmp_path, files, "app/llm.py", {"CL501"})
    assert [f.row for f in found] == [9], found


def test_a_switch_that_decides_the_tools_handed_on_by_position_is_found():
    source = SWITCH_OFF.replace('''        tools = self.tools if allow_tool_use else None
        self.output.generate(messages=self.messages, tools=tools)''', '''        tools = None
        if self.actions_enabled and allow_tool_use:
            tools = self.make_tools()
        self.output.generate_response(self.messages, tools)''')
    assert [f.row for f in lint(source, {"CL203"})] == [8]


def test_a_system_prompt_that_is_empty_unless_given_is_no_setting_of_the_adapter():
    # bilingual_book_maker's translator: `self.prompt_sys_msg = prompt_sys_msg or ""`, one paragraph a request
    source = ADAPTER.replace("self.system_message = system_message", 'self.system_message = system_message or ""')
    assert lint(source, {"CL501"}) == []
