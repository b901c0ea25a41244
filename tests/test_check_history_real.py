"""History rewritten in the shapes real apps use (CL301, issue 14): a prefix re-rendered from current state on every
request, and a rendered window that slides. Each class of code is a small file in the shape apps take, with the
near misses that must stay quiet beside it."""

from __future__ import annotations

import textwrap

from cachelint.check.engine import lint_source


def findings(source: str, code: str = "CL301"):
    source = textwrap.dedent(source).lstrip("\n")
    return [f for f in lint_source(source, "app.py") if f.code == code]


def rows(source: str) -> list[int]:
    return [f.row for f in findings(source)]


def row_of(source: str, needle: str) -> int:
    return next(i for i, line in enumerate(textwrap.dedent(source).lstrip("\n").splitlines(), 1) if needle in line)


# --- instructions re-rendered from state that the agent loop updates ---------------------------------------

AGENT_LOOP = """
    import json
    from openai import OpenAI

    class Runner:
        def __init__(self):
            self.client = OpenAI()

        def complete(self, persona, history, state):
            system = persona.prompt(state) if callable(persona.prompt) else persona.prompt
            messages = [{"role": "system", "content": system}] + history
            return self.client.chat.completions.create(model="gpt-4o", messages=messages, tools=persona.tools)

        def run(self, persona, history, state):
            while True:
                reply = self.complete(persona, history, state=state).choices[0].message
                history.append(reply.model_dump())
                if not reply.tool_calls:
                    return history
                for call in reply.tool_calls:
                    outcome = persona.call(call.function.name, json.loads(call.function.arguments))
                    history.append({"role": "tool", "tool_call_id": call.id, "content": outcome.text})
                    {mutation}
"""


def test_callable_instructions_rendered_from_a_context_the_tools_update():
    found = findings(AGENT_LOOP.replace("{mutation}", "state.update(outcome.state)"))
    assert [f.row for f in found] == [9]
    assert found[0].confidence == "likely"
    assert "persona.prompt(state)" in found[0].message and "line 22" in found[0].message


def test_a_key_of_the_context_set_by_a_tool_result():
    assert rows(AGENT_LOOP.replace("{mutation}", 'state["last_tool"] = call.function.name')) == [9]


def test_context_left_alone_in_the_loop_is_quiet():
    # the state is read, never changed between the requests: the system prompt renders the same each turn
    assert rows(AGENT_LOOP.replace("{mutation}", "print(outcome.state)")) == []


def test_template_rendered_from_state_in_the_same_loop():
    source = """
        import anthropic
        client = anthropic.Anthropic()
        SYSTEM = "You are a shop assistant. Cart: {cart}. " + "Policy text. " * 400

        def chat(history, cart):
            while True:
                history.append({"role": "user", "content": input()})
                reply = client.messages.create(model="claude-sonnet-4-5", max_tokens=512,
                                               system=SYSTEM.format(**cart), messages=history)
                history.append({"role": "assistant", "content": reply.content})
                cart["items"] = reply.content[0].text.count("added")
    """
    assert rows(source) == [9]


def test_batch_of_one_shot_requests_with_per_item_state_is_quiet():
    # each request is a conversation of its own: no history grows in the loop (per-request data is CL104's)
    source = """
        import anthropic
        client = anthropic.Anthropic()
        SYSTEM = "Classify the ticket for {team}. " + "Rules. " * 400

        def classify(tickets, ctx):
            labels = []
            for ticket in tickets:
                ctx["team"] = ticket.team
                reply = client.messages.create(model="claude-sonnet-4-5", max_tokens=16, system=SYSTEM.format(**ctx),
                                               messages=[{"role": "user", "content": ticket.text}])
                labels.append(reply.content[0].text)
            return labels
    """
    assert rows(source) == []


