"""OTLP export of recorded exchanges: the official OpenTelemetry SDK and OTLP exporters send to a real OTLP
receiver written here on the official opentelemetry-proto messages (OTLP/HTTP with protobuf bodies, and gRPC);
the test decodes ExportTraceServiceRequest / ExportMetricsServiceRequest and checks spans and metrics."""

from __future__ import annotations

import gzip
import socket
import threading
from concurrent import futures
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources

import pytest

pytest.importorskip("opentelemetry.sdk", reason="the otlp extra is not installed (pip install 'cachelint[otlp]')")

from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2, metrics_service_pb2_grpc  # noqa: E402
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc  # noqa: E402

from cachelint.errors import CachelintError  # noqa: E402
from cachelint.proxy.otlp import OtlpExporter, configured, resolve_protocol, signal_urls  # noqa: E402
from cachelint.record.analyze import Recorder  # noqa: E402
from cachelint.record.importers import read  # noqa: E402
from cachelint.record.store import Row  # noqa: E402


class Received:
    """What a receiver got: decoded requests and the headers they came with."""

    def __init__(self) -> None:
        self.traces: list = []
        self.metrics: list = []
        self.headers: list[dict[str, str]] = []
        self.lock = threading.Lock()

    def spans(self) -> list:
        return [s for r in self.traces for rs in r.resource_spans for ss in rs.scope_spans for s in ss.spans]

    def resources(self) -> list[dict]:
        return [attrs(rs.resource.attributes) for r in self.traces for rs in r.resource_spans]

    def metric(self, name: str) -> list:
        """Every data point of one metric, over all exports (cumulative: the last one is the running total)."""
        points = []
        for r in self.metrics:
            for rm in r.resource_metrics:
                for sm in rm.scope_metrics:
                    for m in sm.metrics:
                        if m.name == name:
                            kind = m.WhichOneof("data")
                            points.extend(getattr(m, kind).data_points)
        return points


def attrs(kvs) -> dict:
    out = {}
    for kv in kvs:
        value = kv.value
        kind = value.WhichOneof("value")
        if kind == "array_value":
            out[kv.key] = [getattr(v, v.WhichOneof("value")) for v in value.array_value.values]
        else:
            out[kv.key] = getattr(value, kind)
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class HttpReceiver:
    """An OTLP/HTTP receiver: POST /v1/traces and /v1/metrics with protobuf bodies (gzip if the exporter says so)."""

    def __init__(self) -> None:
        self.received = Received()
        received = self.received

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                if self.headers.get("content-encoding") == "gzip":
                    body = gzip.decompress(body)
                if self.path == "/v1/traces":
                    message, reply = trace_service_pb2.ExportTraceServiceRequest(), trace_service_pb2.ExportTraceServiceResponse()
                elif self.path == "/v1/metrics":
                    message, reply = metrics_service_pb2.ExportMetricsServiceRequest(), metrics_service_pb2.ExportMetricsServiceResponse()
                else:
                    self.send_response(404)
                    self.end_headers()
                    return
                message.ParseFromString(body)
                with received.lock:
                    (received.traces if self.path == "/v1/traces" else received.metrics).append(message)
                    received.headers.append({k.lower(): v for k, v in self.headers.items()})
                data = reply.SerializeToString()
                self.send_response(200)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


class GrpcReceiver:
    """An OTLP/gRPC receiver on the official service definitions."""

    def __init__(self) -> None:
        import grpc

        self.received = Received()
        received = self.received

        class Traces(trace_service_pb2_grpc.TraceServiceServicer):
            def Export(self, request, context):  # noqa: N802
                with received.lock:
                    received.traces.append(request)
                    received.headers.append(dict(context.invocation_metadata()))
                return trace_service_pb2.ExportTraceServiceResponse()

        class Metrics(metrics_service_pb2_grpc.MetricsServiceServicer):
            def Export(self, request, context):  # noqa: N802
                with received.lock:
                    received.metrics.append(request)
                return metrics_service_pb2.ExportMetricsServiceResponse()

        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        trace_service_pb2_grpc.add_TraceServiceServicer_to_server(Traces(), self.server)
        metrics_service_pb2_grpc.add_MetricsServiceServicer_to_server(Metrics(), self.server)
        port = free_port()
        self.server.add_insecure_port(f"127.0.0.1:{port}")
        self.url = f"http://127.0.0.1:{port}"

    def __enter__(self):
        self.server.start()
        return self

    def __exit__(self, *exc):
        self.server.stop(grace=None)


