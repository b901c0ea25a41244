"""CL104 on state an agent object accumulates and renders into its system prompt, ahead of the conversation it
keeps (issue 14: class state across methods). The quiet cases beside it: state set up before the conversation,
one-off requests, and state the conversation never changes."""

from __future__ import annotations

import textwrap

from cachelint.check.engine import lint_source


def findings(source: str):
    source = textwrap.dedent(source).lstrip("\n")
    return [f for f in lint_source(source, "agent.py") if f.code == "CL104"]


AGENT = """
    import anthropic
    client = anthropic.Anthropic()
    BASE = "You are a coding agent. Follow the rules carefully. " * 100

    class Agent:
        def __init__(self):
            self.notes = []
            self.messages = []

        def system_prompt(self):
            return BASE + "\\nYour notes so far:\\n" + "\\n".join(self.notes)

        def step(self, text):
            self.messages.append({"role": "user", "content": text})
            r = client.messages.create(model="claude-sonnet-4-5", max_tokens=1024, system=self.system_prompt(),
                                       messages=self.messages, tools=TOOLS)
            for block in r.content:
                if block.type == "tool_use" and block.name == "add_note":
                    self.remember(block.input["note"])
            self.messages.append({"role": "assistant", "content": r.content})
            return r

        def remember(self, note):
            self.notes.append(note)
"""


def test_notes_added_during_the_conversation_reach_the_system_prompt():
    found = findings(AGENT)
    assert [f.row for f in found] == [15]
    assert "`self.notes`" in found[0].message and "`remember`" in found[0].message and "`self.messages`" in found[0].message


def test_a_system_message_at_the_head_of_the_list_is_judged_too():
    source = AGENT.replace("system=self.system_prompt(),\n                                       messages=self.messages,",
                           'messages=[{"role": "system", "content": self.system_prompt()}] + self.messages,')
    assert source != AGENT and [f.row for f in findings(source)] == [15]


def test_state_filled_before_the_conversation_is_quiet():
    source = AGENT.replace("self.remember(block.input[\"note\"])", "pass")
    assert source != AGENT and findings(source) == []


def test_state_sent_after_the_history_is_quiet():
    source = AGENT.replace('+ "\\nYour notes so far:\\n" + "\\n".join(self.notes)', "")
    source = source.replace('self.messages.append({"role": "user", "content": text})',
                            'self.messages.append({"role": "user", "content": text + "\\n".join(self.notes)})')
    assert source != AGENT and findings(source) == []


def test_a_one_off_request_per_call_is_quiet():
    source = AGENT.replace("messages=self.messages,", 'messages=[{"role": "user", "content": text}],')
    assert source != AGENT and findings(source) == []