def test_state_updated_only_before_the_conversation_is_quiet():
    source = """
        import anthropic
        client = anthropic.Anthropic()
        SYSTEM = "Profile: {name}. " + "Guide. " * 400

        def chat(history, profile, extra):
            profile.update(extra)
            while True:
                history.append({"role": "user", "content": input()})
                reply = client.messages.create(model="claude-sonnet-4-5", max_tokens=512,
                                               system=SYSTEM.format(**profile), messages=history)
                history.append({"role": "assistant", "content": reply.content})
    """
    assert rows(source) == []


def test_system_text_rebuilt_at_the_top_of_each_turn_is_quiet():
    # `text += ...` on a name bound anew in the loop builds the same text for every request
    source = """
        import litellm

        def respond(agent, history):
            while True:
                text = agent.base_prompt
                for extra in agent.extras:
                    text += "\\n\\n" + extra
                rendered = expand_blocks(agent, text)
                reply = litellm.completion(model="gpt-4o", messages=[{"role": "system", "content": rendered}] + history)
                history.append(reply.choices[0].message.model_dump())
    """
    assert rows(source) == []


# --- every past message re-rendered with the object's latest state ------------------------------------------

CONVERTER = """
    from typing import Any
    import anthropic

    class ClaudeProvider:
        def __init__(self, thinking: bool):
            self.client = anthropic.Anthropic()
            self.thinking = thinking
            self.signature_blocks: list[Any] = []
            self.cache_marker = {"type": "ephemeral"}

        def convert(self, messages):
            out = []
            for message in messages:
                role = message.get("role")
                text = message.get("content") or ""
                if role == "assistant" and self.thinking and self.signature_blocks:
                    blocks = [*{state}, {"type": "text", "text": text}]
                    out.append({"role": "assistant", "content": blocks})
                else:
                    out.append({"role": role, "content": text})
            return out

        def call(self, messages):
            reply = self.client.messages.create(model="claude-sonnet-4-5", max_tokens=2048, messages=self.convert(messages),
                                                thinking={"type": "enabled", "budget_tokens": 1024})
            self.signature_blocks = [b for b in reply.content if b.type == "thinking"]
            return reply
"""


def test_past_assistant_messages_rebuilt_with_the_latest_thinking_blocks():
    found = findings(CONVERTER.replace("{state}", "self.signature_blocks"))
    assert [f.row for f in found] == [17]
    assert found[0].confidence == "likely" and "line 26" in found[0].message


def test_state_fixed_at_construction_is_quiet():
    # the marker is set once in __init__: every request renders the past messages alike
    assert rows(CONVERTER.replace("{state}", "[self.cache_marker]")) == []


def test_state_given_to_the_newest_message_only_is_quiet():
    source = """
        import anthropic

        class Chat:
            def __init__(self):
                self.client = anthropic.Anthropic()
                self.screen = ""

            def convert(self, history):
                out = []
                for i, message in enumerate(history):
                    if i == len(history) - 1:
                        out.append({"role": "user", "content": message["content"] + self.screen})
                    else:
                        out.append({"role": message["role"], "content": message["content"]})
                return out

            def step(self, history):
                self.screen = capture()
                return self.client.messages.create(model="claude-sonnet-4-5", max_tokens=256, messages=self.convert(history))
    """
    assert rows(source) == []


# --- a rendered window: the first item, an omission marker and the latest n ---------------------------------

WINDOW = """
    class StepLog:
        def __init__(self, limit):
            self.limit = limit
            self.steps_history = []

        def render(self) -> str:
            if len(self.steps_history) <= self.limit:
                return "\\n".join(step.describe() for step in self.steps_history)
            lines = [{head}]
            lines.extend([step.describe() for step in self.steps_history[-(self.limit - 1):]])
            return "\\n".join(lines)
"""


def test_first_item_marker_and_latest_steps():
    source = WINDOW.replace("{head}", 'self.steps_history[0].describe(), f"[{len(self.steps_history) - self.limit} earlier steps omitted]"')
    found = findings(source)
    assert [f.row for f in found] == [10]
    assert found[0].confidence == "likely"


def test_first_item_and_latest_steps_without_marker():
    assert rows(WINDOW.replace("{head}", "self.steps_history[0].describe()")) == [10]


