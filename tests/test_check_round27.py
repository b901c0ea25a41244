"""Round 27: what a spent set (holdout31) taught. Each class is written here in its own words, with the shape
beside it that must stay quiet."""

from __future__ import annotations

from _lint import lint, lint_tree

# --- CL103: prompt text made from a set, in string-hash order -----------------------------------------------------

SET_PARTS = '''
from enum import Enum


class Modality(str, Enum):
    TEXT = "text"
    IMAGE = "image"


EXAMPLES = {Modality.TEXT: "Text field: ...", Modality.IMAGE: "Image field: ..."}


class PromptFactory:
    def _get_example_fields(self, modalities: set[Modality]) -> str:
        text = ""
        for modality in modalities:
            text += EXAMPLES[modality]
        return text

    def _get_counts(self, ids: set[int]) -> str:
        out = ""
        for i in ids:
            out += str(i)
        return out

    def _get_sorted_fields(self, modalities: set[Modality]) -> str:
        text = ""
        for modality in sorted(modalities):
            text += EXAMPLES[modality]
        return text
'''


def test_a_set_parameter_written_out_by_a_prompt_part_builder_is_reported():
    found = lint(SET_PARTS, {"CL103"})
    assert [(f.row, f.confidence) for f in found] == [(15, "likely")], found
    assert "PYTHONHASHSEED" in found[0].message and "`text`" not in found[0].message


DOCS_JOINED = '''
def retrieve_tools(plan, recommender) -> str:
    tool_docs = []
    for step in plan:
        tool_docs.extend(e["doc"] for e in recommender.top_k(step))
    tool_docs_str = "\\n\\n".join(set(tool_docs))
    return tool_docs_str


def distinct_users(rows) -> str:
    names = ", ".join(set(r.user for r in rows))
    return names


def membership(tool_docs, name) -> bool:
    seen = set(tool_docs)
    return name in seen
'''


def test_docs_deduplicated_through_a_set_and_joined_are_reported_with_a_sorting_fix():
    found = lint(DOCS_JOINED, {"CL103"})
    assert [f.row for f in found] == [5], found
    assert "`tool_docs_str`" in found[0].message and found[0].fix is not None


SAMPLES = '''
def get_schema(hits, keys):
    properties = []
    for key in keys:
        samples: set[str] = set()
        for hit in hits:
            samples.add(str(hit[key]))
        sample_list = list(samples)
        properties.append({"name": key, "examples": sample_list})
        counts = list(samples)
        properties.append({"name": key, "count": len(counts)})
    return properties
'''


def test_a_set_listed_as_a_fields_examples_is_reported():
    found = lint(SAMPLES, {"CL103"})
    assert [f.row for f in found] == [7], found
    assert 'the entry "examples"' in found[0].message


# --- CL103: few-shot files read by a reader named for its format (read_jsonl) --------------------------------------

DEMOS = '''
import os
from app.io import read_jsonl


def load_examples(folder: str):
    examples = []
    for f in os.listdir(folder):
        if f.endswith("jsonl"):
            examples.extend(read_jsonl(os.path.join(folder, f)))
    return examples


def load_sorted_examples(folder: str):
    examples = []
    for f in sorted(os.listdir(folder)):
        examples.extend(read_jsonl(os.path.join(folder, f)))
    return examples
'''


def test_examples_read_by_a_jsonl_reader_in_listing_order_are_reported():
    found = lint(DEMOS, {"CL103"})
    assert [f.row for f in found] == [7], found


# --- CL501: a library's Claude adapter class that sends what its callers pass -------------------------------------

CLAUDE_ADAPTER = '''
import anthropic


def get_generate_kwargs(prompt, llm_kwargs=None):
    kwargs = {"temperature": 0, **(llm_kwargs or {})}
    kwargs["messages"] = [{"role": m.role, "content": m.content} for m in prompt.messages]
    return kwargs


class AnthropicLMM:
    def __init__(self, model_name="claude-3-7-sonnet-20250219"):
        self.client = anthropic.Anthropic()
        self.model_name = model_name

    def _convert(self, chat):
        return [{"role": m["role"], "content": m["content"]} for m in chat]

    def chat(self, chat, **kwargs):
        messages = self._convert(chat)
        return self.client.messages.create(model=self.model_name, max_tokens=1024, messages=messages, **kwargs)

    def generate_metadata(self, *, prompt, llm_kwargs=None):
        kwargs = get_generate_kwargs(prompt, llm_kwargs)
        return self.client.messages.create(model=self.model_name, max_tokens=1024, **kwargs)
'''

