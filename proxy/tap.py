"""A stream tap: passes every chunk on unchanged, the moment it arrives, and keeps a bounded copy.

An endless stream costs at most `limit` bytes of memory (and of store): past it the tap only counts what passed
(`seen`) and the exchange is recorded with an error saying how much was kept.
"""

from __future__ import annotations

import time

MAX_KEPT = 16 * 1024 * 1024  # what is kept for analysis and stored; traffic beyond it still flows through untouched


class StreamTap:
    def __init__(self, limit: int = MAX_KEPT) -> None:
        self.chunks: list[bytes] = []
        self.size = 0
        self.seen = 0  # every byte that passed, kept or not
        self.limit = limit
        self.truncated = False
        self.first_chunk_at: float | None = None
        self.ended_at: float | None = None

    def __call__(self, chunk: bytes) -> bytes:
        if chunk:
            self.seen += len(chunk)
            if self.first_chunk_at is None:
                self.first_chunk_at = time.time()
            if self.size + len(chunk) <= self.limit:
                self.chunks.append(chunk)
                self.size += len(chunk)
            else:
                self.truncated = True
        else:
            self.ended_at = time.time()
        return chunk

    @property
    def body(self) -> bytes:
        return b"".join(self.chunks)
