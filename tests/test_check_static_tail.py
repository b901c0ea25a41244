"""CL104 on prompt templates that put per-call data before long static instructions (issue 14): extraction and
summarization pipelines whose rules follow the input, so no call shares them as a prefix. Each shape real apps use,
and the quiet cases beside it (static part first, a tail below every minimum cacheable length)."""

from __future__ import annotations

import textwrap

from cachelint.check.engine import lint_source

RULES = "\n".join(f"- Rule {i}: extract only entities explicitly mentioned in the CURRENT MESSAGE, never guess." for i in range(70))


def rows(source: str) -> list[int]:
    source = textwrap.dedent(source).lstrip("\n").replace("RULES_TEXT", RULES)
    return [f.row for f in lint_source(source, "prompts/extract.py") if f.code == "CL104"]


EXTRACT = '''
    from .models import Message

    def extract_message(context: dict) -> list[Message]:
        sys_prompt = "You are an AI assistant that extracts entity nodes from conversational messages."
        user_prompt = f"""
    <PREVIOUS MESSAGES>
    {context["previous_episodes"]}
    </PREVIOUS MESSAGES>
    <CURRENT MESSAGE>
    {context["episode_content"]}
    </CURRENT MESSAGE>
    RULES_TEXT
    """
        return [Message(role="system", content=sys_prompt), Message(role="user", content=user_prompt)]
'''


def test_per_call_input_ahead_of_long_static_rules_is_reported():
    assert rows(EXTRACT) == [7]  # the first per-call value


def test_the_same_rules_placed_first_are_quiet():
    first = EXTRACT.replace('    <PREVIOUS MESSAGES>\n    {context["previous_episodes"]}', '    RULES_TEXT\n    <PREVIOUS MESSAGES>\n    {context["previous_episodes"]}')
    first = first.replace("    </CURRENT MESSAGE>\n    RULES_TEXT\n", "    </CURRENT MESSAGE>\n")
    assert rows(first) == []


def test_a_static_tail_below_every_minimum_cacheable_length_is_quiet():
    short = EXTRACT.replace("RULES_TEXT", "Summarize the page above in five bullet points, keeping names and numbers.")
    assert rows(short) == []


TEMPLATE = '''
    SUMMARY_PROMPT = """Question: {question}
    Documents:
    {documents}
    RULES_TEXT
    """

    def build(question, documents):
        return [{"role": "user", "content": SUMMARY_PROMPT.format(question=question, documents=documents)}]
'''


def test_a_constant_template_filled_with_format_is_reported_at_its_first_value():
    expanded = textwrap.dedent(TEMPLATE).lstrip("\n").replace("RULES_TEXT", RULES).splitlines()
    assert rows(TEMPLATE) == [next(i for i, line in enumerate(expanded, 1) if ".format(question=" in line)]


def test_a_constant_template_with_its_placeholders_at_the_end_is_quiet():
    last = TEMPLATE.replace('SUMMARY_PROMPT = """Question: {question}\n    Documents:\n    {documents}\n    RULES_TEXT',
                            'SUMMARY_PROMPT = """RULES_TEXT\n    Question: {question}\n    Documents:\n    {documents}')
    assert rows(last) == []


BUILDER = '''
    def build_prompt(self, agent, customer, interaction_history):
        builder = PromptBuilder()
        builder.add_section(name="general", template="You are an AI agent who talks with customers.", props={})
        builder.add_customer_identity(customer)
        builder.add_section(name="task", template="""RULES_TEXT""", props={})
        builder.add_interaction_history(interaction_history)
        return builder.build()
'''


def test_a_builder_section_with_the_customer_before_long_static_sections_is_reported():
    assert rows(BUILDER) == [4]


def test_the_customer_section_after_the_static_sections_is_quiet():
    later = BUILDER.replace("        builder.add_customer_identity(customer)\n", "").replace(
        "        builder.add_interaction_history(", "        builder.add_customer_identity(customer)\n        builder.add_interaction_history(")
    assert rows(later) == []