PLAIN_HELPER = '''
import anthropic

client = anthropic.Anthropic()


def chat(chat, **kwargs):
    messages = [{"role": m["role"], "content": m["content"]} for m in chat]
    return client.messages.create(model="claude-sonnet-4-5", max_tokens=1024, messages=messages, **kwargs)
'''


AGENT = '''
from lib.llms.anthropic import AnthropicLMM


def step(lmm: AnthropicLMM, chat):
    return lmm.chat(chat)
'''


def test_a_claude_adapter_class_that_forwards_its_callers_prompts_is_reported(tmp_path):
    files = {"lib/llms/anthropic.py": CLAUDE_ADAPTER, "lib/llms/__init__.py": "", "lib/agent.py": AGENT}
    found = lint_tree(tmp_path, files, "lib/llms/anthropic.py", {"CL501"})
    assert [f.row for f in found] == [20], found  # not the request made of one prompt (generate_metadata)
    assert "`chat` sends what its callers pass" in found[0].message and "no file of this project sets a breakpoint" in found[0].message


def test_a_claude_adapter_nothing_in_the_tree_calls_is_quiet(tmp_path):
    files = {"lib/llms/anthropic.py": CLAUDE_ADAPTER, "lib/llms/__init__.py": "", "tests/test_agent.py": AGENT}
    assert lint_tree(tmp_path, files, "lib/llms/anthropic.py", {"CL501"}) == []


def test_a_helper_function_wrapping_a_prompt_is_not_an_adapter(tmp_path):
    assert lint_tree(tmp_path, {"app/chat.py": PLAIN_HELPER}, "app/chat.py", {"CL501"}) == []


def test_the_adapter_class_is_quiet_where_another_file_sets_breakpoints(tmp_path):
    files = {"lib/llms/anthropic.py": CLAUDE_ADAPTER,
             "lib/llms/cache.py": 'def mark(block):\n    block["cache_control"] = {"type": "ephemeral"}\n'}
    assert lint_tree(tmp_path, files, "lib/llms/anthropic.py", {"CL501"}) == []


# --- CL501: a tool loop sent bare in a module that marks its other request -----------------------------------------

MARKS_ONE_REQUEST = '''
import anthropic


class LLMClient:
    def __init__(self, use_prompt_caching=True):
        self.client = anthropic.Anthropic()
        self.model = "claude-sonnet-4-5"
        self.use_prompt_caching = use_prompt_caching

    def call(self, system_prompt, messages):
        params = {"model": self.model, "max_tokens": 1024, "messages": messages}
        if self.use_prompt_caching:
            params["system"] = [{"type": "text", "text": system_prompt, "cache_control": {"type": "ephemeral"}}]
        else:
            params["system"] = system_prompt
        return self.client.messages.create(**params)

    def generate_with_tools(self, system_prompt, user_prompt, tools, run_tool):
        messages = [{"role": "user", "content": user_prompt}]
        for _ in range(10):
            params = {"model": self.model, "max_tokens": 1024, "system": system_prompt, "messages": messages, "tools": tools}
            response = self.client.messages.create(**params)
            if response.stop_reason != "tool_use":
                return response
            messages.append({"role": "assistant", "content": response.content})
            results = [{"type": "tool_result", "tool_use_id": b.id, "content": run_tool(b)} for b in response.content if b.type == "tool_use"]
            messages.append({"role": "user", "content": results})

    def generate_with_tools_cached(self, system_prompt, user_prompt, tools, run_tool):
        messages = [{"role": "user", "content": user_prompt}]
        for _ in range(10):
            response = self.call_cached(system_prompt, messages, tools)
            if response.stop_reason != "tool_use":
                return response
            messages.append({"role": "assistant", "content": response.content})

    def call_cached(self, system_prompt, messages, tools):
        system = [{"type": "text", "text": system_prompt, "cache_control": {"type": "ephemeral"}}]
        return self.client.messages.create(model=self.model, max_tokens=1024, system=system, messages=messages, tools=tools)
'''


