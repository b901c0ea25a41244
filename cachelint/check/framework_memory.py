"""Agent frameworks' memory classes that are sliding windows (CL301).

An app rarely writes its own history window: it picks one of its framework's memory classes, and several of
them keep only the latest N messages or turns (or the latest that fit a token budget) on every request. Once a
conversation passes N, each new turn drops the oldest message from the front of the history, right after the
system prompt, so no request can reuse the previous one's cached history. What each class does is a fact of the
framework, written down here once; the code only has to construct it.

A budget in tokens counts only when it is small: a buffer that keeps what fits the model's context window
compacts only when the window is full, which the labelling protocol and the rule treat as fine. LangChain's token
and summary buffers default to 2,000 tokens (`max_token_limit`), a small window; the other frameworks' defaults
follow the model's context window.
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
    tokens: str | None = None  # the keyword of a token budget (reported when small)
    what: str = "messages"
    default_tokens: int | None = None  # the budget when the keyword is not given (None: what fits the context window)


# qualified name -> how the class cuts the history
WINDOWS: dict[str, Window] = {
    # LangChain's classic memory
    "langchain.memory.ConversationBufferWindowMemory": Window("k", what="exchanges"),
    "langchain.memory.buffer_window.ConversationBufferWindowMemory": Window("k", what="exchanges"),
    "langchain_community.memory.ConversationBufferWindowMemory": Window("k", what="exchanges"),
    "langchain.memory.ConversationTokenBufferMemory": Window(None, tokens="max_token_limit", default_tokens=2000),
    "langchain.memory.token_buffer.ConversationTokenBufferMemory": Window(None, tokens="max_token_limit", default_tokens=2000),
    "langchain.memory.ConversationSummaryBufferMemory": Window(None, tokens="max_token_limit", default_tokens=2000),
    "langchain.memory.summary_buffer.ConversationSummaryBufferMemory": Window(None, tokens="max_token_limit", default_tokens=2000),
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
        if window.tokens not in keywords and window.default_tokens is not None:
            return f"keeps only the latest {window.what} that fit {window.default_tokens:,} tokens (its default)"
        budgets = _ints(ctx, keywords.get(window.tokens))
        if not budgets or min(budgets) >= SMALL_TOKEN_BUDGET:
            return None  # the default or a context-sized budget: compaction only when the window is full
        if len(budgets) > 1:  # 100000 if "preview" in model else (29000 if "gpt-4" in model else 7500)
            return f"keeps only the latest {window.what} that fit {min(budgets):,} tokens (with some settings; {max(budgets):,} with others)"
        return f"keeps only the latest {window.what} that fit {budgets[0]:,} tokens"
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


def _ints(ctx: ModuleContext, expr: cst.BaseExpression | None, depth: int = 0) -> list[int]:
    """The budgets a keyword can take: a literal, either branch of `a if test else b`, or a local name bound once
    to such a value."""
    value = _int(expr)
    if value is not None:
        return [value]
    if depth > 3 or expr is None:
        return []
    if isinstance(expr, cst.IfExp):
        body, orelse = _ints(ctx, expr.body, depth + 1), _ints(ctx, expr.orelse, depth + 1)
        return body + orelse if body and orelse else []
    if isinstance(expr, cst.Name):
        values = [v for _, v in ctx.assigned_values(expr)]
        if len(values) == 1 and values[0] is not None:
            return _ints(ctx, values[0], depth + 1)
    return []


def _int(expr: cst.BaseExpression | None) -> int | None:
    if isinstance(expr, cst.Integer):
        return int(expr.value.replace("_", ""), 0)
    return None
