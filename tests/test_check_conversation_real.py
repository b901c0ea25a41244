"""Requests of one conversation that differ (issue 14): two call sites of one history with other tools or
parameters, an LLM chosen per call from a factory while one conversation object is sent, a hand-off that swaps
the agent inside the loop that keeps the history, a forced tool_choice reset once tools were used. Each shape
is a small file in the form real applications take; each false alarm a demanding user would reject stays quiet.
"""

from __future__ import annotations

import textwrap

from cachelint.check.analysis import Options
from cachelint.check.engine import lint_source


def lint(source: str, codes: set[str], options: Options | None = None):
    source = textwrap.dedent(source).lstrip("\n")
    return [f for f in lint_source(source, "app.py", options=options) if f.code in codes]


def rows(source: str, code: str) -> list[int]:
    return [f.row for f in lint(source, {code})]


# --- two call sites of one history (CL203 / CL402) ---------------------------------------------------------

FOLLOW_UP_WITHOUT_TOOLS = """
    import json
    from openai import OpenAI
    client = OpenAI()
    TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]

    def chat(history, question):
        history.append({"role": "user", "content": question})
        first = client.chat.completions.create(model="gpt-4.1", messages=history, tools=TOOLS)
        message = first.choices[0].message
        if not message.tool_calls:
            return message.content
        history.append(message)
        for call in message.tool_calls:
            history.append({"role": "tool", "tool_call_id": call.id, "content": json.dumps(lookup(call))})
        second = client.chat.completions.create(model="gpt-4.1", messages=history)
        return second.choices[0].message.content
"""


def test_follow_up_after_tool_results_without_tools_is_reported():
    found = lint(FOLLOW_UP_WITHOUT_TOOLS, {"CL203"})
    assert [f.row for f in found] == [15]
    assert "without the tools" in found[0].message and "line 8" in found[0].message
    assert found[0].confidence == "certain"


def test_follow_up_with_the_same_tools_is_quiet():
    same = FOLLOW_UP_WITHOUT_TOOLS.replace('messages=history)\n', 'messages=history, tools=TOOLS, tool_choice="none")\n')
    assert "tool_choice" in same
    assert lint(same, {"CL203", "CL402"}) == []


def test_tools_switched_by_configuration_in_exclusive_branches_is_quiet():
    source = """
        from anthropic import Anthropic
        client = Anthropic()
        TOOLS = [{"name": "search", "input_schema": {"type": "object"}}]
        def step(history, settings):
            if settings.tools_enabled:
                reply = client.messages.create(model="claude-sonnet-4-5", max_tokens=1024, tools=TOOLS, messages=history)
            else:
                reply = client.messages.create(model="claude-sonnet-4-5", max_tokens=1024, messages=history)
            history.append({"role": "assistant", "content": reply.content})
            return reply
    """
    assert lint(source, {"CL203", "CL402"}) == []


def test_paths_that_each_return_their_own_request_are_quiet():
    # a provider adapter: plain text, tool calling and JSON output each send and return on their own path
    source = """
        from openai import AsyncOpenAI
        client = AsyncOpenAI()
        async def invoke(messages, tools=None, schema=None):
            if schema is None and not tools:
                try:
                    reply = await client.chat.completions.create(model="deepseek-chat", messages=messages)
                    return reply.choices[0].message.content
                except TimeoutError as exc:
                    raise RuntimeError("timed out") from exc
            if tools:
                reply = await client.chat.completions.create(model="deepseek-chat", messages=messages, tools=tools)
                return reply.choices[0].message.tool_calls
            reply = await client.chat.completions.create(model="deepseek-chat", messages=messages,
                                                         response_format={"type": "json_object"})
            return reply.choices[0].message.content
    """
    assert lint(source, {"CL203", "CL402"}) == []


def test_two_one_shot_prompts_under_one_name_are_not_a_conversation():
    source = """
        from openai import OpenAI
        client = OpenAI()
        TOOLS = [{"type": "function", "function": {"name": "classify"}}]
        def triage(ticket, reply_text):
            messages = [{"role": "user", "content": ticket}]
            label = client.chat.completions.create(model="gpt-4.1-mini", tools=TOOLS, messages=messages)
            messages = [{"role": "user", "content": reply_text}]
            tone = client.chat.completions.create(model="gpt-4.1", messages=messages)
            return label, tone
    """
    assert lint(source, {"CL203", "CL402"}) == []


