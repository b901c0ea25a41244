"""Round 26: what a spent set (holdout30) taught. Each class is written here in its own words, with the shape
beside it that must stay quiet."""

from __future__ import annotations

from _lint import lint, lint_tree

# --- CL104: text looked up by a RAG function goes into the system prompt; a configured entry does not count --------

RAG = '''
from app.llm import ask_ai_stream


async def query_course_rag(question, db):
    rows = await db.search(question)
    parts = []
    index = 0
    for row in rows:
        index += 1
        parts.append(f"[Source {index}]\\n{row.text}")
    return {"context": "\\n".join(parts)}


async def answer(question: str, db, message_history: list):
    rag_result = await query_course_rag(question=question, db=db)
    context = rag_result["context"]
    system_prompt = (
        "You are a helpful educational assistant. Answer from the course content.\\n\\n"
        f"Course Content:\\n{context}"
    )
    return ask_ai_stream(question=question, message_history=message_history, message_for_the_prompt=system_prompt)
'''


def test_text_looked_up_by_a_rag_function_is_reported_where_it_enters_the_system_prompt():
    found = lint(RAG, {"CL104"})
    assert [f.row for f in found] == [19], found
    assert "looked up for this turn (query_course_rag())" in found[0].message


def test_a_counter_numbering_the_rows_of_one_lookup_is_no_volatile_value():
    # `index += 1` for each row of this call's results numbers them the same way on every call
    assert lint(RAG, {"CL101"}) == []


def test_a_counter_of_a_loop_over_range_still_counts_the_turns():
    source = RAG.replace("for row in rows:", "for row in range(len(rows)):").replace("{row.text}", "{rows[row].text}")
    assert [f.row for f in lint(source, {"CL101"})] == [10]


def test_a_lookup_of_the_entry_the_app_is_configured_with_is_no_retrieval():
    source = RAG.replace("await query_course_rag(question=question, db=db)", "ContextRegistry.get_context(config.context)")
    assert lint(source, {"CL104"}) == []
    counted = RAG.replace("await query_course_rag(question=question, db=db)", "get_context(config.max_chunks)")
    assert [f.row for f in lint(counted, {"CL104"})] == [19]  # a count: the newest chunks, still this turn's


# --- CL104: a builder's static rules appended after its per-call values; a language mode is not a per-call value --

RULES = "\\n".join(f"{i}. Always use Tailwind CSS and a card-based layout, with clear instructions for the learner." for i in range(60))

PLAYGROUND = f'''
def build_playground_system_prompt(context, course_context=None) -> str:
    base_prompt = f"""You are an expert interactive content creator.
- Playground: {{context.playground_name}}
- Description: {{context.playground_description}}"""
    if course_context:
        base_prompt += f"""COURSE CONTEXT: {{course_context}}"""
    base_prompt += """
{RULES}
"""
    return base_prompt
'''


def test_static_rules_appended_after_a_builders_per_call_values_are_found():
    found = lint(PLAYGROUND, {"CL104"})
    assert [(f.row, f.column) for f in found] == [(3, 15)], found
    assert "characters of static prompt come after the per-call value `context.playground_name`" in found[0].message


def test_rules_appended_under_a_condition_are_not_counted():
    source = PLAYGROUND.replace('    base_prompt += """', '    if course_context:\n        base_prompt += """')
    assert lint(source, {"CL104"}) == []


ACTIVITY = f'''
def get_language_name(code):
    return {{"en": "English", "fr": "French"}}.get(code, code)


def build_activity_system_prompt(course_name: str, activity_name: str, language: str = "en") -> str:
    language_name = get_language_name(language)
    return f"""Write ALL text in {{language_name}}.

COURSE: {{course_name}}
ACTIVITY: {{activity_name}}

{RULES}
"""
'''


def test_a_language_mode_first_does_not_hide_the_per_call_values_after_it():
    found = lint(ACTIVITY, {"CL104"})
    assert [f.row for f in found] == [9], found
    assert "per-call value `course_name`" in found[0].message


