"""transformers, imported quietly and never allowed to hang on a network that is not there."""

from __future__ import annotations

import logging
import os
import socket
from typing import Any
from urllib.parse import urlparse


def transformers(what: str = "this command") -> Any:
    """Import transformers without its start-up chatter ("PyTorch was not found ..."); a clear line when missing."""
    from cachelint.extras import require

    require("hf", what)
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")
    for name in ("transformers", "huggingface_hub"):
        logging.getLogger(name).setLevel(logging.ERROR)
    import transformers as tf

    tf.logging.set_verbosity_error()
    return tf


def hub_reachable(timeout: float = 3.0) -> bool:
    """Whether the Hub's host resolves and accepts a connection (fail fast instead of minutes of retries)."""
    if os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes"):
        return False
    host = urlparse(os.environ.get("HF_ENDPOINT", "https://huggingface.co")).hostname or "huggingface.co"
    try:
        with socket.create_connection((host, 443), timeout=timeout):
            return True
    except OSError:
        return False
