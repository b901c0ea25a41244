"""Round 20: classes read from a spent set's misses and false findings (holdout24: coding agents, chat bots, memory
assistants, batch and game harnesses).

- Call sites: an SDK method handed to a retry helper whose result is called with the request
  (`retry_on_exception(self.client.messages.create, should_retry)(**params)`), or run in a thread
  (`asyncio.to_thread(client.messages.create, **params)`).
- CL501: an adapter that sends the history, system prompt and tools its callers pass, even when the caller's system
  prompt alone is short (the tools and the growing history are the prefix); a client class named for Anthropic
  whose methods send a whole request dict their callers build (`create(**request_data)`), once per class; a
  framework's Claude model kept on the object is reported where the object asks it (`self.llm.agenerate(...)`).
  Not: a class whose only append to `self.messages` follows `self.messages.clear()` in the same method (the
  messages of one request built anew, not a conversation).
- CL301: a trimming helper called only once the messages exceed a budget of the context window
  (`limit = self.context_length`, `if count(messages) > limit: messages = trim_prompt_messages(...)`) is no
  window; a slice of the history is no budget (`kept = kept[-int(cfg.max_context_size * 0.6):]` is still a window).
"""

from __future__ import annotations

from _lint import lint, lint_tree

# --- call sites: an SDK method handed to a helper that calls it ----------------------------------------------

RETRY_WRAPPED = '''
import anthropic


class Agent:
    def __init__(self):
        self.client = anthropic.Anthropic()

    def run(self, history, tools):
        for _ in range(30):
            params = {"model": "claude-sonnet-4-5", "max_tokens": 1000, "messages": history, "tools": tools,
                      "system": SYSTEM}
            reply = retry_on_exception(self.client.messages.create, lambda e: True)(**params)
            history.append({"role": "assistant", "content": reply.content})
            history.append({"role": "user", "content": run_tools(reply)})
'''


def test_an_sdk_method_handed_to_a_retry_helper_is_a_request():
    found = lint(RETRY_WRAPPED, {"CL501"})
    assert [f.row for f in found] == [12], found
    assert "agent loop" in found[0].message


def test_a_retry_wrapped_request_with_a_breakpoint_is_quiet():
    marked = RETRY_WRAPPED.replace('"system": SYSTEM}', '"system": SYSTEM, "cache_control": {"type": "ephemeral"}}')
    assert lint(marked, {"CL501"}) == []


IN_A_THREAD = '''
import asyncio
import anthropic

client = anthropic.Anthropic()


async def run(history, tools):
    while True:
        reply = await asyncio.to_thread(client.messages.create, model="claude-sonnet-4-5", max_tokens=1000,
                                        messages=history, tools=tools, system=SYSTEM)
        history.append({"role": "assistant", "content": reply.content})
        if reply.stop_reason != "tool_use":
            return reply
        history.append({"role": "user", "content": run_tools(reply)})
'''


def test_an_sdk_method_run_in_a_thread_is_a_request():
    found = lint(IN_A_THREAD, {"CL501"})
    assert [f.row for f in found] == [9], found


def test_a_thread_runner_handed_something_else_is_no_request():
    other = IN_A_THREAD.replace("client.messages.create", "render_page")
    assert lint(other, {"CL501"}) == []


# --- CL501: an adapter that forwards the history, the system prompt and the tools ------------------------------

ADAPTER_FILES = {
    "agent.py": '''
        from llm_anthropic import AnthropicLLM

        SYSTEM = "You are a debugging agent."


        def solve(llm, task, tools):
            messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": task}]
            for _ in range(50):
                reply = llm.generate(messages, tools)
                messages.append({"role": "assistant", "content": reply.text})
                messages.append({"role": "user", "content": reply.observation})
    ''',
    "llm_anthropic.py": '''
        import anthropic


        class AnthropicLLM:
            def __init__(self):
                self.client = anthropic.Anthropic()

            def generate(self, messages, tools):
                system_prompt = None
                rest = []
                for message in messages:
                    if message["role"] == "system":
                        system_prompt = message["content"]
                    else:
                        rest.append({"role": message["role"], "content": message["content"]})
                return self.client.messages.create(model="claude-sonnet-4-5", max_tokens=1000, messages=rest,
                                                   system=system_prompt, tools=self.define_tools(tools))

            def define_tools(self, tools):
                return [{"name": t.name, "description": t.doc, "input_schema": t.schema} for t in tools]
    ''',
}