def test_the_same_history_sent_to_another_model_is_reported():
    source = """
        from anthropic import Anthropic
        client = Anthropic()
        PLANNER = "claude-opus-4-1"
        CODER = "claude-sonnet-4-5"
        def build(history, task):
            history.append({"role": "user", "content": task})
            plan = client.messages.create(model=PLANNER, max_tokens=2048, messages=history)
            history.append({"role": "assistant", "content": plan.content})
            history.append({"role": "user", "content": "Implement the plan."})
            return client.messages.create(model=CODER, max_tokens=4096, messages=history)
    """
    found = lint(source, {"CL402"})
    assert [f.row for f in found] == [10]
    assert "claude-sonnet-4-5" in found[0].message and "claude-opus-4-1" in found[0].message
    # one model for both: quiet
    assert lint(source.replace("model=CODER", "model=PLANNER"), {"CL402"}) == []


def test_models_looked_up_with_different_keys_are_reported():
    source = """
        from openai import OpenAI
        client = OpenAI()
        class Assistant:
            def __init__(self, models):
                self.models = models
                self.messages = []
            def draft(self):
                return client.chat.completions.create(model=self.models["fast"], messages=self.messages)
            def polish(self):
                return client.chat.completions.create(model=self.models["smart"], messages=self.messages)
    """
    assert rows(source, "CL402") == [10]
    assert rows(source.replace('self.models["smart"]', 'self.models["fast"]'), "CL402") == []


def test_model_names_that_cannot_be_compared_are_quiet():
    # two expressions that may well hold the same model: no evidence of a switch
    source = """
        from openai import OpenAI
        client = OpenAI()
        def ask(history, model, settings):
            first = client.chat.completions.create(model=model, messages=history)
            history.append(first.choices[0].message)
            return client.chat.completions.create(model=settings.model, messages=history)
    """
    assert lint(source, {"CL402"}) == []


def test_anthropic_tool_choice_forced_then_dropped_for_the_same_history_is_reported():
    source = """
        from anthropic import Anthropic
        client = Anthropic()
        TOOLS = [{"name": "extract", "input_schema": {"type": "object"}}]
        def extract_then_explain(history):
            data = client.messages.create(model="claude-sonnet-4-5", max_tokens=1024, tools=TOOLS,
                                          tool_choice={"type": "tool", "name": "extract"}, messages=history)
            history.append({"role": "assistant", "content": data.content})
            history.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": data.content[0].id, "content": "ok"}]})
            return client.messages.create(model="claude-sonnet-4-5", max_tokens=1024, tools=TOOLS, messages=history)
    """
    found = lint(source, {"CL402"})
    assert [f.row for f in found] == [9] and "tool_choice" in found[0].message


def test_fallback_to_another_model_after_an_error_is_quiet():
    source = """
        import openai
        client = openai.OpenAI()
        def ask(history):
            try:
                return client.chat.completions.create(model="gpt-4.1", messages=history)
            except openai.RateLimitError:
                return client.chat.completions.create(model="gpt-4.1-mini", messages=history)
    """
    assert lint(source, {"CL402"}) == []


# --- an LLM chosen per call from a factory while one conversation object is sent (CL402, likely) ---------

def test_llm_from_a_per_agent_factory_inside_one_conversation_is_reported():
    source = """
        from myapp.config import REVIEW_AGENT

        class Debugger(BaseAgent):
            async def pair(self):
                llm = self.get_llm(stream_output=True)
                convo = self.conversation_so_far().template("explain")
                await llm(convo)
                while True:
                    answer = await self.ask_question("What next?")
                    if answer.button == "done":
                        break
                    convo = convo.template("hint", hint=answer.text)
                    llm = self.get_llm(REVIEW_AGENT, stream_output=True)
                    await llm(convo)
                    llm = self.get_llm(stream_output=True)
    """
    found = lint(source, {"CL402"})
    assert [f.row for f in found] == [13]
    assert found[0].confidence == "likely" and "REVIEW_AGENT" in found[0].message


