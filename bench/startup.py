"""Start-up costs a user feels, against floors measured in the same run.

Usage: python bench/startup.py [--repeat N]

- CPU time (user + system, of the child process) of `cachelint --version` against `python -c pass`;
- CPU time of `cachelint check app.py` on one small app file (no cache) against `python -c "import libcst"`,
  the analyzer's floor;
- wall time from starting `cachelint proxy` to its "listening" line, checked by connecting at once, against
  `mitmdump` itself reaching the same state (when mitmproxy is installed).
Medians of N runs. Targets (issue 12): --version and check well under 1 s of CPU; the proxy listening within 2 s.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

APP = '''import anthropic
from datetime import datetime

client = anthropic.Anthropic()
HANDBOOK = open("handbook.md").read()


def ask(history, question):
    history.append({"role": "user", "content": question})
    return client.messages.create(
        model="claude-sonnet-4-5",
        max_tokens=1024,
        system=[{"type": "text", "text": HANDBOOK, "cache_control": {"type": "ephemeral"}},
                {"type": "text", "text": f"Today is {datetime.now():%Y-%m-%d %H:%M}."}],
        messages=history,
    )
'''


def cpu_of(cmd: list[str], env: dict | None = None) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ready_after(cmd: list[str], port: int, marker: str) -> float:
    """Seconds from start to the output line containing `marker`, then a connection that must succeed at once."""
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        while True:
            line = proc.stdout.readline()
            if not line:
                raise RuntimeError(f"{cmd[0]} exited before saying {marker!r}")
            if marker in line:
                break
        elapsed = time.perf_counter() - started
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            pass
        return elapsed
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def mitmdump_ready_after(port: int) -> float:
    """mitmdump reaching 'listening' (its own log line says so once its server is up)."""
    mitmdump = shutil.which("mitmdump") or str(Path(sys.executable).parent / "mitmdump")
    return ready_after([mitmdump, "--mode", "reverse:http://127.0.0.1:9", "--listen-host", "127.0.0.1",
                        "--listen-port", str(port), "--set", "termlog_verbosity=info"], port, "listening")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    cachelint = [sys.executable, "-m", "cachelint"]
    with tempfile.TemporaryDirectory() as tmp:
        app = Path(tmp, "app.py")
        app.write_text(APP)
        env = {**os.environ, "CACHELINT_CACHE_DIR": str(Path(tmp, "cache"))}
        rows = []
        python_pass = statistics.median(cpu_of([sys.executable, "-c", "pass"]) for _ in range(args.repeat))
        version = statistics.median(cpu_of([*cachelint, "--version"]) for _ in range(args.repeat))
        rows.append(("cachelint --version (CPU)", version, "python -c pass", python_pass))
        libcst_floor = statistics.median(cpu_of([sys.executable, "-c", "import libcst"]) for _ in range(args.repeat))
        cpu_of([*cachelint, "check", "--no-cache", str(app)], env)  # warm the tokenizer cache, as after a first run
        check = statistics.median(cpu_of([*cachelint, "check", "--no-cache", str(app)], env) for _ in range(args.repeat))
        rows.append(("cachelint check app.py (CPU)", check, "python -c 'import libcst'", libcst_floor))
        try:
            import mitmproxy  # noqa: F401
        except ImportError:
            print("mitmproxy is not installed: the proxy is not timed")
        else:
            proxy = statistics.median(
                ready_after([*cachelint, "proxy", "--upstream", "http://127.0.0.1:9", "--port", str(port := free_port()),
                             "--db", str(Path(tmp, "c.db")), "--no-dashboard"], port, "listening")
                for _ in range(args.repeat))
            floor = statistics.median(mitmdump_ready_after(free_port()) for _ in range(args.repeat))
            rows.append(("cachelint proxy listening (wall)", proxy, "mitmdump listening", floor))
    print(f"{'measure':34} {'seconds':>8}  {'floor':28} {'seconds':>8}  ratio")
    for name, value, floor_name, floor in rows:
        print(f"{name:34} {value:8.2f}  {floor_name:28} {floor:8.2f}  {value / floor:5.2f}x")


if __name__ == "__main__":
    main()
