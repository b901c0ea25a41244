"""Round 22: what a spent set (holdout26) taught. Each class is written here in its own words, with the shape
beside it that must stay quiet."""

from __future__ import annotations

from _lint import lint, lint_tree
from test_check_round17 import LOOP

# --- CL301: a chat loop's history sent behind a system message it is wrapped in --------------------------------

WRAPPED_LOOP = '''
from openai import OpenAI

client = OpenAI()


def chat(max_turns_window):
    messages = []
    while True:
        question = input()
        current = [
            {"role": "system", "content": "You are helpful."},
            *messages,
            {"role": "user", "content": question},
        ]
        reply = client.chat.completions.create(model="gpt-4o", messages=current)
        messages.append({"role": "user", "content": question})
        messages.append({"role": "assistant", "content": reply.choices[0].message.content})
        messages = messages[-max_turns_window:]
'''


def test_a_window_of_a_chat_loops_history_sent_inside_a_wrapper_list_is_a_cut():
    found = lint(WRAPPED_LOOP, {"CL301"})
    assert [f.row for f in found] == [18], found


def test_the_same_loop_that_keeps_its_history_whole_is_quiet():
    assert lint(WRAPPED_LOOP.replace("        messages = messages[-max_turns_window:]\n", ""), {"CL301"}) == []


# --- CL301: a trimming function of the tree handed the context window by this call -------------------------------

TRUNCATE_TREE = {
    "pkg/__init__.py": "",
    "pkg/conversation.py": '''
        def truncate_messages_to_fit(messages, max_tokens):
            current = count_message_tokens(messages)
            if current <= max_tokens:
                return messages
            units = list(messages)
            while len(units) > 1 and count_message_tokens(units) > max_tokens:
                units.pop(0)
            return units
    ''',
    "pkg/loop.py": '''
        from openai import OpenAI

        from pkg.conversation import truncate_messages_to_fit

        client = OpenAI()


        def run(messages, max_input_tokens=None, limit=BUDGET):
            conversation = list(messages)
            for _ in range(10):
                if max_input_tokens is not None:
                    conversation = truncate_messages_to_fit(conversation, LIMIT)
                reply = client.chat.completions.create(model="gpt-4o", messages=conversation)
                conversation.append({"role": "assistant", "content": reply.choices[0].message.content})
    ''',
}


def test_a_tree_trim_that_returns_early_while_it_fits_the_window_this_call_passes_is_quiet(tmp_path):
    files = dict(TRUNCATE_TREE, **{"pkg/loop.py": TRUNCATE_TREE["pkg/loop.py"].replace("LIMIT", "max_input_tokens")})
    assert lint_tree(tmp_path, files, "pkg/loop.py", {"CL301"}) == []


def test_the_same_trim_to_a_budget_of_the_apps_own_is_a_cut(tmp_path):
    files = dict(TRUNCATE_TREE, **{"pkg/loop.py": TRUNCATE_TREE["pkg/loop.py"].replace("LIMIT", "limit")})
    found = lint_tree(tmp_path, files, "pkg/loop.py", {"CL301"})
    assert [f.row for f in found] == [12], found


# --- CL301: a copy edited only for one retry after the provider refused the input ---------------------------------

RETRY_COPY = '''
from openai import OpenAI

client = OpenAI()


class Agent:
    def __init__(self):
        self.memory = []

    def _omit_biggest_tool_messages(self, messages, n):
        sizes = sorted(((i, len(m["content"])) for i, m in enumerate(messages) if m["role"] == "tool"), key=lambda x: -x[1])
        drop = {i for i, _ in sizes[:n]}
        out = []
        for i, m in enumerate(messages):
            if i in drop:
                m = dict(m)
                m["content"] = "[omitted]"
            out.append(m)
        return out

    def complete(self):
        decorator = retry_once_with_modified_input(
            in_input_bad=is_input_too_long,
            modify_input_func=lambda msgs: self._omit_biggest_tool_messages(msgs, 3),
        )
        send = decorator(lambda messages: client.chat.completions.create(model="gpt-4o", messages=messages))
        return send(messages=self.memory)

    def step(self):
        while True:
            reply = self.complete()
            self.memory.append({"role": "assistant", "content": reply.choices[0].message.content})
'''


