"""Round 23: what a spent set (holdout27) taught. Each class is written here in its own words, with the shape
beside it that must stay quiet."""

from __future__ import annotations

from _lint import lint, lint_tree

# --- CL301: the latest n messages asked of a store or a chat platform for every request --------------------------

DISCORD = '''
from openai import AsyncOpenAI

client = AsyncOpenAI()


class Reply:
    async def build(self, channel, anchor, config):
        limit = await config.messages_backread()
        past_messages = [
            message
            async for message in channel.history(
                limit=limit + 1,
                before=anchor,
                oldest_first=False,
            )
        ]
        conversation = []
        for message in past_messages:
            conversation.insert(0, {"role": "user", "content": message.content})
        reply = await client.chat.completions.create(model="gpt-4o", messages=conversation)
        return reply
'''


def test_a_channels_latest_messages_fetched_for_every_reply_are_a_window():
    found = lint(DISCORD, {"CL301"})
    assert [f.row for f in found] == [12], found


def test_a_channels_messages_read_oldest_first_from_a_point_are_no_window():
    source = DISCORD.replace("oldest_first=False", "oldest_first=True")
    assert lint(source, {"CL301"}) == []


STORE = {
    "app/memory.py": '''
        class RedisHistory:
            def __init__(self, client, key):
                self.client = client
                self.key = key

            async def read(self, lines: int):
                items = self.client.lrange(self.key, 0, lines - 1)
                return [m.decode("utf-8") for m in items[::-1]]

            async def append(self, message):
                self.client.lpush(self.key, message)
        ''',
    "app/task.py": '''
        from openai import AsyncOpenAI

        from app.memory import RedisHistory

        client = AsyncOpenAI()


        class Task:
            def __init__(self, key, redis):
                self.message_history = RedisHistory(redis, key)

            async def build_history_messages(self):
                message_run = [SystemMessage(content="You are a cute assistant.")]
                history = await self.message_history.read(lines=8)
                for stored in history:
                    message_run.append(parse_message(stored))
                return message_run

            async def request(self):
                messages = await self.build_history_messages()
                return await client.chat.completions.create(model="gpt-4o", messages=messages)
        ''',
}


def test_a_stores_read_of_its_newest_lines_made_into_the_messages_is_a_window(tmp_path):
    found = lint_tree(tmp_path, STORE, "app/task.py", {"CL301"})
    assert [f.row for f in found] == [14], found


def test_a_stores_read_of_its_first_lines_is_no_window(tmp_path):
    files = dict(STORE, **{"app/memory.py": STORE["app/memory.py"].replace("items[::-1]", "items").replace("lrange", "range_of")})
    assert lint_tree(tmp_path, files, "app/task.py", {"CL301"}) == []


def test_a_page_of_stored_messages_is_no_window(tmp_path):
    files = dict(STORE, **{"app/task.py": STORE["app/task.py"].replace("read(lines=8)", "read(lines=8, offset=page * 8)")})
    assert lint_tree(tmp_path, files, "app/task.py", {"CL301"}) == []


# --- CL101 / CL104: a clock, a counter or a value of the pass ahead of a history rendered into the prompt text ---------

RESEARCH = '''
import time

from agents import Runner


class IterativeResearcher:
    def __init__(self, agent, tool_agent):
        self.agent = agent
        self.tool_agent = tool_agent
        self.iteration = 0
        self.conversation = Conversation()

    async def run(self, query):
        self.start_time = time.time()
        while self.iteration < 5:
            self.iteration += 1
            await self._evaluate(query)
            next_gap = self.conversation.latest_gap()
            await self._select(next_gap, query)

    async def _evaluate(self, query):
        input_str = f"""
        Current Iteration Number: {self.iteration}
        Time Elapsed: {(time.time() - self.start_time) / 60:.2f} minutes

        ORIGINAL QUERY:
        {query}

        HISTORY OF ACTIONS:
        {self.conversation.compile_conversation_history() or "No previous actions."}
        """
        return await Runner.run(self.agent, input_str)

    async def _select(self, gap, query):
        input_str = f"""
        ORIGINAL QUERY:
        {query}

        KNOWLEDGE GAP TO ADDRESS:
        {gap}

        HISTORY OF ACTIONS:
        {self.conversation.compile_conversation_history() or "No previous actions."}
        """
        return await Runner.run(self.tool_agent, input_str)
'''


