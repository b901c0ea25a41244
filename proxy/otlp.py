"""OpenTelemetry export for `cachelint proxy --otlp-endpoint URL`: each recorded exchange as a span, running
totals as metrics, sent over OTLP (HTTP/protobuf or gRPC) to a team's collector.

Names follow the OpenTelemetry GenAI semantic conventions where they exist (`gen_ai.operation.name`,
`gen_ai.provider.name` and the older `gen_ai.system`, `gen_ai.request.model`, `gen_ai.conversation.id`,
`gen_ai.usage.input_tokens` (all prompt tokens, cached ones included, as the convention says),
`gen_ai.usage.output_tokens`, `gen_ai.usage.cache_read.input_tokens`, `gen_ai.usage.cache_creation.input_tokens`,
`gen_ai.response.time_to_first_chunk`, the `gen_ai.client.token.usage` and `gen_ai.client.operation.duration`
histograms); what no convention names yet is `cachelint.*` (docs/report.md lists them): the break's cause,
detail, rule and pointer, the tokens prefilled again and their cost, the provider's own diagnosis.

No prompt text leaves the machine: spans carry numbers, names and JSON pointers, never the before / after
excerpts. Metrics have no session attribute (sessions grow without limit) and at most `max_models` model
values (then `other`).

Configuration is the standard one: an explicit endpoint and protocol win; otherwise the exporters read
OTEL_EXPORTER_OTLP_ENDPOINT / _TRACES_ENDPOINT / _METRICS_ENDPOINT, _PROTOCOL, _HEADERS, _TIMEOUT, _COMPRESSION,
_CERTIFICATE, and the resource OTEL_SERVICE_NAME / OTEL_RESOURCE_ATTRIBUTES; OTEL_METRIC_EXPORT_INTERVAL sets
how often the totals are sent.
"""

from __future__ import annotations

import os
import threading
from typing import Any
from urllib.parse import urlparse

from cachelint.errors import CachelintError
from cachelint.record.report import counted_cause

PROTOCOLS = ("http/protobuf", "grpc")
MAX_MODELS = 32
OTHER = "other"
ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT")
_PROVIDERS = {"anthropic": "anthropic", "openai-chat": "openai", "openai-responses": "openai", "openai": "openai"}


def configured(endpoint: str | None) -> bool:
    """Whether to export at all: an endpoint given on the command line or in the standard variables."""
    return bool(endpoint) or any(os.environ.get(name) for name in ENDPOINT_VARIABLES)


def resolve_protocol(protocol: str | None) -> str:
    chosen = protocol or os.environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL") or "http/protobuf"
    if chosen not in PROTOCOLS:
        raise CachelintError(f"OTLP protocol {chosen!r} is not supported (use {' or '.join(PROTOCOLS)})")
    return chosen


def signal_urls(endpoint: str) -> tuple[str, str]:
    """The traces and metrics URLs for OTLP/HTTP from what a user gives: a collector's base URL
    (http://collector:4318) or one signal's full URL (.../v1/traces)."""
    parsed = urlparse(endpoint)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise CachelintError(f"--otlp-endpoint must be an http:// or https:// URL, not {endpoint!r}")
    base = endpoint.rstrip("/")
    for suffix in ("/v1/traces", "/v1/metrics"):
        if base.endswith(suffix):
            base = base[: -len(suffix)]
    return base + "/v1/traces", base + "/v1/metrics"


def provider_name(provider: str | None) -> str:
    return _PROVIDERS.get(provider or "", provider or "unknown")


def span_attributes(row) -> dict[str, Any]:
    """A recorded exchange as span attributes: GenAI conventions first, then cachelint's own."""
    provider = provider_name(row.provider)
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": provider,
        "gen_ai.system": provider,
        "gen_ai.request.model": row.model,
        "gen_ai.conversation.id": row.session,
        "gen_ai.usage.input_tokens": row.prompt_tokens,
        "gen_ai.usage.output_tokens": row.output_tokens,
        "gen_ai.usage.cache_read.input_tokens": row.cache_read_tokens,
        "gen_ai.usage.cache_creation.input_tokens": row.cache_write_tokens,
        "gen_ai.response.time_to_first_chunk": row.ttft,
        "http.request.method": row.method,
        "http.response.status_code": row.status,
        "cachelint.session": row.session,
        "cachelint.seq": row.seq,
        "cachelint.hit_rate": row.hit_rate,
        "cachelint.cost_usd": row.cost,
        "cachelint.wasted_prefill_tokens": row.wasted_prefill_tokens or 0,
        "cachelint.wasted_cost_usd": row.wasted_cost,
        "cachelint.mismatch": row.mismatch,
        "cachelint.findings": [f.get("code") for f in row.findings or [] if f.get("code")] or None,
    }
    url = urlparse(row.url or "")
    if url.hostname:
        attributes["server.address"] = url.hostname
        if url.port:
            attributes["server.port"] = url.port
    attributes.update(break_attributes(row.brk or {}))
    if row.error or (row.status or 0) >= 400:
        attributes["error.type"] = str(row.status) if (row.status or 0) >= 400 else "transport"
        attributes["cachelint.error"] = row.error
    return {k: v for k, v in attributes.items() if v is not None}


