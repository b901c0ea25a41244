"""The session sweep: the recorded conversations replayed as N concurrent sessions, for each N, on the engine's
real KV pool, next to `cachelint kv`'s prediction of how many sessions that pool holds.

Why: prefix reuse holds while every live session's prefix fits in the engine's KV cache. One session more
and LRU eviction takes the blocks of the session that ran longest ago, which is the next one to run: reuse
collapses, prefill grows, time to first token jumps (the talk's cliff: Qwen3-4B FP8 on 24 GB, p99 TTFT 2.6 s
up to 12 sessions, 38.9 s at 14). The sweep measures where that happens for this traffic on this engine.

- Sessions: for N up to the number of recorded sessions, the first N as recorded (sharing what they really
  share); beyond that, copies of the recording, each copy under its own `cache_salt`, so a copy shares
  nothing with the others (as distinct users or repositories would). Each N gets salts of its own, so it
  starts cold while the blocks of the previous N still fill the pool (and are evicted first).
- All N sessions run at once, each session's requests one after the other (an agent sends its next turn
  after the answer), as fast as the engine answers.
- Measured per N: hit rate and prefill tokens (`usage.prompt_tokens_details.cached_tokens`), TTFT p50 / p99,
  and the engine's counters (`vllm:prefix_cache_*`, `vllm:num_preemptions_total`, and block evictions when
  the server runs with `--kv-cache-metrics --kv-cache-metrics-sample 1`). Predicted per N: the simulator's
  hit rate and evictions (`cachelint.simulate.vllm`, requests in the order the engine answered them).
- The `kv` prediction: `cachelint.kv.capacity` on the engine's usable pool (block count less vLLM's null
  block, times the block size, times the model's KV bytes per token) and the session length (the mean over
  the recorded sessions of their longest prompt plus the output tokens).
"""

from __future__ import annotations

import json
import re
import secrets
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from cachelint.errors import CachelintError
from cachelint.replay.convert import ChatRequest, engine_body, tokenize_body
from cachelint.replay.engine import CacheConfig, Engine, EngineUnreachable
from cachelint.replay.run import percentile, sessions_of
from cachelint.replay.source import Recorded
from cachelint.simulate.vllm import VllmPrefixCache

MAX_SESSIONS = 512
# The knee: the last N at which no reuse is lost (the hit rate of the smaller N kept, within LOSS_TOLERANCE):
# what `kv` predicts, every session's longest prefix in the pool at once. The sessions advance in lockstep, so up
# to the knee the hit rate is the same for every N, exactly. The collapse: the first N whose hit rate is below
# COLLAPSE of the best (where the talk's p99 jumps).
LOSS_TOLERANCE = 0.002
COLLAPSE = 0.5
_SPEC = re.compile(r"^(\d+)(?:-(\d+))?$")

EVICTION_METRIC = "vllm:kv_block_idle_before_evict_seconds_count"  # --kv-cache-metrics, sampled blocks
PREEMPTION_METRICS = ("vllm:num_preemptions_total", "vllm:num_preemptions")


def parse_sessions(spec: str) -> list[int]:
    """`1,2,4,8`, `1-16`, or both (`1-4,8,16`): the session counts to sweep, ascending, each once."""
    counts: set[int] = set()
    for part in (p.strip() for p in spec.split(",")):
        match = _SPEC.match(part)
        if not match:
            raise CachelintError(f"--sessions {spec!r}: expected counts and ranges such as 1,2,4,8 or 1-16")
        low, high = int(match.group(1)), int(match.group(2) or match.group(1))
        if low < 1 or high < low or high > MAX_SESSIONS:
            raise CachelintError(f"--sessions {spec!r}: {part!r} is not a range of 1 to {MAX_SESSIONS} sessions")
        counts.update(range(low, high + 1))
    return sorted(counts)