def test_a_counter_of_the_passes_ahead_of_a_rendered_history_is_a_volatile_value():
    found = lint(RESEARCH, {"CL101"})
    assert [f.row for f in found] == [23], found
    assert "self.iteration" in found[0].message


def test_a_clock_ahead_of_a_rendered_history_is_a_volatile_value():
    source = RESEARCH.replace("        Current Iteration Number: {self.iteration}\n", "")
    assert [f.row for f in lint(source, {"CL101"})] == [23]


def test_a_value_made_in_the_pass_ahead_of_a_rendered_history_is_this_turns_data():
    # `gap` is made anew in each pass of the loop that calls `_select`; the query it is also passed is the same on
    # every pass, so it is not what the finding names
    found = lint(RESEARCH, {"CL104"})
    assert [f.row for f in found] == [40], found
    assert "`{gap}`" in found[0].message and "query" not in found[0].message


def test_the_same_values_after_the_rendered_history_are_quiet():
    source = RESEARCH.replace('''        HISTORY OF ACTIONS:
        {self.conversation.compile_conversation_history() or "No previous actions."}
        """''', '''        """''').replace('''        input_str = f"""
''', '''        input_str = f"""
        HISTORY OF ACTIONS:
        {self.conversation.compile_conversation_history() or "No previous actions."}
''')
    assert lint(source, {"CL101", "CL104"}) == []


def test_a_counter_nobody_counts_up_is_no_volatile_value():
    source = RESEARCH.replace("            self.iteration += 1\n", "").replace("Time Elapsed: {(time.time() - self.start_time) / 60:.2f} minutes", "")
    assert lint(source, {"CL101"}) == []


# --- CL501: a conversation resent through the app's own sending function ------------------------------------------

SENDER = '''
from litellm import acompletion


async def completion_with_backoff(**kwargs):
    return await acompletion(**kwargs, drop_params=True)


async def generate_text(messages, model_name, tools=None, temperature=0.5):
    kwargs = {"model": model_name, "messages": messages, "temperature": temperature}
    if tools:
        kwargs["tools"] = tools
    return await completion_with_backoff(**kwargs)
'''
AGENT_NODE = '''
from app.llm_utils import generate_text


class AgentNode:
    async def run(self, messages, model_name):
        iterations = 0
        while iterations < self.max_iterations:
            response = await generate_text(
                messages=messages,
                model_name=model_name,
                tools=self.tools_schemas,
            )
            messages.append({"role": "assistant", "content": response.content, "tool_calls": response.tool_calls})
            iterations += 1
            if not response.tool_calls:
                break
            messages.extend(await self.execute_tools(response.tool_calls))
        return messages
'''
MODELS = '''
from enum import Enum


class LLMModels(str, Enum):
    GPT_4O = "openai/gpt-4o"
    CLAUDE_3_7_SONNET = "anthropic/claude-3-7-sonnet-latest"

DEFAULT_MODEL = "anthropic/claude-3-7-sonnet-latest"
'''


def test_an_agent_loop_that_resends_its_messages_through_the_apps_litellm_wrapper_lacks_a_breakpoint(tmp_path):
    files = {"app/__init__.py": "", "app/llm_utils.py": SENDER, "app/agent.py": AGENT_NODE, "app/models.py": MODELS}
    found = lint_tree(tmp_path, files, "app/agent.py", {"CL501"})
    assert [f.row for f in found] == [8], found
    assert "generate_text" in found[0].message and "claude-3-7-sonnet" in found[0].message


def test_the_same_loop_in_a_project_that_sets_breakpoints_is_quiet(tmp_path):
    sender = SENDER.replace("    return await completion_with_backoff(**kwargs)",
                            '    messages[-1]["cache_control"] = {"type": "ephemeral"}\n    return await completion_with_backoff(**kwargs)')
    files = {"app/__init__.py": "", "app/llm_utils.py": sender, "app/agent.py": AGENT_NODE, "app/models.py": MODELS}
    assert lint_tree(tmp_path, files, "app/agent.py", {"CL501"}) == []


