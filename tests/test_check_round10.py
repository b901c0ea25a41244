"""Round 10 of issue 14: plain shapes that common app code takes and the analyzer did not follow, each found by
probing ordinary code (not a labelled file), each beside the near miss that stays quiet.

- a module-level history (`global history`) cut in the function that sends it, and the same history rendered into
  a single prompt text (CL301);
- a history class that caps its count of messages in a method named for "overflow" (CL301), and a list not named
  for a history (`self.buffer`) that holds role messages, dropped from the front over a count cap;
- a prompt returned by a builder function (`build_prompt(query, results)`), or a `+` of an f-string and a constant,
  whose long static part follows per-call values (CL104), with the clock left to CL101 alone.
"""

from __future__ import annotations

import textwrap

from cachelint.check.engine import lint_source

RULES = "\n".join(f"- Rule {i}: answer politely, cite the handbook section, never promise a refund without approval." for i in range(70))


def found(source: str, code: str, filename: str = "app.py"):
    source = textwrap.dedent(source).lstrip("\n").replace("RULES_TEXT", RULES)
    return [f for f in lint_source(source, filename) if f.code == code]


def row_of(source: str, needle: str) -> int:
    text = textwrap.dedent(source).lstrip("\n").replace("RULES_TEXT", RULES)
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


# --- a module-level history ------------------------------------------------------------------------------------

GLOBAL_HISTORY = """
    from openai import OpenAI

    client = OpenAI()
    history = []


    def ask(text):
        global history
        history.append({"role": "user", "content": text})
        resp = client.chat.completions.create(model="gpt-4o", messages=history)
        history.append({"role": "assistant", "content": resp.choices[0].message.content})
        if len(history) > 20:
            history = history[-20:]
        return resp
"""


def test_a_global_history_cut_after_each_answer_is_reported_where_it_is_cut():
    findings = found(GLOBAL_HISTORY, "CL301")
    assert [f.row for f in findings] == [row_of(GLOBAL_HISTORY, "history = history[-20:]")]
    assert "sent by chat.completions.create()" in findings[0].message  # the flow reaches the request: certain


def test_a_local_window_taken_for_a_log_line_stays_quiet():
    local = GLOBAL_HISTORY.replace("        global history\n", "").replace(
        "            history = history[-20:]", "            recent = history[-20:]\n            print(len(recent))")
    assert found(local, "CL301") == []


RENDERED_GLOBAL = """
    from openai import OpenAI

    client = OpenAI()
    conversation_history = []


    def chat_with_ai(user_message):
        global conversation_history
        history = "\\n".join(f"User: {m}" if i % 2 == 0 else f"AI: {m}" for i, m in enumerate(conversation_history))
        if history:
            user_message = f"{history}\\nUser: {user_message}"
        resp = client.chat.completions.create(model="o1", messages=[{"role": "user", "content": user_message}])
        answer = resp.choices[0].message.content
        conversation_history.append(user_message)
        conversation_history.append(answer)
        if len(conversation_history) > 20:
            conversation_history = conversation_history[-20:]
        return answer
"""


def test_a_global_history_rendered_into_the_prompt_text_and_cut_is_reported():
    findings = found(RENDERED_GLOBAL, "CL301")
    assert [f.row for f in findings] == [row_of(RENDERED_GLOBAL, "conversation_history = conversation_history[-20:]")]
    assert findings[0].confidence == "likely"


# --- a history class that caps its count of messages -------------------------------------------------------------

CAPPED = """
    from typing import List, Optional


    class ChatHistory:
        def __init__(self, max_messages: Optional[int] = None):
            self.history: List[dict] = []
            self.max_messages = max_messages

        def add_message(self, role: str, content: str) -> None:
            self.history.append({"role": role, "content": content})
            self._manage_overflow()

        def _manage_overflow(self) -> None:
            if self.max_messages is not None:
                while len(self.history) > self.max_messages:
                    self.history.pop(0)
"""