# --- CL301: windows that never cut, and a count of messages that is no context window ---------------------------

SESSION = '''
MAX_ITERATIONS = 6


async def generate(session, prompt, client):
    reply = await client.chat.completions.create(model="gpt-4o", messages=[*session.message_history, {"role": "user", "content": prompt}])
    session.message_history.append({"role": "user", "content": prompt})
    session.message_history.append({"role": "assistant", "content": reply.choices[0].message.content})
    session.iteration_count += 1
    if len(session.message_history) > 12:
        session.message_history = session.message_history[-12:]
'''


def test_a_session_capped_shorter_than_its_window_never_cuts():
    # six passes of two messages never fill twelve
    assert lint(SESSION, {"CL301"}) == []


def test_a_window_shorter_than_the_sessions_cap_still_cuts():
    found = lint(SESSION.replace("MAX_ITERATIONS = 6", "MAX_ITERATIONS = 10"), {"CL301"})
    assert [f.row for f in found] == [10], found


def test_a_window_with_no_count_of_passes_is_not_judged_by_a_cap():
    found = lint(SESSION.replace("    session.iteration_count += 1\n", ""), {"CL301"})
    assert [f.row for f in found] == [9], found


COUNTED = '''
import os

from groq import AsyncGroq


class Translator:
    _MAX_CONTEXT = int(os.environ.get("CONTEXT_LENGTH", "20"))

    def __init__(self):
        self.client = AsyncGroq()
        self.messages = []

    async def translate(self, text):
        self.messages += [{"role": "user", "content": text}]
        if len(self.messages) > self._MAX_CONTEXT:
            self.messages = self.messages[-self._MAX_CONTEXT:]
        response = await self.client.chat.completions.create(model="llama-3.3-70b", messages=self.messages)
        self.messages.append({"role": "assistant", "content": response.choices[0].message.content})
        return response
'''


def test_a_count_of_messages_against_a_bound_named_for_the_context_is_a_window():
    found = lint(COUNTED, {"CL301"})
    assert [f.row for f in found] == [16], found


def test_a_token_count_against_the_context_window_is_still_the_models_limit():
    source = COUNTED.replace("if len(self.messages) > self._MAX_CONTEXT:", "if count_tokens(self.messages) > self._MAX_CONTEXT:")
    assert lint(source, {"CL301"}) == []


SPLIT = '''
def select_recent_messages(messages: list, recent_budget: int):
    selected = []
    total = 0
    for item in reversed(messages):
        tokens = count_tokens(item["content"])
        if selected and total + tokens > recent_budget:
            break
        selected.insert(0, item)
        total += tokens
    cutoff = len(messages) - len(selected)
    return messages[:cutoff], selected


async def build_context(messages, budget, summarizer):
    older, recent = select_recent_messages(messages, budget)
    summary = await summarizer.summarize(older)
    return [{"role": "system", "content": summary}, *recent]
'''


def test_a_walk_that_hands_back_the_older_part_for_a_summary_is_no_window():
    assert lint(SPLIT, {"CL301"}) == []
    dropped = SPLIT.replace("return messages[:cutoff], selected", "return selected")
    assert [f.row for f in lint(dropped, {"CL301"})] == [4]


def test_an_older_part_only_counted_is_still_dropped():
    logged = SPLIT.replace("summary = await summarizer.summarize(older)", 'summary = f"{len(older)} earlier messages"')
    assert [f.row for f in lint(logged, {"CL301"})] == [4]


PREVIEW = '''
def _clip_text(text, limit):
    return text if len(text) <= limit else text[:limit] + "\\n...(truncated)"


async def run_turn(store, session_id, messages):
    history_messages = await store.get_messages(session_id)
    summary = _clip_text(" ".join(m["content"] for m in history_messages[-4:]), limit=400)
    note = "earlier steps omitted"
    first = history_messages[0]
    return summary, note, first
'''


def test_a_preview_of_the_latest_items_is_no_rendered_window_for_a_marker_or_head_elsewhere():
    assert lint(PREVIEW, {"CL301"}) == []


