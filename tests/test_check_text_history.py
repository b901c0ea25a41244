"""CL104 on a conversation rendered into one prompt text behind this turn's values (issue 14).

Apps that render their history into a text template send that text again every turn. The history grows by
appending, so it could be the cached part of the next turn's prompt, unless a value of the newest turn (the
question, a refreshed summary, the workspace's current state) sits in front of it. Each case is written the way
agent frameworks and chat apps write it; the quiet cases are the false alarms a user would reject.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from cachelint.check.engine import lint_source


def lint(source: str, filename: str = "prompts.py") -> list:
    source = textwrap.dedent(source).lstrip("\n")
    return [f for f in lint_source(source, filename) if f.code == "CL104"]


def row_of(source: str, needle: str) -> int:
    return next(i for i, line in enumerate(textwrap.dedent(source).lstrip("\n").splitlines(), 1) if needle in line)


WORKSPACE_BEFORE_HISTORY = '''
    def last_user_prompt_template(history, editor, scratchpad, issue):
        return f"""<SETTING>
    You are an autonomous programmer working on the task below.
    {issue}
    </SETTING>
    <WORKSPACE>
    <NOTES>
    {scratchpad}
    </NOTES>
    <EDITOR>
    {editor}
    </EDITOR>
    </WORKSPACE>
    <HISTORY>
    {history}
    </HISTORY>
    """
'''


def test_workspace_state_rendered_before_the_history_is_found_at_the_first_value():
    found = lint(WORKSPACE_BEFORE_HISTORY)
    assert [f.row for f in found] == [row_of(WORKSPACE_BEFORE_HISTORY, "{scratchpad}")]
    assert "`{scratchpad}`, `{editor}`" in found[0].message and "`{history}`" in found[0].message
    assert found[0].confidence == "likely"


def test_the_history_before_this_turns_values_is_quiet():
    source = WORKSPACE_BEFORE_HISTORY.replace("<HISTORY>\n    {history}\n    </HISTORY>\n", "")\
        .replace("<SETTING>", "<HISTORY>\n    {history}\n    </HISTORY>\n    <SETTING>")
    assert lint(source) == []


def test_a_log_line_is_no_prompt():
    source = """
        import logging
        logger = logging.getLogger(__name__)

        def step(query, history):
            logger.info(f"query={query} history={history}")
            raise ValueError(f"cannot answer {query} with {history}")
        """
    assert lint(source) == []


def test_a_template_of_another_module_taken_with_a_star_import_is_read(tmp_path: Path):
    """`from ..utils.prompts import *`, then `TEMPLATE.format(environment_summary=..., chat_history=..., query=...)`."""
    (tmp_path / "agents" / "utils").mkdir(parents=True)
    (tmp_path / "agents" / "task").mkdir()
    for folder in ("agents", "agents/utils", "agents/task"):
        (tmp_path / folder / "__init__.py").write_text("")
    (tmp_path / "agents" / "utils" / "prompts.py").write_text(
        'TRANSIT_TEMPLATE = "{environment_summary}\\nHere is the chat history:\\n{chat_history}\\nThe last query:\\n{query}\\n"\n'
        'ROUTE_TEMPLATE = "The last query:\\n{query}\\nThe relevant conversation:\\n{relevant_history}\\n"\n')
    source = textwrap.dedent("""
        from ..utils.prompts import *

        class SOP:
            def transit(self, environment_summary, history_messages):
                transit_message = TRANSIT_TEMPLATE.format(
                    environment_summary=environment_summary,
                    chat_history=encode(history_messages),
                    query=encode(history_messages[-1:]),
                )
                route = ROUTE_TEMPLATE.format(query=history_messages[-1], relevant_history=self.recall(history_messages))
                return self.llm.get_response([], transit_message + route)
        """).lstrip("\n")
    module = tmp_path / "agents" / "task" / "sop.py"
    module.write_text(source)
    found = [f for f in lint_source(source, str(module)) if f.code == "CL104"]
    assert [f.row for f in found] == [row_of(source, "transit_message = TRANSIT_TEMPLATE.format(")]
    assert "`{environment_summary}`" in found[0].message and "`{chat_history}`" in found[0].message


def test_a_template_built_from_parts_in_an_f_string_is_read_by_its_parts():
    source = """
        from langchain.chains import LLMChain
        from langchain.prompts import PromptTemplate

        def agent(llm, memory, prompt_base):
            prompt_question = "Question: {input}"
            prompt_history = "History: \\n {chat_history}"
            prompt = f"{prompt_base} \\n {prompt_question} \\n {prompt_history}"
            return LLMChain(llm=llm, memory=memory, prompt=PromptTemplate.from_template(prompt))
        """
    found = lint(source)
    assert [f.row for f in found] == [row_of(source, 'prompt = f"{prompt_base}')]


def test_stable_values_before_the_history_are_quiet():
    source = """
        def system_text(agent_name, role_description, tools_text, history):
            return f"You are {agent_name}, {role_description}.\\nTools:\\n{tools_text}\\nConversation so far:\\n{history}\\n"
        """
    assert lint(source) == []
