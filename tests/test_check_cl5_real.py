"""CL5xx on the shapes real applications take (issue 14): the long static prefix or the repetition that makes a
missing breakpoint costly is decided out of the request's sight (an agent loop, a prompt of another module, a
wrapper whose callers pass the prompt), and a breakpoint on a block that holds nothing but the call's own data.
Each class of code has a test that reports it and one that must stay quiet."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from cachelint.check.engine import lint_source

HANDBOOK = "Follow the support handbook, cite its sections, and never promise refunds or credits. " * 120


def lint(source: str, code: str, filename: str = "app.py") -> list:
    source = textwrap.dedent(source).lstrip("\n")
    return [f for f in lint_source(source, filename) if f.code == code]


def write(path: Path, source: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(source).lstrip("\n"))
    return path


def row_of(source: str, needle: str, nth: int = 1) -> int:
    """The line (1-based, as `lint` numbers them) of the nth line that holds `needle`."""
    lines = [i for i, line in enumerate(textwrap.dedent(source).lstrip("\n").splitlines(), 1) if needle in line]
    return lines[nth - 1]


def lint_file(path: Path, code: str) -> list:
    return [f for f in lint_source(path.read_text(), str(path)) if f.code == code]


# --- CL501: an agent loop resends tools, system prompt and a growing history ----------------------------------

WHILE_LOOP_AGENT = """
    from anthropic import Anthropic

    SYSTEM = "You operate a computer for the user. Take one action at a time."

    def run(messages, tools, execute):
        client = Anthropic()
        while True:
            response = client.messages.create(
                model="claude-sonnet-4-5", max_tokens=1024, system=SYSTEM,
                tools=tools, messages=messages,
            )
            messages.append({"role": "assistant", "content": response.content})
            results = [{"type": "tool_result", "tool_use_id": b.id, "content": execute(b)}
                       for b in response.content if b.type == "tool_use"]
            if not results:
                return response
            messages.append({"role": "user", "content": results})
"""

RECURSIVE_AGENT = """
    import anthropic
    from registry import load_tools

    class Assistant:
        def __init__(self):
            self.client = anthropic.Anthropic()
            self.history = []
            self.tools = load_tools()

        def chat(self, text):
            self.history.append({"role": "user", "content": text})
            return self.complete()

        def complete(self):
            response = self.client.messages.create(model="claude-sonnet-4-5", max_tokens=2048,
                                                   system="You are a coding assistant.",
                                                   tools=self.tools, messages=self.history)
            if response.stop_reason == "tool_use":
                results = [self.run_tool(block) for block in response.content if block.type == "tool_use"]
                self.history.append({"role": "assistant", "content": response.content})
                self.history.append({"role": "user", "content": results})
                return self.complete()
            self.history.append({"role": "assistant", "content": response.content})
            return response.content[0].text

        def run_tool(self, block):
            return {"type": "tool_result", "tool_use_id": block.id, "content": "done"}
