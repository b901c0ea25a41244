"""Agent frameworks' memory classes that are sliding windows (CL301).

An app rarely writes its own history window: it picks one of its framework's memory classes, and several of
them keep only the latest N messages or turns (or the latest that fit a token budget) on every request. Once a
conversation passes N, each new turn drops the oldest message from the front of the history, right after the
system prompt, so no request can reuse the previous one's cached history. What each class does is a fact of the
framework, written down here once; the code only has to construct it.

A budget in tokens counts only when it is given and small: a buffer that keeps what fits the model's context
window (the frameworks' defaults) compacts only when the window is full, which the labelling protocol and the
rule treat as fine.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from cachelint.check.module import ModuleContext

SMALL_TOKEN_BUDGET = 32_000  # below this, a token-budget window slides long before the context window is full


@dataclass(frozen=True, slots=True)
class Window:
    size: str | None  # the keyword that sets the window (a count), None where the class always slides
    tokens: str | None = None  # the keyword of a token budget (reported only when given and small)
    what: str = "messages"


# qualified name -> how the class cuts the history
WINDOWS: dict[str, Window] = {
    # LangChain's classic memory
    "langchain.memory.ConversationBufferWindowMemory": Window("k", what="exchanges"),
    "langchain.memory.buffer_window.ConversationBufferWindowMemory": Window("k", what="exchanges"),
    "langchain_community.memory.ConversationBufferWindowMemory": Window("k", what="exchanges"),
    "langchain.memory.ConversationTokenBufferMemory": Window(None, tokens="max_token_limit"),
    "langchain.memory.token_buffer.ConversationTokenBufferMemory": Window(None, tokens="max_token_limit"),
    "langchain.memory.ConversationSummaryBufferMemory": Window(None, tokens="max_token_limit"),
    "langchain.memory.summary_buffer.ConversationSummaryBufferMemory": Window(None, tokens="max_token_limit"),
    # AutoGen's model contexts
    "autogen_core.model_context.BufferedChatCompletionContext": Window("buffer_size"),
    "autogen_core.model_context.HeadAndTailChatCompletionContext": Window("tail_size"),
    "autogen_core.model_context.TokenLimitedChatCompletionContext": Window(None, tokens="token_limit"),
    # Strands Agents
    "strands.agent.conversation_manager.SlidingWindowConversationManager": Window("window_size"),
    "strands.agent.conversation_manager.sliding_window_conversation_manager.SlidingWindowConversationManager": Window("window_size"),
    # CAMEL
    "camel.memories.ChatHistoryMemory": Window("window_size"),
    "camel.memories.agent_memories.ChatHistoryMemory": Window("window_size"),
    # Semantic Kernel
    "semantic_kernel.contents.ChatHistoryTruncationReducer": Window("target_count"),
    "semantic_kernel.contents.history_reducer.chat_history_truncation_reducer.ChatHistoryTruncationReducer": Window("target_count"),
    "semantic_kernel.contents.ChatHistorySummarizationReducer": Window("target_count"),
    # LlamaIndex
    "llama_index.core.memory.ChatMemoryBuffer": Window(None, tokens="token_limit"),
    # LangChain's message trimmer (a function; `strategy="first"` keeps the head and is no window)
    "langchain_core.messages.trim_messages": Window(None, tokens="max_tokens"),
    "langchain_core.messages.utils.trim_messages": Window(None, tokens="max_tokens"),
}

WINDOW_NAMES = frozenset(WINDOWS)

# the modules these classes come from: a module that imports none of them is skipped by a text test
MODULE_ROOTS = ("langchain", "langchain_community", "autogen_core", "strands", "camel", "semantic_kernel", "llama_index")


@dataclass(frozen=True, slots=True)
class WindowMemory:
    node: cst.Call
    cls: str
    how: str  # "keeps only the latest 10 exchanges"


def window_memories(ctx: ModuleContext) -> Iterator[WindowMemory]:
    """Constructions of a framework memory class that slides its window every turn (`Cls(...)`, or its
    `from_defaults(...)`). Not in a test suite: a framework's own tests make its window classes to test them."""
    if ctx.is_test:
        return
    for call in ctx.nodes(cst.Call):
        func = call.func
        target = func.value if isinstance(func, cst.Attribute) and func.attr.value == "from_defaults" else func
        name = ctx.qualified_name_in(target, WINDOW_NAMES)
        if name is None:
            continue
        window = WINDOWS[name]
        if any(a.keyword is not None and a.keyword.value == "strategy" and ctx.code(a.value).strip("'\"") == "first" for a in call.args):
            continue  # trim_messages(strategy="first"): the oldest messages stay, the prefix with them
        how = _how(ctx, call, window)
        if how is not None:
            yield WindowMemory(call, name.rsplit(".", 1)[-1], how)


def _how(ctx: ModuleContext, call: cst.Call, window: Window) -> str | None:
    keywords = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
    if window.tokens is not None:
        budget = _int(keywords.get(window.tokens))
        if budget is None or budget >= SMALL_TOKEN_BUDGET:
            return None  # the default or a context-sized budget: compaction only when the window is full
        return f"keeps only the latest {window.what} that fit {budget:,} tokens"
    size = keywords.get(window.size) if window.size else None
    if size is None:
        return f"keeps only the latest {window.what} (its default window)"
    if _unset_parameter(ctx, size):
        return None  # `window_size=window_size` with the parameter's default None: no window unless a caller asks
    count = _int(size)
    return f"keeps only the latest {count} {window.what}" if count is not None else f"keeps only the latest `{ctx.code(size)}` {window.what}"


def _unset_parameter(ctx: ModuleContext, expr: cst.BaseExpression) -> bool:
    """A name that is only a parameter whose default is None."""
    if not isinstance(expr, cst.Name):
        return False
    bindings = [binding for binding, _ in ctx.assigned_values(expr)]
    return bool(bindings) and all(isinstance(b, cst.Param) and isinstance(b.default, cst.Name) and b.default.value == "None"
                                  for b in bindings)


def _int(expr: cst.BaseExpression | None) -> int | None:
    if isinstance(expr, cst.Integer):
        return int(expr.value.replace("_", ""), 0)
    return None
