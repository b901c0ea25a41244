"""Which conversation a request belongs to, and which earlier request it continues.

1. Claude Code's `x-claude-code-session-id` header, else `metadata.user_id` in the body: the conversation
   is known. Side calls (title generation, quota probes on a small model) use another model, so each model
   gets its own session inside the conversation and never counts as a break of the main one.
2. Otherwise the prefix lineage: the recent session (same API and model) whose last request shares the
   longest prefix with this one; none sharing anything starts a new session.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from dataclasses import dataclass

from cachelint.diff.locate import common_prefix_items
from cachelint.prompt.model import Prompt

SESSION_HEADER = "x-claude-code-session-id"
MAX_SESSIONS = 500
_SAFE = re.compile(r"[^A-Za-z0-9_.:@-]+")


@dataclass(slots=True)
class SessionState:
    id: str
    provider: str
    model: str | None
    last: Prompt | None = None
    last_usage: object | None = None
    requests: int = 0


def conversation_key(headers: dict[str, str], body: object) -> str | None:
    value = headers.get(SESSION_HEADER)
    if not value and isinstance(body, dict) and isinstance(body.get("metadata"), dict):
        value = body["metadata"].get("user_id")
    return _SAFE.sub("_", str(value))[:120] if value else None


class Sessions:
    def __init__(self, max_sessions: int = MAX_SESSIONS) -> None:
        self._sessions: OrderedDict[str, SessionState] = OrderedDict()
        self._max = max_sessions
        self._counter = 0

    def assign(self, prompt: Prompt, headers: dict[str, str], body: object) -> SessionState:
        key = conversation_key(headers, body)
        if key is not None:
            session_id = f"{key}/{prompt.model or 'unknown'}"
            state = self._sessions.get(session_id) or SessionState(session_id, prompt.provider, prompt.model)
        else:
            state = self._lineage(prompt)
        self._sessions[state.id] = state
        self._sessions.move_to_end(state.id)
        while len(self._sessions) > self._max:
            self._sessions.popitem(last=False)
        return state

    def _lineage(self, prompt: Prompt) -> SessionState:
        keys = [b.key for b in prompt.blocks]
        best, best_shared = None, 0
        for state in reversed(self._sessions.values()):
            if state.last is None or state.provider != prompt.provider or state.model != prompt.model:
                continue
            shared = common_prefix_items([b.key for b in state.last.blocks], keys)
            if shared > best_shared:
                best, best_shared = state, shared
        if best is not None:
            return best
        self._counter += 1
        return SessionState(f"{prompt.provider}-{self._counter}", prompt.provider, prompt.model)

    def __len__(self) -> int:
        return len(self._sessions)
