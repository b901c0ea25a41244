"""The proxy under load and after a crash: every exchange recorded exactly once, the store always readable.

Traffic goes only to 127.0.0.1. The work is a count of requests (CACHELINT_LOAD_REQUESTS per client, default 3,
from 200 clients at once), never a rate: a busy machine only makes it slower. Every wait has a generous bound.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

import httpx
import pytest

from test_proxy import API_KEY, Proxy, report
from upstream import Upstream

PER_CLIENT = int(os.environ.get("CACHELINT_LOAD_REQUESTS", "3"))
CONCURRENCY = 200
BOUND_S = 900  # a safety bound on the whole load, not a rate: nothing is asserted about time
pytestmark = pytest.mark.slow
HEADERS = {"x-api-key": API_KEY, "anthropic-version": "2023-06-01"}


def body(marker: str) -> dict:
    return {"model": "claude-sonnet-4-5", "max_tokens": 8, "stream": True,
            "system": [{"type": "text", "text": "You are terse. " * 40, "cache_control": {"type": "ephemeral"}}],
            "messages": [{"role": "user", "content": f"request {marker}"}]}


async def load(url: str, per_client: int, done: list[str], stop: asyncio.Event | None = None, failed: list[str] | None = None) -> None:
    """CONCURRENCY streaming clients, each sending `per_client` requests one after another (or until `stop`)."""
    deadline = time.monotonic() + BOUND_S
    limits = httpx.Limits(max_connections=CONCURRENCY, max_keepalive_connections=CONCURRENCY)
    async with httpx.AsyncClient(limits=limits, timeout=300) as client:
        async def worker(w: int) -> None:
            n = 0
            while n < per_client and time.monotonic() < deadline and not (stop and stop.is_set()):
                marker = f"w{w}-{n}"
                n += 1
                try:
                    async with client.stream("POST", url + "/v1/messages", json=body(marker), headers=HEADERS) as response:
                        async for _ in response.aiter_raw():
                            pass
                        if response.status_code == 200:
                            done.append(marker)
                        elif failed is not None:
                            failed.append(marker)  # e.g. 502 when the upstream closed a reused connection
                except httpx.HTTPError:
                    if stop and stop.is_set():
                        return
                    raise

        await asyncio.gather(*(worker(w) for w in range(CONCURRENCY)))


def recorded_markers(db, ok_only: bool = True) -> list[str]:
    rows = sqlite3.connect(db).execute("SELECT request_body, status, error, prompt_tokens FROM exchanges").fetchall()
    markers = []
    for request_body, status, error, prompt in rows:
        if ok_only and status != 200:
            continue
        if status == 200:
            assert prompt and prompt > 0 and error is None, (status, prompt, error)  # not corrupted: usage parsed
        else:
            assert error, status  # a failed exchange is recorded with its error
        markers.append(json.loads(request_body)["messages"][0]["content"].split()[-1])
    return markers


def test_200_concurrent_streams_every_exchange_recorded_once(tmp_path):
    with Upstream(event_delay=0.005) as upstream:
        proxy = Proxy(upstream.url, tmp_path / "load.db")
        done: list[str] = []
        failed: list[str] = []
        try:
            async def run() -> None:
                task = asyncio.create_task(load(proxy.url, PER_CLIENT, done, failed=failed))
                # the report is readable while the proxy writes: read it until it shows recorded exchanges
                seen = 0
                while not task.done() and not seen:
                    out = await asyncio.to_thread(subprocess.run, [sys.executable, "-m", "cachelint", "report", "--db", str(proxy.db), "--format", "json"],
                                                  capture_output=True, text=True, timeout=300)
                    assert out.returncode == 0, out.stderr
                    seen = json.loads(out.stdout)["totals"]["requests"]
                    await asyncio.sleep(0.5)
                await task
                assert seen > 0 or not done  # read while recording, unless the whole load finished first

            asyncio.run(run())
        finally:
            proxy.stop()
    assert len(done) + len(failed) == CONCURRENCY * PER_CLIENT  # every request answered, one way or the other
    assert len(done) > CONCURRENCY
    assert sorted(recorded_markers(tmp_path / "load.db")) == sorted(done)  # exactly once each, none lost, none invented
    assert sorted(recorded_markers(tmp_path / "load.db", ok_only=False)) == sorted(done + failed)
    assert report(tmp_path / "load.db")["totals"]["requests"] == len(done) + len(failed)


def test_kill_9_leaves_a_clean_store_with_every_recorded_exchange(tmp_path):
    db = tmp_path / "crash.db"
    with Upstream(event_delay=0.005) as upstream:
        proxy = Proxy(upstream.url, db)
        done: list[str] = []
        failed: list[str] = []

        async def run() -> None:
            stop = asyncio.Event()
            task = asyncio.create_task(load(proxy.url, 1000, done, stop, failed))
            deadline = time.monotonic() + BOUND_S
            while len(done) < 100 and time.monotonic() < deadline and not task.done():  # a count, not a time
                await asyncio.sleep(0.1)
            proxy.process.send_signal(signal.SIGKILL)  # under load
            stop.set()
            await asyncio.gather(task, return_exceptions=True)

        asyncio.run(run())
        proxy.process.wait(timeout=30)
        # a restart opens the same store cleanly and goes on recording
        again = Proxy(upstream.url, db)
        try:
            ok = httpx.post(again.url + "/v1/messages", json={**body("after-restart"), "stream": False}, headers=HEADERS, timeout=30)
            assert ok.status_code == 200
        finally:
            again.stop()
    assert sqlite3.connect(db).execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    markers = recorded_markers(db, ok_only=False)
    assert len(markers) == len(set(markers))  # no exchange twice
    before_kill = set(markers) - {"after-restart"}
    assert before_kill <= set(done) | set(failed)  # nothing recorded that the client did not send and see answered
    assert "after-restart" in markers
    # what was lost is at most the exchanges still in the recorder's queue at the kill
    assert len(before_kill) >= len(done) - 2 * 200, (len(before_kill), len(done))
