"""Round 28: what a spent set (holdout32) taught. Each class is written here in its own words, with the shape
beside it that must stay quiet."""

from __future__ import annotations

from _lint import lint, lint_tree

# --- CL101 / CL301: an agent framework's switches (Agno, phidata) ----------------------------------------------------

AGNO_AGENTS = '''
from agno.agent import Agent
from agno.db.in_memory import InMemoryDb


def research_agent(model, tools):
    return Agent(
        model=model,
        instructions=["You research listed companies from their filings."],
        tools=tools,
        db=InMemoryDb(),
        add_datetime_to_context=True,
        add_history_to_context=True,
        num_history_runs=3,
    )


def planner(model):
    return Agent(model=model, db=InMemoryDb(), add_history_to_context=True)


def stateless(model):
    return Agent(model=model, add_datetime_to_context=False, add_history_to_context=False)


def podcast_session(model, db):
    return Agent(model=model, db=db, add_history_to_context=True, num_history_runs=30)  # a window that rarely slides


async def answer(agent, question, conversation_id):
    async for chunk in agent.arun(question, session_id=conversation_id, add_history_to_context=True):
        yield chunk
'''


def test_an_agent_made_to_put_the_time_into_its_system_message_is_reported():
    found = lint(AGNO_AGENTS, {"CL101"})
    assert [(f.row, f.confidence) for f in found] == [(11, "likely")], found
    assert "add_datetime_to_context=True" in found[0].message and "to the second" in found[0].message


def test_an_agent_made_to_replay_the_last_runs_is_a_window():
    found = lint(AGNO_AGENTS, {"CL301"})
    assert [f.row for f in found] == [13, 18], found  # the count given, else the switch (its default of 3 runs)
    assert "last 3 runs" in found[0].message and "default" in found[1].message
    # a run's own setting (`arun(..., add_history_to_context=True)`) is no construction: not reported


# --- CL104: the user's question ahead of the database's description -------------------------------------------------

SQL_AGENT = '''
from langchain_core.prompts import PromptTemplate


def recommend_steps(llm, conn, state):
    summary = describe_database(conn)
    prompt = PromptTemplate(
        template="""
        You are a SQL database instructions expert. Given the information about the SQL database below, recommend
        numbered steps to collect and process the data the user asks for. Take into account the dialect, the tables
        and the columns; never include steps that modify tables or create new ones; keep each step short.

        User instructions / Question:
        {user_instructions}

        Below are summaries of the database metadata and the SQL tables:
        {all_sql_database_summary}
        """,
        input_variables=["user_instructions", "all_sql_database_summary"],
    )
    return (prompt | llm).invoke({"user_instructions": state["user_instructions"], "all_sql_database_summary": summary})


def pick_tables(llm, question, tables):
    table_summaries = [t.describe() for t in tables]
    prompt = f"""Given the following question and database tables, identify the most relevant tables needed to answer it.
Return JSON with the table names and a relevance score for each table, and a short reason; do not invent tables.
Rank tables by how directly their columns answer the question, and prefer fewer tables when two would do.

Question: {question}

Database Tables:
{chr(10).join(table_summaries)}
"""
    return llm.invoke(prompt)


def answer_with_retrieved_schema(llm, store, question):
    schema = store.relevant_tables(question)
    prompt = f"""You are a SQL expert. Write one query in the dialect of the database below that answers the question.
Use only the tables and columns listed; never modify data, never create tables, and return the query in a sql block.
Quote names that contain spaces, prefer explicit joins, and keep the query readable with one clause per line.

Question: {question}

Schema:
{schema}
"""
    return llm.invoke(prompt)


def schema_first(llm, question, schema):
    prompt = f"""You are a SQL expert. Write one query in the dialect of the database below that answers the question.
Use only the tables and columns listed; never modify data, never create tables, and return the query in a sql block.
Quote names that contain spaces, prefer explicit joins, and keep the query readable with one clause per line.

Schema:
{schema}

Question: {question}
"""
    return llm.invoke(prompt)
'''


