"""A stream tap: passes every chunk on unchanged, the moment it arrives, and keeps a bounded copy.

An endless stream costs at most `limit` bytes of memory (and of store), and all the streams in flight together at
most their shared `Budget`: past either the tap keeps nothing more, only counts what passed (`seen`), and the
exchange is recorded with an error saying how much was kept and why.
"""

from __future__ import annotations

import threading
import time

MAX_KEPT = 16 * 1024 * 1024  # what is kept for analysis and stored; traffic beyond it still flows through untouched
LIVE_KEPT = 512 * 1024 * 1024  # what all the streams in flight may keep together


class Budget:
    """Bytes that all live taps may keep together (taken on mitmproxy's loop, given back when a flow is captured)."""

    def __init__(self, total: int = LIVE_KEPT) -> None:
        self.total = total
        self.used = 0
        self._lock = threading.Lock()

    def take(self, size: int) -> bool:
        with self._lock:
            if self.used + size > self.total:
                return False
            self.used += size
            return True

    def give(self, size: int) -> None:
        with self._lock:
            self.used = max(0, self.used - size)


class StreamTap:
    def __init__(self, limit: int = MAX_KEPT, budget: Budget | None = None) -> None:
        self.chunks: list[bytes] = []
        self.size = 0
        self.seen = 0  # every byte that passed, kept or not
        self.limit = limit
        self.budget = budget
        self.truncated = False
        self.reason = ""  # why the copy stopped: past `limit`, or the shared budget was in use
        self.first_chunk_at: float | None = None
        self.ended_at: float | None = None
        self._released = False

    def __call__(self, chunk: bytes) -> bytes:
        if chunk:
            self.seen += len(chunk)
            if self.first_chunk_at is None:
                self.first_chunk_at = time.time()
            if not self.truncated:
                self._keep(chunk)
        else:
            self.ended_at = time.time()
        return chunk

    def _keep(self, chunk: bytes) -> None:
        """Keep the chunk, or stop keeping for good (a copy with a hole in it would be a different body)."""
        if self.size + len(chunk) > self.limit:
            self.truncated, self.reason = True, f"over {self.limit:,} bytes"
        elif self.budget is not None and not self.budget.take(len(chunk)):
            self.truncated, self.reason = True, f"the {self.budget.total:,} bytes kept for all streams in flight were in use"
        else:
            self.chunks.append(chunk)
            self.size += len(chunk)

    def release(self) -> None:
        """Give the kept bytes back to the shared budget (the copy now belongs to the captured exchange)."""
        if self.budget is not None and not self._released:
            self._released = True
            self.budget.give(self.size)

    @property
    def body(self) -> bytes:
        return b"".join(self.chunks)
