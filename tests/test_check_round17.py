"""Round 17: classes read from a spent set's findings and misses (holdout21, apps that call the SDKs directly).

- CL101: a message converter that writes a fresh id (`uuid4()`, or a fallback for a missing one) into every stored
  turn it converts again for each request; a reply parsed once is not a stored turn.
- CL501: a provider adapter whose every caller in sight (by name, through a registry, or through a builder) asks
  one question with a list made for it is not carrying a conversation; a litellm request whose model is a
  setting goes to Anthropic when the project names a Claude model it can be run with.
- CL104: a parameter typed with an Enum (or `Literal`, `bool`) is a mode, not per-call data.
- CL301: a window over past sessions' summaries is not a cut of a conversation.
- CL201: tools of several MCP servers merged into the list a function named for tools returns.
"""

from __future__ import annotations

from functools import partial

from _lint import lint as _lint_source
from _lint import lint_tree

lint = partial(_lint_source, filename="agent.py")


# --- CL101: ids minted afresh for old turns ---------------------------------------------------------------------

CONVERTER = '''
import uuid


def new_call_id() -> str:
    return str(uuid.uuid4())[-9:]


def to_template_message(message: dict) -> dict:
    if message["role"] == "assistant" and "tool_calls" in message:
        for call in message["tool_calls"]:
            call["id"] = new_call_id()
        return {"role": "assistant", "content": "", "tool_calls": message["tool_calls"]}
    if message["role"] == "tool":
        return dict(role="tool", content=message["content"], tool_call_id=new_call_id())
    return {"role": message["role"], "content": message["content"]}


def render_prompt(tokenizer, messages):
    return tokenizer.apply_chat_template([to_template_message(m) for m in messages], tokenize=False)
'''


def test_a_converter_applied_to_every_stored_turn_that_mints_ids_is_found():
    found = lint(CONVERTER, {"CL101"})
    assert [f.row for f in found] == [11, 14], found
    assert all("`to_template_message` writes into every stored turn it converts again" in f.message for f in found)
    assert all(f.severity == "error" and f.confidence == "likely" for f in found)


def test_the_same_converter_applied_to_a_reply_parsed_once_is_quiet():
    parsed = CONVERTER.replace("[to_template_message(m) for m in messages]", "[to_template_message(c.message) for c in response.choices]")
    assert lint(parsed, {"CL101"}) == []


def test_an_id_kept_from_the_stored_turn_is_quiet():
    kept = CONVERTER.replace('call["id"] = new_call_id()', 'call["id"] = call["id"]').replace("tool_call_id=new_call_id()",
                                                                                             'tool_call_id=message["tool_call_id"]')
    assert lint(kept, {"CL101"}) == []


def test_a_fallback_id_for_a_stored_call_without_one_is_found_where_it_is_minted():
    source = '''
    import uuid


    def build_messages(history):
        messages = []
        for turn in history:
            calls = []
            for call in turn["tool_calls"]:
                call_id = call.get("call_id") or f"call_{uuid.uuid4().hex}"
                calls.append({"id": call_id, "type": "function", "function": {"name": call["name"], "arguments": "{}"}})
            messages.append({"role": "assistant", "content": None, "tool_calls": calls})
        return messages
    '''
    found = lint(source, {"CL101"})
    assert [f.row for f in found] == [9], found


def test_a_single_dispatch_converter_is_named_by_its_dispatcher():
    source = '''
    import uuid
    from functools import singledispatch


    @singledispatch
    def to_openai(message):
        raise NotImplementedError


    @to_openai.register(dict)
    def _(message):
        return {"role": "assistant", "tool_calls": [{"id": str(uuid.uuid4()), "type": "function",
                                                     "function": {"name": message["name"], "arguments": "{}"}}]}


    def complete(client, messages):
        return client.chat.completions.create(model="gpt-4o", messages=[to_openai(m) for m in messages])
    '''
    found = lint(source, {"CL101"})
    assert [f.row for f in found] == [12], found
    assert "`to_openai` writes" in found[0].message