def test_a_question_asked_before_the_database_description_is_reported():
    found = lint(SQL_AGENT, {"CL104"})
    assert [(f.row, f.confidence) for f in found] == [(13, "likely"), (29, "likely")], found
    assert "`user_instructions`" in found[0].message and "`all_sql_database_summary`" in found[0].message
    # a schema retrieved for the question varies with it, and a schema written first is the shared prefix


# --- CL101: a converter that appends into its caller's fresh list mints ids for every stored turn ------------------

DIALOGUE = '''
import uuid


class Dialogue:
    def __init__(self):
        self.dialogue = []

    def getMessages(self, m, dialogue):
        if m.role == "tool":
            dialogue.append({"role": "tool", "tool_call_id": str(uuid.uuid4()) if m.tool_call_id is None else m.tool_call_id,
                             "content": m.content})
        else:
            dialogue.append({"role": m.role, "content": m.content})

    def get_llm_dialogue(self):
        dialogue = []
        actual_messages = [m for m in self.dialogue if not m.is_temporary]
        complete = self._ensure_tool_calls_complete(actual_messages)
        for m in complete:
            self.getMessages(m, dialogue)
        return dialogue

    def _ensure_tool_calls_complete(self, messages):
        return messages

    def log_turn(self, m, log):
        log.append({"tool_call_id": str(uuid.uuid4()), "content": m.content})
'''


def test_an_id_minted_into_a_list_the_caller_returns_is_reported():
    found = lint(DIALOGUE, {"CL101"})
    assert [f.row for f in found] == [10], found
    assert "`getMessages` writes into every stored turn" in found[0].message


# --- CL501: a tool loop that grows the history through a helper, or through the request's own dict --------------------

HELPER_GROWN = '''
from anthropic import AsyncAnthropic


class MCPClient:
    def __init__(self):
        self.anthropic = AsyncAnthropic()
        self.message_history = []

    def _add_to_message_history(self, message, messages):
        self.message_history.append(message)
        messages.append(message)

    async def query(self, messages, tools):
        response = await self.anthropic.messages.create(model="claude-3-7-sonnet-latest", max_tokens=4000, messages=messages, tools=tools)
        while True:
            call = next((b for b in response.content if b.type == "tool_use"), None)
            if call is None:
                return response
            self._add_to_message_history({"role": "assistant", "content": [call]}, messages)
            result = await self.run_tool(call)
            self._add_to_message_history({"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id, "content": result}]}, messages)
            response = await self.anthropic.messages.create(model="claude-3-7-sonnet-latest", max_tokens=4000, messages=messages, tools=tools)
'''


def test_a_tool_loop_that_appends_through_a_helper_is_reported_once_at_the_loop():
    found = lint(HELPER_GROWN, {"CL501"})
    assert [f.row for f in found] == [22], found  # the loop's request, not also the first one as an adapter
    assert "this agent loop" in found[0].message


PARAMS_GROWN = '''
from anthropic import AsyncAnthropic

client = AsyncAnthropic()


async def chat(request_params, handle):
    response = await client.messages.create(**request_params)
    while response.stop_reason == "tool_use":
        request_params["messages"].append({"role": "assistant", "content": response.content})
        request_params["messages"].append({"role": "user", "content": await handle(response)})
        response = await client.messages.create(**request_params)
    return response
'''


def test_a_tool_loop_that_appends_to_the_request_dict_is_reported(tmp_path):
    files = {"app/chat.py": PARAMS_GROWN, "app/run.py": '''
from app.chat import chat

async def main(handle, tools):
    return await chat({"model": "claude-sonnet-4-5", "max_tokens": 100, "tools": tools, "messages": [{"role": "user", "content": "hi"}]}, handle)
'''}
    found = lint_tree(tmp_path, files, "app/chat.py", {"CL501"})
    assert [f.row for f in found] == [11], found
    assert '`request_params["messages"]` appended' in found[0].message


