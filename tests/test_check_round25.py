"""Round 25: what a spent set (holdout29) taught. Each class is written here in its own words, with the shape
beside it that must stay quiet."""

from __future__ import annotations

from _lint import lint, lint_tree

# --- CL203: a provider-neutral client's completion method, the wrap-up request after the tool rounds -------------

WRAP_UP = '''
from typing import Any


class Command:
    async def run_tools(self, client: Any, model: str, tool_manager: Any, messages: list, max_turns: int) -> str:
        turns, text = 1, ""
        while turns < max_turns:
            tools = await tool_manager.get_tools_for_llm()
            response = await client.create_completion(model=model, messages=messages, tools=tools, max_tokens=4096)
            text, calls = response.get("response", ""), response.get("tool_calls", [])
            if not calls:
                return text
            messages.append({"role": "assistant", "content": text, "tool_calls": calls})
            turns += 1
        final = await client.create_completion(model=model, messages=messages, max_tokens=4096)
        return final.get("response", text)

    async def execute(self, client: Any, model: str, tool_manager: Any, prompt: str) -> str:
        messages = [{"role": "user", "content": prompt}]
        tools = await tool_manager.get_tools_for_llm()
        response = await client.create_completion(model=model, messages=messages, tools=tools, max_tokens=4096)
        if response.get("tool_calls"):
            return await self.run_tools(client=client, model=model, tool_manager=tool_manager, messages=messages, max_turns=5)
        return response.get("response", "")
'''


def test_the_wrap_up_request_of_a_tool_loop_through_a_clients_create_completion_is_found():
    found = lint(WRAP_UP, {"CL203"})
    assert [f.row for f in found] == [15], found
    assert "without the tools" in found[0].message


def test_a_helper_that_sends_tools_itself_is_no_request_without_tools():
    # `self.run_tools(...)` sends the history with the tools on every round: the call is no tool-less follow-up
    found = lint(WRAP_UP, {"CL203"})
    assert all(f.row != 23 for f in found), found


def test_a_create_completion_on_a_receiver_not_named_for_a_client_is_no_request():
    source = WRAP_UP.replace("client.create_completion", "report.create_completion")
    assert lint(source, {"CL203"}) == []


# --- CL501: a report written section by section, each prompt built from the sections so far ---------------------

SECTIONS = {
    "app/llm.py": '''
        import litellm

        DEFAULT_MODEL = "anthropic/claude-sonnet-4-20250514"


        def llm_completion(user_prompt: str, system_prompt: str = None, **params):
            messages = []
            if system_prompt:
                messages.append({"role": "system", "content": system_prompt})
            messages.append({"role": "user", "content": user_prompt})
            return litellm.completion_with_retries(messages=messages, num_retries=3, **params)
    ''',
    "app/report.py": '''
        from .llm import llm_completion

        TEMPLATE = "Question: {query}\\nPlan: {plan}\\nWritten so far:\\n{already_written}\\nNow write: {section}"


        def write_report(query, plan, model):
            written = []
            for section in plan:
                already_written = "\\n\\n".join(written)
                args = {"query": query, "plan": plan, "already_written": already_written, "section": section}
                prompt = TEMPLATE.format(**args)
                response = llm_completion(user_prompt=prompt, model=model)
                written.append(response.content)
            return written
    ''',
}


def test_a_prompt_built_from_the_sections_written_so_far_and_sent_through_the_apps_sender_is_found(tmp_path):
    found = lint_tree(tmp_path, SECTIONS, "app/report.py", {"CL501"})
    assert [f.row for f in found] == [12], found
    assert "`written`" in found[0].message and "user_prompt=" in found[0].message
    assert "claude-sonnet-4-20250514" in found[0].message


def test_a_prompt_made_of_this_sections_own_material_only_is_quiet(tmp_path):
    files = dict(SECTIONS)
    files["app/report.py"] = SECTIONS["app/report.py"].replace('"\\n\\n".join(written)', 'section.upper()')
    assert lint_tree(tmp_path, files, "app/report.py", {"CL501"}) == []


def test_a_section_writer_whose_project_names_no_claude_model_is_quiet(tmp_path):
    files = dict(SECTIONS)
    files["app/llm.py"] = SECTIONS["app/llm.py"].replace("anthropic/claude-sonnet-4-20250514", "gpt-4o")
    assert lint_tree(tmp_path, files, "app/report.py", {"CL501"}) == []


# --- CL301: the newest messages walked back, cut at a count beside the context window's test -----------------------