def test_a_count_cap_in_a_method_named_for_overflow_is_a_sliding_window():
    assert [f.row for f in found(CAPPED, "CL301")] == [row_of(CAPPED, "self.history.pop(0)")]


def test_a_cap_named_for_overflow_called_only_after_the_provider_refused_stays_quiet():
    recovery = CAPPED.replace("            self._manage_overflow()\n", "").replace(
        "    def _manage_overflow(self) -> None:",
        "    def send(self, client):\n            try:\n                return client.send(self.history)\n"
        "            except ContextTooLong:\n                self._manage_overflow()\n\n        def _manage_overflow(self) -> None:")
    assert "except ContextTooLong" in recovery
    assert found(recovery, "CL301") == []


def test_a_cut_named_for_overflow_that_runs_on_the_context_window_stays_quiet():
    at_window = CAPPED.replace("while len(self.history) > self.max_messages:",
                               "while count_tokens(self.history) > self.context_window:")
    assert found(at_window, "CL301") == []


BUFFER = """
    class Memory:
        def __init__(self, k=5):
            self.k = k
            self.buffer = []

        def add(self, role, content):
            self.buffer.append({"role": role, "content": content})
            if len(self.buffer) > self.k * 2:
                self.buffer = self.buffer[2:]

        def messages(self):
            return self.buffer
"""


def test_role_messages_dropped_from_the_front_over_a_count_cap_whatever_the_list_is_called():
    assert [f.row for f in found(BUFFER, "CL301")] == [row_of(BUFFER, "self.buffer = self.buffer[2:]")]


def test_a_system_prompt_skipped_once_with_one_slice_stays_quiet():
    skipped = BUFFER.replace("            if len(self.buffer) > self.k * 2:\n                self.buffer = self.buffer[2:]\n", "")
    skipped = skipped.replace("return self.buffer", "return self.buffer[1:]")
    assert found(skipped, "CL301") == []


def test_a_cut_over_a_token_budget_is_not_read_as_a_count_cap():
    tokens = BUFFER.replace("if len(self.buffer) > self.k * 2:", "if len(self.buffer) > self.max_tokens:")
    assert found(tokens, "CL301") == []


# --- a prompt returned by a builder ----------------------------------------------------------------------------

BUILDER = '''
    from openai import OpenAI

    client = OpenAI()

    GUIDE = """RULES_TEXT"""


    def build_prompt(query, results):
        return f"Search results for {query}:\\n{results}\\n\\n{GUIDE}"


    def ask(query, results):
        prompt = build_prompt(query, results)
        return client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": prompt}])
'''


def test_the_prompt_a_builder_returns_has_its_static_part_after_the_query():
    findings = found(BUILDER, "CL104")
    assert [f.row for f in findings] == [row_of(BUILDER, "def build_prompt") + 1]
    assert "`query`" in findings[0].message


def test_a_builder_that_puts_the_guide_first_stays_quiet():
    first = BUILDER.replace('f"Search results for {query}:\\n{results}\\n\\n{GUIDE}"', 'f"{GUIDE}\\n\\nSearch results for {query}:\\n{results}"')
    assert found(first, "CL104") == []


PROMPTS_MODULE = '''
    from datetime import datetime

    HANDBOOK = """RULES_TEXT"""


    def system_prompt(user_name):
        return f"Today is {datetime.now():%Y-%m-%d %H:%M}. You are talking to {user_name}.\\n" + HANDBOOK


    def rag_prompt(context, question):
        return f"Context:\\n{context}\\n\\nQuestion: {question}\\n\\n" + HANDBOOK
'''


def test_a_prompt_builder_sent_elsewhere_is_judged_by_its_name_and_the_clock_is_left_to_cl101():
    cl104 = found(PROMPTS_MODULE, "CL104", "app/prompts.py")
    assert [f.row for f in cl104] == [row_of(PROMPTS_MODULE, "def rag_prompt") + 1]
    assert cl104[0].confidence == "likely"
    assert [f.row for f in found(PROMPTS_MODULE, "CL101", "app/prompts.py")] == [row_of(PROMPTS_MODULE, "def system_prompt") + 1]


