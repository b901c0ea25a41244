"""Round 30: what a spent set (holdout34) taught. Each class is written here in its own words, with the shape
beside it that must stay quiet."""

from __future__ import annotations

from _lint import lint, lint_tree

# --- CL202: tools narrowed on each step by what the run has done so far --------------------------------------------

TOOL_RULES = '''
from anthropic import Anthropic

client = Anthropic()


class Agent:
    def __init__(self, tools, solver):
        self.tools = tools
        self.tool_rules_solver = solver
        self.last_function_response = None
        self.messages = []

    def step(self):
        allowed = self.tool_rules_solver.get_allowed_tool_names(
            available_tools={t["name"] for t in self.tools},
            last_function_response=self.last_function_response,
        )
        tools = [t for t in self.tools if t["name"] in allowed]
        reply = client.messages.create(model="claude-sonnet-4-5", max_tokens=1024, tools=tools, messages=self.messages)
        self.messages.append({"role": "assistant", "content": reply.content})
        return reply
'''


def test_tools_allowed_after_the_last_call_are_reported_where_they_are_narrowed():
    found = lint(TOOL_RULES, {"CL202"})
    assert [f.row for f in found] == [18]
    assert "self.last_function_response" in found[0].message


STATE_MACHINE = '''
from .filtering import filter_tools_by_group_and_state


class AgentService:
    async def on_request(self, request, flow):
        agent = self.agents[flow.workspace]
        tools = filter_tools_by_group_and_state(
            tools=agent.tools,
            requested_groups=getattr(request, "group", None),
            current_state=getattr(request, "state", None),
        )
        return await self.react(request.question, tools, request.history)
'''


def test_tools_filtered_by_the_request_state_are_reported_without_a_request_in_sight():
    found = lint(STATE_MACHINE, {"CL202"})
    assert [f.row for f in found] == [7]
    assert "state" in found[0].message


def test_tools_filtered_by_settings_groups_or_at_setup_are_quiet():
    source = STATE_MACHINE.replace('''            current_state=getattr(request, "state", None),
''', "")
    assert lint(source, {"CL202"}) == []
    at_setup = '''
from .filtering import filter_tools_by_group_and_state


class AgentService:
    def __init__(self, tools, config):
        self.tools = filter_tools_by_group_and_state(tools, requested_groups=config.groups, current_state="start")
'''
    assert lint(at_setup, {"CL202"}) == []
    # a tool's own parameters filtered on state are no tool list
    parameters = STATE_MACHINE.replace("filter_tools_by_group_and_state", "filter_tool_parameters_by_state")
    assert lint(parameters, {"CL202"}) == []


def test_a_test_of_the_rules_solver_is_quiet(tmp_path):
    files = {"pyproject.toml": "", "tests/test_solver.py": '''
def test_solver(solver):
    assert solver.get_allowed_tool_names(last_function_response='{"message": "true"}') == ["send_message"]
'''}
    assert lint_tree(tmp_path, files, "tests/test_solver.py", {"CL202"}) == []


# --- CL104: a lower-case template constant of a prompts module, filled in another module -------------------------

RULES = "Cite every source, keep the report's sections in the order given, and never invent a statistic. " * 60


def _prompts(name: str) -> str:
    return f'''
{name} = r"""
Current date: {{current_date}}

<TOPIC>
{{research_topic}}
</TOPIC>

{RULES}
"""
'''


def _graph(name: str, how: str = "from app.prompts import {name}") -> str:
    return f'''
from openai import OpenAI
{how.format(name=name)}

CURRENT_DATE = "2026-12-05"
client = OpenAI()


def summarize(state):
    system_prompt = {name}.format(current_date=CURRENT_DATE, research_topic=state.research_topic)
    messages = [{{"role": "system", "content": system_prompt}}, {{"role": "user", "content": state.notes}}]
    return client.chat.completions.create(model="gpt-4o", messages=messages)
'''


def test_a_lower_case_template_imported_and_filled_elsewhere_is_reported_at_its_placeholder(tmp_path):
    files = {"pyproject.toml": "", "app/__init__.py": "", "app/prompts.py": _prompts("summarizer_instructions"),
             "app/graph.py": _graph("summarizer_instructions")}
    found = lint_tree(tmp_path, files, "app/prompts.py", {"CL104"})
    assert [f.row for f in found] == [5]
    assert "{research_topic}" in found[0].message and "app/graph.py" in found[0].message


def test_a_lower_case_name_filled_where_it_is_not_imported_is_quiet(tmp_path):
    # `summarizer_instructions` in graph.py is its own local (a parameter here), not the prompts module's constant
    graph = '''
from langchain_core.messages import HumanMessage, SystemMessage


def summarize(llm, state, summarizer_instructions):
    system_prompt = summarizer_instructions.format(research_topic=state.research_topic)
    return llm.invoke([SystemMessage(content=system_prompt), HumanMessage(content=state.notes)])
'''
    files = {"pyproject.toml": "", "app/__init__.py": "", "app/prompts.py": _prompts("summarizer_instructions"),
             "app/graph.py": graph}
    assert lint_tree(tmp_path, files, "app/prompts.py", {"CL104"}) == []
    # and a lower-case name that is no prompt's (`summary_text`) is not a template constant
    files["app/prompts.py"] = _prompts("summary_text")
    files["app/graph.py"] = _graph("summary_text")
    assert lint_tree(tmp_path, files, "app/prompts.py", {"CL104"}) == []


