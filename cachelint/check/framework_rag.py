"""Frameworks set up to put retrieved text into the system prompt, ahead of the conversation (CL104).

A chat with retrieval built on a framework never writes the request itself: the app picks a prompt or a chat
engine, and the framework fills it on every turn. Two common set-ups put what was retrieved for the newest
message into the system prompt, so the system prompt differs on every turn and none of the history after it is
read from cache:

- LangChain's conversational RAG: a `ChatPromptTemplate` whose system message has a `{context}` placeholder
  (filled by `create_stuff_documents_chain` with the documents retrieved for this turn) and a
  `MessagesPlaceholder` for the history after it;
- LlamaIndex's context chat engines (`chat_mode="context"` / `"condense_plus_context"`, `ContextChatEngine`,
  `CondensePlusContextChatEngine`): they join the retrieved nodes to the system prompt, then send the chat
  memory behind it.

What each does is a fact of the framework, written down here once; the code only has to construct it.
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from cachelint.check.module import ModuleContext
from cachelint.check.values import assigned_once, string_value

# a placeholder filled with what was retrieved for this turn
RETRIEVED_PLACEHOLDER = re.compile(r"^(?:context|docs|documents|context_str|retrieved\w*|relevant\w*|knowledge|memories|search_results|chunks|sources)$")
# a module that retrieves: the placeholder is filled per turn, not once per conversation
RETRIEVAL_WORD = re.compile(r"retriever|as_retriever\(|similarity_search|create_stuff_documents_chain\(|create_retrieval_chain\(")

CHAT_PROMPT = frozenset({"langchain_core.prompts.ChatPromptTemplate", "langchain_core.prompts.chat.ChatPromptTemplate",
                         "langchain.prompts.ChatPromptTemplate", "langchain.prompts.chat.ChatPromptTemplate"})
HISTORY_PLACEHOLDER = frozenset({"langchain_core.prompts.MessagesPlaceholder", "langchain_core.prompts.chat.MessagesPlaceholder",
                                 "langchain.prompts.MessagesPlaceholder", "langchain.prompts.chat.MessagesPlaceholder"})
SYSTEM_TEMPLATE = frozenset({"langchain_core.prompts.SystemMessagePromptTemplate", "langchain_core.prompts.chat.SystemMessagePromptTemplate",
                             "langchain.prompts.SystemMessagePromptTemplate", "langchain.prompts.chat.SystemMessagePromptTemplate"})

CONTEXT_ENGINES = frozenset({
    "llama_index.core.chat_engine.ContextChatEngine", "llama_index.core.chat_engine.context.ContextChatEngine",
    "llama_index.core.chat_engine.CondensePlusContextChatEngine",
    "llama_index.core.chat_engine.condense_plus_context.CondensePlusContextChatEngine",
})
CONTEXT_MODES = ("context", "condense_plus_context")

# the text test of gate.py: a module that may hold either set-up
FRAMEWORK_RAG = re.compile(r"MessagesPlaceholder|\(\s*[\"']placeholder[\"']\s*,|ContextChatEngine|chat_mode\s*=\s*(?:[\"'](?:context|condense_plus_context)[\"']|ChatMode\.(?:CONTEXT|CONDENSE_PLUS_CONTEXT))")


@dataclass(frozen=True, slots=True)
class FrameworkRag:
    node: cst.CSTNode
    how: str  # what puts retrieved text where: "LangChain fills `{context}` ... ahead of `MessagesPlaceholder(...)`"


def framework_rag(ctx: ModuleContext) -> Iterator[FrameworkRag]:
    if ctx.is_test:
        return
    yield from _chat_prompts(ctx)
    yield from _context_engines(ctx)


def _chat_prompts(ctx: ModuleContext) -> Iterator[FrameworkRag]:
    """`ChatPromptTemplate.from_messages([("system", "...{context}"), MessagesPlaceholder("chat_history"), ...])` in a
    module that retrieves."""
    if not RETRIEVAL_WORD.search(ctx.source):
        return
    for call in ctx.nodes(cst.Call):
        func = call.func
        owner = func.value if isinstance(func, cst.Attribute) and func.attr.value in ("from_messages", "from_template") else func
        if not call.args or ctx.qualified_name_in(owner, CHAT_PROMPT) is None:
            continue
        messages = assigned_once(ctx, call.args[0].value)
        if not isinstance(messages, (cst.List, cst.Tuple)):
            continue
        system = None
        for element in messages.elements:
            value = element.value
            if system is None:
                placeholder = _retrieved_placeholder(ctx, value)
                if placeholder is not None:
                    system = placeholder
                continue
            history = _history_placeholder(ctx, value)
            if history is not None and not _filled_once(ctx, call, system[0]):
                yield FrameworkRag(system[1], f"LangChain fills this system message's `{{{system[0]}}}` with the documents retrieved "
                                   f"for each message, and the history (`{history}`) comes after it")
                break


def _retrieved_placeholder(ctx: ModuleContext, message: cst.BaseExpression) -> tuple[str, cst.CSTNode] | None:
    """(placeholder, node) of a system message template with a placeholder for retrieved text: `("system", T)` or
    `SystemMessagePromptTemplate.from_template(T)`."""
    template = None
    if isinstance(message, cst.Tuple) and len(message.elements) == 2 and string_value(message.elements[0].value) == "system":
        template = message.elements[1].value
    elif isinstance(message, cst.Call) and isinstance(message.func, cst.Attribute) and message.args \
            and ctx.qualified_name_in(message.func.value, SYSTEM_TEMPLATE) is not None:
        template = message.args[0].value
    if template is None:
        return None
    text = string_value(assigned_once(ctx, template))
    if text is None:
        return None
    try:
        fields = [field for _, field, _, _ in string.Formatter().parse(text) if field]
    except ValueError:
        return None
    found = next((f for f in fields if RETRIEVED_PLACEHOLDER.match(f)), None)
    return (found, message) if found is not None else None


def _filled_once(ctx: ModuleContext, prompt: cst.Call, placeholder: str) -> bool:
    """`ChatPromptTemplate.from_messages([...]).partial(context=handbook)`: the placeholder is filled once, for good."""
    parent = ctx.parent(prompt)
    call = ctx.parent(parent) if isinstance(parent, cst.Attribute) and parent.attr.value == "partial" else None
    return isinstance(call, cst.Call) and any(a.keyword is not None and a.keyword.value == placeholder for a in call.args)


def _history_placeholder(ctx: ModuleContext, message: cst.BaseExpression) -> str | None:
    """`MessagesPlaceholder("chat_history")` / `MessagesPlaceholder(variable_name="history")` / `("placeholder",
    "{chat_history}")`: the conversation, put in by the chain."""
    if isinstance(message, cst.Call) and ctx.qualified_name_in(message.func, HISTORY_PLACEHOLDER) is not None:
        return ctx.code(message)
    if isinstance(message, cst.Tuple) and len(message.elements) == 2 and string_value(message.elements[0].value) == "placeholder":
        return ctx.code(message)
    return None


def _context_engines(ctx: ModuleContext) -> Iterator[FrameworkRag]:
    """`index.as_chat_engine(chat_mode="context")`, `ContextChatEngine.from_defaults(...)`."""
    for call in ctx.nodes(cst.Call):
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value == "as_chat_engine":
            mode = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == "chat_mode"), None)
            text = string_value(mode) if mode is not None else None
            if mode is not None and text is None and isinstance(mode, cst.Attribute):
                text = mode.attr.value.lower()  # ChatMode.CONTEXT
            if text in CONTEXT_MODES:
                yield FrameworkRag(call, f'LlamaIndex\'s `chat_mode="{text}"` engine joins the text it retrieves for each message to '
                                   "the system prompt and sends the chat memory after it")
            continue
        target = func.value if isinstance(func, cst.Attribute) and func.attr.value == "from_defaults" else func
        name = ctx.qualified_name_in(target, CONTEXT_ENGINES)
        if name is not None:
            yield FrameworkRag(call, f"LlamaIndex's {name.rsplit('.', 1)[-1]} joins the text it retrieves for each message to the "
                               "system prompt and sends the chat memory after it")
