"""Meeting-notes summarizer with token budgeting: count_tokens before create (Anthropic)."""

from __future__ import annotations

import logging
import time
from datetime import datetime, timezone
from uuid import uuid4

import anthropic

log = logging.getLogger(__name__)
client = anthropic.Anthropic()
MODEL = "claude-sonnet-4-5"
SYSTEM = "You turn raw meeting transcripts into crisp notes: decisions, action items with owners, open questions."
BUDGET = 150_000


def build_request(transcript: str, meeting_start: datetime) -> dict:
    header = (f"Meeting started {meeting_start:%Y-%m-%d %H:%M} UTC; "
              f"summarized {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC.")
    return {"model": MODEL, "system": SYSTEM, "messages": [{"role": "user", "content": f"{header}\n\n{transcript}"}]}


def summarize(transcript: str, meeting_start: datetime) -> str:
    request = build_request(transcript, meeting_start)
    tokens = client.messages.count_tokens(**request).input_tokens
    if tokens > BUDGET:
        raise ValueError(f"transcript too long: {tokens} tokens")
    started = time.perf_counter()
    response = client.messages.create(max_tokens=4000, **request)
    log.info("summarized %d tokens in %.1fs at %s", tokens, time.perf_counter() - started, datetime.now().isoformat())
    return response.content[0].text


def estimate_digest_tokens(items: list[str]) -> int:
    """Only an estimate for the admin dashboard: nothing is generated or cached here."""
    result = client.messages.count_tokens(
        model=MODEL,
        system=f"{SYSTEM}\nDigest generated {datetime.now():%Y-%m-%d %H:%M:%S}",
        messages=[{"role": "user", "content": "\n".join(items)}],
    )
    return result.input_tokens


def submit_nightly_batch(transcripts: dict[str, str]) -> str:
    batch = client.messages.batches.create(requests=[
        {"custom_id": f"{meeting_id}-{uuid4().hex[:8]}",
         "params": {"model": MODEL, "max_tokens": 4000, "system": SYSTEM,
                    "messages": [{"role": "user", "content": text}]}}
        for meeting_id, text in sorted(transcripts.items())
    ])
    return batch.id


def chat_turn(history: list[dict], text: str) -> str:
    history.append({"role": "user", "content": f"[{datetime.now():%H:%M}] {text}"})
    with client.messages.stream(model=MODEL, max_tokens=1024, system=SYSTEM, messages=history) as stream:
        reply = stream.get_final_message()
    history.append({"role": "assistant", "content": reply.content[0].text})
    return reply.content[0].text
