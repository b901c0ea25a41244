"""Quiet cases from a blind set's false positives (issue 14), each beside the case that stays reported:
a system-prompt-named text that is only a section of another prompt, a per-request value ahead of static text
that is too short to be cached in any order, and a history cut down to a fraction of the budget that set it off."""

from __future__ import annotations

import textwrap

from cachelint.check.engine import lint_source


def codes(source: str, code: str) -> list[int]:
    source = textwrap.dedent(source).lstrip("\n")
    return [f.row for f in lint_source(source, "app.py") if f.code == code]


SECTION = """
    import time
    SYSTEM = "You are a QA bot. Now it is {{current_time}}. " + "Answer from the documents only. " * 300
    PROMPT_TEMPLATE = "<SYSTEM>{{system}}</SYSTEM><DOCS>{{docs}}</DOCS><QUESTION>{{question}}</QUESTION>"

    def build(question, docs):
        now = time.strftime("%H:%M:%S", time.localtime())
        system_prompt = SYSTEM.replace("{{current_time}}", now)
        prompt = PROMPT_TEMPLATE.replace("{{system}}", system_prompt).replace("{{docs}}", docs)
        return [{"role": "user", "content": prompt}]
"""


def test_a_system_section_inside_another_prompt_is_not_a_system_prompt():
    assert codes(SECTION, "CL101") == []


def test_the_same_text_handed_on_as_the_system_prompt_is_reported():
    source = SECTION.replace("""        prompt = PROMPT_TEMPLATE.replace("{{system}}", system_prompt).replace("{{docs}}", docs)
        return [{"role": "user", "content": prompt}]""", "        return system_prompt")
    assert source != SECTION and codes(source, "CL101") == [6]


SHORT = """
    from openai import OpenAI
    client = OpenAI()

    def review(paper, text):
        return client.chat.completions.create(model="gpt-4o", messages=[
            {"role": "system", "content": f"You review papers. Title: {paper.title}\\n\\nFollow the format: two headings, comma-separated, nothing else."},
            {"role": "user", "content": text},
        ])
"""


def test_a_value_ahead_of_static_text_below_the_minimum_is_quiet():
    assert codes(SHORT, "CL104") == []


def test_a_value_ahead_of_repeated_static_text_above_the_minimum_is_reported():
    source = SHORT.replace('nothing else."}', 'nothing else." + "Be strict and cite the section you judge. " * 200}')
    assert source != SHORT and codes(source, "CL104") == [6]


HEADROOM = """
    from openai import OpenAI
    client = OpenAI()

    class Chat:
        def __init__(self, token_upper_limit):
            self.history, self.counts, self.limit = [], [], token_upper_limit

        def ask(self, text):
            self.history.append({"role": "user", "content": text})
            if sum(self.counts) > self.limit - 1000:
                while sum(self.counts) > self.limit * 0.5 and self.counts:
                    del self.counts[0]
                    del self.history[:2]
            reply = client.chat.completions.create(model="gpt-4o", messages=self.history)
            self.history.append({"role": "assistant", "content": reply.choices[0].message.content})
            return reply
"""


def test_a_cut_down_to_half_the_budget_that_set_it_off_is_compaction():
    assert codes(HEADROOM, "CL301") == []


def test_a_cut_down_to_the_same_budget_slides_every_turn():
    source = HEADROOM.replace("self.limit * 0.5", "self.limit - 1000")
    assert source != HEADROOM and codes(source, "CL301") == [13]


# shapes from the round's review, each a quiet case of a new check
def test_a_memo_the_system_prompt_builder_keeps_is_no_change_between_turns():
    source = """
        import anthropic
        client = anthropic.Anthropic()

        class Agent:
            def __init__(self):
                self.messages, self._cache = [], {}

            def system_prompt(self):
                if "k" not in self._cache:
                    self._cache["k"] = "You are a careful agent. " * 300
                return self._cache["k"]

            def step(self, text):
                self.messages.append({"role": "user", "content": text})
                r = client.messages.create(model="claude-sonnet-4-5", max_tokens=64, system=self.system_prompt(), messages=self.messages)
                self.messages.append({"role": "assistant", "content": r.content})
    """
    assert codes(source, "CL104") == []


def test_a_cut_to_one_under_the_bound_still_slides():
    source = HEADROOM.replace("self.limit * 0.5", "self.limit - 1001")
    assert source != HEADROOM and codes(source, "CL301") == [13]


def test_knowledge_loaded_once_by_a_script_is_quiet():
    source = """
        from openai import OpenAI
        client = OpenAI()
        knowledge = open("handbook.md").read()
        history = []
        while True:
            q = input()
            msgs = [{"role": "system", "content": f"Answer from the handbook.\\n{knowledge}"}]
            msgs.extend(history)
            msgs.append({"role": "user", "content": q})
            client.chat.completions.create(model="gpt-4o", messages=msgs)
    """
    assert codes(source, "CL104") == []


def test_a_context_placeholder_filled_once_with_partial_is_quiet():
    source = """
        from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
        from langchain.chains.combine_documents import create_stuff_documents_chain
        prompt = ChatPromptTemplate.from_messages([("system", "Use this:\\n{context}"), MessagesPlaceholder("chat_history"), ("human", "{q}")]).partial(context=HANDBOOK)
        chain = create_stuff_documents_chain(llm, prompt)
    """
    assert codes(source, "CL104") == []


def test_a_timestamp_kept_beside_each_rendered_message_is_quiet():
    source = """
        from datetime import datetime

        def for_ui(history):
            return [{"role": m.role, "content": m.text, "timestamp": datetime.now().isoformat()} for m in history]
    """
    assert codes(source, "CL101") == []