LIMITED = '''
from openai import AsyncOpenAI

client = AsyncOpenAI()


def _limit_messages(context_window: int, max_messages: int, max_tokens: int, messages: list, system: list) -> list:
    counter = 0
    max_context = context_window - max_tokens
    selected = []
    tokens = 0
    for message in messages[::-1]:
        converted = message.to_openai()
        new_tokens = count_tokens(converted)
        if tokens + new_tokens >= max_context:
            break
        if counter >= max_messages:
            break
        counter += 1
        selected += converted[::-1]
        tokens += new_tokens
    return [*system, *selected[::-1]]


async def answer(messages, system):
    prompt = _limit_messages(context_window=128000, max_messages=20, max_tokens=160, messages=messages, system=system)
    return await client.chat.completions.create(model="gpt-4o", messages=prompt, stream=True)
'''


def test_a_count_of_the_latest_messages_beside_the_context_windows_test_is_found():
    found = lint(LIMITED, {"CL301"})
    assert [f.row for f in found] == [11], found
    assert "latest turns" in found[0].message


def test_a_walk_stopped_only_by_the_context_window_is_quiet():
    source = LIMITED.replace("        if counter >= max_messages:\n            break\n", "")
    assert lint(source, {"CL301"}) == []


# --- CL103: a tool schema's required names listed from a set -----------------------------------------------------

REQUIRED = '''
import inspect

from azure.ai.inference.models import ChatCompletionsToolDefinition, FunctionDefinition


def _required_params(signature: inspect.Signature) -> set[str]:
    return {name for name, p in signature.parameters.items() if p.default is inspect.Parameter.empty}


def _parameters(required_params: set[str], annotations: dict) -> dict:
    return {
        "type": "object",
        "properties": {name: {"type": "string"} for name in annotations},
        "required": list(required_params),
    }


def tool_for(function) -> ChatCompletionsToolDefinition:
    signature = inspect.signature(function)
    parameters = _parameters(_required_params(signature), function.__annotations__)
    return ChatCompletionsToolDefinition(function=FunctionDefinition(name=function.__name__, parameters=parameters))
'''


def test_a_tool_schemas_required_list_made_from_a_set_is_found():
    found = lint(REQUIRED, {"CL103"})
    assert [f.row for f in found] == [14], found
    assert "`required` list" in found[0].message


def test_a_required_list_sorted_from_the_set_is_quiet():
    assert lint(REQUIRED.replace("list(required_params)", "sorted(required_params)"), {"CL103"}) == []


def test_a_required_list_from_an_ordered_parameter_is_quiet():
    assert lint(REQUIRED.replace("required_params: set[str]", "required_params: list[str]"), {"CL103"}) == []


# --- CL104: a prompts module's template, its static instructions after the per-call values, filled elsewhere -----

RULES = "".join(f"- Rule {n}: cite every claim with the paper's corpus id and keep the section's format as given.\n" for n in range(60))
TEMPLATES = {
    "app/__init__.py": "",
    "app/llms/__init__.py": "",
    "app/llms/edit/prompts.py": (
        'EDIT_PROMPT = """\nYou edit one section of a report.\n<report>\nOriginal query: {original_query}\n{report_context}\n'
        f'</report>\n<rules>\n{RULES}</rules>\n"""\n'
    ),
    "app/pipeline.py": '''
        from app.llms.edit.prompts import EDIT_PROMPT


        def edit(query, report, llm):
            return llm(EDIT_PROMPT.format(original_query=query, report_context=report))
    ''',
}


def test_a_templates_static_rules_after_its_per_call_values_are_found_where_the_template_is(tmp_path):
    # linted from elsewhere: the tree is the package the folder of modules with no `__init__.py` sits in
    found = lint_tree(tmp_path, TEMPLATES, "app/llms/edit/prompts.py", {"CL104"})
    assert [(f.row, f.column) for f in found] == [(4, 17)], found
    assert "`{original_query}`" in found[0].message and "app/pipeline.py fills it" in found[0].message