ANTHROPIC_CONVERTER = '''
import uuid
from functools import singledispatch

import anthropic


@singledispatch
def message_to_anthropic_message(message):
    return {"role": "user", "content": message["content"]}


@message_to_anthropic_message.register(tuple)
def _(message):
    return {"role": "assistant", "content": [{"type": "tool_use", "id": str(uuid.uuid4()), "name": message[0], "input": {}}]}


def complete(messages):
    return anthropic.Anthropic().messages.create(
        model="claude-sonnet-4-5", max_tokens=1024, messages=[message_to_anthropic_message(m) for m in messages])
'''


def test_a_fresh_tool_use_id_where_the_project_sets_no_breakpoint_is_quiet(tmp_path):
    # Anthropic caches nothing without a breakpoint (automatic caching too is asked for with cache_control):
    # the new id costs no cache hit (magentic's Anthropic adapter, a clean label of a spent set)
    assert lint_tree(tmp_path, {"adapter.py": ANTHROPIC_CONVERTER}, "adapter.py", {"CL101"}) == []


def test_the_same_id_where_another_file_sets_a_breakpoint_is_found(tmp_path):
    files = {"adapter.py": ANTHROPIC_CONVERTER,
             "system.py": 'SYSTEM = [{"type": "text", "text": "You are terse.", "cache_control": {"type": "ephemeral"}}]\n'}
    found = lint_tree(tmp_path, files, "adapter.py", {"CL101"})
    assert [f.row for f in found] == [14], found
    assert "`message_to_anthropic_message` writes" in found[0].message


MESSAGE_TYPES = {
    "ids.py": '''
import uuid


def generate_tool_call_id() -> str:
    return f"call_{uuid.uuid4().hex}"


def guard_tool_call_id(t) -> str:
    return t.tool_call_id or generate_tool_call_id()
''',
    "convert.py": '''
import openai

from ids import guard_tool_call_id


def map_message(part) -> dict:
    return {"role": "tool", "tool_call_id": guard_tool_call_id(part), "content": part.content}


def to_openai_messages(messages: list) -> list[dict]:
    return [map_message(m) for m in messages]
''',
}
TOOL_RETURN = '''
from dataclasses import dataclass, field

from ids import generate_tool_call_id as _generate_tool_call_id


@dataclass
class ToolReturnPart:
    content: str
    tool_call_id: str = field(default_factory=_generate_tool_call_id)
'''


def test_a_guard_whose_minting_helper_is_a_default_factory_of_the_turns_is_quiet(tmp_path):
    # every stored turn got its id when it was made; the guard's fallback never runs (pydantic-ai, Upsonic)
    files = {**MESSAGE_TYPES, "messages.py": TOOL_RETURN}
    assert lint_tree(tmp_path, files, "convert.py", {"CL101"}) == []


def test_the_same_guard_where_turns_may_lack_an_id_is_found(tmp_path):
    found = lint_tree(tmp_path, MESSAGE_TYPES, "convert.py", {"CL101"})
    assert [f.row for f in found] == [7], found
    assert "`map_message` writes" in found[0].message


def test_a_converter_that_calls_the_default_factory_itself_is_found(tmp_path):
    # an id made afresh for every old turn, whatever the turn was made with
    files = {**MESSAGE_TYPES, "messages.py": TOOL_RETURN}
    files["convert.py"] = files["convert.py"].replace("guard_tool_call_id(part)", "generate_tool_call_id()").replace(
        "import guard_tool_call_id", "import generate_tool_call_id")
    found = lint_tree(tmp_path, files, "convert.py", {"CL101"})
    assert [f.row for f in found] == [7], found


# --- CL501: adapters whose callers ask one question each --------------------------------------------------------

ADAPTER = '''
import anthropic


def complete_anthropic(model, messages, max_tokens=1024):
    system = ""
    if messages[0]["role"] == "system":
        system, messages = messages[0]["content"], messages[1:]
    client = anthropic.Anthropic()
    return client.messages.create(model=model, max_tokens=max_tokens, system=system, messages=messages)
'''