def test_an_adapter_forwarding_history_system_and_tools_is_found_with_a_short_caller_prompt(tmp_path):
    found = lint_tree(tmp_path, ADAPTER_FILES, "llm_anthropic.py", {"CL501"})
    assert [f.row for f in found] == [16], found
    assert "with their tools and system" in found[0].message


def test_an_adapter_forwarding_history_and_a_short_system_prompt_alone_is_quiet(tmp_path):
    files = dict(ADAPTER_FILES)
    files["llm_anthropic.py"] = files["llm_anthropic.py"].replace(", tools=self.define_tools(tools))", ")")
    assert lint_tree(tmp_path, files, "llm_anthropic.py", {"CL501"}) == []


WHOLE_REQUEST = '''
import anthropic


class AnthropicClient:
    async def request(self, request_data: dict) -> dict:
        client = anthropic.AsyncAnthropic()
        response = await client.beta.messages.create(**request_data, betas=["tools-2024-04-04"])
        return response.model_dump()

    async def stream_async(self, request_data: dict):
        client = anthropic.AsyncAnthropic()
        request_data["stream"] = True
        return await client.beta.messages.create(**request_data, betas=["tools-2024-04-04"])
'''


def test_a_claude_client_sending_the_request_its_callers_build_is_found_once(tmp_path):
    found = lint_tree(tmp_path, {"anthropic_client.py": WHOLE_REQUEST}, "anthropic_client.py", {"CL501"})
    assert [f.row for f in found] == [7], found
    assert "`request` sends what its callers pass" in found[0].message


def test_a_whole_request_client_in_a_tree_that_sets_breakpoints_is_quiet(tmp_path):
    files = {"anthropic_client.py": WHOLE_REQUEST,
             "build.py": 'def build(system):\n    return [{"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}]\n'}
    assert lint_tree(tmp_path, files, "anthropic_client.py", {"CL501"}) == []


def test_a_client_not_named_for_claude_sending_a_whole_dict_is_quiet(tmp_path):
    other = WHOLE_REQUEST.replace("class AnthropicClient", "class Transport")
    assert lint_tree(tmp_path, {"transport.py": other}, "transport.py", {"CL501"}) == []


FRAMEWORK_MODEL = '''
from langchain_anthropic import ChatAnthropic
from langchain_core.messages import HumanMessage


class AnthropicLabeler:
    def __init__(self, config):
        self.llm = ChatAnthropic(model="claude-sonnet-4-5", max_tokens=1000)

    async def label(self, prompts):
        batch = [[HumanMessage(content=prompt)] for prompt in prompts]
        return await self.llm.agenerate(batch)
'''


def test_a_framework_claude_model_is_reported_where_the_object_asks_it(tmp_path):
    found = lint_tree(tmp_path, {"labeler.py": FRAMEWORK_MODEL}, "labeler.py", {"CL501"})
    assert [f.row for f in found] == [11], found
    assert "made on line 7" in found[0].message


def test_a_framework_claude_model_never_asked_in_its_class_is_reported_where_it_is_made(tmp_path):
    made_only = FRAMEWORK_MODEL.replace("return await self.llm.agenerate(batch)", "return batch")
    found = lint_tree(tmp_path, {"labeler.py": made_only}, "labeler.py", {"CL501"})
    assert [f.row for f in found] == [7], found


REBUILT_PER_REQUEST = '''
import anthropic


class TranslationPrompt:
    def __init__(self):
        self.messages = []

    def generate_messages(self, instructions, batch):
        self.messages.clear()
        self.messages.append({"role": "user", "content": f"{instructions}\\n{batch}"})


class AnthropicTranslator:
    def __init__(self):
        self.client = anthropic.Anthropic()

    def translate(self, prompt: TranslationPrompt):
        return self.client.messages.create(model="claude-sonnet-4-5", max_tokens=4000, messages=prompt.messages)
'''