# --- CL101: an HTTP request to the Responses API at a URL the object was made with ----------------------------------

RESPONSES_OVER_HTTP = '''
import random
import string
import aiohttp


def generate_random_seed(n=400):
    return "".join(random.choices(string.ascii_letters + string.digits, k=n))


class ResponsesClient:
    def __init__(self, system_prompt):
        self.system_prompt = system_prompt
        self.base_url = "https://api.openai.com/v1/responses"

    async def generate(self, prompt):
        full = f"{generate_random_seed()}\\n\\n{self.system_prompt}\\n\\n{prompt}"
        async with aiohttp.ClientSession() as session:
            async with session.post(self.base_url, json={"model": "o4-mini", "input": full}) as response:
                return await response.json()
'''


def test_a_post_to_an_endpoint_kept_on_the_object_is_a_request():
    found = lint(RESPONSES_OVER_HTTP, {"CL101"})
    assert [f.row for f in found] == [7], found  # where the seed is drawn, in this module
    assert "session.post()" in found[0].message


# --- CL301: cuts that are no window -----------------------------------------------------------------------------------

CUT_ON_FAILURE = '''
from openai import OpenAI

client = OpenAI()


class Conversation:
    def __init__(self):
        self.messages = []

    def _try_send(self, messages):
        try:
            return client.chat.completions.create(model="gpt-4o", messages=messages)
        except Exception as error:
            return error

    def get_response(self):
        indices_and_messages = list(enumerate(self.messages))
        while True:
            reply = self._try_send([m for _, m in indices_and_messages])
            if not isinstance(reply, Exception):
                return reply
            if len(indices_and_messages) <= 1:
                raise RuntimeError("the prompt does not fit")
            indices_and_messages.pop(1)
'''


def test_messages_dropped_only_after_a_refused_request_are_no_window():
    assert lint(CUT_ON_FAILURE, {"CL301"}) == []


SYSTEM_DROPPED_BY_A_SETTING = '''
from dashscope import Application


class AliBLLLM:
    def __init__(self, config):
        self.is_no_prompt = config.get("is_no_prompt")

    def response(self, session_id, dialogue):
        if self.is_no_prompt:
            dialogue.pop(0)
        return Application.call(session_id=session_id, messages=dialogue)


class Window:
    def __init__(self):
        self.messages = []

    def add(self, message):
        self.messages.append(message)
        if len(self.messages) > 20:
            self.messages.pop(0)
'''


def test_a_leading_message_dropped_by_a_setting_is_no_window():
    found = lint(SYSTEM_DROPPED_BY_A_SETTING, {"CL301"})
    assert [f.row for f in found] == [21], found  # the kept history cut by its length still is


# --- CL103 / CL201: a set of names only tested for membership --------------------------------------------------------

TOOL_GROUPS = '''
def normalize_tools(tools, default):
    if tools is None:
        return set(default) if default is not None else None
    resolved = {tools} if isinstance(tools, str) else set(tools)
    return {"update" if t == "filter" else t for t in resolved}


class App:
    def __init__(self, system_prompt, tools=("query", "update")):
        self._system_prompt = system_prompt
        self.tools = tools

    def make_chat(self, chat, tools=None):
        resolved = normalize_tools(tools, default=self.tools)
        chat.system_prompt = self._system_prompt.render(resolved)
        return chat


def serve(client, tools: set[str] | None = None):
    def build():
        return client(tools=tools)
    return build
'''

SYSTEM_PROMPT = '''
import chevron


class SystemPrompt:
    def __init__(self, template):
        self.template = template

    def render(self, tools):
        context = {"has_tool_update": "update" in tools if tools else False, "include_query_guidelines": len(tools or ()) > 0}
        return chevron.render(self.template, context)
'''


