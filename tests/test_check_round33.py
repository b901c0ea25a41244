"""Round 33: what a spent set (holdout37) taught. Each class is written here in its own words, with the shape
beside it that must stay quiet."""

from __future__ import annotations

from _lint import lint, lint_tree

# --- CL501: an agent SDK's Claude model made with no caching switch, in a project that sets no breakpoint ----------

STRANDS_AGENT = {
    "app/config.py": '''
        from dataclasses import dataclass


        @dataclass
        class LLMConfig:
            provider: str
            model_id: str


        DEFAULTS = {"bedrock": LLMConfig(provider="bedrock", model_id="us.anthropic.claude-sonnet-4-5-20250929-v1:0")}
    ''',
    "app/agent.py": '''
        from strands import Agent
        from strands.models import BedrockModel
        from strands.models.litellm import LiteLLMModel


        def bedrock_model(config):
            return BedrockModel(model_id=config["model_id"], region_name=config["region"], temperature=0.2)


        def litellm_model(config):
            return LiteLLMModel(model_id=config["model_id"], params={"max_tokens": 4096})


        def plain_bedrock():
            return BedrockModel()


        def make_agent(model, prompt, tools):
            return Agent(model=model, system_prompt=prompt, tools=tools)
    ''',
}


def test_an_agent_sdks_claude_models_without_a_caching_switch_are_reported(tmp_path):
    found = lint_tree(tmp_path, STRANDS_AGENT, "app/agent.py", {"CL501"})
    assert [f.row for f in found] == [7, 11, 15]
    assert "us.anthropic.claude-sonnet-4-5-20250929-v1:0" in found[0].message
    assert 'cache_config=CacheConfig(strategy="auto")' in found[0].message
    assert "is a Claude model of this code" in found[2].message  # BedrockModel() runs Claude unless told otherwise


def test_a_caching_switch_or_another_providers_model_is_quiet(tmp_path):
    files = dict(STRANDS_AGENT)
    files["app/agent.py"] = '''
        from strands.models import BedrockModel
        from strands.models.litellm import LiteLLMModel


        def cached(config):
            return BedrockModel(model_id=config["model_id"], cache_prompt="default", cache_tools="default")


        def nova():
            return BedrockModel(model_id="amazon.nova-pro-v1:0")


        def gpt():
            return LiteLLMModel(model_id="openai/gpt-4o")
    '''
    assert lint_tree(tmp_path, files, "app/agent.py", {"CL501"}) == []


def test_a_setting_of_a_multi_provider_model_in_a_project_that_names_no_claude_is_quiet(tmp_path):
    files = {"app/agent.py": STRANDS_AGENT["app/agent.py"].replace("        def plain_bedrock():\n            return BedrockModel()\n", "")}
    assert lint_tree(tmp_path, files, "app/agent.py", {"CL501"}) == []


def test_a_caching_switch_anywhere_in_the_project_quiets_the_framework_models(tmp_path):
    files = dict(STRANDS_AGENT)
    files["app/cached.py"] = '''
        from agno.models.anthropic import Claude

        MODEL = Claude(id="claude-sonnet-4-5", cache_system_prompt=True)
    '''
    assert lint_tree(tmp_path, files, "app/agent.py", {"CL501"}) == []


AGNO_AND_PYDANTIC_AI = '''
from agno.agent import Agent
from agno.models.anthropic import Claude
from pydantic_ai import Agent as PydanticAgent
from pydantic_ai.models.anthropic import AnthropicModel


def architect():
    return Agent(model=Claude(id="claude-sonnet-4-5"), instructions=LONG_RULES)


def personalizer():
    return PydanticAgent(AnthropicModel("claude-3-5-sonnet-latest"), system_prompt=LONG_RULES)


def legacy():
    return Agent(model=Claude(id="claude-2.1"))
'''


