"""CL1xx on the shapes real apps take (issue 14): values that cross functions and modules, and prompt-shaped
renderers whose request is sent out of sight. Each class of code is one small file written the way apps
write it; the quiet cases are the false alarms that must stay quiet."""

from __future__ import annotations

import textwrap

from cachelint.check.engine import lint_source


def lint(source: str, codes: set[str] | None = None, filename: str = "adapter.py"):
    source = textwrap.dedent(source).lstrip("\n")
    return [f for f in lint_source(source, filename) if codes is None or f.code in codes]


# --- history renderers: a conversation rendered into provider messages, sent by someone else ---------------

TOOL_RESULTS_RENDERED = """
    import json

    def _result_text(value):
        if isinstance(value, str):
            return value
        return json.dumps(value)

    class ChatFormatter:
        def to_messages(self, turns):
            out = []
            for turn in turns:
                out.append({"role": "user", "content": turn.question})
                for result in turn.tool_results:
                    out.append({"role": "tool", "tool_call_id": result.id, "content": _result_text(result.value)})
            return out
"""


def test_json_of_stored_tool_results_rendered_per_turn_is_quiet():
    # the same code builds each turn's dict in the same key order; on real code (dspy, griptape, UFO, AgentVerse,
    # DocsGPT) this was right 2 times in 10, and never on code the analyzer was not tuned on
    assert lint(TOOL_RESULTS_RENDERED, {"CL102"}) == []


def test_tool_call_arguments_stored_into_a_message_after_it_is_built_are_followed():
    source = """
        def _as_tool_call(call):
            return {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": ",".join(set(call.args))}}

        def history_messages(history):
            messages = []
            for step in history:
                message = {"role": "assistant", "content": step.text}
                if step.calls:
                    message["tool_calls"] = [_as_tool_call(c) for c in step.calls]
                messages.append(message)
            return messages
    """
    assert [f.row for f in lint(source, {"CL103"})] == [2]


def test_a_set_of_references_joined_into_rendered_history_is_found():
    source = """
        def rebuild(chat_history):
            rendered = []
            for chat in chat_history:
                if chat.sources:
                    refs = "\\n".join({f"# {s.uri}\\n{s.text}" for s in chat.sources})
                    rendered.append({"role": "user", "content": [{"type": "text", "text": f"Notes:\\n{refs}"}]})
                rendered.append({"role": chat.role, "content": chat.text})
            return rendered
    """
    found = lint(source, {"CL103"})
    assert [(f.row, f.confidence) for f in found] == [(5, "likely")]


def test_a_message_class_called_with_role_and_content_is_a_message():
    source = """
        import os
        from langchain_core.messages import ChatMessage

        def replay(turns, folder):
            out = []
            for turn in turns:
                listing = ", ".join(os.listdir(folder))
                out.append(ChatMessage(role="user", content=f"{turn.text}\\nFiles: {listing}"))
            return out
    """
    assert [f.row for f in lint(source, {"CL103"})] == [7]


def test_a_renderer_with_sorted_and_sort_keys_stays_quiet():
    source = """
        import json

        def to_messages(turns):
            out = []
            for turn in turns:
                tags = ", ".join(sorted({t.lower() for t in turn.tags}))
                out.append({"role": "user", "content": f"{turn.text} [{tags}]"})
                out.append({"role": "tool", "tool_call_id": turn.id, "content": json.dumps(turn.result, sort_keys=True)})
            return out
    """
    assert lint(source, {"CL102", "CL103"}) == []


def test_json_of_a_value_known_not_to_be_a_dict_stays_quiet():
    source = """
        import json

        def blocks(content):
            out = []
            for block in content:
                if isinstance(block, dict):
                    out.append(block)
                else:
                    out.append({"type": "text", "text": json.dumps(block)})
            return out
    """
    assert lint(source, {"CL102"}) == []


def test_an_agent_loop_appending_its_new_tool_results_stays_quiet():
    """The function that sends the request appends each new tool result once: it is kept as it was sent."""
    source = """
        import json
        from openai import OpenAI
        client = OpenAI()

        def run(task, tools, registry):
            messages = [{"role": "system", "content": "You are an agent."}, {"role": "user", "content": task}]
            while True:
                reply = client.chat.completions.create(model="gpt-4o", messages=messages, tools=tools).choices[0].message
                messages.append(reply)
                if not reply.tool_calls:
                    return reply.content
                for call in reply.tool_calls:
                    result = registry[call.function.name](**json.loads(call.function.arguments))
                    messages.append({"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)})
    """
    assert lint(source, {"CL102"}) == []


