"""Round 29: what a spent set (holdout33) taught. Each class is written here in its own words, with the shape
beside it that must stay quiet."""

from __future__ import annotations

from _lint import lint

# --- CL101: a value fixed for the conversation, in the message that closes the system messages -------------------

SESSION = '''
import datetime
from litellm import completion

RULES = "You write short Python scripts that do what the user asks, and explain nothing."
EXAMPLES = "User: list the files here\\nAssistant: import os; print(os.listdir())"


class Environment:
    def __init__(self):
        self.date = datetime.datetime.now().strftime("%Y-%m-%d %H:%M:%S")

    def render(self):
        return f"Today's date is {self.date}. The user's shell is bash."


class Session:
    def __init__(self):
        self.conversation = [
            {"role": "system", "content": RULES},
            {"role": "system", "content": EXAMPLES},
            {"role": "system", "content": Environment().render()},
        ]

    def ask(self, text):
        self.conversation.append({"role": "user", "content": text})
        reply = completion(model="gpt-4o", messages=self.conversation)
        self.conversation.append({"role": "assistant", "content": reply.choices[0].message.content})
        return reply
'''


def test_environment_message_after_the_instructions_is_quiet():
    assert lint(SESSION, {"CL101"}) == []


def test_environment_message_ahead_of_the_instructions_is_reported():
    source = SESSION.replace('''            {"role": "system", "content": RULES},
            {"role": "system", "content": EXAMPLES},
            {"role": "system", "content": Environment().render()},''', '''            {"role": "system", "content": Environment().render()},
            {"role": "system", "content": RULES},
            {"role": "system", "content": EXAMPLES},''')
    found = lint(source, {"CL101"})
    assert found and "once per conversation" in found[0].message


# --- CL101: a counter a closure bumps later is no counter of the prompt built before it --------------------------

DOCUMENTS = '''
from langchain.agents import create_agent


async def ask(question, chat_model, tools):
    counter = 0
    listing = ""
    for item in question.attachments:
        counter += 1
        listing += f"doc_{counter}: {item.mime_type}\\n"
    system_prompt = "You answer from the attached documents.\\n" + listing

    def clean(text):
        nonlocal counter
        counter += 1
        return f"ref_{counter}"

    agent = create_agent(model=chat_model, tools=tools, system_prompt=system_prompt)
    return await agent.ainvoke({"messages": [{"role": "user", "content": clean(question.text)}]})
'''


def test_counter_bumped_by_a_later_closure_is_quiet():
    assert lint(DOCUMENTS, {"CL101"}) == []


# --- CL104: the standing instructions a request object carries are no value of this turn ------------------------

CONTEXTUALIZE = '''
from langchain_core.messages import HumanMessage, SystemMessage


async def ask(question, chat_model):
    messages = [SystemMessage(content=question.system_context)]
    history_text = "\\n".join(f"{t.question}\\n{t.answer}" for t in question.chat_history)
    messages[0] = SystemMessage(content=f"""{question.system_context}

    Previous conversation history:
    {history_text}
    """)
    messages.append(HumanMessage(content=question.text))
    return await chat_model.ainvoke(messages)
'''


def test_standing_instructions_ahead_of_the_history_are_quiet():
    assert lint(CONTEXTUALIZE, {"CL104"}) == []


def test_the_question_ahead_of_the_history_is_reported():
    source = CONTEXTUALIZE.replace("{question.system_context}\n\n    Previous", "{question.text}\n\n    Previous")
    assert [f.code for f in lint(source, {"CL104"})] == ["CL104"]


# --- CL301: compaction by a summary kept on the object; the same summary made on every request is a window -------

TRUNCATION = '''
class SummarizingHistory:
    def __init__(self, provider, keep=10, max_messages=40):
        self.provider = provider
        self.keep = keep
        self.max_messages = max_messages
        self.messages = []

    def append_message(self, message):
        self.messages.append(message)
        if len(self.messages) > self.max_messages:
            self.truncate()

    def truncate(self):
        response = summarize_message_history(self.provider, self.messages)
        cut = len(self.messages) - self.keep
        recent = self.messages[cut:]
        self.messages = [{"role": "user", "content": response.text}, *recent]


def summarize_message_history(provider, messages):
    return provider.messages.create(model="claude-sonnet-4-5", max_tokens=2000, messages=messages + [
        {"role": "user", "content": "Summarize the conversation so far."}])
'''