def test_a_function_not_named_for_a_prompt_is_not_judged_without_a_request():
    renamed = PROMPTS_MODULE.replace("def rag_prompt(", "def render_page(")
    assert found(renamed, "CL104", "app/prompts.py") == []


def test_a_short_static_tail_stays_quiet():
    short = PROMPTS_MODULE.replace("RULES_TEXT", "Be brief.")
    assert found(short, "CL104", "app/prompts.py") == []


# --- tools that change between turns of one conversation (CL202) ---------------------------------------------------

ROUTED = """
    from openai import OpenAI

    client = OpenAI()


    def run(messages, all_tools, router):
        while True:
            tools = router.select(messages[-1]["content"], all_tools)
            resp = client.chat.completions.create(model="gpt-4o", messages=messages, tools=tools)
            msg = resp.choices[0].message
            messages.append(msg)
            if not msg.tool_calls:
                return
"""


def test_tools_picked_by_a_router_from_the_newest_message_are_chosen_per_request():
    findings = found(ROUTED, "CL202")
    assert [f.row for f in findings] == [row_of(ROUTED, "router.select(")]
    assert "router.select()" in findings[0].message


def test_tools_fetched_once_per_turn_from_settings_stay_quiet():
    settings = ROUTED.replace('router.select(messages[-1]["content"], all_tools)', "router.select(all_tools)")
    assert found(settings, "CL202") == []


LAST_STEP = """
    import anthropic

    client = anthropic.Anthropic()


    def run(messages, tools, step_limit=20):
        for step in range(step_limit):
            kwargs = {"model": "claude-sonnet-4-5", "max_tokens": 4096, "messages": messages}
            if step < step_limit - 1:
                kwargs["tools"] = tools
            resp = client.messages.create(**kwargs)
            messages.append({"role": "assistant", "content": resp.content})
            if resp.stop_reason != "tool_use":
                return resp
"""


def test_tools_left_out_of_the_last_step_of_an_agent_loop():
    assert [f.row for f in found(LAST_STEP, "CL202")] == [row_of(LAST_STEP, 'kwargs["tools"] = tools')]


def test_tools_left_out_when_none_were_given_stay_quiet():
    configured = LAST_STEP.replace("if step < step_limit - 1:", "if tools:")
    assert found(configured, "CL202") == []


GROWN_TOOLS = """
    from openai import OpenAI

    client = OpenAI()


    class Agent:
        def __init__(self):
            self.tools = []
            self.messages = []

        def add_tool(self, tool):
            self.tools.append(tool)

        def step(self, text):
            self.messages.append({"role": "user", "content": text})
            if "file" in text:
                self.add_tool({"type": "function", "function": {"name": "read_file"}})
            resp = client.chat.completions.create(model="gpt-4o", messages=self.messages, tools=self.tools)
            self.messages.append(resp.choices[0].message)
"""


def test_a_tool_added_to_the_object_while_its_conversation_runs():
    findings = found(GROWN_TOOLS, "CL202")
    assert [f.row for f in findings] == [row_of(GROWN_TOOLS, "tools=self.tools")]
    assert "`add_tool`" in findings[0].message and findings[0].confidence == "likely"


def test_tools_registered_before_the_conversation_stay_quiet():
    registered = GROWN_TOOLS.replace(
        '            if "file" in text:\n                self.add_tool({"type": "function", "function": {"name": "read_file"}})\n', "")
    assert found(registered, "CL202") == []


# --- a chat model class that sends its own conversation to Anthropic (CL501) ---------------------------------------

CLAUDE_CLIENT = """
    import anthropic

    from .base_model import BaseLLMModel  # keeps self.history: appends each turn


    class ClaudeClient(BaseLLMModel):
        def __init__(self, model_name, system_prompt):
            self.claude_client = anthropic.Anthropic()
            self.model_name = model_name
            self.system_prompt = system_prompt
            self.history = []

        def _claude_style_history(self):
            history = []
            for message in self.history:
                history.append({"role": message["role"], "content": message["content"]})
            return history

        def get_answer_at_once(self):
            history = self._claude_style_history()
            response = self.claude_client.messages.create(model=self.model_name, max_tokens=1024, messages=history,
                                                          system=self.system_prompt)
            return response.content[0].text
"""


