"""Running mitmproxy programmatically with the cachelint addon (what `cachelint proxy` does)."""

from __future__ import annotations

import asyncio
import logging
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from rich.console import Console
from rich.live import Live

from cachelint.errors import CachelintError
from cachelint.proxy import upstream_errors
from cachelint.proxy.addon import DRAIN_SECONDS, CacheLintAddon
from cachelint.proxy.dashboard import Dashboard, QuitKey, exchange_line
from cachelint.proxy.limits import IDLE_SECONDS, IdleGuard, raise_file_limit
from cachelint.record.analyze import Recorder, RecorderOptions
from cachelint.record.exchange import safe_text
from cachelint.record.store import Row, Store

STREAM_LARGE_BODIES = "64m"


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
    otlp_endpoint: str | None = None  # --otlp-endpoint; the OTEL_EXPORTER_OTLP_* variables also turn export on
    otlp_protocol: str | None = None  # --otlp-protocol: http/protobuf (default) or grpc
    source: str | None = None  # --source DIR: name the line of the application's code behind each break, live
    ask_diagnostics: bool = False  # --ask-diagnostics: ask Anthropic why each cache missed (changes request bytes)
    prices: object = None
    idle_timeout: float = IDLE_SECONDS
    drain_timeout: float = DRAIN_SECONDS  # --drain-timeout: how long a stop waits for queued exchanges to be written


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


def notice(text: str) -> None:
    print(f"cachelint: {text}", file=sys.stderr, flush=True)


def safe_row(row: Row) -> Row:
    """The row with every text that came off the wire (session, model, error, break fields) made safe to print."""
    brk = row.brk
    if brk:
        brk = {k: (safe_text(v) if isinstance(v, str) else v) for k, v in brk.items()}
        if isinstance(brk.get("location"), dict):
            brk["location"] = {k: (safe_text(v) if isinstance(v, str) else v) for k, v in brk["location"].items()}
    return replace(row, session=safe_text(row.session, 120), model=safe_text(row.model) if row.model else row.model,
                   error=safe_text(row.error, 300) if row.error else row.error, mismatch=safe_text(row.mismatch) if row.mismatch else row.mismatch,
                   brk=brk)


class OneLineLog(logging.Handler):
    """mitmproxy's warnings and errors as one line each on stderr, never a traceback (a client cut off by a stop
    raised CancelledError tracebacks through asyncio's handler)."""

    def __init__(self, startup: Startup) -> None:
        super().__init__(logging.WARNING)
        self.startup = startup

    def emit(self, record: logging.LogRecord) -> None:
        if not self.startup.started:
            return  # errors while starting are Startup's: one `cachelint: error:` line
        if record.exc_info and record.exc_info[0] is asyncio.CancelledError:
            return
        text = record.getMessage().strip().splitlines()
        if text and "CancelledError" not in text[0]:
            notice(f"mitmproxy: {safe_text(text[0], 300)}")