def test_agno_and_pydantic_ai_claude_models_are_reported_with_their_own_switch():
    found = lint(AGNO_AND_PYDANTIC_AI, {"CL501"})
    assert [f.row for f in found] == [8, 12]
    assert "cache_system_prompt=True" in found[0].message
    assert "anthropic_cache_instructions" in found[1].message


# --- CL501: a conversation kept on the object under a longer name -----------------------------------------------

OUTGOING_MESSAGES = '''
from anthropic import Anthropic


class Backend:
    def __init__(self, system):
        self.system = system
        self.outgoing_messages = []
        self.client = Anthropic()

    def append(self, message):
        self.outgoing_messages.append(message)

    def call_model(self):
        return self.client.messages.create(model="claude-sonnet-4-5", max_tokens=1024, system=self.system,
                                           messages=self.outgoing_messages[1:])
'''


def test_a_conversation_kept_under_a_longer_name_is_the_objects_history():
    found = lint(OUTGOING_MESSAGES, {"CL501"})
    assert [f.row for f in found] == [14]
    assert "self.outgoing_messages" in found[0].message


def test_a_log_of_messages_kept_on_the_object_is_no_conversation():
    assert lint(OUTGOING_MESSAGES.replace("outgoing_messages", "log_messages"), {"CL501"}) == []


# --- CL301: the start of the latest rounds worked out by a helper ---------------------------------------------------

TRUNCATION_NODE = '''
from langchain_core.messages import HumanMessage, SystemMessage


class MessageTruncationNode:
    def __init__(self, max_human_messages=10):
        self.max_human_messages = max_human_messages

    def _func(self, state):
        messages = state.get("messages", [])
        system_msg = messages[0] if messages and isinstance(messages[0], SystemMessage) else None
        other_messages = messages[1:] if system_msg else messages
        truncation_index = self.find_nth_human_message_from_end(other_messages, self.max_human_messages)
        truncated = other_messages[truncation_index:]
        return {"llm_input_messages": [system_msg, *truncated] if system_msg else truncated}

    def find_nth_human_message_from_end(self, messages, n):
        human_indices = [i for i, msg in enumerate(messages) if isinstance(msg, HumanMessage)]
        if len(human_indices) < n:
            return 0
        return human_indices[-n]
'''


def test_a_window_whose_start_a_helper_works_out_is_reported():
    found = lint(TRUNCATION_NODE, {"CL301"})
    assert [f.row for f in found] == [13]
    assert "other_messages" in found[0].message


def test_a_helper_that_finds_the_latest_user_message_alone_is_quiet():
    assert lint(TRUNCATION_NODE.replace("return human_indices[-n]", "return human_indices[-1]"), {"CL301"}) == []


# --- CL301: a history of the code's own records is no conversation --------------------------------------------------

OVERLAY_HISTORY = '''
def apply_overlay(existing_overlay, payload, trigger):
    history = []
    if existing_overlay and isinstance(existing_overlay, dict):
        existing_history = existing_overlay.get("history")
        if isinstance(existing_history, list):
            history.extend(existing_history[-8:])
        history.append({"applied_at": existing_overlay.get("applied_at"), "origin": existing_overlay.get("origin"),
                        "payload": existing_overlay.get("payload")})
    return {"payload": payload, "origin": trigger, "history": history}
'''


def test_a_change_log_kept_to_its_latest_entries_is_quiet():
    assert lint(OVERLAY_HISTORY, {"CL301"}) == []


def test_a_conversation_kept_to_its_latest_messages_is_still_reported():
    source = OVERLAY_HISTORY.replace('{"applied_at": existing_overlay.get("applied_at"), "origin": existing_overlay.get("origin"),\n'
                                     '                        "payload": existing_overlay.get("payload")}',
                                     '{"role": "user", "content": payload}')
    assert "role" in source
    found = lint(source + '''

def send(client, overlay, payload):
    state = apply_overlay(overlay, payload, "user")
    return client.chat.completions.create(model="gpt-4o", messages=state["history"])
''', {"CL301"})
    assert [f.row for f in found] == [6]