def break_attributes(brk: dict[str, Any]) -> dict[str, Any]:
    """The break against the session's previous request, and the provider's diagnosis of it (no excerpts)."""
    found: dict[str, Any] = {}
    cause = brk.get("cause")
    if cause:
        found["cachelint.break.cause"] = cause
    if cause not in (None, "none"):
        found.update({
            "cachelint.break.detail": brk.get("detail"),
            "cachelint.break.rule": brk.get("rule"),
            "cachelint.break.pointer": (brk.get("location") or {}).get("pointer") or brk.get("header"),
            "cachelint.break.section": brk.get("section"),
            "cachelint.break.estimated_reprefilled_tokens": brk.get("reprefilled_tokens"),
            "cachelint.break.idle_seconds": brk.get("idle_seconds"),
            "cachelint.break.ttl_seconds": brk.get("ttl_seconds"),
        })
    if brk.get("not_cacheable"):
        found["cachelint.not_cacheable"] = brk["not_cacheable"]
    diagnosis = brk.get("provider_diagnosis") or {}
    if diagnosis:
        found.update({
            "cachelint.provider_diagnosis.source": diagnosis.get("source"),
            "cachelint.provider_diagnosis.type": diagnosis.get("type"),
            "cachelint.provider_diagnosis.missed_input_tokens": diagnosis.get("missed_input_tokens"),
            "cachelint.provider_diagnosis.pending": diagnosis.get("pending"),
        })
    if brk.get("agreement"):
        found["cachelint.agreement"] = brk["agreement"]
    return {k: v for k, v in found.items() if v is not None}


is_break = counted_cause  # the cause to count for a row (cachelint's, else provider_miss), as the report counts it