def test_a_tool_loop_sent_with_no_breakpoint_beside_a_request_that_sets_one_is_reported():
    found = lint(MARKS_ONE_REQUEST, {"CL501"})
    assert [f.row for f in found] == [22], found
    assert "agent loop" in found[0].message


# --- CL501: Claude 3 Sonnet never cached prompts ---------------------------------------------------------------------

def test_a_request_to_claude_3_sonnet_has_nothing_to_cache():
    from cachelint.simulate.models import caches_prompts

    assert not caches_prompts("claude-3-sonnet-20240229") and not caches_prompts("anthropic.claude-3-sonnet-20240229-v1:0")
    assert caches_prompts("claude-3-5-sonnet-20241022") and caches_prompts("claude-3-haiku-20240307") and caches_prompts("claude-3-opus-20240229")
    loop = MARKS_ONE_REQUEST.replace('"claude-sonnet-4-5"', '"claude-3-sonnet-20240229"')
    assert lint(loop, {"CL501"}) == []


# --- CL301: a list each caller builds for one request is no conversation ---------------------------------------------

FILE_BLOCKS = '''
import anthropic


class LLMClient:
    def __init__(self):
        self.client = anthropic.Anthropic()

    def _call(self, system_prompt, messages, file_ids=None):
        if file_ids and messages[0]["role"] == "user":
            content = messages[0]["content"]
            messages[0]["content"] = [{"type": "file", "file": {"file_id": f}} for f in file_ids] + [{"type": "text", "text": content}]
        return self.client.messages.create(model="claude-sonnet-4-5", max_tokens=1024, system=system_prompt, messages=messages)

    def generate_text(self, system_prompt, user_prompt, file_ids=None):
        messages = [{"role": "user", "content": user_prompt}]
        return self._call(system_prompt, messages, file_ids)

    def generate_structured(self, system_prompt, user_prompt):
        messages = [{"role": "user", "content": user_prompt}]
        return self._call(system_prompt + " Answer in JSON.", messages)
'''


def test_editing_the_first_message_of_a_list_each_caller_builds_afresh_is_not_a_rewrite():
    assert lint(FILE_BLOCKS, {"CL301"}) == []


def test_editing_the_first_message_of_a_history_a_caller_keeps_is_still_a_rewrite():
    kept = FILE_BLOCKS.replace('''    def generate_structured(self, system_prompt, user_prompt):
        messages = [{"role": "user", "content": user_prompt}]
        return self._call(system_prompt + " Answer in JSON.", messages)''', '''    def chat(self, system_prompt, user_prompt):
        self.history.append({"role": "user", "content": user_prompt})
        return self._call(system_prompt, self.history, ["f1"])''')
    found = lint(kept, {"CL301"})
    assert [f.row for f in found] == [11], found


# --- CL104: a template filled as its object is set up, from the object's own settings ------------------------------

TEMPLATE = '''
SYSTEM_PROMPT = """You are a conversational {item} recommendation assistant. Help the human find {item}s.
''' + "Follow these rules carefully when you recommend. " * 100 + '''
Tools: {tool_names}
"""
'''


def _agent(fill_site: str) -> str:
    return '''
from openai import OpenAI
from app.prompts import SYSTEM_PROMPT

client = OpenAI()


class Agent:
    def __init__(self, domain):
        self._domain_map = {"item": domain}
        self._tool_names = {"tool_names": "search, lookup"}

''' + fill_site + '''

    def ask(self, question):
        return client.chat.completions.create(model="gpt-4o", messages=[{"role": "system", "content": self.template}, {"role": "user", "content": question}])
'''