# --- CL301: the newest few, grown back from older messages to fit a budget, is one window ------------------------

PRUNER = '''
class RecentHistoryPruner:
    def __init__(self, tokenizer, min_history_messages=1):
        self._tokenizer = tokenizer
        self._min_history_messages = min_history_messages

    def build(self, chat_history, max_tokens):
        if self._tokenizer.messages_token_count(chat_history) < max_tokens:
            return chat_history
        truncated_history = chat_history[-self._min_history_messages:]
        for message in reversed(chat_history[:-self._min_history_messages]):
            if self._tokenizer.messages_token_count(truncated_history + [message]) > max_tokens:
                break
            truncated_history.insert(0, message)
        return truncated_history
'''


def test_a_budget_window_seeded_with_the_newest_messages_is_reported_once_at_its_loop():
    found = lint(PRUNER, {"CL301"})
    assert [(f.row, "fit a budget" in f.message) for f in found] == [(10, True)]


def test_a_window_of_the_newest_messages_alone_is_still_reported():
    source = PRUNER.replace('''        for message in reversed(chat_history[:-self._min_history_messages]):
            if self._tokenizer.messages_token_count(truncated_history + [message]) > max_tokens:
                break
            truncated_history.insert(0, message)
''', "")
    found = lint(source, {"CL301"})
    assert [(f.row, "latest messages" in f.message) for f in found] == [(9, True)]


def test_the_module_that_fills_an_imported_template_leaves_the_report_to_the_template(tmp_path):
    files = {"pyproject.toml": "", "app/__init__.py": "", "app/prompts.py": _prompts("SUMMARIZER_INSTRUCTIONS"),
             "app/graph.py": _graph("SUMMARIZER_INSTRUCTIONS")}
    assert [f.row for f in lint_tree(tmp_path, files, "app/prompts.py", {"CL104"})] == [5]
    assert lint_tree(tmp_path, files, "app/graph.py", {"CL104"}) == []
    # filled right into a message's content, the fill is judged where it is made, and the template is not reported again
    files["app/graph.py"] = _graph("SUMMARIZER_INSTRUCTIONS").replace(
        "    system_prompt = SUMMARIZER_INSTRUCTIONS.format(current_date=CURRENT_DATE, research_topic=state.research_topic)\n", "").replace(
        '{"role": "system", "content": system_prompt}',
        '{"role": "system", "content": SUMMARIZER_INSTRUCTIONS.format(current_date=CURRENT_DATE, research_topic=state.research_topic)}')
    assert lint_tree(tmp_path, files, "app/prompts.py", {"CL104"}) == []
    found = lint_tree(tmp_path, files, "app/graph.py", {"CL104"})
    assert [f.row for f in found] == [9] and "research_topic" in found[0].message


# --- the review's reproductions ----------------------------------------------------------------------------------

def _narrowed(body: str) -> str:
    return f'''
from anthropic import Anthropic

client = Anthropic()


class Agent:
{body}
'''


def test_narrowed_names_that_never_reach_the_tools_sent_are_quiet():
    # enforced as a call comes in, or a tool_choice picked from them: the tools sent stay the same (the fix itself)
    enforced = _narrowed('''    def execute_tool(self, call):
        allowed = self.solver.get_allowed_tool_names(last_function_response=self.last_function_response)
        if call.name not in allowed:
            raise ValueError(call.name)
        return self.registry[call.name](**call.input)''')
    choice = _narrowed('''    def step(self):
        allowed = self.solver.get_allowed_tool_names(last_function_response=self.last_function_response)
        choice = {"type": "tool", "name": allowed[0]} if len(allowed) == 1 else {"type": "auto"}
        return client.messages.create(model="claude-sonnet-4-5", max_tokens=1024, tools=self.tools, tool_choice=choice,
                                      messages=self.messages)''')
    assert lint(enforced, {"CL202"}) == [] and lint(choice, {"CL202"}) == []


def test_settings_a_starting_state_or_what_a_state_holds_besides_are_no_run_state():
    for value in ("self.settings.state", "self.initial_state", "request.state.user", "agent_state.tools"):
        source = _narrowed(f'''    def step(self, request, agent_state):
        tools = self.registry.filter_tools(self.tools, {value})
        return client.messages.create(model="claude-sonnet-4-5", max_tokens=1024, tools=tools, messages=self.messages)''')
        assert lint(source, {"CL202"}) == [], value


def test_filters_run_as_the_object_is_set_up_are_quiet():
    for header in ("    def setup_tools(self, state):", "    def initialize(self, state):",
                   "    @classmethod\n    def from_config(cls, state):"):
        source = _narrowed(f'''{header}
        tools = filter_tools_by_state(ALL_TOOLS, current_state=state)
        return tools''')
        assert lint(source, {"CL202"}) == [], header