def demo_rows() -> list[Row]:
    """The bundled session through the recorder's real pipeline, plus a failed request and a miss only the
    provider diagnosed."""
    path = resources.files("cachelint.demo").joinpath("data", "traffic.jsonl")
    with resources.as_file(path) as file:
        captured = sorted(read(file), key=lambda c: c.started_at)
    recorder = Recorder(store=None)
    rows = [recorder.record(c) for c in captured]
    last = rows[-1]
    rows.append(Row(session=last.session, seq=7, started_at=last.started_at + 5, provider="anthropic", model=last.model,
                    url="https://api.anthropic.com/v1/messages", status=529, error=None, duration=0.2))
    rows.append(Row(session=last.session, seq=8, started_at=last.started_at + 9, provider="anthropic", model=last.model, status=200,
                    prompt_tokens=2500, cache_read_tokens=0, cache_write_tokens=2500, output_tokens=3, duration=1.0,
                    brk={"cause": "none", "agreement": "provider-only",
                         "provider_diagnosis": {"source": "anthropic", "type": "messages_changed", "missed_input_tokens": 2400, "pending": False}}))
    return rows


def export_all(exporter: OtlpExporter, rows: list[Row]) -> None:
    for row in rows:
        exporter.on_row(row)
    exporter.done()  # flushes spans and the last metrics