def test_a_set_of_tool_names_only_tested_for_membership_is_quiet(tmp_path):
    files = {"app/base.py": TOOL_GROUPS.replace("class App:", "from app.prompt import SystemPrompt\n\n\nclass App:")
             .replace("self._system_prompt = system_prompt", "self._system_prompt = SystemPrompt(system_prompt)"),
             "app/prompt.py": SYSTEM_PROMPT, "app/__init__.py": ""}
    assert lint_tree(tmp_path, files, "app/base.py", {"CL103", "CL201"}) == []


# --- CL501: a provider adapter whose retrying closure hands on the method's parameter --------------------------------

CLOSURE_ADAPTER = '''
import backoff
from anthropic import Anthropic, APIError


class ClaudeProvider:
    def __init__(self):
        self.client = Anthropic()

    def create_completion(self, messages, model="claude-sonnet-4-5"):
        @backoff.on_exception(backoff.constant, APIError, max_tries=3)
        def _send(messages, model):
            system = messages[0]["content"]
            return self.client.messages.create(model=model, max_tokens=512, system=system, messages=messages[1:])

        return _send(messages, model)
'''

STEP = '''
from app.provider import ClaudeProvider

provider = ClaudeProvider()


def describe_screen(template, screenshot):
    message_prompts = [{"role": "system", "content": template}, {"role": "user", "content": screenshot}]
    return provider.create_completion(message_prompts)
'''


def test_an_adapter_whose_callers_each_ask_one_question_is_quiet_through_a_retrying_closure(tmp_path):
    files = {"app/provider.py": CLOSURE_ADAPTER, "app/step.py": STEP, "app/__init__.py": ""}
    assert lint_tree(tmp_path, files, "app/provider.py", {"CL501"}) == []
    chat = STEP.replace("def describe_screen(template, screenshot):", "def chat(history):").replace(
        "    message_prompts = [{\"role\": \"system\", \"content\": template}, {\"role\": \"user\", \"content\": screenshot}]\n", "").replace(
        "create_completion(message_prompts)", "create_completion(history)")
    files["app/step.py"] = chat
    assert [f.row for f in lint_tree(tmp_path, files, "app/provider.py", {"CL501"})] == [13]  # a caller's history: reported


# --- CL203: a tool added on the first pass only of a function that calls itself ---------------------------------------

FIRST_PASS_TOOL = '''
DIRECT_ANSWER_TOOL = {"type": "function", "function": {"name": "direct_answer", "parameters": {"type": "object"}}}


class Connection:
    def chat(self, query, depth=0):
        functions = list(self.func_handler.get_functions())
        if functions is not None and depth == 0:
            functions.append(DIRECT_ANSWER_TOOL)
        reply = self.llm.response_with_functions(self.dialogue.get_llm_dialogue(), functions=functions)
        if reply.tool_calls:
            self._handle_function_result(self.run_tools(reply.tool_calls), depth)

    def _handle_function_result(self, results, depth):
        self.dialogue.put_all(results)
        self.chat(None, depth=depth + 1)

    def plan(self, steps, depth=0):
        tools = list(self.tools)
        if depth == 0:
            tools.append(DIRECT_ANSWER_TOOL)
        return self.llm.response_with_functions(steps, functions=tools)
'''


def test_a_tool_added_on_the_first_pass_of_a_recursion_only_is_reported():
    found = lint(FIRST_PASS_TOOL, {"CL203"})
    assert [(f.row, f.confidence) for f in found] == [(8, "likely")], found  # `plan` never calls itself again: one pass
    assert "on the first pass only" in found[0].message


# --- CL104: a retry that puts a note ahead of the prompt it has just sent ---------------------------------------------