async def serve(config: ProxyConfig, console: Console, ready=None) -> None:
    from mitmproxy import options
    from mitmproxy.tools.dump import DumpMaster

    store = Store(config.db)
    if getattr(store, "recovered_from", None):
        console.print(f"[yellow]the store was damaged; kept it as {store.recovered_from} and started a fresh one[/]", highlight=False)
    recorder = Recorder(store, RecorderOptions(store_bodies=config.store_bodies, kv_model=config.kv_model, prices=config.prices))
    listen = f"http://{config.listen_host}:{config.port}"
    dashboard = Dashboard(recorder.totals, listen) if config.dashboard else None
    hooks = [dashboard.on_row] if dashboard is not None else [lambda row: print(exchange_line(safe_row(row)), flush=True)]
    if config.source:  # first, so that every view shows the place
        from cachelint.link.live import LiveLinker

        linker = LiveLinker(Path(config.source))
        notice(f"linking breaks to {linker.describe()}")
        hooks.insert(0, linker.on_row)
    exporter = None
    from cachelint.proxy import otlp

    if otlp.configured(config.otlp_endpoint):
        exporter = otlp.OtlpExporter(config.otlp_endpoint, config.otlp_protocol)
        hooks.append(exporter.on_row)

    def on_row(row) -> None:
        for hook in hooks:  # one failing view (a collector down, a rendering bug) never stops the others
            try:
                hook(row)
            except Exception:
                logging.getLogger("cachelint.proxy").exception("cachelint: could not pass %s #%s to %r", row.session, row.seq, hook)

    addon = CacheLintAddon(recorder, on_row, on_notice=notice, drain_seconds=config.drain_timeout)
    raise_file_limit()
    upstream_errors.install()
    opts = options.Options(listen_host=config.listen_host, listen_port=config.port, mode=mitmproxy_mode(config))
    master = DumpMaster(opts, with_termlog=False, with_dumper=False)
    # lazy: no upstream connection before a request is complete (an idle client used to hold one each);
    # bodies over STREAM_LARGE_BODIES are streamed through, never held whole in memory (recognized responses are
    # always streamed, through the tap)
    master.options.update(connection_strategy="lazy", stream_large_bodies=STREAM_LARGE_BODIES)
    if master.addons.get("errorcheck") is not None:
        master.addons.remove(master.addons.get("errorcheck"))
    if config.metrics_port:
        from prometheus_client import REGISTRY, start_http_server

        from cachelint.proxy.metrics import TotalsCollector

        collector = TotalsCollector(recorder)
        hooks.append(collector.on_row)
        REGISTRY.register(collector)
        try:
            start_http_server(config.metrics_port, addr=config.listen_host)
        except OSError as exc:
            store.close()
            raise CachelintError(f"cannot serve metrics on {config.listen_host}:{config.metrics_port} (--metrics-port): {exc.strerror or exc}") from None
    target = config.upstream if config.mode == "reverse" else "any host (forward proxy)"

    def on_ready(addresses: list[str]) -> None:
        listen = " and ".join(f"http://{a}" for a in addresses)
        recording = (f"recording to {config.db}" if store.write_error is None else
                     f"NOT recording yet: {config.db} cannot be written ({store.write_error}); exchanges are kept in memory until it can")
        print(f"cachelint proxy listening on {listen} -> {target}; {recording}", file=sys.stderr, flush=True)
        if ready is not None:
            ready()

    startup = Startup(on_ready)
    master.addons.add(startup)
    master.addons.add(IdleGuard(config.idle_timeout))
    master.addons.add(addon)
    if config.ask_diagnostics:  # after the recorder's addon: it sees each request as the client sent it
        from cachelint.proxy.diagnose import AskDiagnostics

        master.addons.add(AskDiagnostics())
    mitmproxy_log = logging.getLogger("mitmproxy")
    one_line = OneLineLog(startup)
    mitmproxy_log.addHandler(startup)
    mitmproxy_log.addHandler(one_line)
    mitmproxy_log.propagate = False
    loop = asyncio.get_running_loop()
    stopping = False

    def on_signal() -> None:
        """The first stop signal drains the recorder's queue; a second one gives up on it (counted)."""
        nonlocal stopping
        if stopping:
            addon.hurry()
        stopping = True
        master.shutdown()

    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, on_signal)
        except (NotImplementedError, RuntimeError):
            pass
    try:
        if dashboard is not None:
            quit_key = QuitKey(lambda: loop.call_soon_threadsafe(on_signal))  # q stops like Ctrl+C (the queue drains)
            with Live(dashboard, console=console, refresh_per_second=2):  # re-rendered at the terminal's width
                quit_key.start()
                try:
                    await master.run()
                finally:
                    quit_key.stop()
        else:
            await master.run()
    finally:
        mitmproxy_log.removeHandler(startup)
        mitmproxy_log.removeHandler(one_line)
        mitmproxy_log.propagate = True
        if exporter is not None:
            exporter.done()  # after the addon's done(): every recorded exchange has been exported
        unwritten = store.close()  # rows kept in memory while the store could not be written: written now, or counted
    if dashboard is not None and startup.started:
        for line in dashboard.summary(config.db):
            print(line, file=sys.stderr, flush=True)
    failure = startup.failure(config)
    if failure is not None:
        raise failure
    lost = addon.dropped + addon.failed + unwritten
    if lost:
        raise CachelintError(f"{lost} exchange{'s' if lost != 1 else ''} could not be written to {config.db} ({addon.written} were)")