def check_export(received: Received, rows: list[Row]) -> None:
    spans = received.spans()
    assert len(spans) == len(rows)
    by_seq = {attrs(s.attributes)["cachelint.seq"]: (s, attrs(s.attributes)) for s in spans}
    span, a = by_seq[4]
    assert span.name == "chat claude-sonnet-4-5" and span.kind == span.SPAN_KIND_CLIENT
    assert a["gen_ai.operation.name"] == "chat" and a["gen_ai.provider.name"] == "anthropic" and a["gen_ai.system"] == "anthropic"
    assert a["gen_ai.request.model"] == "claude-sonnet-4-5" and a["gen_ai.conversation.id"] == "demo-session"
    row = rows[3]
    assert a["gen_ai.usage.input_tokens"] == row.prompt_tokens == 2211 and a["gen_ai.usage.cache_read.input_tokens"] == 0
    assert a["gen_ai.usage.cache_creation.input_tokens"] == 2211 and a["gen_ai.usage.output_tokens"] == row.output_tokens
    assert a["cachelint.break.cause"] == "system_changed" and a["cachelint.break.detail"] == "volatile_value"
    assert a["cachelint.break.rule"] == "CL101" and a["cachelint.break.pointer"] == "/system/1/text"
    assert a["cachelint.wasted_prefill_tokens"] == 2126 and a["cachelint.break.estimated_reprefilled_tokens"] == 1037
    assert a["cachelint.wasted_cost_usd"] == pytest.approx(row.wasted_cost)
    assert [e.name for e in span.events] == ["cachelint.cache_break"]
    assert span.start_time_unix_nano == int(row.started_at * 1e9)
    assert "Current time" not in str(spans)  # no prompt text leaves the machine
    assert by_seq[2][1]["cachelint.break.cause"] == "none" and "cachelint.break.rule" not in by_seq[2][1]
    failed, fa = by_seq[7]
    assert failed.status.code == failed.status.STATUS_CODE_ERROR and fa["error.type"] == "529" and fa["http.response.status_code"] == 529
    assert fa["server.address"] == "api.anthropic.com"
    assert by_seq[8][1]["cachelint.provider_diagnosis.type"] == "messages_changed" and by_seq[8][1]["cachelint.agreement"] == "provider-only"
    assert by_seq[8][1]["cachelint.provider_diagnosis.missed_input_tokens"] == 2400
    assert all(r["service.name"] == "cachelint-proxy" for r in received.resources())

    def last_sum(name: str, **match) -> float:
        points = [p for p in received.metric(name) if all(attrs(p.attributes).get(k) == v for k, v in match.items())]
        assert points, name
        latest = max(points, key=lambda p: p.time_unix_nano)
        return latest.as_int if latest.WhichOneof("value") == "as_int" else latest.as_double

    model = {"gen_ai.request.model": "claude-sonnet-4-5"}
    assert last_sum("cachelint.requests", **model) == len(rows)
    assert last_sum("cachelint.cache_read_tokens", **model) == sum(r.cache_read_tokens or 0 for r in rows)
    assert last_sum("cachelint.wasted_prefill_tokens", **model) == 2126
    assert last_sum("cachelint.breaks", **{"cachelint.break.cause": "system_changed"}) == 1
    assert last_sum("cachelint.breaks", **{"cachelint.break.cause": "provider_miss"}) == 1
    assert last_sum("cachelint.errors", **{"error.type": "529"}) == 1
    assert last_sum("cachelint.wasted_usd", **model) == pytest.approx(sum(r.wasted_cost or 0 for r in rows))
    assert last_sum("cachelint.output_tokens", **model) == sum(r.output_tokens or 0 for r in rows)
    assert last_sum("cachelint.cost_usd", **model) == pytest.approx(sum(r.cost or 0 for r in rows))
    usage = [p for p in received.metric("gen_ai.client.token.usage") if attrs(p.attributes)["gen_ai.token.type"] == "input"]
    latest = max(usage, key=lambda p: p.time_unix_nano)
    assert latest.count == sum(1 for r in rows if r.prompt_tokens is not None) and latest.sum == sum(r.prompt_tokens or 0 for r in rows)
    assert all("session" not in k and "conversation" not in k for p in received.metric("cachelint.requests") for k in attrs(p.attributes))


def test_spans_and_metrics_over_otlp_http():
    rows = demo_rows()
    with HttpReceiver() as receiver:
        export_all(OtlpExporter(receiver.url, "http/protobuf", export_interval_ms=60_000), rows)
    check_export(receiver.received, rows)


def test_spans_and_metrics_over_otlp_grpc():
    pytest.importorskip("grpc", reason="the gRPC exporter is not installed")
    rows = demo_rows()
    with GrpcReceiver() as receiver:
        export_all(OtlpExporter(receiver.url, "grpc", export_interval_ms=60_000), rows)
    check_export(receiver.received, rows)


def test_standard_variables_configure_the_export(monkeypatch):
    rows = demo_rows()[:2]
    with HttpReceiver() as receiver:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url)
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-team=payments,authorization=Bearer%20team-token")
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip")
        monkeypatch.setenv("OTEL_SERVICE_NAME", "cachelint-alice")
        monkeypatch.setenv("OTEL_RESOURCE_ATTRIBUTES", "team=payments")
        assert configured(None)
        export_all(OtlpExporter(None, None, export_interval_ms=60_000), rows)
    received = receiver.received
    assert len(received.spans()) == 2
    assert all(h.get("x-team") == "payments" and h.get("authorization") == "Bearer team-token" for h in received.headers)
    assert all(h.get("content-encoding") == "gzip" for h in received.headers)
    assert all(r["service.name"] == "cachelint-alice" and r["team"] == "payments" for r in received.resources())


