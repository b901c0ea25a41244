"""How much of the conversation the bot sends."""

from __future__ import annotations

MAX_MESSAGES = 4


def window(messages: list[dict]) -> list[dict]:
    """The newest messages only, to keep requests short."""
    return messages[-MAX_MESSAGES:]  # link: history_truncated
