"""CL104 on frameworks set up to put retrieved text into the system prompt ahead of the history (issue 14):
LangChain's conversational RAG prompt and LlamaIndex's context chat engines, with the quiet set-ups beside them."""

from __future__ import annotations

import textwrap

from cachelint.check.engine import lint_source


def findings(source: str, filename: str = "rag.py"):
    source = textwrap.dedent(source).lstrip("\n")
    return [f for f in lint_source(source, filename) if f.code == "CL104"]


LANGCHAIN = """
    from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
    from langchain.chains import create_retrieval_chain
    from langchain.chains.combine_documents import create_stuff_documents_chain

    qa_system_prompt = (
        "You are an assistant for question-answering tasks. Use the following pieces of retrieved context "
        "to answer the question.\\n\\n{context}"
    )
    qa_prompt = ChatPromptTemplate.from_messages([
        ("system", qa_system_prompt),
        MessagesPlaceholder("chat_history"),
        ("human", "{input}"),
    ])

    def build(llm, retriever):
        return create_retrieval_chain(retriever, create_stuff_documents_chain(llm, qa_prompt))
"""


def test_langchain_context_in_the_system_message_ahead_of_the_history():
    found = findings(LANGCHAIN)
    assert [f.row for f in found] == [10]
    assert found[0].confidence == "likely" and "`{context}`" in found[0].message and "chat_history" in found[0].message


def test_langchain_placeholder_tuple_counts_as_the_history():
    source = LANGCHAIN.replace('MessagesPlaceholder("chat_history")', '("placeholder", "{chat_history}")')
    assert source != LANGCHAIN and [f.row for f in findings(source)] == [10]


def test_langchain_context_in_the_human_turn_is_quiet():
    source = LANGCHAIN.replace("to answer the question.\\n\\n{context}", "to answer the question.")
    source = source.replace('("human", "{input}")', '("human", "Context: {context}\\n\\n{input}")')
    assert source != LANGCHAIN and findings(source) == []


def test_langchain_one_off_question_without_history_is_quiet():
    source = LANGCHAIN.replace('        MessagesPlaceholder("chat_history"),\n', "")
    assert source != LANGCHAIN and findings(source) == []


def test_langchain_context_placeholder_in_a_module_that_retrieves_nothing_is_quiet():
    source = """
        from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
        prompt = ChatPromptTemplate.from_messages([("system", "You help with {context}."), MessagesPlaceholder("history"), ("human", "{q}")])
    """
    assert findings(source) == []


def test_llamaindex_context_chat_modes():
    source = """
        from llama_index.core import VectorStoreIndex
        from llama_index.core.chat_engine import CondensePlusContextChatEngine

        index = VectorStoreIndex.from_documents(documents)
        engine = index.as_chat_engine(chat_mode="context", system_prompt="You answer questions about the handbook.")
        other = CondensePlusContextChatEngine.from_defaults(index.as_retriever())
        quiet = index.as_chat_engine(chat_mode="condense_question")
        default = index.as_chat_engine()
    """
    found = findings(source)
    assert [f.row for f in found] == [5, 6]
    assert 'chat_mode="context"' in found[0].message and "CondensePlusContextChatEngine" in found[1].message