# --- CL301: entries older than a window that moves with the conversation dropped or stubbed out --------------------

AGED_OBSERVATIONS = '''
class Conversation:
    def __init__(self, len_observations=5):
        self.all_messages = []
        self.round = 0
        self.len_observations = len_observations

    @property
    def messages(self):
        trunc_before = -1
        if self.len_observations is not None:
            trunc_before = self.round - self.len_observations
        for m in self.all_messages:
            if m.role == "observation" and m.index <= trunc_before:
                continue
            yield m

    def append(self, message):
        self.all_messages.append(message)
'''


def test_observations_older_than_a_moving_window_dropped_from_the_sent_history_are_reported():
    found = lint(AGED_OBSERVATIONS, {"CL301"})
    assert [f.row for f in found] == [13]
    assert "older than a window that moves on every turn" in found[0].message


DONE_STUBS = '''
import anthropic

client = anthropic.Anthropic()


class ResearchAgent:
    def step_prompt(self, curr_step, last_steps=3, last_observation_step=1):
        prompt = self.initial_prompt
        for idx in range(curr_step):
            prompt += "Action: " + self.history_steps[idx]["action"] + "\\nObservation:"
            if curr_step - idx > last_observation_step:
                prompt += "<Done>\\n\\n"
            else:
                prompt += self.history_steps[idx]["observation"]
        return client.messages.create(model="claude-sonnet-4-5", max_tokens=1024, messages=[{"role": "user", "content": prompt}])
'''


def test_observations_stubbed_out_once_they_age_past_a_window_are_reported():
    found = lint(DONE_STUBS, {"CL301"})
    assert [f.row for f in found] == [11]


def test_a_fixed_cut_or_the_newest_entry_alone_is_quiet():
    fixed = AGED_OBSERVATIONS.replace("trunc_before = self.round - self.len_observations", "trunc_before = self.len_observations")
    assert lint(fixed, {"CL301"}) == []
    newest = DONE_STUBS.replace("if curr_step - idx > last_observation_step:", "if idx < curr_step - 1:")
    assert lint(newest, {"CL301"}) == []


# --- CL201: a function named for the tools it finds, handing back an unsorted listing ------------------------------

DISCOVERED_TOOLS = '''
from pathlib import Path


def discover_module_tools(plugins_dir: Path, module_name: str) -> list[str]:
    results = []
    tools_dir = plugins_dir / module_name / "tools"
    for py in tools_dir.glob("*.py"):
        if py.name == "__init__.py":
            continue
        results.append(str(py.resolve()))
    return results


def discover_sorted_tools(tools_dir: Path) -> list[str]:
    results = []
    for py in sorted(tools_dir.glob("*.py")):
        results.append(str(py))
    return results


def list_module_files(tools_dir: Path) -> list[str]:
    results = []
    for py in tools_dir.glob("*.py"):
        results.append(str(py))
    return results
'''


def test_tools_found_in_an_unsorted_listing_and_handed_back_are_reported():
    found = lint(DISCOVERED_TOOLS, {"CL201"})
    assert [f.row for f in found] == [7]
    assert "the tools discover_module_tools() hands back are loaded" in found[0].message


# --- CL501: a sender handed a conversation its caller rebuilds from stored turns ------------------------------------

