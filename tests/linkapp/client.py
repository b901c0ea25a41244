"""Sends the bot's requests (the one module that talks to the API)."""

from __future__ import annotations

import anthropic

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
