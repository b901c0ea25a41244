"""Which conversation a request belongs to, and which earlier request it continues.

1. The agent's own conversation id, when it sends one: Claude Code's `x-claude-code-session-id` header (else the
   `session_id` inside `metadata.user_id`), Codex's `session-id` / `thread-id` headers, else `prompt_cache_key`
   (Codex sets it to its thread id; OpenAI documents it as the key that routes requests sharing a prefix to the
   same cache). The session is that id, whatever the model.
2. Inside a conversation, a request that continues the main line is the main line even on another model: a
   model switch is then a break (`model_changed`, CL401) of the same session. A side call (its own prompt: a
   title, a quota probe, a compaction summary) is kept apart in `<id>/side-<model>`, so it never counts as a
   break of the main line. The rule, from what Claude Code 2.1 and Codex 0.171 send: Codex names each request
   (`request_kind` in its `x-codex-turn-metadata`, a header over HTTP and in `client_metadata` over WebSocket:
   `turn` is the main line, anything else such as `compaction` a side call; a `"generate": false` prewarm too); otherwise the main line carries the agent's tools, so a request without tools
   while the main line has them is a side call, and so is one that shares neither the main line's first
   message nor its tool list.
3. Without an id: the prefix lineage. The recent session of the same API whose last request shares the longest
   prefix with this one (on another model: at least its head and first message, the same history carried on,
   else two conversations that only share their tools would merge); none sharing anything starts a new session, named with the time the recorder
   started and a random part of its own, so ids never collide with those of an earlier run, or of another proxy
   started in the same second, on the same store (two unrelated conversations would otherwise merge there).

`user`, `safety_identifier` and Anthropic's `metadata.user_id` without a session name a user, not a
conversation: one user's conversations would merge, so they are left to the lineage.
"""

from __future__ import annotations

import json
import re
import secrets
import time
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from cachelint.diff.locate import common_prefix_items
from cachelint.prompt.model import Prompt
from cachelint.prompt.usage import Usage

SESSION_HEADER = "x-claude-code-session-id"
CODEX_HEADERS = ("session-id", "thread-id", "session_id", "conversation_id")
CODEX_METADATA_HEADER = "x-codex-turn-metadata"
MAX_SESSIONS = 500
_SAFE = re.compile(r"[^A-Za-z0-9_.:@-]+")
_SESSION_IN_USER_ID = re.compile(r"_session_([0-9a-fA-F-]{8,})$")


@dataclass(slots=True)
class LastRequest:
    """When a conversation's latest request started and its response began, and its body: what the next request's
    miss is judged against (the idle gap, the TTL its breakpoints asked for)."""
    started_at: float
    first_byte_at: float | None
    body: Any


@dataclass(slots=True)
class SessionState:
    id: str
    provider: str
    model: str | None
    last: Prompt | None = None
    last_usage: object | None = None
    requests: int = 0
    side: bool = False
    pending_compaction: bool = False  # a compaction side call was seen since the main line's last request
    resumed: bool = False  # read back from the store (an earlier run, another proxy): joined only by its history
    last_request: LastRequest | None = None


@dataclass(slots=True)
class Conversation:
    key: str
    main: SessionState
    sides: dict[str, SessionState] = field(default_factory=dict)


def _safe(value: object) -> str:
    return _SAFE.sub("_", str(value))[:120]


def conversation_key(headers: dict[str, str], body: object) -> str | None:
    """The conversation id the agent sent, made safe for a session name, or None."""
    lower = {k.lower(): v for k, v in headers.items()}
    value = lower.get(SESSION_HEADER)
    if not value:
        value = next((lower[name] for name in CODEX_HEADERS if lower.get(name)), None)
    if not value and isinstance(body, dict):
        value = _session_in_metadata(body.get("metadata"))
        if not value and isinstance(body.get("prompt_cache_key"), str):
            value = body["prompt_cache_key"]
    return _safe(value) if value else None


