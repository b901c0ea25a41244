"""Find a model's config: a local config.json or model dir, a bundled config, or the Hugging Face Hub."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

from cachelint.errors import CachelintError


def bundled_models() -> list[str]:
    files = resources.files("cachelint.kv").joinpath("configs")
    return sorted(json.loads(f.read_text())["_name_or_path"] for f in files.iterdir() if f.name.endswith(".json"))


def _bundled(model: str) -> dict[str, Any] | None:
    wanted = model.lower()
    for f in resources.files("cachelint.kv").joinpath("configs").iterdir():
        if not f.name.endswith(".json"):
            continue
        config = json.loads(f.read_text())
        name = config["_name_or_path"].lower()
        if wanted in (name, name.split("/", 1)[1]):
            return config
    return None


def _read_local(path: Path) -> dict[str, Any]:
    if path.is_dir():
        path = path / "config.json"
        if not path.exists():
            raise CachelintError(f"{path.parent}: no config.json in this directory")
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise CachelintError(f"{path}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise CachelintError(f"{path}: cannot read: {exc}") from None
    if not isinstance(config, dict):
        raise CachelintError(f"{path}: not a model config (a JSON object)")
    return config


_CLOSED_OWNERS = {"": "its provider", "anthropic": "Anthropic", "openai": "OpenAI"}


def closed_model(model: str) -> str | None:
    """Who keeps MODEL's architecture to itself, for a model only reachable through a provider's API (one the
    price table knows: Claude, GPT-4o/5, o-series), or None. An open fine-tune on the Hub with a similar name
    (owner/claude-distill) is not one."""
    from cachelint import pricing

    owner, _, name = model.rpartition("/")
    if owner.lower() not in _CLOSED_OWNERS or pricing.lookup(name) is None:
        return None
    provider = _CLOSED_OWNERS[owner.lower()]
    if provider == "its provider":
        provider = "Anthropic" if name.lower().startswith("claude") else "OpenAI" if name.lower().startswith(("gpt", "o1", "o3", "o4", "chatgpt")) else provider
    return provider


def load_config(model: str) -> tuple[dict[str, Any], str]:
    """(config dict, display name) for MODEL: a path, a bundled id, or a Hub id through transformers."""
    path = Path(model)
    if path.exists():
        config = _read_local(path)
        return config, str(config.get("_name_or_path") or model)
    bundled = _bundled(model)
    if bundled is not None:
        return bundled, bundled["_name_or_path"]
    if model.endswith(".json") or model.startswith((".", "/", "~")):
        raise CachelintError(f"{model}: no such file")
    closed = closed_model(model)
    if closed:
        raise CachelintError(
            f"{model!r} is a closed model: {closed} publishes no config (layers, KV heads, head size), so its KV cache "
            "cannot be computed; pass an open model with a similar size (one of the bundled ones below, a Hugging Face id "
            f"or a config.json). Bundled: {', '.join(bundled_models())}"
        )
    if model.count("/") != 1:
        raise CachelintError(
            f"unknown model {model!r}: not a file, not bundled ({', '.join(bundled_models())}), "
            "and not a Hugging Face id (owner/name)"
        )
    from cachelint.hf import hub_reachable, transformers

    auto = transformers(f"{model!r} is not bundled and a local config.json was not given; reading its Hugging Face config").AutoConfig
    try:  # the local Hugging Face cache first
        return auto.from_pretrained(model, local_files_only=True).to_dict(), model
    except Exception:
        pass
    if not hub_reachable():
        raise CachelintError(
            f"{model!r} is not bundled or cached and the Hugging Face Hub cannot be reached (offline); "
            "pass a local config.json or model directory instead"
        )
    try:
        return auto.from_pretrained(model).to_dict(), model
    except Exception as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise CachelintError(
            f"cannot fetch the config of {model!r} from the Hugging Face Hub (offline?): {first[:200]}; "
            "pass a local config.json or model directory instead"
        ) from None