"""


def test_agent_loop_without_a_breakpoint_is_reported_at_the_request():
    found = lint(WHILE_LOOP_AGENT, "CL501")
    assert [f.row for f in found] == [row_of(WHILE_LOOP_AGENT, "client.messages.create")]
    assert found[0].confidence == "certain"
    assert "agent loop" in found[0].message
    assert f"`messages` appended on line {row_of(WHILE_LOOP_AGENT, 'messages.append')}" in found[0].message


def test_recursive_agent_without_a_breakpoint_is_reported():
    found = lint(RECURSIVE_AGENT, "CL501")
    assert [f.row for f in found] == [row_of(RECURSIVE_AGENT, "messages.create")]
    assert "`self.history` appended" in found[0].message and "calling itself" in found[0].message


def test_agent_loop_with_a_top_level_breakpoint_is_quiet():
    source = WHILE_LOOP_AGENT.replace("tools=tools, messages=messages,", "tools=tools, messages=messages, cache_control={'type': 'ephemeral'},")
    assert lint(source, "CL501") == []


def test_agent_loop_whose_breakpoints_a_helper_sets_is_quiet():
    source = WHILE_LOOP_AGENT.replace("def run(", "def mark(messages):\n    messages[-1]['content'][-1]['cache_control'] = {'type': 'ephemeral'}\n\ndef run(")
    assert lint(source, "CL501") == []


def test_chat_loop_without_tools_is_reported_as_a_chat_loop():
    # no tools, but the loop still appends each turn to the history it sends: from the second turn on every request
    # starts with the previous one, and a conversation passes the minimum within a few turns
    source = WHILE_LOOP_AGENT.replace("tools=tools, ", "")
    found = lint(source, "CL501")
    assert [f.row for f in found] == [row_of(source, "client.messages.create")]
    assert "this chat loop" in found[0].message


def test_batch_of_independent_requests_is_quiet():
    source = """
        from anthropic import Anthropic
        client = Anthropic()
        def label(items, tools):
            out = []
            for item in items:
                messages = [{"role": "user", "content": item}]
                out.append(client.messages.create(model="claude-sonnet-4-5", max_tokens=100, tools=tools, messages=messages))
            return out
    """
    assert lint(source, "CL501") == []


def test_loop_that_starts_a_new_conversation_each_time_is_quiet():
    source = """
        from anthropic import Anthropic
        client = Anthropic()
        def extract(documents, tools):
            found = []
            for document in documents:
                messages = [{"role": "user", "content": document}]
                response = client.messages.create(model="claude-sonnet-4-5", max_tokens=500, tools=tools, messages=messages)
                messages.append({"role": "assistant", "content": response.content})
                found.append(response)
            return found
    """
    assert lint(source, "CL501") == []


def test_openai_agent_loop_is_quiet():
    source = """
        from openai import OpenAI
        client = OpenAI()
        def run(messages, tools):
            while True:
                response = client.chat.completions.create(model="gpt-4o", tools=tools, messages=messages)
                messages.append(response.choices[0].message)
                if not response.choices[0].message.tool_calls:
                    return response
                messages.append({"role": "tool", "content": "ok", "tool_call_id": "1"})
    """
    assert lint(source, "CL501") == []


# --- CL501: the long prompt is a constant of another module -----------------------------------------------------


@pytest.fixture
def tree(tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text("[tool.cachelint]\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_class_attribute_of_another_module_is_measured(tree):
    write(tree / "app" / "__init__.py", "")
    write(tree / "app" / "prompts.py", f"""
        class SystemPrompts:
            DEFAULT = {HANDBOOK!r}
            SHORT = "Be brief."
    """)
    agent = write(tree / "app" / "agent.py", """
        import anthropic
        from .prompts import SystemPrompts

        client = anthropic.Anthropic()

        def ask(history, notes):
            return client.messages.create(model="claude-sonnet-4-5", max_tokens=500,
                                          system=f"{SystemPrompts.DEFAULT}\\n\\nNotes: {notes}", messages=history)

        def ask_short(history, notes):
            return client.messages.create(model="claude-sonnet-4-5", max_tokens=500,
                                          system=f"{SystemPrompts.SHORT}\\n\\nNotes: {notes}", messages=history)
    """)
    found = lint_file(agent, "CL501")
    assert [f.row for f in found] == [row_of(agent.read_text(), "messages.create")]
    assert "at least" in found[0].message


# --- CL501: a provider wrapper whose callers in other files pass the long prompt --------------------------------

WRAPPER = """
    import anthropic

    class ClaudeLLM:
        def __init__(self, model="claude-sonnet-4-5"):
            self.client = anthropic.Anthropic()
            self.model = model

        def generate(self, messages, **kwargs):
            system = ""
            rest = []
            for message in messages:
                if message["role"] == "system":
                    system = message["content"]
                else:
                    rest.append(message)
            params = {"model": self.model, "max_tokens": 2000, "messages": rest, "system": system}
            params.update(kwargs)
            return self.client.messages.create(**params)
"""


def memory_service(prompt_name: str) -> str:
    return f"""
        from app.prompts import {prompt_name}

        class Memory:
            def __init__(self, llm):
                self.llm = llm

            def add(self, text, scoped):
                system_prompt = {prompt_name}
                if scoped:
                    system_prompt += "\\nOnly keep facts about the agent."
                return self.llm.generate(messages=[
                    {{"role": "system", "content": system_prompt}},
                    {{"role": "user", "content": text}},
                ])
    """


def wrapper_tree(tree: Path, prompt_name: str) -> Path:
    write(tree / "app" / "__init__.py", "")
    write(tree / "app" / "prompts.py", f"EXTRACTION_PROMPT = {HANDBOOK!r}\nSHORT_PROMPT = 'Extract facts as JSON.'\n")
    write(tree / "app" / "memory" / "__init__.py", "")
    write(tree / "app" / "memory" / "main.py", memory_service(prompt_name))
    write(tree / "app" / "llms" / "__init__.py", "")
    return write(tree / "app" / "llms" / "claude.py", WRAPPER)


def test_long_prompt_passed_by_callers_of_a_wrapper_is_reported(tree):
    wrapper = wrapper_tree(tree, "EXTRACTION_PROMPT")
    found = lint_file(wrapper, "CL501")
    assert [f.row for f in found] == [row_of(WRAPPER, "messages.create")]
    caller = row_of(memory_service("EXTRACTION_PROMPT"), "self.llm.generate")
    assert f"app/memory/main.py:{caller}" in found[0].message and "callers" in found[0].message


def test_short_prompt_passed_by_callers_of_a_wrapper_is_quiet(tree):
    wrapper = wrapper_tree(tree, "SHORT_PROMPT")
    assert lint_file(wrapper, "CL501") == []


def test_wrapper_that_sets_a_breakpoint_is_quiet(tree):
    wrapper = wrapper_tree(tree, "EXTRACTION_PROMPT")
    wrapper.write_text(wrapper.read_text().replace('"system": system}', '"system": [{"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}]}'))
    assert lint_file(wrapper, "CL501") == []


def test_wrapper_reported_from_the_command_line(tree):
    wrapper_tree(tree, "EXTRACTION_PROMPT")
    out = subprocess.run([sys.executable, "-m", "cachelint", "check", "app", "--no-cache", "--select", "CL501", "--output-format", "json"],
                         check=False, capture_output=True, text=True, timeout=120)
    assert out.returncode == 1, out.stderr
    found = json.loads(out.stdout)
    assert [(Path(f["filename"]).name, f["location"]["row"]) for f in found] == [("claude.py", row_of(WRAPPER, "messages.create"))]


# --- CL502: the cached block holds all the call's own data -------------------------------------------------------

ANALYZER = """
    import anthropic
    client = anthropic.Anthropic()

    def analyze(code, output, note):
        system_prompt = f\"\"\"You review code that was run in a sandbox.
        Code:
        {code}
        Output:
        {output}
        Summarize what worked and what failed.\"\"\"
        return client.messages.create(
            model="claude-sonnet-4-5", max_tokens=500,
            system=[{"type": "text", "text": system_prompt, "cache_control": {"type": "ephemeral"}}],
            messages=[{"role": "user", "content": f"Analyze this run.\\nCode:\\n{code}\\nOutput:\\n{output}"}],
        )
