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
import os
import stat
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
    unpriced: set[str] = field(default_factory=set)  # models the price table does not know: the cost is unknown
    models: set[str] = field(default_factory=set)
    misses: int = 0  # responses that read less than half of their prompt from cache (after the first)

    def to_json(self) -> dict[str, Any]:
        return {
            "session": self.session, "agent": self.agent, "project": self.project, "requests": self.requests,
            "hit_rate": round(self.cache_read_tokens / self.prompt_tokens, 4) if self.prompt_tokens else 0.0,
            "prompt_tokens": self.prompt_tokens, "cache_read_tokens": self.cache_read_tokens,
            "cache_write_tokens": self.cache_write_tokens, "output_tokens": self.output_tokens,
            "cost": None if self.unpriced else round(self.cost, 6), "unpriced_models": sorted(self.unpriced),
            "models": sorted(self.models), "low_hit_responses": self.misses,
        }


@dataclass(slots=True)
class Skipped:
    """What a run left out, so it can say so: lines that are no transcript entry (a half-written last line, a
    line an older or newer agent wrote differently), and files that are not regular files (a FIFO, a socket) or
    cannot be read."""

    lines: int = 0
    files: list[str] = field(default_factory=list)

    def messages(self) -> list[str]:
        out = [f"skipped {f}" for f in self.files]
        if self.lines:
            out.append(f"skipped {self.lines:,} transcript line{'s' if self.lines != 1 else ''} that could not be read as an entry")
        return out


def read_sessions(directory: str | Path | None = None, skipped: Skipped | None = None) -> list[TranscriptSession]:
    """Sessions from a directory of transcripts (Claude Code's or Codex's, told apart per file), or by default from
    both agents' home directories (those that exist). One bad line or file never stops the run: it is skipped and
    counted in `skipped`."""
    skipped = skipped if skipped is not None else Skipped()
    roots = [Path(directory)] if directory else [p for p in (DEFAULT_DIR, CODEX_DIR) if p.exists()]
    if directory and not roots[0].exists():
        raise CachelintError(f"{directory}: no such directory")
    if not roots:
        raise CachelintError(f"{DEFAULT_DIR}: no such directory (Claude Code keeps its transcripts in ~/.claude/projects, Codex in ~/.codex/sessions)")
    sessions: dict[str, TranscriptSession] = {}
    seen: set[tuple[str, str]] = set()
    for root in roots:
        for path in sorted(root.rglob("*.jsonl")):
            entries = _entries(path, skipped)
            if entries is None:
                continue
            if entries and entries[0].get("type") == "session_meta":
                skipped.lines += _read_codex(path, entries, sessions)
            else:
                skipped.lines += _read_claude(path, entries, sessions, seen)
    return sorted(sessions.values(), key=lambda s: -s.prompt_tokens)


def _entries(path: Path, skipped: Skipped) -> list[dict[str, Any]] | None:
    """The JSON objects of one transcript, or None for a file that is not a regular readable file (a FIFO named
    *.jsonl would block a plain open forever: it is opened without blocking and left alone)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        skipped.files.append(f"{path}: cannot read: {exc.strerror or exc}")
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            skipped.files.append(f"{path}: not a regular file")
            return None
        with os.fdopen(fd, "r", encoding="utf-8", errors="replace", closefd=False) as f:
            entries = []
            for line in f:
                if not line.strip():
                    continue
                try:
                    entry = json.loads(line)
                except (ValueError, RecursionError):
                    entry = None  # a half-written last line, or not JSON at all
                if isinstance(entry, dict):
                    entries.append(entry)
                else:
                    skipped.lines += 1
            return entries
    except OSError as exc:
        skipped.files.append(f"{path}: cannot read: {exc.strerror or exc}")
        return None
    finally:
        os.close(fd)


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
        s.unpriced.add(model or "(no model)")


def _read_claude(path: Path, entries: list[dict[str, Any]], sessions: dict[str, TranscriptSession], seen: set[tuple[str, str]]) -> int:
    """Count Claude Code's responses; the number of entries that could not be read."""
    bad = 0
    for entry in entries:
        try:
            _claude_entry(path, entry, sessions, seen)
        except (TypeError, ValueError, AttributeError, KeyError):
            bad += 1
    return bad


def _claude_entry(path: Path, entry: dict[str, Any], sessions: dict[str, TranscriptSession], seen: set[tuple[str, str]]) -> None:
    message = entry.get("message")
    if entry.get("type") != "assistant" or not isinstance(message, dict) or not isinstance(message.get("usage"), dict):
        return
    if message.get("model") == SYNTHETIC_MODEL:
        return  # written by Claude Code itself: no request behind it
    key = (str(message.get("id")), str(entry.get("requestId")))
    if key in seen:
        return
    usage = from_anthropic(message["usage"])
    if usage is None:
        return
    model = message.get("model")
    if model is not None and not isinstance(model, str):
        raise TypeError("the model is not a string")
    seen.add(key)
    sid = str(entry.get("sessionId") or path.stem)
    _add(sessions.setdefault(sid, TranscriptSession(sid, path.parent.name)), usage, model)


def _codex_usage(raw: Any) -> Usage | None:
    if not isinstance(raw, dict) or token_count(raw.get("input_tokens")) is None:
        return None
    prompt = raw["input_tokens"]
    read = min(prompt, token_count(raw.get("cached_input_tokens")) or 0)
    return Usage(prompt, read, token_count(raw.get("cache_write_input_tokens")) or 0, output_tokens=token_count(raw.get("output_tokens")))


def _read_codex(path: Path, entries: list[dict[str, Any]], sessions: dict[str, TranscriptSession]) -> int:
    """Count a Codex rollout's responses; the number of entries that could not be read."""
    meta = entries[0].get("payload") if isinstance(entries[0].get("payload"), dict) else {}
    sid = str(meta.get("id") or meta.get("session_id") or path.stem)
    s = sessions.setdefault(sid, TranscriptSession(sid, Path(str(meta.get("cwd") or "")).name or path.parent.name, agent="codex"))
    state: dict[str, Any] = {"model": None, "last_total": None, "responses": set(),
                             "records": any(e.get("type") == "token_usage_record" for e in entries)}
    bad = 0
    for entry in entries:
        try:
            _codex_entry(entry, s, state)
        except (TypeError, ValueError, AttributeError, KeyError):
            bad += 1
    return bad


def _codex_entry(entry: dict[str, Any], s: TranscriptSession, state: dict[str, Any]) -> None:
    payload = entry.get("payload") if isinstance(entry.get("payload"), dict) else {}
    if entry.get("type") == "turn_context" and isinstance(payload.get("model"), str):
        state["model"] = payload["model"]
    elif state["records"] and entry.get("type") == "token_usage_record":
        rid = str(payload.get("response_id"))
        usage = _codex_usage(payload.get("usage"))
        if usage is not None and rid not in state["responses"]:
            state["responses"].add(rid)
            _add(s, usage, state["model"])
    elif not state["records"] and entry.get("type") == "event_msg" and payload.get("type") == "token_count":
        info = payload.get("info") if isinstance(payload.get("info"), dict) else {}
        total = json.dumps(info.get("total_token_usage"), sort_keys=True)
        usage = _codex_usage(info.get("last_token_usage"))
        if usage is not None and usage.prompt_tokens and total != state["last_total"]:
            _add(s, usage, state["model"])
        state["last_total"] = total
