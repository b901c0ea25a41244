"""History cut in framework context / memory classes (CL301, issue 14 round 2): the windows and budgets that agent
frameworks put in the class that owns the conversation, reported where the cut is made. Each test is a small
module in the shape such classes take, with the near misses that must stay quiet beside it."""

from __future__ import annotations

import textwrap

from cachelint.check.engine import lint_source


def rows(source: str, code: str = "CL301") -> list[int]:
    source = textwrap.dedent(source).lstrip("\n")
    return [f.row for f in lint_source(source, "context.py") if f.code == code]


TOKEN_BUDGET = """
    class TokenBudgetContext:
        def __init__(self, counter, max_tokens=None):
            self._items = []
            self._counter = counter
            self._max_tokens = max_tokens

        def add(self, item):
            self._items.append(item)

        def view(self):
            items = list(self._items)
            while self._counter.count(items) > self._max_tokens and items:
                {cut}
            return [{"role": i.role, "content": i.text} for i in items]
"""


def test_messages_popped_from_the_middle_until_the_budget_fits():
    cut = "mid = len(items) // 2\n                items.pop(mid)"
    assert rows(TOKEN_BUDGET.replace("{cut}", cut)) == [14]


def test_middle_index_written_inline():
    assert rows(TOKEN_BUDGET.replace("{cut}", "items.pop(len(items) // 2)")) == [13]


def test_newest_popped_until_it_fits_is_quiet():
    # taking back the last message (the one just added) leaves the cached prefix alone
    assert rows(TOKEN_BUDGET.replace("{cut}", "items.pop()")) == []
    assert rows(TOKEN_BUDGET.replace("{cut}", "items.pop(-1)")) == []


def test_a_work_queue_split_in_half_is_quiet():
    source = """
        def schedule(jobs, workers):
            pending = list(jobs)
            while len(pending) > workers:
                pending.pop(len(pending) // 2)
            return pending
    """
    assert rows(source) == []


RUN_STORE = """
    class Session:
        def __init__(self):
            self.runs = []

        def history(self, last_n_runs=None):
            runs = [r for r in self.runs if r.status == "done"]
            if last_n_runs is not None:
                runs = runs[-last_n_runs:]
            messages = []
            for run in runs:
                {use}
            return messages
"""


def test_window_of_stored_runs_whose_messages_become_the_history():
    assert rows(RUN_STORE.replace("{use}", "messages.extend(run.messages)")) == [8]


def test_window_of_runs_only_counted_is_quiet():
    assert rows(RUN_STORE.replace("{use}", "print(len(run.messages))")) == []


def test_leading_tool_result_dropped_after_a_window_is_one_finding():
    source = """
        class Memory:
            def __init__(self, size):
                self._messages = []
                self._size = size

            def get_messages(self):
                messages = self._messages[-self._size:]
                while messages and messages[0]["role"] == "tool":
                    messages.pop(0)
                return messages
    """
    assert rows(source) == [7]


def test_leading_system_message_kept_and_oldest_dropped_still_reported():
    source = """
        class Memory:
            def __init__(self, limit):
                self.messages = []
                self.limit = limit

            def add(self, message):
                self.messages.append(message)
                while len(self.messages) > self.limit:
                    self.messages.pop(1)
    """
    assert rows(source) == [9]


# --- CL401: a side request of the conversation in another output format --------------------------------------

AGENT = """
    class Agent:
        def __init__(self, client, context, tools):
            self.client = client
            self.context = context
            self.tools = tools

        async def step(self):
            messages = await self.context.get_messages()
            return await self.client.create(messages, tools=self.tools)

        async def {side}(self):
            messages = self.system + await self.context.get_messages()
            return await self.client.create(messages, {params})
"""


def test_reflection_sent_with_tool_choice_none():
    source = AGENT.replace("{side}", "reflect").replace("{params}", 'tool_choice="none"')
    assert rows(source, "CL401") == [13]


def test_retry_decision_asked_with_a_json_output():
    source = AGENT.replace("{side}", "should_retry").replace("{params}", "json_output=RetryDecision")
    assert rows(source, "CL401") == [13]


def test_same_tools_and_format_on_both_requests_is_quiet():
    source = AGENT.replace("{side}", "again").replace("{params}", "tools=self.tools")
    assert rows(source, "CL401") == []


def test_a_summary_of_another_store_is_quiet():
    # the side question has its own short conversation: nothing of the turns' prefix to lose
    source = AGENT.replace("{side}", "title").replace("messages = self.system + await self.context.get_messages()",
                                                       'messages = [{"role": "user", "content": self.first_line}]')
    assert rows(source.replace("{params}", "json_output=Title"), "CL401") == []


def test_provider_adapter_choosing_the_format_from_its_argument_is_quiet():
    source = """
        class ChatModel:
            async def ainvoke(self, output_format=None):
                api_messages = [m.to_dict() for m in self._history]
                if output_format is None:
                    return await self.client.create(api_messages, tools=self.tools)
                return await self.client.create(api_messages, response_format=output_format.schema())
    """
    assert rows(source, "CL401") == []


def test_a_structured_follow_up_in_the_same_turn_is_reported():
    source = """
        class Agent:
            async def turn(self):
                api_messages = [m.to_dict() for m in self._history]
                reply = await self.client.create(api_messages, tools=self.tools)
                api_messages.append(reply.message)
                return await self.client.create(api_messages, response_format=Verdict)
    """
    assert rows(source, "CL401") == [6]


# --- CL301: entries of a kind older than the latest few replaced by a stub -----------------------------------

STUBS = """
    def keep_latest_results(memory, keep_latest=5):
        kept = []
        seen = 0
        for msg in reversed(memory):
            if msg.content.startswith("Command executed"):
                seen += 1
                {branch}
            kept.append(msg)
        kept.reverse()
        return kept
"""


def test_older_tool_results_replaced_by_a_stub_outside_the_window():
    branch = "if seen > keep_latest:\n                    msg = Message(role=msg.role, content=\"(older output omitted)\")"
    assert rows(STUBS.replace("{branch}", branch)) == [7]


def test_older_pages_replaced_while_building_the_view():
    source = """
        class PageCondenser:
            def __init__(self, window=1):
                self.window = window

            def condense(self, view):
                out = []
                count = 0
                for event in reversed(view):
                    if isinstance(event, PageObservation) and count >= self.window:
                        out.append(Note(f"Visited {event.url}, content omitted"))
                    else:
                        out.append(event)
                        if isinstance(event, PageObservation):
                            count += 1
                return list(reversed(out))
    """
    assert rows(source) == [9]


def test_counting_back_to_find_the_last_user_turn_is_quiet():
    source = """
        def last_user_turns(messages, n=2):
            found = []
            seen = 0
            for msg in reversed(messages):
                if msg.role == "user":
                    seen += 1
                    if seen > n:
                        break
                    found.append(msg)
            return found
    """
    assert rows(source) == []