def test_reading_the_latest_steps_for_a_check_is_quiet():
    source = """
        def looping(steps_history) -> bool:
            recent = [step.action for step in steps_history[-4:]]
            return len(set(recent)) == 1

        def show(steps_history):
            print("\\n".join(step.describe() for step in steps_history[-5:]))
    """
    assert rows(source) == []


# --- compaction by summary at a small budget ----------------------------------------------------------------

SUMMARY = """
    from typing import Any


    class HistorySummary:
        def __init__(self, llm, max_tokens=1024):
            self.llm = llm
            self.max_tokens = max_tokens

        def too_big(self, messages: list[dict[str, Any]]) -> bool:
            return sum(len(m["content"]) // 4 for m in messages) > self.max_tokens

        def summarize(self, messages):
            text = self.llm.complete("Summarize this conversation:\\n" + "\\n".join(m["content"] for m in messages))
            return [{"role": "user", "content": text}, {"role": "assistant", "content": "Ok."}]
"""

CODER = """
    from summary import HistorySummary
    from settings import Model


    class Coder:
        def __init__(self, llm, name, info):
            self.model = Model(name, info)
            self.done_messages = []
            self.summarizer = HistorySummary(llm, {budget})
            self.summary = None

        def start_summary(self):
            if self.summarizer.too_big(self.done_messages):
                self.summary = self.summarizer.summarize(list(self.done_messages))

        def end_summary(self):
            if self.summary is not None:
                self.done_messages = self.summary
                self.summary = None
"""

MODEL = """
    class Model:
        def __init__(self, name, info):
            self.name = name
            self.history_tokens = 1024
            window = info.get("max_input_tokens") or 0
            self.history_tokens = min(max(window // 16, 1024), {cap})
"""


def summary_findings(tmp_path, budget: str, cap: str = "8192"):
    (tmp_path / "summary.py").write_text(textwrap.dedent(SUMMARY).lstrip())
    (tmp_path / "settings.py").write_text(textwrap.dedent(MODEL.replace("{cap}", cap)).lstrip())
    app = tmp_path / "coder.py"
    app.write_text(textwrap.dedent(CODER.replace("{budget}", budget)).lstrip())
    return [f for f in lint_source(app.read_text(), str(app)) if f.code == "CL301"]


def test_summary_at_the_summarizer_default_budget(tmp_path):
    found = summary_findings(tmp_path, "")
    assert [f.row for f in found] == [18]  # where the history is replaced, not where the summary is kept
    assert "passes 1024 tokens" in found[0].message and found[0].confidence == "likely"


def test_summary_at_a_model_budget_bounded_in_another_module(tmp_path):
    found = summary_findings(tmp_path, "max_tokens=self.model.history_tokens")
    assert [f.row for f in found] == [18]
    assert "at most 8192 tokens" in found[0].message


def test_summary_near_the_context_window_is_quiet(tmp_path):
    # compaction rarely and in one large step is what the rule recommends
    assert summary_findings(tmp_path, "max_tokens=self.model.history_tokens", cap="150_000") == []
    assert summary_findings(tmp_path, "160_000") == []


def test_summary_at_a_budget_the_code_does_not_bound_is_quiet(tmp_path):
    assert summary_findings(tmp_path, "int(self.model.context_window * 0.8)") == []


# --- a window of the latest messages: sent on, or only looked at ---------------------------------------------


def test_window_sent_as_the_next_requests_history():
    source = """
        def next_request(client, history, keep):
            window = history[-keep:]
            return client.chat.completions.create(model="gpt-4o", messages=window)
    """
    assert rows(source) == [2]


def test_window_stored_on_the_agent():
    source = """
        class Operator:
            def step(self, screenshot):
                self.history_images.append(screenshot)
                if len(self.history_images) > self.history_n:
                    self.history_images = self.history_images[-self.history_n:]
    """
    assert rows(source) == [5]


