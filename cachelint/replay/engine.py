"""Talking to a running vLLM (OpenAI-compatible) server: models, /tokenize, /metrics, and timed chat requests.

Every failure a user can cause (wrong URL, wrong model, a server started without prefix caching or without
prompt token details) becomes one `CachelintError` line.

Every call is bounded, whatever the server does: one deadline for the whole answer (`timeout`, checked as
bytes arrive, so a server that trickles a byte a second cannot hold it open; a server that sends nothing
more is cut by the read timeout), and a cap on the bytes read (answers are read raw, without decompression,
so a small compressed answer cannot grow in memory). A server that breaks either bound is not an engine the
replay can measure: `EngineUnreachable`, one line.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import httpx

from cachelint.errors import CachelintError
from cachelint.prompt.usage import token_count
from cachelint.sse import SSEParser

MiB = 1024 * 1024
MAX_INFO_BYTES = 16 * MiB  # /v1/models, /metrics: vLLM's are kilobytes
MAX_TOKENIZE_BYTES = 64 * MiB  # a token list for a prompt of a few million tokens
MAX_ERROR_BYTES = 64 * 1024  # the body of an error answer: only its first line is shown
STREAM_BASE_BYTES = 4 * MiB  # a streamed answer: this, plus STREAM_BYTES_PER_TOKEN per output token asked for
STREAM_BYTES_PER_TOKEN = 64 * 1024

_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def root_url(base_url: str) -> str:
    """The server's root from either `http://host:8000` or `http://host:8000/v1`."""
    url = base_url.strip().rstrip("/")
    if not re.match(r"^https?://", url):
        raise CachelintError(f"--base-url {base_url!r}: expected an http:// or https:// URL")
    return url.removesuffix("/v1")


