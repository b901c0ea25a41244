"""Round 16: classes read from a spent set's findings and misses (holdout20, apps that call the SDKs directly).

- CL501: an adapter whose messages are made by the tree's own converter, which sets the breakpoints in another
  module (`[m.to_anthropic_format() for m in messages]`), is not missing them; the same converter told to leave
  them out (`enable_cache_control=False`) is, even though that module now speaks of caching.
- CL203: a request that sends a copy of the object's conversation (`copy.deepcopy(self.history)`) is a request of
  that conversation, so a summary request on it without the tools is found.
- CL503: a breakpoint set on a deep copy made afresh every turn does not pile up in the kept history.
"""

from __future__ import annotations

import textwrap

from cachelint.check.engine import lint_source

MESSAGE = '''
class Message:
    def __init__(self, role, text, cache_control=False):
        self.role, self.text, self.cache_control = role, text, cache_control

    def to_anthropic_format(self, enable_cache_control: bool = True) -> dict:
        block = {"type": "text", "text": self.text}
        if self.cache_control and enable_cache_control:
            block["cache_control"] = {"type": "ephemeral"}
        return {"role": self.role, "content": [block]}
'''

PROVIDER = '''
from anthropic import AsyncAnthropic


class AnthropicProvider:
    def __init__(self):
        self.client = AsyncAnthropic()

    async def call(self, messages, max_tokens=4096):
        system = messages[0].text
        converted = [m.to_anthropic_format(CONVERT_ARGS) for m in messages[1:]]
        return await self.client.messages.create(model="claude-sonnet-4-5", max_tokens=max_tokens, system=system,
                                                 messages=converted)
'''


def _provider_findings(tmp_path, convert_args: str, message: str = MESSAGE):
    from cachelint.check.engine import ALL_CODES, lint_file

    (tmp_path / "message.py").write_text(message.lstrip("\n"))
    path = tmp_path / "provider.py"
    path.write_text(PROVIDER.replace("CONVERT_ARGS", convert_args).lstrip("\n"))
    return [f for f in lint_file(path, str(path), ALL_CODES, None) if f.code == "CL501"]


def test_an_adapter_whose_messages_a_marking_converter_of_the_tree_makes_stays_quiet(tmp_path):
    assert _provider_findings(tmp_path, "") == []


def test_the_converter_told_to_leave_the_breakpoints_out_is_found(tmp_path):
    found = _provider_findings(tmp_path, "enable_cache_control=False")
    assert [f.row for f in found] == [11], found
    assert "sends the history its callers pass (`messages`)" in found[0].message


def test_a_converter_that_writes_no_breakpoint_hides_none(tmp_path):
    plain = MESSAGE.replace('''        if self.cache_control and enable_cache_control:
            block["cache_control"] = {"type": "ephemeral"}
''', "")
    found = _provider_findings(tmp_path, "", plain)
    assert [f.row for f in found] == [11], found


def lint(source: str, codes: set[str]):
    source = textwrap.dedent(source).lstrip("\n")
    return [f for f in lint_source(source, "agent.py") if f.code in codes]


AGENT = """
    import copy
    from anthropic import Anthropic

    TOOLS = [{"name": "press_buttons", "input_schema": {"type": "object"}}]

    class Agent:
        def __init__(self):
            self.client = Anthropic()
            self.message_history = []

        def run(self, steps):
            for _ in range(steps):
                messages = COPY
                messages[-1]["content"][-1]["cache_control"] = {"type": "ephemeral"}
                reply = self.client.messages.create(model="claude-sonnet-4-5", max_tokens=1024, system="Play.",
                                                    messages=messages, tools=TOOLS)
                self.message_history.append({"role": "assistant", "content": reply.content})

        def summarize_history(self):
            messages = COPY
            messages += [{"role": "user", "content": [{"type": "text", "text": "Summarize the game so far."}]}]
            return self.client.messages.create(model="claude-sonnet-4-5", max_tokens=1024, system="Play.",
                                               messages=messages)
"""


def test_a_summary_request_on_a_copy_of_the_agents_history_without_its_tools_is_found():
    for copy in ("copy.deepcopy(self.message_history)", "list(self.message_history)", "self.message_history[:]",
                 "self.message_history.copy()"):
        found = lint(AGENT.replace("COPY", copy), {"CL203"})
        assert [f.row for f in found] == [22], (copy, found)
        assert "`self.message_history` without the tools" in found[0].message


def test_copies_of_two_different_lists_are_not_one_conversation():
    source = AGENT.replace("COPY", "copy.deepcopy(self.message_history)", 1).replace("COPY", "copy.deepcopy(self.notes)")
    assert lint(source, {"CL203"}) == []


