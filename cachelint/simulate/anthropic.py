"""Anthropic's prompt cache, simulated for one cache scope (an API key's workspace).

The model (providers.md §1.3-1.6, Anthropic's prompt-caching docs):

- Entries are keyed by (model, cumulative hash of the prefix up to a block). They are written **only at
  breakpoints**: blocks with an explicit `cache_control`, and the block a top-level `cache_control` lands on
  (the last block, walking back over blocks that cannot carry one: thinking and empty text). At most 4
  breakpoints are used; the API rejects a request with more (400), the simulator keeps the first 4 in prefix
  order and says so in `Prediction.notes`.
- An entry is written only if the prefix up to its breakpoint is at least the model's minimum cacheable length
  (`cachelint.simulate.models`); below it the request succeeds and nothing is cached.
- Reads: for each breakpoint, look back at most 20 positions (the breakpoint counts as the first) for the newest
  entry that is readable and unexpired; the longest hit over all breakpoints wins. On the Claude API a run of
  consecutive `tool_use` blocks (and a run of `tool_result` blocks) in one message counts as one position
  (latest doc copy; `collapse_tool_runs=False` reproduces the earlier copies).
- TTL: 5 minutes, or 1 hour with `"ttl": "1h"`, measured from the **start** of the request that wrote or last
  read the entry; a read refreshes it.
- An entry becomes readable only when its writer's response starts: a request sent before that misses.
- Usage: read tokens = the prefix up to the hit; written tokens = from the hit to the last breakpoint that
  writes, split by TTL segment by segment (Anthropic's A/B/C rule when 1h breakpoints come before 5m ones).

Assumptions (not provider statements):
- Cache-key parameters invalidate per Anthropic's table (§1.8): `tool_choice`, `thinking`, `context_management`,
  `output_config`, `output_format` change only the messages part; `speed` the system and messages parts; the
  `anthropic-beta` set everything. The hash of a block mixes in the parameters that reach its section.
- A read refreshes every entry along the prefix it read (the KV blocks under it are the same), not only the
  longest one.
- When a request's `response_started_at` is unknown, its entries are readable from its own start.
- An entry a breakpoint at or before the hit would write, but that is missing, is created without charge.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from dataclasses import dataclass
from typing import Any

from cachelint.prompt.model import Block, Prompt, chain_digest
from cachelint.prompt.usage import Usage
from cachelint.simulate import Prediction, Reason
from cachelint.simulate.models import (
    ANTHROPIC_CACHE_RULES,
    ANTHROPIC_LOOKBACK_POSITIONS,
    ANTHROPIC_MAX_BREAKPOINTS,
    ANTHROPIC_TTL_SECONDS,
    AnthropicCacheRule,
    anthropic_minimum,
    common_prefix_hashes,
)

# Which cache-key parameters reach each section of the prefix (None: all of them).
_SECTION_PARAMS: dict[str, tuple[str, ...] | None] = {
    "tools": ("anthropic-beta",),
    "schema": ("anthropic-beta",),
    "system": ("anthropic-beta", "speed"),
    "messages": None,
}
_RUN_KINDS = ("tool_use", "tool_result")
_NOT_ELIGIBLE = ("thinking", "redacted_thinking")
_KEEP_EXPIRED_S = 24 * 3600.0  # expired entries are kept this long to explain misses, then dropped
_HISTORY = 64  # recent requests per model kept to tell a changed prefix from a new one


def ttl_label(marker: dict[str, Any] | None) -> str:
    return "1h" if isinstance(marker, dict) and marker.get("ttl") == "1h" else "5m"


def _eligible(block: Block) -> bool:
    return block.kind not in _NOT_ELIGIBLE and not (block.kind == "text" and block.text == "")


@dataclass(slots=True)
class _Entry:
    position: int
    tokens: int
    ttl_s: float
    last_used_at: float  # start of the request that wrote or last read it
    readable_from: float  # when the writer's response started
    ready_known: bool

    def expires_at(self) -> float:
        return self.last_used_at + self.ttl_s


@dataclass(slots=True)
class _Layout:
    """A prompt as the cache sees it: cumulative hashes and tokens, lookback positions, breakpoints."""

    hashes: list[bytes]
    cumulative: list[int]
    groups: list[int]
    breakpoints: list[tuple[int, str]]  # (block index, "5m" | "1h"), in prefix order
    notes: tuple[str, ...]


@dataclass(slots=True)
class _Record:
    hashes: list[bytes]
    cached: list[int]  # block indexes with an entry after this request


@dataclass(slots=True)
class _Outcome:
    prediction: Prediction
    layout: _Layout
    hit: tuple[int, _Entry] | None
    writes: list[tuple[int, str]]  # breakpoints that write: (index, ttl)


class AnthropicCacheSimulator:
    """One Anthropic cache scope (an API key's workspace). Feed it requests with `record` in the order they were
    sent; `predict` asks without changing anything."""

    def __init__(
        self,
        rules: tuple[AnthropicCacheRule, ...] = ANTHROPIC_CACHE_RULES,
        *,
        lookback: int = ANTHROPIC_LOOKBACK_POSITIONS,
        max_breakpoints: int = ANTHROPIC_MAX_BREAKPOINTS,
        collapse_tool_runs: bool = True,
        ttl_seconds: dict[str, float] | None = None,
    ) -> None:
        self.rules = rules
        self.lookback = lookback
        self.max_breakpoints = max_breakpoints
        self.collapse_tool_runs = collapse_tool_runs
        self.ttl_seconds = dict(ttl_seconds or ANTHROPIC_TTL_SECONDS)
        self._entries: dict[tuple[str, bytes], _Entry] = {}
        self._written_models: set[str] = set()
        self._history: dict[str, deque[_Record]] = {}
        self._lock = threading.Lock()
        self._records = 0
        self._minimums: dict[str, int] = {}

    # --- the prompt as the cache sees it -------------------------------------------------------------------

    def minimum(self, model: str | None) -> int:
        key = model or ""
        if key not in self._minimums:
            self._minimums[key] = anthropic_minimum(model, self.rules)
        return self._minimums[key]

    def _layout(self, prompt: Prompt) -> _Layout:
        params = prompt.params or {}
        salts: dict[str, bytes] = {}
        for section, names in _SECTION_PARAMS.items():
            chosen = params if names is None else {k: params[k] for k in names if k in params}
            salts[section] = json.dumps(chosen, sort_keys=True, default=str).encode()
        hashes, cumulative, groups = [], [], []
        h, total, group, run = b"", 0, -1, None
        for block in prompt.blocks:
            h = chain_digest(h, salts.get(block.section, b""), block)
            hashes.append(h)
            total += block.tokens
            cumulative.append(total)
            key = (block.kind, block.message) if self.collapse_tool_runs and block.kind in _RUN_KINDS else None
            if key is None or key != run:
                group += 1
            run = key
            groups.append(group)
        notes: list[str] = []
        marks = {i: ttl_label(b.cache_control) for i, b in enumerate(prompt.blocks) if b.cache_control is not None}
        top = prompt.top_level_cache_control
        if top is not None:
            last = next((i for i in range(len(prompt.blocks) - 1, -1, -1) if _eligible(prompt.blocks[i])), None)
            if last is None:
                notes.append("automatic_breakpoint_skipped: no block can carry it")
            elif last in marks:
                if marks[last] != ttl_label(top):
                    notes.append("automatic_breakpoint_ttl_conflict: the API answers 400")
            elif len(marks) >= self.max_breakpoints:
                notes.append("automatic_breakpoint_no_slot: the API answers 400")
            else:
                marks[last] = ttl_label(top)
        breakpoints = sorted(marks.items())
        labels = [ttl for _, ttl in breakpoints]
        if "5m" in labels and "1h" in labels[labels.index("5m"):]:
            notes.append("ttl_order: a 1h breakpoint after a 5m one; the API answers 400")
        if len(breakpoints) > self.max_breakpoints:
            notes.append(
                f"too_many_breakpoints: {len(breakpoints)} (the API answers 400 over {self.max_breakpoints}); "
                f"the first {self.max_breakpoints} are used"
            )
            breakpoints = breakpoints[: self.max_breakpoints]
        return _Layout(hashes, cumulative, groups, breakpoints, tuple(notes))

    # --- reads ---------------------------------------------------------------------------------------------

    @staticmethod
    def _usable(entry: _Entry, at: float) -> bool:
        return entry.readable_from <= at < entry.expires_at()

    def _lookup(self, model: str, layout: _Layout, breakpoint: int, at: float) -> tuple[int, _Entry] | None:
        """The newest usable entry within the lookback window of one breakpoint."""
        floor = layout.groups[breakpoint] - (self.lookback - 1)
        i = breakpoint
        while i >= 0 and layout.groups[i] >= floor:
            entry = self._entries.get((model, layout.hashes[i]))
            if entry is not None and self._usable(entry, at):
                return i, entry
            i -= 1
        return None

    def _outcome(self, prompt: Prompt, at: float) -> _Outcome:
        model = prompt.model or ""
        layout = self._layout(prompt)
        minimum = self.minimum(prompt.model)
        total = prompt.prompt_tokens
        base = {
            "provider": "anthropic", "model": prompt.model, "minimum_tokens": minimum, "notes": layout.notes,
            "breakpoints": tuple(i for i, _ in layout.breakpoints), "ttl_floor_s": min(self.ttl_seconds.values()),
        }
        if not layout.breakpoints:
            return _Outcome(Prediction(total, 0, 0, total, None, "no_breakpoint", **base), layout, None, [])
        hit: tuple[int, _Entry] | None = None
        for index, _ in layout.breakpoints:
            found = self._lookup(model, layout, index, at)
            if found is not None and (hit is None or found[0] > hit[0]):
                hit = found
        hit_index = hit[0] if hit else -1
        read = layout.cumulative[hit_index] if hit else 0
        writes, w5, w1, boundary = [], 0, 0, read
        for index, ttl in layout.breakpoints:
            if index <= hit_index or layout.cumulative[index] < minimum:
                continue
            segment = layout.cumulative[index] - boundary
            boundary = layout.cumulative[index]
            if ttl == "1h":
                w1 += segment
            else:
                w5 += segment
            writes.append((index, ttl))
        last = layout.breakpoints[-1][0]
        reason = self._reason(model, layout, hit_index, read, minimum, at) if read < layout.cumulative[last] else None
        prediction = Prediction(
            prompt_tokens=total,
            cache_read_tokens=read,
            cache_write_tokens=w5 + w1,
            uncached_tokens=total - read,
            hit_position=hit[0] if hit else None,
            reason=reason,
            cache_write_5m_tokens=w5,
            cache_write_1h_tokens=w1,
            hit_idle_s=(at - hit[1].last_used_at) if hit else None,
            hit_ready_s=(at - hit[1].readable_from) if hit and hit[1].ready_known else None,
            **base,
        )
        return _Outcome(prediction, layout, hit, writes)

    def _reason(self, model: str, layout: _Layout, hit_index: int, read: int, minimum: int, at: float) -> Reason | None:
        last = layout.breakpoints[-1][0]
        if layout.cumulative[last] < minimum:
            return "below_minimum"
        if model not in self._written_models:
            return "cold"
        for j in range(last, hit_index, -1):  # the longest entry this prompt matches, whatever its state
            entry = self._entries.get((model, layout.hashes[j]))
            if entry is None:
                continue
            if entry.expires_at() <= at:
                return "ttl_expired"
            if entry.readable_from > at:
                return "not_yet_written"
            return "lookback_exceeded"
        best, best_common = None, -1
        for record in self._history.get(model, ()):  # newest last: ties go to the most recent
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
            return self._outcome(prompt, at).prediction

    # --- writes --------------------------------------------------------------------------------------------

    def record(
        self,
        prompt: Prompt,
        at: float,
        response_started_at: float | None = None,
        usage: Usage | None = None,
    ) -> Prediction:
        """Predict, then apply the request: refresh what it read and write the entries it creates (readable from
        `response_started_at`). With the provider's `usage`, the state follows what really happened: nothing is
        written when the provider neither read nor wrote, and a 1-hour write reported as 5-minute only (a TTL
        silently downgraded) is stored as 5-minute."""
        with self._lock:
            outcome = self._outcome(prompt, at)
            model = prompt.model or ""
            layout = outcome.layout
            if outcome.hit is not None:  # a read refreshes the entries along the prefix it read
                for j in range(outcome.hit[0] + 1):
                    entry = self._entries.get((model, layout.hashes[j]))
                    if entry is not None and self._usable(entry, at):
                        entry.last_used_at = max(entry.last_used_at, at)
            cached_nothing = usage is not None and usage.cache_read_tokens == 0 and usage.cache_write_tokens == 0
            downgraded = (
                usage is not None and usage.cache_write_1h_tokens == 0 and (usage.cache_write_5m_tokens or 0) > 0
            )
            ready = at if response_started_at is None else response_started_at
            known = response_started_at is not None
            minimum = self.minimum(prompt.model)
            if not cached_nothing:
                for index, ttl in layout.breakpoints:
                    if layout.cumulative[index] < minimum:
                        continue
                    label = "5m" if downgraded else ttl
                    self._write(model, layout, index, self.ttl_seconds[label], at, ready, known)
                    self._written_models.add(model)
            cached = [i for i, _ in layout.breakpoints if (model, layout.hashes[i]) in self._entries]
            if outcome.hit is not None:
                cached.append(outcome.hit[0])
            self._history.setdefault(model, deque(maxlen=_HISTORY)).append(_Record(layout.hashes, sorted(set(cached))))
            self._records += 1
            if self._records % 256 == 0:
                self._prune(at)
            return outcome.prediction

    def _write(
        self, model: str, layout: _Layout, index: int, ttl_s: float, at: float, ready: float, known: bool
    ) -> None:
        key = (model, layout.hashes[index])
        entry = self._entries.get(key)
        if entry is not None and entry.expires_at() > at:
            # a live entry: this request read it or raced its writer; the earliest readable copy wins
            if ready < entry.readable_from:
                entry.readable_from, entry.ready_known = ready, known
            entry.last_used_at = max(entry.last_used_at, at)
            entry.ttl_s = max(entry.ttl_s, ttl_s)
            return
        self._entries[key] = _Entry(index, layout.cumulative[index], ttl_s, at, ready, known)

    def _prune(self, now: float) -> None:
        stale = [k for k, e in self._entries.items() if e.expires_at() < now - _KEEP_EXPIRED_S]
        for key in stale:
            del self._entries[key]

    def reset(self) -> None:
        with self._lock:
            self._entries.clear()
            self._written_models.clear()
            self._history.clear()