def _session_in_metadata(metadata: object) -> str | None:
    """Claude Code's session id in `metadata.user_id`: a JSON object with `session_id` (2.1), or the older
    `user_<hash>_account_<uuid>_session_<uuid>` string."""
    if not isinstance(metadata, dict) or not isinstance(metadata.get("user_id"), str):
        return None
    user_id = metadata["user_id"]
    try:
        parsed = json.loads(user_id)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict) and isinstance(parsed.get("session_id"), str) and parsed["session_id"]:
        return parsed["session_id"]
    found = _SESSION_IN_USER_ID.search(user_id)
    return found.group(1) if found else None


def request_kind(headers: dict[str, str], body: object = None) -> str | None:
    """What Codex says a request is for (`turn`, `compaction`, ...), from its turn metadata: in the request's
    `client_metadata` (per message over WebSocket), else its header. A Responses `"generate": false` request is
    a `prewarm`: it only fills the cache for the turn that follows."""
    if isinstance(body, dict) and body.get("generate") is False:
        return "prewarm"
    meta = body.get("client_metadata") if isinstance(body, dict) else None
    raw = meta.get(CODEX_METADATA_HEADER) if isinstance(meta, dict) else None
    raw = raw if isinstance(raw, str) else {k.lower(): v for k, v in headers.items()}.get(CODEX_METADATA_HEADER)
    try:
        data = json.loads(raw) if raw else None
    except ValueError:
        return None
    kind = data.get("request_kind") if isinstance(data, dict) else None
    return kind if isinstance(kind, str) else None


def _first_message(prompt: Prompt) -> tuple:
    first = next((b.message for b in prompt.blocks if b.section == "messages"), None)
    return tuple(b.key for b in prompt.blocks if b.section == "messages" and b.message == first) if first is not None else ()


def _through_first_message(prompt: Prompt) -> int:
    """How many blocks lead up to the end of the first conversation message (all of them when there is none)."""
    first = next((b.message for b in prompt.blocks if b.section == "messages"), None)
    if first is None:
        return len(prompt.blocks)
    return max(i for i, b in enumerate(prompt.blocks) if b.section == "messages" and b.message == first) + 1


def continues(main: Prompt, prompt: Prompt) -> bool:
    """Whether `prompt` carries on the conversation whose latest main-line request is `main`."""
    has_tools = bool(prompt.section_blocks("tools"))
    if main.section_blocks("tools") and not has_tools:
        return False  # the main line carries the agent's tools; a call without them is a side call
    first = _first_message(main)
    if first and first == _first_message(prompt):
        return True
    tools = [b.key for b in main.section_blocks("tools")]
    return bool(tools) and tools == [b.key for b in prompt.section_blocks("tools")]


def new_run_id() -> str:
    """This recorder's part of the lineage session ids: when it started (readable) and 6 random hex digits
    (unique per process, even for two started in the same second on one store)."""
    return f"{time.strftime('%Y%m%dT%H%M%S')}-{secrets.token_hex(3)}"


