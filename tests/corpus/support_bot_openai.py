"""Customer-support chatbot on OpenAI Chat Completions, one conversation per browser session."""

from __future__ import annotations

import logging
import time

import tiktoken
from openai import OpenAI

log = logging.getLogger(__name__)

MODEL = "gpt-4o-mini"
MAX_CONTEXT_TOKENS = 12_000
MAX_MESSAGES = 30
SYSTEM = (
    "You are the support assistant of Northwind Outdoor Gear. Answer questions about orders, returns, "
    "sizing and warranty. Be friendly and concise, never invent order data, and hand over to a human "
    "agent when the customer asks for one or is upset."
)
_encoding = tiktoken.get_encoding("o200k_base")


class SupportBot:
    def __init__(self, customer_name: str, budget: int = MAX_CONTEXT_TOKENS) -> None:
        self.client = OpenAI()
        self.budget = budget
        self.history = [{"role": "system", "content": f"{SYSTEM}\n\nThe customer's name is {customer_name}."}]

    def _tokens(self) -> int:
        return sum(len(_encoding.encode(m["content"])) for m in self.history)

    def _trim(self) -> None:
        while self._tokens() > self.budget and len(self.history) > 2:
            self.history.pop(1)  # expect: CL301

    def ask(self, text: str) -> str:
        self.history.append({"role": "user", "content": text})
        self._trim()
        started = time.time()
        response = self.client.chat.completions.create(model=MODEL, messages=self.history, temperature=0.3)
        log.info("completion took %.2fs, cached=%s", time.time() - started,
                 response.usage.prompt_tokens_details.cached_tokens)
        answer = response.choices[0].message.content or ""
        self.history.append({"role": "assistant", "content": answer})
        return answer


def cli() -> None:
    bot_client = OpenAI()
    history = [{"role": "system", "content": SYSTEM}]
    while True:
        text = input("you> ").strip()
        if not text:
            break
        history.append({"role": "user", "content": text})
        history = [history[0]] + history[-MAX_MESSAGES:]  # expect: CL301
        reply = bot_client.chat.completions.create(model=MODEL, messages=history)
        content = reply.choices[0].message.content
        history.append({"role": "assistant", "content": content})
        print(f"bot> {content}")


if __name__ == "__main__":
    cli()