def test_a_single_newest_message_built_once_per_call_stays_quiet():
    """Not in a loop: the newest turn, not reused yet."""
    source = """
        import json

        def user_message(payload):
            return {"role": "user", "content": json.dumps(payload)}
    """
    assert lint(source, {"CL102"}) == []


# --- values that cross functions, classes and modules --------------------------------------------------------

def _tree(tmp_path, files: dict[str, str]):
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))
    return tmp_path


def _lint_file(path, codes: set[str]):
    return [f for f in lint_source(path.read_text(), str(path)) if f.code in codes]


def test_a_method_of_a_class_imported_from_another_module_is_followed(tmp_path):
    tree = _tree(tmp_path, {
        "bot/__init__.py": "",
        "bot/persona.py": """
            from datetime import datetime

            class SystemPrompt:
                def __init__(self, role):
                    self.role = role

                def render(self):
                    return f"You are {self.role}. It is {datetime.now():%H:%M}. Keep answers short and cite the handbook."
        """,
        "bot/agent.py": """
            import anthropic
            from bot.persona import SystemPrompt

            client = anthropic.Anthropic()

            class Agent:
                def __init__(self):
                    self.prompt = SystemPrompt("a support agent")

                def step(self, history):
                    return client.messages.create(model="claude-sonnet-4-5", max_tokens=256,
                                                  system=self.prompt.render(), messages=history)
        """,
    })
    found = _lint_file(tree / "bot" / "agent.py", {"CL101"})
    assert [(f.row, f.confidence) for f in found] == [(12, "certain")]
    assert "persona.py:8" in found[0].message and "every minute" in found[0].message


def test_a_method_of_a_local_class_kept_on_self_is_followed_and_judged_per_object():
    source = """
        import uuid
        from openai import OpenAI

        client = OpenAI()

        class Persona:
            def __init__(self, name):
                self.name = name
                self.session = uuid.uuid4().hex

            def system(self):
                return f"You are {self.name}. Session {self.session}. Answer briefly and cite sources."

        class Bot:
            def __init__(self):
                self.persona = Persona("Ada")

            def reply(self, history):
                return client.chat.completions.create(model="gpt-4o", messages=[{"role": "system", "content": self.persona.system()}, *history])
    """
    found = lint(source, {"CL101"}, "bot.py")
    assert [f.row for f in found] == [9]
    assert "once per conversation" in found[0].message


def test_a_value_passed_through_star_star_kwargs_into_a_helper_is_followed():
    source = """
        import datetime
        import anthropic

        client = anthropic.Anthropic()

        def build_system(persona, **extra):
            return f"You are {persona}. Now: {extra['now']}. Follow the house style guide in every answer."

        def ask(history):
            options = {"now": datetime.datetime.now().isoformat()}
            return client.messages.create(model="claude-sonnet-4-5", max_tokens=100, system=build_system("Ada", **options), messages=history)
    """
    assert [f.row for f in lint(source, {"CL101"}, "kw.py")] == [10]


def test_a_method_returning_static_text_stays_quiet(tmp_path):
    tree = _tree(tmp_path, {
        "svc/__init__.py": "",
        "svc/prompts.py": """
            class Prompt:
                def __init__(self, tone):
                    self.tone = tone

                def render(self):
                    return "You are a careful reviewer. Tone: " + self.tone
        """,
        "svc/review.py": """
            from openai import OpenAI
            from svc.prompts import Prompt

            client = OpenAI()
            PROMPT = Prompt("formal")

            def review(history):
                return client.chat.completions.create(model="gpt-4o", messages=[{"role": "system", "content": PROMPT.render()}, *history])
        """,
    })
    assert _lint_file(tree / "svc" / "review.py", {"CL101", "CL102", "CL103", "CL104"}) == []


def test_new_results_stored_into_kept_state_once_stay_quiet():
    """The function writes each new action result into the history it keeps and returns nothing: each result is
    rendered once, when it is new, and stays as it was."""
    source = """
        import json

        class Operator:
            def add_results(self, steps, results):
                for index, step in enumerate(steps):
                    text = f"Result: {json.dumps(step.output)}"
                    results[index]["content"] = [{"type": "text", "text": text}]
    """
    assert lint(source, {"CL102"}) == []