STORED_CHAT = {
    "ai_eval/llm.py": '''
        from enum import Enum
        from litellm import completion


        class SupportedModels(Enum):
            GPT4O = "gpt-4o"
            CLAUDE_SONNET = "claude-3-5-sonnet-20240620"


        def get_llm_response(model, api_key, messages, api_base):
            return completion(model=model, api_key=api_key, messages=messages).choices[0].message.content
    ''',
    "ai_eval/shortanswer.py": '''
        from .llm import get_llm_response


        class ShortAnswerBlock:
            USER_KEY = "USER"
            LLM_KEY = "LLM"

            def handle(self, user_submission):
                messages = [{"role": "system", "content": self.evaluation_prompt}]
                for i in range(len(self.messages[self.USER_KEY])):
                    messages.append({"content": self.messages[self.USER_KEY][i], "role": "user"})
                    messages.append({"content": self.messages[self.LLM_KEY][i], "role": "assistant"})
                messages.append({"role": "user", "content": user_submission})
                response = get_llm_response(self.model, self.api_key, messages, self.api_url)
                self.messages[self.USER_KEY].append(user_submission)
                self.messages[self.LLM_KEY].append(response)
                return response
    ''',
}


def test_a_sender_handed_a_conversation_rebuilt_from_stored_turns_is_reported(tmp_path):
    found = lint_tree(tmp_path, STORED_CHAT, "ai_eval/llm.py", {"CL501"})
    assert [f.row for f in found] == [11]
    assert "shortanswer.py:14 rebuilds from `self.messages`" in found[0].message
    assert "claude-3-5-sonnet-20240620" in found[0].message


def test_turns_rebuilt_but_never_stored_or_a_project_that_sets_a_breakpoint_are_quiet(tmp_path):
    unstored = dict(STORED_CHAT)
    unstored["ai_eval/shortanswer.py"] = STORED_CHAT["ai_eval/shortanswer.py"].replace(
        "                self.messages[self.USER_KEY].append(user_submission)\n                self.messages[self.LLM_KEY].append(response)\n", "")
    assert "append(response)" not in unstored["ai_eval/shortanswer.py"]
    assert lint_tree(tmp_path / "a", unstored, "ai_eval/llm.py", {"CL501"}) == []
    marked = dict(STORED_CHAT)
    marked["ai_eval/cache.py"] = 'BREAKPOINT = {"type": "text", "cache_control": {"type": "ephemeral"}}\n'
    assert lint_tree(tmp_path / "b", marked, "ai_eval/llm.py", {"CL501"}) == []


# --- a Claude model a litellm proxy's config lists is a setting the app runs with ---------------------------------

def test_a_claude_model_in_a_litellm_proxy_config_is_the_projects_setting(tmp_path):
    files = {
        "config/litellm_config.yml": '''
            model_list:
              - model_name: "bedrock/us.anthropic.claude-3-5-sonnet-20241022-v2:0"
                litellm_params:
                  model: bedrock/us.anthropic.claude-3-5-sonnet-20241022-v2:0
        ''',
        "pyproject.toml": '[project]\nname = "bots"\n',
        "bots/chatbots.py": '''
            from langchain_litellm import ChatLiteLLM


            class Chatbot:
                def get_llm(self):
                    return ChatLiteLLM(model=f"{self.proxy_prefix}{self.model}", streaming=True)
        ''',
    }
    found = lint_tree(tmp_path, files, "bots/chatbots.py", {"CL501"})
    assert [f.row for f in found] == [6]
    assert "bedrock/us.anthropic.claude-3-5-sonnet-20241022-v2:0" in found[0].message


# --- CL101: a step or turn counter a system prompt's builder writes into the prompt --------------------------------

COUNTED_SYSTEM_PROMPT = '''
from typing import List, Optional

SYSTEM_PROMPT = "You are a security assessment agent. " * 40


def get_system_prompt(target: str, objective: str, current_step: int = 0, max_steps: int = 100,
                      plan_snapshot: Optional[str] = None) -> str:
    parts: List[str] = [SYSTEM_PROMPT, f"Target: {target}", f"Objective: {objective}", f"Budget: {max_steps} steps"]
    if plan_snapshot:
        parts.append(plan_snapshot)
    if current_step > 0:
        parts.append(f"Current step: {current_step}")
    return "\\n".join(parts)


def build_user_message(question: str, step: int) -> str:
    return f"Step {step}: {question}"
'''