def test_windows_that_are_only_looked_at_are_quiet():
    source = """
        def show(console, messages, limit):
            if len(messages) > limit:
                console.print(f"{len(messages) - limit} earlier messages not shown")
                messages = messages[-limit:]
            for message in messages:
                console.print(message.content)

        def search_query(history, turns):
            recent = history[-turns:]
            return " ".join(m.content[:300] for m in recent if m.role == "user")

        def shell_tail(history):
            history = history[-9000:].strip()
            return history

        def without_system(log, system_messages):
            log_tail = log[len(system_messages):]
            return log_tail
    """
    assert rows(source) == []


# --- the leading system message moved into the system parameter: a format conversion, no truncation ------------

ADAPTER_SPLIT = """
    from anthropic import AsyncAnthropic

    class ClaudeModel:
        def __init__(self):
            self.client = AsyncAnthropic()

        async def __call__(self, messages, tools=None):
            kwargs = {"model": "claude-sonnet-4-5", "max_tokens": 4096}
            if tools:
                kwargs["tools"] = tools
            if messages[0]["role"] == "system":
                kwargs["system"] = messages[0]["content"]
                {split}
            kwargs["messages"] = messages
            return await self.client.messages.create(**kwargs)
"""


def test_system_message_split_off_by_slice_or_pop_is_no_truncation():
    assert rows(ADAPTER_SPLIT.replace("{split}", "messages = messages[1:]")) == []
    assert rows(ADAPTER_SPLIT.replace("{split}", "messages.pop(0)")) == []


def test_the_same_slice_without_the_system_test_is_a_truncation():
    source = ADAPTER_SPLIT.replace('if messages[0]["role"] == "system":', "if len(messages) > 40:").replace("{split}", "messages = messages[-40:]")
    assert rows(source) == [13]


# --- a memory class that stores runs (turns) and drops the oldest past a cap --------------------------------

RUN_MEMORY = """
    class ConversationMemory:
        def __init__(self, driver, max_runs=None):
            self.{attr} = []
            self.driver = driver
            self.max_runs = max_runs

        def add_run(self, run):
            self.{attr}.append(run)
            if self.max_runs:
                while len(self.{attr}) > self.max_runs:
                    self.{attr}.pop(0)
            self.driver.store(self.{attr})
"""


def test_stored_runs_or_rounds_capped_from_the_front_are_a_sliding_window():
    assert rows(RUN_MEMORY.replace("{attr}", "runs")) == [11]
    assert rows(RUN_MEMORY.replace("{attr}", "rounds")) == [11]


def test_a_capped_queue_of_other_things_is_quiet():
    assert rows(RUN_MEMORY.replace("{attr}", "jobs")) == []


# --- a memory that caps its messages: a fixed cap slides every turn once reached; halving does not -------------

CAPPED_MEMORY = """
    from pydantic import BaseModel, Field

    class Memory(BaseModel):
        messages: list = Field(default_factory=list)
        max_messages: int = Field(default=100)

        def add_message(self, message) -> None:
            self.messages.append(message)
            if len(self.messages) > self.max_messages:
                self.messages = self.messages[-self.max_messages:]
"""


def test_a_memory_trimmed_to_its_cap_on_every_add_slides_every_turn():
    assert rows(CAPPED_MEMORY) == [10]


HALVING = """
    class AgentStream:
        def _trim_messages(self):
            turns = self._identify_complete_turns()
            if len(turns) > self.max_context_turns:
                removed_count = len(turns) // 2
                keep_count = len(turns) - removed_count
                turns = turns[-keep_count:]
            self.messages = [m for turn in turns for m in turn["messages"]]

        def _drop_older_half(self):
            self.messages = self.messages[len(self.messages) // 2:]
"""


def test_dropping_the_older_half_at_a_limit_is_one_large_step_and_quiet():
    assert rows(HALVING) == []