def test_a_claude_class_that_resends_its_kept_history_without_a_breakpoint(tmp_path):
    path = tmp_path / "claude.py"
    path.write_text(textwrap.dedent(CLAUDE_CLIENT).lstrip("\n"))
    findings = [f for f in lint_source(path.read_text(), str(path)) if f.code == "CL501"]
    assert [f.row for f in findings] == [row_of(CLAUDE_CLIENT, "self.claude_client.messages.create(")]
    assert "self.history" in findings[0].message and findings[0].confidence == "likely"


def test_a_claude_class_that_sends_a_fresh_list_per_request_or_marks_a_breakpoint_stays_quiet(tmp_path):
    fresh = CLAUDE_CLIENT.replace("            history = self._claude_style_history()",
                                  '            self.history = [{"role": "user", "content": "hi"}]\n            history = self._claude_style_history()')
    (tmp_path / "fresh.py").write_text(textwrap.dedent(fresh).lstrip("\n"))
    assert [f for f in lint_source((tmp_path / "fresh.py").read_text(), str(tmp_path / "fresh.py")) if f.code == "CL501"] == []
    marked = CLAUDE_CLIENT.replace("system=self.system_prompt)", 'system=self.system_prompt, cache_control={"type": "ephemeral"})')
    (tmp_path / "marked.py").write_text(textwrap.dedent(marked).lstrip("\n"))
    assert [f for f in lint_source((tmp_path / "marked.py").read_text(), str(tmp_path / "marked.py")) if f.code == "CL501"] == []


# --- a vector index asked by a generic method (CL104) ---------------------------------------------------------------

INDEX_QUERY = """
    from openai import OpenAI

    client = OpenAI()
    SYSTEM = "You are a helpful assistant. Answer from the context below.\\n\\nContext:\\n{context}"


    def chat(history, question, index):
        docs = index.query(question, top_k=5)
        context = "\\n".join(d.text for d in docs)
        messages = [{"role": "system", "content": SYSTEM.format(context=context)}] + history + [{"role": "user", "content": question}]
        resp = client.chat.completions.create(model="gpt-4o", messages=messages)
        history.append({"role": "user", "content": question})
        history.append({"role": "assistant", "content": resp.choices[0].message.content})
        return resp
"""


def test_text_from_an_index_query_put_in_the_system_prompt_ahead_of_the_history():
    findings = found(INDEX_QUERY, "CL104")
    assert len(findings) == 1 and "index.query()" in findings[0].message


def test_a_retriever_invoked_the_langchain_way_is_a_lookup_too():
    invoked = INDEX_QUERY.replace("index.query(question, top_k=5)", "retriever.invoke(question)").replace(", index):", ", retriever):")
    assert len(found(invoked, "CL104")) == 1


def test_a_database_query_is_not_read_as_retrieval():
    sql = INDEX_QUERY.replace("index.query(question, top_k=5)", "db.query(question, top_k=5)").replace(", index):", ", db):")
    assert found(sql, "CL104") == []


# --- state observed anew each turn, rendered into the system prompt ahead of the history (CL104) ------------------

OBSERVED = """
    from openai import OpenAI

    client = OpenAI()
    BASE = "You control a browser. Use the tools to reach the goal."


    def run(goal, browser, tools):
        history = [{"role": "user", "content": goal}]
        while True:
            page = browser.snapshot()
            system = f"{BASE}\\nCurrent URL: {page.url}\\nVisible text:\\n{page.text}"
            resp = client.chat.completions.create(model="gpt-4o", messages=[{"role": "system", "content": system}] + history, tools=tools)
            msg = resp.choices[0].message
            history.append(msg)
            if not msg.tool_calls:
                return msg
            for call in msg.tool_calls:
                history.append({"role": "tool", "tool_call_id": call.id, "content": browser.run(call)})
"""


