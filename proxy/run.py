"""Running mitmproxy programmatically with the cachelint addon (what `cachelint proxy` does)."""

from __future__ import annotations

import asyncio
import logging
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass

from rich.console import Console
from rich.live import Live

from cachelint.errors import CachelintError
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


class Startup(logging.Handler):
    """Says "listening" once mitmproxy has bound its ports, and turns a failed bind into one clear error.

    mitmproxy calls the `running` hook after its servers are set up. Errors it logs while setting them up (a
    port in use, an address that is not this machine's) are collected here instead of mitmproxy's own
    "Error logged during startup, exiting..." (its errorcheck addon is removed).
    """

    def __init__(self, on_ready: Callable[[list[str]], None]) -> None:
        super().__init__(logging.ERROR)
        self.on_ready = on_ready
        self.errors: list[str] = []
        self.started = False

    def emit(self, record: logging.LogRecord) -> None:
        if not self.started:
            self.errors.append(record.getMessage())

    def running(self) -> None:
        from mitmproxy import ctx

        addresses = [f"{host}:{port}" for host, port, *_ in ctx.master.addons.get("proxyserver").listen_addrs()]
        if self.errors or not addresses:
            ctx.master.shutdown()
            return
        self.started = True
        self.on_ready(addresses)

    def failure(self, config: ProxyConfig) -> CachelintError | None:
        if self.started:
            return None
        reason = self.errors[0] if self.errors else "mitmproxy did not start its server"
        if "address already in use" in reason.lower():
            reason = "the port is in use (another proxy, or an earlier cachelint proxy still running?)"
        return CachelintError(f"cannot listen on {config.listen_host}:{config.port}: {reason}")


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
    if master.addons.get("errorcheck") is not None:
        master.addons.remove(master.addons.get("errorcheck"))
    if config.metrics_port:
        from prometheus_client import REGISTRY, start_http_server

        from cachelint.proxy.metrics import TotalsCollector

        REGISTRY.register(TotalsCollector(recorder))
        try:
            start_http_server(config.metrics_port, addr=config.listen_host)
        except OSError as exc:
            store.close()
            raise CachelintError(f"cannot serve metrics on {config.listen_host}:{config.metrics_port} (--metrics-port): {exc.strerror or exc}") from None
    target = config.upstream if config.mode == "reverse" else "any host (forward proxy)"

    def on_ready(addresses: list[str]) -> None:
        listen = " and ".join(f"http://{a}" for a in addresses)
        print(f"cachelint proxy listening on {listen} -> {target}; recording to {config.db}", file=sys.stderr, flush=True)
        if ready is not None:
            ready()

    startup = Startup(on_ready)
    master.addons.add(startup)
    master.addons.add(addon)
    logging.getLogger("mitmproxy").addHandler(startup)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, master.shutdown)
        except (NotImplementedError, RuntimeError):
            pass
    listen = f"http://{config.listen_host}:{config.port}"
    try:
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
    finally:
        logging.getLogger("mitmproxy").removeHandler(startup)
        store.close()
    failure = startup.failure(config)
    if failure is not None:
        raise failure