def test_a_counter_a_system_prompt_builder_writes_into_the_prompt_is_reported():
    found = lint(COUNTED_SYSTEM_PROMPT, {"CL101"})
    assert [f.row for f in found] == [12]
    assert "`get_system_prompt` writes the counter `current_step`" in found[0].message


def test_a_limit_or_a_counter_only_tested_is_quiet():
    source = COUNTED_SYSTEM_PROMPT.replace('parts.append(f"Current step: {current_step}")', 'parts.append("Keep going.")')
    assert lint(source, {"CL101"}) == []


# --- CL501: breakpoints behind a switch that is off by default and that nothing turns on ---------------------------

OFF_SWITCH = {
    "kiln/base_adapter.py": '''
        from dataclasses import dataclass


        @dataclass
        class AdapterConfig:
            allow_saving: bool = True
            automatic_prompt_caching: bool = False
    ''',
    "kiln/litellm_adapter.py": '''
        import litellm


        class LiteLlmAdapter:
            def __init__(self, config):
                self.base_adapter_config = config

            async def run(self, messages, model):
                completion_kwargs = {"model": model, "messages": messages}
                if self.base_adapter_config.automatic_prompt_caching:
                    completion_kwargs["cache_control_injection_points"] = [{"location": "message", "index": -1}]
                return await litellm.acompletion(**completion_kwargs)
    ''',
}


def test_breakpoints_behind_a_switch_nothing_turns_on_are_reported(tmp_path):
    found = lint_tree(tmp_path, OFF_SWITCH, "kiln/litellm_adapter.py", {"CL501"})
    assert [f.row for f in found] == [10]
    assert "only when `automatic_prompt_caching` is on" in found[0].message
    assert "base_adapter.py:7" in found[0].message


def test_a_switch_the_app_turns_on_is_quiet(tmp_path):
    files = dict(OFF_SWITCH)
    files["kiln/app.py"] = '''
        from kiln.base_adapter import AdapterConfig

        CONFIG = AdapterConfig(automatic_prompt_caching=True)
    '''
    assert lint_tree(tmp_path, files, "kiln/litellm_adapter.py", {"CL501"}) == []


# --- the review's mends ----------------------------------------------------------------------------------------------

LANGCHAIN_BOT = '''
    from langchain_anthropic import ChatAnthropic


    class Bot:
        def __init__(self):
            self.llm = ChatAnthropic(model="claude-sonnet-4-5", max_tokens=2048)

        async def answer(self, messages):
            return await self.llm.ainvoke(messages)
'''


def test_words_that_turn_no_anthropic_caching_on_do_not_quiet_the_project(tmp_path):
    for i, other in enumerate(['payload = {"prompt": "hi", "cache_prompt": True}\n', "class Registry:\n    def __init__(self):\n        self.cache_tools = {}\n",
                               'from pathlib import Path\nanthropic_cache_dir = Path("~/.cache")\n']):
        files = {"app/bot.py": LANGCHAIN_BOT, "app/other.py": other}
        assert [f.row for f in lint_tree(tmp_path / str(i), files, "app/bot.py", {"CL501"})] == [9]


def test_an_sdks_current_caching_switches_quiet_the_project(tmp_path):
    for i, other in enumerate(['from strands.models import BedrockModel, CacheConfig\n'
                               'MODEL = BedrockModel(model_id="us.anthropic.claude-sonnet-4-5-20250929-v1:0", cache_config=CacheConfig(strategy="auto"))\n',
                               'from pydantic_ai import CachePoint\nPARTS = ["Summarize.", CachePoint()]\n',
                               'SETTINGS = {"anthropic_cache": True, "max_tokens": 4096}\n']):
        files = {"app/bot.py": LANGCHAIN_BOT, "app/other.py": other}
        assert lint_tree(tmp_path / str(i), files, "app/bot.py", {"CL501"}) == []