ONE_QUESTION = '''
from adapter import complete_anthropic


def judge(question, answer, settings):
    messages = [{"role": "system", "content": settings["judge_prompt"]},
                {"role": "user", "content": f"{question}\\n{answer}"}]
    return complete_anthropic(settings["model"], messages)
'''

CHAT = '''
from adapter import complete_anthropic


def chat(settings):
    messages = [{"role": "system", "content": settings["persona"]}]
    while True:
        messages.append({"role": "user", "content": input("> ")})
        reply = complete_anthropic(settings["model"], messages)
        messages.append({"role": "assistant", "content": reply.content[0].text})
'''


def test_an_adapter_whose_callers_each_ask_one_question_is_quiet(tmp_path):
    assert lint_tree(tmp_path, {"adapter.py": ADAPTER, "judge.py": ONE_QUESTION}, "adapter.py", {"CL501"}) == []


def test_the_same_adapter_with_a_chat_among_its_callers_is_found(tmp_path):
    found = lint_tree(tmp_path, {"adapter.py": ADAPTER, "judge.py": ONE_QUESTION, "chat.py": CHAT}, "adapter.py", {"CL501"})
    assert [f.row for f in found] == [9], found
    assert "sends the history its callers pass" in found[0].message


def test_an_adapter_with_no_caller_in_sight_is_found(tmp_path):
    found = lint_tree(tmp_path, {"adapter.py": ADAPTER}, "adapter.py", {"CL501"})
    assert [f.row for f in found] == [9], found


REGISTRY = '''
import anthropic

registered = {}


def register_api(kind):
    def wrap(func):
        registered[kind] = func
        return func
    return wrap


@register_api("anthropic")
def complete_anthropic(model, messages, max_tokens=1024, **kwargs):
    system = ""
    if messages[0]["role"] == "system":
        system, messages = messages[0]["content"], messages[1:]
    return anthropic.Anthropic().messages.create(model=model, max_tokens=max_tokens, system=system, messages=messages)
'''

THROUGH_REGISTRY = '''
from adapter import registered


def answer(question, settings):
    messages = []
    if "sys_prompt" in settings:
        messages.append({"role": "system", "content": settings["sys_prompt"]})
    messages.append({"role": "user", "content": question})
    kwargs = settings | {"messages": messages}
    send = registered[settings["api_type"]]
    return send(**kwargs)
'''

BUILDER = '''
from adapter import complete_anthropic


class Category:
    def pre_process(self, prompt):
        conv = [{"role": "system", "content": self.sys_prompt}]
        conv.append({"role": "user", "content": prompt})
        return conv


def label(category, question, model):
    conv = category.pre_process(question)
    return complete_anthropic(model, conv)
'''


def test_an_adapter_called_through_a_registry_with_one_question_each_is_quiet(tmp_path):
    assert lint_tree(tmp_path, {"adapter.py": REGISTRY, "answer.py": THROUGH_REGISTRY}, "adapter.py", {"CL501"}) == []


def test_a_registry_caller_that_resends_its_history_keeps_the_finding(tmp_path):
    resends = THROUGH_REGISTRY.replace("def answer(question, settings):\n    messages = []", "def answer(question, settings, messages):")
    found = lint_tree(tmp_path, {"adapter.py": REGISTRY, "answer.py": resends}, "adapter.py", {"CL501"})
    assert [f.row for f in found] == [18], found


def test_a_list_made_by_a_builder_of_the_tree_for_one_question_is_quiet(tmp_path):
    assert lint_tree(tmp_path, {"adapter.py": ADAPTER, "label.py": BUILDER}, "adapter.py", {"CL501"}) == []