REBUILT_EACH_REQUEST = '''
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage


async def history_messages(chat_history, max_messages, chat_model):
    sorted_keys = sorted(chat_history.keys(), key=int)
    if len(sorted_keys) <= max_messages:
        return build(chat_history, sorted_keys)
    recent_keys = sorted_keys[-max_messages:]
    old = "\\n".join(chat_history[k].question for k in sorted_keys[:-max_messages])
    summary = await summarize_history(old, chat_model)
    messages = [SystemMessage(content=f"Summary of earlier conversation:\\n{summary}")]
    messages.extend(build(chat_history, recent_keys))
    return messages


def build(chat_history, keys):
    out = []
    for k in keys:
        out += [HumanMessage(content=chat_history[k].question), AIMessage(content=chat_history[k].answer)]
    return out


async def summarize_history(text, chat_model):
    return (await chat_model.ainvoke([HumanMessage(content="Summarize:\\n" + text)])).content


async def ask(question, chat_model):
    messages = [SystemMessage(content=question.system_context)]
    messages.extend(await history_messages(question.chat_history, question.max_history_messages, chat_model))
    messages.append(HumanMessage(content=question.text))
    return await chat_model.ainvoke(messages)
'''


def test_summary_kept_on_the_object_is_compaction():
    assert lint(TRUNCATION, {"CL301"}) == []


def test_window_over_the_history_keys_rebuilt_each_request_is_reported():
    found = lint(REBUILT_EACH_REQUEST, {"CL301"})
    assert [f.row for f in found] == [8]
    assert "`chat_history`" in found[0].message


# --- CL301: a window whose start is counted from a length held in a name -----------------------------------------

LIMITED = '''
class MeetingAgent:
    def __init__(self, llm, max_messages=50):
        self._llm = llm
        self._max_messages = max_messages
        self._messages = []

    async def run(self, utterance):
        self._messages.append({"role": "user", "content": utterance})
        while True:
            self._messages = self._limit_messages(self._messages, self._max_messages)
            response = await self._llm.chat.completions.create(model="gpt-4o", messages=self._messages)
            self._messages.append(response.choices[0].message)
            if not response.choices[0].message.tool_calls:
                break

    def _limit_messages(self, messages, max_messages):
        n = len(messages)
        if n > max_messages:
            start = n - max_messages
            while start > 0 and messages[start]["role"] == "tool":
                start -= 1
            return messages[start:]
        return messages[:]
'''


def test_window_from_a_length_held_in_a_name_is_reported():
    assert [f.row for f in lint(LIMITED, {"CL301"})] == [22]


# --- CL301: earlier tool results rewritten at the start of each turn ---------------------------------------------

REWORKED = '''
from dataclasses import replace


class VoiceAgent:
    def __init__(self, llm):
        self._llm = llm
        self._messages = []

    async def run(self, utterance):
        self._messages.append(Request(parts=[UserPart(utterance)]))
        self._messages = self._truncate_tool_results(self._messages, max_chars=2048)
        while True:
            response = await self._call_llm(self._messages)
            self._messages.append(response)
            if not response.tool_calls:
                break
            self._messages.append(await self._call_tools(response))

    async def _call_llm(self, messages):
        return await self._llm.request(messages)

    def _truncate_tool_results(self, messages, max_chars):
        out = []
        for message in messages:
            parts = []
            for p in message.parts:
                if isinstance(p, ToolReturnPart):
                    parts.append(replace(p, content=str(p.content)[:max_chars]))
                else:
                    parts.append(p)
            out.append(Request(parts=parts))
        return out
'''


def test_tool_results_rewritten_at_the_start_of_each_turn_are_reported():
    found = lint(REWORKED, {"CL301"})
    assert [f.row for f in found] == [11]
    assert "rewrites parts of earlier messages" in found[0].message


def test_the_same_rewrite_inside_the_loop_is_quiet():
    source = REWORKED.replace("            response = await self._call_llm(self._messages)",
                              "            self._messages = self._truncate_tool_results(self._messages, max_chars=2048)\n"
                              "            response = await self._call_llm(self._messages)")
    assert lint(source, {"CL301"}) == []


# --- CL301: side tasks and histories that never were a prefix ----------------------------------------------------

