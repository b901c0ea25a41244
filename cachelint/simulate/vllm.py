"""A simulator of vLLM's automatic prefix cache: what the engine should reuse for each request it is sent.

The rules are the V1 engine's (vllm/v1/core/kv_cache_utils.py, kv_cache_manager.py, block_pool.py; see
shared/reference/vllm_kv.md section 1):

- Only full blocks are cached. Each full block is keyed by a hash chain: its parent's hash, its token ids,
  and (first block only) the request's `cache_salt`.
- A request reuses the longest run of cached blocks from the start, capped at `prompt_tokens - 1` tokens,
  because the last prompt token is always computed again to get logits. Hits are whole blocks.
- The block pool (vllm/v1/core/block_pool.py) is modelled block by block: new blocks come from the head of
  the free queue, and a block taken from there loses its cached hash (eviction). A finished request frees its
  blocks in reverse order: those with a hash go to the tail (least recently used first, its longest-prefix
  block first), those without one to the head (reused first). A hit takes its blocks out of the queue.
- Blocks are not de-duplicated: a full block computed again (the last block of a fully cached, block-aligned
  prompt, which is recomputed for the logits) is cached a second time under the same hash, and either copy
  serves a later hit.
- With more than one output token, the decoded tokens fill blocks too; their content is the model's output,
  so they get hashes no later prompt can match, and they take room in the pool.

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


@dataclass(slots=True)
class Allocation:
    """The blocks one running request holds (physical block ids, in prompt order)."""

    blocks: list[int]
    num_tokens: int
    cached_tokens: int
    inserted: list[tuple[BlockHash, int]] = field(default_factory=list)  # hashes this request cached


class VllmPrefixCache:
    """The engine's block pool as far as prefix reuse is concerned.

    `num_blocks` is the engine's block count (`num_gpu_blocks` in `vllm:cache_config_info`); block 0 is the
    engine's null block and never used. `None` means unbounded: nothing is ever evicted.
    """

    def __init__(self, block_size: int, num_blocks: int | None = None) -> None:
        if block_size <= 0:
            raise ValueError("block_size must be positive")
        self.block_size = block_size
        self.num_blocks = num_blocks
        self._free: OrderedDict[int, None] = OrderedDict()  # the free queue, head first
        self._hash_of: dict[int, BlockHash] = {}  # block -> its cached hash
        self._cached: dict[BlockHash, dict[int, None]] = {}  # hash -> the blocks holding it (the first serves hits)
        self._refs: dict[int, int] = {}
        self._next_id = 1
        self._unique = 0
        self.evicted = 0
        if num_blocks is not None:
            for block in range(1, num_blocks):
                self._free[block] = None
                self._refs[block] = 0

    def cached_blocks(self) -> int:
        """Blocks that hold a cached hash (free or in use)."""
        return len(self._hash_of)

    def lookup(self, token_ids: Sequence[int], cache_salt: str | None = None) -> int:
        """Tokens a request would read from cache now, without changing anything."""
        hashes = block_hashes(token_ids, self.block_size, cache_salt)
        return len(self._hit(hashes, len(token_ids))) * self.block_size

    def _hit(self, hashes: list[BlockHash], num_tokens: int) -> list[int]:
        hit = []
        for h in hashes[: max_hit_blocks(num_tokens, self.block_size)]:
            holders = self._cached.get(h)
            if not holders:
                break
            hit.append(next(iter(holders)))
        return hit

    def start(self, token_ids: Sequence[int], cache_salt: str | None = None) -> Allocation:
        """A request is scheduled: it reads its hit, and its full blocks are cached for later requests."""
        hashes = block_hashes(token_ids, self.block_size, cache_salt)
        hit = self._hit(hashes, len(token_ids))
        for block in hit:  # touch
            if self._refs[block] == 0:
                self._free.pop(block, None)
            self._refs[block] += 1
        blocks = hit + self._new_blocks(-(-len(token_ids) // self.block_size) - len(hit))
        allocation = Allocation(blocks, len(token_ids), len(hit) * self.block_size)
        for index in range(len(hit), min(len(hashes), len(blocks))):
            self._insert(hashes[index], blocks[index])
            allocation.inserted.append((hashes[index], blocks[index]))
        return allocation

    def finish(self, allocation: Allocation, output_tokens: int = 1) -> None:
        """A request ends after `output_tokens` tokens (the last one never gets KV); its blocks go back to the
        free queue."""
        computed = allocation.num_tokens + max(0, output_tokens - 1)
        if computed > allocation.num_tokens:
            full_before = allocation.num_tokens // self.block_size
            allocation.blocks += self._new_blocks(-(-computed // self.block_size) - len(allocation.blocks))
            for index in range(full_before, min(computed // self.block_size, len(allocation.blocks))):
                self._unique += 1  # decoded content: a hash no prompt can match
                self._insert(hashlib.sha256(b"output %d" % self._unique).digest(), allocation.blocks[index])
        self._release(allocation.blocks)

    def cancel(self, allocation: Allocation) -> None:
        """The request never ran (the server rejected it): what it cached is dropped, its blocks freed. Evictions
        it caused cannot be undone; send requests one at a time (`lookup`, then `record`) for exact results."""
        for h, block in allocation.inserted:
            if self._hash_of.get(block) == h:
                self._uncache(block)
        self._release(allocation.blocks)

    def record(self, token_ids: Sequence[int], cache_salt: str | None = None, output_tokens: int = 1) -> int:
        """Start and finish one request (requests sent one at a time); returns the tokens it read from cache."""
        allocation = self.start(token_ids, cache_salt)
        self.finish(allocation, output_tokens)
        return allocation.cached_tokens

    # --- the pool -------------------------------------------------------------------------------------------

    def _insert(self, h: BlockHash, block: int) -> None:
        if block in self._hash_of:
            self._uncache(block)
        self._hash_of[block] = h
        self._cached.setdefault(h, {})[block] = None

    def _uncache(self, block: int) -> None:
        h = self._hash_of.pop(block)
        holders = self._cached[h]
        del holders[block]
        if not holders:
            del self._cached[h]

    def _new_blocks(self, count: int) -> list[int]:
        out = []
        for _ in range(max(0, count)):
            if self.num_blocks is None:
                block, self._next_id = self._next_id, self._next_id + 1
            elif self._free:
                block, _ = self._free.popitem(last=False)
                if block in self._hash_of:
                    self._uncache(block)
                    self.evicted += 1
            else:  # the engine would wait for blocks; for reuse there is nothing more to model
                break
            self._refs[block] = 1
            out.append(block)
        return out

    def _release(self, blocks: list[int]) -> None:
        first, last = [], []
        for block in reversed(blocks):
            self._refs[block] -= 1
            if self._refs[block] == 0:
                (last if block in self._hash_of else first).append(block)
        for block in reversed(first):  # to the head, in order
            self._free[block] = None
            self._free.move_to_end(block, last=False)
        for block in last:  # to the tail
            self._free[block] = None
