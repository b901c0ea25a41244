"""CL301 on the frameworks' own sliding-window memory classes (issue 14, holdout6's miss classes): an app that
constructs one keeps only the latest N messages (or what fits a small token budget) on every request. What
each class does is a fact of its framework (check/framework_memory.py); budgets the size of a context window
are compaction at the window and stay quiet."""

from __future__ import annotations

import textwrap

import pytest

from cachelint.check.engine import lint_source


def lint(source: str) -> list:
    source = textwrap.dedent(source).lstrip("\n")
    return [f for f in lint_source(source, "memory.py") if f.code == "CL301"]


@pytest.mark.parametrize("source, words", [
    ("""
     from langchain.memory import ConversationBufferWindowMemory
     memory = ConversationBufferWindowMemory(k=10, memory_key="chat_history", output_key="output", return_messages=True)
     """, "latest 10 exchanges"),
    ("""
     from strands.agent.conversation_manager import SlidingWindowConversationManager
     from strands import Agent
     agent = Agent(conversation_manager=SlidingWindowConversationManager(window_size=20), tools=TOOLS)
     """, "latest 20 messages"),
    ("""
     from autogen_core.model_context import BufferedChatCompletionContext
     def context():
         return BufferedChatCompletionContext(buffer_size=settings.history_size)
     """, "latest `settings.history_size` messages"),
    ("""
     from llama_index.core.memory import ChatMemoryBuffer
     memory = ChatMemoryBuffer.from_defaults(token_limit=3900)
     """, "fit 3,900 tokens"),
    ("""
     from camel.memories import ChatHistoryMemory
     memory = ChatHistoryMemory(context_creator, window_size=6)
     """, "latest 6 messages"),
    ("""
     from camel.memories import ChatHistoryMemory
     def make_memory(context_creator, window_size: int = 10):
         return ChatHistoryMemory(context_creator, window_size=window_size)
     """, "latest `window_size` messages"),
    ("""
     from langchain.memory import ConversationTokenBufferMemory
     memory = ConversationTokenBufferMemory(llm=llm, return_messages=True)
     """, "fit 2,000 tokens (its default)"),
    ("""
     from langchain.memory import ConversationSummaryBufferMemory
     def agent_memory(llm, model):
         limit = 29000 if "gpt-4" in model else 7500
         return ConversationSummaryBufferMemory(llm=llm, max_token_limit=100000 if "preview" in model else limit)
     """, "fit 7,500 tokens (with some settings; 100,000 with others)"),
    ("""
     from langchain_core.messages import trim_messages
     trimmer = trim_messages(max_tokens=4000, strategy="last", token_counter=len)
     """, "fit 4,000 tokens"),
], ids=["langchain-window", "strands", "autogen-attribute", "llama-index-small-budget", "camel", "parameter-with-a-size",
        "langchain-token-buffer-default", "budget-chosen-by-model", "trim-messages"])
def test_a_sliding_window_memory_class_is_reported_where_it_is_made(source, words):
    found = lint(source)
    assert len(found) == 1 and words in found[0].message and found[0].confidence == "likely"


@pytest.mark.parametrize("source", [
    """
    from llama_index.core.memory import ChatMemoryBuffer
    memory = ChatMemoryBuffer.from_defaults(llm=llm)
    """,
    """
    from langchain.memory import ConversationSummaryBufferMemory
    memory = ConversationSummaryBufferMemory(llm=llm, max_token_limit=100_000)
    """,
    """
    from langchain.memory import ConversationBufferMemory
    memory = ConversationBufferMemory(memory_key="chat_history", return_messages=True)
    """,
    """
    class ConversationBufferWindowMemory:
        def __init__(self, k):
            self.k = k
    memory = ConversationBufferWindowMemory(k=3)
    """,
    """
    from camel.memories import ChatHistoryMemory
    def make_memory(context_creator, message_window_size: int | None = None):
        return ChatHistoryMemory(context_creator, window_size=message_window_size)
    """,
], ids=["budget-of-the-window", "large-budget", "full-buffer", "own-class-of-that-name", "window-left-to-callers"])
def test_full_buffers_and_context_sized_budgets_are_quiet(source):
    assert lint(source) == []


@pytest.mark.parametrize("filename", ["tests/test_memory.py", "pkg/tests/unit/memory.py", "memory_test.py", "conftest.py"])
def test_a_test_suite_making_the_class_is_quiet(filename):
    # a framework's own tests make its window classes to test them (strands, autogen, camel: most findings on
    # their trees were in tests/); an app's module making the same class is still found
    source = textwrap.dedent("""
        from strands.agent.conversation_manager import SlidingWindowConversationManager
        manager = SlidingWindowConversationManager(window_size=20)
    """).lstrip("\n")
    assert [f for f in lint_source(source, filename) if f.code == "CL301"] == []
    assert [f.row for f in lint_source(source, "agent/memory.py") if f.code == "CL301"] == [2]
