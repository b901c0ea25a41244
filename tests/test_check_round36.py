"""Round 36: what a spent set (holdout40) taught. Each class is written here in its own words, with the shape
beside it that must stay quiet."""

from __future__ import annotations

import subprocess
import sys

from _lint import lint, lint_tree

# --- CL203: the app's own client, called with the tools in the loop and without them after it -----------------------

TOOLS_THEN_NONE_THROUGH_OWN_CLIENT = '''
    from app.llm import get_llm_client


    async def chart_insights(conversation, tools):
        client = get_llm_client()
        rounds = 0
        while rounds < 3:
            reply = await client.chat(model="m", messages=conversation, tools=tools)
            if not reply.tool_calls:
                break
            conversation.append(reply.message)
            conversation.append({"role": "tool", "content": run(reply.tool_calls)})
            rounds += 1
        conversation.append({"role": "user", "content": "Now give the final analysis as JSON."})
        final = await client.chat(model="m", messages=conversation, format="json")
        return final
'''

ONE_CALL_OF_OWN_CLIENT = '''
    from app.llm import get_llm_client


    async def title(conversation, tools):
        client = get_llm_client()
        return await client.chat(model="m", messages=conversation, tools=tools)
'''


def test_a_wrapper_sent_without_tools_after_its_tool_loop_is_reported_in_a_module_with_no_sdk():
    found = lint(TOOLS_THEN_NONE_THROUGH_OWN_CLIENT, {"CL203"})
    assert [f.row for f in found] == [15]
    assert "without the tools" in found[0].message


def test_one_call_of_the_apps_own_client_is_no_pair():
    assert lint(ONE_CALL_OF_OWN_CLIENT, {"CL203"}) == []


# --- CL501: a Claude adapter that sends what it is handed, from a closure or a private method -----------------------

CLAUDE_WRAPPER_CLOSURE = '''
    import anthropic


    class ClaudeWrapper:
        def __init__(self, model):
            self.client = anthropic.Anthropic()
            self.model = model

        def convert_messages(self, messages):
            return [{"role": m.role, "content": [{"type": "text", "text": m.content}]} for m in messages]

        def generate(self, messages):
            converted_messages = self.convert_messages(messages)

            def api_call():
                kwargs = {"messages": converted_messages, "model": self.model, "max_tokens": 1024}
                return self.client.messages.create(**kwargs)

            return retry(api_call)
'''

AGENT = '''
    from wrappers import ClaudeWrapper


    def play(env, steps):
        client = ClaudeWrapper("claude-sonnet-4-5")
        history = [Message("system", env.instructions)]
        for _ in range(steps):
            history.append(Message("user", env.observe()))
            history.append(Message("assistant", client.generate(history)))
'''


def test_a_claude_adapter_that_hands_its_request_to_a_retry_helper_is_the_methods(tmp_path):
    found = lint_tree(tmp_path, {"wrappers.py": CLAUDE_WRAPPER_CLOSURE, "agent.py": AGENT}, "wrappers.py", {"CL501"})
    assert [f.row for f in found] == [16]  # the request's dict
    assert "`generate` sends what its callers pass to Anthropic" in found[0].message


def test_no_caller_in_the_tree_no_adapter(tmp_path):
    assert lint_tree(tmp_path, {"wrappers.py": CLAUDE_WRAPPER_CLOSURE}, "wrappers.py", {"CL501"}) == []


def test_a_breakpoint_anywhere_in_the_tree_quiets_the_adapter(tmp_path):
    marked = AGENT + '\n    CACHE = {"cache_control": {"type": "ephemeral"}}\n'
    assert lint_tree(tmp_path, {"wrappers.py": CLAUDE_WRAPPER_CLOSURE, "agent.py": marked}, "wrappers.py", {"CL501"}) == []


# --- CL301: a deque of turns cut from the front past a count ---------------------------------------------------------

