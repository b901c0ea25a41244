"""Benchmark `cachelint proxy` against its floor: plain mitmdump (reverse mode, streaming on, no addon).

Usage: python bench/proxy.py [--requests 200] [--exchanges 10000] [--event-delay 0.007] [--cpu-repeat 9] [--profile]
       [--response-only-floor] [--skip latency,throughput,memory,cpu]

The local provider stand-in (tests/upstream.py) runs in a child process on 127.0.0.1 (its own GIL, its listen
backlog raised from 5 to 128 for the 32-stream bursts) and streams Anthropic SSE replies of 22 events,
`--event-delay` seconds apart (about 200 ms a stream with these bodies). The same requests go (a) directly to
it, (b) through `mitmdump --mode reverse:URL --set stream_large_bodies=1` (the floor for an addon) and
(c) through `cachelint proxy --no-dashboard`; with `--response-only-floor` the latency also goes through
(d) mitmdump with a one-line addon that streams only the response, as cachelint does:

- latency: `--requests` sequential streams of a growing Claude Code-shaped conversation (~17k tokens at the
  start), the three targets interleaved request by request; TTFT = time to the first body chunk;
- throughput: streams per second with 1 and with 32 concurrent streams (httpx async, raw POSTs);
- memory: a fresh `cachelint proxy` gets `--exchanges` small non-streaming requests (sessions of 20 turns,
  4 at a time); its VmRSS (/proc/PID/status) once the recorder has written each checkpoint's exchanges;
- addon CPU, in process: `Recorder(store=None).record(captured)` for the next turn of a ~100k-token
  conversation whose earlier turns the recorder has seen (a fresh recorder and fresh text per repeat).

Prints a table, then one line with the headline numbers. Medians (and p99) measured in this run only; these
machines are small and shared, so compare within one run.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import os
import pstats
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

HOST = "127.0.0.1"
MODEL = "claude-sonnet-4-5"
REPLY = "Sure. I read the file, ran the tests, and all of them pass now; here is a short summary of it."  # 16 words
API_HEADERS = {"x-api-key": "sk-ant-bench-not-a-key", "anthropic-version": "2023-06-01", "content-type": "application/json"}
TIMEOUT = httpx.Timeout(30.0)


# --- processes --------------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def wait_port(port: int, process: subprocess.Popen, what: str) -> None:
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            with socket.create_connection((HOST, port), timeout=0.5):
                return
        except OSError:
            if process.poll() is not None:
                raise RuntimeError(f"{what} exited: {process.stderr.read() if process.stderr else ''}")
            time.sleep(0.1)
    raise RuntimeError(f"{what} did not start")


def serve_upstream(event_delay: float) -> None:
    """Child mode: the stand-in on 127.0.0.1; prints its URL, serves until stdin closes."""
    import upstream as stand_in

    stand_in._Server.request_queue_size = 128  # the default listen backlog of 5 drops bursts of 32 connects
    with stand_in.Upstream(event_delay=event_delay, reply=REPLY) as up:
        print(up.url, flush=True)
        sys.stdin.read()


class UpstreamProcess:
    def __init__(self, event_delay: float) -> None:
        self.process = subprocess.Popen([sys.executable, __file__, "--serve-upstream", "--event-delay", str(event_delay)],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.url = self.process.stdout.readline().strip()
        if not self.url.startswith(f"http://{HOST}:"):
            raise RuntimeError(f"upstream did not start: {self.url!r}")

    def stop(self) -> None:
        self.process.stdin.close()
        self.process.wait(timeout=30)


class Target:
    """Something that answers the requests: the upstream itself, plain mitmdump, or cachelint proxy."""

    def __init__(self, name: str, url: str, process: subprocess.Popen | None = None) -> None:
        self.name, self.url, self.process = name, url, process
        self.recorded = 0  # lines cachelint proxy printed: one per recorded exchange
        self.sent = 0  # requests answered
        self._reader: threading.Thread | None = None
        if process is not None and process.stdout is not None:
            self._reader = threading.Thread(target=self._count_lines, daemon=True)
            self._reader.start()

    def _count_lines(self) -> None:
        for _ in self.process.stdout:
            self.recorded += 1

    def wait_recorded(self, n: int, timeout: float = 120.0) -> bool:
        deadline = time.time() + timeout
        while self.recorded < n and time.time() < deadline:
            time.sleep(0.05)
        return self.recorded >= n

    def rss(self) -> tuple[int, int]:
        """VmRSS and VmHWM in bytes."""
        values = {}
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                values[key] = int(rest.split()[0]) * 1024
        return values["VmRSS"], values["VmHWM"]

    def stop(self) -> None:
        if self.process is None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        if self._reader is not None:
            self._reader.join(timeout=10)


def start_mitmdump(upstream: str, script: Path | None = None) -> Target:
    """Plain mitmdump, streaming on; with `script`, a one-hook addon that streams only the response instead."""
    port = free_port()
    mitmdump = Path(sys.executable).with_name("mitmdump")
    streaming = ["-s", str(script)] if script else ["--set", "stream_large_bodies=1"]
    process = subprocess.Popen([str(mitmdump), "--mode", f"reverse:{upstream}", "--listen-host", HOST, "--listen-port", str(port),
                                *streaming, "-q"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wait_port(port, process, "mitmdump")
    return Target("mitm-resp" if script else "mitmdump", f"http://{HOST}:{port}", process)


# stream_large_bodies=1 streams the request body to the upstream as well; cachelint buffers the request (it needs
# the whole body) and streams only the response. This floor does the same, with nothing else in the hook.
RESPONSE_ONLY_ADDON = "def responseheaders(flow):\n    flow.response.stream = True\n"


def start_cachelint(upstream: str, db: Path) -> Target:
    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", "cachelint", "proxy", "--upstream", upstream, "--port", str(port),
                                "--no-dashboard", "--db", str(db)],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    wait_port(port, process, "cachelint proxy")
    return Target("cachelint", f"http://{HOST}:{port}", process)


# --- request bodies ---------------------------------------------------------------------------------------


def agent_bodies(count: int, stream: bool = True) -> list[bytes]:
    """A Claude Code-shaped conversation (tools, a long system prompt, the breakpoint on the newest message) of
    `count` turns, ~17k tokens at turn 1, ~240 more per turn (~64k at turn 200)."""
    from analysis import conversation

    return [raw if stream else raw.replace(b'"stream": true', b'"stream": false', 1)
            for raw in conversation(seed=7, turns=count, per_message_words=80, system_words=9_500)]


def small_body(session: int, turn: int) -> bytes:
    messages = []
    for t in range(turn + 1):
        messages.append({"role": "user", "content": f"session {session} step {t}: rename the variable and rerun the tests"})
        if t < turn:
            messages.append({"role": "assistant", "content": "Done; the tests pass."})
    body = {"model": MODEL, "max_tokens": 64, "stream": False, "messages": messages,
            "system": [{"type": "text", "text": "You are a careful coding assistant. Answer briefly.", "cache_control": {"type": "ephemeral"}}]}
    return json.dumps(body).encode()


def headers(session: str) -> dict[str, str]:
    return {**API_HEADERS, "x-claude-code-session-id": session}


# --- client measurements ----------------------------------------------------------------------------------


def new_client() -> httpx.AsyncClient:
    return httpx.AsyncClient(timeout=TIMEOUT, limits=httpx.Limits(max_connections=64, max_keepalive_connections=64))


async def one_stream(client: httpx.AsyncClient, target: Target, body: bytes, session: str) -> tuple[float, float]:
    """(TTFT, total) in seconds: to the first body chunk, to the last."""
    start = time.perf_counter()
    first = None
    async with client.stream("POST", target.url + "/v1/messages?beta=true", content=body, headers=headers(session)) as response:
        async for _ in response.aiter_raw():
            if first is None:
                first = time.perf_counter() - start
        if response.status_code != 200:
            raise RuntimeError(f"{target.name}: status {response.status_code}")
    target.sent += 1
    return first or float("nan"), time.perf_counter() - start


async def latency(targets: list[Target], bodies: list[bytes]) -> dict[str, dict[str, list[float]]]:
    out = {t.name: {"ttft": [], "total": []} for t in targets}
    clients = {t.name: new_client() for t in targets}
    try:
        for t in targets:  # warm up: connections, imports, the tokenizer
            for body in bodies[:3]:
                await one_stream(clients[t.name], t, body, "warmup")
            if t.name == "cachelint":
                t.wait_recorded(t.sent)  # the recorder has loaded its tokenizer and analyzed the warm-up
        for i, body in enumerate(bodies):
            for k in range(len(targets)):
                t = targets[(i + k) % len(targets)]  # rotate the order so no target always goes first
                ttft, total = await one_stream(clients[t.name], t, body, f"latency-{t.name}")
                out[t.name]["ttft"].append(ttft)
                out[t.name]["total"].append(total)
    finally:
        for c in clients.values():
            await c.aclose()
    return out


async def throughput(target: Target, bodies: list[bytes], concurrency: int, per_worker: int) -> tuple[float, float]:
    """(streams per second, median TTFT) with `concurrency` workers sending `per_worker` streams each."""
    ttfts: list[float] = []
    async with new_client() as client:

        async def worker(w: int) -> None:
            for j in range(per_worker):
                ttft, _ = await one_stream(client, target, bodies[j % len(bodies)], f"tp{concurrency}-{w}")
                ttfts.append(ttft)

        await asyncio.gather(*(one_stream(client, target, bodies[0], "warmup") for _ in range(min(concurrency, 8))))
        start = time.perf_counter()
        await asyncio.gather(*(worker(w) for w in range(concurrency)))
        wall = time.perf_counter() - start
    return concurrency * per_worker / wall, statistics.median(ttfts)


async def memory(target: Target, exchanges: int, checkpoints: list[int], concurrency: int = 4,
                 deadline_s: float = 900.0) -> list[tuple[int, int, int, float]]:
    """[(exchanges, VmRSS, VmHWM, seconds)]: RSS once the recorder has written that many exchanges."""
    sent = 0
    rows = [(0, *target.rss(), 0.0)]
    start = time.perf_counter()
    state = [[w, 0] for w in range(concurrency)]  # per worker: its session, its turn (sessions of 20 turns)
    async with new_client() as client:

        async def worker(w: int, until: int) -> None:
            nonlocal sent
            while sent < until and time.perf_counter() - start < deadline_s:
                sent += 1
                session, turn = state[w]
                response = await client.post(target.url + "/v1/messages", content=small_body(session, turn), headers=headers(f"mem-{session}"))
                if response.status_code != 200:
                    raise RuntimeError(f"status {response.status_code}")
                state[w] = [session, turn + 1] if turn < 19 else [session + concurrency, 0]

        for checkpoint in checkpoints:
            await asyncio.gather(*(worker(w, checkpoint) for w in range(concurrency)))
            if not target.wait_recorded(sent):
                print(f"  (the recorder had written {target.recorded} of {sent} after 120 s)", file=sys.stderr)
            rows.append((sent, *target.rss(), time.perf_counter() - start))
            if sent < checkpoint:
                break  # out of time
    return rows


# --- the addon's CPU, in process ----------------------------------------------------------------------------


def addon_cpu(repeat: int, tokens: int, turns: int, profile: bool) -> tuple[float, int, int, str | None]:
    """Median seconds of Recorder.record for turn `turns` of a conversation of ~`tokens`, its earlier turns
    recorded first. Returns (median s, prompt tokens, body bytes, profile text)."""
    from analysis import calibrate, conversation
    from upstream import Upstream

    from cachelint.record.analyze import Recorder
    from cachelint.record.exchange import Captured

    per_message_words, system_words = calibrate(turns, tokens)
    times, profile_text, prompt_tokens, size = [], None, 0, 0
    for r in range(repeat):
        bodies = conversation(seed=5000 + r, turns=turns, per_message_words=per_message_words, system_words=system_words)
        usage_model = Upstream()  # not started: only its cache model, for realistic usage numbers
        recorder = Recorder(store=None)
        for i, raw in enumerate(bodies):
            body = json.loads(raw)
            usage = {**usage_model.anthropic_usage(body, {}), "output_tokens": 400}
            response = {"id": f"msg_{i:06d}", "type": "message", "role": "assistant", "model": MODEL,
                        "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn", "stop_sequence": None, "usage": usage}
            at = 1_700_000_000.0 + 30.0 * i
            captured = Captured(started_at=at, method="POST", url="http://127.0.0.1:8082/v1/messages?beta=true",
                                request_headers=[("x-api-key", "sk-ant-bench"), ("anthropic-version", "2023-06-01"),
                                                 ("content-type", "application/json"), ("x-claude-code-session-id", f"cpu-{r}")],
                                request_body=raw, status=200, response_headers=[("content-type", "application/json")],
                                response_body=json.dumps(response).encode(), first_byte_at=at + 1.5, ended_at=at + 9.0)
            if i < len(bodies) - 1:
                recorder.record(captured)
                continue
            profiler = cProfile.Profile() if profile and r == repeat - 1 else None
            t0 = time.perf_counter()
            if profiler:
                profiler.enable()
            row = recorder.record(captured)
            if profiler:
                profiler.disable()
            times.append(time.perf_counter() - t0)
            prompt_tokens, size = row.estimated_prompt_tokens, len(raw)
            if row.brk is None or row.brk.get("cause") != "none":
                raise RuntimeError(f"unexpected analysis of the timed turn: {row.brk}")
            if profiler:
                import io

                buf = io.StringIO()
                stats = pstats.Stats(profiler, stream=buf)
                stats.sort_stats("cumulative").print_stats("cachelint", 14)
                stats.sort_stats("tottime").print_stats(8)
                profile_text = buf.getvalue()
    return statistics.median(times), prompt_tokens, size, profile_text


# --- main -------------------------------------------------------------------------------------------------


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))]


def mib(n: int) -> str:
    return f"{n / 2**20:.1f} MiB"


def kilo(n: int) -> str:
    return f"{n // 1000}k" if n % 1000 == 0 else str(n)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=200, help="sequential streams per target for the latency")
    parser.add_argument("--exchanges", type=int, default=10_000, help="small exchanges for the memory curve")
    parser.add_argument("--event-delay", type=float, default=0.007, help="seconds between SSE events (22 events)")
    parser.add_argument("--per-worker", type=int, default=8, help="streams per worker in the 32-stream throughput run")
    parser.add_argument("--cpu-repeat", type=int, default=9)
    parser.add_argument("--cpu-tokens", type=int, default=100_000)
    parser.add_argument("--profile", action="store_true", help="cProfile the last timed Recorder.record")
    parser.add_argument("--response-only-floor", action="store_true",
                        help="latency also through mitmdump with a one-line addon that streams only the response")
    parser.add_argument("--skip", default="", help="comma-separated phases to skip: latency,throughput,memory,cpu")
    parser.add_argument("--serve-upstream", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_upstream:
        serve_upstream(args.event_delay)
        return
    skip = set(filter(None, args.skip.split(",")))
    results: dict = {}

    print(f"{os.cpu_count()} CPUs; upstream: tests/upstream.py in its own process, 22 SSE events {args.event_delay * 1000:.0f} ms apart")
    if skip != {"latency", "throughput", "memory"}:
        upstream = UpstreamProcess(args.event_delay)
        tmp = Path(tempfile.mkdtemp(prefix="cachelint-bench-"))
        targets = [Target("direct", upstream.url)]
        try:
            targets.append(start_mitmdump(upstream.url))
            targets.append(start_cachelint(upstream.url, tmp / "latency.db"))
            bodies = agent_bodies(max(args.requests, args.per_worker, 40))
            extra = []
            if args.response_only_floor and "latency" not in skip:
                script = tmp / "response_only.py"
                script.write_text(RESPONSE_ONLY_ADDON)
                extra = [start_mitmdump(upstream.url, script)]
            if "latency" not in skip:
                lat = asyncio.run(latency(targets + extra, bodies[: args.requests]))
                results["latency"] = lat
                print(f"latency: {args.requests} sequential streams per target, interleaved; body {len(bodies[0]) / 1024:.0f}-"
                      f"{len(bodies[args.requests - 1]) / 1024:.0f} KiB; ms")
                print(f"  {'target':<10} {'TTFT p50':>9} {'TTFT p99':>9} {'total p50':>10} {'total p99':>10}")
                for t in targets + extra:
                    d = lat[t.name]
                    print(f"  {t.name:<10} {pct(d['ttft'], 50) * 1e3:9.2f} {pct(d['ttft'], 99) * 1e3:9.2f} "
                          f"{pct(d['total'], 50) * 1e3:10.2f} {pct(d['total'], 99) * 1e3:10.2f}")
                targets[2].wait_recorded(targets[2].sent)  # the recorder has caught up before the next phase
                for t in extra:
                    t.stop()
            if "throughput" not in skip:
                print(f"throughput: streams/s (median TTFT ms); 1 stream x 40, 32 streams x {args.per_worker}")
                print(f"  {'target':<10} {'1 stream':>18} {'32 streams':>18}")
                results["throughput"] = {}
                for t in targets:
                    one = asyncio.run(throughput(t, bodies, 1, 40))
                    if t.name == "cachelint":
                        t.wait_recorded(t.sent)
                    many = asyncio.run(throughput(t, bodies, 32, args.per_worker))
                    if t.name == "cachelint":
                        t.wait_recorded(t.sent)
                    results["throughput"][t.name] = (one, many)
                    print(f"  {t.name:<10} {one[0]:9.1f} ({one[1] * 1e3:5.1f}) {many[0]:9.1f} ({many[1] * 1e3:5.1f})")
            for t in targets[1:]:
                t.stop()
            if "memory" not in skip:
                n = args.exchanges
                checkpoints = sorted({max(1, n // 10), max(1, n // 2), n})
                fresh = start_cachelint(upstream.url, tmp / "memory.db")
                try:
                    time.sleep(1.0)
                    rows = asyncio.run(memory(fresh, n, checkpoints))
                finally:
                    fresh.stop()
                results["memory"] = rows
                print("memory: a fresh cachelint proxy, small non-streaming exchanges (sessions of 20 turns, 4 at a time)")
                print(f"  {'exchanges':>9} {'VmRSS':>11} {'VmHWM':>11} {'seconds':>8}")
                for count, rss, hwm, seconds in rows:
                    print(f"  {count:>9,} {mib(rss):>11} {mib(hwm):>11} {seconds:8.1f}")
        finally:
            for t in targets[1:]:
                if t.process is not None and t.process.poll() is None:
                    t.stop()
            upstream.stop()
            shutil.rmtree(tmp, ignore_errors=True)

    if "cpu" not in skip:
        seconds, tokens, size, profile_text = addon_cpu(args.cpu_repeat, args.cpu_tokens, 50, args.profile)
        results["cpu"] = seconds
        print(f"addon CPU: Recorder(store=None).record for turn 50 of a conversation, earlier turns recorded; "
              f"{tokens:,} tokens, {size / 1024:.0f} KiB; median of {args.cpu_repeat}: {seconds * 1e3:.2f} ms "
              f"({seconds * 1e3 * 100_000 / max(tokens, 1):.2f} ms per 100k tokens)")
        if profile_text:
            print(profile_text)

    parts = []
    if "latency" in results:
        lat = results["latency"]
        d, m, c = (lat[k] for k in ("direct", "mitmdump", "cachelint"))
        print("added over direct / over mitmdump, ms:")
        for label, key, q in (("TTFT p50", "ttft", 50), ("TTFT p99", "ttft", 99), ("total p50", "total", 50), ("total p99", "total", 99)):
            print(f"  {label:<10} mitmdump {(pct(m[key], q) - pct(d[key], q)) * 1e3:+7.2f}   cachelint {(pct(c[key], q) - pct(d[key], q)) * 1e3:+7.2f} "
                  f"/ {(pct(c[key], q) - pct(m[key], q)) * 1e3:+7.2f}"
                  + (f"   (over mitm-resp {(pct(c[key], q) - pct(lat['mitm-resp'][key], q)) * 1e3:+7.2f})" if "mitm-resp" in lat else ""))
        parts.append(f"TTFT p50 {(pct(c['ttft'], 50) - pct(m['ttft'], 50)) * 1e3:+.2f} ms over mitmdump (target <= 2 ms)")
    if "cpu" in results:
        parts.append(f"addon CPU {results['cpu'] * 1e3:.2f} ms per 100k-token exchange (target <= 1 ms)")
    if "memory" in results:
        rows = results["memory"]
        parts.append(f"RSS {kilo(rows[1][0])}->{kilo(rows[-1][0])} {mib(rows[1][1])} -> {mib(rows[-1][1])}")
    print("headline: " + ", ".join(parts))


if __name__ == "__main__":
    main()