def test_a_template_filled_in_the_objects_setup_is_not_per_call(tmp_path):
    setup = '''    def setup_prompts(self, table):
        self.template = SYSTEM_PROMPT.format(table_info=table, **self._tool_names, **self._domain_map)'''
    spread = '''    def render(self):
        self.template = SYSTEM_PROMPT.format(**self._tool_names, **self._domain_map)'''
    per_call = '''    def render(self, item):
        self.template = SYSTEM_PROMPT.format(item=item, **self._tool_names)'''
    for fill, rows in ((setup, []), (spread, []), (per_call, [1])):
        files = {"app/prompts.py": TEMPLATE, "app/agent.py": _agent(fill), "app/__init__.py": ""}
        found = lint_tree(tmp_path, files, "app/prompts.py", {"CL104"})
        assert [f.row for f in found] == rows, (fill, found)


# --- CL101: a system prompt built once per conversation and kept ------------------------------------------------------

BUILDER = '''
import datetime
import random

STARTERS = ["the weather", "a book", "music"]


class SmalltalkInstructions:
    def make_system_prompt(self) -> str:
        return SYSTEM_TEMPLATE.format(
            current_time=datetime.datetime.now().strftime("%A %H:%M"),
            starter=random.choice(STARTERS),
        )


SYSTEM_TEMPLATE = "You are a friendly voice assistant. It is {current_time}. Suggest talking about {starter}."
'''

KEEPER = '''
from app.system_prompt import SmalltalkInstructions


class Chatbot:
    def __init__(self):
        self.chat_history = [{"role": "system", "content": SmalltalkInstructions().make_system_prompt()}]

    def set_instructions(self, instructions):
        # make_system_prompt() is not deterministic: run it once and keep the result
        self._update_system_prompt(instructions.make_system_prompt())

    def _update_system_prompt(self, system_prompt):
        self.chat_history[0] = {"role": "system", "content": system_prompt}
'''

PER_REQUEST = '''
from app.system_prompt import SmalltalkInstructions


def reply(client, history, instructions):
    system = instructions.make_system_prompt()
    return client.chat.completions.create(model="gpt-4o", messages=[{"role": "system", "content": system}, *history])
'''


def test_a_system_prompt_every_caller_keeps_for_the_conversation_may_draw_at_random(tmp_path):
    files = {"app/__init__.py": "", "app/system_prompt.py": BUILDER, "app/chatbot.py": KEEPER,
             "app/loadtest/make_dataset.py": "def rows(i):\n    return [i.make_system_prompt() for _ in range(100)]\n"}
    assert lint_tree(tmp_path, files, "app/system_prompt.py", {"CL101"}) == []


def test_a_system_prompt_built_for_each_request_is_still_reported(tmp_path):
    files = {"app/__init__.py": "", "app/system_prompt.py": BUILDER, "app/chatbot.py": KEEPER, "app/reply.py": PER_REQUEST}
    found = lint_tree(tmp_path, files, "app/system_prompt.py", {"CL101"})
    assert [f.row for f in found] == [10, 11], found


# --- CL102: conversations kept in a jsonb column of a table made with CREATE TABLE IF NOT EXISTS ---------------------

SCHEMA = '''
CREATE_CONVERSATIONS_TABLE = """
CREATE TABLE IF NOT EXISTS conversations (
    session_id TEXT,
    msg_id TEXT PRIMARY KEY,
    content JSONB
);
"""
'''

ADAPTER = '''
import json


class OpenAIAdapter:
    def _format_messages(self, messages: list):
        formatted = []
        for message in messages:
            if message["role"] == "assistant" and message.get("tool_calls"):
                formatted.append({
                    "role": "assistant",
                    "content": message["content"],
                    "tool_calls": [{"id": c["id"], "type": "function",
                                    "function": {"name": c["tool"]["name"], "arguments": json.dumps(c["tool"]["arguments"])}}
                                   for c in message["tool_calls"]],
                })
            else:
                formatted.append(message)
        return formatted
'''


def test_tool_arguments_reserialized_where_a_sql_schema_keeps_conversations_in_jsonb(tmp_path):
    files = {"app/__init__.py": "", "app/db/initialize.py": SCHEMA, "app/llm/openai.py": ADAPTER}
    found = lint_tree(tmp_path, files, "app/llm/openai.py", {"CL102"})
    assert [f.row for f in found] == [13], found
    assert "jsonb" in found[0].message
    files["app/db/initialize.py"] = SCHEMA.replace("conversations", "embeddings")
    assert lint_tree(tmp_path / "other", files, "app/llm/openai.py", {"CL102"}) == []


