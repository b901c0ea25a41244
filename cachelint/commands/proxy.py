"""`cachelint proxy`."""

from __future__ import annotations

import os

import click

from cachelint.commands.common import stdout_console
from cachelint.errors import CachelintError


@click.command()
@click.option("--upstream", help="Reverse mode: the API to forward to, e.g. https://api.anthropic.com.")
@click.option("--port", type=click.IntRange(1, 65535), default=8082, show_default=True)
@click.option("--mode", type=click.Choice(["reverse", "regular"]), default="reverse", show_default=True, help="reverse (point the SDK's base URL at the proxy) or regular (HTTPS_PROXY with mitmproxy's CA).")
@click.option("--listen-host", default="127.0.0.1", show_default=True, help="Address to listen on; anything but loopback prints a warning.")
@click.option("--db", type=click.Path(dir_okay=False), help="SQLite store [default: ~/.local/share/cachelint/cachelint.db].")
@click.option("--store", "store_mode", type=click.Choice(["full", "hashes"]), default="full", show_default=True, help="Keep request and response bodies, or only hashes, token counts and diff excerpts.")
@click.option("--kv-model", default="Qwen/Qwen3-8B", show_default=True, help="Model config for the simulated KV cost (a bundled id, a config.json or a Hugging Face id).")
@click.option("--no-dashboard", is_flag=True, help="Print one line per exchange instead of the live dashboard.")
@click.option("--metrics-port", type=click.IntRange(1, 65535), help="Serve Prometheus metrics on this port.")
@click.option("--idle-timeout", type=click.FloatRange(0.1, 86400), default=60.0, show_default=True, help="Seconds a client may stay silent without a complete request before it is disconnected.")
@click.option("--drain-timeout", type=click.FloatRange(0, 86400), default=60.0, show_default=True, help="Seconds a stop waits for queued exchanges to be written to the store (a second stop gives up at once; what is left is counted and reported).")
@click.option("--otlp-endpoint", help="Export each exchange as an OpenTelemetry span and the totals as metrics to this OTLP collector (e.g. http://collector:4318); the OTEL_EXPORTER_OTLP_* variables also work.")
@click.option("--otlp-protocol", type=click.Choice(["http/protobuf", "grpc"]), help="OTLP protocol [default: OTEL_EXPORTER_OTLP_PROTOCOL, else http/protobuf].")
@click.option("--source", "source_dir", type=click.Path(file_okay=False), help="The application's source tree: name the line of code behind each break as it happens (see `cachelint report --source`).")
@click.option("--ask-diagnostics", is_flag=True, help="Ask Anthropic why each cache missed: adds diagnostics.previous_message_id and the cache-diagnosis beta to /v1/messages requests (changes request bytes; see docs/provider-truth.md).")
@click.option("--prices", type=click.Path(exists=True, dir_okay=False), help="A price table in LiteLLM's model_prices_and_context_window.json format.")
def proxy(upstream, port, mode, listen_host, db, store_mode, kv_model, no_dashboard, metrics_port, idle_timeout, drain_timeout, otlp_endpoint, otlp_protocol, source_dir, ask_diagnostics, prices) -> None:
    """Record LLM API traffic (Claude Code, the anthropic / openai SDKs) and explain every cache break.

    \b
    Reverse mode (default):
      cachelint proxy --upstream https://api.anthropic.com --port 8082
      ANTHROPIC_BASE_URL=http://127.0.0.1:8082 claude
      OPENAI_BASE_URL=http://127.0.0.1:8082/v1 python app.py   (with --upstream https://api.openai.com)
    Forward mode:
      cachelint proxy --mode regular --port 8082
      HTTPS_PROXY=http://127.0.0.1:8082 NODE_EXTRA_CA_CERTS=~/.mitmproxy/mitmproxy-ca-cert.pem claude
    """
    import asyncio

    from cachelint.extras import require

    require("proxy", "cachelint proxy")
    from cachelint.kv import model_kv_cost
    from cachelint.proxy.run import ProxyConfig, serve
    from cachelint.record.store import default_path

    if source_dir and not os.path.isdir(source_dir):
        raise CachelintError(f"--source {source_dir}: not a directory")
    if mode == "reverse":
        if not upstream:
            raise click.UsageError("reverse mode needs --upstream (for example https://api.anthropic.com)")
        if not upstream.startswith(("http://", "https://")):
            raise CachelintError(f"--upstream must be an http:// or https:// URL, not {upstream!r}")
    if listen_host not in ("127.0.0.1", "localhost", "::1"):
        click.echo(f"cachelint: warning: listening on {listen_host}: anyone who can reach it can use your API credentials through the proxy", err=True)
    model_kv_cost(kv_model)  # fail now, with one clear line, not inside the proxy
    from cachelint.proxy import otlp

    if otlp.configured(otlp_endpoint):
        require("otlp", "cachelint proxy --otlp-endpoint")
        if otlp_endpoint and otlp.resolve_protocol(otlp_protocol) != "grpc":
            otlp.signal_urls(otlp_endpoint)  # a malformed URL is one line now, not an exporter error later
    table = None
    if prices:
        from cachelint.pricing import load_litellm_prices

        table = load_litellm_prices(prices)
    config = ProxyConfig(upstream=upstream, port=port, listen_host=listen_host, mode=mode, db=str(db or default_path()),
                         store_bodies=store_mode == "full", kv_model=kv_model, dashboard=not no_dashboard,
                         metrics_port=metrics_port, otlp_endpoint=otlp_endpoint, otlp_protocol=otlp_protocol, prices=table, idle_timeout=idle_timeout, drain_timeout=drain_timeout,
                         ask_diagnostics=ask_diagnostics, source=source_dir)
    try:
        asyncio.run(serve(config, stdout_console()))
    except OSError as exc:
        raise CachelintError(f"cannot listen on {listen_host}:{port}: {exc.strerror or exc}") from None
