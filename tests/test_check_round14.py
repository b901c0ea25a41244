"""Classes of code found missed on holdout18 (round 14), each written the way apps write it, with the nearby
shapes that must stay quiet. The repositories are not copied: each case is a small file of its own."""

from __future__ import annotations

import textwrap

from cachelint.check.engine import lint_source


def lint(source: str, codes: set[str] | None = None, filename: str = "app.py"):
    source = textwrap.dedent(source).lstrip("\n")
    return [f for f in lint_source(source, filename) if codes is None or f.code in codes]


# --- CL301: the latest n turns, counted from the end, become the history ------------------------------------

ROUNDS_KEPT = """
    class RoundLimiter:
        async def limit(self, query):
            max_rounds = query.config["max_rounds"]
            kept = []
            rounds = 0
            for message in query.messages[::-1]:
                if rounds < max_rounds:
                    kept.append(message)
                    if message.role == "user":
                        rounds += 1
                else:
                    break
            query.messages = kept[::-1]
            return query
"""


def test_the_latest_rounds_collected_backwards_and_written_back_are_found():
    found = lint(ROUNDS_KEPT, {"CL301"})
    assert [f.row for f in found] == [6]
    assert "query.messages" in found[0].message


ROUNDS_KEPT_REVERSED = """
    def trim_after_turn(conversation, max_rounds=10):
        newest_first = []
        user_rounds = 0
        for message in reversed(conversation.messages):
            if user_rounds >= max_rounds:
                break
            newest_first.append(message)
            if message.role == "user":
                user_rounds += 1
        kept = list(reversed(newest_first))[-100:]
        conversation.messages = kept
"""


def test_a_reversed_walk_kept_through_a_second_name_is_found():
    assert [f.row for f in lint(ROUNDS_KEPT_REVERSED, {"CL301"})] == [4]


ROUNDS_READ_FOR_A_TITLE = """
    def title_context(conversation, max_rounds=3):
        newest_first = []
        rounds = 0
        for message in reversed(conversation.messages):
            if rounds >= max_rounds:
                break
            newest_first.append(message)
            rounds += 1
        return summarize_for_title(newest_first[::-1])
"""


def test_the_latest_rounds_read_for_a_side_task_stay_quiet():
    # nothing is written back and the function is no trimmer: the conversation itself is left whole
    assert lint(ROUNDS_READ_FOR_A_TITLE, {"CL301"}) == []


TURNS_SCALED = """
    class Truncator:
        def truncate_by_turns(self, messages, keep_turns, drop_turns=1):
            system, chat_messages = self.split_system(messages)
            if len(chat_messages) // 2 <= keep_turns:
                return messages
            keep = keep_turns - drop_turns + 1
            window = chat_messages[-keep * 2:]
            return self.join(system, window)
"""


def test_the_last_turns_sliced_with_a_negated_count_times_two_are_found():
    assert [f.row for f in lint(TURNS_SCALED, {"CL301"})] == [7]


TAGGED_TEXT_HISTORY = """
    from .inference import query_model

    class ResearchAgent:
        def __init__(self):
            self.history = []
            self.max_hist_len = 15

        def step(self, phase, feedback, expires=None):
            history_text = "\\n".join(entry[1] for entry in self.history)
            reply = query_model(system_prompt=self.role(), prompt=f"History: {history_text}\\nPhase: {phase}")
            self.history.append((expires, f"Phase: {phase}, Feedback: {feedback}, Your response: {reply}"))
            if len(self.history) >= self.max_hist_len:
                self.history.pop(0)
            return reply
"""


def test_a_history_of_tagged_turn_texts_cut_at_the_front_is_found():
    # each entry is (expiry, the turn's text): a turn with a tag, not a record of the code
    assert [f.row for f in lint(TAGGED_TEXT_HISTORY, {"CL301"})] == [13]


RECORD_HISTORY = """
    class ToolGuard:
        def __init__(self):
            self.call_history = []

        def record(self, name, args_hash, ok):
            self.call_history.append((name, args_hash, ok))
            if len(self.call_history) > 20:
                self.call_history.pop(0)
"""