def test_a_model_unpacked_from_settings_or_held_in_a_constant_is_read_for_what_it_is():
    source = '''
from strands import Agent
from strands.models import BedrockModel

NOVA = {"model_id": "amazon.nova-pro-v1:0", "region_name": "us-east-1"}
MODEL_ID = "amazon.nova-pro-v1:0"


def unpacked(tools):
    return Agent(model=BedrockModel(**NOVA), tools=tools)


def constant(tools):
    return Agent(model=BedrockModel(model_id=MODEL_ID), tools=tools)
'''
    assert lint(source, {"CL501"}) == []


def test_a_pydantic_ai_agent_made_with_a_claude_model_string_is_reported():
    source = '''
from pydantic_ai import Agent

agent = Agent("anthropic:claude-sonnet-4-5", system_prompt="You are a careful analyst. " * 100)
other = Agent("openai:gpt-4o", system_prompt="You are a careful analyst.")
'''
    found = lint(source, {"CL501"})
    assert [f.row for f in found] == [3]
    assert "anthropic_cache_instructions" in found[0].message


def test_an_outbox_emptied_after_each_send_is_no_conversation_kept_on_the_object():
    source = OUTGOING_MESSAGES.replace("outgoing_messages", "pending_messages")
    assert lint(source, {"CL501"}) == []


FEW_SHOT_CALLER = {
    "app/llm.py": '''
        from litellm import completion

        DEFAULT_MODEL = "claude-3-5-sonnet-20240620"


        def get_llm_response(model, messages):
            return completion(model=model, messages=messages).choices[0].message.content
    ''',
    "app/chat.py": '''
        from app.llm import get_llm_response


        class Classifier:
            def __init__(self, examples, model):
                self.model = model
                self.examples = []
                for q, a in examples:
                    self.examples.append({"role": "user", "content": q})
                    self.examples.append({"role": "assistant", "content": a})

            def classify(self, text):
                messages = [{"role": "system", "content": "Label the ticket."}]
                for ex in self.examples:
                    messages.append(ex)
                messages.append({"role": "user", "content": text})
                return get_llm_response(self.model, messages)
    ''',
}


def test_examples_filled_once_when_the_object_is_made_are_no_stored_conversation(tmp_path):
    assert lint_tree(tmp_path, FEW_SHOT_CALLER, "app/llm.py", {"CL501"}) == []


def test_a_conversation_spliced_from_stored_turns_is_a_stored_conversation(tmp_path):
    files = dict(FEW_SHOT_CALLER)
    files["app/chat.py"] = '''
        from app.llm import get_llm_response


        class Chat:
            def __init__(self, model):
                self.model = model
                self.turns = []

            def send(self, text):
                reply = get_llm_response(self.model, [{"role": "system", "content": "Be brief."}, *self.turns, {"role": "user", "content": text}])
                self.turns.append({"role": "user", "content": text})
                self.turns.append({"role": "assistant", "content": reply})
                return reply
    '''
    found = lint_tree(tmp_path, files, "app/llm.py", {"CL501"})
    assert [f.row for f in found] == [7]
    assert "chat.py:10 rebuilds from `self.turns`" in found[0].message


def test_a_walk_for_an_archive_or_one_that_skips_the_newer_entries_is_quiet():
    source = '''
import json


class Conversation:
    def __init__(self, keep=20):
        self.messages = []
        self.round = 0
        self.keep = keep

    def archive_older(self, path):
        cutoff = self.round - self.keep
        with open(path, "a") as f:
            for m in self.messages:
                if m["round"] > cutoff:
                    continue
                f.write(json.dumps(m) + "\\n")

    def newest(self):
        cutoff = self.round - self.keep
        kept = []
        for m in self.messages:
            if m["round"] > cutoff:
                continue
            kept.append(m)
        return kept
'''
    found = lint(source, {"CL301"})
    assert found == []