def test_the_same_loop_in_a_project_that_names_no_claude_model_is_quiet(tmp_path):
    files = {"app/__init__.py": "", "app/llm_utils.py": SENDER, "app/agent.py": AGENT_NODE,
             "app/models.py": MODELS.replace("anthropic/claude-3-7-sonnet-latest", "openai/gpt-4o-mini")}
    assert lint_tree(tmp_path, files, "app/agent.py", {"CL501"}) == []


def test_a_loop_that_sends_a_new_list_each_pass_through_the_wrapper_is_quiet(tmp_path):
    agent = AGENT_NODE.replace("                messages=messages,", "                messages=[messages[0], messages[-1]],")
    files = {"app/__init__.py": "", "app/llm_utils.py": SENDER, "app/agent.py": agent, "app/models.py": MODELS}
    assert lint_tree(tmp_path, files, "app/agent.py", {"CL501"}) == []


CLIENT_CLASS = '''
import litellm


class LLM:
    def __init__(self, model, temperature=None):
        self.model = model
        self.temperature = temperature

    async def acall(self, messages):
        params = {"model": self.model, "messages": messages, "temperature": self.temperature}
        params = {k: v for k, v in params.items() if v is not None}
        return await litellm.acompletion(**params)


class Agent:
    def __init__(self, model, system_prompt=None):
        self.messages = [] if not system_prompt else [{"role": "system", "content": system_prompt}]
        self.llm = LLM(model) if isinstance(model, str) else model

    async def add_message(self, message):
        self.messages.append({"role": "user", "content": message})
        text = await self.call_llm(self.messages)
        self.messages.append({"role": "assistant", "content": text})
        return text

    async def call_llm(self, messages):
        res = await self.llm.acall(messages)
        return res.choices[0].message.content
'''
CONFIG = '''
from app.agent import LLM

DEFAULT_LLM = {
    "extract_agent": LLM("claude-3-5-sonnet-20241022", temperature=0.3),
    "segment_agent": LLM("claude-3-haiku-20240307", temperature=0),
}
'''


def test_a_client_class_fed_the_conversation_an_agent_object_keeps_lacks_a_breakpoint(tmp_path):
    found = lint_tree(tmp_path, {"app/agent.py": CLIENT_CLASS, "app/config.py": CONFIG}, "app/agent.py", {"CL501"})
    assert [f.row for f in found] == [10], found
    assert "self.messages" in found[0].message and "claude-3-5-sonnet" in found[0].message


def test_the_same_client_fed_a_new_list_for_each_question_is_quiet(tmp_path):
    agent = CLIENT_CLASS.replace("text = await self.call_llm(self.messages)", 'text = await self.call_llm([{"role": "user", "content": message}])')
    assert lint_tree(tmp_path, {"app/agent.py": agent, "app/config.py": CONFIG}, "app/agent.py", {"CL501"}) == []


def test_the_same_client_in_a_project_of_other_models_is_quiet(tmp_path):
    config = CONFIG.replace("claude-3-5-sonnet-20241022", "gpt-4o").replace("claude-3-haiku-20240307", "gpt-4o-mini")
    assert lint_tree(tmp_path, {"app/agent.py": CLIENT_CLASS, "app/config.py": config}, "app/agent.py", {"CL501"}) == []


# --- CL203: the last step, once the steps are used up, sent without the tools the loop's steps send ----------------

FINAL_STEP = '''
class ResponsePipeline:
    async def run(self):
        base_kwargs = await self._build_base_parameters()
        tools_kwargs = self.tool_manager.get_tools_kwargs()
        exhausted = False
        for round_idx in range(self.tool_call_rounds):
            kwargs = {**base_kwargs, **tools_kwargs}
            step = await self._create_chat_step(kwargs)
            if step.content:
                return step.content
            await self.tool_manager.handle_tool_calls(step.tool_calls)
        else:
            exhausted = True
        if exhausted:
            step = await self._create_chat_step(base_kwargs)
            return step.content

    async def _create_chat_step(self, kwargs):
        context = self.conversation.to_chat_payload()
        return await self.provider.create_chat_step(self.model, context, kwargs)
'''