def test_an_edit_handed_only_to_a_retry_after_a_refusal_is_quiet():
    assert lint(RETRY_COPY, {"CL301"}) == []


def test_the_same_edit_run_before_every_request_is_a_rewrite():
    source = RETRY_COPY.replace("        return send(messages=self.memory)",
                                "        return send(messages=self._omit_biggest_tool_messages(self.memory, 3))")
    assert lint(source, {"CL301"}) != []


# --- CL301: the buffer of a generator that yields overlapping windows of a document --------------------------------

CHUNKER = '''
def iter_chat_windows(turns, max_tokens, overlap=200):
    buf, sources = [], []
    for turn in turns:
        line = f"{turn['role']}: {turn['content']}\\n"
        if count_tokens("".join(buf) + line) > max_tokens and buf:
            yield {"text": "".join(buf), "sources": sources.copy()}
            while buf and count_tokens("".join(buf)) > overlap:
                buf.pop(0)
                sources.pop(0)
        buf.append(line)
        sources.append({"role": turn["role"], "content": turn["content"]})
    if buf:
        yield {"text": "".join(buf), "sources": sources.copy()}
'''


def test_a_chunkers_buffer_popped_between_the_windows_it_yields_is_quiet():
    assert lint(CHUNKER, {"CL301"}) == []


def test_the_same_pops_in_a_function_that_returns_the_history_are_a_cut():
    source = '''
    def keep_recent(messages, max_messages):
        while len(messages) > max_messages:
            messages.pop(0)
        return messages
    '''
    assert lint(source, {"CL301"}) != []


# --- CL102: a converter of the newest turn, every caller of which appends what it returns ------------------------

ADAPTER_TREE = {
    "pkg/__init__.py": "",
    "pkg/models.py": '''
        from sqlalchemy.dialects.postgresql import JSONB


        class Message(Base):
            __tablename__ = "messages"
            data = Column(JSONB)
    ''',
    "pkg/adapters.py": '''
        import json


        class OpenAIHistoryAdapter:
            def format_assistant_tool_message(self, result):
                return {
                    "role": "assistant",
                    "content": result.content,
                    "tool_calls": [
                        {"id": call.id, "type": "function",
                         "function": {"name": call.name, "arguments": json.dumps(call.input)}}
                        for call in result.tool_calls
                    ],
                }

            def format_tool_results(self, tool_results):
                return [
                    {"role": "tool", "tool_call_id": tr["tool_id"], "content": str(tr["result"])}
                    for tr in tool_results
                ]
    ''',
    "pkg/loop.py": '''
        def run(adapter, conversation, result, tool_results):
            message = adapter.format_assistant_tool_message(result)
            conversation.append(message)
            conversation.extend(adapter.format_tool_results(tool_results))
    ''',
}


def test_a_converter_every_caller_of_which_appends_its_result_is_the_newest_turn(tmp_path):
    assert lint_tree(tmp_path, ADAPTER_TREE, "pkg/adapters.py", {"CL102"}) == []


def test_the_same_converter_run_over_the_stored_turns_for_each_request_is_reported(tmp_path):
    files = dict(ADAPTER_TREE, **{"pkg/loop.py": '''
        def run(adapter, stored):
            messages = [adapter.format_assistant_tool_message(turn) for turn in stored]
            conversation = [m for turn in stored for m in adapter.format_tool_results(turn.results)]
            return messages + conversation
    '''})
    found = lint_tree(tmp_path, files, "pkg/adapters.py", {"CL102"})
    assert [f.row for f in found] == [11, 18], found


# --- CL201: search hits grouped by session are not tools ---------------------------------------------------------

