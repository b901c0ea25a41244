"""Talking to a running vLLM (OpenAI-compatible) server: models, /tokenize, /metrics, and timed chat requests.

Every failure a user can cause (wrong URL, wrong model, a server started without prefix caching or without
prompt token details) becomes one `CachelintError` line.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from typing import Any

import httpx

from cachelint.errors import CachelintError
from cachelint.prompt.usage import token_count
from cachelint.sse import SSEParser

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
    chunks: list[str] = field(default_factory=list, repr=False)


class EngineUnreachable(CachelintError):
    """The server cannot serve the replay at all (no answer, no /tokenize), as opposed to rejecting one request."""


def _truthy(value: str | None) -> bool | None:
    if value is None:
        return None
    return value.strip().lower() in ("true", "1", "yes")


class Engine:
    def __init__(self, base_url: str, model: str, *, timeout: float = 300.0) -> None:
        self.root = root_url(base_url)
        self.model = model
        self._http = httpx.Client(timeout=httpx.Timeout(timeout, connect=10.0))

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _request(self, method: str, path: str, body: dict[str, Any] | None = None) -> httpx.Response:
        try:
            return self._http.request(method, self.root + path, json=body)
        except httpx.HTTPError as exc:
            raise EngineUnreachable(f"cannot reach the vLLM server at {self.root} ({type(exc).__name__}: {exc or 'no answer'})") from None

    def _get(self, path: str) -> httpx.Response:
        return self._request("GET", path)

    def _post(self, path: str, body: dict[str, Any]) -> httpx.Response:
        return self._request("POST", path, body)

    # --- what the server is -----------------------------------------------------------------------------------

    def served_models(self) -> list[str]:
        response = self._get("/v1/models")
        if response.status_code != 200:
            raise CachelintError(f"{self.root}/v1/models answered HTTP {response.status_code}: not an OpenAI-compatible server")
        try:
            return [str(m["id"]) for m in response.json().get("data", [])]
        except (ValueError, KeyError, TypeError, AttributeError):
            raise CachelintError(f"{self.root}/v1/models: not an OpenAI model list") from None

    def check_model(self) -> None:
        served = self.served_models()
        if self.model not in served:
            raise CachelintError(f"the server at {self.root} does not serve model {self.model!r} (it serves: {', '.join(served) or 'nothing'})")

    def metrics(self) -> dict[str, list[tuple[dict[str, str], float]]]:
        response = self._get("/metrics")
        if response.status_code != 200:
            raise CachelintError(f"{self.root}/metrics answered HTTP {response.status_code}: is this a vLLM server?")
        return parse_metrics(response.text)

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

        def total(name: str) -> float:
            return sum(v for labels, v in metrics.get(name, []) if labels.get("model_name", self.model) == self.model)

        return PrefixCounters(total("vllm:prefix_cache_queries_total"), total("vllm:prefix_cache_hits_total"))

    # --- requests ---------------------------------------------------------------------------------------------

    def tokenize(self, body: dict[str, Any]) -> list[int]:
        response = self._post("/tokenize", body)
        if response.status_code in (404, 405, 501):
            raise EngineUnreachable(f"{self.root}/tokenize answered HTTP {response.status_code}: the replay needs vLLM's /tokenize "
                                    "(the engine's own token ids) for its prediction; is this a vLLM server?")
        if response.status_code != 200:
            raise CachelintError(f"{self.root}/tokenize answered HTTP {response.status_code}: {_error_text(response.text)}")
        try:
            return [int(t) for t in response.json()["tokens"]]
        except (ValueError, KeyError, TypeError):
            raise CachelintError(f"{self.root}/tokenize: no token list in the answer") from None

    def chat(self, body: dict[str, Any]) -> Measured:
        """Send one streamed chat request; time to the first chunk, usage from the last."""
        measured = Measured()
        parser = SSEParser()
        usage: dict[str, Any] | None = None
        started = time.perf_counter()
        try:
            with self._http.stream("POST", self.root + "/v1/chat/completions", json=body) as response:
                if response.status_code != 200:
                    measured.error = f"HTTP {response.status_code}: {_error_text(response.read().decode('utf-8', 'replace'))}"
                    measured.rejected = True
                    return measured
                for chunk in response.iter_bytes():
                    for event in parser.feed(chunk):
                        if event.data in ("", "[DONE]"):
                            continue
                        if measured.ttft_ms is None:
                            measured.ttft_ms = (time.perf_counter() - started) * 1000.0
                        try:
                            data = json.loads(event.data)
                        except ValueError:
                            continue
                        if isinstance(data, dict) and isinstance(data.get("usage"), dict):
                            usage = data["usage"]
                        if isinstance(data, dict) and isinstance(data.get("error"), dict):
                            measured.error = str(data["error"].get("message", data["error"]))
        except httpx.HTTPError as exc:
            measured.error = f"{type(exc).__name__}: {exc or 'connection lost'}"
            return measured
        if usage is None:
            measured.error = measured.error or "no usage in the stream"
            return measured
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
        return measured


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