def test_a_trim_that_runs_only_after_the_provider_refused_an_overflow_is_quiet():
    recovery = '''
        class AgentStream:
            def _aggressive_trim_for_overflow(self) -> bool:
                turns = self._identify_complete_turns()
                if len(turns) > 5:
                    kept_turns = turns[-5:]
                    new_messages = []
                    for turn in kept_turns:
                        new_messages.extend(turn["messages"])
                    self.messages = new_messages
                    return True
                return False
    '''
    assert rows(recovery) == []
    assert rows(recovery.replace("_aggressive_trim_for_overflow", "_trim_every_turn")) == [5]


# --- a function registered with a framework that injects `litellm` as a global (no import in the module) ---------

INJECTED = """
    from functionz.core.framework import func

    @func.register_function(imports=["litellm"])
    def react_agent(input_text, tools):
        system_prompt = "You solve tasks step by step. Calls made so far: {{history}}"
        chat_context = [{"role": "system", "content": system_prompt.replace("{{history}}", "None")},
                        {"role": "user", "content": input_text}]
        calls = []
        for _ in range(5):
            history_str = "\\n".join(f"- {c['name']}: {c['output']}" for c in calls) or "None"
            chat_context[0]["content"] = system_prompt.replace("{{history}}", history_str)
            response = litellm.completion(model="gpt-4o", messages=chat_context, tools=tools)
            message = response.choices[0].message
            chat_context.append(message)
            calls.append({"name": message.tool_calls[0].function.name, "output": run(message)})
"""


def test_the_system_message_rewritten_each_step_through_an_injected_litellm_is_reported():
    found = findings(INJECTED)
    assert [f.row for f in found] == [11] and "litellm.completion() on line 12" in found[0].message


def test_a_list_named_history_that_keeps_records_not_messages_is_quiet():
    records = """
        class AgentStream:
            def _record_tool_result(self, tool_name, args, success):
                self.tool_failure_history.append((tool_name, self._hash_args(args), success))
                if len(self.tool_failure_history) > 50:
                    self.tool_failure_history = self.tool_failure_history[-50:]
    """
    assert rows(records) == []
    turns = records.replace("(tool_name, self._hash_args(args), success)", '("user", f"{tool_name} failed")')
    assert rows(turns) == [5]  # (role, text) tuples are messages


# --- only the latest N screenshots kept: each new one removes an old one, a window that slides every step ------

SCREENSHOT_CAP = """
    class Caller:
        def _trim_images(self):
            image_count = sum(1 for m in self.message_history if is_image_message(m))
            if image_count <= self.max_history_images:
                return
            removed = 0
            images_to_remove = image_count - self.max_history_images
            i = 1
            while i < len(self.message_history) and removed < images_to_remove:
                if is_image_message(self.message_history[i]):
                    self.message_history.pop(i)
                    removed += 1
                else:
                    i += 1

    def flush(agent, max_images):
        img_count = 0
        for i in range(len(agent.messages) - 1, -1, -1):
            for j in range(len(agent.messages[i]["content"])):
                if "image" in agent.messages[i]["content"][j].get("type", ""):
                    img_count += 1
                    if img_count > max_images:
                        del agent.messages[i]["content"][j]
"""


def test_screenshots_beyond_a_fixed_count_removed_every_step_are_reported():
    assert rows(SCREENSHOT_CAP) == [11, 23]


def test_messages_popped_to_fit_a_token_budget_are_left_to_the_budget_rules():
    budget = SCREENSHOT_CAP.replace("images_to_remove = image_count - self.max_history_images", "images_to_remove = count_tokens(self.message_history) - self.max_context_tokens")
    budget = budget.replace("if img_count > max_images:", "if img_count > max_tokens_in_window:")
    assert rows(budget) == []


def test_an_injected_prompt_removed_inside_a_run_bounded_by_max_steps_is_quiet():
    source = """
        class Agent:
            def run(self):
                step = 0
                while step < self.max_steps:
                    step += 1
                    prompt_insert_idx = len(self.messages)
                    self.messages.append({"role": "user", "content": "Answer now."})
                    self._call_llm_stream()
                    if prompt_insert_idx < len(self.messages) and self.messages[prompt_insert_idx].get("role") == "user":
                        self.messages.pop(prompt_insert_idx)
    """
    assert rows(source) == []