def test_matches_grouped_by_session_are_no_tools_of_many_servers():
    source = '''
    def snippets(session_matches):
        merged_ranges = []
        for sess_name, matches in session_matches.items():
            for match in matches:
                merged_ranges.append((match.start, match.end))
        return merged_ranges
    '''
    assert lint(source, {"CL201"}) == []


def test_tools_listed_per_server_and_merged_unsorted_are_still_reported():
    source = '''
    async def all_tools(self):
        tools = []
        for connection, listed in zip(self.connections, self.results):
            for tool in listed:
                tools.append(tool)
        return tools
    '''
    assert [f.code for f in lint(source, {"CL201"})] == ["CL201"]


# --- CL203: a closure handed to a retry sends the conversation without its tools ---------------------------------

CLOSURE_FINAL = '''
async def execute_tool_loop(messages, tools, max_iterations):
    conversation: list[dict] = messages.copy() if messages else []
    for _ in range(max_iterations):
        async def _call():
            return await llm_call_inner(model, tools=tools, tool_choice="auto", messages=conversation)
        response = await _call()
        conversation.append(response.message)

    async def _final_call():
        return await llm_call_inner(model, tools=None, tool_choice=None, messages=conversation)

    return await retry(_final_call)
'''


def test_a_final_closure_that_drops_the_tools_of_the_handed_conversation_is_reported_at_the_empty_tools():
    found = lint(CLOSURE_FINAL, {"CL203"})
    assert [f.row for f in found] == [10], found
    assert "llm_call_inner(..., tools=None)" in found[0].message


def test_the_same_closure_with_the_tools_kept_is_quiet():
    assert lint(CLOSURE_FINAL.replace("tools=None, tool_choice=None", "tools=tools, tool_choice=\"none\""), {"CL203"}) == []


# --- CL101: a clock put into the variables a prompt template is rendered with ------------------------------------

TEMPLATE_CONTEXT = '''
import datetime


class Actor:
    async def _gather_prompt_context(self, prompt_name, messages, context, **kwargs):
        prompt_context = dict(kwargs)
        prompt_context["memory"] = context
        prompt_context["current_datetime"] = datetime.datetime.now()
        return prompt_context

    async def _render_prompt(self, prompt_name, messages, context, **kwargs):
        prompt_context = await self._gather_prompt_context(prompt_name, messages, context, **kwargs)
        return self.template.render(**prompt_context)
'''


def test_a_clock_among_a_prompt_templates_variables_is_reported():
    found = lint(TEMPLATE_CONTEXT, {"CL101"})
    assert [f.row for f in found] == [8], found
    assert "{{current_datetime}}" in found[0].message


def test_a_clock_in_a_dict_of_another_kind_is_quiet():
    source = TEMPLATE_CONTEXT.replace("prompt_context", "log_record").replace("_gather_prompt_context", "_gather_log_record")
    assert lint(source, {"CL101"}) == []


# --- CL101: a system prompt builder named with a word of its kind, filled from another module -------------------

PROMPTS_TREE = {
    "src/__init__.py": "",
    "src/memos/__init__.py": "",
    "src/memos/templates/__init__.py": "",
    "src/memos/templates/prompts.py": '''
        BASE = "You are Little M. " * 400 + "Current date: {date}. Tone: {tone}."


        def get_prompt(date, tone):
            return BASE.format(date=date, tone=tone)
    ''',
    "src/memos/api/__init__.py": "",
    "src/memos/api/handler.py": '''
        from datetime import datetime

        from memos.templates.prompts import get_prompt


        class ChatHandler:
            def _build_enhance_system_prompt(self, memories, tone):
                formatted_date = datetime.now().strftime("%Y-%m-%d %H:%M")
                sys_body = get_prompt(date=formatted_date, tone=tone)
                return sys_body + "\\n\\n# Memories\\n" + memories
    ''',
}