class OtlpExporter:
    """An addon-like exporter: `on_row(row)` for every recorded exchange (from the recorder's worker thread),
    `done()` (mitmproxy's hook name) to flush and stop when the proxy exits."""

    def __init__(self, endpoint: str | None = None, protocol: str | None = None, *, max_models: int = MAX_MODELS,
                 export_interval_ms: int | None = None) -> None:
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        import cachelint

        self.protocol = resolve_protocol(protocol)
        span_exporter, metric_exporter = self._exporters(endpoint)
        attributes = {"service.version": getattr(cachelint, "__version__", "unknown")}
        if not os.environ.get("OTEL_SERVICE_NAME"):
            attributes["service.name"] = "cachelint-proxy"
        resource = Resource.create(attributes)
        self.tracer_provider = TracerProvider(resource=resource)
        self.tracer_provider.add_span_processor(BatchSpanProcessor(span_exporter))
        interval = export_interval_ms if export_interval_ms is not None else int(os.environ.get("OTEL_METRIC_EXPORT_INTERVAL") or 15000)
        self.reader = PeriodicExportingMetricReader(metric_exporter, export_interval_millis=interval)
        self.meter_provider = MeterProvider(resource=resource, metric_readers=[self.reader])
        self.tracer = self.tracer_provider.get_tracer("cachelint.proxy")
        self.max_models = max_models
        self._models: set[str] = set()
        self._lock = threading.Lock()
        self._instruments(self.meter_provider.get_meter("cachelint.proxy"))
        self._closed = False

    def _exporters(self, endpoint: str | None):
        if self.protocol == "grpc":
            from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

            return OTLPSpanExporter(endpoint=endpoint), OTLPMetricExporter(endpoint=endpoint)
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        traces, metrics = signal_urls(endpoint) if endpoint else (None, None)
        return OTLPSpanExporter(endpoint=traces), OTLPMetricExporter(endpoint=metrics)

    def _instruments(self, meter) -> None:
        self.token_usage = meter.create_histogram("gen_ai.client.token.usage", unit="{token}", description="Tokens used per request, by gen_ai.token.type",
                                                  explicit_bucket_boundaries_advisory=[1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576])
        self.duration = meter.create_histogram("gen_ai.client.operation.duration", unit="s", description="Time from request to the end of the response")
        # the same names as the Prometheus endpoint's once a collector translates them (cachelint.requests ->
        # cachelint_requests_total; units in braces add no suffix), so one Grafana dashboard reads either
        self.counters = {
            "requests": meter.create_counter("cachelint.requests", unit="{request}", description="Recorded LLM requests"),
            "input": meter.create_counter("cachelint.prompt_tokens", unit="{token}", description="Prompt tokens (cached ones included)"),
            "read": meter.create_counter("cachelint.cache_read_tokens", unit="{token}", description="Prompt tokens read from cache"),
            "write": meter.create_counter("cachelint.cache_write_tokens", unit="{token}", description="Prompt tokens written to cache"),
            "output": meter.create_counter("cachelint.output_tokens", unit="{token}", description="Output tokens"),
            "wasted": meter.create_counter("cachelint.wasted_prefill_tokens", unit="{token}", description="Tokens prefilled again after a cache break"),
            "cost": meter.create_counter("cachelint.cost_usd", unit="{USD}", description="Money spent on the priced requests"),
            "wasted_cost": meter.create_counter("cachelint.wasted_usd", unit="{USD}", description="Money spent on tokens prefilled again"),
            "errors": meter.create_counter("cachelint.errors", unit="{request}", description="Requests that failed"),
            "breaks": meter.create_counter("cachelint.breaks", unit="{break}", description="Cache breaks by cause"),
        }

    def model_value(self, model: str | None) -> str:
        name = model or "unknown"
        with self._lock:
            if name in self._models or len(self._models) < self.max_models:
                self._models.add(name)
                return name
        return OTHER

    def on_row(self, row) -> None:
        if self._closed:
            return
        start = int(row.started_at * 1e9)
        end = int((row.started_at + (row.duration or 0.0)) * 1e9)
        attributes = span_attributes(row)
        span = self.tracer.start_span(f"chat {row.model or 'unknown'}", kind=_client_kind(), start_time=start, attributes=attributes)
        if row.error or (row.status or 0) >= 400:
            from opentelemetry.trace import Status, StatusCode

            span.set_status(Status(StatusCode.ERROR, (row.error or f"HTTP {row.status}")[:200]))
        cause = is_break(row.brk or {})
        if cause:
            span.add_event("cachelint.cache_break", attributes=break_attributes(row.brk or {}), timestamp=start)
        span.end(end_time=max(start, end))
        self._count(row, cause)

    def _count(self, row, cause: str | None) -> None:
        common = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": provider_name(row.provider), "gen_ai.request.model": self.model_value(row.model)}
        c = self.counters
        c["requests"].add(1, common)
        if row.prompt_tokens is not None:
            self.token_usage.record(row.prompt_tokens, {**common, "gen_ai.token.type": "input"})
            c["input"].add(row.prompt_tokens, common)
            c["read"].add(row.cache_read_tokens or 0, common)
            c["write"].add(row.cache_write_tokens or 0, common)
        if row.output_tokens is not None:
            self.token_usage.record(row.output_tokens, {**common, "gen_ai.token.type": "output"})
            c["output"].add(row.output_tokens, common)
        if row.duration is not None:
            self.duration.record(row.duration, common)
        c["wasted"].add(row.wasted_prefill_tokens or 0, common)
        if row.cost is not None:
            c["cost"].add(row.cost, common)
        if row.wasted_cost is not None:
            c["wasted_cost"].add(row.wasted_cost, common)
        if row.error or (row.status or 0) >= 400:
            c["errors"].add(1, {**common, "error.type": str(row.status) if (row.status or 0) >= 400 else "transport"})
        if cause:
            c["breaks"].add(1, {**common, "cachelint.break.cause": cause})

    def flush(self, timeout_ms: int = 10_000) -> None:
        self.tracer_provider.force_flush(timeout_ms)
        self.meter_provider.force_flush(timeout_ms)

    def done(self) -> None:
        """Send what is left and stop (the proxy calls this once, on exit). A collector that does not answer
        holds the exit for at most the exporters' timeout (OTEL_EXPORTER_OTLP_TIMEOUT, 10 s) plus a few seconds."""
        if self._closed:
            return
        self._closed = True
        self.tracer_provider.shutdown()
        self.meter_provider.shutdown(timeout_millis=5_000)


def _client_kind():
    from opentelemetry.trace import SpanKind

    return SpanKind.CLIENT