MEMORY_POPPED_PAST_CAPACITY = '''
    from collections import deque
    from openai import OpenAI

    client = OpenAI()


    class ShortTermMemory:
        def __init__(self, capacity=5, consolidation=2):
            self.capacity = capacity
            self.consolidation = consolidation
            self.short_term_memory = deque()

        def add(self, entry):
            self.short_term_memory.append(entry)
            if len(self.short_term_memory) > self.capacity + self.consolidation and self.consolidation:
                self.short_term_memory.popleft()
                self.consolidate()
            elif len(self.short_term_memory) > self.capacity:
                self.short_term_memory.popleft()

        def ask(self, question):
            messages = [{"role": "user", "content": e} for e in self.short_term_memory]
            messages.append({"role": "user", "content": question})
            return client.chat.completions.create(model="gpt-4o", messages=messages)
'''

WORK_QUEUE = '''
    from collections import deque
    from openai import OpenAI

    client = OpenAI()


    class Pending:
        def __init__(self):
            self.pending_messages = deque()
            self.history = deque()

        def next(self):
            msg = self.pending_messages.popleft()
            return client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": msg}])

        def drain(self):
            while self.history:
                self.history.popleft()

        def rate(self, now):
            while self.history and now - self.history[0] > 60:
                self.history.popleft()
'''


def test_a_deque_of_turns_popped_past_its_capacity_is_a_window_in_each_branch():
    # two branches cut under two settings: readers of autogen's token-limited context label each one
    found = lint(MEMORY_POPPED_PAST_CAPACITY, {"CL301"})
    assert [f.row for f in found] == [16, 19]
    assert "removes the oldest messages from the conversation `self.short_term_memory`" in found[0].message


def test_a_deque_used_as_a_queue_is_no_window():
    assert lint(WORK_QUEUE, {"CL301"}) == []


# --- CL301: a part kept on the newest entries only, and the newest labelled apart -----------------------------------

EVENTS_RENDERED = '''
    from collections import deque


    class HistoryPromptBuilder:
        def __init__(self, max_image_history=1, max_cot_history=1):
            self.max_image_history = max_image_history
            self.max_cot_history = max_cot_history
            self._events = deque()

        def get_prompt(self):
            images_needed = self.max_image_history
            for event in reversed(self._events):
                if event["type"] == "observation":
                    if images_needed > 0 and event.get("image") is not None:
                        event["include_image"] = True
                        images_needed -= 1
                    else:
                        event["include_image"] = False
            reasoning_needed = self.max_cot_history
            for event in reversed(self._events):
                if event["type"] == "action":
                    if reasoning_needed > 0 and event.get("reasoning") is not None:
                        reasoning_needed -= 1
                    else:
                        event["reasoning"] = None
            messages = []
            for idx, event in enumerate(self._events):
                parts = []
                if idx == len(self._events) - 1:
                    parts.append("Current Observation:")
                else:
                    parts.append("Observation:")
                parts.append(event["text"])
                messages.append({"role": "user", "content": "\\n".join(parts)})
            return messages
'''

KEPT_AS_SENT = '''
    class HistoryPromptBuilder:
        def get_prompt(self):
            needed = self.max_text
            kept = []
            for event in reversed(self._events):
                if needed > 0:
                    kept.append(event)
                    needed -= 1
                else:
                    break
            messages = []
            for idx, event in enumerate(reversed(kept)):
                parts = ["Observation:", event["text"]]
                if idx == len(kept) - 1:
                    parts.append("(newest)")
                messages.append({"role": "user", "content": "\\n".join(parts)})
            return messages
'''


def test_a_part_counted_down_to_the_newest_entries_and_the_newest_labelled_apart_are_rewrites():
    found = lint(EVENTS_RENDERED, {"CL301"})
    assert [f.row for f in found] == [18, 25, 29]
    assert "takes `event[\"include_image\"]` off every entry of `self._events` but the newest few" in found[0].message
    assert "takes `event[\"reasoning\"]` off" in found[1].message
    assert "the newest message of `self._events` is rendered unlike the earlier ones" in found[2].message


def test_entries_kept_whole_and_a_note_after_the_newest_are_no_rewrite():
    assert lint(KEPT_AS_SENT, {"CL301"}) == []


# --- CL103: a manual of Markdown files read in the listing's order -------------------------------------------------

MANUAL = '''
    import os


    def generate_manual(folder_path) -> str:
        tool_folders = [f for f in os.listdir(folder_path) if os.path.isdir(os.path.join(folder_path, f))]
        manual = ""
        for folder in tool_folders:
            agent_path = os.path.join(folder_path, folder, "agent.md")
            if os.path.exists(agent_path):
                with open(agent_path) as f:
                    manual += f.read()
        return manual
'''