def test_a_template_with_its_rules_first_is_quiet(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    files = dict(TEMPLATES)
    files["app/llms/edit/prompts.py"] = (
        f'EDIT_PROMPT = """\nYou edit one section of a report.\n<rules>\n{RULES}</rules>\n'
        '<report>\nOriginal query: {original_query}\n{report_context}\n</report>\n"""\n'
    )
    assert lint_tree(tmp_path, files, "app/llms/edit/prompts.py", {"CL104"}) == []


def test_a_template_no_module_fills_is_quiet(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    files = dict(TEMPLATES)
    files["app/pipeline.py"] = "def edit(query, report, llm):\n    return llm(query)\n"
    assert lint_tree(tmp_path, files, "app/llms/edit/prompts.py", {"CL104"}) == []


def test_a_template_whose_first_slot_is_the_apps_tools_is_judged_from_its_first_per_call_value(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    files = dict(TEMPLATES)
    files["app/llms/edit/prompts.py"] = TEMPLATES["app/llms/edit/prompts.py"].replace(
        "You edit one section of a report.", "You edit one section of a report with {tool_descriptions}.")
    found = lint_tree(tmp_path, files, "app/llms/edit/prompts.py", {"CL104"})
    assert [f.row for f in found] == [4], found


# --- the review's reproductions (each a class: the regression, the false finding or the close spelling) ---------------

def test_a_budget_of_the_apps_choosing_named_for_the_context_is_still_a_window():
    source = '''
from openai import OpenAI

client = OpenAI()


class Chat:
    def __init__(self, max_context_tokens=3000):
        self.max_context_tokens = max_context_tokens
        self.history = []

    def _recent(self):
        kept, total = [], 0
        for message in reversed(self.history):
            n = len(message["content"]) // 4
            if total + n > self.max_context_tokens:
                break
            total += n
            kept.insert(0, message)
        return kept

    def ask(self, text):
        self.history.append({"role": "user", "content": text})
        return client.chat.completions.create(model="gpt-4o", messages=self._recent())
'''
    assert [f.row for f in lint(source, {"CL301"})] == [13]


def test_a_count_walk_named_for_a_title_is_quiet():
    assert lint(LIMITED.replace("_limit_messages", "_limit_messages_for_title"), {"CL301"}) == []


def test_a_converted_message_appended_in_a_count_walk_is_found():
    source = LIMITED.replace("selected += converted[::-1]", "selected.append(converted)")
    assert [f.row for f in lint(source, {"CL301"})] == [11]


def test_a_helper_that_sends_tools_only_when_asked_is_a_tool_less_follow_up_when_called_without():
    source = '''
from openai import OpenAI

client = OpenAI()
TOOLS = [{"type": "function", "function": {"name": "search", "parameters": {"type": "object", "properties": {}}}}]


class Agent:
    def _complete(self, history, use_tools=False):
        if use_tools:
            return client.chat.completions.create(model="gpt-4o", messages=history, tools=TOOLS)
        else:
            return client.chat.completions.create(model="gpt-4o", messages=history)

    def run(self, history, steps):
        for _ in range(steps):
            reply = client.chat.completions.create(model="gpt-4o", messages=history, tools=TOOLS)
            if not reply.choices[0].message.tool_calls:
                return reply
            history.append(reply.choices[0].message)
        return self._complete(history)
'''
    assert [f.row for f in lint(source, {"CL203"})] == [20]


def test_llama_cpps_create_chat_completion_and_a_provider_receiver_are_requests():
    llama = WRAP_UP.replace("client.create_completion", "llm.create_chat_completion").replace("client: Any", "llm: Any") \
        .replace("client=client", "llm=llm")
    assert [f.row for f in lint(llama, {"CL203"})] == [15]
    provider = WRAP_UP.replace("client.create_completion", "provider.create_completion").replace("client: Any", "provider: Any") \
        .replace("client=client", "provider=provider")
    assert [f.row for f in lint(provider, {"CL203"})] == [15]


def _section_files(report: str, llm: str | None = None) -> dict[str, str]:
    files = dict(SECTIONS)
    files["app/report.py"] = report
    if llm is not None:
        files["app/llm.py"] = llm
    return files


def test_a_batch_emptied_after_each_request_is_quiet(tmp_path):
    report = '''
        from .llm import llm_completion

        TEMPLATE = "Classify these tickets:\\n{tickets}"


        def classify(tickets, model):
            batch = []
            for ticket in tickets:
                batch.append(ticket.text)
                if len(batch) == 20:
                    prompt = TEMPLATE.format(tickets="\\n".join(batch))
                    llm_completion(user_prompt=prompt, model=model)
                    batch.clear()
    '''
    assert lint_tree(tmp_path, _section_files(report), "app/report.py", {"CL501"}) == []


def test_a_prompt_that_reads_only_the_last_section_is_quiet(tmp_path):
    report = SECTIONS["app/report.py"].replace('"\\n\\n".join(written)', 'written[-1] if written else ""')
    assert lint_tree(tmp_path, _section_files(report), "app/report.py", {"CL501"}) == []


def test_a_prompt_built_at_the_call_from_the_sections_is_found(tmp_path):
    report = '''
        from .llm import llm_completion

        TEMPLATE = "Plan: {plan}\\nWritten so far:\\n{done}\\nNow write: {section}"


        def write_report(plan, model):
            written = []
            for section in plan:
                response = llm_completion(user_prompt=TEMPLATE.format(plan=plan, done="\\n\\n".join(written), section=section), model=model)
                written.append(response.content)
            return written
    '''
    assert [f.row for f in lint_tree(tmp_path, _section_files(report), "app/report.py", {"CL501"})] == [9]


def test_a_sender_whose_model_defaults_to_another_providers_is_quiet(tmp_path):
    llm = SECTIONS["app/llm.py"].replace("**params):", 'model="gpt-4o-mini", **params):').replace(
        "num_retries=3, **params)", "model=model, num_retries=3, **params)")
    report = SECTIONS["app/report.py"].replace("llm_completion(user_prompt=prompt, model=model)", "llm_completion(user_prompt=prompt)")
    assert lint_tree(tmp_path, _section_files(report, llm), "app/report.py", {"CL501"}) == []


def _template_files(filler: str, template: str | None = None) -> dict[str, str]:
    files = dict(TEMPLATES)
    files["app/pipeline.py"] = filler
    if template is not None:
        files["app/llms/edit/prompts.py"] = template
    return files


def test_a_long_template_filled_for_an_email_is_quiet(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    filler = '''
        import smtplib

        from app.llms.edit.prompts import EDIT_PROMPT


        def notify(query, report):
            body = EDIT_PROMPT.format(original_query=query, report_context=report)
            smtplib.SMTP("localhost").sendmail("a@b.c", ["d@e.f"], body)
    '''
    assert lint_tree(tmp_path, _template_files(filler), "app/llms/edit/prompts.py", {"CL104"}) == []


def test_a_slot_every_fill_gives_a_constant_is_not_the_first_per_call_value(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    template = TEMPLATES["app/llms/edit/prompts.py"].replace("You edit one section of a report.", "You edit one section for {audience}.")
    filler = TEMPLATES["app/pipeline.py"].replace("EDIT_PROMPT.format(", 'EDIT_PROMPT.format(audience="a senior editor", ')
    found = lint_tree(tmp_path, _template_files(filler, template), "app/llms/edit/prompts.py", {"CL104"})
    assert [f.row for f in found] == [4] and "`{original_query}`" in found[0].message


def test_a_template_filled_once_at_import_or_under_its_own_name_elsewhere_is_quiet(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    at_import = "from app.llms.edit.prompts import EDIT_PROMPT\nfrom app.llm import llm\n\nPROMPT = EDIT_PROMPT.format(original_query='q', report_context='r')\n"
    assert lint_tree(tmp_path, _template_files(at_import), "app/llms/edit/prompts.py", {"CL104"}) == []
    own = 'EDIT_PROMPT = "{host}> "\n\n\ndef banner(host, llm):\n    return llm(EDIT_PROMPT.format(host=host))\n'
    assert lint_tree(tmp_path, _template_files(own), "app/llms/edit/prompts.py", {"CL104"}) == []


def test_a_template_the_filler_makes_into_a_message_or_caches_is_judged_there(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    message = TEMPLATES["app/pipeline.py"].replace("llm(EDIT_PROMPT.format(", 'llm([{"role": "user", "content": EDIT_PROMPT.format(').replace(
        "report_context=report))", "report_context=report)}])")
    assert lint_tree(tmp_path, _template_files(message), "app/llms/edit/prompts.py", {"CL104"}) == []
    cached = TEMPLATES["app/pipeline.py"] + '''
        CACHE = {"cache_control": {"type": "ephemeral"}}
    '''
    assert lint_tree(tmp_path, _template_files(cached), "app/llms/edit/prompts.py", {"CL104"}) == []


def test_a_dedented_template_and_a_word_that_only_contains_a_static_one_are_found(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    text = TEMPLATES["app/llms/edit/prompts.py"]
    dedented = "import textwrap\n\n" + text.replace('EDIT_PROMPT = """', 'EDIT_PROMPT = textwrap.dedent("""').replace('</rules>\n"""\n', '</rules>\n""")\n')
    assert [f.row for f in lint_tree(tmp_path, _template_files(TEMPLATES["app/pipeline.py"], dedented), "app/llms/edit/prompts.py", {"CL104"})] == [6]
    knowledge = text.replace("{original_query}", "{knowledge}")
    filler = TEMPLATES["app/pipeline.py"].replace("original_query=query", "knowledge=query")
    found = lint_tree(tmp_path, _template_files(filler, knowledge), "app/llms/edit/prompts.py", {"CL104"})
    assert [f.row for f in found] == [4] and "`{knowledge}`" in found[0].message


def test_an_escaped_copy_of_the_placeholder_is_not_where_it_is_reported(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    template = TEMPLATES["app/llms/edit/prompts.py"].replace("You edit one section of a report.", 'Answer as {{"query": "{{original_query}}"}}.')
    found = lint_tree(tmp_path, _template_files(TEMPLATES["app/pipeline.py"], template), "app/llms/edit/prompts.py", {"CL104"})
    assert [(f.row, f.column) for f in found] == [(4, 17)]


def test_a_required_list_of_a_schema_that_validates_a_reply_is_quiet():
    source = '''
import jsonschema
from openai import OpenAI


def check(reply: dict, fields: dict, mandatory: set[str]) -> None:
    jsonschema.validate(reply, {"type": "object", "properties": fields, "required": list(mandatory)})
'''
    assert lint(source, {"CL103"}) == []


def test_required_names_set_by_key_or_made_from_a_keys_view_are_found():
    by_key = REQUIRED.replace('''    return {
        "type": "object",
        "properties": {name: {"type": "string"} for name in annotations},
        "required": list(required_params),
    }''', '''    schema = {"type": "object", "properties": {name: {"type": "string"} for name in annotations}}
    schema["required"] = list(required_params)
    return schema''')
    assert [f.row for f in lint(by_key, {"CL103"})] == [12]
    view = REQUIRED.replace("list(required_params)", "list(annotations.keys() - optional)").replace(
        "required_params: set[str], annotations: dict", "optional: set[str], annotations: dict")
    assert [f.row for f in lint(view, {"CL103"})] == [14]


# --- CL202: tools filtered on state the sending method changes every turn ----------------------------------------

WINDOWED = '''
from litellm import acompletion


class Agent:
    def __init__(self, tools, system):
        self._tools = tools
        self._user_turns_seen = 0
        self.history = [{"role": "system", "content": system}]

    def _tool_window_closed(self, tool) -> bool:
        return tool.active_turns is not None and self._user_turns_seen > tool.active_turns

    async def process(self, text):
        self._user_turns_seen += 1
        self.history.append({"role": "user", "content": text})
        tools = [t.schema for t in self._tools if not self._tool_window_closed(t)]
        reply = await acompletion(model="gpt-4o", messages=self.history, tools=tools)
        self.history.append(reply.choices[0].message)
        return reply
'''


def test_tools_filtered_by_a_window_on_the_turn_count_the_sending_method_keeps_are_found():
    found = lint(WINDOWED, {"CL202"})
    assert [f.row for f in found] == [16], found


def test_tools_filtered_by_settings_the_object_was_made_with_are_quiet():
    source = WINDOWED.replace("        self._user_turns_seen += 1\n", "").replace(
        "self._user_turns_seen > tool.active_turns", "tool.name in self.disabled").replace(
        "self._user_turns_seen = 0", "self.disabled = set()")
    assert lint(source, {"CL202"}) == []


def test_a_prompts_module_opened_for_its_templates_is_judged_for_them_alone(tmp_path, monkeypatch):
    # deer-flow's lead agent prompt: a template filled here with the agent's own settings, in a module no other shape
    # opens; the template check found nothing filled elsewhere, and nothing else is judged in it
    monkeypatch.chdir(tmp_path)
    rules = "".join(f"- Rule {n}: delegate complex work to a sub-agent and keep the plan in the todo list.\n" for n in range(60))
    files = {
        "agents/__init__.py": "",
        "agents/prompt.py": (
            f'SYSTEM_PROMPT_TEMPLATE = """\\n<role>You are {{agent_name}}.</role>\\n{{soul}}\\n<rules>\\n{rules}</rules>\\n"""\\n\\n\\n'
            "def apply_prompt_template(*, agent_name: str | None = None, soul: str = ''):\n"
            "    return SYSTEM_PROMPT_TEMPLATE.format(agent_name=agent_name or 'DeerFlow', soul=soul)\n"
        ),
    }
    assert lint_tree(tmp_path, files, "agents/prompt.py", {"CL104"}) == []


def test_a_count_walk_is_found_when_the_windows_reserve_defaults_to_zero():
    # call-center-ai: `max_tokens = max_tokens or 0` before `max_context = context_window - max_tokens`
    source = LIMITED.replace("    counter = 0\n", "    max_tokens = max_tokens or 0\n    counter = 0\n", 1)
    assert [f.row for f in lint(source, {"CL301"})] == [12]