"""


def test_cached_block_with_the_arguments_the_message_repeats_is_reported():
    found = lint(ANALYZER, "CL502")
    assert [f.row for f in found] == [row_of(ANALYZER, '"cache_control"')]
    assert "only arguments the cached block holds too" in found[0].message


def test_cached_block_followed_by_other_per_call_data_is_quiet():
    # the same code is asked about with different notes: the cached block can be read again
    source = ANALYZER.replace("Analyze this run.", "{note}")
    assert "{note}" in source
    assert lint(source, "CL502") == []


# --- CL502: a message the tree's serializer turns into a breakpoint holds the step counter ----------------------

STATE_PROMPT = """
    from app.messages import UserMessage, ContentText, ContentImage


    class StepPrompt:
        def __init__(self, task, page_text, step_info, screenshot=None):
            self.task = task
            self.page_text = page_text
            self.step_info = step_info
            self.screenshot = screenshot

        def _step_line(self):
            return f"Step {self.step_info.step_number + 1} of {self.step_info.max_steps}"

        def message(self):
            text = f"<task>{self.task}</task>\\n<page>{self.page_text}</page>\\n"
            text += self._step_line()
            if self.screenshot:
                return UserMessage(content=[ContentText(text=text), ContentImage(url=self.screenshot)], cache=True)
            return UserMessage(content=text, cache=True)

        def task_message(self):
            return UserMessage(content=f"<task>{self.task}</task>", cache=True)
"""

SERIALIZER = """
    def serialize(message):
        block = {"type": "text", "text": message.content}
        if message.cache:
            block["cache_control"] = {"type": "ephemeral"}
        return {"role": "user", "content": [block]}
"""


def flagged_tree(tree: Path, serializer: bool = True) -> Path:
    write(tree / "app" / "__init__.py", "")
    write(tree / "app" / "messages.py", "class UserMessage:\n    def __init__(self, content, cache=False):\n        self.content, self.cache = content, cache\n")
    if serializer:
        write(tree / "app" / "serializer.py", SERIALIZER)
    return write(tree / "app" / "prompts.py", STATE_PROMPT)


def test_flagged_message_with_a_step_counter_is_reported(tree):
    prompts = flagged_tree(tree)
    found = lint_file(prompts, "CL502")
    assert [f.row for f in found] == [row_of(STATE_PROMPT, "UserMessage(content=text, cache=True)")]
    assert found[0].confidence == "likely"
    assert "self.step_info.step_number" in found[0].message


def test_flagged_message_without_a_serializer_in_the_tree_is_quiet(tree):
    # `cache=True` may mean anything (a local response cache) where no module turns it into cache_control
    assert lint_file(flagged_tree(tree, serializer=False), "CL502") == []


# --- CL501: a provider client sends a conversation object that grows turn by turn -------------------------------

CONVO = """
    class Convo:
        def __init__(self, system=None):
            self.messages = []
            if system:
                self.add("system", system)

        def add(self, role, content):
            self.messages.append({"role": role, "content": content})
            return self

        def user(self, content):
            return self.add("user", content)

        def assistant(self, content):
            return self.add("assistant", content)
"""

CLIENT = """
    from anthropic import AsyncAnthropic
    from app.convo import Convo


    class ClaudeClient:
        def __init__(self, model):
            self.client = AsyncAnthropic()
            self.model = model

        def _adapt(self, convo):
            return [{"role": "user" if m["role"] == "system" else m["role"], "content": m["content"]} for m in convo.messages]

        async def request(self, convo: Convo, temperature: float = 0.0):
            messages = self._adapt(convo)
            kwargs = {"model": self.model, "max_tokens": 4096, "messages": messages, "temperature": temperature}
            async with self.client.messages.stream(**kwargs) as stream:
                return await stream.get_final_message()