def test_a_head_kept_in_the_same_text_is_a_rendered_window():
    source = PREVIEW.replace('summary = _clip_text(" ".join(m["content"] for m in history_messages[-4:]), limit=400)',
                             'summary = [history_messages[0]["content"], *(m["content"] for m in history_messages[-4:])]')
    found = lint(source, {"CL301"})
    assert [f.row for f in found] == [7], found


# --- CL301: a dict of the same name in another function is another dict ------------------------------------------

GLOSSARY = '''
from openai import AsyncOpenAI

client = AsyncOpenAI()


class Translator:
    def extract_relevant_terms(self, text):
        relevant_terms = {}
        for term, translation in self.glossary_entries.items():
            if term in text:
                relevant_terms[term] = translation
        return relevant_terms

    async def translate(self, prompt, history):
        relevant_terms = self.extract_relevant_terms(prompt)
        glossary = "\\n".join(f"{t}->{tr}" for t, tr in relevant_terms.items())
        return await client.chat.completions.create(
            model="gpt-4o", messages=[{"role": "system", "content": f"Glossary:\\n{glossary}"}, *history])
'''


def test_a_fresh_dict_returned_by_another_method_is_no_state_updated_in_place():
    assert lint(GLOSSARY, {"CL301"}) == []


# --- CL501: a payload posted over HTTP is reported where it is built; a prompt set by the base class -------------

POSTED = '''
import aiohttp


class AnthropicClient:
    def __init__(self, token, model="claude-sonnet-4-5"):
        self.token = token
        self.model = model
        self.api_url = "https://api.anthropic.com/v1/messages"

    async def get_response(self, messages):
        headers = {"x-api-key": self.token, "anthropic-version": "2023-06-01"}
        system_message = None
        anthropic_messages = []
        for message in messages:
            if message["role"] == "system":
                system_message = message["content"]
            else:
                anthropic_messages.append({"role": message["role"], "content": message["content"]})
        payload = {
            "model": self.model,
            "max_tokens": 8192,
            "messages": anthropic_messages,
        }
        if system_message:
            payload["system"] = system_message
        async with aiohttp.ClientSession() as session:
            async with session.post(self.api_url, headers=headers, json=payload) as resp:
                return await resp.json()
'''


def test_a_request_body_posted_over_http_is_reported_where_it_is_built():
    found = lint(POSTED, {"CL501"})
    assert [f.row for f in found] == [19], found


INHERITED = '''
import anthropic


class LLM:
    def __init__(self, system_prompt: str = "") -> None:
        self.system_prompt = system_prompt
        self.history = []


class Claude(LLM):
    def __init__(self, model: str, system_prompt: str = "") -> None:
        super().__init__(system_prompt)
        self.client = anthropic.Anthropic()
        self.model = model

    def send_message(self, messages, max_tokens):
        return self.client.messages.create(model=self.model, max_tokens=max_tokens, system=self.system_prompt, messages=messages)
'''


def test_a_system_prompt_the_base_class_sets_from_the_constructor_is_the_objects():
    found = lint(INHERITED, {"CL501"})
    assert [f.row for f in found] == [17], found
    assert "the system prompt the object was made with" in found[0].message


def test_a_base_class_that_sets_a_constant_prompt_is_not_the_callers():
    source = INHERITED.replace("self.system_prompt = system_prompt", 'self.system_prompt = "Be brief."')
    assert lint(source, {"CL501"}) == []


# --- CL104: the newest question sent ahead of the history ---------------------------------------------------------

QUESTION_FIRST = '''
from app.messages import Message


def react_prompt(question: str, message_history: list, tool_names: list):
    return [
        Message.system("Here is a list of tools you can use: ..."),
        Message.user(question),
        *message_history,
    ]
'''


def test_the_newest_question_ahead_of_the_history_is_found_where_no_request_is_in_sight():
    found = lint(QUESTION_FIRST, {"CL104"})
    assert [f.row for f in found] == [7], found
    assert "the newest question (`question`) is sent ahead of the history `message_history`" in found[0].message


