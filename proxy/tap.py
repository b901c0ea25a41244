"""A stream tap: passes every chunk on unchanged, the moment it arrives, and keeps a bounded copy."""

from __future__ import annotations

import time

MAX_KEPT = 64 * 1024 * 1024  # what is kept for analysis; traffic beyond it still flows through untouched


class StreamTap:
    def __init__(self, limit: int = MAX_KEPT) -> None:
        self.chunks: list[bytes] = []
        self.size = 0
        self.limit = limit
        self.truncated = False
        self.first_chunk_at: float | None = None
        self.ended_at: float | None = None

    def __call__(self, chunk: bytes) -> bytes:
        if chunk:
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
