"""CL104 on text retrieved for the newest turn and put into the system prompt ahead of the conversation (issue 14):
RAG context, memories or knowledge looked up per turn and added to the system message, so the history behind it
is never read from cache. Shapes seen in real agent frameworks, and the quiet cases beside them."""

from __future__ import annotations

import textwrap

from cachelint.check.engine import lint_source


def rows(source: str, filename: str = "assistant.py") -> list[int]:
    source = textwrap.dedent(source).lstrip("\n")
    return [f.row for f in lint_source(source, filename) if f.code == "CL104"]


def findings(source: str, filename: str = "assistant.py"):
    source = textwrap.dedent(source).lstrip("\n")
    return [f for f in lint_source(source, filename) if f.code == "CL104"]


# a framework agent that prepends what it retrieved to the system message it hands on (no request in sight)
PREPEND = """
    import copy

    SYSTEM = "system"
    KNOWLEDGE_TEMPLATE = "# Knowledge base\\n\\n{knowledge}"

    class Assistant:
        def run(self, messages, knowledge=""):
            return self.llm_run(self.prepend_knowledge(messages, knowledge))

        def prepend_knowledge(self, messages, knowledge=""):
            messages = copy.deepcopy(messages)
            if not knowledge:
                *_, last = self.memory.run(messages=messages)
                knowledge = last[-1]["content"]
            snippets = []
            for k in knowledge:
                snippets.append(f"[{k['source']}] {k['content']}")
            knowledge_prompt = KNOWLEDGE_TEMPLATE.format(knowledge="\\n\\n".join(snippets))
            if messages and messages[0]["role"] == SYSTEM:
                messages[0]["content"] += "\\n\\n" + knowledge_prompt
            else:
                messages = [{"role": SYSTEM, "content": knowledge_prompt}] + messages
            return messages
"""


def test_knowledge_added_to_the_leading_system_message_of_the_history():
    found = findings(PREPEND)
    assert [f.row for f in found] == [20]
    assert found[0].confidence == "likely" and "`knowledge_prompt`" in found[0].message and "`messages`" in found[0].message


def test_knowledge_added_to_the_newest_user_message_instead_is_quiet():
    fixed = PREPEND.replace('messages[0]["content"] +=', 'messages[-1]["content"] +=')
    fixed = fixed.replace('messages = [{"role": SYSTEM, "content": knowledge_prompt}] + messages', 'messages = messages + [{"role": "user", "content": knowledge_prompt}]')
    assert rows(fixed) == []


RAG_CHAT = """
    from openai import OpenAI

    client = OpenAI()
    INSTRUCTIONS = "You are the support assistant of Acme. Answer from the context, cite the document ids."

    def answer(history, question, store):
        docs = store.similarity_search(question, k=4)
        context = "\\n\\n".join(d.page_content for d in docs)
        messages = [{"role": "system", "content": f"{INSTRUCTIONS}\\n\\nContext:\\n{context}"}, *history,
                    {"role": "user", "content": question}]
        return client.chat.completions.create(model="gpt-4.1", messages=messages)
"""


def test_similarity_search_results_in_the_system_message_ahead_of_the_history():
    assert rows(RAG_CHAT) == [9]


def test_one_off_question_with_retrieved_context_and_no_history_is_quiet():
    one_off = RAG_CHAT.replace(", *history,", ",")
    assert rows(one_off) == []


def test_anthropic_system_argument_with_retrieved_memories_and_a_history():
    source = """
        import anthropic

        client = anthropic.Anthropic()
        RULES = "You are a helpful companion. Be kind and concise."

        def reply(history, user_id, memory):
            memories = memory.search(history[-1]["content"], user_id=user_id)
            system = RULES + "\\n\\nWhat you remember about the user:\\n" + "\\n".join(m["memory"] for m in memories)
            return client.messages.create(model="claude-sonnet-4-5", max_tokens=1024, system=system, messages=history)
    """
    assert rows(source) == [8]  # where the memories go into the system prompt, not where it is sent


def test_a_static_knowledge_file_read_once_is_quiet():
    source = """
        from openai import OpenAI

        client = OpenAI()
        KNOWLEDGE = open("handbook.md").read()

        def answer(history):
            return client.chat.completions.create(model="gpt-4.1", messages=[{"role": "system", "content": KNOWLEDGE}, *history])
    """
    assert rows(source) == []


# --- a system prompt built here and handed on: what a search returned for this turn added to it -------------