def test_markdown_documents_read_in_listing_order_into_a_returned_text_are_prompt_material():
    found = lint(MANUAL, {"CL103"})
    assert [f.row for f in found] == [5]
    assert "collected into `manual`" in found[0].message


def test_a_manual_grown_with_plus_equals_and_returned_is_prompt_text_not_a_tool_list():
    assert lint(MANUAL, {"CL201"}) == []  # `manual = ""`, `manual += f.read()`, `return manual`: CL103's, once


def test_a_sorted_listing_of_the_manual_is_quiet():
    assert lint(MANUAL.replace("in os.listdir(folder_path)", "in sorted(os.listdir(folder_path))"), {"CL103"}) == []


# --- CL101: a clock in a short system prompt written line by line, sent elsewhere ----------------------------------

SHORT_LINES = '''
    from datetime import datetime


    class Command:
        def command_from_json(self, data, prompt):
            system_prompt = [
                "The conversation is in the context of a clinical encounter between "
                f"patient ({self.cache.demographic__str__(False)}) and licensed healthcare provider.",
                "",
                "It is important to follow the requested changes without never make things up.",
                f"Please, note that now is {datetime.now().isoformat()}.",
            ]
            user_prompt = ["Here is the original data:", data, "Apply the following changes:", prompt]
            return self.chatter.single_conversation(system_prompt, user_prompt)
'''

LONG_LINES = SHORT_LINES.replace(
    '"It is important to follow the requested changes without never make things up.",',
    ", ".join('"Rule %d: follow the requested changes and never make things up, keep the data unchanged rather than invent."' % i
              for i in range(30)) + ",")


def test_a_clock_in_a_short_system_prompt_written_as_lines_caches_nothing_to_break():
    assert lint(SHORT_LINES, {"CL101"}) == []


def test_a_clock_in_a_long_system_prompt_written_as_lines_is_reported():
    found = lint(LONG_LINES, {"CL101"})
    assert [f.row for f in found] == [11]
    assert "`datetime.now().isoformat()` reaches the system prompt" in found[0].message


# --- CL301: the latest lines a tool returns are a tool result, not a window on the conversation -------------------

TOOL_RETURNS_RECENT_LINES = '''
    from strands import Agent, tool


    def make_transcript_tool(call_id):
        @tool
        def current_meeting_transcript(lines: int = 20) -> str:
            transcript_lines = fetch_transcript(call_id).split("\\n")
            recent = transcript_lines[-lines:] if len(transcript_lines) > lines else transcript_lines
            return "\\n".join(recent)

        return current_meeting_transcript


    class Assistant:
        def trim(self):
            self.history = self.history[-20:]
            return self.agent(messages=self.history)
'''


def test_a_window_inside_a_tool_is_its_result_and_one_on_the_objects_history_is_not():
    found = lint(TOOL_RETURNS_RECENT_LINES, {"CL301"})
    assert [f.row for f in found] == [16]  # self.history = self.history[-20:]


# --- CL501: callers that hand the adapter a builder's fresh list, written in the call ----------------------------

ADAPTER = '''
import anthropic


def get_response(messages):
    system = messages[0]["content"]
    client = anthropic.Anthropic()
    return client.messages.create(model="claude-sonnet-4-5", max_tokens=1024, system=system, messages=messages[1:])
'''

EXPLAIN = '''
from engine import get_response


def get_messages(commandline):
    messages = [{"role": "system", "content": "Explain the command."}, {"role": "user", "content": commandline}]
    return messages


def explain(commandline):
    return get_response(get_messages(commandline))
'''

CHAT = '''
from engine import get_response


def chat(history, text):
    history.append({"role": "user", "content": text})
    history.append({"role": "assistant", "content": get_response(history)})
'''


def test_an_adapter_whose_callers_pass_a_builders_fresh_list_in_the_call_asks_one_question_each(tmp_path):
    assert lint_tree(tmp_path, {"engine.py": ADAPTER, "explain.py": EXPLAIN}, "engine.py", {"CL501"}) == []