# --- a history rendered with the latest N turns in full and the older ones abbreviated ---------------------------

WINDOW_SPLIT = """
    class Asker:
        def render(self, dialogue_turns):
            conv = []
            for turn in dialogue_turns[:-4]:
                conv.append(f"You: {turn.user}\\nExpert: (omitted)")
            for turn in dialogue_turns[-4:]:
                conv.append(f"You: {turn.user}\\nExpert: {turn.agent}")
            return "\\n".join(conv)

        def gen_conv_history_string(self, conversation_turns):
            conv_history = []
            total_turns = len(conversation_turns)
            for i, turn in enumerate(conversation_turns):
                if i >= total_turns - 4:
                    conv_history.append(f"{turn.role}: {turn.utterance}")
                else:
                    conv_history.append(f"{turn.role}: {turn.claim}")
            return "\\n".join(conv_history)
"""


def test_older_turns_rendered_differently_from_the_latest_few_are_reported():
    assert rows(WINDOW_SPLIT) == [4, 14]


def test_only_the_newest_turn_rendered_differently_is_quiet():
    newest = WINDOW_SPLIT.replace("[:-4]", "[:-1]").replace("[-4:]", "[-1:]").replace("total_turns - 4", "total_turns - 1")
    assert rows(newest) == []


def test_the_system_message_of_a_running_conversation_swapped_for_another_is_reported():
    source = """
        def repair(chat_gpt, error_message):
            for attempt in range(3):
                chat_gpt.messages = [message if message.role != "system" else Message(content=FIX_SYSTEM_PROMPT, role="system")
                                     for message in chat_gpt.messages]
                error_message = continuous_llm_calls(chat_gpt, content=FIX_PROMPT.format(error=error_message))
    """
    assert rows(source) == [3]
    unchanged = source.replace('Message(content=FIX_SYSTEM_PROMPT, role="system")', "message")
    assert rows(unchanged) == []


# --- conversions done alike on every request (precision on real code: pipecat, PraisonAI, instructor) ----------

def test_system_message_taken_out_after_a_guard_clause_is_not_a_cut():
    # pipecat's adapters: `if messages[0].get("role") != "system": return None`, then the first message is popped
    # into the provider's system parameter: the same on every request
    assert rows("""
        class Adapter:
            def extract_system(self, messages):
                if not messages:
                    return None
                if messages[0].get("role") != "system":
                    return None
                content = messages[0].get("content", "")
                messages.pop(0)
                return content
    """) == []


def test_a_guard_that_leaves_on_a_system_message_makes_the_pop_a_cut():
    assert rows("""
        class Adapter:
            def trim(self, messages):
                if messages[0].get("role") == "system":
                    return None
                messages.pop(0)
                return messages
    """) == [5]


def test_a_copy_edited_by_a_test_of_its_own_content_is_stable():
    # `isinstance(content, str) and len(content) > 1000` reads the message only: each one renders the same every turn
    assert rows("""
        def to_api(messages):
            out = []
            for msg in messages:
                content = msg.get("content", "")
                if msg.get("role") == "tool" and isinstance(content, str) and len(content) > 1000:
                    short = msg.copy()
                    short["content"] = content[:300]
                    out.append(short)
                    continue
                out.append(msg)
            return out
    """) == []


def test_a_copy_edited_by_its_position_is_still_found():
    assert rows("""
        def to_api(messages, keep):
            out = []
            for i, msg in enumerate(messages):
                if msg.get("role") == "tool" and i < len(messages) - keep:
                    short = msg.copy()
                    short["content"] = "(omitted)"
                    out.append(short)
                    continue
                out.append(msg)
            return out
    """) == [6]


