"""Acme's support bot: a small agent on the Anthropic SDK, with the caching mistakes cachelint finds.

`cachelint demo` lints this file; `cachelint check cachelint/demo/data/support_bot.py` does the same.
"""

import json
from datetime import datetime

import anthropic

client = anthropic.Anthropic()
HANDBOOK = open("handbook.md").read() if __name__ == "__main__" else ""
TOOLS = {}


def tool(fn):
    """Register a tool; the registry fills in import order."""
    TOOLS[fn.__name__] = {"name": fn.__name__, "description": fn.__doc__, "input_schema": {"type": "object"}}
    return fn


@tool
def lookup_order(order_id: str) -> str:
    """Look up an order by id."""
    return json.dumps({"id": order_id, "status": "shipped"})


@tool
def refund(order_id: str) -> str:
    """Refund an order."""
    return "refunded"


def customer_profile(db, customer_id: str) -> dict:
    """The customer's profile, kept one row per field."""
    profile = {}
    for field, value in db.execute("SELECT field, value FROM customer_fields WHERE customer_id = ?", (customer_id,)):
        profile[field] = value
    return profile


def system_prompt(db, customer_id: str) -> str:
    stamp = datetime.now().strftime("%Y-%m-%d %H:%M")
    customer = json.dumps(customer_profile(db, customer_id))
    return f"You are Acme's support agent. Local time: {stamp}.\n{HANDBOOK}\nCustomer: {customer}"


def run(db, customer_id: str, first_message: str) -> None:
    messages = [{"role": "user", "content": first_message}]
    for turn in range(20):
        if len(messages) > 12:
            messages = messages[-12:]
        reply = client.messages.create(
            model="claude-sonnet-4-5",
            max_tokens=1024,
            system=system_prompt(db, customer_id),
            tools=list(TOOLS.values()),
            messages=messages,
        )
        messages.append({"role": "assistant", "content": reply.content})
        messages.append({"role": "user", "content": input("> ")})