def parse_metrics(text: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    """Prometheus text format: metric name -> [(labels, value)]."""
    out: dict[str, list[tuple[dict[str, str], float]]] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = _SAMPLE.match(line)
        if not m:
            continue
        try:
            value = float(m.group(4))
        except ValueError:
            continue
        labels = dict(_LABEL.findall(m.group(3) or ""))
        out.setdefault(m.group(1), []).append((labels, value))
    return out


@dataclass(slots=True)
class CacheConfig:
    block_size: int
    num_blocks: int | None
    prefix_caching: bool
    hash_algo: str | None = None


@dataclass(slots=True)
class PrefixCounters:
    queries: float = 0.0
    hits: float = 0.0

    def __sub__(self, other: PrefixCounters) -> PrefixCounters:
        return PrefixCounters(self.queries - other.queries, self.hits - other.hits)


@dataclass(slots=True)
class Measured:
    """What the engine reported for one request."""

    prompt_tokens: int | None = None
    cached_tokens: int | None = None
    completion_tokens: int | None = None
    ttft_ms: float | None = None
    error: str | None = None
    details: bool = True  # False: the usage had no prompt_tokens_details
    rejected: bool = False  # answered with an error status before it was scheduled: the engine computed nothing
    lost: bool = False  # the connection was lost mid-answer


class EngineUnreachable(CachelintError):
    """The server cannot serve the replay at all (no answer, no /tokenize, past the deadline or the size cap),
    as opposed to rejecting one request."""


class ConnectionLost(EngineUnreachable):
    """The connection failed or broke (not a timeout): fatal for the questions asked once, one failed request
    for a chat request."""


def _truthy(value: str | None) -> bool | None:
    if value is None:
        return None
    return value.strip().lower() in ("true", "1", "yes")


def _size(n: int) -> str:
    return f"{n // MiB} MiB" if n >= MiB else f"{n // 1024} KiB"


class Engine:
    def __init__(self, base_url: str, model: str, *, timeout: float = 300.0) -> None:
        self.root = root_url(base_url)
        self.model = model
        self.timeout = timeout
        # identity: the caps below count the bytes that reach memory, never a compressed size
        # no connection limit: the session sweep runs one thread per session, and waiting for a pooled
        # connection would count as time to first token
        self._http = httpx.Client(timeout=httpx.Timeout(timeout, connect=min(10.0, timeout)), headers={"accept-encoding": "identity"},
                                  limits=httpx.Limits(max_connections=None, max_keepalive_connections=64))

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _open(self, method: str, path: str, body: dict[str, Any] | None = None) -> Iterator[tuple[httpx.Response, float]]:
        """A response whose body is not read yet, and the deadline (time.monotonic) for reading it."""
        deadline = time.monotonic() + self.timeout
        try:
            with self._http.stream(method, self.root + path, json=body) as response:
                encoding = response.headers.get("content-encoding", "identity").strip().lower()
                if encoding not in ("", "identity"):
                    raise EngineUnreachable(f"{self.root}{path} answered with content-encoding {encoding[:40]!r} though none was asked for: "
                                            "not a vLLM server")
                yield response, deadline
        except httpx.TimeoutException:
            raise EngineUnreachable(f"{self.root}{path} did not answer within {self.timeout:g} s (--timeout): is the server overloaded or hung?") from None
        except httpx.HTTPError as exc:
            raise ConnectionLost(f"cannot reach the vLLM server at {self.root} ({type(exc).__name__}: {exc or 'no answer'})") from None

    def _chunks(self, response: httpx.Response, path: str, deadline: float, cap: int, *, truncate: bool = False) -> Iterator[bytes]:
        """The raw body in pieces, stopped at the deadline or past `cap` bytes (one line each); with `truncate`
        (an error's text, of which the start is enough) it ends quietly at the cap instead."""
        declared = response.headers.get("content-length", "")
        if not truncate and declared.isdigit() and int(declared) > cap:
            raise EngineUnreachable(f"{self.root}{path} announced {int(declared):,} bytes, more than the {_size(cap)} a vLLM answer needs: not a vLLM server?")
        read = 0
        for chunk in response.iter_raw():
            if truncate and read + len(chunk) >= cap:
                yield chunk[: cap - read]
                return
            read += len(chunk)
            if read > cap:
                raise EngineUnreachable(f"{self.root}{path} sent more than {_size(cap)} and was still sending: not a vLLM server, or a broken one")
            if time.monotonic() > deadline:
                raise EngineUnreachable(f"{self.root}{path} was still sending after {self.timeout:g} s (--timeout): a server that trickles or never ends its answer")
            yield chunk

    def _request(self, method: str, path: str, body: dict[str, Any] | None = None, cap: int = MAX_INFO_BYTES) -> tuple[int, str]:
        """(status, text) of a whole answer, read within the deadline and the cap (an error answer: its first KiB)."""
        with self._open(method, path, body) as (response, deadline):
            ok = response.status_code == 200
            data = b"".join(self._chunks(response, path, deadline, cap if ok else MAX_ERROR_BYTES, truncate=not ok))
            return response.status_code, data.decode("utf-8", "replace")

    def _get(self, path: str) -> tuple[int, str]:
        return self._request("GET", path)

    # --- what the server is -----------------------------------------------------------------------------------

    def served_models(self) -> list[str]:
        status, text = self._get("/v1/models")
        if status != 200:
            raise CachelintError(f"{self.root}/v1/models answered HTTP {status}: not an OpenAI-compatible server")
        try:
            return [str(m["id"]) for m in json.loads(text).get("data", [])]
        except (ValueError, KeyError, TypeError, AttributeError):
            raise CachelintError(f"{self.root}/v1/models: not an OpenAI model list") from None

    def check_model(self) -> None:
        served = self.served_models()
        if self.model not in served:
            raise CachelintError(f"the server at {self.root} does not serve model {self.model!r} (it serves: {', '.join(served) or 'nothing'})")

    def metrics(self) -> dict[str, list[tuple[dict[str, str], float]]]:
        status, text = self._get("/metrics")
        if status != 200:
            raise CachelintError(f"{self.root}/metrics answered HTTP {status}: is this a vLLM server?")
        return parse_metrics(text)

    def cache_config(self, metrics: dict[str, list[tuple[dict[str, str], float]]] | None = None) -> CacheConfig:
        metrics = metrics if metrics is not None else self.metrics()
        samples = metrics.get("vllm:cache_config_info")
        if not samples:
            raise CachelintError(f"{self.root}/metrics has no vllm:cache_config_info: not a vLLM V1 server, or metrics are off")
        labels = samples[0][0]
        if _truthy(labels.get("enable_prefix_caching")) is False:
            raise CachelintError(f"the server at {self.root} runs without prefix caching: start it with --enable-prefix-caching")
        try:
            block_size = int(labels["block_size"])
        except (KeyError, ValueError):
            raise CachelintError(f"{self.root}/metrics: vllm:cache_config_info has no block_size") from None
        blocks = labels.get("num_gpu_blocks")  # the engine's pool, on CPU too (num_cpu_blocks is the swap space)
        return CacheConfig(
            block_size=block_size,
            num_blocks=int(blocks) if blocks and blocks.isdigit() and int(blocks) > 0 else None,
            prefix_caching=True,
            hash_algo=labels.get("prefix_caching_hash_algo"),
        )

    def prefix_counters(self, metrics: dict[str, list[tuple[dict[str, str], float]]] | None = None) -> PrefixCounters:
        metrics = metrics if metrics is not None else self.metrics()
        return PrefixCounters(self.metric_total(metrics, ("vllm:prefix_cache_queries_total",)) or 0.0,
                              self.metric_total(metrics, ("vllm:prefix_cache_hits_total",)) or 0.0)

    def metric_total(self, metrics: dict[str, list[tuple[dict[str, str], float]]], names: tuple[str, ...]) -> float | None:
        """The first of `names` the server exports, summed over this model's samples; None when it exports none."""
        for name in names:
            samples = metrics.get(name)
            if samples:
                return sum(v for labels, v in samples if labels.get("model_name", self.model) == self.model)
        return None

    # --- requests ---------------------------------------------------------------------------------------------

    def tokenize(self, body: dict[str, Any]) -> list[int]:
        status, text = self._request("POST", "/tokenize", body, MAX_TOKENIZE_BYTES)
        if status in (404, 405, 501):
            raise EngineUnreachable(f"{self.root}/tokenize answered HTTP {status}: the replay needs vLLM's /tokenize "
                                    "(the engine's own token ids) for its prediction; is this a vLLM server?")
        if status != 200:
            raise CachelintError(f"{self.root}/tokenize answered HTTP {status}: {_error_text(text)}")
        try:
            return [int(t) for t in json.loads(text)["tokens"]]
        except (ValueError, KeyError, TypeError):
            raise CachelintError(f"{self.root}/tokenize: no token list in the answer") from None

    def chat(self, body: dict[str, Any]) -> Measured:
        """Send one streamed chat request; time to the first chunk, usage from the last. A connection lost
        mid-answer fails this request; a server past the deadline or the size cap stops the replay."""
        found: dict[str, Any] = {}

        def on_event(data: str, measured: Measured) -> None:
            if data not in ("", "[DONE]"):
                found.update(usage=_usage_of(data, measured) or found.get("usage"))

        measured = self._stream("/v1/chat/completions", body, on_event)
        if measured.rejected or measured.lost:
            return measured
        if found.get("usage") is None:
            measured.error = measured.error or "no usage in the stream"
            return measured
        _read_usage(found["usage"], measured)
        return measured

    def _stream(self, path: str, body: dict[str, Any], on_event: Callable[[str, Measured], None]) -> Measured:
        """POST a streamed request and hand each event's data to `on_event`; the time to the first event with data
        is the TTFT. An HTTP error is the request's (rejected); a connection lost mid-answer fails this request
        (`lost`); a server past the deadline or the size cap stops the replay (raised)."""
        max_tokens = body.get("max_tokens") if isinstance(body.get("max_tokens"), int) else 1
        cap = STREAM_BASE_BYTES + STREAM_BYTES_PER_TOKEN * max(1, max_tokens)
        measured = Measured()
        parser = SSEParser()
        started = time.perf_counter()
        try:
            with self._open("POST", path, body) as (response, deadline):
                if response.status_code != 200:
                    error = b"".join(self._chunks(response, path, deadline, MAX_ERROR_BYTES, truncate=True))
                    measured.error = f"HTTP {response.status_code}: {_error_text(error.decode('utf-8', 'replace'))}"
                    measured.rejected = True
                    return measured
                for chunk in self._chunks(response, path, deadline, cap):
                    for event in parser.feed(chunk):
                        if event.data and event.data != "[DONE]" and measured.ttft_ms is None:
                            measured.ttft_ms = (time.perf_counter() - started) * 1000.0
                        on_event(event.data, measured)
        except ConnectionLost as exc:
            measured.error, measured.lost = str(exc), True  # a broken stream: this request failed, the others go on
        return measured


    def serves_messages(self, probe: dict[str, Any]) -> bool:
        """Whether the server has the Anthropic Messages API: vLLM's `/v1/messages/count_tokens` answers a
        recorded request (any status but 404 / 405 / 501 means the route is there)."""
        status, _ = self._request("POST", "/v1/messages/count_tokens", probe, MAX_ERROR_BYTES)
        return status not in (404, 405, 501)

    def render_messages(self, body: dict[str, Any]) -> list[int] | None:
        """The token ids vLLM runs for a Messages request, from its `/v1/messages/render` (a server started with
        `--enable-scale-out`); None where the server does not offer it."""
        status, text = self._request("POST", "/v1/messages/render", body, MAX_TOKENIZE_BYTES)
        if status in (403, 404, 405, 501):
            return None
        if status != 200:
            raise CachelintError(f"{self.root}/v1/messages/render answered HTTP {status}: {_error_text(text)}")
        try:
            return [int(t) for t in json.loads(text)["token_ids"]]
        except (ValueError, KeyError, TypeError):
            raise CachelintError(f"{self.root}/v1/messages/render: no token_ids in the answer") from None

    def messages(self, body: dict[str, Any]) -> Measured:
        """Send one streamed Anthropic Messages request; time to the first event, usage from the events
        (vLLM puts the prompt's split in message_delta: input_tokens + cache_read_input_tokens +
        cache_creation_input_tokens is the prompt)."""
        usage: dict[str, Any] = {}

        def on_event(data: str, measured: Measured) -> None:
            if data:
                usage.update(_anthropic_usage_of(data, measured))

        measured = self._stream("/v1/messages", body, on_event)
        if measured.rejected or measured.lost:
            return measured
        if not usage:
            measured.error = measured.error or "no usage in the stream"
            return measured
        if "cache_read_input_tokens" not in usage:
            measured.details = False  # vLLM leaves the cache fields out when prompt token details are off
            return measured
        parts = [token_count(usage.get(k) or 0) for k in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")]
        if any(p is None for p in parts):
            measured.error = f"the stream's usage is not a set of counts: {usage!r}"[:300]
            return measured
        measured.prompt_tokens = sum(p or 0 for p in parts)
        measured.cached_tokens = parts[1]
        measured.completion_tokens = token_count(usage.get("output_tokens"))
        return measured


def _anthropic_usage_of(data: str, measured: Measured) -> dict[str, Any]:
    """The usage an Anthropic stream event carries (message_start's, then message_delta's, which wins)."""
    try:
        event = json.loads(data)
    except ValueError:
        return {}
    if not isinstance(event, dict):
        return {}
    if event.get("type") == "error" and isinstance(event.get("error"), dict):
        measured.error = str(event["error"].get("message", event["error"]))[:300]
    if event.get("type") == "message_start" and isinstance(event.get("message"), dict):
        usage = event["message"].get("usage")
        return {k: v for k, v in usage.items() if k != "input_tokens"} if isinstance(usage, dict) else {}
    usage = event.get("usage")
    return usage if event.get("type") == "message_delta" and isinstance(usage, dict) else {}


def _usage_of(data: str, measured: Measured) -> dict[str, Any] | None:
    """The usage a streamed chunk carries, if any (an error chunk sets the request's error)."""
    try:
        chunk = json.loads(data)
    except ValueError:
        return None
    if not isinstance(chunk, dict):
        return None
    if isinstance(chunk.get("error"), dict):
        measured.error = str(chunk["error"].get("message", chunk["error"]))[:300]
    return chunk["usage"] if isinstance(chunk.get("usage"), dict) else None


def _read_usage(usage: dict[str, Any], measured: Measured) -> None:
    measured.prompt_tokens = token_count(usage.get("prompt_tokens"))
    measured.completion_tokens = token_count(usage.get("completion_tokens"))
    details = usage.get("prompt_tokens_details")
    if isinstance(details, dict):
        measured.cached_tokens = token_count(details.get("cached_tokens") or 0)
        if measured.cached_tokens is None:
            measured.error = f"usage.prompt_tokens_details.cached_tokens is not a count: {details.get('cached_tokens')!r}"
    else:
        measured.details = False
    if measured.prompt_tokens is None:
        measured.error = measured.error or f"usage.prompt_tokens is not a count: {usage.get('prompt_tokens')!r}"


def _error_text(text: str) -> str:
    try:
        data = json.loads(text)
    except ValueError:
        return text.strip().splitlines()[0][:200] if text.strip() else "no body"
    if isinstance(data, dict):
        error = data.get("error", data.get("message", data.get("detail", data)))
        if isinstance(error, dict):
            error = error.get("message", error)
        return str(error)[:300]
    return str(data)[:300]
