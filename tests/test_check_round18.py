"""Round 18: classes read from a spent set's misses and false findings (holdout22: an SRE agent, a Discord bot,
evaluation harnesses).

- CL101: a message written as `dict(role="system", content=...)` is a message; a clock read zoned with
  `.astimezone()` is the same clock; a Jinja template rendered with the clock in its context; a prompt renderer
  that many modules call is reported once, where the clock is read, not at every caller.
- CL301: a helper of the module that edits the messages of the history it is handed; lists of log lines named
  `log_messages` are not a conversation.
- CL203: the tools taken off the last pass of the loop (`tools = None if i == max_steps else tools`), sent through
  the app's own LLM wrapper (`self.llm.completion(messages=..., tools=...)`); a token count is not a request.
"""

from __future__ import annotations

import textwrap

from _lint import lint, lint_tree

from cachelint.check.engine import lint_source


DISCORD_BOT = '''
from datetime import datetime
from openai import AsyncOpenAI

client = AsyncOpenAI()


async def on_message(chain, config):
    messages = []
    for node in chain:
        messages.append(dict(content=node.text, role=node.role))
    if system_prompt := config.get("system_prompt"):
        now = datetime.now().astimezone()
        system_prompt = system_prompt.replace("{date}", now.strftime("%B %d %Y")).replace("{time}", now.strftime("%H:%M:%S"))
        messages.append(dict(role="system", content=system_prompt))
    kwargs = dict(model=config["model"], messages=messages[::-1], stream=True)
    async for chunk in await client.chat.completions.create(**kwargs):
        yield chunk
'''


def test_a_zoned_clock_in_a_system_message_written_as_dict_call_is_found():
    found = lint(DISCORD_BOT, {"CL101"})
    assert [f.row for f in found] == [13], found
    assert "`datetime.now().strftime()` reaches the system prompt of chat.completions.create()" in found[0].message
    assert "changes every second" in found[0].message


def test_the_same_bot_with_a_date_only_is_not_reported_as_changing_every_second():
    daily = DISCORD_BOT.replace('.replace("{time}", now.strftime("%H:%M:%S"))', "")
    assert all("every second" not in f.message for f in lint(daily, {"CL101"}))


def test_a_clock_replaced_into_another_zone_keeps_its_resolution():
    source = '''
    from datetime import datetime, timezone
    from openai import OpenAI

    def answer(history, template):
        stamp = datetime.now().replace(tzinfo=timezone.utc).isoformat()
        system = {"role": "system", "content": template + stamp}
        return OpenAI().chat.completions.create(model="gpt-4o", messages=[system, *history])
    '''
    found = lint(source, {"CL101"})
    assert [f.row for f in found] == [5] and "changes on every call" in found[0].message, found


JINJA_RENDERER = '''
from datetime import datetime, timezone
from jinja2 import Environment
from openai import OpenAI

def render(prompt, context=None):
    template = Environment().from_string(prompt)
    if context is None:
        context = {}
    now = datetime.now(timezone.utc)
    context.update({"now": f"{now}"})
    return template.render(**context)

def ask(history):
    system = render("You are an SRE assistant.", {})
    return OpenAI().chat.completions.create(model="gpt-4o", messages=[{"role": "system", "content": system}, *history])
'''


def test_a_clock_put_into_a_jinja_templates_context_is_found():
    found = lint(JINJA_RENDERER, {"CL101"})
    assert [f.row for f in found] == [9], found


def test_a_jinja_template_rendered_with_a_fixed_context_is_quiet():
    fixed = JINJA_RENDERER.replace('context.update({"now": f"{now}"})', 'context.update({"cluster": "prod"})')
    assert lint(fixed, {"CL101"}) == []


SHARED_RENDERER = '''
from datetime import datetime, timezone
from jinja2 import Environment


def load_and_render_prompt(prompt: str, context: dict | None = None) -> str:
    template = Environment().from_string(prompt)
    context = dict(context or {})
    context["now"] = f"{datetime.now(timezone.utc)}"
    return template.render(**context)
'''
CALLER = '''
from openai import OpenAI
from prompts import load_and_render_prompt


def {name}(history):
    system = load_and_render_prompt("builtin://{name}.jinja2", {{}})
    return OpenAI().chat.completions.create(model="gpt-4o", messages=[{{"role": "system", "content": system}}, *history])
'''