def test_a_list_a_builder_fills_from_the_conversation_is_not_one_question(tmp_path):
    conversation = BUILDER.replace('''        conv.append({"role": "user", "content": prompt})''', '''        for role, text in self.messages:
            conv.append({"role": role, "content": text})''')
    found = lint_tree(tmp_path, {"adapter.py": ADAPTER, "label.py": conversation}, "adapter.py", {"CL501"})
    assert [f.row for f in found] == [9], found


# --- CL501: a litellm model that is a setting ---------------------------------------------------------------------

LOOP = '''
import litellm


def run(model, messages, tools, execute):
    while True:
        response = litellm.completion(model=model, messages=messages, tools=tools)
        message = response.choices[0].message
        messages.append(message)
        if not message.tool_calls:
            return message.content
        for call in message.tool_calls:
            messages.append({"role": "tool", "tool_call_id": call.id, "content": execute(call)})
'''


def test_a_litellm_loop_in_a_project_that_names_a_claude_model_is_found(tmp_path):
    config = 'DEFAULT_MODELS = ["gpt-4o", "anthropic/claude-3-5-sonnet-20241022"]\n'
    found = lint_tree(tmp_path, {"agent.py": LOOP, "config.py": config}, "agent.py", {"CL501"})
    assert [f.row for f in found] == [6], found
    assert "when run with a Claude model: the project names `anthropic/claude-3-5-sonnet-20241022`" in found[0].message
    assert found[0].confidence == "likely"


def test_the_same_loop_where_the_project_names_no_claude_model_is_quiet(tmp_path):
    config = 'DEFAULT_MODELS = ["gpt-4o", "gemini/gemini-2.5-pro"]\n'
    assert lint_tree(tmp_path, {"agent.py": LOOP, "config.py": config}, "agent.py", {"CL501"}) == []


def test_the_same_loop_where_the_project_sets_breakpoints_elsewhere_is_quiet(tmp_path):
    config = 'DEFAULT_MODELS = ["anthropic/claude-3-5-sonnet-20241022"]\n'
    marks = 'def mark(messages):\n    messages[-1]["cache_control"] = {"type": "ephemeral"}\n'
    assert lint_tree(tmp_path, {"agent.py": LOOP, "config.py": config, "cache.py": marks}, "agent.py", {"CL501"}) == []


def test_a_litellm_model_written_at_the_call_decides_alone(tmp_path):
    config = 'DEFAULT_MODELS = ["anthropic/claude-3-5-sonnet-20241022"]\n'
    pinned = LOOP.replace("model=model", 'model="gpt-4o"')
    assert lint_tree(tmp_path, {"agent.py": pinned, "config.py": config}, "agent.py", {"CL501"}) == []


# --- CL104: a mode parameter ----------------------------------------------------------------------------------------

RULES = "Follow the rules of the workspace and explain every step you take in detail. " * 60
PROMPT_BUILDER = f'''
from modes import WorkspaceMode

RULES = {RULES!r}


def home_directory(mode):
    return "/workspace" if mode != WorkspaceMode.LOCAL else "."


def get_system_prompt(mode: ANNOTATION):
    return f"You are a coding agent. Working directory: {{home_directory(mode)}}\\n" + RULES
'''

MODES = '''
from enum import Enum


class WorkspaceMode(str, Enum):
    LOCAL = "local"
    DOCKER = "docker"
'''


def test_a_value_of_an_enum_typed_parameter_is_a_mode_not_per_call_data(tmp_path):
    source = PROMPT_BUILDER.replace("ANNOTATION", "WorkspaceMode")
    assert lint_tree(tmp_path, {"prompts.py": source, "modes.py": MODES}, "prompts.py", {"CL104"}) == []
    for annotation in ('Literal["local", "docker"]', "bool"):
        assert lint_tree(tmp_path, {"prompts.py": PROMPT_BUILDER.replace("ANNOTATION", annotation)}, "prompts.py", {"CL104"}) == []