ENHANCER = """
    from typing import List

    class MemoryEnhancer:
        def __init__(self, agent_memory=None):
            self.agent_memory = agent_memory

        async def enhance_system_prompt(self, system_prompt: str, user_message: str, user) -> str:
            if not self.agent_memory:
                return system_prompt
            memories: List["SearchResult"] = await self.agent_memory.search_text_memories(query=user_message, limit=5)
            if not memories:
                return system_prompt
            section = "\\n\\n## Relevant context from memory\\n\\n"
            for result in memories:
                memory = result.memory
                section += f"- {memory.content}\\n"
            return SINK
"""


def test_an_enhancer_that_returns_the_system_prompt_plus_search_hits():
    assert rows(ENHANCER.replace("SINK", "system_prompt + section")) == [17]


def test_an_enhancer_that_puts_the_hits_in_a_user_note_instead_is_quiet():
    assert rows(ENHANCER.replace("SINK", "{'system': system_prompt, 'note': section}")) == []


# memories prefetched with the user's prompt, passed down through two methods to the system prompt builder
PREFETCH = """
    class ChatMixin:
        def chat(self, prompt, tools=None):
            memory_prefetch_context = self._prefetch_memory(prompt)
            messages = self._build_messages(prompt, tools=tools, memory_prefetch_context=memory_prefetch_context)
            return self._send(messages)

        def _build_messages(self, prompt, tools=None, memory_prefetch_context: str = ""):
            system_prompt = self._build_system_prompt(tools, memory_prefetch_context=memory_prefetch_context)
            return [{"role": "system", "content": system_prompt}, *self.chat_history, {"role": "user", "content": prompt}]

        def _build_system_prompt(self, tools=None, memory_prefetch_context: str = ""):
            system_prompt = self.instructions
            memory_context = self.get_memory_context()
            if memory_context:
                system_prompt += f"\\n\\n## Memory\\n{memory_context}"
            if memory_prefetch_context:
                system_prompt += f"\\n\\n## Recalled memories\\n{memory_prefetch_context}"
            return system_prompt
"""


def test_memories_prefetched_with_the_prompt_and_passed_down_to_the_builder():
    found = findings(PREFETCH)
    assert [f.row for f in found] == [17]  # where they join the prompt; not the call that passes them on
    assert "self._prefetch_memory()" in found[0].message


def test_a_memory_context_read_without_the_prompt_is_quiet():
    quiet = PREFETCH.replace("memory_prefetch_context = self._prefetch_memory(prompt)", "memory_prefetch_context = self.profile_summary")
    assert rows(quiet) == []


def test_the_system_messages_filtered_out_of_a_conversation_holding_a_retrieved_message_are_quiet():
    source = """
        class Executor:
            def run(self, conversation, node_id):
                memory = self._retrieve_memory(conversation)
                conversation.append(Message(role="user", content=memory))
                self._reset(conversation, node_id)

            def _reset(self, conversation, node_id):
                system_messages = [m.clone() for m in conversation if m.role == "system"]
                conversation.clear()
                conversation.extend(system_messages)
    """
    assert rows(source) == []


def test_a_system_message_sent_alone_with_one_new_message_is_quiet():
    # Voyager: skills retrieved per step go into a system message that goes out with one human message and no
    # history (`self.messages = [system_message, human_message]`): nothing behind it is lost
    assert rows("""
        class Voyager:
            def step(self, events):
                skills = self.skill_manager.retrieve_skills(query=self.context)
                system_message = self.action_agent.render_system_message(skills=skills)
                human_message = self.action_agent.render_human_message(events=events)
                self.messages = [system_message, human_message]
                return self.llm(self.messages)
    """) == []


def test_a_built_system_prompt_handed_on_is_still_found():
    assert rows("""
        class Agent:
            def build(self, query):
                system_prompt = self.instructions
                memories = self._prefetch_memory(query)
                if memories:
                    system_prompt += f"\\n\\n## Recalled memories\\n{memories}"
                return system_prompt
    """) == [6]


def test_documents_page_content_in_the_system_message_ahead_of_the_history():
    """LangChain documents' text (`d["page_content"]`) is retrieved for this turn, wherever it came from."""
    source = """
        from langchain_core.messages import SystemMessage

        def _get_messages(messages, system_message, template):
            chat_history = [m for m in messages if m.type in ("human", "ai")]
            response = messages[-1].content
            content = "\\n".join([d["page_content"] for d in response])
            return [SystemMessage(content=template.format(instructions=system_message, context=content))] + chat_history
        """
    found = findings(source)
    assert [f.row for f in found if f.code == "CL104"] == [7]
    assert "page_content" in next(f.message for f in found if f.code == "CL104")