def test_the_question_after_the_history_and_a_fixed_task_ahead_of_it_stay_quiet():
    after = QUESTION_FIRST.replace("        Message.user(question),\n        *message_history,\n",
                                   "        *message_history,\n        Message.user(question),\n")
    assert lint(after, {"CL104"}) == []
    fixed = QUESTION_FIRST.replace("Message.user(question)", 'Message.user("Solve the task below.")')
    assert lint(fixed, {"CL104"}) == []


def test_a_dict_user_message_ahead_of_the_history_is_found_beside_a_request():
    source = '''
from openai import OpenAI

client = OpenAI()


def ask(question, chat_history):
    return client.chat.completions.create(
        model="gpt-4o", messages=[{"role": "system", "content": "Be brief."}, {"role": "user", "content": question}, *chat_history])
'''
    assert [f.row for f in lint(source, {"CL104"})] == [8]


# --- CL101: a clock read in a prompt template's own Jinja text --------------------------------------------------

HA_CONST = '''
from typing import Final

DOMAIN: Final = "home_agent"

DEFAULT_SYSTEM_PROMPT: Final = """You are a brief, friendly voice assistant for Home Assistant.

## Current Home Context
Current Area: {{area_name(area_id(current_device_id))}}
Current Time: {{now()}}

Available Devices:
{%- for entity in exposed_entities %}
{{ entity.entity_id }},{{ entity.name }},{{ entity.state }}
{%- endfor %}
"""
'''


def test_a_clock_in_a_prompt_templates_jinja_text_is_found_at_the_expression():
    found = lint(HA_CONST, {"CL101"}, filename="custom_components/home_agent/const.py")
    assert [(f.row, f.column) for f in found] == [(9, 15)], found
    assert "`DEFAULT_SYSTEM_PROMPT` reads the clock in its own text (`{{now()}}`)" in found[0].message


def test_a_date_only_clock_in_a_template_stays_quiet():
    for date in ("{{ now().date() }}", "{{ now().strftime('%Y-%m-%d') }}", "{{ now().year }}",
                 "{{ now() | as_timestamp | timestamp_custom('%A %d %B') }}"):
        assert lint(HA_CONST.replace("{{now()}}", date), {"CL101"}) == [], date
    minute = HA_CONST.replace("{{now()}}", "{{ now().strftime('%H:%M') }}")
    assert [f.row for f in lint(minute, {"CL101"})] == [9]


def test_a_clock_in_a_constant_not_named_for_a_prompt_stays_quiet():
    assert lint(HA_CONST.replace("DEFAULT_SYSTEM_PROMPT", "DEFAULT_CARD_MARKUP"), {"CL101"}) == []


def test_a_prompts_module_opened_for_its_template_clock_is_judged_by_that_check_alone(tmp_path):
    files = {"app/const.py": HA_CONST + '\n\nSTAMP = f"{__import__(\'time\').time()}"\n', "app/__init__.py": ""}
    found = lint_tree(tmp_path, files, "app/const.py", {"CL101", "CL102", "CL103", "CL104", "CL301"})
    assert [(f.code, f.row) for f in found] == [("CL101", 9)], found


# --- CL301: a window taken for a debug view; CL201: tools handed on from a set, in a module with no request -------

DEBUG_VIEW = '''
class Agent:
    def __init__(self):
        self.conversation_history = []

    def _build_debug_trace(self, provider):
        history_tail = self.conversation_history[-20:] if self.conversation_history else []
        return {"provider": provider, "conversation": history_tail}

    async def _get_ai_response(self, client):
        recent_messages = self.conversation_history[-10:] if len(self.conversation_history) > 10 else self.conversation_history
        return await client.get_response(messages=recent_messages)
'''


def test_a_window_taken_for_a_debug_view_is_quiet_and_the_sent_one_is_found():
    found = lint(DEBUG_VIEW, {"CL301"})
    assert [f.row for f in found] == [10], found