def test_a_breakpoint_on_a_fresh_deep_copy_each_turn_does_not_pile_up():
    assert lint(AGENT.replace("COPY", "copy.deepcopy(self.message_history)"), {"CL503"}) == []


def test_a_breakpoint_on_a_shallow_copy_piles_up_in_the_kept_dicts():
    for shallow in ("list(self.message_history)", "self.message_history[:]"):
        found = lint(AGENT.replace("COPY", shallow), {"CL503"})
        assert [f.row for f in found] == [14], (shallow, found)


# --- CL104: a prompt builder whose callers pass what the object fixed when it was made ------------------------

LONG_RULES = "\n".join(f"{i}. Check the element's label and colour before you act on it; never guess an index." for i in range(80))

PROMPTS = f'''
def system_message(action_descriptions: str) -> str:
    return f"""You are a browser agent.
<actions>
{{action_descriptions}}
</actions>
{LONG_RULES}
"""
'''

MANAGER = '''
from prompts import system_message


class MessageManager:
    def __init__(self, task, action_descriptions):
        self.task = task
        self.action_descriptions = action_descriptions

    def first_messages(self, question):
        return [{"role": "system", "content": system_message(ARGUMENT)}, {"role": "user", "content": question}]
'''


def _builder_findings(tmp_path, argument: str):
    from cachelint.check.engine import ALL_CODES, lint_file

    (tmp_path / "manager.py").write_text(MANAGER.replace("ARGUMENT", argument).lstrip("\n"))
    path = tmp_path / "prompts.py"
    path.write_text(PROMPTS.lstrip("\n"))
    return [f for f in lint_file(path, str(path), ALL_CODES, None) if f.code == "CL104"]


def test_a_builder_whose_callers_pass_an_attribute_set_at_construction_stays_quiet(tmp_path):
    assert _builder_findings(tmp_path, "self.action_descriptions") == []


def test_the_same_builder_handed_each_calls_question_is_found(tmp_path):
    found = _builder_findings(tmp_path, "question")
    assert [f.row for f in found] == [4], found
    assert "after the per-call value `action_descriptions`" in found[0].message


def test_an_attribute_a_method_sets_again_is_not_fixed(tmp_path):
    found = _builder_findings(tmp_path, "self.task")
    assert found == [], found  # set only in __init__ too: fixed for the object
    changed = MANAGER.replace("    def first_messages", "    def retarget(self, task):\n        self.task = task\n\n    def first_messages")
    from cachelint.check.engine import ALL_CODES, lint_file

    (tmp_path / "manager.py").write_text(changed.replace("ARGUMENT", "self.task").lstrip("\n"))
    path = tmp_path / "prompts.py"
    path.write_text(PROMPTS.lstrip("\n"))
    assert [f.row for f in lint_file(path, str(path), ALL_CODES, None) if f.code == "CL104"] == [4]


# --- CL102: a session table described as data ------------------------------------------------------------------

STATE_PROMPT = '''
from typing import Any, Dict, Optional


def get_system_message(agent, session_state: Optional[Dict[str, Any]] = None):
    text = f"{agent.description}\\n{agent.instructions}\\n"
    if session_state:
        text += f"<session_state>{session_state}</session_state>"
    return Message(role="system", content=text)
'''

SCHEMAS = '''
from sqlalchemy import String
from sqlalchemy.dialects.postgresql import JSONB

SESSION_TABLE_SCHEMA = {
    "session_id": {"type": String, "primary_key": True},
    "session_data": {"type": JSONB, "nullable": True},
}
'''


def _state_findings(tmp_path, schemas: str | None):
    from cachelint.check.engine import ALL_CODES, lint_file

    if schemas is not None:
        (tmp_path / "schemas.py").write_text(schemas.lstrip("\n"))
    path = tmp_path / "messages.py"
    path.write_text(STATE_PROMPT.lstrip("\n"))
    return [f for f in lint_file(path, str(path), ALL_CODES, None) if f.code == "CL102"]


def test_a_state_dict_in_a_project_whose_session_table_schema_is_jsonb_is_found(tmp_path):
    found = _state_findings(tmp_path, SCHEMAS)
    assert [f.row for f in found] == [7], found
    assert "schemas.py" in found[0].message and "jsonb" in found[0].message


def test_the_same_state_dict_with_no_reordering_store_stays_quiet(tmp_path):
    assert _state_findings(tmp_path, None) == []
    assert _state_findings(tmp_path, SCHEMAS.replace("JSONB", "JSON")) == []
