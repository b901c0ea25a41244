"""OpenAI's prompt cache, simulated for one cache scope (an organization's API key).

Classic mode (models before GPT-5.6; providers.md §2.1):
- Automatic: every prompt of at least 1,024 tokens is cached; a later request reads the longest prefix it
  shares with a recent request, floored to 1,024 + k x 128 tokens (the guide's example: a 2,006-token prompt
  repeated reads 1,920).
- Only requests of the same model and the same cache-key parameters share a cache: `prompt_cache_key` (it is
  combined with the routing hash) and the reasoning effort (the cookbook lists a changed effort as a cause of
  misses).
- Eviction after an idle window. OpenAI says "typically 5-10 minutes of inactivity, max 1 hour"; the simulator
  uses **10 minutes** (`idle_s`) and explains a miss after more than 5 as `ttl_expired`. With
  `prompt_cache_retention: "24h"` in the body (and by default for gpt-5.5 and later) the window is 24 hours.
- The common prefix is found block by block; inside the first block that differs it is estimated from the
  common characters of the two texts (`partial_blocks`), since OpenAI caches tokens, not blocks.
- OpenAI reports no cache writes before GPT-5.6: `cache_write_tokens` is predicted as 0.

Breakpoint mode (GPT-5.6 and later, or any request whose blocks carry `prompt_cache_breakpoint` or whose body
has `prompt_cache_options`; providers.md §2.2) — best effort, the provider's page leaves details open:
- Entries are written only at breakpoints: blocks marked `"prompt_cache_breakpoint": {"mode": "explicit"}` and,
  unless `prompt_cache_options.mode` is `"explicit"`, an implicit one at the latest user or tool message.
- Reads are exact matches at breakpoints only (no fallback to the longest unmarked prefix), over the latest 50
  breakpoints; the longest match wins; no 128-token rounding (the 5.6 page does not state it).
- Assumption: the ends of earlier user / tool messages (where earlier requests put their implicit breakpoint)
  count as read-only breakpoints (`implicit_history_reads`); without it a growing chat would never read.
- At most 4 new writes a request (the newest ones); breakpoints in earlier turns are read-only; minimum 1,024
  tokens; lifetime 30 minutes (`prompt_cache_options.ttl`), refreshed by a read. Writes are reported
  (`cache_write_tokens`, billed 1.25x input).
"""

from __future__ import annotations

import bisect
import hashlib
import json
import os
import threading
from collections import deque
from dataclasses import dataclass
from typing import Any

from cachelint.prompt.model import Block, Prompt, canonical_text, chain_digest, key_digest
from cachelint.prompt.usage import Usage
from cachelint.simulate import Prediction, Reason
from cachelint.simulate.models import (
    OPENAI_BREAKPOINT_TTL_SECONDS,
    OPENAI_EXTENDED_SECONDS,
    OPENAI_IN_MEMORY_IDLE_SECONDS,
    OPENAI_IN_MEMORY_MIN_IDLE_SECONDS,
    OPENAI_INCREMENT_TOKENS,
    OPENAI_MAX_NEW_WRITES,
    OPENAI_MINIMUM_TOKENS,
    OPENAI_READ_BREAKPOINTS,
    common_prefix_hashes,
    openai_default_retention,
    openai_uses_breakpoints,
)

MARKER = "prompt_cache_breakpoint"
_TEXT_TYPES = ("text", "input_text", "output_text")
_KEEP_EXPIRED_S = 24 * 3600.0
_HISTORY = 64


def has_breakpoint(block: Block) -> bool:
    return isinstance(block.value, dict) and isinstance(block.value.get(MARKER), dict)


def _identity(block: Block) -> tuple[tuple[Any, ...], str]:
    """A block's key and text without its breakpoint marker: moving a marker does not change the prefix."""
    if not has_breakpoint(block):
        return block.key, block.text
    value = {k: v for k, v in block.value.items() if k != MARKER}
    if value.get("type") in _TEXT_TYPES and isinstance(value.get("text"), str) and set(value) <= {"type", "text"}:
        return (block.section, "text", block.role, "block", value["text"]), value["text"]
    text = canonical_text(value)
    return (block.section, block.kind, block.role, block.shape, text), text