REWRITER = '''
class QueryRewriter:
    def __init__(self, client, max_turns=2):
        self.client = client
        self.max_turns = max_turns

    def _format_history(self, chat_history):
        turns = chat_history[-(self.max_turns * 2):]
        return [{"role": m["role"], "content": m["content"]} for m in turns]

    def rewrite(self, query, chat_history):
        messages = [{"role": "system", "content": "Rewrite the question so it stands alone."},
                    *self._format_history(chat_history), {"role": "user", "content": query}]
        return self.client.chat.completions.create(model="gpt-4o-mini", messages=messages, max_tokens=150)
'''

RAG_TEMPLATE = '''
TEMPLATE = "You answer questions about Bisq.\\n\\nQuestion: {question}\\n\\nChat History: {chat_history}\\n\\nContext: {context}"


class PromptManager:
    def __init__(self, settings):
        self.settings = settings

    def format_chat_history(self, chat_history):
        if not chat_history:
            return ""
        lines = []
        for exchange in chat_history[-self.settings.MAX_CHAT_HISTORY_LENGTH:]:
            lines.append(f"{exchange['role']}: {exchange['content']}")
        return "\\n".join(lines)

    def answer(self, client, question, chat_history, context):
        prompt = TEMPLATE.format(question=question, chat_history=self.format_chat_history(chat_history), context=context)
        return client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": prompt}])
'''


def test_a_query_rewriters_recent_turns_are_quiet():
    assert lint(REWRITER, {"CL301"}) == []


def test_a_history_rendered_after_the_question_is_quiet():
    assert lint(RAG_TEMPLATE, {"CL301"}) == []


def test_a_history_rendered_before_the_question_is_reported():
    source = RAG_TEMPLATE.replace("Question: {question}\\n\\nChat History: {chat_history}",
                                  "Chat History: {chat_history}\\n\\nQuestion: {question}")
    assert source != RAG_TEMPLATE
    assert [f.code for f in lint(source, {"CL301"})] == ["CL301"]


# --- CL301: a method named `create` is not called by the SDK's own `create` --------------------------------------

ADAPTERS = '''
from anthropic import AsyncAnthropic
from openai import AsyncOpenAI


class OpenAIModel:
    def __init__(self):
        self.client = AsyncOpenAI()

    async def create(self, messages):
        params = {"model": "gpt-4o", "messages": messages}
        for msg in params["messages"]:
            if msg["role"] == "system":
                msg["role"] = "developer"
        return await self.client.chat.completions.create(**params)


class AnthropicModel:
    def __init__(self):
        self.client = AsyncAnthropic()

    async def create(self, messages, system):
        params = {"model": "claude-sonnet-4-5", "max_tokens": 1000, "messages": messages}
        params["system"] = system
        params["messages"] += [{"role": "user", "content": "Answer in JSON."}]
        return await self.client.messages.create(**params)
'''


def test_request_dict_of_another_adapter_is_no_history():
    assert [f.row for f in lint(ADAPTERS, {"CL301"}) if f.row > 17] == []


# --- CL301: LangChain's MessagesPlaceholder with a cap ------------------------------------------------------------

PLACEHOLDER = '''
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder


def chat_prompt(question):
    return ChatPromptTemplate.from_messages([
        ("system", question.system_context),
        MessagesPlaceholder("chat_history", n_messages=question.n_messages),
        ("human", "{input}"),
    ])


def whole_history():
    return ChatPromptTemplate.from_messages([("system", "Be brief."), MessagesPlaceholder("chat_history"), ("human", "{input}")])


def long_cap():
    return ChatPromptTemplate.from_messages([MessagesPlaceholder("chat_history", n_messages=200), ("human", "{input}")])
'''


def test_a_placeholder_with_a_cap_is_a_window():
    found = lint(PLACEHOLDER, {"CL301"})
    assert [f.row for f in found] == [7]
    assert "`question.n_messages` messages" in found[0].message


# --- CL301: the images of older messages taken out, beyond the newest few ----------------------------------------