class Sessions:
    def __init__(self, max_sessions: int = MAX_SESSIONS, run: str | None = None) -> None:
        self._sessions: OrderedDict[str, SessionState] = OrderedDict()
        self._conversations: OrderedDict[str, Conversation] = OrderedDict()
        self._max = max_sessions
        self._counter = 0
        self.run = run or new_run_id()

    def assign(self, prompt: Prompt, headers: dict[str, str], body: object) -> SessionState:
        key = conversation_key(headers, body)
        state = self._in_conversation(key, prompt, request_kind(headers, body)) if key is not None else self._lineage(prompt)
        self._sessions[state.id] = state
        self._sessions.move_to_end(state.id)
        while len(self._sessions) > self._max:
            self._sessions.popitem(last=False)
        return state

    def _in_conversation(self, key: str, prompt: Prompt, kind: str | None) -> SessionState:
        conv = self._conversations.get(key)
        if conv is None:
            conv = self._conversations[key] = Conversation(key, SessionState(key, prompt.provider, prompt.model))
            while len(self._conversations) > self._max:
                self._conversations.popitem(last=False)
        self._conversations.move_to_end(key)
        main = conv.main
        if kind not in (None, "turn") or (kind is None and main.last is not None and not continues(main.last, prompt)):
            if main.last is None or main.last.section_blocks("tools") or not prompt.section_blocks("tools"):
                if kind == "compaction":
                    main.pending_compaction = True
                name = f"{key}/side-{kind if kind not in (None, 'turn') else prompt.model or 'unknown'}"
                side = conv.sides.get(name) or SessionState(name, prompt.provider, prompt.model, side=True)
                if kind == "compaction" and side.last is not None:
                    side.pending_compaction = True  # the previous compaction call's history was itself compacted since
                conv.sides[name] = side
                return side
            main.last = None  # the main line so far was a side call without tools: this one starts the real one
        main.model = prompt.model
        return main

    def _lineage(self, prompt: Prompt) -> SessionState:
        keys = [b.key for b in prompt.blocks]
        best, best_shared = None, 0
        for state in reversed(self._sessions.values()):
            if state.last is None or state.provider != prompt.provider or state.side:
                continue
            shared = common_prefix_items([b.key for b in state.last.blocks], keys)
            if (state.model != prompt.model or state.resumed) and shared < _through_first_message(state.last):
                continue  # on another model, or from another run, only a request that carries on the same history is the same conversation
            if shared > best_shared:
                best, best_shared = state, shared
        if best is not None:
            return best
        self._counter += 1
        return SessionState(f"{prompt.provider}-{self.run}-{self._counter}", prompt.provider, prompt.model)

    def resume(self, rows: Iterable[Any]) -> int:
        """Carry on the conversations a store already holds (rows: the latest stored row of each recent session,
        newest first, e.g. Store.latest_rows()). A restarted proxy, or a second one on the same store, then puts a
        request that carries on one of them (the same history through its first message) in that session, and
        starts its own for anything else: no two unrelated conversations share an id. Conversations with an
        agent's id go on by that id already; side calls and rows without a body (hashes mode) are left out.
        The number of sessions resumed."""
        resumed = []
        for row in rows:
            if len(resumed) >= self._max:
                break
            if not row.session or "/side-" in row.session or row.session in self._sessions:
                continue
            rebuilt = stored_prompt(row)
            if rebuilt is None or conversation_key(row.request_headers or {}, rebuilt[1]) is not None:
                continue
            prompt, body = rebuilt
            first_byte_at = row.started_at + row.ttft if row.ttft is not None else None
            state = SessionState(row.session, prompt.provider, prompt.model, last=prompt, last_usage=stored_usage(row), resumed=True,
                                 last_request=LastRequest(row.started_at, first_byte_at, body))
            resumed.append(state)
        for state in reversed(resumed):  # oldest first: the most recent ends up the most recently used
            self._sessions[state.id] = state
        return len(resumed)

    def __len__(self) -> int:
        return len(self._sessions)


def stored_prompt(row: Any) -> tuple[Prompt, Any] | None:
    """The prompt (and request body) of a stored row, rebuilt from its body; None without one."""
    from urllib.parse import urlsplit

    from cachelint.errors import CachelintError
    from cachelint.prompt.load import build_prompt, exchange_from_json

    if not row.request_body:
        return None
    try:
        body = json.loads(row.request_body)
        parts = urlsplit(row.url or "")
        exchange = exchange_from_json({"request": {"path": parts.path or None, "headers": row.request_headers or {}, "body": body}})
        return build_prompt(exchange), body
    except (CachelintError, ValueError, RecursionError, TypeError):
        return None


def stored_usage(row: Any) -> Usage | None:
    """The provider's usage of a stored row, as the lineage keeps it for the next request."""
    if row.prompt_tokens is None:
        return None
    return Usage(row.prompt_tokens, row.cache_read_tokens or 0, row.cache_write_tokens or 0, row.cache_write_5m_tokens,
                 row.cache_write_1h_tokens, row.output_tokens)
