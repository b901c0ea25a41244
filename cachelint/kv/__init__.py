"""`cachelint kv`: the simulated KV-cache cost of a model, per token, per session and per GPU."""

from __future__ import annotations

from typing import Any

from cachelint.kv.config import bundled_models, load_config
from cachelint.kv.cost import KVCost, kv_cost

__all__ = ["KVCost", "bundled_models", "capacity", "kv_cost", "load_config", "model_kv_cost"]

DEFAULT_GPU_UTILIZATION = 0.9  # vLLM's --gpu-memory-utilization default


def model_kv_cost(model: str, kv_dtype: str = "auto", weight_dtype: str = "auto") -> KVCost:
    config, name = load_config(model)
    return kv_cost(config, name, kv_dtype=kv_dtype, weight_dtype=weight_dtype)


def capacity(
    cost: KVCost,
    gpu_memory: int | None = None,
    session_tokens: int | None = None,
    gpu_utilization: float = DEFAULT_GPU_UTILIZATION,
) -> dict[str, Any]:
    """The JSON report of `cachelint kv`. A GPU of no memory, or a session longer than the model's context, is
    refused; a model whose weights alone exceed the GPU is said not to fit (`fits`: false, `does_not_fit`)."""
    from cachelint.errors import CachelintError
    from cachelint.kv.units import human_bytes

    if gpu_memory is not None and gpu_memory <= 0:
        raise CachelintError("--gpu-memory must be more than 0 bytes (e.g. 24GiB, 80G)")
    if session_tokens is not None and cost.context_length and session_tokens > cost.context_length:
        raise CachelintError(f"--session-tokens {session_tokens:,} is past {cost.model}'s context length of {cost.context_length:,} tokens "
                             "(max_position_embeddings in its config)")
    out: dict[str, Any] = {
        "model": cost.model,
        "bytes_per_token": cost.bytes_per_token,
        "layers": cost.layers,
        "kv_heads": cost.kv_heads,
        "head_dim": cost.head_dim,
        "dtype_bytes": cost.dtype_bytes,
        "per_sequence_fixed_bytes": cost.per_sequence_fixed_bytes,
        "attention": cost.attention,
        "layer_types": {"full": cost.plan.full, "sliding": cost.plan.sliding, "linear": cost.plan.linear, "mamba": cost.plan.mamba},
        "sliding_window": cost.sliding_window,
        "parameters": cost.params,
        "context_length": cost.context_length,
        "notes": cost.notes,
    }
    if session_tokens is not None:
        out["session_tokens"] = session_tokens
        out["session_bytes"] = cost.session_bytes(session_tokens)
    if gpu_memory is not None:
        usable = int(gpu_memory * gpu_utilization)
        budget = usable - cost.weights_bytes
        per_token = cost.bytes_per_token or (cost.sliding_bytes_per_token or 1)
        out.update(
            gpu_memory_bytes=gpu_memory,
            gpu_utilization=gpu_utilization,
            weights_bytes=cost.weights_bytes,
            kv_budget_bytes=max(0, budget),
            max_tokens_in_cache=max(0, budget) // per_token,
        )
        out["fits"] = budget > 0
        if not out["fits"]:
            out["does_not_fit"] = (f"the weights alone ({human_bytes(cost.weights_bytes)}) are larger than the GPU memory the engine may use "
                                   f"({human_bytes(gpu_memory)} x {gpu_utilization:g} = {human_bytes(usable)}): the model does not fit, "
                                   "no KV cache is left (use more GPUs, a smaller --weight-dtype or a smaller model)")
        if session_tokens is not None:
            out["max_concurrent_sessions"] = max(0, budget) // max(1, cost.session_bytes(session_tokens))
    return out