def test_a_prompt_renderer_many_modules_call_is_reported_once_where_the_clock_is_read(tmp_path):
    files = {"prompts.py": SHARED_RENDERER, "chat.py": CALLER.format(name="chat"), "investigate.py": CALLER.format(name="investigate")}
    found = lint_tree(tmp_path, files, "prompts.py", {"CL101"})
    assert [f.row for f in found] == [8], found
    assert "`load_and_render_prompt()` renders, a prompt renderer called from 2 places of the project" in found[0].message
    assert found[0].confidence == "likely"
    assert lint_tree(tmp_path, files, "chat.py", {"CL101"}) == []  # not again at each caller
    assert lint_tree(tmp_path, files, "investigate.py", {"CL101"}) == []


def test_a_renderer_with_one_caller_is_reported_at_the_request(tmp_path):
    files = {"prompts.py": SHARED_RENDERER, "chat.py": CALLER.format(name="chat")}
    assert lint_tree(tmp_path, files, "prompts.py", {"CL101"}) == []
    found = lint_tree(tmp_path, files, "chat.py", {"CL101"})
    # reported in the renderer, where the clock is read, naming the request that takes it in
    assert [(f.filename, f.row) for f in found] == [(str(tmp_path / "prompts.py"), 8)], found
    assert "chat.py:6)" in found[0].message and found[0].confidence == "certain"


def test_a_function_not_named_for_prompts_is_not_a_shared_renderer(tmp_path):
    helper = SHARED_RENDERER.replace("load_and_render_prompt(prompt: str, context", "stamp(text: str, context")
    caller = CALLER.replace("load_and_render_prompt", "stamp")
    files = {"prompts.py": helper, "chat.py": caller.format(name="chat"), "investigate.py": caller.format(name="investigate")}
    assert lint_tree(tmp_path, files, "prompts.py", {"CL101"}) == []
    assert len(lint_tree(tmp_path, files, "chat.py", {"CL101"})) == 1


TRUNCATED_TOOLS = '''
from openai import OpenAI

client = OpenAI()


def truncate_tool_messages(conversation_history: list, tool_size: int) -> None:
    for message in conversation_history:
        if message.get("role") == "tool":
            message["content"] = message["content"][:tool_size]


def chat(conversation_history: list, ask: str):
    tool_size = 10000 // max(1, len(conversation_history))
    truncate_tool_messages(conversation_history, tool_size)
    conversation_history.append({"role": "user", "content": ask})
    return client.chat.completions.create(model="gpt-4o", messages=conversation_history)
'''


def test_a_helper_that_edits_the_messages_of_the_history_it_is_handed_is_found():
    found = lint(TRUNCATED_TOOLS, {"CL301"})
    assert [f.row for f in found] == [9], found
    assert "edits an earlier message of the history `conversation_history`" in found[0].message


def test_a_helper_that_writes_the_same_constant_into_every_message_is_quiet():
    same = TRUNCATED_TOOLS.replace('message["content"] = message["content"][:tool_size]', 'message["name"] = "tool"')
    assert lint(same, {"CL301"}) == []


def test_a_helper_handed_another_list_is_quiet():
    other = TRUNCATED_TOOLS.replace("truncate_tool_messages(conversation_history, tool_size)", "truncate_tool_messages([], tool_size)")
    assert lint(other, {"CL301"}) == []


def test_a_log_of_timestamped_lines_is_not_a_conversation():
    source = '''
    import time
    from openai import OpenAI

    LOG_MESSAGES = []

    def buffer_log(message):
        LOG_MESSAGES.append(f"[{time.strftime('%H:%M:%S')}] {message}")
        if len(LOG_MESSAGES) > 50:
            LOG_MESSAGES.pop(0)

    def ask(question):
        buffer_log(question)
        return OpenAI().chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": question}])
    '''
    assert lint(source, {"CL301"}) == []


LAST_STEP = '''
class ToolCallingLLM:
    def __init__(self, llm, max_steps=10):
        self.llm = llm
        self.max_steps = max_steps

    def call(self, messages, tools):
        i = 0
        while i < self.max_steps:
            i += 1
            tools = None if i == self.max_steps else tools
            response = self.llm.completion(messages=messages, tools=tools, tool_choice="auto" if tools else None)
            messages.append(response.choices[0].message.model_dump())
            if not response.choices[0].message.tool_calls:
                return response
'''


