"""Running mitmproxy programmatically with the cachelint addon (what `cachelint proxy` does)."""

from __future__ import annotations

import asyncio
import signal
import sys
from dataclasses import dataclass

from rich.console import Console
from rich.live import Live

from cachelint.proxy.addon import CacheLintAddon
from cachelint.proxy.dashboard import exchange_line, session_table
from cachelint.record.analyze import Recorder, RecorderOptions
from cachelint.record.store import Store


@dataclass(slots=True)
class ProxyConfig:
    upstream: str | None  # reverse mode target; None with mode "regular"
    port: int = 8082
    listen_host: str = "127.0.0.1"
    mode: str = "reverse"  # reverse | regular
    db: str = ""
    store_bodies: bool = True
    kv_model: str = "Qwen/Qwen3-8B"
    dashboard: bool = True
    metrics_port: int | None = None
    prices: object = None


def mitmproxy_mode(config: ProxyConfig) -> list[str]:
    if config.mode == "regular":
        return ["regular"]
    return [f"reverse:{config.upstream}"]


async def serve(config: ProxyConfig, console: Console, ready=None) -> None:
    from mitmproxy import options
    from mitmproxy.tools.dump import DumpMaster

    store = Store(config.db)
    if getattr(store, "recovered_from", None):
        console.print(f"[yellow]the store was damaged; kept it as {store.recovered_from} and started a fresh one[/]", highlight=False)
    recorder = Recorder(store, RecorderOptions(store_bodies=config.store_bodies, kv_model=config.kv_model, prices=config.prices))
    on_row = None if config.dashboard else (lambda row: print(exchange_line(row), flush=True))
    addon = CacheLintAddon(recorder, on_row)
    opts = options.Options(listen_host=config.listen_host, listen_port=config.port, mode=mitmproxy_mode(config))
    master = DumpMaster(opts, with_termlog=False, with_dumper=False)
    master.addons.add(addon)
    if config.metrics_port:
        from prometheus_client import REGISTRY, start_http_server

        from cachelint.proxy.metrics import TotalsCollector

        REGISTRY.register(TotalsCollector(recorder))
        start_http_server(config.metrics_port, addr=config.listen_host)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, master.shutdown)
        except (NotImplementedError, RuntimeError):
            pass
    listen = f"http://{config.listen_host}:{config.port}"
    target = config.upstream if config.mode == "reverse" else "any host (forward proxy)"
    print(f"cachelint proxy listening on {listen} -> {target}; recording to {config.db}", file=sys.stderr, flush=True)
    if ready is not None:
        ready()
    if config.dashboard:
        with Live(session_table(recorder.totals, listen), console=console, refresh_per_second=2) as live:
            async def refresh() -> None:
                while True:
                    live.update(session_table(recorder.totals, listen))
                    await asyncio.sleep(0.5)

            task = asyncio.create_task(refresh())
            try:
                await master.run()
            finally:
                task.cancel()
    else:
        await master.run()
    store.close()