def test_the_step_after_the_rounds_are_used_up_sent_without_the_tools_is_reported():
    found = lint(FINAL_STEP, {"CL203"})
    assert [f.row for f in found] == [15], found


def test_the_same_step_sent_with_the_tools_again_is_quiet():
    assert lint(FINAL_STEP.replace("self._create_chat_step(base_kwargs)", "self._create_chat_step({**base_kwargs, **tools_kwargs})"),
                {"CL203"}) == []


def test_a_keyword_step_with_tools_then_without_them_is_reported():
    source = FINAL_STEP.replace("step = await self._create_chat_step(kwargs)", "step = await self.step(messages, tools=self.tools)").replace(
        "step = await self._create_chat_step(base_kwargs)", "step = await self.step(messages)")
    assert [f.row for f in lint(source, {"CL203"})] == [15]


# --- CL301: the latest n messages converted in a comprehension that is returned as the messages -------------------

RECENT = '''
class ChatSession:
    def format_input_messages(self, system_message, user_message):
        recent_messages = self.messages[-self.recent_messages:] if self.recent_messages else self.messages
        return (
            [system_message.model_dump(exclude_none=True)]
            + [m.model_dump(exclude_none=True) for m in recent_messages]
            + [user_message.model_dump(exclude_none=True)]
        )
'''


def test_a_window_converted_in_a_comprehension_that_is_returned_as_the_messages_is_a_cut():
    assert [f.row for f in lint(RECENT, {"CL301"})] == [3]


def test_the_whole_history_converted_the_same_way_is_quiet():
    assert lint(RECENT.replace("self.messages[-self.recent_messages:] if self.recent_messages else self.messages", "self.messages"),
                {"CL301"}) == []


# --- CL401: the model picked from what the conversation holds -----------------------------------------------------

IMAGE_MODEL = '''
class ContextAssembler:
    async def build(self, conversation, guild_conf, model):
        await self._prepend_history(conversation)
        has_images = any(
            isinstance(entry.content, list) and any(item.get("type") == "image_url" for item in entry.content)
            for entry in conversation.entries
        )
        if has_images:
            image_model = await guild_conf.scan_images_model() or model
            conversation.model = image_model
        return conversation
'''


def test_a_model_switched_while_the_conversation_holds_an_image_is_reported():
    found = lint(IMAGE_MODEL, {"CL401"})
    assert [f.row for f in found] == [10], found
    assert "has_images" in found[0].message


def test_a_model_picked_by_the_conversations_size_switches_once_and_is_quiet():
    source = """
def pick(messages, settings):
    model = settings.large_context_model if count_tokens(messages) > 100_000 else settings.chat_model
    return model
"""
    assert lint(source, {"CL401"}) == []


def test_a_vision_model_picked_for_this_turns_images_by_a_config_adapter_is_quiet():
    # `ConversationAdapters` names a class, not the conversation: the test looks at this turn's images only
    source = """
async def answer(user, conversation, query_images):
    chat_model = await ConversationAdapters.aget_valid_chat_model(user, conversation)
    if not chat_model.vision_enabled and query_images:
        vision_enabled_config = await ConversationAdapters.aget_vision_enabled_config()
        if vision_enabled_config:
            chat_model = vision_enabled_config
    return chat_model
"""
    assert lint(source, {"CL401"}) == []


def test_a_model_picked_by_a_setting_is_quiet():
    source = IMAGE_MODEL.replace("if has_images:", "if guild_conf.prefer_vision:")
    assert lint(source, {"CL401"}) == []


def test_a_one_shot_caption_request_picking_a_vision_model_for_its_image_is_quiet():
    source = """
def caption(image_bytes, settings):
    model = settings.vision_model if image_bytes else settings.text_model
    return client.chat.completions.create(model=model, messages=[{"role": "user", "content": describe(image_bytes)}])
"""
    assert lint(source, {"CL401"}) == []