SCREENSHOTS = '''
class ScreenAgent:
    def __init__(self, client, n_images_to_keep=3):
        self.client = client
        self._n_images_to_keep = n_images_to_keep
        self.history = []

    def append_message(self, message):
        self.history.append(message)
        self._remove_images()

    def _remove_images(self):
        total = sum(1 for m in self.history for b in m["content"] if b["type"] == "image")
        to_remove = total - self._n_images_to_keep
        for i, msg in enumerate(self.history):
            if to_remove <= 0:
                break
            kept = [b for b in msg["content"] if b["type"] != "image"]
            if len(kept) != len(msg["content"]):
                to_remove -= len(msg["content"]) - len(kept)
                self.history[i] = {"role": msg["role"], "content": kept}
'''

FILTERED = '''
MAX_IMAGE_MESSAGES = 10


def build_messages(messages):
    count = sum(1 for m in messages if any(b.get("type") == "image" for b in m.get("content", [])))
    to_delete = count - MAX_IMAGE_MESSAGES
    if to_delete > 0:
        new_messages = []
        for message in messages:
            blocks = message.get("content", [])
            if to_delete > 0 and any(b.get("type") == "image" for b in blocks):
                to_delete -= 1
                new_messages.append({"role": message["role"], "content": [b for b in blocks if b.get("type") != "image"]})
            else:
                new_messages.append(message)
        messages = new_messages
    return messages
'''

CHUNKED = SCREENSHOTS.replace("to_remove = total - self._n_images_to_keep",
                              "to_remove = (total - self._n_images_to_keep) // 10 * 10  # min_removal_threshold")


def test_older_screenshots_taken_out_in_place_are_reported():
    found = lint(SCREENSHOTS, {"CL301"})
    assert [f.row for f in found] == [20]
    assert "`_n_images_to_keep`" in found[0].message


def test_older_images_filtered_out_of_a_rebuilt_history_are_reported():
    assert [f.row for f in lint(FILTERED, {"CL301"})] == [16]


def test_images_removed_in_chunks_are_quiet():
    assert lint(CHUNKED, {"CL301"}) == []


KEYED = '''
from langchain_openai import ChatOpenAI


def trim_history(chat_history_dict, max_messages):
    if not chat_history_dict or max_messages <= 0:
        return {}
    sorted_keys = sorted(chat_history_dict.keys(), key=lambda x: int(x))
    trimmed_keys = sorted_keys[-max_messages:]
    return {k: chat_history_dict[k] for k in trimmed_keys}


def every_key(chat_history_dict):
    sorted_keys = sorted(chat_history_dict.keys(), key=lambda x: int(x))
    return {k: chat_history_dict[k] for k in sorted_keys}


async def ask(question, llm):
    history = trim_history(question.chat_history_dict, question.max_history_messages)
    messages = [("system", question.system_context)]
    for k, entry in history.items():
        messages += [("human", entry.question), ("ai", entry.answer)]
    messages.append(("human", question.text))
    return await llm.ainvoke(messages)
'''


def test_the_latest_keys_of_a_history_dict_are_a_window():
    found = lint(KEYED, {"CL301"})
    assert [f.row for f in found] == [8]
    assert "`chat_history_dict`" in found[0].message


DECOMPOSED = '''
from openai import OpenAI

client = OpenAI()
histories = {}


def answer(session_id, query, query_decomposer):
    history = histories.setdefault(session_id, [])
    recent_history = history[-5:] if history else []
    sub_queries = query_decomposer.decompose(query, recent_history)
    messages = [{"role": "system", "content": "Answer from the documents."}]
    for turn in history:
        messages += [{"role": "user", "content": turn["query"]}, {"role": "assistant", "content": turn["answer"]}]
    messages.append({"role": "user", "content": query + "\\n" + "\\n".join(sub_queries)})
    reply = client.chat.completions.create(model="gpt-4o", messages=messages).choices[0].message.content
    history.append({"query": query, "answer": reply})
    return reply
'''


def test_the_latest_turns_handed_to_a_side_task_are_quiet():
    assert lint(DECOMPOSED, {"CL301"}) == []
    kept = DECOMPOSED.replace("    for turn in history:", "    for turn in recent_history:")
    assert [f.row for f in lint(kept, {"CL301"})] == [9]


# --- CL301: the caller's system message grown in place ------------------------------------------------------------