def test_documents_page_content_in_the_newest_user_message_is_quiet():
    source = """
        from langchain_core.messages import HumanMessage, SystemMessage

        def _get_messages(messages, system_message, question):
            response = messages[-1].content
            content = "\\n".join([d["page_content"] for d in response])
            return [SystemMessage(content=system_message), *messages[:-1], HumanMessage(content=f"{content}\\n\\n{question}")]
        """
    assert [f for f in findings(source) if f.code == "CL104"] == []


# a Streamlit script: the retrieval and the request are statements of the module, not of a function
STREAMLIT = """
    import streamlit as st
    from openai import OpenAI

    client = OpenAI()

    def get_context(query):
        return "\\n".join(r["text"] for r in search_knowledge(query))

    if prompt := st.chat_input("Ask"):
        context = get_context(prompt)
        system_prompt = f"You answer questions about Acme from the context.\\nContext:\\n{context}"
        messages = [{"role": "system", "content": system_prompt}, *st.session_state.messages, {"role": "user", "content": prompt}]
        client.chat.completions.create(model="gpt-4o", messages=messages)
        st.session_state.messages.append({"role": "user", "content": prompt})
"""


def test_a_script_that_retrieves_into_the_system_prompt_at_module_level():
    found = findings(STREAMLIT, "app.py")
    assert [f.row for f in found] == [12]
    assert "st.session_state.messages" in found[0].message


def test_a_script_that_puts_the_context_in_the_user_message_is_quiet():
    fixed = STREAMLIT.replace('f"You answer questions about Acme from the context.\\nContext:\\n{context}"',
                              '"You answer questions about Acme from the context."')
    fixed = fixed.replace('{"role": "user", "content": prompt}]', '{"role": "user", "content": f"{context}\\n{prompt}"}]')
    assert fixed != STREAMLIT and rows(fixed, "app.py") == []


def test_module_level_retrieval_does_not_reach_a_function_s_system_prompt():
    source = """
        from openai import OpenAI
        client = OpenAI()
        knowledge = load_knowledge_base()

        def ask(history, question):
            messages = [{"role": "system", "content": "You are helpful."}, *history]
            return client.chat.completions.create(model="gpt-4o", messages=messages)
    """
    assert rows(source) == []


# the system message opens the list; the conversation is added after it, turn by turn
APPENDED = """
    from openai import AsyncOpenAI
    client = AsyncOpenAI()

    async def respond(session, user_input, kb):
        memories = await kb.query(user_input)
        system = "You are Max, a concierge.\\n" + "\\n".join(m.content for m in memories)
        msgs = [{"role": "system", "content": system}]
        for turn in session.turns:
            msgs.append({"role": turn.role, "content": turn.text})
        msgs.append({"role": "user", "content": user_input})
        return await client.chat.completions.create(model="gpt-4o-mini", messages=msgs)
"""


def test_history_appended_after_a_system_message_with_retrieved_text():
    found = findings(APPENDED)
    assert [f.row for f in found] == [6] and "`session.turns`" in found[0].message  # where the memories go in


def test_history_extended_after_a_system_message_with_retrieved_text():
    extended = APPENDED.replace("""        for turn in session.turns:
            msgs.append({"role": turn.role, "content": turn.text})
""", "        msgs.extend(chat_history)\n")
    assert extended != APPENDED and [f.row for f in findings(extended)] == [6]


def test_a_one_off_request_after_the_retrieved_system_message_is_quiet():
    one_off = APPENDED.replace("""        for turn in session.turns:
            msgs.append({"role": turn.role, "content": turn.text})
""", "")
    assert one_off != APPENDED and rows(one_off) == []


def test_first_message_replaced_with_retrieved_text():
    source = """
        from openai import OpenAI
        client = OpenAI()
        messages = [{"role": "system", "content": "You are helpful."}]

        def answer(question, db):
            context = "\\n".join(r.page_content for r in db.similarity_search(question))
            messages[0] = {"role": "system", "content": f"You are helpful. Use this context:\\n{context}"}
            messages.append({"role": "user", "content": question})
            return client.chat.completions.create(model="gpt-4o", messages=messages)
    """
    found = findings(source)
    assert [f.row for f in found] == [7] and "`messages`" in found[0].message
    assert rows(source.replace('f"You are helpful. Use this context:\\n{context}"', '"You are helpful."')) == []