@dataclass(slots=True)
class KvPrediction:
    """What `cachelint kv` says about this engine's pool and this traffic's sessions."""

    model: str | None
    bytes_per_token: int | None
    pool_blocks: int  # usable blocks: the engine's count less its null block
    pool_tokens: int
    pool_bytes: int | None
    session_tokens: int  # mean over recorded sessions of (longest prompt + output tokens)
    session_blocks: int  # ceil(session_tokens / block_size): what a session holds in whole blocks
    max_concurrent_sessions: int  # `kv`'s answer: pool bytes // session bytes
    block_bound: int  # pool blocks // session blocks: the same count in whole blocks (never above kv's)
    note: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "model": self.model, "bytes_per_token": self.bytes_per_token, "pool_blocks": self.pool_blocks,
            "pool_tokens": self.pool_tokens, "pool_bytes": self.pool_bytes, "session_tokens": self.session_tokens,
            "session_blocks": self.session_blocks, "max_concurrent_sessions": self.max_concurrent_sessions,
            "block_bound": self.block_bound, "note": self.note,
        }


def kv_prediction(cache: CacheConfig, session_tokens: int, kv_model: str | None) -> KvPrediction:
    """`cachelint kv`'s concurrency cliff for the engine's own pool. Without a model config the pool's tokens
    divided by a session's tokens, which is what `kv` computes for a full-attention model."""
    if not cache.num_blocks:
        raise CachelintError("the server does not report its block count (num_gpu_blocks in vllm:cache_config_info): no pool to sweep against")
    blocks = cache.num_blocks - 1  # block 0 is vLLM's null block
    pool_tokens = blocks * cache.block_size
    session_blocks = -(-session_tokens // cache.block_size)
    block_bound = blocks // max(1, session_blocks)
    if kv_model is None:
        return KvPrediction(None, None, blocks, pool_tokens, None, session_tokens, session_blocks, pool_tokens // max(1, session_tokens),
                            block_bound, "no model config (--kv-model): pool tokens / session tokens")
    from cachelint.kv import capacity, model_kv_cost

    cost = model_kv_cost(kv_model)
    if not cost.bytes_per_token:
        raise CachelintError(f"--kv-model {kv_model}: no full-attention layers; the sweep's prediction needs a per-token KV size")
    pool_bytes = pool_tokens * cost.bytes_per_token
    report = capacity(cost, gpu_memory=pool_bytes + cost.weights_bytes, session_tokens=session_tokens, gpu_utilization=1.0)
    note = "; ".join(cost.notes) or None
    return KvPrediction(cost.model, cost.bytes_per_token, blocks, pool_tokens, pool_bytes, session_tokens, session_blocks,
                        int(report["max_concurrent_sessions"]), block_bound, note)


@dataclass(slots=True)
class Turn:
    session: str
    salt: str
    request: ChatRequest
    ids: list[int]
    predicted_cached_tokens: int | None = None
    prompt_tokens: int | None = None
    cached_tokens: int | None = None
    ttft_ms: float | None = None
    error: str | None = None


@dataclass(slots=True)
class SweepPoint:
    sessions: int
    requests: int
    errors: int
    prompt_tokens: int
    cached_tokens: int
    prefill_tokens: int
    hit_rate: float
    predicted_hit_rate: float
    ttft_p50_ms: float | None
    ttft_p99_ms: float | None
    seconds: float
    engine_prefix_queries: float | None
    engine_prefix_hits: float | None
    preemptions: float | None
    engine_evictions: float | None  # None: the server does not expose them (see --kv-cache-metrics)
    predicted_evictions: int
    fits: bool  # N <= kv's max_concurrent_sessions

    def to_json(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__slots__}  # type: ignore[attr-defined]


@dataclass(slots=True)
class SweepResult:
    base_url: str
    model: str
    cache: CacheConfig
    kv: KvPrediction
    points: list[SweepPoint]
    max_tokens: int
    recorded_sessions: int

    def knee(self) -> tuple[int | None, int | None]:
        """(the measured knee, the first N past it): the largest N before the first whose hit rate falls below the
        best hit rate of the smaller N (by more than LOSS_TOLERANCE); (None, None): no reuse lost in the sweep, or
        none to lose."""
        return self._first_below(1 - LOSS_TOLERANCE)

    def collapse(self) -> int | None:
        """The first N whose hit rate is below COLLAPSE of the best of the smaller N (None: not in the sweep)."""
        return self._first_below(COLLAPSE)[1]

    def _first_below(self, share: float) -> tuple[int | None, int | None]:
        best = 0.0
        previous: int | None = None
        for point in self.points:
            if previous is not None and best > 0 and point.hit_rate < share * best:
                return previous, point.sessions
            best = max(best, point.hit_rate)
            previous = point.sessions
        return None, None

    def to_json(self) -> dict[str, Any]:
        knee, fall = self.knee()
        return {
            "engine": {"base_url": self.base_url, "model": self.model, "block_size": self.cache.block_size,
                       "num_blocks": self.cache.num_blocks, "hash_algo": self.cache.hash_algo, "max_tokens": self.max_tokens},
            "recorded_sessions": self.recorded_sessions,
            "kv": self.kv.to_json(),
            "knee": {"measured": knee, "falls_at": fall, "collapses_at": self.collapse(), "predicted": self.kv.max_concurrent_sessions,
                     "block_bound": self.kv.block_bound,
                     "rule": "the largest N before the first that loses reuse (hit rate below the best of the smaller N by more than "
                             f"{LOSS_TOLERANCE:.1%}); collapses_at: the first N below {COLLAPSE:.0%} of it; the sessions advance in lockstep"},
            "points": [p.to_json() for p in self.points],
            "series": {  # one array per column, in the order of "sessions": what a plot takes
                name: [getattr(p, name) for p in self.points]
                for name in ("sessions", "hit_rate", "predicted_hit_rate", "prefill_tokens", "ttft_p50_ms", "ttft_p99_ms",
                             "preemptions", "engine_evictions", "predicted_evictions")
            },
        }


class Sweep:
    def __init__(self, engine: Engine, recorded: list[Recorded], counts: list[int], *, max_tokens: int = 1,
                 kv_model: str | None = None, progress: Callable[[str], None] | None = None) -> None:
        self.engine = engine
        self.recorded = recorded
        self.counts = counts
        self.max_tokens = max_tokens
        self.kv_model = kv_model
        self.progress = progress or (lambda _message: None)
        self.run_id = secrets.token_hex(6)
        self._ids: dict[str, list[int]] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()

    def run(self) -> SweepResult:
        self.engine.check_model()
        cache = self.engine.cache_config()
        sessions = list(sessions_of(self.recorded).items())
        tokenized = [[self._tokenize(r) for r in requests] for _, requests in sessions]
        peaks = [max(len(ids) for ids in turns) + self.max_tokens for turns in tokenized]
        kv = kv_prediction(cache, round(sum(peaks) / len(peaks)), self.kv_model)
        simulator = VllmPrefixCache(cache.block_size, cache.num_blocks)
        points = []
        for n in self.counts:
            self.progress(f"{n} session{'s' if n > 1 else ''} at once")
            points.append(self._point(n, sessions, tokenized, simulator, kv))
        return SweepResult(self.engine.root, self.engine.model, cache, kv, points, self.max_tokens, len(sessions))

    def _tokenize(self, request: ChatRequest) -> list[int]:
        body = tokenize_body(request, self.engine.model)
        key = json.dumps(body, ensure_ascii=False, separators=(",", ":"))
        if key not in self._ids:
            self._ids[key] = self.engine.tokenize(body)
        return self._ids[key]

    def _point(self, n: int, sessions: list[tuple[str, list[ChatRequest]]], tokenized: list[list[list[int]]],
               simulator: VllmPrefixCache, kv: KvPrediction) -> SweepPoint:
        plan: list[list[Turn]] = []
        for i in range(n):
            base, copy = i % len(sessions), i // len(sessions)
            name, requests = sessions[base]
            salt = f"cachelint-{self.run_id}-n{n}-c{copy}"
            label = name if copy == 0 else f"{name}#{copy}"
            plan.append([Turn(label, salt, r, ids) for r, ids in zip(requests, tokenized[base], strict=True)])
        before = self.engine.metrics()
        evicted_before = simulator.evicted
        started = time.monotonic()
        self._run_sessions(plan, simulator)
        seconds = time.monotonic() - started
        after = self.engine.metrics()
        turns = [t for session in plan for t in session]
        return _point_of(n, turns, seconds, self.engine, before, after, simulator.evicted - evicted_before, kv)

    def _run_sessions(self, plan: list[list[Turn]], simulator: VllmPrefixCache) -> None:
        """The N sessions advance in lockstep: in each round every session sends its next turn, and the next round
        starts when all have been answered. So N sessions are really live at once whatever the machine's speed
        (free-running threads on a busy machine can finish one session before the next starts, and never fill the
        pool), and the measured cliff depends on N and the pool, not on timing."""
        rounds = max(len(turns) for turns in plan)
        barrier = threading.Barrier(len(plan))

        def one_session(turns: list[Turn]) -> None:
            try:
                for k in range(rounds):
                    barrier.wait()
                    if self._stop.is_set():
                        return
                    if k < len(turns):
                        self._send(turns[k], simulator)
            except threading.BrokenBarrierError:
                return  # another session failed: its error is the one raised
            except BaseException:
                barrier.abort()
                raise

        pool = ThreadPoolExecutor(len(plan))
        try:
            for future in [pool.submit(one_session, turns) for turns in plan]:
                future.result()
        except BaseException:
            self._stop.set()  # Ctrl-C or a fatal error: no new request; those in flight end within --timeout
            barrier.abort()  # sessions waiting for the round to fill give up
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        pool.shutdown()

    def _send(self, turn: Turn, simulator: VllmPrefixCache) -> None:
        """Send, measure, then predict. The simulator takes the request when the engine has answered it, so it
        sees requests in the order the engine ran them: past the pool's size the engine queues a request until
        blocks are free and reads its hit only then, while one started at send time would still find its
        blocks (all held by requests in flight, none evictable)."""
        body = engine_body(turn.request, self.engine.model, max_tokens=self.max_tokens, cache_salt=turn.salt)
        measured = self.engine.chat(body)
        if not measured.rejected:
            with self._lock:
                turn.predicted_cached_tokens = simulator.record(turn.ids, turn.salt, measured.completion_tokens or 1)
        if measured.error is None and not measured.details:
            raise EngineUnreachable(f"the server at {self.engine.root} reports no prompt_tokens_details: start it with --enable-prompt-tokens-details")
        turn.prompt_tokens, turn.cached_tokens = measured.prompt_tokens, measured.cached_tokens
        turn.ttft_ms, turn.error = measured.ttft_ms, measured.error


def _delta(before: float | None, after: float | None) -> float | None:
    return None if before is None or after is None else after - before


def _point_of(n: int, turns: list[Turn], seconds: float, engine: Engine, before: dict[str, Any], after: dict[str, Any],
              predicted_evictions: int, kv: KvPrediction) -> SweepPoint:
    ok = [t for t in turns if t.error is None and t.prompt_tokens is not None]
    prompt = sum(t.prompt_tokens or 0 for t in ok)
    cached = sum(t.cached_tokens or 0 for t in ok)
    predicted = sum(t.predicted_cached_tokens or 0 for t in ok)
    ttfts = [t.ttft_ms for t in ok if t.ttft_ms is not None]
    p50, p99 = percentile(ttfts, 50), percentile(ttfts, 99)
    counters_before, counters_after = engine.prefix_counters(before), engine.prefix_counters(after)
    return SweepPoint(
        sessions=n,
        requests=len(turns),
        errors=len(turns) - len(ok),
        prompt_tokens=prompt,
        cached_tokens=cached,
        prefill_tokens=prompt - cached,
        hit_rate=round(cached / prompt, 4) if prompt else 0.0,
        predicted_hit_rate=round(predicted / prompt, 4) if prompt else 0.0,
        ttft_p50_ms=round(p50, 2) if p50 is not None else None,
        ttft_p99_ms=round(p99, 2) if p99 is not None else None,
        seconds=round(seconds, 2),
        engine_prefix_queries=counters_after.queries - counters_before.queries,
        engine_prefix_hits=counters_after.hits - counters_before.hits,
        preemptions=_delta(engine.metric_total(before, PREEMPTION_METRICS), engine.metric_total(after, PREEMPTION_METRICS)),
        engine_evictions=_delta(engine.metric_total(before, (EVICTION_METRIC,)), engine.metric_total(after, (EVICTION_METRIC,))),
        predicted_evictions=predicted_evictions,
        fits=n <= kv.max_concurrent_sessions,
    )