def test_a_clock_reaches_a_builders_prompt_through_a_package_under_src_with_its_own_init(tmp_path):
    found = lint_tree(tmp_path, PROMPTS_TREE, "src/memos/api/handler.py", {"CL101"})
    assert [f.row for f in found] == [8], found
    assert "every minute" in found[0].message


def test_the_same_builder_given_the_day_is_quiet(tmp_path):
    files = dict(PROMPTS_TREE, **{"src/memos/api/handler.py": PROMPTS_TREE["src/memos/api/handler.py"].replace(
        '"%Y-%m-%d %H:%M"', '"%Y-%m-%d"').replace("datetime.now()", "datetime.now()")})
    found = lint_tree(tmp_path, files, "src/memos/api/handler.py", {"CL101"})
    assert all("every minute" not in f.message for f in found), found


# --- a request made in a closure that the loop's pass runs --------------------------------------------------------

CLOSURE_IN_LOOP = '''
import anthropic


class Reviewer:
    async def review(self, prompt):
        client = anthropic.Anthropic()
        messages = [{"role": "user", "content": prompt}]
        for turn in range(15):
            async def make_api_call():
                loop = asyncio.get_event_loop()
                return await loop.run_in_executor(
                    None,
                    lambda: client.messages.create(model="claude-sonnet-4-5", max_tokens=4096, tools=TOOLS, messages=messages),
                )

            response = await retry_with_backoff(make_api_call)
            messages.append({"role": "assistant", "content": response.content})
            messages.append({"role": "user", "content": run_tools(response)})
'''


def test_an_agent_loop_whose_request_is_made_in_a_closure_run_each_pass_is_a_loop():
    found = lint(CLOSURE_IN_LOOP, {"CL501"})
    assert [f.row for f in found] == [13], found


def test_a_closure_the_loop_never_runs_is_no_request_of_the_loop():
    source = CLOSURE_IN_LOOP.replace("response = await retry_with_backoff(make_api_call)", "response = await other_call()")
    assert lint(source, {"CL501"}) == []


# --- CL203: an agent's tools emptied between two runs of the same agent ------------------------------------------

TWO_RUNS = '''
def root_cause(context, request):
    agent = AutofixAgent(tools=TOOLS, memory=request.initial_memory)
    response = agent.run(run_config=RunConfig(prompt=DISCOVERY, system_prompt=SYSTEM, max_iterations=64))
    if not response:
        return None
    agent.tools = []
    response = agent.run(run_config=RunConfig(prompt=PROPOSAL, system_prompt=SYSTEM))
    return response
'''


def test_tools_emptied_between_two_runs_of_one_agent_are_reported():
    found = lint(TWO_RUNS, {"CL203"})
    assert [f.row for f in found] == [6], found
    assert "agent.run()" in found[0].message


def test_a_new_agent_made_between_the_runs_is_another_conversation():
    source = TWO_RUNS.replace("    agent.tools = []\n", "    agent = AutofixAgent(tools=TOOLS)\n    agent.tools = []\n")
    assert lint(source, {"CL203"}) == []


# --- CL104: a builder's section made from its parameters before its long static part -----------------------------

TOOLS_TEXT = "- a tool description that is the same on every call\n" * 120
SECTION_FIRST = (
    "def agent_system_prompt(observer, observed, observer_card):\n"
    "    if observer != observed:\n"
    "        perspective = f\"You answer from {observer}'s view of {observed}: {observer_card}\"\n"
    "    else:\n"
    "        perspective = f\"You answer questions about {observed}.\"\n"
    "    return f\"\"\"\nYou are a context synthesis agent.\nPERSPECTIVE\n## AVAILABLE TOOLS\n" + TOOLS_TEXT + "LAST\"\"\"\n"
)


def test_a_section_made_from_the_builders_parameters_before_its_static_tools_text_is_reported():
    found = lint(SECTION_FIRST.replace("PERSPECTIVE", "{perspective}").replace("LAST", ""), {"CL104"})
    assert [f.row for f in found] == [8], found
    assert "perspective" in found[0].message