def test_a_history_of_records_cut_at_the_front_stays_quiet():
    assert lint(RECORD_HISTORY, {"CL301"}) == []


# --- CL201: tools loaded in a loop over a directory listing ----------------------------------------------------

TOOLS_FROM_FOLDER = """
    import os
    from pathlib import Path

    def load_tools(agent):
        for file in Path(agent.tools_folder).iterdir():
            if file.suffix != ".py":
                continue
            for tool in load_module_tools(file):
                add_tool(agent, tool)

    def load_schemas(agent):
        entries = [e for e in os.listdir(agent.schemas_folder) if not e.startswith(".")]
        for entry in entries:
            for tool in tools_from_openapi(os.path.join(agent.schemas_folder, entry)):
                agent.tools.append(tool)
"""


def test_tools_loaded_in_a_loop_over_a_listing_are_found():
    found = lint(TOOLS_FROM_FOLDER, {"CL201"})
    assert [f.row for f in found] == [5, 12]
    assert "iterate sorted(" in found[0].message


TOOLS_FROM_SORTED_FOLDER = """
    import os
    from pathlib import Path

    def load_tools(agent):
        for file in sorted(Path(agent.tools_folder).iterdir()):
            for tool in load_module_tools(file):
                add_tool(agent, tool)

    def load_schemas(agent):
        entries = os.listdir(agent.schemas_folder)
        entries.sort()
        for entry in entries:
            agent.tools.append(tool_from_openapi(entry))

    def load_notes(agent):
        for entry in os.listdir(agent.notes_folder):
            agent.notes.append(entry)

    def _get_available_tools(folder):
        tools = []
        for file in Path(folder).iterdir():
            tools.append(file.stem)
        return tools

    def replay(self, record_dir):
        for name in os.listdir(record_dir):
            self.tool_call_cache.append(load_record(name))
"""


def test_tools_from_a_sorted_listing_and_other_things_listed_stay_quiet():
    assert lint(TOOLS_FROM_SORTED_FOLDER, {"CL201"}) == []


# --- CL501: an Anthropic adapter that builds its request in a helper and passes it with ** -------------------

ADAPTER_WITH_BUILDER = """
    from anthropic import Anthropic

    def drop_unset(values):
        return {k: v for k, v in values.items() if v is not None}

    class ClaudeClient:
        def __init__(self):
            self.client = Anthropic()

        def _request(self, messages, model, tools=None, max_tokens=None):
            converted = [self._convert(m) for m in messages if m["role"] != "system"]
            system = [m["content"] for m in messages if m["role"] == "system"]
            kwargs = dict(messages=converted, system=system, model=model, tools=tools, max_tokens=max_tokens or 4096)
            return drop_unset(kwargs)

        def chat_completion(self, messages, model, tools=None, max_tokens=None):
            kwargs = self._request(messages=messages, model=model, tools=tools, max_tokens=max_tokens)
            return self.client.messages.create(**kwargs)
"""


def test_an_adapter_whose_payload_a_helper_builds_and_filters_is_found():
    found = lint(ADAPTER_WITH_BUILDER, {"CL501"})
    assert [f.row for f in found] == [18]
    assert "chat_completion" in found[0].message


ADAPTER_WITH_BREAKPOINTS = ADAPTER_WITH_BUILDER.replace(
    "converted = [self._convert(m) for m in messages if m[\"role\"] != \"system\"]",
    "converted = [self._convert(m) for m in messages if m[\"role\"] != \"system\"]\n"
    "            converted[-1][\"content\"][-1][\"cache_control\"] = {\"type\": \"ephemeral\"}")


def test_the_same_adapter_with_a_breakpoint_stays_quiet():
    assert lint(ADAPTER_WITH_BREAKPOINTS, {"CL501"}) == []


# --- CL104: a system prompt handed to a function of the tree that sends it ------------------------------------

FORM = " ".join(f"Criterion {i}: judge the soundness, clarity and significance of the work and say why." for i in range(80))

