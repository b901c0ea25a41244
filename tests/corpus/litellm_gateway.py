"""City help-desk triage bot, provider-agnostic through LiteLLM, with a fallback model on outages."""

from __future__ import annotations

import json
import time
from datetime import datetime, timezone

import litellm
from litellm.exceptions import RateLimitError, ServiceUnavailableError

PRIMARY = "anthropic/claude-sonnet-4-5"
FALLBACK = "openai/gpt-4.1"
RULES = (
    "You are the triage assistant of the Fernwood city help desk. Classify each request, ask for missing "
    "details (address, photos), and tell the citizen which department will handle it and how long it "
    "usually takes. Never promise a date for a repair."
)


def chat_loop(profile: dict) -> None:
    history: list[dict] = []
    failures = 0
    citizen = "Citizen profile: " + json.dumps(profile, sort_keys=True)
    while True:
        text = input("> ")
        if text in ("quit", "exit"):
            break
        history.append({"role": "user", "content": f"[{datetime.now():%H:%M}] {text}"})
        system = [
            {"type": "text", "text": RULES},
            {"type": "text", "text": citizen},
            {"type": "text", "text": f"Server clock: {datetime.now(timezone.utc):%H:%M:%S} UTC", "cache_control": {"type": "ephemeral"}},  # expect: CL101, CL502
        ]
        model = FALLBACK if failures >= 2 else PRIMARY  # expect: CL401
        try:
            response = litellm.completion(model=model, messages=[{"role": "system", "content": system}, *history], max_tokens=800)
        except (RateLimitError, ServiceUnavailableError):
            failures += 1
            time.sleep(2 ** failures)
            history.pop()
            continue
        reply = response.choices[0].message.content
        history.append({"role": "assistant", "content": reply})
        print(reply)


def classify_once(text: str) -> str:
    """One-shot classification for the email channel: nothing is reused, nothing to cache."""
    started = time.time()
    response = litellm.completion(
        model=PRIMARY,
        messages=[
            {"role": "system", "content": RULES},
            {"role": "user", "content": f"Received {datetime.now(timezone.utc).isoformat()}:\n{text}"},
        ],
        max_tokens=50,
    )
    print(f"classified in {time.time() - started:.2f}s")
    return response.choices[0].message.content
