"""Streamlit chat apps (round 15): the script runs again on every message and keeps the conversation in
`st.session_state`, so its own statements are the body of a turn. Found missed on a spent set (a RAG chat whose
script looks up context and hands it to the function that builds the system prompt); each shape below is written
the way Streamlit's chat tutorial and cookbooks write it, with the nearby shapes that must stay quiet."""

from __future__ import annotations

import textwrap

from cachelint.check.engine import lint_source


def lint(source: str, codes: set[str] | None = None):
    source = textwrap.dedent(source).lstrip("\n")
    return [f for f in lint_source(source, "app.py") if codes is None or f.code in codes]


RAG_APP = """
    import streamlit as st
    from openai import OpenAI

    client = OpenAI()

    def get_context(query, table):
        rows = table.search(query).limit(5).to_pandas()
        return "\\n\\n".join(r["text"] for _, r in rows.iterrows())

    def get_chat_response(messages, context):
        system_prompt = f\"\"\"You answer questions from the documents below.
        Context:
        {context}
        \"\"\"
        return client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "system", "content": system_prompt}, *messages])

    if "messages" not in st.session_state:
        st.session_state.messages = []
    if prompt := st.chat_input("Ask"):
        st.session_state.messages.append({"role": "user", "content": prompt})
        context = get_context(prompt, table)
        reply = get_chat_response(st.session_state.messages, context)
"""


def test_a_streamlit_script_handing_this_turns_lookup_to_the_system_prompt_builder_is_found():
    found = lint(RAG_APP, {"CL104"})
    assert [f.row for f in found] == [13], found  # at `{context}`, where the looked-up text goes in
    assert "looked up for this turn (get_context())" in found[0].message


def test_the_same_lookup_of_a_fixed_question_and_a_plain_script_stay_quiet():
    assert lint(RAG_APP.replace("get_context(prompt, table)", 'get_context("handbook", table)'), {"CL104"}) == []
    plain = RAG_APP.replace("    import streamlit as st\n", "").replace('st.chat_input("Ask")', "input()")
    assert lint(plain, {"CL104"}) == []  # a script that runs once: one question, one request


CHAT_APP = """
    import streamlit as st
    import anthropic

    client = anthropic.Anthropic()
    SYSTEM = open("handbook.md").read()

    if "history" not in st.session_state:
        st.session_state.history = []
    if prompt := st.chat_input("Ask"):
        st.session_state.history.append({"role": "user", "content": prompt})
        reply = client.messages.create(model="claude-sonnet-4-5", max_tokens=1024, system=SYSTEM, messages=st.session_state.history)
        st.session_state.history.append({"role": "assistant", "content": reply.content[0].text})
"""


def test_a_streamlit_chat_without_a_breakpoint_is_found():
    found = lint(CHAT_APP, {"CL501"})
    assert [f.row for f in found] == [11], found
    assert "Streamlit runs the script again on the next message" in found[0].message


def test_the_same_chat_with_a_breakpoint_or_outside_streamlit_stays_quiet():
    marked = CHAT_APP.replace("system=SYSTEM,", 'system=[{"type": "text", "text": SYSTEM, "cache_control": {"type": "ephemeral"}}],')
    assert lint(marked, {"CL501"}) == []
    once = CHAT_APP.replace("    import streamlit as st\n", "").replace('st.chat_input("Ask")', "input()")
    assert lint(once, {"CL501"}) == []  # one request per run of the script: nothing is sent again


CLOCK_APP = """
    import datetime
    import streamlit as st
    from openai import OpenAI

    client = OpenAI()
    RULES = open("rules.md").read()
    if "messages" not in st.session_state:
        st.session_state.messages = []
    if prompt := st.chat_input("Ask"):
        st.session_state.messages.append({"role": "user", "content": prompt})
        system = f"Now: {datetime.datetime.now()}\\n" + RULES
        client.chat.completions.create(model="gpt-4o", messages=[{"role": "system", "content": system}, *st.session_state.messages])
"""


def test_a_clock_in_a_streamlit_script_changes_on_every_message_not_once_per_process():
    found = lint(CLOCK_APP, {"CL101"})
    assert len(found) == 1 and "on every call" in found[0].message and "once per process" not in found[0].message, found
    plain = lint(CLOCK_APP.replace("    import streamlit as st\n", "").replace('st.chat_input("Ask")', "input()"), {"CL101"})
    assert len(plain) == 1 and "once per process" in plain[0].message, plain


WINDOW_APP = """
    import streamlit as st
    from openai import OpenAI

    client = OpenAI()
    SYSTEM = "You are a helpful assistant."
    if "messages" not in st.session_state:
        st.session_state.messages = []
    if prompt := st.chat_input("Ask"):
        st.session_state.messages.append({"role": "user", "content": prompt})
        if len(st.session_state.messages) > 10:
            st.session_state.messages = st.session_state.messages[-10:]
        reply = client.chat.completions.create(model="gpt-4o", messages=[{"role": "system", "content": SYSTEM}] + st.session_state.messages)
"""


def test_a_window_cut_from_the_session_history_sent_behind_a_system_message_is_found():
    found = lint(WINDOW_APP, {"CL301"})
    assert [f.row for f in found] == [11], found


def test_the_session_history_only_appended_to_stays_quiet():
    appended = WINDOW_APP.replace("        if len(st.session_state.messages) > 10:\n            st.session_state.messages = st.session_state.messages[-10:]\n", "")
    assert "[-10:]" not in appended
    assert lint(appended, {"CL301"}) == []