"""


def test_client_sending_a_growing_conversation_object_is_reported(tree):
    write(tree / "app" / "__init__.py", "")
    write(tree / "app" / "convo.py", CONVO)
    client = write(tree / "app" / "claude.py", CLIENT)
    found = lint_file(client, "CL501")
    assert [f.row for f in found] == [row_of(CLIENT, "self.client.messages.stream")]
    assert f"app/convo.py:{row_of(CONVO, 'self.messages.append')}" in found[0].message


def test_client_sending_a_prompt_object_that_does_not_grow_a_history_is_quiet(tree):
    write(tree / "app" / "__init__.py", "")
    write(tree / "app" / "convo.py", CONVO.replace("self.messages", "self.parts"))
    client = write(tree / "app" / "claude.py", CLIENT.replace("convo.messages", "convo.parts"))
    assert lint_file(client, "CL501") == []


# --- a provider adapter: every conversation of the app goes through it ------------------------------------------

ADAPTER = """
    from anthropic import Anthropic

    class ClaudeBackend:
        def __init__(self, config):
            self.config = config
            self.client = Anthropic(api_key=config.api_key)

        def _kwargs(self, messages, stream):
            system, rest = None, []
            for message in messages:
                if message["role"] == "system":
                    system = message["content"]
                else:
                    rest.append({"role": message["role"], "content": message["content"]})
            kwargs = {"model": self.config.model, "max_tokens": 4096, "messages": rest, "stream": stream}
            if system:
                kwargs["system"] = system
            return kwargs

        def chat(self, messages):
            return self.client.messages.create(**self._kwargs(messages, False))

        def chat_stream(self, messages):
            return self.client.messages.create(**self._kwargs(messages, True))
"""


def test_adapter_whose_two_paths_share_one_payload_builder_is_one_finding():
    found = lint(ADAPTER, "CL501")
    assert [f.row for f in found] == [21]  # create and stream take their messages from _kwargs: one place to fix
    assert found[0].confidence == "likely" and "`messages`" in found[0].message


def test_adapter_whose_two_paths_build_their_own_messages_is_two_findings():
    own = ADAPTER.replace(
        "            return self.client.messages.create(**self._kwargs(messages, True))",
        "            return self.client.messages.create(model=self.config.model, max_tokens=4096, stream=True,\n"
        "                                               messages=[{\"role\": m[\"role\"], \"content\": m[\"content\"]} for m in messages], system=messages[0][\"content\"])")
    assert [f.row for f in lint(own, "CL501")] == [21, 24]


def test_adapter_that_places_breakpoints_elsewhere_in_its_module_is_quiet():
    helper = ADAPTER + """
        def mark(blocks):
            blocks[-1]["cache_control"] = {"type": "ephemeral"}
    """
    assert lint(helper, "CL501") == []


def test_one_off_helper_wrapping_a_prompt_string_is_quiet():
    source = """
        from anthropic import Anthropic

        client = Anthropic()

        def llm_call(prompt, system_prompt="", model="claude-sonnet-4-5"):
            messages = [{"role": "user", "content": prompt}]
            return client.messages.create(model=model, max_tokens=4096, system=system_prompt, messages=messages)
    """
    assert lint(source, "CL501") == []


def test_bare_forwarder_without_system_or_tools_is_quiet():
    source = """
        from anthropic import Anthropic

        client = Anthropic()

        def relay(messages):
            return client.messages.create(model="claude-sonnet-4-5", max_tokens=1024, messages=list(messages))
    """
    assert lint(source, "CL501") == []


def test_litellm_adapter_of_a_claude_class_with_a_leading_system_message():
    source = """
        from litellm import completion

        class AnthropicModel:
            def __init__(self, model):
                self.api_model = model

            def query(self, messages, system_message=""):
                return completion(messages=[{"role": "system", "content": system_message}] + messages,
                                  model=self.api_model, max_tokens=4096)
    """
    assert [f.row for f in lint(source, "CL501")] == [8]
    assert lint(source.replace("class AnthropicModel", "class OpenAiModel"), "CL501") == []


# an adapter that splits the callers' messages into (system, turns) with a method of its own and sends them
# inside retry loops: the loops resend the same request, they do not grow a conversation
SPLITTING_ADAPTER = """
import anthropic

class ClaudeService:
    def __init__(self, config):
        self.client = anthropic.Anthropic(api_key=config["KEY"])
        self.model = config["MODEL"]
        self.max_retry = 3

    def chat_completion(self, messages, n=1, max_tokens=2000):
        responses = []
        system_prompt, turns = self.process_messages(messages)
        for _ in range(n):
            for attempt in range(self.max_retry):
                try:
                    response = self.client.messages.create(max_tokens=max_tokens, model=self.model, system=system_prompt, messages=turns)
                    responses.append(response.content[0].text)
                    break
                except anthropic.APIError:
                    continue
        return responses

    def process_messages(self, messages):
        system_prompt, turns = "", []
        for message in messages:
            if message["role"] == "system":
                system_prompt = message["content"]
            else:
                turns.append({"role": message["role"], "content": message["content"]})
        return system_prompt, turns