def test_endpoint_and_protocol_checks(monkeypatch):
    for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
                 "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"):
        monkeypatch.delenv(name, raising=False)
    assert not configured(None) and configured("http://collector:4318")
    assert signal_urls("http://collector:4318") == ("http://collector:4318/v1/traces", "http://collector:4318/v1/metrics")
    assert signal_urls("https://otel.example/v1/traces") == ("https://otel.example/v1/traces", "https://otel.example/v1/metrics")
    assert resolve_protocol(None) == "http/protobuf"
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
    assert resolve_protocol(None) == "grpc"
    with pytest.raises(CachelintError, match="http/json"):
        resolve_protocol("http/json")
    with pytest.raises(CachelintError, match="--otlp-endpoint must be an http"):
        signal_urls("collector:4318")


def test_model_values_are_bounded():
    with HttpReceiver() as receiver:
        exporter = OtlpExporter(receiver.url, "http/protobuf", max_models=3, export_interval_ms=60_000)
        rows = [Row(session=f"s{i}", seq=1, started_at=1_700_000_000 + i, provider="openai-chat", model=f"model-{i}", status=200,
                    prompt_tokens=10, cache_read_tokens=0, cache_write_tokens=0, output_tokens=1) for i in range(50)]
        export_all(exporter, rows)
    models = {attrs(p.attributes)["gen_ai.request.model"] for p in receiver.received.metric("cachelint.requests")}
    assert models == {"model-0", "model-1", "model-2", "other"}
    assert len({attrs(s.attributes)["gen_ai.request.model"] for s in receiver.received.spans()}) == 50  # spans keep the real name
    assert {attrs(s.attributes)["gen_ai.provider.name"] for s in receiver.received.spans()} == {"openai"}


def wired() -> bool:
    import subprocess
    import sys

    return "--otlp-endpoint" in subprocess.run([sys.executable, "-m", "cachelint", "proxy", "--help"], capture_output=True, text=True, timeout=60).stdout


def test_the_proxy_exports_what_it_records_and_prints_a_summary_on_exit(tmp_path):
    """`cachelint proxy --otlp-endpoint` end to end: a real SDK client through the real proxy to the provider
    stand-in; the spans arrive at the receiver, and the dashboard's summary is printed when the proxy stops."""
    import os
    import signal
    import subprocess
    import sys
    import time

    import anthropic
    import httpx
    from upstream import Upstream

    if not wired():
        pytest.skip("cachelint proxy has no --otlp-endpoint yet (proxy/run.py and commands/proxy.py wire proxy/otlp.py)")
    with Upstream() as upstream, HttpReceiver() as receiver:
        port = free_port()
        process = subprocess.Popen([sys.executable, "-m", "cachelint", "proxy", "--upstream", upstream.url, "--port", str(port),
                                    "--db", str(tmp_path / "db.sqlite"), "--otlp-endpoint", receiver.url],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, "NO_COLOR": "1"})
        try:
            deadline = time.time() + 60
            while time.time() < deadline:
                try:
                    httpx.get(f"http://127.0.0.1:{port}/", timeout=2)
                    break
                except httpx.HTTPError:
                    time.sleep(0.2)
            client = anthropic.Anthropic(api_key="sk-ant-test", base_url=f"http://127.0.0.1:{port}", max_retries=0)
            system = [{"type": "text", "text": "You are terse. " * 400, "cache_control": {"type": "ephemeral"}}]
            messages = [{"role": "user", "content": "hi"}]
            for turn in range(2):
                client.messages.create(model="claude-sonnet-4-5", max_tokens=10, system=system, messages=messages)
                messages = messages + [{"role": "assistant", "content": "ok"}, {"role": "user", "content": f"and {turn}"}]
        finally:
            process.send_signal(signal.SIGINT)
            _, stderr = process.communicate(timeout=120)
    assert process.returncode == 0, stderr
    spans = receiver.received.spans()
    assert [attrs(s.attributes)["cachelint.seq"] for s in spans] == [1, 2]
    assert attrs(spans[1].attributes)["gen_ai.usage.cache_read.input_tokens"] > 0
    assert "cachelint proxy stopped: 2 requests in 1 session, hit rate" in stderr and "details: cachelint report --db" in stderr
