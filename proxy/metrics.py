"""Prometheus metrics from the recorder's live totals (`--metrics-port`)."""

from __future__ import annotations

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector


class TotalsCollector(Collector):
    def __init__(self, recorder) -> None:
        self.recorder = recorder

    def collect(self):
        families = {
            "requests": CounterMetricFamily("cachelint_requests", "Recorded LLM requests", labels=["session", "model"]),
            "prompt": CounterMetricFamily("cachelint_prompt_tokens", "Prompt tokens reported by the provider", labels=["session", "model"]),
            "read": CounterMetricFamily("cachelint_cache_read_tokens", "Prompt tokens read from cache", labels=["session", "model"]),
            "write": CounterMetricFamily("cachelint_cache_write_tokens", "Prompt tokens written to cache", labels=["session", "model"]),
            "wasted": CounterMetricFamily("cachelint_wasted_prefill_tokens", "Tokens prefilled again after a cache break", labels=["session", "model"]),
            "wasted_usd": CounterMetricFamily("cachelint_wasted_usd", "Money spent on re-prefilled tokens", labels=["session", "model"]),
        }
        hit = GaugeMetricFamily("cachelint_hit_rate", "Share of prompt tokens read from cache", labels=["session", "model"])
        for session, t in list(self.recorder.totals.items()):
            labels = [session, t.model or ""]
            families["requests"].add_metric(labels, t.requests)
            families["prompt"].add_metric(labels, t.prompt_tokens)
            families["read"].add_metric(labels, t.cache_read_tokens)
            families["write"].add_metric(labels, t.cache_write_tokens)
            families["wasted"].add_metric(labels, t.wasted_prefill_tokens)
            families["wasted_usd"].add_metric(labels, t.wasted_cost)
            hit.add_metric(labels, t.hit_rate)
        yield from families.values()
        yield hit