def test_a_message_list_emptied_before_each_build_is_no_growing_conversation():
    assert lint(REBUILT_PER_REQUEST, {"CL501"}) == []


def test_a_message_list_appended_to_without_emptying_is_a_conversation():
    growing = REBUILT_PER_REQUEST.replace("        self.messages.clear()\n", "")
    found = lint(growing, {"CL501"})
    assert [f.row for f in found] == [17], found
    assert "grows turn by turn" in found[0].message


def test_a_list_emptied_only_under_a_test_still_grows():
    sometimes = REBUILT_PER_REQUEST.replace("        self.messages.clear()\n", "        if not batch:\n            self.messages.clear()\n")
    assert [f.row for f in lint(sometimes, {"CL501"})] == [19]


# --- CL301: trimming at the context window, and a slice is no budget ------------------------------------------

TRIM_AT_THE_WINDOW = '''
from openai import OpenAI
from tokentrim import trim_prompt_messages

client = OpenAI()


class LLM:
    def __call__(self, messages, tools):
        limit = self.context_length
        if self.count_tokens(messages) > limit:
            messages = trim_prompt_messages(messages, limit, self.count_tokens)
        return client.chat.completions.create(model="gpt-4.1", messages=messages, tools=tools)
'''


def test_a_trimming_helper_called_only_past_the_context_window_is_quiet():
    assert lint(TRIM_AT_THE_WINDOW, {"CL301"}) == []


def test_a_trimming_helper_called_past_a_chosen_budget_is_found():
    chosen = TRIM_AT_THE_WINDOW.replace("limit = self.context_length", "limit = self.history_budget")
    found = lint(chosen, {"CL301"})
    assert [f.row for f in found] == [11], found
    assert "cuts (with trim_prompt_messages())" in found[0].message


SLICE_NAMED_FOR_THE_WINDOW = '''
from openai import OpenAI

client = OpenAI()


def reply(history, config):
    messages = list(history)
    if messages:
        messages = messages[-int(config.max_context_size * 0.6):]
    return client.chat.completions.create(model="gpt-4.1", messages=[{"role": "system", "content": SYSTEM}, *messages])
'''


def test_a_slice_of_the_history_is_no_context_window_budget():
    found = lint(SLICE_NAMED_FOR_THE_WINDOW, {"CL301"})
    assert [f.row for f in found] == [9], found


# --- CL201: tools yielded from a loop over a directory listing ------------------------------------------------

YIELDED_TOOLS = '''
from pathlib import Path


class ToolManager:
    @staticmethod
    def _iter_tool_classes(search_paths):
        for base in search_paths:
            for path in base.rglob("*.py"):
                for tool in load_tools_from_file(path):
                    yield tool

    def tools(self, search_paths):
        return [tool.schema() for tool in self._iter_tool_classes(search_paths)]
'''


def test_tools_yielded_from_an_unsorted_listing_are_found():
    found = lint(YIELDED_TOOLS, {"CL201"})
    assert [f.row for f in found] == [8], found
    assert "the tools _iter_tool_classes() hands back are loaded in a loop over `base.rglob(\"*.py\")`" in found[0].message


def test_tools_yielded_from_a_sorted_listing_are_quiet():
    assert lint(YIELDED_TOOLS.replace('base.rglob("*.py")', 'sorted(base.rglob("*.py"))'), {"CL201"}) == []


def test_a_generator_not_named_for_tools_yielding_files_is_quiet():
    assert lint(YIELDED_TOOLS.replace("_iter_tool_classes", "_iter_documents"), {"CL201"}) == []


# --- CL104: retrieved text added to the request's own system / instructions key -------------------------------

REQUEST_KEYS = '''
def inject_recall(kwargs, query, provider):
    facts = Recall().search(query)
    recall_context = "<memory>" + "\\n".join(facts) + "</memory>"
    if provider == "anthropic":
        existing = kwargs.get("system", "")
        kwargs["system"] = existing + recall_context
    elif "input" in kwargs:
        kwargs["instructions"] = (kwargs.get("instructions") or "") + recall_context
    else:
        messages = kwargs.get("messages", [])
        messages.append({"role": "user", "content": recall_context})
    return kwargs
'''


