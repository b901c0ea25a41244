"""The replay: recorded requests -> chat requests -> (what-if variants) -> the engine, measured and predicted.

For every variant (the original traffic first) each request is tokenized by the engine itself (/tokenize applies
the chat template), predicted by `VllmPrefixCache` (the engine's block size and block count, read from
/metrics), then sent and measured. Every variant runs under its own `cache_salt`, so each starts on a cold
cache without restarting the server, while all of them share (and compete for) the engine's blocks, as the
simulator models.
"""

from __future__ import annotations

import json
import secrets
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any

from cachelint.errors import CachelintError
from cachelint.replay import whatif
from cachelint.replay.convert import (
    ChatRequest,
    as_vllm_renders_messages,
    chat_request,
    count_tokens_body,
    engine_body,
    messages_body,
    tokenize_body,
)
from cachelint.replay.engine import CacheConfig, Engine, EngineUnreachable, Measured, PrefixCounters
from cachelint.replay.source import Recorded
from cachelint.simulate.vllm import VllmPrefixCache

ORIGINAL = "original"


@dataclass(slots=True)
class ReplayOptions:
    concurrency: int = 1
    speed: float | None = None  # None: as fast as the engine answers; X: recorded gaps divided by X
    max_tokens: int = 1
    variants: list[str] = field(default_factory=list)
    api: str = "auto"  # "chat", "messages" (Anthropic requests on vLLM's /v1/messages), or "auto" (messages when served)
    run_id: str = field(default_factory=lambda: secrets.token_hex(6))


@dataclass(slots=True)
class RequestResult:
    index: int
    session: str
    seq: int
    variant: str
    cause: str | None  # the break recorded against the session's previous request
    tokens: int  # prompt tokens by the engine's /tokenize
    predicted_cached_tokens: int | None = None
    prompt_tokens: int | None = None
    cached_tokens: int | None = None
    ttft_ms: float | None = None
    error: str | None = None

    @property
    def agrees(self) -> bool:
        return self.error is None and self.cached_tokens == self.predicted_cached_tokens and self.prompt_tokens == self.tokens

    def disagreement(self) -> str | None:
        """Why the measurement differs from the prediction, in words (None when they agree)."""
        if self.error is not None:
            return f"failed: {self.error}"
        if self.prompt_tokens != self.tokens:
            return (f"the engine counted {self.prompt_tokens} prompt tokens, its /tokenize {self.tokens}: the prompt it ran is not "
                    "the one predicted (a server option that changes the chat template's input, such as "
                    "--exclude-tools-when-tool-choice-none?)")
        if self.cached_tokens != self.predicted_cached_tokens:
            return (f"measured {self.cached_tokens} cached tokens, predicted {self.predicted_cached_tokens} "
                    f"({(self.cached_tokens or 0) - (self.predicted_cached_tokens or 0):+d})")
        return None

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "session": self.session,
            "seq": self.seq,
            "prompt_tokens": self.prompt_tokens,
            "cached_tokens": self.cached_tokens,
            "predicted_cached_tokens": self.predicted_cached_tokens,
            "ttft_ms": round(self.ttft_ms, 2) if self.ttft_ms is not None else None,
            "recorded_break": self.cause,
            "error": self.error,
        }