"""


def test_adapter_with_retry_loops_and_a_tuple_returning_converter_is_reported():
    found = lint(SPLITTING_ADAPTER, "CL501")
    assert [f.row for f in found] == [15] and "`chat_completion`" in found[0].message and "`messages`" in found[0].message


def test_the_same_request_in_a_loop_over_new_conversations_is_not_an_adapter():
    per_item = SPLITTING_ADAPTER.replace("for _ in range(n):", "for messages in batch:").replace(
        "def chat_completion(self, messages,", "def chat_completion(self, batch,")
    assert lint(per_item, "CL501") == []


# a chat class that is the conversation: its own self.messages grows each turn, and it sends them to Claude
OWN_CONVERSATION = """
from anthropic import Anthropic

class ChatSession:
    def __init__(self, system_message: str):
        self.system_message = system_message
        self.messages = []

    def chat(self, content: str) -> str:
        self.messages.append({"role": "user", "content": content})
        reply = self.call_anthropic()
        self.messages.append({"role": "assistant", "content": reply})
        return reply

    def call_anthropic(self) -> str:
        client = Anthropic()
        message_dicts = [{"role": m["role"], "content": m["content"]} for m in self.messages]
        response = client.messages.create(model="claude-sonnet-4-5", max_tokens=2048, system=self.system_message, messages=message_dicts)
        return response.content[0].text
"""


def test_a_chat_class_sending_its_own_growing_messages_is_reported():
    found = lint(OWN_CONVERSATION, "CL501")
    assert [f.row for f in found] == [17] and "self.messages" in found[0].message


def test_a_class_that_sends_a_fixed_list_it_never_grows_is_quiet():
    fixed = OWN_CONVERSATION.replace('self.messages.append({"role": "user", "content": content})', "self.last = content").replace(
        'self.messages.append({"role": "assistant", "content": reply})', "pass")
    assert lint(fixed, "CL501") == []


# --- requests posted to the providers' HTTP APIs directly (requests / httpx), no SDK --------------------------

RAW_HTTP_ADAPTER = """
import requests

API_BASE = "https://api.anthropic.com"

def build_payload(messages, system_prompt, model):
    headers = {"x-api-key": KEY, "anthropic-version": "2023-06-01", "content-type": "application/json"}
    turns = [{"role": m["role"], "content": m["content"]} for m in messages if m["role"] != "system"]
    payload = {"model": model, "max_tokens": 4096, "messages": turns, "system": system_prompt}
    return headers, payload

def chat(messages, system_prompt, model="claude-sonnet-4-5"):
    headers, payload = build_payload(messages, system_prompt, model)
    ENDPOINT = API_BASE + "/v1/messages"
    while True:
        try:
            response = requests.post(URL, headers=headers, json=payload, timeout=60)
            break
        except requests.exceptions.ReadTimeout:
            continue
    return response.json()["content"][0]["text"]
"""


@pytest.mark.parametrize("url", ['f"{API_BASE}/v1/messages"', "API_BASE + '/v1/messages'", "ENDPOINT"])
def test_an_http_adapter_posting_the_callers_history_to_anthropic_is_reported(url):
    found = lint(RAW_HTTP_ADAPTER.replace("URL", url), "CL501")
    assert [f.row for f in found] == [16] and "`chat`" in found[0].message and "`messages`" in found[0].message


def test_a_post_to_the_apps_own_messages_api_is_not_a_request():
    own = RAW_HTTP_ADAPTER.replace('"anthropic-version": "2023-06-01", ', "").replace("URL", 'f"{API_BASE}/api/rooms/{room}/messages"')
    assert lint(own, "CL501") == []


def test_a_clock_in_the_system_prompt_of_a_raw_openai_post_is_reported():
    source = '''
import datetime
import httpx

def answer(history, question):
    payload = {
        "model": "gpt-4.1",
        "messages": [{"role": "system", "content": f"You are our support bot. Now: {datetime.datetime.now():%H:%M:%S}."}, *history,
                     {"role": "user", "content": question}],
    }
    return httpx.post("https://api.openai.com/v1/chat/completions", json=payload, headers={"authorization": f"Bearer {KEY}"}).json()
'''
    found = lint(source, "CL101")
    assert [f.row for f in found] == [7] and "httpx.post() on line 10" in found[0].message


def test_an_adapter_converting_the_history_by_index_in_a_while_loop():
    source = """
import anthropic

class AnthropicService:
    def __init__(self):
        self._client = anthropic.Anthropic()

    def send_request(self, request):
        return self._client.messages.create(**self._build_payload(request))

    def _build_payload(self, request):
        messages = []
        i = 0
        while i < len(request.messages):
            m = request.messages[i]
            role = m.role if m.role in {"user", "assistant"} else "user"
            blocks = [{"type": "text", "text": m.content}]
            messages.append({"role": role, "content": blocks})
            i += 1
        return {"model": "claude-sonnet-4-5", "max_tokens": 1024, "system": request.system_prompt, "tools": request.tools,
                "messages": messages}
"""
    found = lint(source, "CL501")
    assert [f.row for f in found] == [8] and "`request`" in found[0].message


def test_a_payload_built_by_the_caller_of_two_posting_helpers_is_one_finding_where_it_is_built():
    source = """
import requests