def test_a_page_observed_each_step_in_the_system_prompt_ahead_of_the_history():
    findings = found(OBSERVED, "CL104")
    assert [f.row for f in findings] == [row_of(OBSERVED, "page = browser.snapshot()")]
    assert "browser.snapshot()" in findings[0].message and findings[0].confidence == "likely"


def test_the_same_state_in_the_newest_message_stays_quiet():
    newest = OBSERVED.replace('messages=[{"role": "system", "content": system}] + history',
                              'messages=history + [{"role": "user", "content": system}]')
    assert found(newest, "CL104") == []


def test_settings_read_in_the_loop_from_an_object_it_never_acts_on_stay_quiet():
    settings = OBSERVED.replace("page = browser.snapshot()", "page = settings.current()").replace(
        "def run(goal, browser, tools):", "def run(goal, browser, tools, settings):")
    assert found(settings, "CL104") == []


# --- quiet cases from the round's review (each fired on a first version) --------------------------------------------


def test_a_list_of_role_messages_kept_for_display_and_capped_stays_quiet():
    shown = """
        from openai import OpenAI

        client = OpenAI()


        class ChatSession:
            def __init__(self, max_shown=50):
                self.history, self.shown, self.max_shown = [], [], max_shown

            def _show(self, role, content):
                self.shown.append({"role": role, "content": content})
                if len(self.shown) > self.max_shown:
                    self.shown = self.shown[1:]

            def send(self, text):
                self.history.append({"role": "user", "content": text})
                self._show("user", text)
                return client.chat.completions.create(model="gpt-4o", messages=self.history)
    """
    assert found(shown, "CL301") == []


def test_a_summary_made_over_a_count_threshold_is_compaction_and_stays_quiet():
    summary = """
        class Memory:
            def __init__(self, llm, max_messages=40):
                self.llm, self.max_messages, self.messages = llm, max_messages, []

            def add(self, message):
                self.messages.append(message)
                self._summarize_overflow()

            def _summarize_overflow(self):
                if len(self.messages) > self.max_messages:
                    summary = self.llm.summarize(self.messages[:-10])
                    del self.messages[:-10]
                    self.messages.insert(0, {"role": "system", "content": f"Summary so far: {summary}"})
    """
    assert found(summary, "CL301") == []


def test_a_schema_fetched_again_each_step_of_a_sql_agent_is_not_observed_state():
    schema = OBSERVED.replace("page = browser.snapshot()", "page = browser.get_schema()")
    assert found(schema, "CL104") == []


def test_tools_loaded_lazily_once_stay_quiet():
    lazy = GROWN_TOOLS.replace("    def add_tool(self, tool):\n            self.tools.append(tool)",
                               "    def add_tool(self, tool):\n            if self.tools:\n                return\n            self.tools.append(tool)")
    assert "if self.tools:" in lazy
    assert found(lazy, "CL202") == []


def test_a_builder_whose_first_value_is_a_setting_or_the_agents_name_stays_quiet():
    settings = PROMPTS_MODULE.replace('f"Context:\\n{context}\\n\\nQuestion: {question}\\n\\n" + HANDBOOK',
                                      'f"You are {settings.BOT_NAME}.\\n\\n" + HANDBOOK')
    assert "settings.BOT_NAME" in settings
    assert found(settings, "CL104", "app/prompts.py") == []


def test_tools_chosen_by_the_users_role_are_fixed_for_the_conversation():
    role = ROUTED.replace('router.select(messages[-1]["content"], all_tools)', "router.for_role(user.role)").replace(
        "def run(messages, all_tools, router):", "def run(messages, all_tools, router, user):")
    assert found(role, "CL202") == []


def test_tools_added_through_kwargs_update_on_some_turns():
    updated = LAST_STEP.replace('kwargs["tools"] = tools', "kwargs.update(tools=tools)")
    assert [f.row for f in found(updated, "CL202")] == [row_of(updated, "kwargs.update(tools=tools)")]