def test_tools_taken_off_the_last_pass_of_a_loop_through_the_apps_llm_wrapper_are_found():
    found = lint(LAST_STEP, {"CL203"})
    assert [f.row for f in found] == [10], found
    assert "`tools = None if i == self.max_steps else tools` takes the tools off a request" in found[0].message
    assert "on the last pass of the loop" in found[0].message


def test_the_same_tools_on_every_pass_are_quiet():
    kept = LAST_STEP.replace("            tools = None if i == self.max_steps else tools\n", "")
    assert lint(kept, {"CL203"}) == []


def test_tools_chosen_by_something_other_than_the_last_pass_are_not_this_finding():
    other = LAST_STEP.replace("tools = None if i == self.max_steps else tools", "tools = None if not tools else tools")
    assert lint(other, {"CL203"}) == []


def test_a_token_count_beside_a_request_is_not_a_request():
    source = '''
    import litellm

    class DefaultLLM:
        def count(self, messages, tools):
            without = litellm.token_counter(model=self.model, messages=messages)
            total = litellm.token_counter(model=self.model, messages=messages, tools=tools)
            return total - without

        def completion(self, messages, tools):
            return litellm.completion(model=self.model, messages=messages, tools=tools)
    '''
    assert lint(source, {"CL203"}) == []


def test_a_completion_method_of_something_not_named_for_an_llm_is_not_a_request():
    source = LAST_STEP.replace("self.llm.completion(", "self.editor.completion(")
    assert lint(source, {"CL203"}) == []


LITELLM_ADAPTER = '''
import litellm


class {cls}:
    def __init__(self, model):
        self.model = model

    def query(self, messages, tools):
        while True:
            response = litellm.completion(model=self.model, messages=messages, tools=tools)
            messages.append(response.choices[0].message.model_dump())
            if not response.choices[0].message.tool_calls:
                return response
            messages.append({{"role": "tool", "tool_call_id": "1", "content": "done"}})
'''


def test_a_litellm_loop_where_the_project_sets_a_claude_default_is_found(tmp_path):
    config = 'DEFAULT_MODEL = "anthropic/claude-3-5-sonnet-20241022"\n'
    found = lint_tree(tmp_path, {"config.py": config, "agent.py": LITELLM_ADAPTER.format(cls="Agent")}, "agent.py", {"CL501"})
    assert len(found) == 1 and "the project names `anthropic/claude-3-5-sonnet-20241022`" in found[0].message, found


def test_a_claude_model_named_only_as_a_table_key_or_a_keyword_is_not_a_setting(tmp_path):
    for config in ('MODELS = {\n    "claude-3-5-sonnet-20240620": "AnthropicModel",\n}\n',
                   'agent = Agent(\n    model=LiteLlm(model="anthropic/claude-3-7-sonnet-20250219"),\n)\n',
                   '# DEFAULT_MODEL = "anthropic/claude-3-5-sonnet-20241022"\n'):
        files = {"config.py": config, "agent.py": LITELLM_ADAPTER.format(cls="Agent")}
        assert lint_tree(tmp_path, files, "agent.py", {"CL501"}) == [], config


def test_a_claude_default_in_a_test_is_not_a_setting(tmp_path):
    (tmp_path / "tests").mkdir()
    files = {"tests/test_agent.py": 'MODEL = "anthropic/claude-3-5-sonnet-20241022"\n', "agent.py": LITELLM_ADAPTER.format(cls="Agent")}
    assert lint_tree(tmp_path, files, "agent.py", {"CL501"}) == []


def test_the_litellm_adapter_of_another_provider_is_not_sent_to_claude(tmp_path):
    config = 'DEFAULT_MODEL = "anthropic/claude-3-5-sonnet-20241022"\n'
    for cls in ("GroqModel", "OpenAiModel", "OllamaModel"):
        files = {"config.py": config, "agent.py": LITELLM_ADAPTER.format(cls=cls)}
        assert lint_tree(tmp_path, files, "agent.py", {"CL501"}) == [], cls