def test_a_fresh_conversation_object_with_another_llm_is_quiet():
    source = """
        class Hunter(BaseAgent):
            async def check(self):
                llm = self.get_llm(LOGS_AGENT)
                convo = self.conversation_so_far()
                notes = await llm(convo)
                convo = Convo(self).template("conclusion", notes=notes)
                llm = self.get_llm()
                return await llm(convo)
    """
    assert lint(source, {"CL402"}) == []


def test_a_method_that_continues_the_callers_conversation_with_another_llm_is_reported():
    source = """
        class Troubleshooter(BaseAgent):
            async def find_solution(self, feedback):
                llm = self.get_llm(BUG_REPORT_AGENT)
                convo = Convo(self).template("iteration", feedback=feedback)
                solution = await llm(convo)
                return await self.discuss(convo, solution)

            async def discuss(self, convo, solution):
                llm = self.get_llm(BREAKDOWN_AGENT)
                while True:
                    reply = await self.ask_question("Happy with it?")
                    if reply.button == "yes":
                        return solution
                    convo.user(reply.text)
                    solution = await llm(convo)
                    convo.assistant(solution)
    """
    found = lint(source, {"CL402"})
    assert [f.row for f in found] == [9] and "find_solution" in found[0].message
    # the caller with the same agent's LLM: one model throughout
    assert lint(source.replace("BUG_REPORT_AGENT", "BREAKDOWN_AGENT"), {"CL402"}) == []


def test_one_llm_per_conversation_chosen_once_is_quiet():
    source = """
        class Writer(BaseAgent):
            async def write(self, spec):
                llm = self.get_llm(WRITER_AGENT, stream_output=True)
                convo = Convo(self).template("spec", spec=spec)
                draft = await llm(convo)
                convo.assistant(draft).user("Shorter, please.")
                llm = self.get_llm(WRITER_AGENT)
                return await llm(convo)
    """
    assert lint(source, {"CL402"}) == []


# --- a hand-off inside the loop that keeps the history (CL202 / CL401) --------------------------------------

HANDOFF = """
    from openai import OpenAI

    class Orchestrator:
        def __init__(self):
            self.client = OpenAI()

        def complete(self, agent, history):
            tools = [schema_of(f) for f in agent.functions]
            params = {"model": agent.model, "messages": [{"role": "system", "content": agent.instructions}, *history],
                      "tools": tools or None}
            return self.client.chat.completions.create(**params)

        def run(self, agent, history):
            active = agent
            while True:
                message = self.complete(active, history).choices[0].message
                history.append(message)
                if not message.tool_calls:
                    return history
                results, handed_to = self.call_tools(message.tool_calls, active)
                history.extend(results)
                if handed_to is not None:
                    active = handed_to
"""


def test_hand_off_that_swaps_the_agent_inside_the_loop_is_reported():
    found = lint(HANDOFF, {"CL202", "CL401"})
    assert [(f.code, f.row) for f in found] == [("CL202", 23)]
    assert "`active`" in found[0].message and "tools" in found[0].message


def test_hand_off_of_an_agent_whose_model_only_is_used_is_a_param_change():
    model_only = HANDOFF.replace('"tools": tools or None', '"tools": TOOLS')
    found = lint(model_only, {"CL202", "CL401"})
    assert [(f.code, f.row) for f in found] == [("CL401", 23)]
    assert "`model`" in found[0].message


def test_agent_fixed_for_the_whole_run_is_quiet():
    fixed = HANDOFF.replace("                if handed_to is not None:\n                    active = handed_to\n", "")
    assert "handed_to is not None" not in fixed
    assert lint(fixed, {"CL202", "CL401"}) == []


def test_a_new_history_per_agent_is_quiet():
    # each agent starts its own conversation: the history is not the one kept across the swap
    fresh = HANDOFF.replace("message = self.complete(active, history)", "message = self.complete(active, [history[-1]])")
    assert lint(fresh, {"CL202", "CL401"}) == []


# --- a forced tool_choice reset once tools were used (CL401, likely) ----------------------------------------

def test_tool_choice_reset_after_the_first_tool_call_is_reported():
    source = """
        import dataclasses
        from myframework.settings import ModelSettings

        def settings_for_turn(agent, tracker, settings: ModelSettings) -> ModelSettings:
            if agent.reset_tool_choice and tracker.has_used_tools(agent):
                return dataclasses.replace(settings, tool_choice=None)
            return settings
    """
    found = lint(source, {"CL401"})
    assert [f.row for f in found] == [6] and found[0].confidence == "likely"