# --- round 26's review, left then: rules joined after the per-call part, and a history extended after the question --

JOINED_RULES = '''
from openai import OpenAI

client = OpenAI()
RULES = """Follow these design rules for every playground you build.
''' + "Use semantic HTML, accessible colours and no external fonts.\n" * 80 + '''"""


def build_system_prompt(name: str, description: str) -> str:
    prompt = f"Playground: {name}\\nDescription: {description}"
    return "\\n\\n".join([prompt, RULES])


def generate(name, description, request):
    system = build_system_prompt(name, description)
    return client.chat.completions.create(model="gpt-4o", messages=[{"role": "system", "content": system}, {"role": "user", "content": request}])
'''


def test_static_rules_joined_after_the_per_call_part_are_a_static_tail():
    found = lint(JOINED_RULES, {"CL104"})
    assert len(found) == 1 and "after the per-call value `name`" in found[0].message, found
    rules_first = JOINED_RULES.replace("[prompt, RULES]", "[RULES, prompt]")
    assert rules_first != JOINED_RULES and lint(rules_first, {"CL104"}) == []


EXTENDED = '''
def chat_messages(question: str, chat_history: list):
    messages = [{"role": "system", "content": "You answer questions about the docs."}, {"role": "user", "content": question}]
    messages.extend(chat_history)
    return messages


def run_messages(task: str, steps: list):
    messages = [{"role": "system", "content": "You run tasks."}, {"role": "user", "content": task}]
    messages.extend(steps)
    return messages
'''


def test_a_history_extended_after_the_question_is_reported_where_no_request_is_in_sight():
    found = lint(EXTENDED, {"CL104"})
    assert [f.row for f in found] == [2], found
    assert "`chat_history`" in found[0].message


# --- the review's cases: what must stay quiet, and what must still be found ------------------------------------------

SET_NOT_WRITTEN = '''
import random

BASE = "You are the operations assistant for Acme. Answer briefly."


def build_system_prompt(user_roles: set[str]) -> str:
    admin_roles = 0
    for role in user_roles:
        if role.startswith("admin"):
            admin_roles += 1
    return BASE + ("\\nYou may run admin tools." if admin_roles else "")


def build_tool_prompt(enabled: set[str], registry: dict) -> str:
    allowed = []
    for name in enabled:
        if name in registry:
            allowed.append(name)
    return BASE + f"\\nYou have {len(allowed)} tools."


def load_examples(rows) -> list:
    examples = list(set(r["text"] for r in rows))
    examples.sort()
    return examples


def system_ids(rows) -> list:
    system_ids = list(set(r["system_id"] for r in rows))
    return system_ids


def few_shot_prompt(pool, k: int) -> str:
    indices = set(random.sample(range(len(pool)), k))
    examples = [pool[i]["text"] for i in indices]
    return "Examples:\\n" + "\\n".join(examples)
'''


def test_a_set_whose_order_never_reaches_the_text_is_quiet():
    assert lint(SET_NOT_WRITTEN, {"CL103"}) == []


def test_a_set_comprehension_joined_into_a_prompt_is_found_without_another_set_in_the_module():
    source = 'def system_prompt_for(tags: list[str]) -> str:\n    return "You handle: " + ", ".join({t.lower() for t in tags})\n'
    found = lint(source, {"CL103"})
    assert [f.row for f in found] == [2] and "`system_prompt_for()`" in found[0].message, found


def test_a_model_default_the_app_may_override_is_not_taken_as_the_model():
    source = MARKS_ONE_REQUEST.replace('self.model = "claude-sonnet-4-5"', "self.model = model").replace(
        "def __init__(self, use_prompt_caching=True):", 'def __init__(self, model="claude-3-sonnet-20240229", use_prompt_caching=True):')
    assert [f.row for f in lint(source, {"CL501"})] == [22]


