"""Celery worker that drafts replies to support tickets (Anthropic); several worker processes per host."""

from __future__ import annotations

import functools
import json
import os
import socket
from datetime import datetime, timezone

import redis
from anthropic import Anthropic
from celery import Celery

app = Celery("drafts", broker=os.environ.get("BROKER_URL", "redis://localhost:6379/0"))
client = Anthropic()
kv = redis.Redis.from_url(os.environ.get("REDIS_URL", "redis://localhost:6379/1"), decode_responses=True)
MODEL = "claude-sonnet-4-5"
WORKER_STARTED = datetime.now(timezone.utc).isoformat(timespec="seconds")  # expect: CL101
GUIDELINES = (
    "Draft a reply to the customer's support ticket. Match the customer's language, acknowledge the problem, "
    "give concrete next steps, and never promise refunds or delivery dates. Sign as 'The Brightline Team'."
)


@functools.lru_cache(maxsize=1)
def system_prompt() -> str:
    return f"{GUIDELINES}\n\nDrafted by worker {socket.gethostname()}/{os.getpid()}, up since {WORKER_STARTED}."  # expect: CL101


def customer_context(customer_id: str) -> str:
    prefs = kv.hgetall(f"customer:{customer_id}:prefs")
    return "Customer preferences: " + json.dumps(prefs)  # expect: CL102


@app.task(bind=True, max_retries=3, acks_late=True)
def draft_reply(self, ticket_id: str, customer_id: str, ticket_text: str) -> str:
    started = datetime.now(timezone.utc)
    try:
        response = client.messages.create(
            model=MODEL,
            max_tokens=1500,
            system=[
                {"type": "text", "text": system_prompt()},
                {"type": "text", "text": customer_context(customer_id)},
            ],
            messages=[{"role": "user", "content": ticket_text}],
        )
    except Exception as exc:
        raise self.retry(exc=exc, countdown=30)
    draft = response.content[0].text
    kv.hset(f"ticket:{ticket_id}", mapping={
        "draft": draft,
        "drafted_at": datetime.now(timezone.utc).isoformat(),
        "seconds": (datetime.now(timezone.utc) - started).total_seconds(),
    })
    return draft