# --- CL104: per-call data ahead of static instructions in a cached system block ----------------------------

EDIT_PROMPT = '''
    import anthropic
    client = anthropic.Anthropic()
    STYLE = """{style}"""

    def edit(file_content, instructions, request):
        prompt = f"""
        1. File:
        {{file_content}}
        2. Instructions:
        {{instructions}}
        {{STYLE}}
        """
        return client.messages.create(model="claude-sonnet-4-5", max_tokens=4000,
            system=[{{"type": "text", "text": prompt, "cache_control": {{"type": "ephemeral"}}}}],
            messages=[{{"role": "user", "content": request}}])
'''


def test_per_call_file_ahead_of_long_static_instructions_in_a_cached_block_is_found():
    style = "Follow the review process: read the code, plan the change, then write SEARCH/REPLACE blocks. " * 80
    found = lint(EDIT_PROMPT.format(style=style), {"CL104"}, "edit.py")
    assert [f.row for f in found] == [8] and "file_content" in found[0].message


def test_per_call_file_ahead_of_static_text_below_the_minimum_in_a_cached_block_is_quiet():
    found = lint(EDIT_PROMPT.format(style="Return SEARCH/REPLACE blocks only."), {"CL104"}, "edit.py")
    assert found == []


def test_an_agent_loop_on_a_client_no_one_recognizes_stays_quiet():
    """A local model's client sends `messages=`: the loop that appends each tool result once is an agent loop."""
    source = """
        import os
        import ollama

        def list_files(path):
            return "\\n".join(os.listdir(path))

        def chat(conversation, tools):
            while True:
                reply = ollama.chat(model="llama3", messages=conversation, tools=tools)
                calls = reply["message"].get("tool_calls") or []
                if not calls:
                    return reply["message"]["content"], conversation
                for call in calls:
                    conversation.append({"role": "tool", "content": list_files(call["function"]["arguments"]["path"])})
    """
    assert lint(source, {"CL103"}) == []


def test_a_schema_dumped_into_a_prompt_shaped_message_list_is_quiet():
    # ragflow's agent components: the output schema from the stored configuration, dumped into the system prompt
    # of a message list sent out of sight; a dict's repr there is still judged
    source = """
        import json
        def build(schema, question):
            return [{"role": "system", "content": "Answer as JSON matching:\\\\n" + json.dumps(schema, indent=2)},
                    {"role": "user", "content": question}]
    """
    assert lint(source, {"CL102"}) == []
    kept_in_jsonb = source + """
        from sqlalchemy.dialects.postgresql import JSONB
        class AgentSession:
            config = JSONB
    """
    assert lint(kept_in_jsonb, {"CL102"}) == []
    assert [f.row for f in lint(kept_in_jsonb.replace("json.dumps(schema, indent=2)", "str(dict(schema))"), {"CL102"})] == [3]


# --- templates filled by str.replace and by a dict filled key by key (ragflow's dialog service, holdout7) --------

def test_a_time_put_into_a_template_with_replace_is_found():
    source = """
        from datetime import datetime, timezone
        async def chat_solo(dialog, messages, chat_mdl):
            sys_date = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
            system_prompt = dialog.prompt_config.get("system", "").replace("{date}", sys_date)
            return await chat_mdl.async_chat(system_prompt, messages, dialog.llm_setting)
    """
    assert [f.row for f in lint(source, {"CL101"})] == [3]
    quiet = source.replace('.replace("{date}", sys_date)', '.replace("{name}", dialog.name)')
    assert lint(quiet, {"CL101"}) == []


def test_a_time_stored_into_the_kwargs_of_a_format_is_found():
    source = """
        from datetime import datetime, timezone
        async def chat(dialog, messages, **kwargs):
            kwargs["date"] = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
            kwargs["knowledge"] = "\\n".join(dialog.chunks)
            system_content = dialog.prompt_config["system"].format(**kwargs)
            msg = [{"role": "system", "content": system_content}]
            msg.extend(messages)
            return msg
    """
    assert [f.row for f in lint(source, {"CL101"})] == [3]
    day = source.replace('strftime("%Y-%m-%d %H:%M:%S")', 'strftime("%Y-%m-%d")')
    assert lint(day, {"CL101"}) == []  # a date at day resolution in a prompt sent out of sight: not judged