RETRY_NOTE = '''
from app.llm import get_response


def write_code(prompt, model):
    text = get_response(promptStr=prompt, model=model)
    if not parse(text):
        prompt_retry = "**NOTE** THIS IS A RETRY, BECAUSE PARSING YOUR RESPONSE FAILED. CONDENSE YOUR CODE.\\n"
        prompt_retry += "** ORIGINAL TASK DESCRIPTION FOLLOWS FROM HERE **\\n"
        prompt_retry += prompt
        text = get_response(promptStr=prompt_retry, model=model)
    return text


def write_code_again(prompt, model):
    text = get_response(promptStr=prompt, model=model)
    if not parse(text):
        text = get_response(promptStr=prompt + "\\n\\nYour last answer could not be parsed; condense your code.", model=model)
    return text


def parse(text):
    return "```" in text
'''


def test_a_retry_note_put_ahead_of_the_prompt_just_sent_is_reported():
    found = lint(RETRY_NOTE, {"CL104"})
    assert [(f.row, f.confidence) for f in found] == [(9, "likely")], found  # the note after the prompt is what to do
    assert "line 5" in found[0].message and "`prompt_retry`" in found[0].message


# --- CL201: a tool table filled in the order of a set of names ----------------------------------------------------------

PLUGIN_TOOLS = '''
class PluginExecutor:
    def get_tools(self, registry, config_functions):
        tools = {}
        all_required_functions = list(set(["handle_exit_intent", "get_lunar"] + config_functions))
        for func_name in all_required_functions:
            item = registry.get(func_name)
            if item:
                tools[func_name] = {"type": "function", "function": item.description}
        return tools

    def get_sorted_tools(self, registry, config_functions):
        tools = {}
        for func_name in sorted(set(config_functions)):
            tools[func_name] = registry[func_name]
        return tools
'''


def test_a_tool_table_filled_in_a_sets_order_is_reported():
    found = lint(PLUGIN_TOOLS, {"CL201"})
    assert [f.row for f in found] == [5], found
    assert "`all_required_functions`, a set" in found[0].message


# --- CL301: a graph state's reducer that keeps the latest messages ----------------------------------------------------

REDUCER = '''
from typing import Annotated, Sequence, TypedDict

from langchain_core.messages import BaseMessage
from langgraph.graph.message import add_messages

TEAM_MAX_MESSAGES = 20


def merge_messages(left, right):
    merged = add_messages(left or [], right or [])
    cleaned = [m for m in merged if m.content]
    return cleaned[-TEAM_MAX_MESSAGES:]


def merge_all(left, right):
    return add_messages(left or [], right or [])


class TeamState(TypedDict):
    messages: Annotated[Sequence[BaseMessage], merge_messages]
    notes: Annotated[Sequence[BaseMessage], merge_all]
'''


def test_a_state_reducer_that_keeps_the_latest_messages_is_a_window():
    found = lint(REDUCER, {"CL301"})
    assert [f.row for f in found] == [12], found


# --- CL104: a regular expression's search is no retrieval -------------------------------------------------------------

REGEX_PARTS = '''
import re


def assemble_prompt(template, params, image_introduction_messages):
    system_content = template.split("\\n\\n")[0]
    system_message = {"role": "system", "content": [{"type": "text", "text": system_content}]}
    user_messages_part2_content = re.search(r"<\\$image_introduction\\$>(.*)", template, re.S).group(1).format(**params)
    user_messages_part2 = {"role": "user", "content": [{"type": "text", "text": f"{user_messages_part2_content}"}]}
    return [system_message] + image_introduction_messages + [user_messages_part2]
'''


def test_a_regex_search_on_the_template_is_not_retrieval():
    assert lint(REGEX_PARTS, {"CL104"}) == []


# --- CL301: a kept conversation replaced by a copy without its tool messages ------------------------------------------

