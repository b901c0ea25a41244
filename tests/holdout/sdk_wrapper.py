"""Thin wrapper around the Anthropic beta Messages API with retries, jitter and request ids."""
from __future__ import annotations

import logging
import random
import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import anthropic

log = logging.getLogger("llm")
BETAS = ["token-efficient-tools-2025-02-19"]
POLICY = (Path(__file__).parent / "policy.md").read_text()
RETRYABLE = (anthropic.RateLimitError, anthropic.APIConnectionError, anthropic.InternalServerError)


@dataclass
class Reply:
    text: str
    request_id: str
    latency_s: float
    cached_tokens: int


class LLM:
    def __init__(self, model: str = "claude-sonnet-4-5", attempts: int = 5) -> None:
        self.client = anthropic.Anthropic(max_retries=0)
        self.model = model
        self.attempts = attempts
        self.system = [{"type": "text", "text": POLICY, "cache_control": {"type": "ephemeral", "ttl": "1h"}}]

    def _backoff(self, attempt: int) -> None:
        delay = min(30.0, 2 ** attempt) * random.uniform(0.5, 1.5)
        log.warning("retrying in %.1fs", delay)
        time.sleep(delay)

    def send(self, messages: list[dict], tools: list[dict] | None = None) -> Reply:
        request_id = str(uuid.uuid4())
        started = time.monotonic()
        for attempt in range(self.attempts):
            try:
                resp = self.client.beta.messages.create(
                    model=self.model,
                    max_tokens=2048,
                    betas=BETAS,
                    system=self.system,
                    tools=tools or [],
                    messages=messages,
                    extra_headers={"X-Request-Id": request_id},
                    metadata={"user_id": "svc-wrapper"},
                )
                break
            except RETRYABLE:
                if attempt == self.attempts - 1:
                    raise
                self._backoff(attempt)
        log.info("request %s at %s", request_id, datetime.now(timezone.utc).isoformat())
        return Reply(
            text="".join(b.text for b in resp.content if b.type == "text"),
            request_id=request_id,
            latency_s=time.monotonic() - started,
            cached_tokens=resp.usage.cache_read_input_tokens or 0,
        )