SCHEMA_APPENDED = '''
import json
from openai import OpenAI

client = OpenAI()


def handle_json_mode(response_model, kwargs):
    new_kwargs = kwargs.copy()
    message = "Answer with JSON that follows this schema:\\n" + json.dumps(response_model.model_json_schema())
    if new_kwargs["messages"][0]["role"] != "system":
        new_kwargs["messages"].insert(0, {"role": "system", "content": message})
    else:
        new_kwargs["messages"][0]["content"] += f"\\n\\n{message}"
    return client.chat.completions.create(**new_kwargs)


def generate_text(messages, schema):
    system_message = next(m for m in messages if m["role"] == "system")
    system_message["content"] += "\\nRespond with JSON only: " + json.dumps(schema)
    return client.chat.completions.create(model="gpt-4o", messages=messages)
'''


def test_the_callers_system_message_grown_in_place_is_reported():
    found = lint(SCHEMA_APPENDED, {"CL301"})
    assert [f.row for f in found] == [13, 19]
    assert "in place" in found[0].message


def test_a_deep_copy_or_a_fresh_list_is_quiet():
    deep = SCHEMA_APPENDED.replace("import json\n", "import copy\nimport json\n").replace(
        "new_kwargs = kwargs.copy()", "new_kwargs = copy.deepcopy(kwargs)").replace(
        "    system_message = next(", "    messages = copy.deepcopy(messages)\n    system_message = next(")
    assert lint(deep, {"CL301"}) == []
    fresh = '''
from openai import OpenAI

client = OpenAI()


def ask(question, schema):
    messages = [{"role": "system", "content": "You answer in JSON."}, {"role": "user", "content": question}]
    messages[0]["content"] += "\\nSchema: " + schema
    return client.chat.completions.create(model="gpt-4o", messages=messages)
'''
    assert lint(fresh, {"CL301"}) == []


# --- CL101: values carried through enumerate / zip / reversed -----------------------------------------------------

FEW_SHOTS = '''
import random
from litellm import completion


class FewShotAgent:
    def __init__(self, wiki, displays):
        self.wiki = wiki
        self.displays = displays

    def solve(self, env, max_steps=30):
        sampled = random.sample(self.displays, 5)
        few_shots = "\\n\\n".join([f"Example {i + 1}:\\n{d}" for i, d in enumerate(sampled)])
        messages = [{"role": "system", "content": f"{self.wiki}\\n\\n{few_shots}"}, {"role": "user", "content": env.reset()}]
        for _ in range(max_steps):
            res = completion(model="gpt-4o", messages=messages)
            messages.append(res.choices[0].message.model_dump())
            messages.append({"role": "user", "content": env.step(res)})
'''


def test_few_shots_drawn_at_random_through_enumerate_are_reported():
    found = lint(FEW_SHOTS, {"CL101"})
    assert [f.row for f in found] == [11]
    assert "random.sample()" in found[0].message
    fixed = FEW_SHOTS.replace("random.sample(self.displays, 5)", "self.displays[:5]")
    assert lint(fixed, {"CL101"}) == []


# --- the review's cases: the new classes' edges ------------------------------------------------------------------

def test_a_resize_or_a_frame_caption_is_no_image_window():
    resize = '''
from openai import OpenAI

client = OpenAI()
MAX_IMAGE_SIZE = 1024


def prepare_images(messages):
    for message in messages:
        for block in message["content"]:
            if block["type"] == "image":
                block["source"] = shrink(block["source"], MAX_IMAGE_SIZE)
    return client.chat.completions.create(model="gpt-4o", messages=messages)
'''
    assert not [f for f in lint(resize, {"CL301"}) if "images out" in f.message]
    captions = '''
from openai import OpenAI

client = OpenAI()


def caption_video(frames, max_frames=8):
    for frame in frames[:max_frames]:
        reply = client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": [frame["image"]]}])
        frame["caption"] = reply.choices[0].message.content
'''
    assert lint(captions, {"CL301"}) == []


def test_a_summary_kept_only_for_a_debug_panel_is_still_a_window():
    kept = '        self.messages = [{"role": "user", "content": response.text}, *recent]'
    debug = '        self.last_prompt = [{"role": "user", "content": response.text}, *recent]'
    assert kept in TRUNCATION
    assert [f.code for f in lint(TRUNCATION.replace(kept, debug), {"CL301"})] == ["CL301"]