SET_TOOLS = '''
def react(tools, contexts, run_react):
    def wrapper(fn):
        _tools = set(tools)
        for ctx in contexts:
            for tool in ctx.resolve_tools():
                _tools.add(tool)

        async def call(*args, **kwargs):
            prompt = await fn(*args, **kwargs)
            return run_react(prompt, tools=list(_tools))

        return call

    return wrapper
'''


def test_tools_handed_on_from_a_set_are_found_in_a_module_with_no_request():
    found = lint(SET_TOOLS, {"CL201", "CL104", "CL301"})
    assert [(f.code, f.row) for f in found] == [("CL201", 3)], found
    assert lint(SET_TOOLS.replace("tools=list(_tools)", "tools=sorted(_tools, key=lambda t: t.__name__)"), {"CL201"}) == []


LOADED = '''
class ConversationHistoryManager:
    def __init__(self, store, max_messages=10):
        self._store = store
        self._max_messages = max_messages
        self._histories = {}

    async def load_from_storage(self):
        data = await self._store.async_load()
        for conv_id, messages in data.get("conversations", {}).items():
            valid_messages = [m for m in messages if "role" in m and "content" in m]
            if len(valid_messages) > self._max_messages:
                valid_messages = valid_messages[-self._max_messages:]
            self._histories[conv_id] = valid_messages

    def get_history(self, conversation_id):
        history = self._histories.get(conversation_id, [])
        if len(history) > self._max_messages:
            history = history[-self._max_messages:]
        return history
'''


def test_stored_conversations_trimmed_once_as_they_are_loaded_are_quiet_and_the_per_request_cut_is_found():
    found = lint(LOADED, {"CL301"})
    assert [f.row for f in found] == [18], found


# --- CL501: Claude through OpenRouter with an OpenAI client ---------------------------------------------------------

OPENROUTER = '''
import os

from openai import OpenAI


class OpenRouterClient:
    def __init__(self, model="anthropic/claude-3.5-sonnet", system_prompt="You are an SRE agent."):
        self.model = model
        self.system_prompt = system_prompt
        self.client = OpenAI(api_key=os.getenv("OPENROUTER_API_KEY"), base_url="https://openrouter.ai/api/v1")

    def inference(self, history):
        response = self.client.chat.completions.create(
            model=self.model, messages=[{"role": "system", "content": self.system_prompt}, *history], max_tokens=1024)
        return response.choices[0].message.content
'''


def test_claude_through_openrouter_with_an_openai_client_needs_breakpoints():
    found = lint(OPENROUTER, {"CL501"})
    assert [f.row for f in found] == [13], found
    assert "to Claude through OpenRouter with no cache_control" in found[0].message


def test_another_model_through_openrouter_is_cached_by_its_provider():
    assert lint(OPENROUTER.replace("anthropic/claude-3.5-sonnet", "openai/gpt-4o"), {"CL501"}) == []


# --- the review's mends -----------------------------------------------------------------------------------------


def test_a_counter_of_a_loop_that_sends_a_request_per_item_counts_the_requests():
    source = '''
import sys

import anthropic

client = anthropic.Anthropic()


def chat():
    history = []
    turn = 0
    for line in sys.stdin:
        turn += 1
        history.append({"role": "user", "content": line})
        client.messages.create(model="claude-sonnet-4-5", max_tokens=100, system=f"Turn {turn}. Be brief.", messages=history)
'''
    assert [f.row for f in lint(source, {"CL101"})] == [14]


def test_a_cap_named_for_another_limit_does_not_bound_the_window():
    source = SESSION.replace("MAX_ITERATIONS = 6", "MAX_TOOL_STEPS = 5").replace("iteration_count", "message_count")
    assert [f.row for f in lint(source, {"CL301"})] == [10]


