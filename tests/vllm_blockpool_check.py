"""Differential check of cachelint's vLLM prefix-cache simulator against vLLM's own BlockPool.

Run with the Python of the vLLM environment: `python vllm_blockpool_check.py [SEEDS]`. It drives
vllm.v1.core.block_pool.BlockPool the way the full-attention KV cache manager does for requests sent one at a
time (longest cached prefix capped at prompt - 1, touch the hit, new blocks from the free queue, cache the full
blocks, decode blocks for the output, free in reverse order), and the simulator with the same requests. Prints
one JSON line: requests compared and every disagreement.
"""

from __future__ import annotations

import json
import random
import sys
import types
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from vllm.v1.core.block_pool import BlockPool
from vllm.v1.core.kv_cache_utils import BlockHash

from cachelint.simulate.vllm import VllmPrefixCache, block_hashes, max_hit_blocks


class EnginePool:
    """vLLM's BlockPool, used as FullAttentionManager + KVCacheManager use it, one request at a time."""

    def __init__(self, num_blocks: int, block_size: int) -> None:
        self.pool = BlockPool(num_blocks, True, block_size)
        self.block_size = block_size
        self.outputs = 0

    def record(self, ids: list[int], salt: str | None, output_tokens: int) -> int:
        b = self.block_size
        hashes = [BlockHash(h) for h in block_hashes(ids, b, salt)]
        hit = []
        for h in hashes[: max_hit_blocks(len(ids), b)]:
            found = self.pool.get_cached_block(h, [0])
            if found is None:
                break
            hit.append(found[0])
        self.pool.touch(hit)
        blocks = hit + self.pool.get_new_blocks(-(-len(ids) // b) - len(hit))
        request = types.SimpleNamespace(block_hashes=list(hashes), request_id="r", num_prompt_tokens=len(ids))
        self.pool.cache_full_blocks(request, blocks, len(hit), len(ids) // b, b, 0)
        computed = len(ids)
        for _ in range(output_tokens - 1):  # decode: one token a step; the last sampled token never gets KV
            computed += 1
            if computed > len(blocks) * b:
                blocks += self.pool.get_new_blocks(1)
            if computed % b == 0:
                self.outputs += 1
                request.block_hashes.append(BlockHash(b"decoded-%d" % self.outputs))
                self.pool.cache_full_blocks(request, blocks, computed // b - 1, computed // b, b, 0)
        self.pool.free_blocks(reversed(blocks))
        return len(hit) * b


def run(seed: int) -> tuple[int, list[dict]]:
    rng = random.Random(seed)
    block_size = rng.choice([2, 4, 16])
    num_blocks = rng.randint(6, 40)
    usable = num_blocks - 1
    engine, simulator = EnginePool(num_blocks, block_size), VllmPrefixCache(block_size, num_blocks)
    families = [[rng.randrange(1000) for _ in range(usable * block_size)] for _ in range(4)]
    disagreements, n = [], 0
    for step in range(60):
        family = rng.choice(families)
        length = rng.choice([block_size * rng.randint(1, usable - 1), rng.randint(1, (usable - 1) * block_size)])
        ids = list(family[:length])
        if rng.random() < 0.3 and ids:  # an edit somewhere in the prompt
            ids[rng.randrange(len(ids))] = -1 - step
        salt = rng.choice([None, None, "a", "b"])
        output = rng.choice([1, 1, 1, rng.randint(2, 3 * block_size)])
        if -(-(len(ids) + output - 1) // block_size) > usable:
            continue
        n += 1
        expected = engine.record(ids, salt, output)
        got = simulator.record(ids, salt, output)
        if expected != got:
            disagreements.append({"seed": seed, "step": step, "tokens": len(ids), "engine": expected, "simulator": got})
    return n, disagreements


def main() -> None:
    seeds = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    total, bad = 0, []
    for seed in range(seeds):
        n, disagreements = run(seed)
        total += n
        bad += disagreements
    print(json.dumps({"requests": total, "disagreements": bad[:20], "disagreement_count": len(bad)}))


if __name__ == "__main__":
    main()
