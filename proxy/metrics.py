"""Prometheus metrics from the recorder's live totals (`--metrics-port`), with bounded label sets.

Sessions grow without limit, so no metric has a session label: the totals are summed per model. Model names
come off the wire, so the first `max_models` distinct ones are labels and any later one is counted as
`model="other"`; break causes are a fixed list (anything else is `other`). However many sessions and models a
proxy sees, a scrape has at most (max_models + 1) x (causes + 1) series per family. `cachelint_sessions` counts
the sessions.
"""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from cachelint.diff.explain import CAUSES
from cachelint.record.report import AGREEMENTS, counted_cause

MAX_MODELS = 32
OTHER = "other"
BREAK_CAUSES = frozenset(CAUSES) - {"none"} | {"ttl_expired", "provider_side", "provider_miss"}

_SUMS = (
    ("requests", "cachelint_requests", "Recorded LLM requests"),
    ("prompt_tokens", "cachelint_prompt_tokens", "Prompt tokens reported by the provider"),
    ("cache_read_tokens", "cachelint_cache_read_tokens", "Prompt tokens read from cache"),
    ("cache_write_tokens", "cachelint_cache_write_tokens", "Prompt tokens written to cache"),
    ("output_tokens", "cachelint_output_tokens", "Output tokens reported by the provider"),
    ("wasted_prefill_tokens", "cachelint_wasted_prefill_tokens", "Tokens prefilled again after a cache break"),
    ("wasted_cost", "cachelint_wasted_usd", "Money spent on re-prefilled tokens (USD)"),
    ("cost", "cachelint_cost_usd", "Money spent on the recorded requests (USD, priced ones)"),
    ("errors", "cachelint_errors", "Requests that failed (HTTP status >= 400 or a transport error)"),
    ("unpriced", "cachelint_unpriced_requests", "Requests whose model has no known price (their cost is not in cachelint_cost_usd)"),
)


class TotalsCollector(Collector):
    """Register with prometheus_client's registry; pass each recorded row to `on_row` for the break counts."""

    def __init__(self, recorder, max_models: int = MAX_MODELS) -> None:
        self.recorder = recorder
        self.max_models = max_models
        self._models: set[str] = set()
        self._breaks: Counter[tuple[str, str]] = Counter()
        self._lock = threading.Lock()

    def model_label(self, model: str | None) -> str:
        """The label for a model: itself while fewer than `max_models` are known, else `other`."""
        name = model or ""
        with self._lock:
            if name in self._models:
                return name
            if len(self._models) < self.max_models:
                self._models.add(name)
                return name
        return OTHER

    def on_row(self, row) -> None:
        cause = counted_cause(row.brk or {})
        if cause is None:
            return
        label = cause if cause in BREAK_CAUSES else OTHER
        model = self.model_label(row.model)
        with self._lock:
            self._breaks[(model, label)] += 1

    def per_model(self) -> dict[str, dict[str, Any]]:
        """The recorder's per-session totals summed per model label."""
        found: dict[str, dict[str, Any]] = {}
        for t in list(self.recorder.totals.values()):
            sums = found.setdefault(self.model_label(t.model), {key: 0 for key, _, _ in _SUMS})
            for key, _, _ in _SUMS:
                sums[key] += getattr(t, key, 0) or 0
        return found

    def agreements(self) -> dict[str, int]:
        """How often cachelint's cause and the provider's own diagnosis agreed, over all sessions."""
        found = dict.fromkeys(AGREEMENTS, 0)
        for t in list(self.recorder.totals.values()):
            for kind, n in (getattr(t, "agreements", None) or {}).items():
                if kind in found:
                    found[kind] += n
        return found

    def collect(self):
        models = self.per_model()
        families = {key: CounterMetricFamily(name, text, labels=["model"]) for key, name, text in _SUMS}
        hit = GaugeMetricFamily("cachelint_hit_rate", "Share of prompt tokens read from cache", labels=["model"])
        for model, sums in sorted(models.items()):
            for key, _, _ in _SUMS:
                families[key].add_metric([model], sums[key])
            hit.add_metric([model], sums["cache_read_tokens"] / sums["prompt_tokens"] if sums["prompt_tokens"] else 0.0)
        breaks = CounterMetricFamily("cachelint_breaks", "Cache breaks by cause (cachelint's, or the provider's own diagnosis)",
                                     labels=["model", "cause"])
        with self._lock:
            counted = sorted(self._breaks.items())
        for (model, cause), n in counted:
            breaks.add_metric([model, cause], n)
        agreement = CounterMetricFamily("cachelint_agreements", "Breaks by whether cachelint and the provider's diagnosis agreed",
                                        labels=["agreement"])
        for kind, n in self.agreements().items():
            agreement.add_metric([kind], n)
        yield from families.values()
        yield hit
        yield breaks
        yield agreement
        yield GaugeMetricFamily("cachelint_sessions", "Sessions the proxy has seen since it started", value=len(self.recorder.totals))