SENDER = """
from openai import OpenAI

def query_model(model_str, prompt, system_prompt, temp=None):
    client = OpenAI()
    messages = [{"role": "system", "content": system_prompt}, {"role": "user", "content": prompt}]
    return client.chat.completions.create(model=model_str, messages=messages, temperature=temp)
"""

REVIEWER = '''
from inference import *

def review(plan, reviewer_type=None, extra=""):
    form = """FORM""" + extra
    if reviewer_type is None:
        reviewer_type = ""
    sys = ("You are a reviewer of machine learning papers. "
           f"Be critical. {reviewer_type}\\n") + form
    return query_model(model_str="gpt-4o", system_prompt=sys, prompt=plan)
'''


def _tree(tmp_path, reviewer: str):
    from cachelint.check.engine import ALL_CODES, lint_file

    (tmp_path / "inference.py").write_text(SENDER.lstrip("\n"))
    (tmp_path / "agents.py").write_text(reviewer.replace("FORM", FORM).lstrip("\n"))
    return [f for f in lint_file(tmp_path / "agents.py", str(tmp_path / "agents.py"), ALL_CODES, None) if f.code == "CL104"]


def test_a_value_ahead_of_a_long_form_in_a_system_prompt_sent_by_a_star_imported_function_is_found(tmp_path):
    found = _tree(tmp_path, REVIEWER)
    assert [f.row for f in found] == [8]
    assert "reviewer_type" in found[0].message


def test_the_same_value_after_the_form_stays_quiet(tmp_path):
    after = REVIEWER.replace('("You are a reviewer of machine learning papers. "\n           f"Be critical. {reviewer_type}\\n") + form',
                             'form + f"\\nBe critical. {reviewer_type}"')
    assert after != REVIEWER
    assert _tree(tmp_path, after) == []


# --- CL401: a side request of the same history with another output type (pydantic-ai style) ---------------

PLANNER = """
class Planner:
    def run(self, task, planner_history):
        while True:
            reply = self.agent.run(f"Do: {task}", message_history=planner_history, result_type=StepResult)
            planner_history = reply.all_messages()
            if not reply.data.done:
                continue
            check = self.agent.run("Is the task complete?", message_history=planner_history, result_type=PlanDone)
            if check.data.complete:
                return planner_history
"""


def test_a_side_question_with_another_result_type_on_the_history_is_found():
    found = lint(PLANNER, {"CL401"})
    assert [f.row for f in found] == [8]
    assert "result_type=PlanDone" in found[0].message


def test_the_same_result_type_on_every_request_stays_quiet():
    assert lint(PLANNER.replace("result_type=PlanDone", "result_type=StepResult"), {"CL401"}) == []


# --- CL202: an adapter that sends the tools it is handed whenever there are any ------------------------------

ADAPTER_TOOLS_IF_ANY = """
from openai import AsyncOpenAI

class OpenAIProvider:
    def __init__(self):
        self.client = AsyncOpenAI()

    async def query(self, payloads, tools):
        if tools:
            tool_list = tools.describe_openai_style()
            if tool_list:
                payloads["tools"] = tool_list
        return await self.client.chat.completions.create(**payloads)

    async def run(self, conversation):
        for step in range(10):
            request = self.next_request(step)
            reply = await self.query({"model": "gpt-4.1", "messages": conversation}, request.func_tool)
            conversation.append(reply.choices[0].message)
"""


def test_an_adapter_sending_the_tools_it_is_handed_stays_quiet():
    # whether tools go out is the caller's choice; the adapter only sends what it is given (a false alarm on AstrBot)
    assert lint(ADAPTER_TOOLS_IF_ANY, {"CL202"}) == []


def test_an_adapter_whose_caller_here_hands_tools_on_some_steps_only_is_found():
    some_steps = ADAPTER_TOOLS_IF_ANY.replace("request.func_tool)", "request.func_tool if step < 9 else None)")
    assert some_steps != ADAPTER_TOOLS_IF_ANY
    assert [f.row for f in lint(some_steps, {"CL202"})] == [11]