# --- CL301: a list of records kept for a report is no conversation --------------------------------------------------

RUN_HISTORY = '''
import json

MAX_HISTORY = 5


def save_history(history_path, runs):
    trimmed = runs[-MAX_HISTORY:]
    with open(history_path, "w") as f:
        json.dump({"runs": trimmed}, f, indent=2)


def generate_trend_report(runs):
    lines = []
    for run in reversed(runs):
        s = run["summary"]
        lines.append(f"| {run['timestamp']} | {s['passed']} |")
    return "\\n".join(lines)
'''


def test_validation_runs_kept_for_a_trend_report_are_no_conversation():
    assert lint(RUN_HISTORY, {"CL301"}) == []


def test_stored_runs_read_by_their_messages_are_a_conversation():
    source = RUN_HISTORY.replace('''        s = run["summary"]
        lines.append(f"| {run['timestamp']} | {s['passed']} |")''', '''        lines.extend(run["messages"])''')
    assert [f.row for f in lint(source, {"CL301"})] == [7]


# --- Amazon Bedrock: Converse and InvokeModel requests are requests -------------------------------------------------

LONG = "You are a careful research assistant who cites sources and checks every claim twice before answering. " * 80
BEDROCK = f'''
import json

import boto3

SYSTEM = "{LONG}"


class BedrockChat:
    def __init__(self, model_id="anthropic.claude-3-5-sonnet-20241022-v2:0"):
        self.client = boto3.client("bedrock-runtime", region_name="us-east-1")
        self.model_id = model_id
        self.history = []

    def ask(self, question):
        self.history.append({{"role": "user", "content": [{{"text": question}}]}})
        response = self.client.converse(modelId=self.model_id, system=[{{"text": "Be brief."}}], messages=self.history)
        self.history.append(response["output"]["message"])
        return response


def invoke(messages):
    client = boto3.client("bedrock-runtime")
    body = {{"anthropic_version": "bedrock-2023-05-31", "max_tokens": 1024, "system": SYSTEM, "messages": messages}}
    return client.invoke_model(modelId="anthropic.claude-3-5-sonnet-20241022-v2:0", body=json.dumps(body))
'''


def test_a_converse_chat_with_claude_and_no_cache_point_lacks_a_breakpoint():
    found = [f for f in lint(BEDROCK, {"CL501"}) if f.row == 16]
    assert len(found) == 1 and "cachePoint" in found[0].message and "Bedrock" in found[0].message, found


def test_an_invoke_model_body_with_a_long_static_system_prompt_and_no_cache_control_lacks_a_breakpoint():
    assert [f.row for f in lint(BEDROCK, {"CL501"}) if f.row == 24] == [24]


def test_a_converse_chat_that_sets_a_cache_point_is_quiet():
    source = BEDROCK.replace('system=[{"text": "Be brief."}]', 'system=[{"text": "Be brief."}, {"cachePoint": {"type": "default"}}]')
    assert [f for f in lint(source, {"CL501"}) if f.row == 16] == []


def test_a_converse_chat_with_another_model_family_is_quiet():
    source = BEDROCK.replace("anthropic.claude-3-5-sonnet-20241022-v2:0", "amazon.nova-pro-v1:0")
    assert lint(source, {"CL501"}) == []


def test_a_bedrock_client_is_no_other_services_client():
    source = BEDROCK.replace('"bedrock-runtime"', '"s3"')
    assert lint(source, {"CL501"}) == []


# --- CL101: the size of the conversation so far in the system prompt ------------------------------------------------

CONTEXT_SIZE = '''
import json


async def prepare_system_prompt(base_system_prompt, user, thread_id):
    prompt = {"system_prompt": base_system_prompt, "user_id": user.id}
    context_size = user.approximate_context_size(thread_id=thread_id)
    prompt["approximate_context_size"] = context_size
    return json.dumps(prompt, sort_keys=True)
'''