@dataclass(slots=True)
class _Layout:
    hashes: list[bytes]
    cumulative: list[int]
    keys: list[tuple[Any, ...]]
    texts: list[str]
    tokens: list[int]
    total: int


@dataclass(slots=True)
class _Request:
    """A recorded request (classic mode): its prefix is cached as a whole."""

    layout: _Layout
    last_used_at: float
    readable_from: float
    ready_known: bool
    life_s: float

    def expired(self, at: float) -> bool:
        return at >= self.last_used_at + self.life_s

    def usable(self, at: float) -> bool:
        return self.readable_from <= at and not self.expired(at)


@dataclass(slots=True)
class _Entry:
    """A cache entry at a breakpoint (GPT-5.6+ mode)."""

    tokens: int
    ttl_s: float
    last_used_at: float
    readable_from: float
    ready_known: bool

    def expired(self, at: float) -> bool:
        return at >= self.last_used_at + self.ttl_s

    def usable(self, at: float) -> bool:
        return self.readable_from <= at and not self.expired(at)


@dataclass(slots=True)
class _Breakpoints:
    all: list[int]  # every breakpoint, in prefix order
    readable: list[int]  # the latest 50
    writable: list[int]  # those that may write (not in an earlier turn)


@dataclass(slots=True)
class _Record:
    hashes: list[bytes]
    cached: list[int]


