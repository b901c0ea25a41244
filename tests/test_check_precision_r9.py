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
