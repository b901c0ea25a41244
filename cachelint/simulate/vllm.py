"""A simulator of vLLM's automatic prefix cache: what the engine should reuse for each request it is sent.

The rules are the V1 engine's (vllm/v1/core/kv_cache_utils.py, kv_cache_manager.py, block_pool.py; see
shared/reference/vllm_kv.md section 1):

- Only full blocks are cached. Each full block is keyed by a hash chain: its parent's hash, its token ids,
  and (first block only) the request's `cache_salt`.
- A request reuses the longest run of cached blocks from the start, capped at `prompt_tokens - 1` tokens,
  because the last prompt token is always computed again to get logits. Hits are whole blocks.
- Blocks no request holds stay cached on a free queue and are evicted least recently used first. A finished
  request frees its blocks in reverse order, so its longest-prefix block is evicted first. Blocks that were
  never hashed (the partial last block) are reused before any cached block is evicted.

The hashes here are cachelint's own (sha256 over the same chain); they are compared only with each other.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field

BlockHash = bytes
_ROOT: BlockHash = hashlib.sha256(b"cachelint-vllm-root").digest()


def block_hashes(token_ids: Sequence[int], block_size: int, cache_salt: str | None = None) -> list[BlockHash]:
    """The chained hash of every full block of `token_ids`; a trailing partial block has none."""
    if block_size <= 0:
        raise ValueError("block_size must be positive")
    hashes: list[BlockHash] = []
    parent = _ROOT
    for start in range(0, len(token_ids) - len(token_ids) % block_size, block_size):
        h = hashlib.sha256(parent)
        h.update(b",".join(str(t).encode() for t in token_ids[start : start + block_size]))
        if start == 0 and cache_salt:
            h.update(b"|salt|" + cache_salt.encode())
        parent = h.digest()
        hashes.append(parent)
    return hashes


def max_hit_blocks(num_tokens: int, block_size: int) -> int:
    """The most blocks a request of `num_tokens` prompt tokens can read: one token is always recomputed."""
    return max(0, num_tokens - 1) // block_size


def common_prefix_blocks(a: Sequence[BlockHash], b: Sequence[BlockHash]) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


@dataclass(slots=True)
class Allocation:
    """The blocks one running request holds: cached ones by hash, plus how many unhashed ones."""

    hashes: list[BlockHash]
    unhashed: int
    cached_tokens: int


@dataclass(slots=True)
class VllmPrefixCache:
    """The engine's block pool as far as prefix reuse is concerned.

    `num_blocks` is the engine's block count (`num_gpu_blocks` in `vllm:cache_config_info`); one of them is
    the engine's reserved null block. `None` means unbounded: nothing is ever evicted.
    """

    block_size: int
    num_blocks: int | None = None
    _refs: dict[BlockHash, int] = field(default_factory=dict)  # every cached block and how many requests hold it
    _free: OrderedDict[BlockHash, None] = field(default_factory=OrderedDict)  # cached, held by none: LRU first
    _unhashed_free: int = 0
    evicted: int = 0

    def __post_init__(self) -> None:
        if self.block_size <= 0:
            raise ValueError("block_size must be positive")
        self._unhashed_free = (self.num_blocks - 1) if self.num_blocks is not None else 0

    def cached_blocks(self) -> int:
        return len(self._refs)

    def lookup(self, token_ids: Sequence[int], cache_salt: str | None = None) -> int:
        """Tokens a request would read from cache now, without changing anything."""
        hashes = block_hashes(token_ids, self.block_size, cache_salt)
        return self._hit_blocks(hashes, len(token_ids)) * self.block_size

    def _hit_blocks(self, hashes: list[BlockHash], num_tokens: int) -> int:
        hit = 0
        for h in hashes[: max_hit_blocks(num_tokens, self.block_size)]:
            if h not in self._refs:
                break
            hit += 1
        return hit

    def start(self, token_ids: Sequence[int], cache_salt: str | None = None) -> Allocation:
        """A request is scheduled: it reads its hit, and its new full blocks become cached for later requests."""
        hashes = block_hashes(token_ids, self.block_size, cache_salt)
        hit = self._hit_blocks(hashes, len(token_ids))
        total_blocks = -(-len(token_ids) // self.block_size)
        held: list[BlockHash] = []
        for h in hashes[:hit]:
            self._take(h)
            held.append(h)
        self._allocate(total_blocks - hit)
        unhashed = total_blocks - hit
        for h in hashes[hit:]:
            if h in self._refs:  # computed again (e.g. the recomputed last block): the cached copy stays as it is
                continue
            self._refs[h] = 1
            held.append(h)
            unhashed -= 1
        return Allocation(held, unhashed, hit * self.block_size)

    def finish(self, allocation: Allocation) -> None:
        """A request ends: its blocks go back to the free queue, the longest-prefix block first in line."""
        for h in reversed(allocation.hashes):
            refs = self._refs.get(h)
            if refs is None:
                continue
            if refs <= 1:
                self._refs[h] = 0
                self._free[h] = None
            else:
                self._refs[h] = refs - 1
        self._unhashed_free += allocation.unhashed

    def record(self, token_ids: Sequence[int], cache_salt: str | None = None) -> int:
        """Start and finish one request (requests sent one at a time); returns the tokens it read from cache."""
        allocation = self.start(token_ids, cache_salt)
        self.finish(allocation)
        return allocation.cached_tokens

    def _take(self, h: BlockHash) -> None:
        if self._refs[h] == 0:
            del self._free[h]
        self._refs[h] += 1

    def _allocate(self, count: int) -> None:
        if self.num_blocks is None:
            return
        from_unhashed = min(count, self._unhashed_free)
        self._unhashed_free -= from_unhashed
        for _ in range(count - from_unhashed):
            if not self._free:  # the engine would queue or preempt; for reuse, nothing more to evict
                break
            victim, _ = self._free.popitem(last=False)
            del self._refs[victim]
            self.evicted += 1