def test_the_same_builder_with_its_section_last_is_quiet():
    assert lint(SECTION_FIRST.replace("PERSPECTIVE", "").replace("LAST", "{perspective}"), {"CL104"}) == []


# --- CL103: a schema's choices made from a set ---------------------------------------------------------------------

SCHEMA_CHOICES = '''
import instructor
import typing as t

from pydantic import BaseModel


def make_source_table_model(sources):
    class LiteralSourceTable(BaseModel):
        source: t.Literal[tuple(set(src for src, _ in sources))]
        table: t.Literal[tuple(sorted(set(table for _, table in sources)))]
    return LiteralSourceTable


def make_table_model(sources):
    available_tables = list(set(table for _, table in sources))
    return t.Literal[tuple(available_tables)]


def tool_schema(kinds):
    return {"type": "object", "properties": {"kind": {"type": "string", "enum": list(kinds)}}}


def enum_tool(names):
    return {"type": "string", "enum": list({n.lower() for n in names})}
'''


def test_a_literal_an_enum_or_a_json_enum_made_from_a_set_is_reported_and_a_sorted_one_is_not():
    found = lint(SCHEMA_CHOICES, {"CL103"})
    assert [f.row for f in found] == [9, 15, 24], found
    assert all(f.confidence == "likely" and f.fix is not None for f in found)


def test_a_schema_of_a_module_that_speaks_to_no_model_is_quiet():
    source = SCHEMA_CHOICES.replace("import instructor", "import jsonschema")
    assert lint(source, {"CL103"}) == []


def test_choices_sorted_in_place_or_a_set_filled_later_are_judged_by_what_is_sent():
    source = '''
    from anthropic import Anthropic


    def kind_tool(items):
        kinds = list({item.kind for item in items})
        kinds.sort(key=str.lower)
        return {"name": "pick_kind", "input_schema": {"type": "object", "properties": {"kind": {"type": "string", "enum": kinds}}}}


    def tag_tool(items):
        tags = set()
        for item in items:
            tags.add(item.tag)
        return {"name": "pick_tag", "input_schema": {"type": "object", "properties": {"tag": {"type": "string", "enum": list(tags)}}}}
    '''
    found = lint(source, {"CL103"})
    assert [f.row for f in found] == [11], found
    assert found[0].fix is None  # sorting `set()` where it is made would not sort what is added to it


# --- CL301: the latest n stored messages asked of a repository, walked newest first ------------------------------

LATEST_ROWS = '''
from langchain_core.messages import AIMessage, HumanMessage


class ConversationService:
    async def get_conversation_history(self, session, conversation_id):
        messages = await self.message_repo.get_by_conversation(session, conversation_id, n=10)
        base_messages = []
        for message in reversed(messages):
            if message.role == "human":
                base_messages.append(HumanMessage(content=message.content))
            else:
                base_messages.append(AIMessage(content=message.content))
        return base_messages
'''


def test_the_latest_ten_rows_of_a_conversation_walked_newest_first_into_messages_are_a_window():
    found = lint(LATEST_ROWS, {"CL301"})
    assert [f.row for f in found] == [6], found


def test_rows_asked_for_in_their_own_order_are_no_window():
    assert lint(LATEST_ROWS.replace("reversed(messages)", "messages"), {"CL301"}) == []


# --- CL103: templates listed into a pool that prompts are drawn from at random -------------------------------------

POOL = '''
from random import sample


class WebInjection:
    def __init__(self, data_path):
        self.concat_prompt_templates = []
        for template_file in (data_path / "concat_prompt_templates").iterdir():
            with open(template_file) as f:
                self.concat_prompt_templates.append(f.read().strip())

    def generate_prompts(self, count):
        for _ in range(count):
            template = sample(self.concat_prompt_templates, 1)[0]
            yield template.format(payload=PAYLOAD)
'''


def test_templates_listed_into_a_pool_only_drawn_from_at_random_are_quiet():
    assert lint(POOL, {"CL103"}) == []