class OpenAICacheSimulator:
    """One OpenAI cache scope. Feed it requests with `record` in the order they were sent; `predict` asks
    without changing anything."""

    def __init__(
        self,
        *,
        idle_s: float = OPENAI_IN_MEMORY_IDLE_SECONDS,
        extended_s: float = OPENAI_EXTENDED_SECONDS,
        min_idle_s: float = OPENAI_IN_MEMORY_MIN_IDLE_SECONDS,
        minimum_tokens: int = OPENAI_MINIMUM_TOKENS,
        increment_tokens: int = OPENAI_INCREMENT_TOKENS,
        breakpoint_ttl_s: float = OPENAI_BREAKPOINT_TTL_SECONDS,
        implicit_history_reads: bool = True,
        partial_blocks: bool = True,
    ) -> None:
        self.idle_s = idle_s
        self.extended_s = extended_s
        self.min_idle_s = min_idle_s
        self.minimum_tokens = minimum_tokens
        self.increment_tokens = increment_tokens
        self.breakpoint_ttl_s = breakpoint_ttl_s
        self.implicit_history_reads = implicit_history_reads
        self.partial_blocks = partial_blocks
        self._requests: dict[tuple[str, str], deque[_Request]] = {}
        self._entries: dict[tuple[str, str], dict[bytes, _Entry]] = {}
        self._history: dict[tuple[str, str], deque[_Record]] = {}
        self._lock = threading.Lock()
        self._records = 0

    # --- shared ---------------------------------------------------------------------------------------------

    def cacheable(self, tokens: int) -> int:
        """0 below the minimum, then minimum + k x increment."""
        if tokens < self.minimum_tokens:
            return 0
        return self.minimum_tokens + (tokens - self.minimum_tokens) // self.increment_tokens * self.increment_tokens

    @staticmethod
    def scope(prompt: Prompt) -> tuple[str, str]:
        """Requests share a cache only with the same model and cache-key parameters (prompt_cache_key, effort)."""
        return prompt.model or "", json.dumps(prompt.params or {}, sort_keys=True, default=str)

    @staticmethod
    def _body(prompt: Prompt) -> dict[str, Any]:
        return prompt.body if isinstance(prompt.body, dict) else {}

    def breakpoint_mode(self, prompt: Prompt) -> bool:
        return (
            openai_uses_breakpoints(prompt.model)
            or "prompt_cache_options" in self._body(prompt)
            or any(has_breakpoint(b) for b in prompt.blocks)
        )

    def _retention_s(self, prompt: Prompt) -> float:
        retention = self._body(prompt).get("prompt_cache_retention")
        if retention is None:
            retention = openai_default_retention(prompt.model)
        return self.extended_s if retention == "24h" else self.idle_s

    @staticmethod
    def _layout(prompt: Prompt) -> _Layout:
        hashes, cumulative, keys, texts, tokens = [], [], [], [], []
        h, total = b"", 0
        for block in prompt.blocks:
            key, text = _identity(block)
            if has_breakpoint(block):  # hashed without its marker: moving a marker keeps the prefix
                h = hashlib.blake2b(h + b"\0" + key_digest(*key), digest_size=16).digest()
            else:
                h = chain_digest(h, b"", block)
            total += block.tokens
            hashes.append(h)
            cumulative.append(total)
            keys.append(key)
            texts.append(text)
            tokens.append(block.tokens)
        return _Layout(hashes, cumulative, keys, texts, tokens, total)

    def _history_reason(self, scope: tuple[str, str], layout: _Layout, hit_index: int) -> Reason | None:
        best, best_common = None, -1
        for record in self._history.get(scope, ()):
            common = common_prefix_hashes(record.hashes, layout.hashes)
            if common >= best_common:
                best, best_common = record, common
        if best is None or best_common == 0:
            return "cold"  # shares not even its first block with an earlier request: a new prefix
        if any(hit_index < q and best_common <= q for q in best.cached):
            return "prefix_changed"
        return None

    def predict(self, prompt: Prompt, at: float) -> Prediction:
        """What the provider should report for `prompt` sent at `at` (seconds); changes nothing."""
        with self._lock:
            if self.breakpoint_mode(prompt):
                return self._predict_breakpoints(prompt, at)[0]
            return self._predict_classic(prompt, at)[0]

    def record(
        self,
        prompt: Prompt,
        at: float,
        response_started_at: float | None = None,
        usage: Usage | None = None,
    ) -> Prediction:
        """Predict, then apply the request: refresh what it read and cache what it creates (readable from
        `response_started_at`; from `at` when unknown). With the provider's `usage` in breakpoint mode, nothing is
        written when the provider neither read nor wrote."""
        with self._lock:
            ready = at if response_started_at is None else response_started_at
            known = response_started_at is not None
            if self.breakpoint_mode(prompt):
                prediction = self._record_breakpoints(prompt, at, ready, known, usage)
            else:
                prediction = self._record_classic(prompt, at, ready, known)
            self._records += 1
            if self._records % 256 == 0:
                self._prune(at)
            return prediction

    # --- classic mode ---------------------------------------------------------------------------------------

    def _common_tokens(self, layout: _Layout, other: _Layout) -> int:
        n = common_prefix_hashes(layout.hashes, other.hashes)
        tokens = layout.cumulative[n - 1] if n else 0
        same_slot = n < len(layout.keys) and n < len(other.keys) and layout.keys[n][:4] == other.keys[n][:4]
        if self.partial_blocks and same_slot:
            a, b = layout.texts[n], other.texts[n]
            shared = len(os.path.commonprefix([a, b]))
            if shared:
                tokens += min(layout.tokens[n], other.tokens[n]) * shared // max(len(a), len(b), 1)
        return min(tokens, layout.total, other.total)

    def _predict_classic(self, prompt: Prompt, at: float) -> tuple[Prediction, _Layout, _Request | None]:
        scope = self.scope(prompt)
        layout = self._layout(prompt)
        total = layout.total
        life = self._retention_s(prompt)
        base = {"provider": prompt.provider, "model": prompt.model, "minimum_tokens": self.minimum_tokens,
                    "ttl_floor_s": self.min_idle_s if life <= self.idle_s else life}
        requests = self._requests.get(scope, ())
        best, best_read = None, 0
        if total >= self.minimum_tokens:
            for request in requests:
                if request.usable(at):
                    read = self.cacheable(self._common_tokens(layout, request.layout))
                    if read and read >= best_read:  # ties: the most recent request
                        best, best_read = request, read
        reason: Reason | None = None
        if total < self.minimum_tokens or best_read < self.cacheable(total):
            reason = self._classic_reason(scope, layout, best_read, at)
        hit = bisect.bisect_left(layout.cumulative, best_read) if best_read else None
        prediction = Prediction(
            prompt_tokens=total,
            cache_read_tokens=best_read,
            cache_write_tokens=0,
            uncached_tokens=total - best_read,
            hit_position=hit,
            reason=reason,
            hit_idle_s=(at - best.last_used_at) if best and best_read else None,
            hit_ready_s=(at - best.readable_from) if best and best_read and best.ready_known else None,
            **base,
        )
        return prediction, layout, best if best_read else None

    def _classic_reason(self, scope: tuple[str, str], layout: _Layout, read: int, at: float) -> Reason | None:
        if layout.total < self.minimum_tokens:
            return "below_minimum"
        requests = self._requests.get(scope)
        if not requests:
            return "cold"
        best, best_read = None, read
        for request in requests:  # the longest prefix this prompt shares with any request, whatever its state
            shared = self.cacheable(self._common_tokens(layout, request.layout))
            if shared > best_read:
                best, best_read = request, shared
        if best is not None:
            return "ttl_expired" if best.expired(at) else "not_yet_written"
        newest, newest_common = None, -1
        for request in requests:  # the request sharing the most with this one (ties: the most recent)
            common = self._common_tokens(layout, request.layout)
            if common >= newest_common:
                newest, newest_common = request, common
        if newest is None or newest_common == 0:
            return "cold"  # shares nothing with an earlier request: a new prefix
        if self.cacheable(min(newest.layout.total, layout.total)) > read:
            return "prefix_changed"
        return None

    def _record_classic(self, prompt: Prompt, at: float, ready: float, known: bool) -> Prediction:
        prediction, layout, read_from = self._predict_classic(prompt, at)
        if read_from is not None:
            read_from.last_used_at = max(read_from.last_used_at, at)
        if layout.total >= self.minimum_tokens:
            scope = self.scope(prompt)
            queue = self._requests.setdefault(scope, deque(maxlen=_HISTORY))
            queue.append(_Request(layout, at, ready, known, self._retention_s(prompt)))
        return prediction

    # --- breakpoint mode (GPT-5.6+) -------------------------------------------------------------------------

    def _breakpoints(self, prompt: Prompt) -> _Breakpoints:
        options = self._body(prompt).get("prompt_cache_options")
        explicit_only = isinstance(options, dict) and options.get("mode") == "explicit"
        marked = [i for i, b in enumerate(prompt.blocks) if has_breakpoint(b)]
        ends: dict[int, int] = {}  # message -> its last block, for user and tool messages
        last_assistant = -1
        for i, block in enumerate(prompt.blocks):
            if block.section != "messages":
                continue
            if block.role in ("user", "tool") and block.message is not None:
                ends[block.message] = i
            if block.role == "assistant":
                last_assistant = i
        user_ends = sorted(ends.values())
        implicit = [] if explicit_only or not user_ends else [user_ends[-1]]
        history = user_ends[:-1] if self.implicit_history_reads and not explicit_only else []
        every = sorted(set(marked) | set(implicit) | set(history))
        latest_turn = last_assistant + 1

        def writable(i: int) -> bool:
            return i in implicit or (i in marked and (prompt.blocks[i].section != "messages" or i >= latest_turn))

        return _Breakpoints(every, every[-OPENAI_READ_BREAKPOINTS:], [i for i in every if writable(i)])

    def _predict_breakpoints(self, prompt: Prompt, at: float):
        scope = self.scope(prompt)
        layout = self._layout(prompt)
        points = self._breakpoints(prompt)
        entries = self._entries.get(scope, {})
        total = layout.total
        ttl = self._breakpoint_ttl(prompt)
        base = {"provider": prompt.provider, "model": prompt.model, "minimum_tokens": self.minimum_tokens,
                    "breakpoints": tuple(points.all), "ttl_floor_s": ttl, "notes": ("breakpoint_mode",)}
        if not points.all:
            return Prediction(total, 0, 0, total, None, "no_breakpoint", **base), layout, points, None, []
        hit: tuple[int, _Entry] | None = None
        for i in reversed(points.readable):
            entry = entries.get(layout.hashes[i])
            if entry is not None and entry.usable(at):
                hit = (i, entry)
                break
        hit_index = hit[0] if hit else -1
        read = layout.cumulative[hit_index] if hit else 0
        candidates = [i for i in points.writable if i > hit_index and layout.cumulative[i] >= self.minimum_tokens]
        notes = base.pop("notes")
        if len(candidates) > OPENAI_MAX_NEW_WRITES:
            notes += (f"too_many_writes: {len(candidates)}; the newest {OPENAI_MAX_NEW_WRITES} are written",)
            candidates = candidates[-OPENAI_MAX_NEW_WRITES:]
        write = layout.cumulative[candidates[-1]] - read if candidates else 0
        reason: Reason | None = None
        last = points.all[-1]
        if read < layout.cumulative[last]:
            reason = self._breakpoint_reason(scope, layout, points, hit_index, at)
        prediction = Prediction(
            prompt_tokens=total,
            cache_read_tokens=read,
            cache_write_tokens=write,
            uncached_tokens=total - read,
            hit_position=hit[0] if hit else None,
            reason=reason,
            hit_idle_s=(at - hit[1].last_used_at) if hit else None,
            hit_ready_s=(at - hit[1].readable_from) if hit and hit[1].ready_known else None,
            notes=notes,
            **base,
        )
        return prediction, layout, points, hit, candidates

    def _breakpoint_ttl(self, prompt: Prompt) -> float:
        body = self._body(prompt)
        return self.extended_s if body.get("prompt_cache_retention") == "24h" else self.breakpoint_ttl_s

    def _breakpoint_reason(
        self, scope: tuple[str, str], layout: _Layout, points: _Breakpoints, hit_index: int, at: float
    ) -> Reason | None:
        last = points.all[-1]
        if layout.cumulative[last] < self.minimum_tokens:
            return "below_minimum"
        entries = self._entries.get(scope)
        if not entries:
            return "cold"
        readable = set(points.readable)
        for i in reversed(points.all):
            if i <= hit_index:
                break
            entry = entries.get(layout.hashes[i])
            if entry is None:
                continue
            if entry.expired(at):
                return "ttl_expired"
            if entry.readable_from > at:
                return "not_yet_written"
            if i not in readable:
                return "lookback_exceeded"
        marked = set(points.all)
        for i in range(last, hit_index, -1):  # a cached prefix that no breakpoint of this request reads
            entry = entries.get(layout.hashes[i])
            if i not in marked and entry is not None and entry.usable(at):
                return "no_breakpoint"
        return self._history_reason(scope, layout, hit_index)

    def _record_breakpoints(
        self, prompt: Prompt, at: float, ready: float, known: bool, usage: Usage | None
    ) -> Prediction:
        prediction, layout, points, hit, writes = self._predict_breakpoints(prompt, at)
        scope = self.scope(prompt)
        entries = self._entries.setdefault(scope, {})
        if hit is not None:
            for i in points.all:
                entry = entries.get(layout.hashes[i])
                if i <= hit[0] and entry is not None and entry.usable(at):
                    entry.last_used_at = max(entry.last_used_at, at)
        if not (usage is not None and usage.cache_read_tokens == 0 and usage.cache_write_tokens == 0):
            ttl = self._breakpoint_ttl(prompt)
            for i in writes:
                entry = entries.get(layout.hashes[i])
                if entry is not None and not entry.expired(at):
                    if ready < entry.readable_from:
                        entry.readable_from, entry.ready_known = ready, known
                    entry.last_used_at = max(entry.last_used_at, at)
                else:
                    entries[layout.hashes[i]] = _Entry(layout.cumulative[i], ttl, at, ready, known)
        cached = [i for i in points.all if layout.hashes[i] in entries]
        self._history.setdefault(scope, deque(maxlen=_HISTORY)).append(_Record(layout.hashes, cached))
        return prediction

    def _prune(self, now: float) -> None:
        for entries in self._entries.values():
            for key in [k for k, e in entries.items() if e.expired(now - _KEEP_EXPIRED_S)]:
                del entries[key]
        for queue in self._requests.values():
            for request in [r for r in queue if r.expired(now - _KEEP_EXPIRED_S)]:
                queue.remove(request)

    def reset(self) -> None:
        with self._lock:
            self._requests.clear()
            self._entries.clear()
            self._history.clear()
