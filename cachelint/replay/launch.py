"""`--launch MODEL_DIR`: start a vLLM server as a subprocess for the replay, and always stop it afterwards.

The server gets prefix caching and prompt token details on, a fixed PYTHONHASHSEED (block hashes then do not
change between restarts), listens on 127.0.0.1 on a free port, and logs to a file whose last lines explain a
failed start. vLLM is started as `python -m vllm.entrypoints.openai.api_server` with the Python that has it
installed (`--vllm-python`, or CACHELINT_VLLM_PYTHON): the `vllm` command of some CPU builds looks for a
distribution named `vllm` and fails.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import httpx

from cachelint.errors import CachelintError

START_TIMEOUT_S = 600.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def vllm_python(explicit: str | None = None) -> str:
    return explicit or os.environ.get("CACHELINT_VLLM_PYTHON") or sys.executable


def server_command(python: str, model_dir: str, served_name: str, port: int, extra: Sequence[str] = ()) -> list[str]:
    return [
        python, "-m", "vllm.entrypoints.openai.api_server",
        "--model", model_dir,
        "--served-model-name", served_name,
        "--host", "127.0.0.1",
        "--port", str(port),
        "--enable-prefix-caching",
        "--enable-prompt-tokens-details",
        *extra,
    ]


def server_env(base: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ if base is None else base)
    env.setdefault("PYTHONHASHSEED", "0")
    env.setdefault("HF_HUB_OFFLINE", "1")  # a local model directory needs no hub; never wait on one
    env.setdefault("VLLM_NO_USAGE_STATS", "1")
    env.setdefault("DO_NOT_TRACK", "1")
    return env


def _tail(path: Path, lines: int = 3) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace").strip().splitlines()
    except OSError:
        return ""
    useful = [line for line in text if line.strip()][-lines:]
    return " | ".join(line.strip()[:300] for line in useful)


class VllmServer:
    """A context manager: `with VllmServer(dir, name) as url: ...` starts, waits for /health, stops."""

    def __init__(
        self,
        model_dir: str,
        served_name: str,
        *,
        python: str | None = None,
        port: int | None = None,
        extra_args: Sequence[str] = (),
        timeout: float = START_TIMEOUT_S,
        log_path: str | None = None,
    ) -> None:
        if not Path(model_dir).is_dir():
            raise CachelintError(f"--launch {model_dir}: no such model directory")
        self.model_dir = str(Path(model_dir).resolve())
        self.served_name = served_name
        self.python = vllm_python(python)
        self.port = port or free_port()
        self.extra_args = list(extra_args)
        self.timeout = timeout
        self.log_path = Path(log_path) if log_path else Path(tempfile.gettempdir()) / f"cachelint-vllm-{self.port}-{os.getpid()}.log"
        self.process: subprocess.Popen[bytes] | None = None
        self.pid: int | None = None  # the server's process id, also its process group's

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _check_python(self) -> None:
        try:
            found = subprocess.run(
                [self.python, "-c", "import importlib.util,sys; sys.exit(0 if importlib.util.find_spec('vllm') else 3)"],
                capture_output=True, timeout=60, check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise CachelintError(f"cannot run {self.python}: {exc}") from None
        if found.returncode != 0:
            raise CachelintError(f"{self.python} cannot import vllm: pass --vllm-python (or set CACHELINT_VLLM_PYTHON) to a Python with vLLM installed")

    def start(self) -> str:
        self._check_python()
        command = server_command(self.python, self.model_dir, self.served_name, self.port, self.extra_args)
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=server_env(), start_new_session=True)
        self.pid = self.process.pid
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                code = self.process.returncode
                self.stop()  # its children too
                raise CachelintError(f"vLLM exited during start-up (exit {code}; log {self.log_path}): {_tail(self.log_path)}")
            try:
                if httpx.get(self.url + "/health", timeout=2.0).status_code == 200:
                    return self.url
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        self.stop()
        raise CachelintError(f"vLLM did not answer /health within {self.timeout:.0f} s (log {self.log_path}): {_tail(self.log_path)}")

    def stop(self) -> None:
        """SIGTERM to the server's process group, SIGKILL if it has not ended in 30 s, then SIGKILL to whatever
        is left in the group (vLLM's engine core runs in a child process that renames itself)."""
        process, self.process = self.process, None
        if process is None:
            return
        if process.poll() is None:
            for sig, wait in ((signal.SIGTERM, 30.0), (signal.SIGKILL, 10.0)):
                try:
                    os.killpg(process.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    process.wait(timeout=wait)
                    break
                except subprocess.TimeoutExpired:
                    continue
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    def __enter__(self) -> str:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc: object) -> None:
        self.stop()
