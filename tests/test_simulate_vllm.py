"""The vLLM prefix-cache simulator: hash chain over full blocks, hits capped at prompt - 1, LRU eviction."""

from __future__ import annotations

import pytest

from cachelint.diff.locate import common_prefix_items
from cachelint.simulate.vllm import VllmPrefixCache, block_hashes, max_hit_blocks

B = 4


def ids(n: int, start: int = 0) -> list[int]:
    return list(range(start, start + n))


def test_only_full_blocks_are_hashed_and_the_chain_depends_on_every_earlier_token():
    assert len(block_hashes(ids(11), B)) == 2
    a = block_hashes(ids(12), B)
    b = block_hashes([99] + ids(11, 1), B)  # first token differs
    assert common_prefix_items(a, b) == 0 and all(x != y for x, y in zip(a, b))
    c = ids(12)
    c[9] = 99  # third block differs
    assert common_prefix_items(a, block_hashes(c, B)) == 2


def test_cache_salt_changes_every_block_through_the_first():
    plain, salted = block_hashes(ids(12), B), block_hashes(ids(12), B, "run-1")
    assert all(x != y for x, y in zip(plain, salted))
    assert block_hashes(ids(12), B, "run-1") == salted


def test_identical_repeat_reads_whole_blocks_up_to_prompt_minus_one():
    cache = VllmPrefixCache(B)
    assert cache.record(ids(11)) == 0
    assert cache.record(ids(11)) == 8  # floor(10 / 4) * 4
    assert cache.record(ids(12)) == 8  # 12 tokens: at most 11 may be read, so 2 blocks
    assert cache.record(ids(13)) == 12
    assert max_hit_blocks(1, B) == 0 and max_hit_blocks(0, B) == 0


def test_append_reads_the_previous_prompt_and_a_change_reads_only_up_to_it():
    cache = VllmPrefixCache(B)
    cache.record(ids(10))
    assert cache.record(ids(20)) == 8
    changed = ids(20)
    changed[5] = 999
    assert cache.record(changed) == 4
    assert cache.lookup(ids(20), "other-salt") == 0


def test_lru_evicts_the_least_recently_used_and_the_longest_prefix_block_first():
    cache = VllmPrefixCache(B, num_blocks=5)  # 4 usable blocks (one is the engine's null block)
    cache.record(ids(8))  # blocks a0 a1
    cache.record(ids(8, 100))  # blocks b0 b1
    assert cache.cached_blocks() == 4 and cache.evicted == 0
    cache.record(ids(4, 200))  # needs 1 block: evicts a1 (a's longest-prefix block, freed first)
    assert cache.evicted == 1
    assert cache.lookup(ids(9)) == 4  # a0 still cached, a1 gone
    assert cache.lookup(ids(9, 100)) == 8


def test_a_hit_refreshes_blocks_so_they_outlive_older_ones():
    cache = VllmPrefixCache(B, num_blocks=5)
    cache.record(ids(8))
    cache.record(ids(8, 100))
    cache.record(ids(9))  # reads a0 a1: now most recently used; needs one unhashed block for the 9th token
    cache.record(ids(8, 300))  # two new blocks: evict b1 then b0
    assert cache.lookup(ids(9, 100)) == 0
    assert cache.lookup(ids(9)) == 8


def test_a_recomputed_block_is_a_second_copy_that_outlives_the_first():
    """vLLM does not de-duplicate: the last block of a fully cached, block-aligned prompt is computed again into a
    new block under the same hash, which goes to the back of the queue (found by vLLM's own BlockPool)."""
    cache = VllmPrefixCache(B, num_blocks=7)  # 6 usable blocks
    cache.record(ids(8))  # X: x0 x1
    cache.record(ids(8, 100))  # A: a0 a1
    assert cache.record(ids(8)) == 4  # X again: reads x0, recomputes x1 into a third block
    cache.record(ids(12, 200))  # 3 blocks: the 2 still free, then the oldest cached (x1's first copy)
    assert cache.lookup(ids(9)) == 8  # x1's second copy serves the hit
    assert cache.lookup(ids(9, 100)) == 4


def test_output_tokens_fill_blocks_no_prompt_can_read():
    cache = VllmPrefixCache(B, num_blocks=5)
    cache.record(ids(8))
    cache.record(ids(4, 100), output_tokens=10)  # 4 + 9 decoded tokens: 4 blocks, so both of x's are evicted
    assert cache.lookup(ids(9)) == 0
    assert cache.lookup(ids(5, 100)) == 4


def test_a_cancelled_request_leaves_nothing_cached():
    cache = VllmPrefixCache(B, num_blocks=9)
    allocation = cache.start(ids(12))
    cache.cancel(allocation)
    assert cache.lookup(ids(13)) == 0 and cache.cached_blocks() == 0
    assert cache.record(ids(12)) == 0 and cache.record(ids(12)) == 8


def test_blocks_held_by_a_running_request_are_never_evicted():
    cache = VllmPrefixCache(B, num_blocks=5)
    running = cache.start(ids(8))
    cache.record(ids(8, 100))  # needs 2 blocks, only 2 left unhashed: no eviction of running blocks
    other = cache.start(ids(8, 300))  # needs 2 more: may only evict b's blocks
    assert cache.lookup(ids(9)) == 8
    cache.finish(running)
    cache.finish(other)
    assert cache.lookup(ids(9)) == 8 and cache.lookup(ids(9, 300)) == 8 and cache.lookup(ids(9, 100)) == 0


def test_a_second_request_in_flight_reads_what_the_first_already_cached():
    cache = VllmPrefixCache(B)
    first = cache.start(ids(12))
    second = cache.start(ids(12))
    assert second.cached_tokens == 8
    cache.finish(first)
    cache.finish(second)
    assert cache.record(ids(12)) == 8


def test_bad_block_size_is_refused():
    with pytest.raises(ValueError):
        VllmPrefixCache(0)
    with pytest.raises(ValueError):
        block_hashes([1, 2], 0)