def test_sessions_evicted_by_their_sorted_ids_are_no_window():
    source = '''
from openai import OpenAI

client = OpenAI()
MAX_SESSIONS = 500


class Bot:
    def __init__(self):
        self.chat_history = {}

    def _evict(self):
        ids = sorted(self.chat_history, key=lambda k: self.chat_history[k]["updated"])
        self.chat_history = {k: self.chat_history[k] for k in ids[-MAX_SESSIONS:]}

    def ask(self, session, text):
        history = self.chat_history.setdefault(session, {"updated": 0, "messages": []})["messages"]
        history.append({"role": "user", "content": text})
        self._evict()
        return client.chat.completions.create(model="gpt-4o", messages=history)
'''
    assert lint(source, {"CL301"}) == []


def test_a_placeholder_for_the_standalone_question_or_a_long_constant_cap_is_quiet():
    source = PLACEHOLDER.replace("def chat_prompt(question):", "def contextualize_q_prompt(question):")
    assert lint(source, {"CL301"}) == []
    constant = "MAX_HISTORY_MESSAGES = 200\\n" + PLACEHOLDER.replace("n_messages=question.n_messages", "n_messages=MAX_HISTORY_MESSAGES")
    assert lint(constant, {"CL301"}) == []


def test_static_text_after_the_environment_value_is_reported():
    closing = '{"role": "system", "content": Environment().render()},'
    assert closing in SESSION
    manual = '{"role": "system", "content": f"{Environment().render()} Tools: {TOOL_MANUAL}"},'
    tail = SESSION.replace(closing, manual).replace('EXAMPLES = "', 'TOOL_MANUAL = "Use the tools as follows."' + chr(10) + 'EXAMPLES = "')
    assert [f.code for f in lint(tail, {"CL101"})] == ["CL101"]
    shots = SESSION.replace(closing, closing + chr(10) + "            *SHOTS,").replace(
        'EXAMPLES = "', 'SHOTS = [{"role": "user", "content": "ls"}]' + chr(10) + 'EXAMPLES = "')
    assert [f.code for f in lint(shots, {"CL101"})] == ["CL101"]


def test_a_loop_that_handles_no_image_in_a_function_that_keeps_images_is_quiet():
    source = '''
from openai import OpenAI

client = OpenAI()
MARKDOWN = "Formatting re-enabled. "


def build_messages(history, keep_image_indices):
    messages = []
    for i, m in enumerate(history):
        if i in keep_image_indices or m["type"] != "image":
            messages.append(m)
    for i, m in enumerate(messages):
        if m["role"] == "system":
            messages[i] = {"role": "system", "content": MARKDOWN + m["content"]}
            break
    return client.chat.completions.create(model="o3", messages=messages)
'''
    assert not [f for f in lint(source, {"CL301"}) if "images out" in f.message]


def test_a_system_message_grown_on_a_list_every_caller_builds_for_the_request_is_quiet():
    source = '''
from openai import OpenAI

client = OpenAI()


class Agent:
    def __init__(self, history_store):
        self.store = history_store

    @staticmethod
    def _append_system_prompt(msg, extra):
        if extra and msg and msg[0]["role"] == "system":
            msg[0]["content"] += "\\n" + extra

    def invoke(self, question, schema_prompt):
        msg = [{"role": "system", "content": "You are a helpful agent."}, *self.store.load(), {"role": "user", "content": question}]
        self._append_system_prompt(msg, schema_prompt)
        return client.chat.completions.create(model="gpt-4o", messages=msg)
'''
    assert lint(source, {"CL301"}) == []
    kept = source.replace("        msg = [{", "        self.msg = [{").replace("self._append_system_prompt(msg, schema_prompt)", "self._append_system_prompt(self.msg, schema_prompt)")
    assert [f.code for f in lint(kept, {"CL301"})] == ["CL301"]



def test_a_window_in_a_class_named_for_its_topic_is_judged_by_its_role():
    # a class named for a side topic reads the latest turns for a short request of its own (a search query, an
    # embedding); an agent or an assistant named for its topic still holds the conversation, and its window slides
    for name in ("SearchQueryBuilder", "EmbeddingService", "TitleMaker", "QueryProcessor"):
        assert lint(REWRITER.replace("class QueryRewriter", f"class {name}"), {"CL301"}) == [], name
    for name in ("SearchAgent", "QueryAssistant", "SearchChatEngine"):
        found = lint(REWRITER.replace("class QueryRewriter", f"class {name}"), {"CL301"})
        assert [f.row for f in found] == [7], name