def test_the_conversations_size_stored_into_the_system_prompt_dict_is_a_counter():
    found = lint(CONTEXT_SIZE, {"CL101"})
    assert [f.row for f in found] == [6], found
    assert "approximate_context_size" in found[0].message


def test_a_setting_stored_into_the_same_dict_is_quiet():
    source = CONTEXT_SIZE.replace("user.approximate_context_size(thread_id=thread_id)", "user.max_context_size")
    assert lint(source, {"CL101"}) == []


def test_a_count_of_compacted_messages_written_once_into_a_summary_is_quiet():
    source = """
def compact(messages, old_messages, summary_text):
    summary_msg = {"role": "system", "content": f"[Summary of {len(old_messages)} earlier messages] {summary_text}"}
    messages.clear()
    messages.append(summary_msg)
"""
    assert lint(source, {"CL101"}) == []


def test_a_dict_filled_in_a_listings_order_and_put_in_the_system_prompt_is_unordered():
    source = """
import json
from pathlib import Path


def skill_names(skills_dir):
    result = {}
    for f in Path(skills_dir).iterdir():
        result[f.name] = f.stem
    return result


def build_system_prompt(base):
    prompt = {"system_prompt": base, "skills": skill_names("skills")}
    return json.dumps(prompt, sort_keys=False)
"""
    assert [f.code for f in lint(source, {"CL103"})] == ["CL103"]
    assert lint(source.replace("Path(skills_dir).iterdir()", "sorted(Path(skills_dir).iterdir())"), {"CL103"}) == []


# --- the review's mends ---------------------------------------------------------------------------------------------

def test_a_date_ahead_of_a_rendered_history_changes_once_a_day_and_is_quiet():
    source = RESEARCH.replace("        Current Iteration Number: {self.iteration}\n", "").replace(
        "{(time.time() - self.start_time) / 60:.2f}", "{datetime.now().strftime('%Y-%m-%d')}").replace("import time", "import time\nfrom datetime import datetime")
    assert lint(source, {"CL101"}) == []


def test_a_counter_counted_up_by_another_class_is_no_counter_of_this_one():
    source = RESEARCH.replace("            self.iteration += 1\n", "").replace(
        "Time Elapsed: {(time.time() - self.start_time) / 60:.2f} minutes", "") + '''

class Tracker:
    def tick(self):
        self.iteration += 1
'''
    assert lint(source, {"CL101"}) == []


def test_a_clock_computed_the_line_before_a_rendered_history_is_a_volatile_value():
    source = RESEARCH.replace("        input_str = f\"\"\"\n        Current Iteration Number: {self.iteration}",
                              "        elapsed = time.time() - self.start_time\n        input_str = f\"\"\"\n        Elapsed: {elapsed}", 1)
    assert 23 in [f.row for f in lint(source, {"CL101"})] or 24 in [f.row for f in lint(source, {"CL101"})]


def test_a_loop_step_and_a_counter_on_a_state_object_ahead_of_a_rendered_history_are_volatile():
    source = """
class Agent:
    def run(self, task):
        for step in range(10):
            self.state.iteration += 1
            prompt = f"Step {step}\\nTask: {task}\\nHistory:\\n{self.history_text}"
            self.llm.complete(prompt)
            prompt = f"Iteration {self.state.iteration}\\nHistory:\\n{self.history_text}"
            self.llm.complete(prompt)
"""
    assert [f.row for f in lint(source, {"CL101"})] == [5, 7]


def test_a_clock_after_a_format_templates_history_is_not_blamed_on_the_question():
    source = '''
import time
from openai import OpenAI

TEMPLATE = "Question: {question}\\nHistory:\\n{history}\\nNow: {now}"


def ask(question, history):
    prompt = TEMPLATE.format(question=question, history=history, now=time.time())
    return OpenAI().chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": prompt}])
'''
    assert [f.code for f in lint(source, {"CL101", "CL104"})] == ["CL104"]


def test_a_large_window_named_by_a_constant_is_quiet():
    source = DISCORD.replace("limit = await config.messages_backread()", "limit = MAX_HISTORY").replace(
        "client = AsyncOpenAI()", "client = AsyncOpenAI()\nMAX_HISTORY = 2000").replace("limit=limit + 1", "limit=MAX_HISTORY")
    assert lint(source, {"CL301"}) == []