def test_the_same_builder_with_a_str_parameter_is_found(tmp_path):
    found = lint_tree(tmp_path, {"prompts.py": PROMPT_BUILDER.replace("ANNOTATION", "str"), "modes.py": MODES}, "prompts.py", {"CL104"})
    assert [f.row for f in found] == [11], found


def test_a_class_of_that_name_that_is_no_enum_is_not_a_mode(tmp_path):
    plain = MODES.replace("(str, Enum)", "")
    found = lint_tree(tmp_path, {"prompts.py": PROMPT_BUILDER.replace("ANNOTATION", "WorkspaceMode"), "modes.py": plain},
                      "prompts.py", {"CL104"})
    assert [f.row for f in found] == [11], found


# --- CL301 and CL201 ----------------------------------------------------------------------------------------------

def test_a_window_over_past_sessions_summaries_is_not_a_cut_conversation():
    source = '''
    async def start_session(tool, task, conversation_summaries):
        params = {"task": task, "summaries": conversation_summaries[-5:]}
        return await tool.execute(params)
    '''
    assert lint(source, {"CL301"}) == []
    cut = source.replace("conversation_summaries", "conversation_messages")
    assert [f.row for f in lint(cut, {"CL301"})] == [2]


def test_tools_of_several_servers_returned_by_a_function_named_for_tools_are_found():
    source = '''
    async def get_wrapped_tools(servers):
        wrapped = []
        for server in servers:
            listed = await server.session.list_tools()
            for remote in getattr(listed, "tools"):
                wrapped.append(WrappedTool(server.session, remote.name, remote.description, remote.inputSchema))
        return wrapped
    '''
    found = lint(source, {"CL201"})
    assert [f.row for f in found] == [4], found
    assert "merged into `wrapped`" in found[0].message


def test_a_buffer_of_token_ids_is_not_a_conversation():
    source = '''
    class Steering:
        def __init__(self, tokenizer, max_history=200):
            self.tokenizer, self.max_history, self.token_history = tokenizer, max_history, []

        def update(self, text):
            token_ids = self.tokenizer.encode(text)
            self.token_history.extend(token_ids)
            if len(self.token_history) > self.max_history:
                self.token_history = self.token_history[-self.max_history:]
    '''
    assert lint(source, {"CL301"}) == []
    turns = source.replace("self.token_history.extend(token_ids)", "self.token_history.extend(new_messages)")
    assert [f.row for f in lint(turns, {"CL301"})] == [9]


# --- CL103: files listed into a table looked up by name -------------------------------------------------------------

EXAMPLES = '''
import json
from glob import glob


def load_examples():
    example_configs = {}
    for example_file in glob("examples/*.json"):
        with open(example_file) as f:
            example = json.load(f)
        example_configs[example["name"]] = example
    return example_configs

EXTRA
'''


def test_listed_files_kept_in_a_table_looked_up_by_name_are_quiet():
    assert lint(EXAMPLES.replace("EXTRA", "def pick(configs, name):\n    return configs[name]"), {"CL103"}) == []


def test_the_same_table_walked_in_its_order_is_found():
    walked = EXAMPLES.replace("    return example_configs", '    return "\\n".join(c["prompt"] for c in example_configs.values())')
    found = lint(walked.replace("EXTRA", ""), {"CL103"})
    assert [f.row for f in found] == [7], found


def test_listed_files_copied_elsewhere_with_only_their_names_collected_are_quiet():
    source = '''
    import tempfile


    def load_example_files(example_dir):
        example_files = []
        for file_path in example_dir.glob("*"):
            with tempfile.NamedTemporaryFile(delete=False, suffix=file_path.suffix) as tmp_file:
                tmp_file.write(file_path.read_bytes())
                example_files.append({"name": file_path.name, "path": tmp_file.name})
        return example_files
    '''
    assert lint(source, {"CL103"}) == []
    kept = source.replace('{"name": file_path.name, "path": tmp_file.name}', '{"name": file_path.name, "text": file_path.read_text()}')
    assert [f.row for f in lint(kept, {"CL103"})] == [6]