class ClaudeBot:
    def call_with_tools(self, messages, tools=None, stream=False, **kwargs):
        system_prompt = kwargs.get("system", "")
        claude_messages = []
        for msg in messages:
            if msg.get("role") == "system":
                system_prompt = msg["content"]
            else:
                claude_messages.append({"role": msg["role"], "content": msg["content"]})
        request_params = {"model": "claude-sonnet-4-5", "max_tokens": 4096, "messages": claude_messages, "stream": stream}
        request_params["system"] = system_prompt
        request_params["tools"] = tools
        return self._stream(request_params) if stream else self._sync(request_params)

    def _sync(self, data):
        headers = {"x-api-key": self.key, "anthropic-version": "2023-06-01"}
        return requests.post(f"{self.api_base}/messages", headers=headers, json=data).json()

    def _stream(self, data):
        headers = {"x-api-key": self.key, "anthropic-version": "2023-06-01"}
        return requests.post(f"{self.api_base}/messages", headers=headers, json=data, stream=True)
"""
    found = lint(source, "CL501")
    assert [f.row for f in found] == [12] and "`messages`" in found[0].message


# --- an Anthropic integration in a project that sets no breakpoint anywhere (issue 14, holdout5's adapters) -----
# Whether a breakpoint is missing is a fact of the project: a module that posts to Anthropic by hand, builds the
# request body for a generic sender, or makes a framework's Claude model cannot get one from anywhere when no
# file of the tree speaks of cache_control. Reported `likely`; one file that sets breakpoints quiets them.

HTTP_ADAPTER = """
import requests

ANTHROPIC_API_URL = "https://api.anthropic.com/v1/messages"

class ClaudeProvider:
    def inference(self, prompt, images=()):
        messages = []
        if images:
            messages.append({"role": "user", "content": [{"type": "image", "source": i} for i in images]})
        messages.append({"role": "user", "content": prompt})
        payload = {"model": self.model, "max_tokens": self.max_tokens, "messages": messages}
        resp = requests.post(ANTHROPIC_API_URL, headers=self._headers(), json=payload, timeout=300)
        return resp.json()["content"][0]["text"]
"""

PAYLOAD_BUILDER = """
def _build_anthropic_chat_completion_payload(messages, stream, model_id, functions=None):
    system, others = _extract_system_message(messages)
    formatted = [_build_anthropic_message(m) for m in others]
    payload = {
        "messages": formatted,
        "model": model_id,
        "max_tokens": 4096,
        "stream": stream,
    }
    if system:
        payload["system"] = system
    return payload
"""

FRAMEWORK_MODEL = """
from llama_index.llms.anthropic import Anthropic
from llama_index.multi_modal_llms.anthropic import AnthropicMultiModal

class AnthropicContext(Context):
    def __init__(self, api_key=None, llm="claude-sonnet-4-5", mm_llm="claude-sonnet-4-5"):
        super().__init__(
            Anthropic(model=llm, api_key=api_key, max_tokens=4096),
            AnthropicMultiModal(api_key=api_key, model=mm_llm),
        )