REFRESHED = '''
class Chatbot:
    def __init__(self, llm, instructions):
        self.llm = llm
        self.instructions = instructions
        self.system_prompt = instructions.make_system_prompt()
        self.history = []

    def on_user_turn(self, text: str) -> str:
        self.system_prompt = self.instructions.make_system_prompt()
        self.history.append({"role": "user", "content": text})
        return self.llm.complete(system=self.system_prompt, messages=self.history)
'''


def test_a_system_prompt_refreshed_on_every_turn_is_not_kept(tmp_path):
    for refresh in ("        self.system_prompt = self.instructions.make_system_prompt()\n",
                    '        system = "# Role\\n" + self.instructions.make_system_prompt()\n',
                    '        system = WRAPPER.replace("{SYSTEM}", self.instructions.make_system_prompt())\n'):
        bot = REFRESHED.replace("        self.system_prompt = self.instructions.make_system_prompt()\n", refresh)
        files = {"app/__init__.py": "", "app/system_prompt.py": BUILDER, "app/bot.py": bot}
        found = lint_tree(tmp_path / str(len(refresh)), files, "app/system_prompt.py", {"CL101"})
        assert [f.row for f in found] == [10, 11], (refresh, found)


ONE_QUESTION_CLASS = '''
import anthropic


class ClaudeModerator:
    def __init__(self):
        self.client = anthropic.Anthropic()

    def moderate(self, messages: list[str]) -> str:
        listing = "\\n".join(messages)
        request = [{"role": "user", "content": f"Flag any message that breaks the rules:\\n{listing}"}]
        return self.client.messages.create(model="claude-sonnet-4-5", max_tokens=5, messages=request)
'''


def test_a_claude_class_method_that_makes_one_question_of_its_input_is_not_an_adapter(tmp_path):
    assert lint_tree(tmp_path, {"app/moderator.py": ONE_QUESTION_CLASS}, "app/moderator.py", {"CL501"}) == []


def test_a_list_appended_to_and_sent_again_by_its_caller_is_a_conversation():
    followup = FILE_BLOCKS + '''
    def generate_checked(self, system_prompt, user_prompt):
        messages = [{"role": "user", "content": user_prompt}]
        answer = self._call(system_prompt, messages, ["f1"])
        messages.append({"role": "assistant", "content": answer})
        messages.append({"role": "user", "content": "Check your answer."})
        return self._call(system_prompt, messages, ["f1"])
'''
    assert [f.row for f in lint(followup, {"CL301"})] == [11]


def test_a_tool_loop_sending_a_system_prompt_marked_in_init_or_a_history_a_helper_marks_is_not_bare():
    marked_system = MARKS_ONE_REQUEST.replace(
        "        self.use_prompt_caching = use_prompt_caching\n",
        "        self.use_prompt_caching = use_prompt_caching\n"
        '        self.system = [{"type": "text", "text": "You are an agent.", "cache_control": {"type": "ephemeral"}}]\n').replace(
        '"system": system_prompt, "messages": messages, "tools": tools}', '"system": self.system, "messages": messages, "tools": tools}')
    assert lint(marked_system, {"CL501"}) == []
    helper = MARKS_ONE_REQUEST.replace("            response = self.client.messages.create(**params)\n",
                                       "            mark_last_turn(messages)\n            response = self.client.messages.create(**params)\n")
    assert lint("from app.caching import mark_last_turn\n" + helper, {"CL501"}) == []


def test_a_telemetry_table_in_jsonb_keeps_no_conversation(tmp_path):
    schema = SCHEMA.replace("TABLE IF NOT EXISTS conversations", "TABLE IF NOT EXISTS llm_usage_events")
    files = {"app/__init__.py": "", "app/db/initialize.py": schema, "app/llm/openai.py": ADAPTER}
    assert lint_tree(tmp_path, files, "app/llm/openai.py", {"CL102"}) == []


def test_a_template_filled_per_call_by_a_method_named_init_or_from_a_dict_written_per_call_is_per_call(tmp_path):
    named_init = '''    def init_template(self, item):
        self.template = SYSTEM_PROMPT.format(item=item, **self._tool_names)'''
    written = '''    def render(self, item):
        self.prompt_vars["item"] = item
        self.template = SYSTEM_PROMPT.format(**self.prompt_vars)'''
    for i, fill in enumerate((named_init, written)):
        files = {"app/prompts.py": TEMPLATE, "app/agent.py": _agent(fill), "app/__init__.py": ""}
        found = lint_tree(tmp_path / str(i), files, "app/prompts.py", {"CL104"})
        assert [f.row for f in found] == [1], (fill, found)