# --- quiet cases from holdout14's blind triage, read after its blind scores (each a class, not the example) --------


def test_a_counter_that_numbers_the_items_of_one_prompt_is_the_same_on_every_call():
    numbered = """
        from openai import OpenAI

        client = OpenAI()
        BASE = "Rules. " * 600


        def build_system_prompt(has_plan, has_store):
            n = 1
            parts = [BASE, f"{n}. Read the schema."]
            if has_plan:
                n += 1
                parts.append(f"{n}. Dry-run the plan.")
            return "\\n".join(parts)


        calls = 0


        def ask(history, text):
            global calls
            calls += 1
            history.append({"role": "user", "content": text})
            system = build_system_prompt(True, False) + f"\\nRequest number {calls}"
            return client.chat.completions.create(model="gpt-4o", messages=[{"role": "system", "content": system}] + history)
    """
    # the bullet number starts again on every call; the module's request counter does not
    assert [f.row for f in found(numbered, "CL101")] == [row_of(numbered, 'f"\\nRequest number {calls}"')]
    # a count that starts from the items gathered so far is as fixed
    counted = numbered.replace("            n = 1\n", "            n = len(BASE) // 1000 + 1\n")
    assert "n = len(BASE)" in counted
    assert [f.row for f in found(counted, "CL101")] == [row_of(counted, 'f"\\nRequest number {calls}"')]


def test_a_cut_in_an_except_handler_after_the_provider_refused_is_recovery():
    recovery = """
        import openai
        from openai import OpenAI

        client = OpenAI()


        class Chat:
            def __init__(self):
                self.history = []

            def send(self, text):
                self.history.append({"role": "user", "content": text})
                try:
                    resp = client.chat.completions.create(model="gpt-4o", messages=self.history)
                except openai.BadRequestError:
                    self.history = self.history[-5:]
                    resp = client.chat.completions.create(model="gpt-4o", messages=self.history)
                self.history.append({"role": "assistant", "content": resp.choices[0].message.content})
                return resp
    """
    assert found(recovery, "CL301") == []
    # a fallback for any failure (a summary that did not come back) runs whenever that fails: still a cut
    fallback = recovery.replace("except openai.BadRequestError:", "except Exception:")
    assert [f.row for f in found(fallback, "CL301")] == [row_of(fallback, "self.history = self.history[-5:]")]
    every_turn = recovery.replace("                except openai.BadRequestError:\n                    self.history = self.history[-5:]\n"
                                  "                    resp = client.chat.completions.create(model=\"gpt-4o\", messages=self.history)\n",
                                  "                finally:\n                    self.history = self.history[-5:]\n")
    assert [f.row for f in found(every_turn, "CL301")] == [row_of(every_turn, "self.history = self.history[-5:]")]


def test_a_getter_of_the_latest_n_messages_leaves_the_history_whole():
    getter = """
        class SessionManager:
            def __init__(self):
                self.sessions = {}

            def get_recent_messages(self, session_id, count=10):
                session = self.sessions[session_id]
                return [m for m in session.messages[-count:]]

            def aget_recent_messages(self, session, count=10):
                messages = session.messages[-count:] if count > 0 else session.messages
                return to_chat_messages(messages)
    """
    assert found(getter, "CL301") == []
    # a memory's get_messages(limit=None) is what it hands the model: still judged
    memory = getter.replace("get_recent_messages", "get_messages").replace("aget_recent_messages", "aget_messages")
    assert len(found(memory, "CL301")) == 2


def test_a_trim_that_keeps_the_start_of_the_history_keeps_its_prefix():
    trimmed = """
        from python.helpers import tokens


        async def rename(agent):
            history_text = agent.history.output_text()
            history_text = tokens.trim_to_tokens(history_text, 5000, "start")
            return await agent.call_utility_model(system="Name this chat.", message=history_text)
    """
    assert found(trimmed, "CL301") == []