FILTERED = '''
from openai import OpenAI

client = OpenAI()


def handle(conn, text):
    conn.dialogue.messages.append({"role": "user", "content": text})
    reply = client.chat.completions.create(model="gpt-4o", messages=conn.dialogue.messages)
    if reply.choices[0].finish_reason == "stop":
        clean_history = [m for m in conn.dialogue.messages if m["role"] not in ("tool", "function")]
        conn.dialogue.messages = clean_history
    return reply


def request_without_tools(conn):
    visible = [m for m in conn.dialogue.messages if m["role"] != "tool"]
    return client.chat.completions.create(model="gpt-4o", messages=visible)


def new_system(conn, text):
    conn.dialogue.messages = [m for m in conn.dialogue.messages if m["role"] != "system"]
    conn.dialogue.messages.insert(0, {"role": "system", "content": text})
'''


def test_a_kept_history_replaced_by_a_copy_without_tool_messages_is_reported():
    found = lint(FILTERED, {"CL301"})
    assert [f.row for f in found] == [11], found
    assert "drops messages of a kind" in found[0].message


# --- the review of this round's change: shapes that must stay quiet, and findings that must stay ----------------------

TOOL_LOOP_WINDOW = '''
MAX_HISTORY = 20


class Agent:
    def __init__(self, llm, tools):
        self.llm, self.tools, self.history = llm, tools, []

    def run(self, task):
        self.history.append({"role": "user", "content": task})
        while True:
            reply = self.llm.chat(self.history, tools=self.tools)
            if not reply.tool_calls:
                return reply.content
            self.history.append(reply.to_message())
            if len(self.history) > MAX_HISTORY:
                self.history.pop(0)
'''


def test_a_window_in_a_tool_loop_that_goes_on_after_a_good_reply_is_still_a_window():
    assert [f.row for f in lint(TOOL_LOOP_WINDOW, {"CL301"})] == [16]


SCHEMA_FOR_THE_QUESTION = '''
SQL_PROMPT = """You are a PostgreSQL expert. Given an input question, create a syntactically correct PostgreSQL query to
run. Never query for all columns of a table; query only the columns needed to answer the question, and wrap each column
name in double quotes. Pay attention to use only the column names you can see in the tables below. Return only the SQL.

Question: {question}

Only use the following tables:
{table_info}
"""


def generate_sql(llm, db, question, table_store):
    docs = table_store.similarity_search(question, k=4)
    names = [d.metadata["table"] for d in docs]
    table_info = db.get_table_info(table_names=names)
    return llm.invoke(SQL_PROMPT.format(question=question, table_info=table_info))


def classify(llm, query, schema_json):
    prompt = f"""You triage customer support tickets for an online store. Read the customer's message and decide which
team should handle it (billing, shipping, returns, technical or other), how urgent it is on a scale from 1 to 5, and
write a one-sentence summary a support agent can read at a glance. Do not invent order numbers or promise refunds.

Customer message: {query}

Answer with a JSON object that follows this schema exactly:
{Ticket.model_json_schema()}
"""
    return llm.invoke(prompt)
'''


def test_a_schema_picked_for_the_question_or_an_output_schema_is_not_the_databases_description():
    assert lint(SCHEMA_FOR_THE_QUESTION, {"CL104"}) == []


SUB_AGENT = '''
from openai import OpenAI

client = OpenAI()
DELEGATE_TOOL = {"type": "function", "function": {"name": "delegate", "parameters": {"type": "object"}}}


def run_agent(task, tools, depth=0):
    tools = list(tools)
    if depth == 0:
        tools.append(DELEGATE_TOOL)
    messages = [{"role": "system", "content": "You are a research agent."}, {"role": "user", "content": task}]
    reply = client.chat.completions.create(model="gpt-4o", messages=messages, tools=tools)
    for call in reply.choices[0].message.tool_calls or []:
        run_agent(call.function.arguments, tools, depth=depth + 1)
'''


def test_a_tool_kept_from_a_sub_agents_fresh_conversation_is_quiet():
    assert lint(SUB_AGENT, {"CL203"}) == []


