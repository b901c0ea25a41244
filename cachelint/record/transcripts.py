"""`cachelint sessions`: Claude Code's own transcripts (~/.claude/projects/**/*.jsonl), summarized per session.

An assistant response is written over several lines (one per content block) that repeat its usage:
deduplicate on message id + requestId. Transcripts hold no request bodies, so causes of breaks cannot be
named from them: that takes the proxy.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cachelint.errors import CachelintError
from cachelint.prompt.usage import from_anthropic

DEFAULT_DIR = Path.home() / ".claude" / "projects"


@dataclass(slots=True)
class TranscriptSession:
    session: str
    project: str
    requests: int = 0
    prompt_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0
    models: set[str] = field(default_factory=set)
    misses: int = 0  # responses that read less than half of their prompt from cache (after the first)

    def to_json(self) -> dict[str, Any]:
        return {
            "session": self.session, "project": self.project, "requests": self.requests,
            "hit_rate": round(self.cache_read_tokens / self.prompt_tokens, 4) if self.prompt_tokens else 0.0,
            "prompt_tokens": self.prompt_tokens, "cache_read_tokens": self.cache_read_tokens,
            "cache_write_tokens": self.cache_write_tokens, "output_tokens": self.output_tokens,
            "cost": round(self.cost, 6), "models": sorted(self.models), "low_hit_responses": self.misses,
        }


def read_sessions(directory: str | Path | None = None) -> list[TranscriptSession]:
    from cachelint import pricing

    root = Path(directory) if directory else DEFAULT_DIR
    if not root.exists():
        raise CachelintError(f"{root}: no such directory (Claude Code keeps its transcripts in ~/.claude/projects)")
    sessions: dict[str, TranscriptSession] = {}
    seen: set[tuple[str, str]] = set()
    for path in sorted(root.rglob("*.jsonl")):
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                entry = json.loads(line)
            except json.JSONDecodeError:
                continue  # a half-written last line
            message = entry.get("message") if isinstance(entry, dict) else None
            if entry.get("type") != "assistant" or not isinstance(message, dict) or not isinstance(message.get("usage"), dict):
                continue
            key = (str(message.get("id")), str(entry.get("requestId")))
            if key in seen:
                continue
            seen.add(key)
            usage = from_anthropic(message["usage"])
            if usage is None:
                continue
            sid = str(entry.get("sessionId") or path.stem)
            s = sessions.setdefault(sid, TranscriptSession(sid, path.parent.name))
            s.requests += 1
            s.prompt_tokens += usage.prompt_tokens
            s.cache_read_tokens += usage.cache_read_tokens
            s.cache_write_tokens += usage.cache_write_tokens
            s.output_tokens += usage.output_tokens or 0
            model = message.get("model")
            if model:
                s.models.add(model)
            if s.requests > 1 and usage.hit_rate < 0.5:
                s.misses += 1
            try:
                s.cost += pricing.cost(model, usage).total
            except CachelintError:
                pass
    return sorted(sessions.values(), key=lambda s: -s.prompt_tokens)