def test_the_items_just_added_read_back_are_not_a_window():
    # semantic-kernel: `messages=override_history.messages[-len(results):]` reads back the function results just
    # appended, to merge them for the caller; the history sent stays append-only
    source = """
        from openai import AsyncOpenAI
        class ThreadActions:
            @classmethod
            async def invoke(cls, agent, chat_history, thread):
                override_history = chat_history
                if thread is not None:
                    override_history = ChatHistory(messages=[*thread.history.messages, *chat_history.messages])
                for attempt in range(agent.max_attempts):
                    response = await cls._get_response(agent=agent, chat_history=override_history)
                    if override_history is not chat_history:
                        override_history.add_message(message=response)
                    results = await cls._invoke_calls(response, chat_history=override_history)
                    merged = cls._merge_results(messages=override_history.messages[-{tail}:], name=agent.name)
                    yield merged
    """
    assert rows(source.replace("{tail}", "len(results)")) == []
    assert rows(source.replace("{tail}", "agent.keep")) == [13]


def test_the_system_message_put_first_is_the_layout_not_an_insertion():
    # ragflow's chat models: `history.insert(0, {"role": "system", ...})` when it does not start with one
    source = """
        from openai import OpenAI
        class Chat:
            def __init__(self):
                self.client = OpenAI()
            def chat_streamly(self, system, history):
                if system and history and history[0].get("role") != "system":
                    history.insert({at}, {{"role": "{role}", "content": system}})
                return self.client.chat.completions.create(model="gpt-4o", messages=history)
    """
    assert rows(source.format(at=0, role="system")) == []
    assert rows(source.format(at=1, role="user")) == [7]


# --- windows converted item by item, windows counted in turns, windows added to the request ------------------

WINDOW_CONVERTED = """
    from openai import OpenAI
    client = OpenAI()

    class Canvas:
        def get_history(self, window_size):
            convs = []
            for role, obj in self.history[window_size * -2:]:
                convs.append({"role": role, "content": obj.get("content", "")})
            return convs

        def run(self, question):
            messages = [{"role": "system", "content": PROMPT}, *self.get_history(12), {"role": "user", "content": question}]
            return client.chat.completions.create(model="gpt-4.1", messages=messages)
"""


def test_a_window_counted_in_turns_and_converted_item_by_item_is_found():
    """`history[window_size * -2:]` (two messages a turn) iterated into the list the function returns."""
    assert rows(WINDOW_CONVERTED) == [row_of(WINDOW_CONVERTED, "for role, obj in self.history")]


def test_a_window_rendered_by_a_comprehension_that_is_returned_is_found():
    source = """
        class Memory:
            def get_messages(self, limit=None):
                limit = self._memory_size if limit is None else limit
                return [f"{'### QUERY' if m['is_user'] else '### ANSWER'}\\n {m['message']}" for m in self._messages[-limit:]]
        """
    assert rows(source) == [row_of(source, "for m in self._messages[-limit:]")]


def test_a_loop_over_the_latest_turns_that_only_looks_is_quiet():
    source = """
        class Memory:
            def last_user_asked_twice(self):
                seen = []
                for m in self.history[-6:]:
                    if m["role"] == "user":
                        print(m["content"])
                return len(seen) > 1

            def recent_text(self):
                return any("error" in m["content"] for m in self.history[-4:])
        """
    assert rows(source) == []


def test_a_window_added_to_the_request_is_found():
    source = """
        import litellm

        class LLM:
            MAX_CHAT_MESSAGES = 10

            def get_response(self, chat_messages, system_prompt, last_prompt):
                messages = [{"role": "system", "content": system_prompt}] if system_prompt else []
                if chat_messages:
                    if len(chat_messages) > self.MAX_CHAT_MESSAGES:
                        chat_messages = chat_messages[-self.MAX_CHAT_MESSAGES:]
                    messages += chat_messages
                messages.append({"role": "user", "content": last_prompt})
                return litellm.completion(model=self.model, messages=messages)
        """
    assert rows(source) == [row_of(source, "chat_messages = chat_messages[-self.MAX_CHAT_MESSAGES:]")]