# --- CL203: the tools taken off the last request of a tool loop, in the shapes real loops write it --------------------

LOOP_HEAD = '''
from openai import OpenAI
client = OpenAI()
TOOLS = [{"type": "function", "function": {"name": "search", "parameters": {"type": "object", "properties": {}}}}]
MAX_STEPS = 8
'''

FLAG_LOOP = LOOP_HEAD + '''
def run(messages):
    for step in range(MAX_STEPS):
        last = step == MAX_STEPS - 1
        tools = None if last else TOOLS
        reply = client.chat.completions.create(model="gpt-4o", messages=messages, tools=tools)
        messages.append(reply.choices[0].message)
        if not reply.choices[0].message.tool_calls:
            return reply.choices[0].message.content
        messages.append({"role": "tool", "tool_call_id": "1", "content": "x"})
'''


def test_tools_taken_off_through_a_flag_for_the_last_pass_are_reported():
    found = lint(FLAG_LOOP, {"CL203"})
    assert [f.row for f in found] == [9]
    assert "on the last pass of the loop" in found[0].message


def test_a_flag_that_is_no_step_count_is_quiet():
    # `last` is whether this item is the last document, not the loop's step against its limit
    source = FLAG_LOOP.replace("last = step == MAX_STEPS - 1", "last = messages[-1] is None")
    assert lint(source, {"CL203"}) == []


INLINE_LOOP = LOOP_HEAD + '''
def run(messages):
    for step in range(MAX_STEPS):
        reply = client.chat.completions.create(model="gpt-4o", messages=messages,
                                               tools=TOOLS if step < MAX_STEPS - 1 else None)
        messages.append(reply.choices[0].message)
        if not reply.choices[0].message.tool_calls:
            return reply.choices[0].message.content
        messages.append({"role": "tool", "tool_call_id": "1", "content": "x"})
'''


def test_tools_taken_off_the_last_pass_in_the_request_itself_are_reported():
    found = lint(INLINE_LOOP, {"CL203"})
    assert [f.row for f in found] == [8]
    assert "tools=TOOLS if step < MAX_STEPS - 1 else None" in found[0].message
    found = lint(INLINE_LOOP.replace("TOOLS if step < MAX_STEPS - 1 else None", "None if step == MAX_STEPS - 1 else TOOLS"), {"CL203"})
    assert [f.row for f in found] == [8]


def test_tools_chosen_by_a_setting_in_the_request_are_quiet():
    assert lint(INLINE_LOOP.replace("TOOLS if step < MAX_STEPS - 1 else None", "TOOLS if USE_TOOLS else None"), {"CL203"}) == []


BUDGET_LOOP = LOOP_HEAD + '''
def run(messages):
    rounds = 0
    while True:
        if rounds >= MAX_STEPS:
            reply = client.chat.completions.create(model="gpt-4o", messages=messages)
            return reply.choices[0].message.content
        reply = client.chat.completions.create(model="gpt-4o", messages=messages, tools=TOOLS)
        messages.append(reply.choices[0].message)
        if not reply.choices[0].message.tool_calls:
            return reply.choices[0].message.content
        rounds += 1
        messages.append({"role": "tool", "tool_call_id": "1", "content": "x"})
'''


def test_a_budget_branch_above_the_loops_request_is_paired_with_it():
    # the request written first is sent last: once the loop has gone round MAX_STEPS times, without the tools
    found = lint(BUDGET_LOOP, {"CL203"})
    assert [f.row for f in found] == [10]
    assert "without the tools (the request on line 12 sends them)" in found[0].message


def test_a_list_made_anew_in_each_pass_is_no_conversation_across_passes():
    source = BUDGET_LOOP.replace("    while True:\n", "    while True:\n        messages = [{\"role\": \"user\", \"content\": \"go\"}]\n")
    assert lint(source, {"CL203"}) == []


def test_a_branch_under_a_setting_above_the_loops_request_is_quiet():
    # `if stream:` is the same on every pass: the loop never goes round into it after sending with the tools
    assert lint(BUDGET_LOOP.replace("if rounds >= MAX_STEPS:", "if STREAM:"), {"CL203"}) == []