def percentile(values: list[float], q: float) -> float | None:
    """Nearest-rank percentile (q in 0..100)."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * q // 100))
    return ordered[int(rank) - 1]


@dataclass(slots=True)
class Summary:
    requests: int
    errors: int
    prompt_tokens: int
    cached_tokens: int
    prefill_tokens: int
    hit_rate: float
    agreement: float
    ttft_p50_ms: float | None
    ttft_p99_ms: float | None
    engine_prefix_queries: float | None = None
    engine_prefix_hits: float | None = None

    @classmethod
    def of(cls, results: list[RequestResult], counters: PrefixCounters | None = None) -> Summary:
        ok = [r for r in results if r.error is None and r.prompt_tokens is not None]
        prompt = sum(r.prompt_tokens or 0 for r in ok)
        cached = sum(r.cached_tokens or 0 for r in ok)
        ttfts = [r.ttft_ms for r in ok if r.ttft_ms is not None]
        p50, p99 = percentile(ttfts, 50), percentile(ttfts, 99)
        return cls(
            requests=len(results),
            errors=len(results) - len(ok),
            prompt_tokens=prompt,
            cached_tokens=cached,
            prefill_tokens=prompt - cached,
            hit_rate=round(cached / prompt, 4) if prompt else 0.0,
            agreement=round(sum(r.agrees for r in results) / len(results), 4) if results else 1.0,
            ttft_p50_ms=round(p50, 2) if p50 is not None else None,
            ttft_p99_ms=round(p99, 2) if p99 is not None else None,
            engine_prefix_queries=counters.queries if counters else None,
            engine_prefix_hits=counters.hits if counters else None,
        )

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(slots=True)
class ReplayResult:
    base_url: str
    model: str
    cache: CacheConfig
    results: dict[str, list[RequestResult]]  # variant -> requests in replay order
    summaries: dict[str, Summary]
    concurrency: int = 1
    api: str = "chat"  # how the recorded Anthropic requests were sent: "messages" (as recorded) or "chat" (converted)

    @property
    def disagreements(self) -> list[RequestResult]:
        return [r for rs in self.results.values() for r in rs if not r.agrees]

    def to_json(self) -> dict[str, Any]:
        return {
            "engine": {
                "base_url": self.base_url,
                "model": self.model,
                "block_size": self.cache.block_size,
                "num_blocks": self.cache.num_blocks,
                "hash_algo": self.cache.hash_algo,
                "concurrency": self.concurrency,
                "api": self.api,
            },
            "requests": [r.to_json() for r in self.results[ORIGINAL]],
            "summary": self.summaries[ORIGINAL].to_json(),
            "what_if": {v: s.to_json() for v, s in self.summaries.items() if v != ORIGINAL},
            "what_if_requests": {v: [r.to_json() for r in rs] for v, rs in self.results.items() if v != ORIGINAL},
        }


@dataclass(slots=True)
class _Item:
    result: RequestResult
    request: ChatRequest
    started_at: float
    ids: list[int] | None = None
    native: dict[str, Any] | None = None  # the recorded Anthropic body, sent to /v1/messages as it is


def sessions_of(recorded: list[Recorded]) -> dict[str, list[ChatRequest]]:
    sessions: dict[str, list[ChatRequest]] = {}
    for r in recorded:
        sessions.setdefault(r.session, []).append(chat_request(r.prompt))
    return sessions


class Replay:
    def __init__(self, engine: Engine, recorded: list[Recorded], options: ReplayOptions, progress: Callable[[str], None] | None = None) -> None:
        self.engine = engine
        self.recorded = recorded
        self.options = options
        self.progress = progress or (lambda _message: None)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._token_ids: dict[str, list[int]] = {}
        self._render_missing = False

    def run(self) -> ReplayResult:
        self.engine.check_model()
        cache = self.engine.cache_config()
        simulator = VllmPrefixCache(cache.block_size, cache.num_blocks)
        base = sessions_of(self.recorded)
        api = self._api()
        results: dict[str, list[RequestResult]] = {}
        summaries: dict[str, Summary] = {}
        for variant in [ORIGINAL, *self.options.variants]:
            sessions = base if variant == ORIGINAL else whatif.apply(variant, base)
            items = self._items(variant, sessions, native=api == "messages")
            salt = f"cachelint-{self.options.run_id}-{variant}"
            self.progress(f"{variant}: {len(items)} requests")
            before = self.engine.prefix_counters()
            self._send_all(items, simulator, salt)
            after = self.engine.prefix_counters()
            results[variant] = [i.result for i in items]
            summaries[variant] = Summary.of(results[variant], after - before)
        return ReplayResult(self.engine.root, self.engine.model, cache, results, summaries, self.options.concurrency, api)

    def _api(self) -> str:
        """"messages" when Anthropic requests go to vLLM's /v1/messages as recorded, else "chat". The what-if
        variants rewrite chat requests, so with --what-if every variant (the original too) goes as chat, and
        the variants stay comparable."""
        anthropic = next((r.prompt.body for r in self.recorded if r.prompt.provider == "anthropic" and isinstance(r.prompt.body, dict)), None)
        if self.options.api == "chat" or anthropic is None or (self.options.api == "auto" and self.options.variants):
            return "chat"
        if self.options.variants:
            raise CachelintError("--api messages sends the recorded requests as they are; the what-if variants are chat requests: use --api chat with --what-if")
        if self.engine.serves_messages(count_tokens_body(anthropic, self.engine.model)):
            return "messages"
        if self.options.api == "messages":
            raise CachelintError(f"the server at {self.engine.root} has no /v1/messages (the Anthropic Messages API): use --api chat")
        return "chat"

    def _items(self, variant: str, sessions: dict[str, list[ChatRequest]], *, native: bool = False) -> list[_Item]:
        position = {s: 0 for s in sessions}
        items = []
        for index, r in enumerate(self.recorded):
            request = sessions[r.session][position[r.session]]
            position[r.session] += 1
            result = RequestResult(index, r.session, r.seq, variant, r.cause, 0)
            item = _Item(result, request, r.started_at)
            rendered = None
            if native and r.prompt.provider == "anthropic" and isinstance(r.prompt.body, dict):
                item.native = r.prompt.body
                rendered = self._render(r.prompt.body)
                request = as_vllm_renders_messages(request, r.prompt.body)
            try:
                item.ids = rendered if rendered is not None else self._tokenize(request)
                result.tokens = len(item.ids)
            except EngineUnreachable:  # also: a server without /tokenize
                raise
            except CachelintError as exc:  # this request rejected (e.g. longer than the engine's max_model_len)
                result.error = str(exc)
            items.append(item)
        return items

    def _render(self, recorded: dict[str, Any]) -> list[int] | None:
        """vLLM's own token ids for a recorded Messages request (`/v1/messages/render`, on a server started with
        `--enable-scale-out`); None without it, and then the chat view of what vLLM renders goes to /tokenize."""
        if self._render_missing:
            return None
        try:
            ids = self.engine.render_messages(messages_body(recorded, self.engine.model))
        except EngineUnreachable:
            raise
        except CachelintError:  # this request rejected: /tokenize will say why, for the request's own line
            return None
        self._render_missing = ids is None
        return ids

    def _tokenize(self, request: ChatRequest) -> list[int]:
        """The engine's token ids for a request; a variant that left a request as it was reuses its ids."""
        body = tokenize_body(request, self.engine.model)
        key = json.dumps(body, ensure_ascii=False, separators=(",", ":"))
        ids = self._token_ids.get(key)
        if ids is None:
            ids = self._token_ids[key] = self.engine.tokenize(body)
        return ids

    def _send_all(self, items: list[_Item], simulator: VllmPrefixCache, salt: str) -> None:
        t0 = time.monotonic()
        first = min((i.started_at for i in items), default=0.0)

        def send(item: _Item) -> None:
            if self.options.speed:
                delay = t0 + (item.started_at - first) / self.options.speed - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
            self._send(item, simulator, salt)

        if self.options.concurrency <= 1:
            for item in items:
                send(item)
            return
        by_session: dict[str, list[_Item]] = {}
        for item in items:
            by_session.setdefault(item.result.session, []).append(item)

        def one_session(session_items: list[_Item]) -> None:
            for item in session_items:
                if self._stop.is_set():
                    return
                send(item)

        pool = ThreadPoolExecutor(self.options.concurrency)
        try:
            for future in [pool.submit(one_session, s) for s in by_session.values()]:
                future.result()
        except BaseException:
            self._stop.set()  # Ctrl-C or a fatal error: no new request is sent; those in flight end by themselves
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        pool.shutdown()

    def _send(self, item: _Item, simulator: VllmPrefixCache, salt: str) -> None:
        """Predict, send, measure. One at a time the simulator sees exactly what the engine ran: the request is
        looked up first and recorded once the engine has answered (never when it was rejected). With concurrent
        sessions it is started when sent, so requests in flight see each other's blocks as in the engine."""
        result = item.result
        if item.ids is None:
            return
        if item.native is not None:
            body = messages_body(item.native, self.engine.model, max_tokens=self.options.max_tokens, cache_salt=salt)
        else:
            body = engine_body(item.request, self.engine.model, max_tokens=self.options.max_tokens, cache_salt=salt)
        concurrent = self.options.concurrency > 1
        allocation = None
        with self._lock:
            if concurrent:
                allocation = simulator.start(item.ids, salt)
                result.predicted_cached_tokens = allocation.cached_tokens
            else:
                result.predicted_cached_tokens = simulator.lookup(item.ids, salt)
        measured: Measured = self.engine.messages(body) if item.native is not None else self.engine.chat(body)
        ran = measured.rejected is False
        with self._lock:
            if allocation is not None:
                if ran:
                    simulator.finish(allocation, measured.completion_tokens or 1)
                else:
                    simulator.cancel(allocation)
            elif ran:
                simulator.record(item.ids, salt, measured.completion_tokens or 1)
        if measured.error is None and not measured.details:
            raise CachelintError(
                f"the server at {self.engine.root} reports no prompt_tokens_details: start it with --enable-prompt-tokens-details"
            )
        result.prompt_tokens, result.cached_tokens = measured.prompt_tokens, measured.cached_tokens
        result.ttft_ms, result.error = measured.ttft_ms, measured.error