def test_the_oldest_message_dropped_in_a_loop_until_the_prompt_fits_is_found():
    source = """
        class ChatFlow:
            def __call__(self, question, chat_history=None):
                chat_history = chat_history or []
                while len(chat_history) > 0:
                    token_count = self.prompty.estimate_token_count(question=question, chat_history=chat_history)
                    if token_count > self.max_total_token:
                        chat_history = chat_history[1:]
                    else:
                        break
                return self.prompty(question=question, chat_history=chat_history)
        """
    assert rows(source) == [row_of(source, "chat_history = chat_history[1:]")]


def test_one_slice_past_the_system_message_is_no_cut():
    source = """
        def send(client, messages):
            rest = messages[1:]
            messages = messages[1:]
            return client.chat.completions.create(model="gpt-4.1", messages=[SYSTEM, *messages])
        """
    assert rows(source) == []


# --- a trim method the app's user calls by hand, not a window that slides every turn ----------------------

MEMORY = """
    class Memory:
        def __init__(self):
            self.chat_history = []

        def add(self, role, content):
            self.chat_history.append({"role": role, "content": content})

        def prune_history(self, keep_last):
            self.chat_history = self.chat_history[-keep_last:]
"""

TURN = """
    def turn(memory, client, text):
        memory.add("user", text)
        memory.prune_history(20)
        return client.chat.completions.create(model="gpt-4o", messages=memory.chat_history)
"""


def trim_findings(tmp_path, *, called_per_turn: bool):
    memory = tmp_path / "memory.py"
    memory.write_text(textwrap.dedent(MEMORY).lstrip())
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_memory.py").write_text("def test_prune(memory):\n    memory.prune_history(keep_last=3)\n")
    if called_per_turn:
        (tmp_path / "agent.py").write_text(textwrap.dedent(TURN).lstrip())
    return [f for f in lint_source(memory.read_text(), str(memory)) if f.code == "CL301"]


def test_a_trim_method_only_the_tests_call_is_not_a_window(tmp_path):
    assert trim_findings(tmp_path, called_per_turn=False) == []


def test_a_trim_method_the_app_calls_every_turn_is_a_window(tmp_path):
    found = trim_findings(tmp_path, called_per_turn=True)
    assert [f.row for f in found] == [9] and "keeps only the latest messages" in found[0].message


# --- a module-level function nothing in the tree calls ---------------------------------------------------------

HELPER = """
    def format_prompt(messages):
        return "\\n".join(f"{m['role']}: {m['content']}" for m in messages)


    def format_prompt_max_length(messages, max_length):
        prompt = format_prompt(messages)
        if len(prompt) > max_length and len(messages) > 6:
            prompt = format_prompt(messages[:3] + messages[-3:])
        return prompt
"""


def helper_findings(tmp_path, *, caller: str | None):
    helper = tmp_path / "helper.py"
    helper.write_text(textwrap.dedent(HELPER).lstrip())
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_helper.py").write_text(
        "from helper import format_prompt_max_length\n\ndef test_cut():\n    assert format_prompt_max_length([], 10) == ''\n")
    if caller is not None:
        (tmp_path / "provider.py").write_text(caller)
    return [f for f in lint_source(helper.read_text(), str(helper)) if f.code == "CL301"]


def test_a_cut_in_a_function_nothing_but_the_tests_call_is_not_reported(tmp_path):
    assert helper_findings(tmp_path, caller=None) == []


def test_a_cut_in_a_function_another_module_calls_is_reported(tmp_path):
    caller = "from helper import format_prompt_max_length\n\ndef ask(llm, messages):\n    return llm(format_prompt_max_length(messages, 4000))\n"
    found = helper_findings(tmp_path, caller=caller)
    assert [f.row for f in found] == [8]


def test_a_project_inside_a_folder_named_tests_still_finds_the_callers(tmp_path):
    project = tmp_path / "tests" / "proj"
    project.mkdir(parents=True)
    caller = "from helper import format_prompt_max_length\n\ndef ask(llm, messages):\n    return llm(format_prompt_max_length(messages, 4000))\n"
    found = helper_findings(project, caller=caller)
    assert [f.row for f in found] == [8]  # the folders above the project say nothing about its modules