HAYSTACK = '''
import glob
import os


class NeedleTester:
    def read_context_files(self):
        context = ""
        while len(context) < self.max_context_length:
            for file in glob.glob(os.path.join(self.haystack_dir, "*.txt")):
                with open(file) as f:
                    context += f.read()
        return context
'''


def test_a_context_read_from_an_unsorted_listing_of_a_material_folder_is_found():
    found = lint(HAYSTACK, {"CL103"})
    assert [f.row for f in found] == [9] and "collected into `context`" in found[0].message, found


def test_a_context_read_from_a_listing_that_names_no_prompt_material_is_quiet():
    assert lint(HAYSTACK.replace("self.haystack_dir", "self.data_dir"), {"CL103"}) == []


def test_the_same_context_read_from_a_sorted_listing_is_quiet():
    assert lint(HAYSTACK.replace("in glob.glob(", "in sorted(glob.glob(").replace('"*.txt")):', '"*.txt"))):'), {"CL103"}) == []


def test_toolsets_loaded_in_an_unsorted_listing_are_found():
    source = '''
    import os

    def load_builtin_toolsets():
        all_toolsets = []
        for filename in os.listdir(THIS_DIR):
            if filename.endswith(".yaml"):
                all_toolsets.extend(load_toolsets_from_file(os.path.join(THIS_DIR, filename)))
        return all_toolsets
    '''
    found = lint(source, {"CL201"})
    assert [f.row for f in found] == [5] and "tools are loaded into all_toolsets" in found[0].message, found
    assert lint(source.replace("in os.listdir(THIS_DIR):", "in sorted(os.listdir(THIS_DIR)):"), {"CL201"}) == []


AUTO_INVOKE = '''
class ChatCompletionClientBase:
    async def get_chat_message_contents(self, chat_history, settings):
        for request_index in range(settings.maximum_auto_invoke_attempts):
            completions = await self._inner_get_chat_message_contents(chat_history, settings)
            calls = [item for item in completions[0].items if item.is_function_call]
            if not calls:
                return completions
            chat_history.add_message(completions[0])
            await self.invoke_calls(calls, chat_history)
        else:
            self._reset_function_choice_settings(settings)
            return await self._inner_get_chat_message_contents(chat_history, settings)
'''


def test_a_final_step_after_the_loops_else_with_the_tools_reset_is_found():
    found = lint(AUTO_INVOKE, {"CL203"})
    assert [f.row for f in found] == [11] and "`self._reset_function_choice_settings(settings)` takes the tools off" in found[0].message, found


def test_a_final_step_with_the_tools_kept_is_quiet():
    assert lint(AUTO_INVOKE.replace("            self._reset_function_choice_settings(settings)\n", ""), {"CL203"}) == []


def test_tools_narrowed_to_one_on_the_last_turn_are_found():
    source = '''
    class ToolUsingExecutor:
        async def run(self, agents, tools, plan):
            for current_turn in range(self.max_tool_call_times):
                for name in agents:
                    if current_turn == self.max_tool_call_times - 1:
                        tool = [t for t in tools[name] if t["name"] == "submit_task"]
                    else:
                        tool = tools[name]
                    await self.real_execution_agents[name].astep(plan[name], tool)
    '''
    found = lint(source, {"CL203"})
    assert [f.row for f in found] == [6] and "once the steps reach their limit" in found[0].message, found


def test_tools_emptied_once_a_tool_call_limit_is_reached_are_found():
    source = '''
    class Agent:
        def _build_model_request_parameters(self, task):
            if self.tool_call_limit and self._tool_call_count >= self.tool_call_limit:
                tool_definitions = []
            else:
                tool_definitions = list(self.tool_manager.get_tool_definitions())
            return {"tools": tool_definitions, "output": task.output}
    '''
    found = lint(source, {"CL203"})
    assert [f.row for f in found] == [4], found


def test_tools_chosen_by_a_setting_are_not_a_last_pass():
    source = '''
    class Agent:
        def _build(self, task):
            if self.disable_tools:
                tool_definitions = []
            else:
                tool_definitions = list(self.tool_manager.get_tool_definitions())
            return {"tools": tool_definitions}
    '''
    assert lint(source, {"CL203"}) == []


