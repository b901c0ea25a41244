"""Contract-review bot with hand-placed prompt-caching breakpoints (Anthropic Messages API)."""

from __future__ import annotations

from anthropic import Anthropic

client = Anthropic()
EPHEMERAL = {"type": "ephemeral"}
HOUR = {"type": "ephemeral", "ttl": "1h"}

REVIEW_INSTRUCTIONS = (
    "You review commercial contracts for a mid-size software company. For every question, quote the "
    "relevant clauses by number, explain the risk in plain English and propose a redline."
)


def classify(snippet: str) -> str:
    response = client.messages.create(
        model="claude-haiku-4-5",
        max_tokens=20,
        system=[{"type": "text", "text": "Classify the clause: liability, payment, termination or other.", "cache_control": EPHEMERAL}],  # expect: CL504
        messages=[{"role": "user", "content": snippet}],
    )
    return response.content[0].text.strip()


def compare(contract_a: str, contract_b: str, playbook: str, question: str):
    return client.messages.create(  # expect: CL503
        model="claude-sonnet-4-5",
        max_tokens=2048,
        cache_control=EPHEMERAL,
        system=[
            {"type": "text", "text": REVIEW_INSTRUCTIONS},
            {"type": "text", "text": playbook, "cache_control": EPHEMERAL},
            {"type": "text", "text": contract_a, "cache_control": HOUR},  # expect: CL505
            {"type": "text", "text": contract_b, "cache_control": HOUR},
        ],
        messages=[{"role": "user", "content": [{"type": "text", "text": question, "cache_control": EPHEMERAL}]}],
    )


def review_session(contract_text: str) -> None:
    system = [
        {"type": "text", "text": REVIEW_INSTRUCTIONS},
        {"type": "text", "text": contract_text, "cache_control": HOUR},
    ]
    messages: list[dict] = []
    while True:
        question = input("question> ").strip()
        if not question:
            return
        messages.append({"role": "user", "content": [{"type": "text", "text": question, "cache_control": EPHEMERAL}]})  # expect: CL503
        reply = client.messages.create(model="claude-sonnet-4-5", max_tokens=1024, system=system, messages=messages)
        messages.append({"role": "assistant", "content": reply.content})
        print(reply.content[0].text)


def review_session_fixed(contract_text: str) -> None:
    """Same, with one moving breakpoint: the old marker is removed before the new one is set."""
    system = [
        {"type": "text", "text": REVIEW_INSTRUCTIONS},
        {"type": "text", "text": contract_text, "cache_control": HOUR},
    ]
    messages: list[dict] = []
    while question := input("question> ").strip():
        for message in messages:
            if message["role"] == "user":
                message["content"][-1].pop("cache_control", None)
        messages.append({"role": "user", "content": [{"type": "text", "text": question, "cache_control": EPHEMERAL}]})
        reply = client.messages.create(model="claude-sonnet-4-5", max_tokens=1024, system=system, messages=messages)
        messages.append({"role": "assistant", "content": [{"type": "text", "text": reply.content[0].text}]})
        print(reply.content[0].text)