def test_odd_constants_and_classes_of_one_name_do_not_stop_the_analysis():
    hexed = SESSION.replace("MAX_ITERATIONS = 6", "MAX_AGENT_STEPS = 0x20")
    assert [f.code for f in lint(hexed, {"CL301", "CL999"})] == ["CL301"]
    twice = INHERITED.replace("class Claude(LLM):", "if True:\n    class LLM(LLM):\n        pass\n\n\nclass Claude(LLM):")
    assert all(f.code != "CL999" for f in lint(twice, {"CL501", "CL999"}))


def test_rag_words_that_are_not_lookups_and_a_count_of_the_newest():
    for call in ("get_rag_prompt(language)", "should_use_rag(question)", "build_rag_index(db)"):
        assert lint(RAG.replace("await query_course_rag(question=question, db=db)", call), {"CL104"}) == [], call
    memories = RAG.replace("await query_course_rag(question=question, db=db)", "recall_memories(MAX_MEMORIES)")
    assert [f.row for f in lint(memories, {"CL104"})] == [19]


def test_the_position_of_a_retrieved_name_is_its_value_not_an_attribute_or_a_keyword():
    source = RAG.replace('f"Course Content:\\n{context}"', 'f"Tutor {self.context}: {context}"')
    assert "self.context" in source
    found = lint(source, {"CL104"})
    assert [(f.row, f.column) for f in found] == [(19, 34)], found


def test_a_runs_own_steps_after_its_task_and_a_trajectory_are_no_history_behind_a_question():
    scratch = '''
from openai import OpenAI

client = OpenAI()


def run_agent(task: str):
    step_messages = []
    for _ in range(10):
        reply = client.chat.completions.create(
            model="gpt-4o", messages=[{"role": "system", "content": "Agent."}, {"role": "user", "content": task}, *step_messages])
        step_messages.append({"role": "assistant", "content": reply.choices[0].message.content})
'''
    assert lint(scratch, {"CL104"}) == []
    assert lint(QUESTION_FIRST.replace("message_history", "trajectory"), {"CL104"}) == []


def test_the_question_ahead_of_the_history_in_other_spellings():
    source = '''
from langchain_core.messages import HumanMessage, SystemMessage


def ask(llm, request, chat_history: list):
    return llm.invoke([SystemMessage(content="Be brief."), HumanMessage(content=request.question)] + chat_history)


def ask_recent(llm, question: str, conversation: list):
    return llm.invoke([SystemMessage(content="Be brief."), HumanMessage(content=f"Question: {question}"), *conversation[-10:]])
'''
    found = lint(source, {"CL104"})
    assert [f.row for f in found] == [5, 9], found
    assert "`request.question`" in found[0].message and "`conversation`" in found[1].message


def test_a_token_list_is_measured_against_the_window_not_counted():
    source = COUNTED.replace("if len(self.messages) > self._MAX_CONTEXT:",
                             "history_tokens = tokenizer.encode(str(self.messages))\n        if len(history_tokens) > self._MAX_CONTEXT:")
    assert lint(source, {"CL301"}) == []


def test_a_constructor_handing_the_model_to_the_base_is_not_handing_the_prompt():
    model_only = INHERITED.replace("def __init__(self, system_prompt: str = \"\") -> None:",
                                   "def __init__(self, model: str, system_prompt: str = \"You are an auditor.\") -> None:").replace(
        "def __init__(self, model: str, system_prompt: str = \"\") -> None:\n        super().__init__(system_prompt)",
        "def __init__(self, model: str) -> None:\n        super().__init__(model)")
    assert "super().__init__(model)" in model_only and "You are an auditor." in model_only
    assert lint(model_only, {"CL501"}) == []
    explicit = INHERITED.replace("super().__init__(system_prompt)", "LLM.__init__(self, system_prompt)")
    assert [f.row for f in lint(explicit, {"CL501"})] == [17]


def test_a_dict_aliased_in_two_methods_is_one_state():
    source = '''
import anthropic

client = anthropic.Anthropic()


class Agent:
    def __init__(self):
        self.state = {}
        self.history = []

    def remember(self, key, value):
        state = self.state
        state[key] = value

    def ask(self, question):
        state = self.state
        system = "Known facts:\\n" + "\\n".join(f"{k}: {v}" for k, v in state.items())
        self.history.append({"role": "user", "content": question})
        return client.messages.create(model="claude-sonnet-4-5", max_tokens=100, system=system, messages=self.history)
'''
    assert [f.row for f in lint(source, {"CL301"})] == [17]


