"""System prompts of the support bot."""

from __future__ import annotations

from dataclasses import dataclass
import uuid
from datetime import datetime

INSTRUCTIONS = (
    "You are the support assistant of Acme Parcel. Answer in two sentences at most, quote the order number "
    "the customer gave, never promise a refund, and hand over to a human when the customer asks for one. "
) * 24


@dataclass
class Customer:
    name: str
    open_tickets: int


def stamped_system() -> list[dict]:
    """The instructions with the current time ahead of them (the time changes on every request)."""
    text = f"Current time: {datetime.now().isoformat()}\n{INSTRUCTIONS}"  # link: timestamp
    return [{"type": "text", "text": text, "cache_control": {"type": "ephemeral"}}]


def customer_system(customer: Customer) -> list[dict]:
    """The instructions behind a line about the customer (their ticket count changes mid-conversation)."""
    text = f"Customer on file: {customer.name}, with {customer.open_tickets} open tickets.\n{INSTRUCTIONS}"  # link: per_user
    return [{"type": "text", "text": text, "cache_control": {"type": "ephemeral"}}]


def plain_system() -> list[dict]:
    return [{"type": "text", "text": INSTRUCTIONS, "cache_control": {"type": "ephemeral"}}]


def traced_instructions() -> str:
    """The instructions as a chat system message, tagged with a trace id for the logs (new every request)."""
    return f"Trace {uuid.uuid4()} -- support session.\n{INSTRUCTIONS}"  # link: request_id
