"""Long-running pair-programming chat with compaction and tool-output pruning (Anthropic)."""

from __future__ import annotations

import anthropic

MODEL = "claude-sonnet-4-5"
SYSTEM = "You are a pair-programming assistant. Think step by step and show code in fenced blocks."
KEEP_LAST = 12
COMPACT_AT = 150_000


class Chat:
    def __init__(self) -> None:
        self.client = anthropic.Anthropic()
        self.messages: list[dict] = []
        self.tokens_used = 0

    def _summarize(self) -> str:
        transcript = "\n".join(f"{m['role']}: {m['content']}" for m in self.messages if isinstance(m["content"], str))
        result = self.client.messages.create(
            model=MODEL,
            max_tokens=2000,
            system="Summarize this conversation for a handover: goals, decisions, open tasks, relevant code.",
            messages=[{"role": "user", "content": transcript}],
        )
        return result.content[0].text

    def compact(self) -> None:
        """Replace the conversation by a summary, in one step, when it gets too long."""
        summary = self._summarize()
        self.messages = [
            {"role": "user", "content": f"Summary of our conversation so far:\n{summary}"},
            {"role": "assistant", "content": "Understood. Let's continue from there."},
        ]

    def prune_tool_outputs(self) -> None:
        """Shrink the context: tool outputs older than the last KEEP_LAST messages are replaced by a stub."""
        for message in self.messages[:-KEEP_LAST]:
            if isinstance(message["content"], list):
                for block in message["content"]:
                    if block.get("type") == "tool_result":
                        block["content"] = "[output removed to save context]"  # expect: CL301

    def send(self, text: str) -> str:
        self.messages.append({"role": "user", "content": text.strip()})
        if self.tokens_used > COMPACT_AT:
            self.compact()
        self.prune_tool_outputs()
        # (the Chat object is the conversation: it grows every turn and is sent with no breakpoint)
        response = self.client.messages.create(model=MODEL, max_tokens=4096, system=SYSTEM, messages=self.messages)  # expect: CL501
        self.tokens_used = response.usage.input_tokens + response.usage.output_tokens
        self.messages.append({"role": "assistant", "content": response.content[0].text})
        return response.content[0].text

    def regenerate(self, hint: str) -> str:
        """Drop the answer just given, add a hint to the question just asked, and ask again."""
        if self.messages and self.messages[-1]["role"] == "assistant":
            self.messages.pop()
        self.messages[-1]["content"] = f"{self.messages[-1]['content']}\n\n(Hint: {hint})"
        response = self.client.messages.create(model=MODEL, max_tokens=4096, system=SYSTEM, messages=self.messages)  # expect: CL501
        self.messages.append({"role": "assistant", "content": response.content[0].text})
        return response.content[0].text


def repl() -> None:
    chat = Chat()
    while True:
        line = input(">>> ")
        if line.startswith("/retry "):
            print(chat.regenerate(line.removeprefix("/retry ")))
        elif line == "/compact":
            chat.compact()
        else:
            print(chat.send(line))
