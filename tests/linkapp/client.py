"""Sends the bot's requests (the one module that talks to the API)."""

from __future__ import annotations

import anthropic
import openai

from .history import window

MODEL = "claude-sonnet-4-5"


class SupportBot:
    """One conversation with one customer."""

    def __init__(self, client: anthropic.Anthropic, conversation: str, *, keep_all: bool = True) -> None:
        self.client = client
        self.conversation = conversation
        self.keep_all = keep_all
        self.messages: list[dict] = []

    def ask(self, question: str, *, system: list[dict], tools: list[dict]) -> str:
        self.messages.append({"role": "user", "content": question})
        sent = self.messages if self.keep_all else window(self.messages)
        reply = self.client.messages.create(
            model=MODEL, max_tokens=64, system=system, tools=tools, messages=sent,
            extra_headers={"x-claude-code-session-id": self.conversation},
        )
        text = reply.content[0].text
        self.messages.append({"role": "assistant", "content": text})
        return text


class ChatBot:
    """The same bot on an OpenAI-compatible chat API (the system prompt is the first message)."""

    def __init__(self, client: openai.OpenAI, conversation: str) -> None:
        self.client = client
        self.conversation = conversation
        self.history: list[dict] = []

    def ask(self, question: str, *, instructions: str) -> str:
        self.history.append({"role": "user", "content": question})
        reply = self.client.chat.completions.create(
            model="gpt-4.1", messages=[{"role": "system", "content": instructions}, *self.history],
            extra_body={"prompt_cache_key": self.conversation},
        )
        text = reply.choices[0].message.content or ""
        self.history.append({"role": "assistant", "content": text})
        return text