def test_the_same_templates_joined_in_listing_order_are_reported():
    source = POOL.replace("template = sample(self.concat_prompt_templates, 1)[0]", 'template = "\\\\n".join(self.concat_prompt_templates)')
    assert [f.row for f in lint(source, {"CL103"})] == [7]


# --- CL501: a litellm loop in a project whose configuration file names a Claude model ----------------------------

LITELLM_LOOP = LOOP  # round 17's litellm tool loop, its model a parameter
APP_TOML = '''
[completion]
model = "openai_gpt4"

[registered_models]
openai_gpt4 = { model_name = "gpt-4o" }
claude_sonnet = { model_name = "claude-3-7-sonnet-latest" }
'''


def project(module: str, toml: str = APP_TOML) -> dict[str, str]:
    """A project with its own configuration file beside pyproject.toml, and one module at core/app.py."""
    return {"pyproject.toml": "[project]\nname = 'app'\n", "app.toml": toml, "core/__init__.py": "", "core/app.py": module}


def test_a_litellm_loop_in_a_project_whose_toml_registers_a_claude_model_is_found(tmp_path):
    found = lint_tree(tmp_path, project(LITELLM_LOOP), "core/app.py", {"CL501"})
    assert [f.row for f in found] == [6], found
    assert "the project names `claude-3-7-sonnet-latest`" in found[0].message


def test_the_same_loop_whose_configuration_names_claude_only_in_a_comment_is_quiet(tmp_path):
    toml = APP_TOML.replace('claude_sonnet = { model_name = "claude-3-7-sonnet-latest" }', '# model_name = "claude-3-7-sonnet-latest"')
    assert lint_tree(tmp_path, project(LITELLM_LOOP, toml), "core/app.py", {"CL501"}) == []


def test_a_checkout_with_an_init_at_its_root_is_its_own_tree_when_linted_from_there(tmp_path, monkeypatch):
    from cachelint.check.tree import root_of

    checkout = tmp_path / "morphik-core"
    (checkout / "core" / "completion").mkdir(parents=True)
    for init in (checkout / "__init__.py", checkout / "core" / "__init__.py", checkout / "core" / "completion" / "__init__.py"):
        init.write_text("")
    module = checkout / "core" / "completion" / "chat.py"
    module.write_text("")
    monkeypatch.chdir(checkout)
    assert root_of(str(module)) == str(checkout)  # not tmp_path, the folder of other checkouts


def test_a_function_that_packages_a_system_note_is_no_system_prompt_builder():
    source = '''
    import json
    from datetime import datetime


    def package_system_message(system_message, message_type="system_alert", time=None):
        formatted_time = time if time else datetime.now().strftime("%Y-%m-%d %I:%M:%S %p")
        return json.dumps({"type": message_type, "message": system_message, "time": formatted_time})
    '''
    assert lint(source, {"CL101"}) == []


def test_a_converter_appended_once_per_stored_turn_is_still_a_converter_of_stored_turns(tmp_path):
    files = dict(ADAPTER_TREE, **{"pkg/loop.py": '''
        def to_messages(adapter, history):
            messages = []
            for msg in history:
                messages.append(adapter.format_assistant_tool_message(msg))
            return messages
    '''})
    found = lint_tree(tmp_path, files, "pkg/adapters.py", {"CL102"})
    assert [f.row for f in found] == [11, 18], found  # (format_tool_results: no caller appends it)


# --- mends of a review of this round's change (each reproduced first) ---------------------------------------------

def test_a_clock_in_prompt_variables_rendered_into_the_user_message_is_quiet():
    source = '''
    from datetime import datetime

    from openai import OpenAI

    client = OpenAI()


    def build_prompt_vars(question):
        prompt_vars = {"question": question}
        prompt_vars["asked_at"] = datetime.now().isoformat()
        return prompt_vars


    def ask(question):
        text = USER_TEMPLATE.render(**build_prompt_vars(question))
        return client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": text}])
    '''
    assert lint(source, {"CL101"}) == []