def test_recalled_text_added_to_the_request_system_key_is_found():
    found = lint(REQUEST_KEYS, {"CL104"})
    assert [f.row for f in found] == [6, 8], found
    assert 'ahead of the conversation `kwargs["messages"]`' in found[0].message
    assert 'ahead of the conversation `kwargs["input"]`' in found[1].message


def test_recalled_text_under_a_key_of_a_dict_with_no_conversation_is_quiet():
    alone = REQUEST_KEYS.replace('    elif "input" in kwargs:', '    elif query:').replace(
        '        messages = kwargs.get("messages", [])\n        messages.append', '        log.append')
    assert lint(alone, {"CL104"}) == []


# --- CL301: two queues merged until both are empty; a reset to the newest turn ----------------------------------

MERGED_QUEUES = '''
from openai import OpenAI

client = OpenAI()


def ask(messages, screenshots):
    merged = []
    while len(messages) > 0 or len(screenshots) > 0:
        if not screenshots or (messages and messages[0].at < screenshots[0].at):
            merged.append(messages.pop(0))
        else:
            shot = screenshots.pop(0)
            shot.text = "Screenshot: " + shot.text
            merged.append(shot)
    return client.chat.completions.create(model="gpt-4.1", messages=[m.to_dict() for m in merged])
'''


def test_two_queues_merged_until_both_are_empty_is_no_cut():
    assert lint(MERGED_QUEUES.replace("screenshots", "extra_messages"), {"CL301"}) == []


def test_a_queue_popped_while_it_is_over_a_size_is_still_a_cut():
    sized = MERGED_QUEUES.replace("screenshots", "extra_messages").replace(
        "while len(messages) > 0 or len(extra_messages) > 0:", "while len(messages) > 20 or len(extra_messages) > 0:").replace(
        "            merged.append(messages.pop(0))", "            messages.pop(0)")
    assert [f.row for f in lint(sized, {"CL301"})] == [10]


RESET_TO_THE_NEWEST_TURN = '''
from openai import OpenAI

client = OpenAI()


class Agent:
    def __init__(self):
        self.messages = [{"role": "system", "content": SYSTEM}]

    def truncate(self):
        last_user = None
        for i in reversed(range(len(self.messages))):
            if self.messages[i]["role"] == "user":
                last_user = i
                break
        if last_user is not None:
            del self.messages[1:last_user]

    def ask(self, text):
        self.messages.append({"role": "user", "content": text})
        if count_tokens(self.messages) > self.threshold:
            self.truncate()
        reply = client.chat.completions.create(model="gpt-4.1", messages=self.messages)
        self.messages.append({"role": "assistant", "content": reply.choices[0].message.content})
'''


def test_a_history_cleared_up_to_the_newest_user_turn_is_a_reset_not_a_window():
    assert lint(RESET_TO_THE_NEWEST_TURN, {"CL301"}) == []
    assert lint(RESET_TO_THE_NEWEST_TURN.replace("del self.messages[1:last_user]", "del self.messages[1:-1]"), {"CL301"}) == []


def test_the_oldest_exchange_deleted_is_still_a_window():
    sliding = RESET_TO_THE_NEWEST_TURN.replace("del self.messages[1:last_user]", "del self.messages[1:3]")
    assert [f.row for f in lint(sliding, {"CL301"})] == [17]


# --- CL103: a count summed over listed files is no prompt material ----------------------------------------------

SUMMED_OVER_LISTING = '''
import glob
import json


def usage(model_dir):
    rows = []
    for path in glob.glob(f"{model_dir}/**/run.jsonl", recursive=True):
        with open(path) as f:
            data = json.load(f)
        total_prompt_tokens = 0
        for step in data["log"]:
            total_prompt_tokens += step["usage"]["prompt_tokens"]
        rows.append(total_prompt_tokens)
    return rows
'''


def test_tokens_summed_over_listed_files_are_no_prompt_material():
    assert lint(SUMMED_OVER_LISTING, {"CL103"}) == []


