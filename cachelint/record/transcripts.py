"""`cachelint sessions`: the agents' own transcripts, summarized per session.

- Claude Code (~/.claude/projects/**/*.jsonl): an assistant response is written over several lines (one per
  content block) that repeat its usage: deduplicate on message id + requestId. Entries whose model is
  `<synthetic>` are messages Claude Code wrote itself (an interruption, an API error shown as a reply): no
  request was sent for them, so they are skipped.
- Codex (~/.codex/sessions/**/rollout-*.jsonl): a `token_usage_record` line per response (`response_id`,
  `usage` with `input_tokens` including `cached_input_tokens`); older rollouts only have `token_count` events,
  whose `last_token_usage` is counted when the running total moves. The model is the latest `turn_context`'s.

Transcripts hold no request bodies, so causes of breaks cannot be named from them: that takes the proxy.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cachelint.errors import CachelintError
from cachelint.prompt.usage import Usage, from_anthropic, token_count

DEFAULT_DIR = Path.home() / ".claude" / "projects"
CODEX_DIR = Path.home() / ".codex" / "sessions"
SYNTHETIC_MODEL = "<synthetic>"


@dataclass(slots=True)
class TranscriptSession:
    session: str
    project: str
    agent: str = "claude-code"
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
            "session": self.session, "agent": self.agent, "project": self.project, "requests": self.requests,
            "hit_rate": round(self.cache_read_tokens / self.prompt_tokens, 4) if self.prompt_tokens else 0.0,
            "prompt_tokens": self.prompt_tokens, "cache_read_tokens": self.cache_read_tokens,
            "cache_write_tokens": self.cache_write_tokens, "output_tokens": self.output_tokens,
            "cost": round(self.cost, 6), "models": sorted(self.models), "low_hit_responses": self.misses,
        }


def read_sessions(directory: str | Path | None = None) -> list[TranscriptSession]:
    """Sessions from a directory of transcripts (Claude Code's or Codex's, told apart per file), or by default from
    both agents' home directories (those that exist)."""
    roots = [Path(directory)] if directory else [p for p in (DEFAULT_DIR, CODEX_DIR) if p.exists()]
    if directory and not roots[0].exists():
        raise CachelintError(f"{directory}: no such directory")
    if not roots:
        raise CachelintError(f"{DEFAULT_DIR}: no such directory (Claude Code keeps its transcripts in ~/.claude/projects, Codex in ~/.codex/sessions)")
    sessions: dict[str, TranscriptSession] = {}
    seen: set[tuple[str, str]] = set()
    for root in roots:
        for path in sorted(root.rglob("*.jsonl")):
            entries = list(_entries(path))
            if entries and entries[0].get("type") == "session_meta":
                _read_codex(path, entries, sessions)
            else:
                _read_claude(path, entries, sessions, seen)
    return sorted(sessions.values(), key=lambda s: -s.prompt_tokens)


def _entries(path: Path):
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            continue  # a half-written last line
        if isinstance(entry, dict):
            yield entry


def _add(s: TranscriptSession, usage: Usage, model: str | None) -> None:
    from cachelint import pricing

    s.requests += 1
    s.prompt_tokens += usage.prompt_tokens
    s.cache_read_tokens += usage.cache_read_tokens
    s.cache_write_tokens += usage.cache_write_tokens
    s.output_tokens += usage.output_tokens or 0
    if model:
        s.models.add(model)
    if s.requests > 1 and usage.hit_rate < 0.5:
        s.misses += 1
    try:
        s.cost += pricing.cost(model, usage).total
    except CachelintError:
        pass


def _read_claude(path: Path, entries: list[dict[str, Any]], sessions: dict[str, TranscriptSession], seen: set[tuple[str, str]]) -> None:
    for entry in entries:
        message = entry.get("message")
        if entry.get("type") != "assistant" or not isinstance(message, dict) or not isinstance(message.get("usage"), dict):
            continue
        if message.get("model") == SYNTHETIC_MODEL:
            continue  # written by Claude Code itself: no request behind it
        key = (str(message.get("id")), str(entry.get("requestId")))
        if key in seen:
            continue
        seen.add(key)
        usage = from_anthropic(message["usage"])
        if usage is None:
            continue
        sid = str(entry.get("sessionId") or path.stem)
        _add(sessions.setdefault(sid, TranscriptSession(sid, path.parent.name)), usage, message.get("model"))


def _codex_usage(raw: Any) -> Usage | None:
    if not isinstance(raw, dict) or token_count(raw.get("input_tokens")) is None:
        return None
    prompt = raw["input_tokens"]
    read = min(prompt, token_count(raw.get("cached_input_tokens")) or 0)
    return Usage(prompt, read, token_count(raw.get("cache_write_input_tokens")) or 0, output_tokens=token_count(raw.get("output_tokens")))


def _read_codex(path: Path, entries: list[dict[str, Any]], sessions: dict[str, TranscriptSession]) -> None:
    meta = entries[0].get("payload") if isinstance(entries[0].get("payload"), dict) else {}
    sid = str(meta.get("id") or meta.get("session_id") or path.stem)
    s = sessions.setdefault(sid, TranscriptSession(sid, Path(str(meta.get("cwd") or "")).name or path.parent.name, agent="codex"))
    model = None
    records = [e for e in entries if e.get("type") == "token_usage_record"]
    responses: set[str] = set()
    last_total = None
    for entry in entries:
        payload = entry.get("payload") if isinstance(entry.get("payload"), dict) else {}
        if entry.get("type") == "turn_context" and isinstance(payload.get("model"), str):
            model = payload["model"]
        elif records and entry.get("type") == "token_usage_record":
            rid = str(payload.get("response_id"))
            usage = _codex_usage(payload.get("usage"))
            if usage is not None and rid not in responses:
                responses.add(rid)
                _add(s, usage, model)
        elif not records and entry.get("type") == "event_msg" and payload.get("type") == "token_count":
            info = payload.get("info") if isinstance(payload.get("info"), dict) else {}
            total = json.dumps(info.get("total_token_usage"), sort_keys=True)
            usage = _codex_usage(info.get("last_token_usage"))
            if usage is not None and usage.prompt_tokens and total != last_total:
                _add(s, usage, model)
            last_total = total