def test_discord_py_1x_flatten_and_any_receiver_of_history_are_windows():
    source = DISCORD.replace("""        past_messages = [
            message
            async for message in channel.history(
                limit=limit + 1,
                before=anchor,
                oldest_first=False,
            )
        ]""", "        past_messages = await ctx.history(limit=limit).flatten()")
    assert [f.row for f in lint(source, {"CL301"})] == [9]


def test_a_store_read_answered_by_an_unrelated_method_of_the_same_name_is_quiet(tmp_path):
    files = dict(STORE, **{
        "app/memory.py": STORE["app/memory.py"].replace("items[::-1]", "items").replace("lrange", "range_of"),
        "app/logs.py": "class LogViewer:\n    def read(self, n=50):\n        return list(reversed(open(self.path).readlines()))[:n]\n",
    })
    assert lint_tree(tmp_path, files, "app/task.py", {"CL301"}) == []


def test_a_web_route_that_shows_the_latest_messages_is_quiet():
    source = '''
from fastapi import APIRouter

router = APIRouter()


@router.get("/conversations/{cid}/messages")
async def list_messages(cid, store):
    messages = []
    recent = await store.get_recent_messages(cid, limit=20)
    for row in recent:
        messages.append({"role": row.role, "content": row.content})
    return {"messages": messages}
'''
    assert lint(source, {"CL301"}) == []


def _sender_tree(agent=AGENT_NODE, sender=SENDER, models=MODELS):
    return {"app/__init__.py": "", "app/llm_utils.py": sender, "app/agent.py": agent, "app/models.py": models}


def test_a_batch_that_sends_a_new_list_each_pass_through_the_wrapper_is_quiet(tmp_path):
    agent = AGENT_NODE.replace("        while iterations < self.max_iterations:\n",
                               "        while iterations < self.max_iterations:\n            messages = [{\"role\": \"system\", \"content\": \"x\"}]\n")
    assert lint_tree(tmp_path, _sender_tree(agent), "app/agent.py", {"CL501"}) == []


def test_a_caller_that_names_another_providers_model_is_quiet(tmp_path):
    agent = AGENT_NODE.replace("model_name=model_name,", 'model_name="openai/gpt-4o-mini",')
    assert lint_tree(tmp_path, _sender_tree(agent), "app/agent.py", {"CL501"}) == []


def test_a_wrapper_that_sends_to_an_openai_prefixed_model_is_quiet(tmp_path):
    sender = SENDER.replace('kwargs = {"model": model_name,', 'kwargs = {"model": f"openai/{model_name}",')
    assert lint_tree(tmp_path, _sender_tree(sender=sender), "app/agent.py", {"CL501"}) == []


def test_litellms_injection_points_are_breakpoints(tmp_path):
    sender = SENDER.replace("return await acompletion(**kwargs, drop_params=True)",
                            'return await acompletion(**kwargs, drop_params=True, cache_control_injection_points=[{"location": "message", "index": -1}])')
    assert lint_tree(tmp_path, _sender_tree(sender=sender), "app/agent.py", {"CL501"}) == []


def test_a_price_table_row_is_no_configured_model(tmp_path):
    models = 'DEFAULT_MODEL = "gpt-4o"\nPRICES = [PriceModel("claude-3-5-sonnet-20241022", 3.0, 15.0)]\n'
    assert lint_tree(tmp_path, _sender_tree(models=models), "app/agent.py", {"CL501"}) == []


def test_a_client_fed_a_list_the_caller_binds_afresh_each_call_is_quiet(tmp_path):
    agent = CLIENT_CLASS.replace('        self.messages.append({"role": "user", "content": message})\n',
                                 '        self.messages = [{"role": "system", "content": "Classify."}]\n        self.messages.append({"role": "user", "content": message})\n', 1)
    assert lint_tree(tmp_path, {"app/agent.py": agent, "app/config.py": CONFIG}, "app/agent.py", {"CL501"}) == []