def test_text_collected_over_listed_files_is_prompt_material():
    collected = SUMMED_OVER_LISTING.replace("total_prompt_tokens = 0", 'prompt_examples = ""').replace(
        'total_prompt_tokens += step["usage"]["prompt_tokens"]', 'prompt_examples += step["prompt"]').replace(
        "rows.append(total_prompt_tokens)", "rows.append(prompt_examples)")
    assert [f.row for f in lint(collected, {"CL103"})] == [7]


# --- one retry test: a loop left as soon as the request succeeds, or one that resends the same request ----------

ADAPTER_IN_LOOPS = """
import anthropic


class ClaudeService:
    def __init__(self, config):
        self.client = anthropic.Anthropic(api_key=config["KEY"])

    def chat_completion(self, messages, system, n=1):
        replies = []
        for _ in range(n):
            for i in range(3):
                try:
                    response = self.client.messages.create(max_tokens=2000, model="claude-sonnet-4-5", system=system,
                                                           messages=messages)
                    break
                except anthropic.APIError:
                    continue
            replies.append(response.content[0].text)
        return replies
"""


def test_a_for_loop_left_once_the_request_succeeds_is_a_retry_whatever_its_variable():
    found = lint(ADAPTER_IN_LOOPS, {"CL501"})
    assert [f.row for f in found] == [13], found
    assert "`chat_completion` sends the history its callers pass" in found[0].message


def test_a_loop_over_a_bare_name_that_grows_the_request_is_a_run_of_steps():
    steps = ADAPTER_IN_LOOPS.replace("            replies.append(response.content[0].text)",
                                     '            messages.append({"role": "assistant", "content": response.content})')
    found = lint(steps, {"CL501"})
    assert [f.row for f in found] == [13], found
    assert "agent loop" in found[0].message or "grows" in found[0].message, found[0].message


def test_a_trimming_helper_under_a_test_that_the_window_is_set_is_found():
    every_request = TRIM_AT_THE_WINDOW.replace("        limit = self.context_length\n        if self.count_tokens(messages) > limit:",
                                               "        if self.context_window and self.max_tokens:").replace(
        "trim_prompt_messages(messages, limit, self.count_tokens)", "trim_prompt_messages(messages, self.context_window - self.max_tokens)")
    found = lint(every_request, {"CL301"})
    assert [f.row for f in found] == [10], found


def test_an_age_window_walked_with_enumerate_into_another_list_is_found():
    from test_check_round19 import SLACK_DM

    walked = SLACK_DM.replace('''    messages += [{"role": "user", "content": m["text"]} for m in messages_in_context]''',
                              '''    kept_messages = []
    for idx, m in enumerate(messages_in_context):
        if m.get("text"):
            kept_messages.append(m)
    messages += [{"role": "user", "content": m["text"]} for m in kept_messages]''')
    found = lint(walked, {"CL301"})
    assert [f.row for f in found] == [11], found


def test_a_claude_client_that_sets_the_messages_of_the_dict_it_sends_is_judged_by_them(tmp_path):
    one_question = WHOLE_REQUEST.replace("    async def request(self, request_data: dict) -> dict:\n",
                                         "    async def request(self, prompt, **request_data) -> dict:\n"
                                         "        request_data[\"messages\"] = [{\"role\": \"user\", \"content\": prompt}]\n")
    found = lint_tree(tmp_path, {"anthropic_client.py": one_question}, "anthropic_client.py", {"CL501"})
    assert [f.row for f in found] == [14], found  # the stream path still sends a whole dict


def test_a_call_of_the_modules_own_forwarding_wrapper_is_not_a_whole_request_client(tmp_path):
    forwarding = """
import anthropic


class ClaudeModel:
    def __init__(self):
        self.client = anthropic.Anthropic()

    def basic_request(self, prompt, **kwargs):
        kwargs["messages"] = [{"role": "user", "content": prompt}]
        return self.client.messages.create(**kwargs)

    def request(self, prompt, **kwargs):
        return self.basic_request(prompt, **kwargs)
"""
    assert lint_tree(tmp_path, {"lm.py": forwarding}, "lm.py", {"CL501"}) == []


# --- mends of a review of the round's change: each shape reproduced on the change first ------------------------