def test_a_clock_in_an_email_templates_context_is_quiet():
    source = '''
    from datetime import datetime


    def build_template_context(user):
        """The upgrade prompt e-mail."""
        template_context = {"name": user.name}
        template_context["generated_at"] = datetime.now().strftime("%H:%M")
        return template_context
    '''
    assert lint(source, {"CL101"}) == []


def test_a_batch_that_cuts_each_examples_own_dialog_once_is_no_history_cut():
    source = '''
    from openai import OpenAI

    client = OpenAI()
    SYSTEM = {"role": "system", "content": "Continue the dialogue."}


    def evaluate(dataset, max_context=6):
        for example in dataset:
            context = example["dialog"]
            context = context[-max_context:]
            request = [SYSTEM, *context]
            client.chat.completions.create(model="gpt-4o-mini", messages=request)
    '''
    assert lint(source, {"CL301"}) == []


def test_a_section_chosen_among_constant_texts_is_no_per_call_value():
    source = SECTION_FIRST.replace(
        "    if observer != observed:\n        perspective = f\"You answer from {observer}'s view of {observed}: {observer_card}\"\n"
        "    else:\n        perspective = f\"You answer questions about {observed}.\"\n",
        "    perspective = CONCISE if observer else DETAILED\n").replace("PERSPECTIVE", "{perspective}").replace("LAST", "")
    assert "CONCISE if observer" in source
    assert lint("CONCISE = 'Be brief.'\nDETAILED = 'Be thorough.'\n" + source, {"CL104"}) == []


def test_runs_in_exclusive_branches_or_of_agents_made_anew_are_not_paired():
    branches = '''
    def answer(question, allow_tools):
        agent = Agent(tools=TOOLS)
        if allow_tools:
            return agent.run(question)
        else:
            agent.tools = []
            return agent.run(question)
    '''
    remade = '''
    def review(diff):
        with make_agent() as agent:
            findings = agent.run(diff)
        with make_agent() as agent:
            agent.tools = []
            return agent.run(findings)
    '''
    assert lint(branches, {"CL203"}) == [] and lint(remade, {"CL203"}) == []


def test_tools_cleared_or_annotated_empty_between_two_runs_are_reported():
    source = '''
    def root_cause(agent):
        agent.run(DISCOVERY)
        agent.tools.clear()
        agent.run(PROPOSAL)


    async def root_cause_async(agent):
        await agent.arun(DISCOVERY)
        agent.tools: list = []
        return await agent.arun(PROPOSAL)
    '''
    assert [f.row for f in lint(source, {"CL203"})] == [3, 9]


def test_a_separate_title_request_that_quotes_the_first_message_is_no_turn_of_the_conversation():
    source = '''
    async def run_agent(model, messages, tools):
        conversation = list(messages)
        for _ in range(10):
            response = await llm_call(model, tools=tools, messages=conversation)
            conversation.append(response.message)

        async def _make_title():
            title_request = [{"role": "user", "content": "A title for: " + messages[0]["content"]}]
            return await llm_call("gpt-4o-mini", tools=None, messages=title_request)

        return conversation, await retry(_make_title)
    '''
    assert lint(source, {"CL203"}) == []


def test_a_markered_list_made_in_a_closure_each_pass_is_no_growing_breakpoint_count():
    source = '''
    import anthropic

    client = anthropic.AsyncAnthropic()


    async def summarize_all(docs):
        for doc in docs:
            async def call():
                messages = []
                messages.append({"role": "user", "content": [{"type": "text", "text": doc, "cache_control": {"type": "ephemeral"}}]})
                return await client.messages.create(model="claude-sonnet-4-5", max_tokens=512, messages=messages)
            await retry_with_backoff(call)
    '''
    assert lint(source, {"CL503"}) == []