def test_tables_read_with_pandas_in_listing_order_are_not_prompt_text():
    source = '''
import os
import pandas as pd


def load_examples(folder: str):
    frames = []
    for name in os.listdir(folder):
        frames.append(pd.read_csv(os.path.join(folder, name)))
    return pd.concat(frames).sort_values("example_id")
'''
    assert lint(source, {"CL103"}) == []


# --- spent sets run again: what the round's first cut reported wrongly ------------------------------------------------

def test_skill_names_installed_from_a_set_of_folders_are_not_prompt_text():
    source = '''
def install_skills(file_names: list[str]) -> list[str]:
    installed_skills = []
    top_dirs = {name.split("/")[0] for name in file_names if name.strip()}
    for root_name in top_dirs:
        installed_skills.append(root_name.lower())
    return installed_skills
'''
    assert lint(source, {"CL103"}) == []


def test_a_listing_written_inline_into_one_prompt_is_left_to_its_request():
    source = '''
def commit_prompt_for(files: list[str]) -> str:
    change_types = set()
    for path in files:
        change_types.add("test" if "test" in path else "code")
    commit_prompt = f"""Write a commit message.
- Change types: {", ".join(change_types) if change_types else "general"}"""
    return commit_prompt
'''
    assert lint(source, {"CL103"}) == []


def test_a_claude_class_completion_method_that_is_not_a_chat_is_no_adapter(tmp_path):
    completion = CLAUDE_ADAPTER.replace("def chat(self, chat, **kwargs):", "def generate_message(self, chat, **kwargs):")
    caller = AGENT.replace("lmm.chat(chat)", "lmm.generate_message(chat)")
    files = {"lib/llms/anthropic.py": completion, "lib/llms/__init__.py": "", "lib/agent.py": caller}
    assert lint_tree(tmp_path, files, "lib/llms/anthropic.py", {"CL501"}) == []


def test_a_module_opened_for_its_set_made_text_alone_is_not_judged_for_other_shapes():
    source = '''
TEMPLATE = """You are {agent_name}, an open-source super agent.
''' + "Follow the operating rules of the agent carefully and completely.\n" * 90 + '''"""


def examples_for(kinds: set[str]) -> str:
    example_text = ""
    for kind in kinds:
        example_text += f"Example of {kind}\\n"
    return example_text


def apply_prompt_template(agent_name: str) -> str:
    return TEMPLATE.format(agent_name=agent_name)
'''
    found = lint(source, {"CL103", "CL104"})
    assert [(f.code, f.row) for f in found] == [("CL103", 97)], found


def test_an_answer_appended_only_to_be_stored_leaves_the_list_one_question():
    stored = FILE_BLOCKS.replace('''        messages = [{"role": "user", "content": user_prompt}]
        return self._call(system_prompt + " Answer in JSON.", messages)''', '''        messages = [{"role": "user", "content": user_prompt}]
        answer = self._call(system_prompt + " Answer in JSON.", messages)
        messages.append({"role": "assistant", "content": answer})
        return {"answer": answer, "messages": messages}''')
    assert stored != FILE_BLOCKS and lint(stored, {"CL301"}) == []


def test_a_message_list_the_object_is_made_with_is_computed_once_per_conversation(tmp_path):
    files = {"app/__init__.py": "", "app/system_prompt.py": BUILDER, "app/chatbot.py": KEEPER}
    found = lint_tree(tmp_path, files, "app/chatbot.py", {"CL101"})
    # reported in the prompt builder, where the clock is written into the text, naming the caller that keeps it
    assert [(f.filename.endswith("app/system_prompt.py"), f.row) for f in found] == [(True, 10)], found
    assert "(reached from chatbot.py:6)" in found[0].message
    assert "computed once per conversation" in found[0].message and "on every call" not in found[0].message