REVIEWED = {
    "age_classbase": ('''
import time


def recent(messages):
    kept = []
    for m in messages:
        if time.time() - m["ts"] < 86400:
            kept.append(m)

    class Holder(kept):
        pass

    return Holder
''', set(), {"CL999"}),
    "del_budget_walk": ('''
import anthropic

client = anthropic.Anthropic()


class Chat:
    def __init__(self):
        self.messages = [{"role": "system", "content": "be brief"}]

    def ask(self, text):
        self.messages.append({"role": "user", "content": text})
        total, cut = 0, 1
        for i in reversed(range(1, len(self.messages))):
            total += len(self.messages[i]["content"])
            if total > 8000:
                cut = i
                break
        del self.messages[1:cut]
        r = client.messages.create(model="claude-sonnet-4-5", max_tokens=512, system="S" * 5000, messages=self.messages[1:])
        self.messages.append({"role": "assistant", "content": r.content[0].text})
        return r
''', {"CL301"}, set()),
    "trim_or": ('''
import anthropic
from tiktoken_trim import trim_messages

client = anthropic.Anthropic()
MAX_TURNS = 10


def chat(history, question, context_window=200000):
    history.append({"role": "user", "content": question})
    if len(history) > MAX_TURNS or len(str(history)) > context_window:
        history = trim_messages(history, MAX_TURNS)
    r = client.messages.create(model="claude-sonnet-4-5", max_tokens=512, system="S" * 5000, messages=history)
    history.append({"role": "assistant", "content": r.content[0].text})
    return r
''', {"CL301"}, set()),
    "chain_ctx": ('''
import anthropic

client = anthropic.Anthropic()


class Bot:
    max_context_messages = 20

    def reply(self, msg):
        messages = []
        node = msg
        while node is not None and len(messages) < self.max_context_messages:
            messages.append({"role": node.role, "content": node.text})
            node = node.parent_msg
        return client.messages.create(model="claude-sonnet-4-5", max_tokens=512, system="S" * 5000, messages=messages[::-1])
''', {"CL301"}, set()),
    "total_text": ('''
import os

import anthropic

client = anthropic.Anthropic()


def build_prompt(folder):
    total_context = ""
    for name in os.listdir(folder):
        with open(os.path.join(folder, name)) as f:
            total_context += f.read()
    return total_context


def ask(question):
    system = "You answer from these documents:\\n" + build_prompt("docs")
    return client.messages.create(model="claude-sonnet-4-5", max_tokens=512, system=system,
                                  messages=[{"role": "user", "content": question}])
''', {"CL103"}, set()),
    "tool_logs": ('''
import os


def iter_tool_logs(log_dir):
    """Lines of the tool-call logs, for a dashboard."""
    for name in os.listdir(log_dir):
        with open(os.path.join(log_dir, name)) as handle:
            yield handle.read()
''', set(), {"CL201"}),
    "steps_state": ('''
import anthropic

client = anthropic.Anthropic()
SYSTEM = "You are an agent. " * 400


def run(state, task, max_steps=10):
    state.messages = [{"role": "user", "content": task}]
    for _ in range(max_steps):
        r = client.messages.create(model="claude-sonnet-4-5", max_tokens=512, system=SYSTEM, messages=state.messages)
        state.messages.append({"role": "assistant", "content": r.content})
        if r.stop_reason != "tool_use":
            return r
        state.messages.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "x", "content": "ok"}]})
''', {"CL501"}, set()),
    "window_isnone": ('''
import anthropic

client = anthropic.Anthropic()


class Bot:
    def __init__(self):
        self.max_context_length = None
        self.messages = []

    def ask(self, text):
        self.messages.append({"role": "user", "content": text})
        if self.max_context_length is not None:
            self.messages = self.messages[-10:]
        r = client.messages.create(model="claude-sonnet-4-5", max_tokens=100, system="S" * 5000, messages=self.messages)
        self.messages.append({"role": "assistant", "content": r.content[0].text})
        return r
''', {"CL301"}, set()),
}


def test_the_reviewed_shapes_give_what_they_should():
    for name, (source, wanted, unwanted) in REVIEWED.items():
        codes = {f.code for f in lint(source, wanted | unwanted | {"CL999"})}
        assert wanted <= codes and not (unwanted & codes) and "CL999" not in codes, (name, codes)