def test_system_messages_written_as_dict_calls_in_a_list_sent_elsewhere_are_analyzed():
    source = '''
    from datetime import datetime

    def build(history, question):
        messages = [dict(role="system", content=f"Time: {datetime.now()}"), *history, dict(role="user", content=question)]
        return messages

    def build_again(question):
        return [dict(role="system", content=PROMPT), dict(role="user", content=question)]
    '''
    found = [f for f in lint_source(textwrap.dedent(source).lstrip("\\n"), "app.py")]
    assert all(f.code != "CL999" for f in found), found
    assert [f.code for f in found if f.code == "CL101"] == ["CL101"], found


def test_a_stream_read_in_a_for_loop_is_not_a_loop_around_the_request():
    found = lint(DISCORD_BOT, {"CL101"})
    assert "computed on every call" in found[0].message and "once per conversation" not in found[0].message, found


def test_a_renderer_whose_callers_send_its_text_as_the_newest_turn_is_not_a_shared_system_prompt(tmp_path):
    user_caller = CALLER.replace("system = load_and_render_prompt", "question = load_and_render_prompt").replace(
        '[{{"role": "system", "content": system}}, *history]', '[*history, {{"role": "user", "content": question}}]')
    files = {"prompts.py": SHARED_RENDERER, "chat.py": user_caller.format(name="chat"), "investigate.py": user_caller.format(name="investigate")}
    assert lint_tree(tmp_path, files, "prompts.py", {"CL101"}) == []
    assert lint_tree(tmp_path, files, "chat.py", {"CL101"}) == []  # the newest turn: not reused yet


def test_calls_of_another_packages_function_of_the_same_name_are_not_callers(tmp_path):
    renderer = SHARED_RENDERER.replace("load_and_render_prompt", "render_template")
    view = 'from flask import render_template\n\n\ndef page():\n    system_prompt = render_template("index.html")\n    return system_prompt\n'
    files = {"prompts.py": renderer, "chat.py": CALLER.replace("load_and_render_prompt", "render_template").format(name="chat"),
             "admin.py": view, "views.py": view}
    assert lint_tree(tmp_path, files, "prompts.py", {"CL101"}) == []
    assert len(lint_tree(tmp_path, files, "chat.py", {"CL101"})) == 1  # its one real caller reports it, at the request


def test_a_function_with_a_prompt_tokens_parameter_is_not_a_prompt_renderer(tmp_path):
    chunk = '''
    import time


    def get_data_openai(content, model, prompt_tokens=0, completion_tokens=0):
        return {"id": "x", "created": int(time.time()), "model": model, "usage": {"prompt_tokens": prompt_tokens}}
    '''
    caller = 'from api_utils import get_data_openai\n\n\ndef stream(x):\n    system_prompt = get_data_openai(x, "m")\n    return system_prompt\n'
    files = {"api_utils.py": chunk, "a.py": caller, "b.py": caller}
    assert lint_tree(tmp_path, files, "api_utils.py", {"CL101"}) == []


def test_a_setting_that_mentions_a_limit_is_not_a_last_pass():
    for test in ('user.plan == "limited"', 'sys.argv[1] == "--final-only"'):
        source = f'''
        class Agent:
            def _build(self, user):
                if {test}:
                    tools = []
                else:
                    tools = ALL_TOOLS
                return {{"tools": tools}}
        '''
        assert lint(source, {"CL203"}) == [], test


def test_a_flag_named_for_the_final_answer_is_not_a_last_pass():
    source = LAST_STEP.replace("tools = None if i == self.max_steps else tools", "tools = None if self.final_answer_only else tools")
    assert lint(source, {"CL203"}) == []


def test_helpers_that_clear_a_cache_or_tool_calls_are_not_tools_taken_off():
    for helper in ("self.clear_tool_cache()", "self._remove_tool_calls_without_results(history)"):
        source = AUTO_INVOKE.replace("self._reset_function_choice_settings(settings)", helper)
        assert lint(source, {"CL203"}) == [], helper


def test_a_helper_that_edits_its_own_deep_copy_is_quiet():
    copied = TRUNCATED_TOOLS.replace("    for message in conversation_history:\n        if message.get",
                                     "    conversation_history = copy.deepcopy(conversation_history)\n    for message in conversation_history:\n        if message.get")
    assert lint("import copy\n" + copied, {"CL301"}) == []