ONE_FIX_TWO_REQUESTS = '''
from anthropic import Anthropic


class ClaudeProvider:
    def __init__(self):
        self.client = Anthropic()

    def chat(self, messages, system, tools, execute):
        response = self.client.messages.create(model="claude-sonnet-4-5", max_tokens=4096, system=system, tools=tools, messages=messages)
        while response.stop_reason == "tool_use":
            messages.append({"role": "assistant", "content": response.content})
            messages.append({"role": "user", "content": execute(response)})
            response = self.client.messages.create(model="claude-sonnet-4-5", max_tokens=4096, system=system, tools=tools, messages=messages)
        return response
'''


def test_the_loops_finding_names_the_request_before_the_loop():
    found = lint(ONE_FIX_TWO_REQUESTS, {"CL501"})
    assert [f.row for f in found] == [13], found
    assert "the request on line 9 sends the same history first" in found[0].message


OWN_CALLEE_ITERATES = '''
TOOL_SPECS = {"search": {"name": "search"}, "fetch": {"name": "fetch"}}


def tool_specs(tools):
    return [TOOL_SPECS[name] for name in tools]


class Assistant:
    def __init__(self, llm, tools: set[str]):
        self.llm = llm
        self.specs = tool_specs(tools=tools)
'''


def test_a_set_of_names_handed_to_a_function_of_the_module_that_iterates_it_is_reported():
    assert [f.row for f in lint(OWN_CALLEE_ITERATES, {"CL201"})] == [9]


def test_a_clock_through_a_builder_of_another_module_wrapped_in_an_unknown_call_is_reported(tmp_path):
    files = {"app/__init__.py": "", "app/bot.py": '''
from datetime import datetime
from anthropic import Anthropic
from app import prompts

client = Anthropic()


def answer(user_name, history):
    system = prompts.system_prompt(user_name, datetime.now())
    return client.messages.create(model="claude-sonnet-4-5", max_tokens=1024, system=system, messages=history)
''', "app/prompts.py": '''
from textfmt import squash_whitespace


def system_prompt(user_name, now):
    return squash_whitespace(f"""You are the scheduling assistant of Acme Corp. You book meeting rooms and move meetings.
Never book a room for more than four hours, never double-book, and confirm the attendees' time zone first.
The current time is {now}. You are talking to {user_name}.""")
'''}
    assert [f.row for f in lint_tree(tmp_path, files, "app/bot.py", {"CL101"})] == [9]


QUIET_WINDOWS = '''
import json
from typing import Annotated, TypedDict

from agno.agent import Agent


class ChatSession:
    def __init__(self, path):
        self.messages = json.loads(open(path).read())
        self.messages = [m for m in self.messages if m["role"] in ("user", "assistant")]


def keep_recent(left, right):
    return (left + right)[-50:]


class State(TypedDict):
    status_messages: Annotated[list[str], keep_recent]


agent = Agent(instructions=["Be brief."], add_history_to_context=True, num_history_runs=5)
'''


def test_a_session_cleaned_on_load_a_status_log_and_an_agent_with_no_store_are_no_windows():
    assert lint(QUIET_WINDOWS, {"CL301"}) == []


MEMORY_FULL = '''
class Bot:
    def __init__(self, llm, max_messages=30):
        self.llm, self.max_messages, self.messages = llm, max_messages, []

    @property
    def memory_full(self):
        return len(self.messages) > self.max_messages

    def remember(self, history, message):
        history.append(message)
        if self.memory_full:
            history.pop(0)

    def ask(self, question):
        self.remember(self.messages, {"role": "user", "content": question})
        return self.llm.chat(self.messages)
'''


def test_a_cut_behind_a_property_that_measures_the_history_is_a_window():
    assert [f.row for f in lint(MEMORY_FULL, {"CL301"})] == [12]


SET_TABLE = '''
def build_tools(enabled, extra, plugins):
    tools = {}
    names = list(set(enabled + extra))
    for name in names:
        tools[name] = plugins[name]
    return list(tools.values())
'''