def test_an_adapter_a_chat_loop_also_calls_is_reported(tmp_path):
    found = lint_tree(tmp_path, {"engine.py": ADAPTER, "explain.py": EXPLAIN, "chat.py": CHAT}, "engine.py", {"CL501"})
    assert [f.row for f in found] == [7]


# --- the review's probes ---------------------------------------------------------------------------------------

def test_a_manual_is_a_noun_and_markdown_alone_makes_no_prompt():
    source = '''
    import json
    import os


    def load_manual_overrides(folder):
        overrides = []
        for name in os.listdir(folder):
            with open(os.path.join(folder, name)) as f:
                overrides.append(json.load(f))
        return overrides


    def build_changelog(folder) -> str:
        entries = []
        for name in os.listdir(folder):
            if name.endswith(".md"):
                with open(os.path.join(folder, name)) as f:
                    entries.append(f.read())
        return "\\n".join(entries)
    '''
    assert lint(source, {"CL103"}) == []


def test_a_view_that_folds_its_older_items_renders_no_prompt():
    source = '''
    class ChatView:
        def refresh(self):
            expanded = 3
            for message in reversed(self.messages):
                if expanded > 0:
                    message.widget.expanded = True
                    expanded -= 1
                else:
                    message.collapsed = False
    '''
    assert lint(source, {"CL301"}) == []


def test_a_cap_written_as_equality_or_the_other_way_round_is_a_cap():
    for test in ("len(self.short_term_memory) == self.capacity", "self.capacity < len(self.short_term_memory)"):
        source = MEMORY_POPPED_PAST_CAPACITY.replace(
            "len(self.short_term_memory) > self.capacity + self.consolidation and self.consolidation", test)
        assert [f.row for f in lint(source, {"CL301"})] == [16, 19], test


CLAUDE_SENDERS = '''
    import anthropic
    from datetime import datetime


    class ClaudeWrapper:
        def __init__(self):
            self.client = anthropic.Anthropic()

        def generate(self, messages):
            def api_call():
                return self.client.messages.create(model="claude-sonnet-4-5", max_tokens=1024, messages=messages)
            return retry(api_call)


    class ClaudeBot:
        def __init__(self):
            self.client = anthropic.Anthropic()

        def chat_dated(self, messages):
            system = f"Today is {datetime.now()}. " + messages.pop(0)["content"]
            return self.client.messages.create(model="claude-sonnet-4-5", max_tokens=1024, system=system, messages=messages)
'''

PLAYER = '''
    from bots import ClaudeBot, ClaudeWrapper


    def play(history):
        ClaudeWrapper().generate(history)
        ClaudeBot().chat_dated(history)
'''


def test_a_closure_reading_the_methods_own_messages_is_the_methods_request_and_a_dated_system_prompt_is_its_own(tmp_path):
    found = lint_tree(tmp_path, {"bots.py": CLAUDE_SENDERS, "player.py": PLAYER}, "bots.py", {"CL501"})
    assert [f.row for f in found] == [11]
    assert "`generate` sends what its callers pass" in found[0].message


# --- bad input: a .gitignore line git itself skips, a config glob that cannot compile -----------------------------

def _check(tree, *args):
    return subprocess.run([sys.executable, "-m", "cachelint", "check", str(tree), "--no-cache", *args],
                          capture_output=True, text=True)


def test_a_gitignore_line_with_a_reversed_range_is_skipped_and_the_rest_still_apply(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / ".gitignore").write_text("videos/[Sub] Show [AVC-8bit 1080p].srt\nbuild/\n")
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "gen.py").write_text("def broken(:\n")
    (tmp_path / "app.py").write_text("import os\n")
    result = _check(tmp_path)
    assert result.returncode == 0, result.stderr
    assert "internal error" not in result.stderr and "CL999" not in result.stdout  # build/ stays ignored


def test_a_config_glob_with_a_reversed_range_is_a_clear_error(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.cachelint]\nexclude = ["[C-8]x"]\n')
    (tmp_path / "app.py").write_text("import os\n")
    result = _check(tmp_path)
    assert result.returncode == 2
    assert "invalid glob '[C-8]x' in 'exclude'" in result.stderr and "internal error" not in result.stderr
