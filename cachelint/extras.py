"""Optional parts of cachelint and the one line that says how to get one that is missing.

The core (check, rule, lsp, diff, kv on bundled configs, report, import, sessions, demo) needs none of them.
"""

from __future__ import annotations

import importlib.util

from cachelint.errors import CachelintError

# extra -> (the modules it brings, why it is installed on its own)
EXTRAS = {
    "proxy": (("mitmproxy", "prometheus_client"), "install it as a tool in its own environment: mitmproxy 11 and today's SDKs need different h11 releases"),
    "hf": (("transformers",), "in the environment you run cachelint from"),
    "replay": (("httpx",), "in the environment you run cachelint from"),
    "otlp": (("opentelemetry.sdk", "opentelemetry.exporter.otlp.proto.http"), "beside the proxy extra, in the proxy's environment"),
}


def install_hint(extra: str) -> str:
    """The command that installs cachelint with `extra`, from a checkout of its repository."""
    if extra == "proxy":
        return "pipx install './cachelint[proxy]'  (or: uv tool install './cachelint[proxy]')"
    return f"pip install './cachelint[{extra}]'"


def require(extra: str, what: str) -> None:
    """Raise a one-line error naming the install command when a module of `extra` is missing."""
    modules, _ = EXTRAS[extra]
    missing = [m for m in modules if not _importable(m)]
    if missing:
        raise CachelintError(
            f"{what} needs {' and '.join(missing)}, which {'is' if len(missing) == 1 else 'are'} not installed: install cachelint "
            f"with the `{extra}` extra, from a checkout of its repository: {install_hint(extra)}"
        )


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a module set to None in sys.modules, or one without a spec
        return False