# --- a window of the history handed to a function or method that sends it (round 13) -----------------------

WINDOW_SENDERS = {
    "chat/__init__.py": "",
    "chat/llm.py": """
        from openai import OpenAI

        client = OpenAI()

        def ask(msgs):
            return client.chat.completions.create(model="gpt-4o", messages=msgs)

        class Base:
            def _chat(self, history):
                return client.chat.completions.create(model="gpt-4o", messages=history)

            def _log(self, history):
                print(len(history))
    """,
    "chat/bot.py": """
        from chat.llm import Base, ask

        class Bot(Base):
            def __init__(self):
                self.history = []

            def reply(self, text):
                msgs = [{"role": "system", "content": "You are a helpful assistant"}]
                for turn in self.history[-6:]:
                    msgs.extend(turn)
                msgs.append({"role": "user", "content": text})
                answer = ask(msgs)
                self.history.append([{"role": "user", "content": text}, {"role": "assistant", "content": answer}])
                return answer

            def reply_inherited(self, text):
                msgs = [{"role": "system", "content": "You are a helpful assistant"}]
                for turn in self.history[-6:]:
                    msgs.extend(turn)
                msgs.append({"role": "user", "content": text})
                return self._chat(msgs)

            def logged(self, text):
                recent = []
                for turn in self.history[-6:]:
                    recent.extend(turn)
                self._log(recent)
    """,
}


def test_a_window_sent_by_a_function_or_inherited_method_of_another_module_is_found(tmp_path):
    # `ask(msgs)` imported from the module that sends, and `self._chat(msgs)` inherited from a base class there:
    # the window is the history of a request either way; a window handed to a method that only logs it is not
    tree = _tree(tmp_path, WINDOW_SENDERS)
    found = _lint_file(tree / "chat" / "bot.py", {"CL301"})
    assert [f.row for f in found] == [9, 18]
    assert all("keeps only the latest messages" in f.message for f in found)


# --- a prompt template kept in the app's prompts module (round 13) -------------------------------------------

_RULES = " ".join(f"Rule {i}: answer precisely, cite the sources and keep the report's format stable." for i in range(60))
PROMPTS_MODULE = {
    "research/__init__.py": "",
    "research/prompts.py": f'''
        RESEARCH_INSTRUCTIONS = """You are writing the section: {{section_description}}.

        {_RULES}
        """
        SHORT = "Section: {{section_description}}. Be brief."
    ''',
    "research/agent.py": """
        from openai import OpenAI
        from research import prompts
        from research.prompts import RESEARCH_INSTRUCTIONS, SHORT

        client = OpenAI()

        def write(section, question):
            system = RESEARCH_INSTRUCTIONS.format(section_description=section)
            return client.chat.completions.create(model="gpt-4o", messages=[{"role": "system", "content": system}, {"role": "user", "content": question}])

        def write_attr(section, question):
            system = prompts.RESEARCH_INSTRUCTIONS.format(section_description=section)
            return client.chat.completions.create(model="gpt-4o", messages=[{"role": "system", "content": system}, {"role": "user", "content": question}])

        def write_more(section, question, extra):
            system = RESEARCH_INSTRUCTIONS.format(section_description=section)
            system += extra
            return client.chat.completions.create(model="gpt-4o", messages=[{"role": "system", "content": system}, {"role": "user", "content": question}])

        def brief(section, question):
            system = SHORT.format(section_description=section)
            return client.chat.completions.create(model="gpt-4o", messages=[{"role": "system", "content": system}, {"role": "user", "content": question}])
    """,
}


def test_a_template_imported_from_the_prompts_module_is_measured(tmp_path):
    # the static rules after `{section_description}` live in prompts.py: imported by name or read as
    # `prompts.NAME`, they are measured there, text added at the end (`system += extra`) moving nothing; the problem
    # is reported once, at the template's placeholder (round 30), and a short template stays quiet
    tree = _tree(tmp_path, PROMPTS_MODULE)
    assert _lint_file(tree / "research" / "agent.py", {"CL104"}) == []
    found = _lint_file(tree / "research" / "prompts.py", {"CL104"})
    assert [f.row for f in found] == [1]
    assert "come after its per-call value `{section_description}` (research/agent.py fills it)" in found[0].message