def test_a_tool_table_filled_from_a_set_of_names_is_reported_without_other_hints():
    assert [f.row for f in lint(SET_TABLE, {"CL201"})] == [4]


# --- the gates of this round's shapes open a module for that shape alone ----------------------------------------------

EVAL_MODULE = """
from typing import ClassVar

from pydantic import BaseModel


def insert_evals(ids, extract_with_llm, retrieve_chunk_spans, database):
    related_chunks = [str(spans) for spans in retrieve_chunk_spans(ids)]
    question = extract_with_llm(QuestionResponse, related_chunks).question
    candidate_chunks = database.search(question)

    class ContextEvalResponse(BaseModel):
        hit: bool
        system_prompt: ClassVar[str] = f\"\"\"
You are given a context extracted from a document. You are a subject matter expert on the document's topic.
Your task is to determine whether the provided context contains (a part of) the answer to this question: "{question}"
An example of a context that does NOT contain (a part of) the answer is a table of contents. Answer with the JSON the
response schema asks for and nothing else.
\"\"\".strip()

    return [extract_with_llm(ContextEvalResponse, str(chunk)) for chunk in candidate_chunks]
"""


def test_a_module_opened_for_a_question_template_is_judged_for_that_shape_alone():
    assert lint(EVAL_MODULE, {"CL104"}) == []


ADAPTER_THAT_APPENDS = '''
from anthropic import AsyncAnthropic

client = AsyncAnthropic()


async def call_claude(messages, objective):
    messages.append({"role": "user", "content": f"Next step towards: {objective}"})
    response = await client.messages.create(model="claude-3-opus-20240229", max_tokens=3000, system=messages[0]["content"],
                                            messages=messages[1:])
    return response.content[0].text


async def get_next_action(messages, objective):
    return await call_claude(messages, objective)


async def main(system_prompt, objective):
    messages = [{"role": "system", "content": system_prompt}]
    while True:
        action = await get_next_action(messages, objective)
        if action == "done":
            break
'''


def test_an_adapter_that_adds_to_the_list_it_is_handed_keeps_its_finding():
    found = lint(ADAPTER_THAT_APPENDS, {"CL501"})
    assert [f.row for f in found] == [8], found


EXTRACTION_TEMPLATE = '''
PROMPT_EXTRACT_SCHEMA_WITH_INSTRUCTION = """Here is the content from the URL:
<url>{URL}</url>

<url_content>
{HTML}
</url_content>

The user has made the following request for what information to extract from the above content:

<user_request>
{REQUEST}
</user_request>

<schema_block>
{SCHEMA}
</schema_block>

Please carefully read the URL content and the user's request. If the user provided a desired JSON schema in the
schema block above, extract the requested information from the URL content according to that schema."""
'''


def test_a_request_after_the_page_and_before_an_output_schema_is_not_a_question_before_a_database():
    assert lint(EXTRACTION_TEMPLATE, {"CL104"}) == []  # crawl4ai: the page varies first, and the schema is the output's


NOT_FILTERED_HISTORIES = '''
import copy


class Tui:
    def __init__(self):
        self.messages = []

    def submit(self, text):
        self.messages.append({"role": "status", "content": "thinking..."})
        reply = self.execute(text)
        self.messages = [m for m in self.messages if m["role"] != "status"]
        return reply


def solve(solver, task_state):
    task_state = copy.deepcopy(task_state)
    task_state.messages = [m for m in task_state.messages if m.role != "assistant"]
    return solver(task_state)


class Task:
    def step(self):
        self.pending_message.tool_messages = [t for t in self.pending_message.tool_messages if t.type != "done"]
'''


def test_a_screens_status_lines_a_copy_made_for_one_request_and_a_messages_tool_calls_are_no_filtered_history():
    assert lint(NOT_FILTERED_HISTORIES, {"CL301"}) == []