"""


@pytest.mark.parametrize("source, needle", [(HTTP_ADAPTER, "payload = {"), (PAYLOAD_BUILDER, "payload = {"),
                                            (FRAMEWORK_MODEL, "Anthropic(model=")], ids=["http", "payload", "framework"])
def test_anthropic_integration_in_a_tree_without_breakpoints_is_reported_once(tmp_path, source, needle):
    module = write(tmp_path / "providers" / "anthropic.py", source)
    write(tmp_path / "providers" / "__init__.py", "")
    write(tmp_path / "app.py", "from providers.anthropic import *\n")
    found = lint_file(module, "CL501")
    assert [f.row for f in found] == [row_of(source, needle)]  # at the request body (or the first model made)
    assert found[0].confidence == "likely" and "no file of this project" in found[0].message


def test_a_body_the_module_sends_itself_is_judged_at_its_request_only(tmp_path):
    """`create(**self._kwargs(messages))`: the request is in sight, and its own paths decide."""
    source = """
        import anthropic

        class AnthropicLLM:
            def __init__(self, config):
                self.aclient = anthropic.AsyncAnthropic(api_key=config.api_key)

            def _const_kwargs(self, messages, stream=False):
                kwargs = {"model": self.model, "messages": messages, "max_tokens": 4096, "stream": stream}
                if messages[0]["role"] == "system":
                    kwargs["messages"] = messages[1:]
                    kwargs["system"] = messages[0]["content"]
                return kwargs

            async def acompletion(self, messages):
                return await self.aclient.messages.create(**self._const_kwargs(messages))
        """
    module = write(tmp_path / "provider" / "anthropic_api.py", source)
    write(tmp_path / "provider" / "__init__.py", "")
    assert all(f.row != row_of(source, "kwargs = {") for f in lint_file(module, "CL501"))


@pytest.mark.parametrize("source", [HTTP_ADAPTER, PAYLOAD_BUILDER, FRAMEWORK_MODEL], ids=["http", "payload", "framework"])
def test_one_file_of_the_tree_that_sets_breakpoints_quiets_it(tmp_path, source):
    module = write(tmp_path / "providers" / "anthropic.py", source)
    write(tmp_path / "providers" / "__init__.py", "")
    write(tmp_path / "caching.py", 'def mark(block):\n    block["cache_control"] = {"type": "ephemeral"}\n    return block\n')
    assert lint_file(module, "CL501") == []


def test_a_body_with_one_new_question_written_in_it_is_no_conversation(tmp_path):
    source = """
        class ClaudeVision:
            def _anthropic_image_body(self, question, image_url, model):
                return {"model": model, "max_tokens": 1024,
                        "messages": [{"role": "user", "content": [{"type": "image", "source": {"type": "url", "url": image_url}},
                                                                  {"type": "text", "text": question}]}]}
        """
    module = write(tmp_path / "vision" / "claude.py", source)
    write(tmp_path / "vision" / "__init__.py", "")
    assert lint_file(module, "CL501") == []


def test_an_http_cache_control_header_is_no_breakpoint(tmp_path):
    module = write(tmp_path / "providers" / "anthropic.py", HTTP_ADAPTER)
    write(tmp_path / "providers" / "__init__.py", "")
    write(tmp_path / "web.py", 'cache_control = ("no-store" if private else "max-age=60")\nheaders = {"Cache-Control": cache_control}\n')
    assert len(lint_file(module, "CL501")) == 1


def test_an_sdk_helper_wrapping_a_prompt_is_still_quiet_in_such_a_tree(tmp_path):
    """A one-off helper on the SDK is as often a script with a short prompt: the tree's silence alone does not
    make it a finding (the posted and framework integrations above are an app's provider layer)."""
    module = write(tmp_path / "ask.py", """
        import anthropic
        client = anthropic.Anthropic()
        def ask(prompt):
            return client.messages.create(model="claude-sonnet-4-5", max_tokens=512, messages=[{"role": "user", "content": prompt}])
        """)
    assert lint_file(module, "CL501") == []


def test_adding_a_breakpoint_in_another_file_relints_the_adapter(tmp_path, monkeypatch):
    """The answer rests on every file of the tree: the cache keeps them as the adapter's dependencies."""
    from cachelint.check.config import Config
    from cachelint.check.run import run_check

    write(tmp_path / "providers" / "anthropic.py", HTTP_ADAPTER)
    write(tmp_path / "util.py", "def shorten(text):\n    return text[:80]\n")
    monkeypatch.chdir(tmp_path)

    def codes() -> list[str]:
        run = run_check([Path(".")], Config(root=tmp_path), processes=1)
        return [f"{f.filename}:{f.code}" for f in run.findings]

    assert codes() == ["providers/anthropic.py:CL501"]
    assert codes() == ["providers/anthropic.py:CL501"]  # warm
    write(tmp_path / "util.py", 'def shorten(text):\n    return text[:80]\n\nEPHEMERAL = {"cache_control": {"type": "ephemeral"}}\n')
    assert codes() == []


# --- CL501: adapters written the ways real providers' modules write them --------------------------------------

PROPERTY_CLIENT_ADAPTER = """
    from functools import cached_property
    from anthropic import AnthropicVertex

    class Claude:
        @cached_property
        def _client(self) -> AnthropicVertex:
            return AnthropicVertex(project_id="p", region="us-east5")

        async def generate(self, request):
            messages = [to_message_param(content) for content in request.contents or []]
            tools = [to_tool(t) for t in request.tools] if request.tools else None
            return self._client.messages.create(model=request.model, system=request.system_instruction,
                                                messages=messages, tools=tools, max_tokens=4096)
"""


def test_a_client_kept_as_a_property_sends_its_callers_history(tmp_path):
    """`self._client` is a `@cached_property` that makes the client; the history is `request.contents or []`."""
    module = write(tmp_path / "models" / "claude.py", PROPERTY_CLIENT_ADAPTER)
    write(tmp_path / "models" / "__init__.py", "")
    found = lint_file(module, "CL501")
    assert [f.row for f in found] == [row_of(PROPERTY_CLIENT_ADAPTER, "return self._client.messages.create(")]
    assert "sends the history its callers pass" in found[0].message


def test_a_client_made_by_a_property_is_a_resolved_sdk_client():
    """Resolved through the property, the request is certain; by its shape alone it would be likely."""
    source = """
        import datetime
        from functools import cached_property
        from anthropic import AnthropicVertex

        class Claude:
            @cached_property
            def _client(self) -> AnthropicVertex:
                return AnthropicVertex(project_id="p", region="us-east5")

            def ask(self, question):
                system = f"Today is {datetime.datetime.now().isoformat()}. " + RULES
                return self._client.messages.create(model="claude-sonnet-4-5", max_tokens=256, system=system,
                                                    messages=[{"role": "user", "content": question}])
        """
    source = textwrap.dedent(source).lstrip("\n") + f"\nRULES = {HANDBOOK!r}\n"
    found = [f for f in lint_source(source, "claude.py") if f.code == "CL101"]
    assert [f.confidence for f in found] == ["certain"]
    unresolved = source.replace("return AnthropicVertex(", "return make_client(").replace(" -> AnthropicVertex", "")
    found = [f for f in lint_source(unresolved, "claude.py") if f.code == "CL101"]
    assert [f.confidence for f in found] == ["likely"]


PAYLOAD_BESIDE_A_REQUEST = """
    import anthropic

    def anthropic_completion(client, prompt):
        return client.messages.create(model="claude-sonnet-4-5", max_tokens=256,
                                      messages=[{"role": "user", "content": prompt}])

    class AnthropicChat(TemplateAPI):
        def _create_payload(self, messages, gen_kwargs=None):
            system = messages[0].get("content") if messages[0].get("role") == "system" else None
            if system:
                messages = messages[1:]
            cleaned_messages = []
            for msg in messages:
                cleaned_msg = {"role": msg["role"], "content": [{"type": "text", "text": msg["content"]}]}
                cleaned_messages.append(cleaned_msg)
            out = {"messages": cleaned_messages, "model": self.model, "max_tokens": 256}
            if system:
                out["system"] = system
            return out
"""


def test_a_payload_builder_is_judged_though_the_module_sends_another_request_itself(tmp_path):
    """The module's own one-off request does not send the payload that a generic HTTP sender posts elsewhere."""
    module = write(tmp_path / "models" / "anthropic_llms.py", PAYLOAD_BESIDE_A_REQUEST)
    write(tmp_path / "models" / "__init__.py", "")
    found = lint_file(module, "CL501")
    assert [f.row for f in found] == [row_of(PAYLOAD_BESIDE_A_REQUEST, "out = {")]
    assert "builds an Anthropic request from what its callers pass" in found[0].message


def test_a_payload_builder_whose_list_is_written_in_it_is_a_one_off(tmp_path):
    source = PAYLOAD_BESIDE_A_REQUEST.replace('cleaned_msg = {"role": msg["role"]', 'cleaned_msg = {"role": "user"')\
        .replace('"text": msg["content"]', '"text": "Summarize."')
    module = write(tmp_path / "models" / "anthropic_llms.py", source)
    write(tmp_path / "models" / "__init__.py", "")
    assert lint_file(module, "CL501") == []


def test_a_comment_about_cache_control_does_not_quiet_the_adapter_and_code_does(tmp_path):
    source = PROPERTY_CLIENT_ADAPTER.replace("            return self._client.messages.create(",
                                             "            # a cache_control breakpoint would go on the last message\n"
                                             "            return self._client.messages.create(")
    module = write(tmp_path / "models" / "claude.py", source)
    write(tmp_path / "models" / "__init__.py", "")
    assert [f.row for f in lint_file(module, "CL501")] == [row_of(source, "return self._client.messages.create(")]
    marked = source.replace("# a cache_control breakpoint would go on the last message", "messages = mark_last(messages, cache_control=True)")
    write(module, marked)
    assert lint_file(module, "CL501") == []


# --- requests sent through a wrapper that forwards **kwargs -----------------------------------------------------

RETRY_WRAPPER = """
    from anthropic import Anthropic

    def anthropic_create_retrying(client: Anthropic, *args, **kwargs):
        result = create_retrying(client.messages.create, retry_exceptions=TIMEOUTS, *args, **kwargs)
        if "error" in result:
            raise Exception(result["error"])
        return result

    class AnthropicSolver:
        def _solve(self, task_state, **kwargs):
            anth_msgs = self._convert_msgs_to_anthropic_format(task_state.messages)
            response = anthropic_create_retrying(client=Anthropic(max_retries=0), model=self.model_name,
                                                 system=task_state.task_description, messages=anth_msgs, max_tokens=512)
            return response.content[0].text
"""


def test_a_request_sent_through_a_retry_wrapper_is_judged_at_the_wrappers_call(tmp_path):
    """`create_retrying(client.messages.create, **kwargs)`: the SDK method handed to a retry helper with the
    wrapper's keywords; each call of the wrapper is the request, with the arguments it passes."""
    module = write(tmp_path / "solvers" / "anthropic_solver.py", RETRY_WRAPPER)
    write(tmp_path / "solvers" / "__init__.py", "")
    found = lint_file(module, "CL501")
    assert [f.row for f in found] == [row_of(RETRY_WRAPPER, "response = anthropic_create_retrying(")]


def test_a_wrapper_that_forwards_kwargs_to_the_sdk_makes_its_calls_requests():
    source = """
        import datetime
        from openai import OpenAI

        client = OpenAI()

        def completion_with_backoff(**kwargs):
            return client.chat.completions.create(**kwargs)

        def ask(history):
            system = f"Now: {datetime.datetime.now().isoformat()}\\n" + RULES
            return completion_with_backoff(model="gpt-4.1", messages=[{"role": "system", "content": system}, *history])
        """
    source = textwrap.dedent(source).lstrip("\n") + f"\nRULES = {HANDBOOK!r}\n"
    found = [f for f in lint_source(source, "app.py") if f.code == "CL101"]
    assert [f.row for f in found] == [10] and found[0].confidence == "certain"