def test_tool_choice_forced_on_the_first_turn_and_relaxed_in_the_loop_is_reported():
    source = """
        from anthropic import Anthropic
        client = Anthropic()
        TOOLS = [{"name": "search", "input_schema": {"type": "object"}}]
        def run(history):
            tool_choice = {"type": "any"}
            while True:
                reply = client.messages.create(model="claude-sonnet-4-5", max_tokens=1024, tools=TOOLS,
                                               tool_choice=tool_choice, messages=history)
                history.append({"role": "assistant", "content": reply.content})
                if reply.stop_reason != "tool_use":
                    return reply
                history.append({"role": "user", "content": run_tools(reply)})
                tool_choice = {"type": "auto"}
    """
    found = lint(source, {"CL401"})
    assert [f.row for f in found] == [13] and "before the conversation loop" in found[0].message
    # the same value set again each turn: nothing changes
    assert lint(source.replace('{"type": "any"}', '{"type": "auto"}'), {"CL401"}) == []


def test_tool_choice_dropped_when_there_are_no_tools_is_quiet():
    source = """
        def request_options(tools, options):
            if not tools:
                options.tool_choice = None
            return options
    """
    assert lint(source, {"CL401"}) == []


# --- call-site recognition: a project wrapper named in call-patterns -----------------------------------------

def test_call_patterns_make_a_project_wrapper_a_request():
    source = """
        from mylib.llm import chat
        TOOLS = [{"type": "function", "function": {"name": "lookup"}}]
        def answer(history):
            first = chat(model="gpt-4.1", tools=TOOLS, messages=history)
            history.append(first)
            return chat(model="gpt-4.1", messages=history)
    """
    assert lint(source, {"CL203"}) == []  # an unknown function: not a request
    found = lint(source, {"CL203"}, Options(call_patterns={"mylib.llm.chat": "openai-chat"}))
    assert [f.row for f in found] == [6] and found[0].confidence == "certain"


# --- the app's own LLM wrapper: a tool loop's wrap-up request sent without tools (CL203) ----------------------

WRAPPER_TOOL_LOOP = """
    import logging

    class ResearchAgent:
        def research_step(self, step_query: str) -> str:
            messages = [{"role": "system", "content": STEP_PROMPT}, {"role": "user", "content": step_query}]
            for iteration in range(self.max_iterations):
                response = self.llm.gen(model=self.model_id, messages=messages, tools=self.tools if self.tools else None)
                parsed = self.handler.parse_response(response)
                if not parsed.requires_tool_call:
                    return parsed.content
                messages, last_empty = self._execute_tools(parsed.tool_calls, messages)
            messages.append({"role": "user", "content": "Please summarize your findings so far."})
            response = self.llm.gen(model=self.model_id, messages=messages, tools=None)
            return self._extract_text(response)
"""


def test_a_wrappers_wrap_up_request_without_tools_is_reported():
    """`self.llm.gen` is no SDK anyone recognizes; twice with one history, once with tools, it is a conversation.
    The history rebuilt by a helper that returns it with a flag (`messages, done = step(messages)`) is the same."""
    found = lint(WRAPPER_TOOL_LOOP, {"CL203"})
    assert [f.row for f in found] == [textwrap.dedent(WRAPPER_TOOL_LOOP).lstrip("\n").splitlines().index(
        "        response = self.llm.gen(model=self.model_id, messages=messages, tools=None)") + 1]
    assert found[0].confidence == "likely" and "without the tools" in found[0].message


def test_a_wrapper_that_sends_the_same_tools_every_time_is_quiet():
    assert lint(WRAPPER_TOOL_LOOP.replace("tools=None)", "tools=self.tools if self.tools else None, tool_choice=\"none\")"),
                {"CL203"}) == []


def test_a_wrapper_called_with_two_fresh_histories_is_quiet():
    source = """
        class Summarizer:
            def run(self, doc: str, question: str):
                messages = [{"role": "user", "content": doc}]
                first = self.llm.gen(model=self.model_id, messages=messages, tools=self.tools)
                messages = [{"role": "user", "content": question}]
                return first, self.llm.gen(model=self.model_id, messages=messages)
        """
    assert lint(source, {"CL203"}) == []