def test_a_head_appended_before_the_window_is_rendered_with_it():
    source = '''
class Memory:
    def __init__(self):
        self.steps_history = []

    def render(self, n):
        lines = []
        lines.append(self.steps_history[0].describe())
        lines.append("[... earlier steps omitted ...]")
        lines.extend([step.describe() for step in self.steps_history[-n:]])
        return "\\n".join(lines)
'''
    assert [f.row for f in lint(source, {"CL301"})] == [9]


def test_template_clocks_in_the_newest_message_an_email_or_bytes_stay_quiet():
    assert lint(HA_CONST.replace("DEFAULT_SYSTEM_PROMPT", "USER_PROMPT_TEMPLATE"), {"CL101"}) == []
    assert lint(HA_CONST.replace("DEFAULT_SYSTEM_PROMPT", "WELCOME_EMAIL_TEMPLATE"), {"CL101"}) == []
    assert lint('SYSTEM_PROMPT = b"""Now: {{ now() }}"""\n', {"CL101"}) == []


def test_template_clocks_in_other_spellings_and_their_positions():
    nested = HA_CONST.replace("{{now()}}", "{{ as_timestamp(now()) | timestamp_custom('%H:%M') }}")
    assert [(f.row, f.column) for f in lint(nested, {"CL101"})] == [(9, 15)]
    parenthesized = 'SYSTEM_PROMPT = (\n    "You are an assistant.\\n"\n    "Current Time: {{ now() }}\\n"\n)\n'
    assert [(f.row, f.column) for f in lint(parenthesized, {"CL101"})] == [(3, 20)]
    dedented = 'import textwrap\n\nSYSTEM_PROMPT = textwrap.dedent("""\n    Current Time: {{ now() }}\n""")\n'
    assert [f.row for f in lint(dedented, {"CL101"})] == [4]


def test_a_body_built_with_dict_is_reported_where_it_is_built():
    source = POSTED.replace('''payload = {
            "model": self.model,
            "max_tokens": 8192,
            "messages": anthropic_messages,
        }''', '''payload = dict(
            model=self.model,
            max_tokens=8192,
            messages=anthropic_messages,
        )''')
    assert "dict(" in source
    assert [f.row for f in lint(source, {"CL501"})] == [19]


def test_static_rules_added_with_a_plus_after_a_builders_per_call_values_are_found():
    source = PLAYGROUND.replace('    base_prompt += """', '    base_prompt = base_prompt + """')
    assert "base_prompt = base_prompt + " in source
    assert [(f.row, f.column) for f in lint(source, {"CL104"})] == [(3, 15)]


def test_a_system_prompt_in_the_user_role_and_messages_added_to_a_request_are_no_question_and_history():
    o1 = QUESTION_FIRST.replace("Message.user(question)", "Message.user(system_message)").replace(
        "def react_prompt(question: str,", "def react_prompt(system_message: str,")
    assert lint(o1, {"CL104"}) == []
    assert lint(QUESTION_FIRST.replace("message_history", "extra_messages"), {"CL104"}) == []


def test_a_noqa_on_the_request_still_holds_for_a_finding_moved_to_its_body():
    # before this round the finding was on the post; a `# noqa` written there keeps silencing it at the body
    quiet = POSTED.replace("json=payload) as resp:", "json=payload) as resp:  # noqa: CL501")
    assert lint(quiet, {"CL501"}) == []
    at_body = POSTED.replace('        payload = {\n', '        payload = {  # noqa: CL501\n')
    assert lint(at_body, {"CL501"}) == []
    other = POSTED.replace("json=payload) as resp:", "json=payload) as resp:  # noqa: CL101")
    assert [f.row for f in lint(other, {"CL501"})] == [19]