def test_a_chat_generator_that_yields_its_cut_history_is_still_a_cut():
    source = '''
    from openai import OpenAI

    client = OpenAI()


    def bot(history):
        history = history[-10:]
        stream = client.chat.completions.create(model="gpt-4o", messages=[{"role": "system", "content": "Hi."}, *history], stream=True)
        history.append({"role": "assistant", "content": ""})
        for chunk in stream:
            history[-1]["content"] += chunk.choices[0].delta.content or ""
            yield history
    '''
    assert [f.row for f in lint(source, {"CL301"})] == [7]


def test_a_trim_run_inside_the_request_a_retry_wraps_is_a_cut():
    source = '''
    from openai import OpenAI

    client = OpenAI()


    class ChatBot:
        def __init__(self):
            self.history = []

        def _trim_history(self, messages, keep=20):
            return messages[-keep:]

        def ask(self, text):
            self.history.append({"role": "user", "content": text})
            reply = call_with_retry(lambda: client.chat.completions.create(
                model="gpt-4o", messages=[SYSTEM, *self._trim_history(self.history)]))
            self.history.append({"role": "assistant", "content": reply.choices[0].message.content})
    '''
    assert [f.row for f in lint(source, {"CL301"})] == [11]


def test_the_latest_rows_walked_backwards_by_a_slice_or_reversed_in_place_are_a_window():
    source = LATEST_ROWS.replace("for message in reversed(messages):", "for message in messages[::-1]:")
    assert [f.row for f in lint(source, {"CL301"})] == [6]
    source = LATEST_ROWS.replace("        for message in reversed(messages):", "        messages.reverse()\n        for message in messages:")
    assert [f.row for f in lint(source, {"CL301"})] == [6]


# --- CL501: an adapter that puts a system message of its own ahead of the history its callers pass ------------------

ADAPTER_WITH_SYSTEM = '''
import litellm


class LiteLLMCompletionModel:
    async def _handle_standard_litellm(self, user_content, request, history_messages):
        user_message = {"role": "user", "content": user_content}
        system_message = build_system_message(request.system_prompt)
        litellm_messages = [system_message] + history_messages + [user_message]
        model_params = {"model": self.model_name, "messages": litellm_messages, "max_tokens": request.max_tokens}
        return await litellm.acompletion(**model_params)
'''


def test_an_adapter_that_leads_the_callers_history_with_its_own_system_message_is_found(tmp_path):
    found = lint_tree(tmp_path, project(ADAPTER_WITH_SYSTEM), "core/app.py", {"CL501"})
    assert [f.row for f in found] == [10], found
    assert "a system message ahead of it" in found[0].message


def test_the_same_adapter_that_forwards_the_history_bare_is_quiet(tmp_path):
    source = ADAPTER_WITH_SYSTEM.replace("[system_message] + history_messages + [user_message]", "history_messages + [user_message]")
    assert lint_tree(tmp_path, project(source), "core/app.py", {"CL501"}) == []


def test_a_closure_with_parameters_of_its_own_in_a_retry_loop_is_a_function_of_its_own():
    source = '''
    from anthropic import Anthropic, AnthropicBedrock


    def chat(self, message_dicts, system_message, model, use_aws):
        for i in range(3):
            try:
                @file_cache(redis=True)
                def call_anthropic(message_dicts, system_message=system_message, model=model, use_aws=use_aws):
                    if use_aws:
                        model = f"anthropic.{model}-v1:0"
                        client = AnthropicBedrock()
                    else:
                        client = Anthropic()
                    return client.messages.create(model=model, messages=message_dicts, max_tokens=100, system=system_message)
                return call_anthropic(message_dicts, system_message, model, use_aws=use_aws)
            except Exception:
                continue
    '''
    assert lint(source, {"CL401", "CL402"}) == []


def test_a_chat_loop_with_a_clear_command_still_keeps_its_history_across_passes():
    source = WRAPPED_LOOP.replace('        question = input()\n', '        question = input()\n        if question == "clear":\n            messages = []\n            continue\n')
    assert [f.row for f in lint(source, {"CL301"})] == [21]