# --- the review's cases: each a shape the classes above must not take in -----------------------------------------

def test_a_record_id_in_an_export_or_a_store_is_not_a_tool_calls():
    export = '''
    import json
    import uuid


    def export_conversation(conversation):
        return [{"id": str(uuid.uuid4()), "role": turn["role"], "content": turn["content"]} for turn in conversation]


    def save(path, history):
        with open(path, "w") as f:
            json.dump(export_conversation(history), f)
    '''
    assert lint(export, {"CL101"}) == []


def test_an_id_written_into_the_stored_turn_only_when_missing_is_minted_once():
    source = CONVERTER.replace('call["id"] = new_call_id()', 'call["id"] = call.get("id") or new_call_id()')
    assert [f.row for f in lint(source, {"CL101"})] == [14]  # the tool result's id is still minted on every render
    enumerated = CONVERTER.replace('for call in message["tool_calls"]:', 'for i, call in enumerate(message["tool_calls"]):')
    assert [f.row for f in lint(enumerated, {"CL101"})] == [11, 14]


def test_another_objects_method_of_the_same_name_is_not_the_converter():
    source = '''
    import uuid


    def to_dict(reply):
        return {"role": "assistant", "tool_calls": [{"id": str(uuid.uuid4()), "type": "function", "function": reply.call}]}


    class Chat:
        def __init__(self):
            self.history = []

        def payload(self):
            return [m.to_dict() for m in self.history]

        def on_reply(self, response):
            self.history.append(Message(**to_dict(response.choices[0])))
    '''
    assert lint(source, {"CL101"}) == []


def test_callers_in_tests_or_at_a_modules_top_level_do_not_make_an_adapter_one_shot(tmp_path):
    demo = 'from adapter import complete_anthropic\n\ncomplete_anthropic("claude-sonnet-4-5", [{"role": "user", "content": "Hi"}])\n'
    found = lint_tree(tmp_path, {"adapter.py": ADAPTER, "demo.py": demo}, "adapter.py", {"CL501"})
    assert [f.row for f in found] == [9], found


def test_a_litellm_model_kept_in_a_module_constant_is_written_here(tmp_path):
    config = 'DEFAULT_MODELS = ["anthropic/claude-3-5-sonnet-20241022"]\n'
    constant = LOOP.replace("import litellm\n", 'import litellm\n\nMODEL = "gpt-4o"\n').replace("model=model", "model=MODEL")
    assert lint_tree(tmp_path, {"agent.py": constant, "config.py": config}, "agent.py", {"CL501"}) == []


def test_a_claude_prefix_test_or_an_old_claude_names_no_model_to_run_with(tmp_path):
    for named in ('IS_CLAUDE = lambda m: m.startswith("claude-")\n', 'LEGACY = "claude-2"\nTOOL = "claude-code"\n'):
        assert lint_tree(tmp_path, {"agent.py": LOOP, "config.py": named}, "agent.py", {"CL501"}) == []


def test_a_table_beside_the_collected_text_does_not_hide_it():
    source = '''
    from glob import glob


    def build_prompt(question):
        sizes = {}
        parts = []
        for path in glob("docs/*.md"):
            text = open(path).read()
            sizes[path] = len(text)
            parts.append(text)
        return "\\n".join(parts) + question
    '''
    assert [f.row for f in lint(source, {"CL103"})] == [7]


def test_an_open_files_handle_is_not_its_text():
    source = '''
    import tempfile


    def load_example_files(example_dir):
        example_files = []
        for file_path in example_dir.glob("*"):
            with open(file_path, "rb") as f:
                with tempfile.NamedTemporaryFile(delete=False) as tmp_file:
                    tmp_file.write(f.read())
            example_files.append({"name": file_path.name, "path": tmp_file.name, "size": f.tell()})
        return example_files
    '''
    assert lint(source, {"CL103"}) == []
    assert [f.row for f in lint(source.replace('"size": f.tell()', '"text": f.read()'), {"CL103"})] == [6]