def test_a_stub_written_as_a_dict_and_a_walk_by_enumerate_are_reported():
    source = '''
def build_messages(history, keep_tool_results=3):
    out = []
    n = len(history)
    for i, m in enumerate(history):
        if m["role"] == "tool" and i < n - keep_tool_results:
            out.append({"role": "tool", "content": "[result elided]"})
        else:
            out.append(m)
    return out
'''
    found = lint(source, {"CL301"})
    assert [f.row for f in found] == [5]


def test_turns_stamped_with_a_time_under_other_key_names_are_still_a_conversation():
    source = '''
import time
import anthropic

client = anthropic.Anthropic()


class Companion:
    def __init__(self):
        self.history = []

    def chat(self, text):
        self.history.append({"sender": "user", "body": text, "sent_at": time.time()})
        reply = client.messages.create(model="claude-sonnet-4-5", max_tokens=512, system="Be friendly.",
                                       messages=self.history[-20:])
        self.history.append({"sender": "assistant", "body": reply.content[0].text, "sent_at": time.time()})
        return reply
'''
    assert [f.row for f in lint(source, {"CL301"})] == [14]


def test_tools_a_function_or_its_caller_sorts_are_quiet():
    sorted_inside = DISCOVERED_TOOLS.replace("        results.append(str(py.resolve()))\n    return results",
                                             "        results.append(str(py.resolve()))\n    results.sort()\n    return results")
    assert "results.sort()" in sorted_inside
    assert lint(sorted_inside, {"CL201"}) == []
    sorted_by_caller = DISCOVERED_TOOLS + '''

def load_tools(plugins_dir, name):
    return [load(path) for path in sorted(discover_module_tools(plugins_dir, name))]
'''
    assert lint(sorted_by_caller, {"CL201"}) == []


def test_a_side_named_by_text_or_a_prompt_built_once_at_import_is_no_counter():
    source = '''
ROLES = ["researcher", "writer", "editor"]


def build_system_prompt(role: str, step: int) -> str:
    return f"You are the {role}, stage {step} of a {len(ROLES)}-stage pipeline. " + "Follow the house style. " * 40


STAGE_PROMPTS = [build_system_prompt(role, step=i + 1) for i, role in enumerate(ROLES)]


def build_game_system_prompt(turn: str) -> str:
    return f"You play the {turn} pieces for the whole game."
'''
    assert lint(source, {"CL101"}) == []


def test_a_counter_written_with_percent_or_str_is_reported():
    source = '''
BASE = "You are a security assessment agent. " * 40


def get_system_prompt(target, current_step=0):
    return BASE + "\\nTarget: %s\\nCurrent step: %d" % (target, current_step)


def build_instructions(target, iteration):
    return BASE + "\\nIteration " + str(iteration)
'''
    assert [f.row for f in lint(source, {"CL101"})] == [5, 9]


def test_a_switch_handed_on_with_a_value_or_beside_a_breakpoint_that_is_on_is_quiet(tmp_path):
    handed = {
        "app/serializer.py": '''
            class Serializer:
                @staticmethod
                def serialize(content, use_cache: bool = False):
                    if use_cache:
                        return [{"type": "text", "text": content, "cache_control": {"type": "ephemeral"}}]
                    return content
        ''',
        "app/agent.py": '''
            from app.serializer import Serializer


            def to_anthropic(message):
                return Serializer.serialize(message.content, use_cache=message.cache)
        ''',
    }
    assert lint_tree(tmp_path / "a", handed, "app/serializer.py", {"CL501"}) == []
    beside = dict(OFF_SWITCH)
    beside["kiln/litellm_adapter.py"] = OFF_SWITCH["kiln/litellm_adapter.py"].replace(
        "                if self.base_adapter_config.automatic_prompt_caching:",
        '                completion_kwargs["tools"][-1]["cache_control"] = {"type": "ephemeral"}\n'
        "                if self.base_adapter_config.automatic_prompt_caching:")
    assert lint_tree(tmp_path / "b", beside, "kiln/litellm_adapter.py", {"CL501"}) == []