def test_claude_models_in_a_price_table_a_hint_list_or_a_comparison_are_not_settings(tmp_path):
    for config in ('PRICES = {"gpt-4o": 2.5, "claude-3-5-sonnet-20241022": 3.0}\n',
                   '_VISION_HINTS = ("gpt-4o", "claude-3-5-sonnet-20241022")\n',
                   'def is_claude(model):\n    return model == "claude-3-5-sonnet-20241022"\n',
                   '"""Run with DEFAULT_MODEL = "anthropic/claude-3-5-sonnet-20241022"."""\n'):
        files = {"config.py": config, "agent.py": LITELLM_ADAPTER.format(cls="Agent")}
        assert lint_tree(tmp_path, files, "agent.py", {"CL501"}) == [], config


def test_a_claude_model_set_without_spaces_or_in_a_config_dict_is_a_setting(tmp_path):
    for config in ('DEFAULT_MODEL="anthropic/claude-3-5-sonnet-20241022"\n',
                   'CONFIG = {\n    "model": "anthropic/claude-3-5-sonnet-20241022",\n    "temperature": 0,\n}\n'):
        files = {"config.py": config, "agent.py": LITELLM_ADAPTER.format(cls="Agent")}
        assert len(lint_tree(tmp_path, files, "agent.py", {"CL501"})) == 1, config


def test_an_openai_compatible_adapter_is_not_another_providers(tmp_path):
    config = 'DEFAULT_MODEL = "anthropic/claude-3-5-sonnet-20241022"\n'
    files = {"config.py": config, "agent.py": LITELLM_ADAPTER.format(cls="OpenAICompatibleAgent")}
    assert len(lint_tree(tmp_path, files, "agent.py", {"CL501"})) == 1


def test_a_clock_read_by_a_helper_a_module_constant_calls_is_computed_once_per_process():
    source = '''
    from datetime import datetime
    from openai import OpenAI

    def get_time():
        now = datetime.now().astimezone()
        return f"Current time: {now.strftime('%H:%M')}"

    SYSTEM_PROMPT = f"You are an agent.\\nTime: {get_time()}"

    def ask(history):
        return OpenAI().chat.completions.create(model="gpt-4o", messages=[{"role": "system", "content": SYSTEM_PROMPT}, *history])
    '''
    found = lint(source, {"CL101"})
    assert [f.row for f in found] == [6] and "computed once per process" in found[0].message, found


def test_a_module_admitted_only_as_a_prompt_renderer_is_judged_on_cl101_alone(monkeypatch):
    from cachelint.check import engine

    judged: list[frozenset] = []
    real = engine._analyse
    monkeypatch.setattr(engine, "_analyse", lambda source, filename, codes, options, llm: judged.append(codes) or real(source, filename, codes, options, llm))
    source = "from datetime import datetime\n\n\ndef render_prompt(template):\n    return template.format(now=datetime.now())\n"
    lint_source(source, "prompts.py")
    assert judged == [frozenset({"CL101"})]
    lint_source(source + "\nimport openai\n", "prompts.py")  # a module that sends requests: every rule
    assert len(judged) == 2 and len(judged[1]) > 1


def test_a_helper_that_normalizes_every_message_again_is_quiet():
    source = TRUNCATED_TOOLS.replace('message["content"] = message["content"][:tool_size]', 'message["content"] = message["content"].rstrip()')
    assert lint(source, {"CL301"}) == []


def test_a_helper_that_puts_the_system_message_back_first_is_left_to_the_callers_walk():
    source = TRUNCATED_TOOLS.replace('''    for message in conversation_history:
        if message.get("role") == "tool":
            message["content"] = message["content"][:tool_size]''', '''    conversation_history[0] = {"role": "system", "content": SYSTEM_PROMPTS[tool_size > 0]}''')
    assert lint(source, {"CL301"}) == []


def test_a_helper_that_rewraps_each_messages_text_into_blocks_is_left_alone():
    source = TRUNCATED_TOOLS.replace('message["content"] = message["content"][:tool_size]',
                                     'message["content"] = [{"type": "text", "text": item} if isinstance(item, str) else item for item in message["content"]]')
    assert lint(source, {"CL301"}) == []