def test_narrowed_tools_handed_on_by_position_are_reported_at_the_list_that_goes_out():
    handed = '''
class AgentService:
    async def on_request(self, request, flow):
        tools = self.registry.tools_allowed_for(current_state=request.state)
        return await self.react(request.question, tools, request.history)
'''
    assert [f.row for f in lint(handed, {"CL202"})] == [3]
    two = _narrowed('''    def step(self):
        allowed = self.solver.get_allowed_tool_names(last_function_response=self.last_function_response)
        hidden = [t["name"] for t in self.tools if t["name"] not in allowed]
        self.log(f"hidden: {hidden}")
        tools = [t for t in self.tools if t["name"] in allowed]
        return client.messages.create(model="claude-sonnet-4-5", max_tokens=1024, tools=tools, messages=self.messages)''')
    assert [f.row for f in lint(two, {"CL202"})] == [11]


def test_a_window_of_the_same_name_in_another_function_is_its_own_window():
    source = PRUNER + '''

class ChatEngine:
    def chat(self, question):
        truncated_history = self.chat_history[-10:]
        return self.llm.chat(truncated_history + [{"role": "user", "content": question}])
'''
    assert sorted(f.row for f in lint(source, {"CL301"})) == [10, 19]


def _fills(graph: str, prompts: str | None = None) -> dict[str, str]:
    return {"pyproject.toml": "", "app/__init__.py": "", "app/prompts.py": prompts or _prompts("SUMMARIZER_PROMPT"), "app/graph.py": graph}


GRAPH_HEAD = '''
from openai import OpenAI
{imports}

client = OpenAI()


def summarize(state):
    system_prompt = {fill}
    messages = [{{"role": "system", "content": system_prompt}}, {{"role": "user", "content": state.notes}}]
    return client.chat.completions.create(model="gpt-4o", messages=messages)
'''


def _graph_with(imports: str, fill: str) -> str:
    return GRAPH_HEAD.format(imports=imports, fill=fill)


def test_a_fill_the_template_side_does_not_count_is_reported_where_it_is_made(tmp_path):
    topic = "research_topic=state.research_topic, current_date=CURRENT_DATE"
    aliased = _graph_with("from app.prompts import SUMMARIZER_PROMPT as SYS_PROMPT\nCURRENT_DATE = '2026-12-05'",
                          f"SYS_PROMPT.format({topic})")
    assert [f.row for f in lint_tree(tmp_path / "a", _fills(aliased), "app/graph.py", {"CL104"})] == [9]
    in_a_class = '''
class Prompts:
    SUMMARIZER_PROMPT = r"""
Current date: {current_date}

<TOPIC>
{research_topic}
</TOPIC>

''' + RULES + '''
"""
'''
    classed = _graph_with("from app.prompts import Prompts\nCURRENT_DATE = '2026-12-05'", f"Prompts.SUMMARIZER_PROMPT.format({topic})")
    assert [f.row for f in lint_tree(tmp_path / "b", _fills(classed, in_a_class), "app/graph.py", {"CL104"})] == [9]


def test_a_keyword_named_like_the_template_is_no_template_of_the_filling_module(tmp_path):
    graph = '''
from app.prompts import research_prompt
from .chains import run_chain

CURRENT_DATE = "2026-12-05"


def research(state, llm):
    return run_chain(
        llm,
        research_prompt=research_prompt.format(current_date=CURRENT_DATE, research_topic=state.research_topic),
    )
'''
    files = _fills(graph, _prompts("research_prompt"))
    assert [f.row for f in lint_tree(tmp_path, files, "app/prompts.py", {"CL104"})] == [5]


def test_a_lower_case_template_is_reported_only_in_the_module_its_fill_imports_it_from(tmp_path):
    files = _fills(_graph("system_prompt", "from app.a_prompts import {name}"))
    files["app/a_prompts.py"] = files["app/b_prompts.py"] = _prompts("system_prompt")
    assert [f.row for f in lint_tree(tmp_path, files, "app/a_prompts.py", {"CL104"})] == [5]
    assert lint_tree(tmp_path, files, "app/b_prompts.py", {"CL104"}) == []


def test_a_fill_is_left_to_the_template_only_where_the_template_is_reported(tmp_path):
    # the template side counts `{persona}` as the app's own (its persona), so it says nothing: the fill, which sees a
    # value of this call there, reports it
    prompts = '''
SUPPORT_PROMPT = """You speak as {persona}.

''' + RULES + '''
"""
'''
    graph = _graph_with("from app.prompts import SUPPORT_PROMPT", "SUPPORT_PROMPT.format(persona=state.user.persona)")
    files = _fills(graph, prompts)
    assert lint_tree(tmp_path, files, "app/prompts.py", {"CL104"}) == []
    found = lint_tree(tmp_path, files, "app/graph.py", {"CL104"})
    assert [f.row for f in found] == [8] and "persona" in found[0].message
