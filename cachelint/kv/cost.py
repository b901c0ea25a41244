"""KV-cache bytes per token from a transformers config, the way vLLM sizes its cache.

- Full attention (MHA / GQA / MQA): 2 (K and V) x kv_heads x head_dim x dtype bytes per layer and token.
  An explicit `head_dim` wins over hidden_size / heads (Qwen3-4B: 128, not 2560 / 32 = 80).
- MLA (DeepSeek V2 / V3): one latent of kv_lora_rank + qk_rope_head_dim per layer and token, no x2, no
  dependence on num_key_value_heads.
- Sliding-window layers hold at most the window per sequence; linear-attention (Gated DeltaNet) and Mamba
  layers hold a fixed state per sequence. Both are reported as `per_sequence_fixed_bytes`, not per token.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cachelint.errors import CachelintError

DTYPE_BYTES = {
    "float32": 4.0, "fp32": 4.0, "float": 4.0,
    "bfloat16": 2.0, "bf16": 2.0, "float16": 2.0, "fp16": 2.0, "half": 2.0,
    "fp8": 1.0, "float8": 1.0, "fp8_e4m3": 1.0, "fp8_e5m2": 1.0, "int8": 1.0,
    "int4": 0.5, "mxfp4": 4.25 / 8, "nvfp4": 4.5 / 8,
}
KV_DTYPES = ("auto", "bf16", "fp16", "fp8", "fp32")


def _first(cfg: dict[str, Any], *names: str) -> Any:
    for name in names:
        if cfg.get(name) is not None:
            return cfg[name]
    return None


def text_config(config: dict[str, Any]) -> dict[str, Any]:
    """The language model's part of a (possibly multimodal) config, with the top level's dtype kept."""
    inner = config.get("text_config") or config.get("llm_config")
    if isinstance(inner, dict):
        merged = {k: v for k, v in config.items() if k in ("torch_dtype", "dtype", "quantization_config", "tie_word_embeddings")}
        merged.update(inner)
        return merged
    return config


def _dtype_bytes(name: Any) -> float:
    key = str(name or "bfloat16").lower().removeprefix("torch.")
    if key not in DTYPE_BYTES:
        raise CachelintError(f"unknown dtype {name!r} (known: {', '.join(sorted(DTYPE_BYTES))})")
    return DTYPE_BYTES[key]


@dataclass(slots=True)
class LayerPlan:
    full: int = 0
    sliding: int = 0
    linear: int = 0  # Gated DeltaNet / linear attention
    mamba: int = 0


def layer_plan(cfg: dict[str, Any], layers: int) -> LayerPlan:
    plan = LayerPlan()
    types = cfg.get("layer_types")
    if isinstance(types, list) and types:
        for t in types[:layers]:
            t = str(t)
            if "sliding" in t or t in ("local", "chunked_attention"):
                plan.sliding += 1
            elif "linear" in t:
                plan.linear += 1
            elif "mamba" in t:
                plan.mamba += 1
            else:
                plan.full += 1
        return plan
    window = cfg.get("sliding_window")
    pattern = _first(cfg, "sliding_window_pattern", "_sliding_window_pattern")
    if window and pattern:  # Gemma 3: every pattern-th layer is global
        plan.full = layers // int(pattern)
        plan.sliding = layers - plan.full
    elif cfg.get("full_attention_interval"):  # Qwen3-Next: every n-th layer is full, the rest linear
        plan.full = layers // int(cfg["full_attention_interval"])
        plan.linear = layers - plan.full
    elif cfg.get("attn_layer_period"):  # Jamba
        period, offset = int(cfg["attn_layer_period"]), int(cfg.get("attn_layer_offset", 0))
        plan.full = sum(1 for i in range(layers) if i % period == offset)
        plan.mamba = layers - plan.full
    elif window and cfg.get("model_type") == "gemma2":
        plan.sliding = (layers + 1) // 2
        plan.full = layers - plan.sliding
    elif window and cfg.get("use_sliding_window", True) is not False:
        # Mistral v0.1 style; Qwen2 applies it only from max_window_layers on
        start = int(cfg.get("max_window_layers", 0) or 0) if "max_window_layers" in cfg else 0
        plan.sliding = max(0, layers - start)
        plan.full = layers - plan.sliding
    else:
        plan.full = layers
    return plan


@dataclass(slots=True)
class KVCost:
    model: str
    layers: int
    kv_heads: int
    head_dim: int
    dtype_bytes: float
    bytes_per_token: int  # marginal: full-attention (or MLA) layers only
    per_sequence_fixed_bytes: int  # sliding windows at their cap plus recurrent states
    attention: str  # "mha/gqa" or "mla"
    plan: LayerPlan
    sliding_window: int | None = None
    sliding_bytes_per_token: int = 0  # per token for sliding layers, up to the window
    params: int = 0
    weight_bytes_per_param: float = 2.0
    notes: list[str] = field(default_factory=list)
    context_length: int | None = None  # the longest sequence the model takes (max_position_embeddings)

    @property
    def weights_bytes(self) -> int:
        return int(self.params * self.weight_bytes_per_param)

    def session_bytes(self, tokens: int) -> int:
        """What one sequence of `tokens` tokens holds in the cache."""
        window = min(tokens, self.sliding_window or 0)
        recurrent = self.per_sequence_fixed_bytes - self.sliding_bytes_per_token * (self.sliding_window or 0)
        return self.bytes_per_token * tokens + self.sliding_bytes_per_token * window + recurrent


def kv_cost(config: dict[str, Any], model: str, kv_dtype: str = "auto", weight_dtype: str = "auto") -> KVCost:
    cfg = text_config(config)
    layers = _first(cfg, "num_hidden_layers", "n_layer", "num_layers", "n_layers")
    heads = _first(cfg, "num_attention_heads", "n_head", "num_heads")
    hidden = _first(cfg, "hidden_size", "n_embd", "d_model")
    if not isinstance(layers, int) or not isinstance(heads, int) or not isinstance(hidden, int):
        raise CachelintError(f"{model}: the config lacks num_hidden_layers / num_attention_heads / hidden_size")
    attn_cfg = cfg.get("attn_config") if isinstance(cfg.get("attn_config"), dict) else {}
    kv_heads = _first(cfg, "num_key_value_heads", "n_head_kv", "num_kv_heads", "multi_query_group_num")
    kv_heads = kv_heads or attn_cfg.get("kv_n_heads") or (1 if cfg.get("multi_query") else heads)
    head_dim = _first(cfg, "head_dim", "hidden_size_per_head") or hidden // heads
    model_dtype = _first(cfg, "torch_dtype", "dtype") or "bfloat16"
    dtype_bytes = _dtype_bytes(model_dtype if kv_dtype == "auto" else kv_dtype)
    state_bytes = _dtype_bytes(model_dtype)
    plan = layer_plan(cfg, layers)
    notes: list[str] = []

    sliding_window = int(cfg["sliding_window"]) if plan.sliding and cfg.get("sliding_window") else None
    if cfg.get("kv_lora_rank"):  # MLA
        latent = int(cfg["kv_lora_rank"]) + int(cfg.get("qk_rope_head_dim") or 0)
        per_token = int(plan.full * latent * dtype_bytes)
        attention, kv_heads, head_dim = "mla", 1, latent
        notes.append("MLA: one latent (kv_lora_rank + qk_rope_head_dim) per layer and token, no K/V pair")
    else:
        per_token = int(2 * plan.full * kv_heads * head_dim * dtype_bytes)
        attention = "mha/gqa"
    sliding_per_token = int(2 * plan.sliding * kv_heads * head_dim * dtype_bytes)
    fixed = sliding_per_token * (sliding_window or 0)
    if plan.linear:
        nk, nv = int(cfg.get("linear_num_key_heads", 16)), int(cfg.get("linear_num_value_heads", 32))
        dk, dv = int(cfg.get("linear_key_head_dim", 128)), int(cfg.get("linear_value_head_dim", 128))
        conv = (2 * nk * dk + nv * dv) * (int(cfg.get("linear_conv_kernel_dim", 4)) - 1)
        fixed += int(plan.linear * (nv * dk * dv + conv) * state_bytes)
        notes.append(f"{plan.linear} linear-attention layers hold a fixed state per sequence")
    if plan.mamba:
        d_inner = int(cfg.get("mamba_expand", 2)) * hidden
        fixed += int(plan.mamba * d_inner * (int(cfg.get("mamba_d_state", 16)) + int(cfg.get("mamba_d_conv", 4)) - 1) * state_bytes)
        notes.append(f"{plan.mamba} Mamba layers hold a fixed state per sequence")
    if plan.sliding:
        notes.append(f"{plan.sliding} sliding-window layers hold at most {sliding_window} tokens per sequence")

    params, per_param = estimate_parameters(config, cfg, hidden, heads, kv_heads, head_dim, layers, plan, weight_dtype)
    return KVCost(
        model=model, layers=layers, kv_heads=kv_heads, head_dim=head_dim, dtype_bytes=dtype_bytes,
        bytes_per_token=per_token, per_sequence_fixed_bytes=fixed, attention=attention, plan=plan,
        sliding_window=sliding_window, sliding_bytes_per_token=sliding_per_token, params=params,
        weight_bytes_per_param=per_param, notes=notes, context_length=context_length(cfg),
    )


def context_length(cfg: dict[str, Any]) -> int | None:
    """The longest sequence the model was built for: max_position_embeddings (or its older names), extended
    by a rope_scaling factor over original_max_position_embeddings where the config sets one (YaRN)."""
    found = _first(cfg, "max_position_embeddings", "n_positions", "max_sequence_length", "seq_length")
    length = int(found) if isinstance(found, (int, float)) and found > 0 else None
    scaling = cfg.get("rope_scaling")
    if isinstance(scaling, dict) and isinstance(scaling.get("factor"), (int, float)) and isinstance(scaling.get("original_max_position_embeddings"), int):
        scaled = int(scaling["original_max_position_embeddings"] * scaling["factor"])
        length = max(length or 0, scaled)
    return length


def estimate_parameters(
    config: dict[str, Any], cfg: dict[str, Any], hidden: int, heads: int, kv_heads: int, head_dim: int,
    layers: int, plan: LayerPlan, weight_dtype: str,
) -> tuple[int, float]:
    """Parameter count from the config's shapes, and bytes per parameter (from the dtype or quantization)."""
    vocab = int(cfg.get("vocab_size") or 0)
    embed = vocab * hidden * (1 if cfg.get("tie_word_embeddings") else 2)
    if cfg.get("kv_lora_rank"):
        nope, rope = int(cfg.get("qk_nope_head_dim", 128)), int(cfg.get("qk_rope_head_dim", 64))
        v_dim, q_rank, kv_rank = int(cfg.get("v_head_dim", 128)), cfg.get("q_lora_rank"), int(cfg["kv_lora_rank"])
        q = hidden * q_rank + q_rank * heads * (nope + rope) if q_rank else hidden * heads * (nope + rope)
        attn = q + hidden * (kv_rank + rope) + kv_rank * heads * (nope + v_dim) + heads * v_dim * hidden
    else:
        attn = hidden * heads * head_dim * 2 + hidden * kv_heads * head_dim * 2
    linear_attn = 0
    if plan.linear:
        nk, nv = int(cfg.get("linear_num_key_heads", 16)), int(cfg.get("linear_num_value_heads", 32))
        dk, dv = int(cfg.get("linear_key_head_dim", 128)), int(cfg.get("linear_value_head_dim", 128))
        linear_attn = 2 * hidden * nk * dk + 3 * hidden * nv * dv + 2 * hidden * nv
    inter = int(cfg.get("intermediate_size") or 4 * hidden)
    experts = int(_first(cfg, "n_routed_experts", "num_local_experts", "num_experts") or 0)
    dense_mlp = 3 * hidden * inter
    if experts:
        moe_inter = int(cfg.get("moe_intermediate_size") or inter)
        shared = int(cfg.get("n_shared_experts") or 0) * 3 * hidden * moe_inter
        shared += 3 * hidden * int(cfg.get("shared_expert_intermediate_size") or 0)
        expert_params = experts * 3 * hidden * moe_inter
        moe_mlp = expert_params + shared + hidden * experts
        dense_layers = int(cfg.get("first_k_dense_replace") or 0)
        mlp_total = dense_layers * dense_mlp + (layers - dense_layers) * moe_mlp
        expert_total = (layers - dense_layers) * expert_params
    else:
        mlp_total, expert_total = layers * dense_mlp, 0
    attn_total = (layers - plan.linear - plan.mamba) * attn + plan.linear * linear_attn
    vision = config.get("vision_config") if isinstance(config.get("vision_config"), dict) else None
    vision_params = 0
    if vision and vision.get("hidden_size"):
        vh, vi = int(vision["hidden_size"]), int(vision.get("intermediate_size") or 4 * vision["hidden_size"])
        vision_params = int(vision.get("num_hidden_layers", 0)) * (4 * vh * vh + 2 * vh * vi)
    total = embed + attn_total + mlp_total + vision_params
    if weight_dtype != "auto":
        return total, _dtype_bytes(weight_dtype)
    quant = config.get("quantization_config") or cfg.get("quantization_config") or {}
    method = str(quant.get("quant_method", "")).lower() if isinstance(quant, dict) else ""
    base = _dtype_bytes(_first(cfg, "torch_dtype", "dtype") or "bfloat16")
    if method == "fp8":
        return total, 1.0
    if method == "mxfp4" and total:  # experts in 4.25-bit MXFP4, everything else in the model dtype
        return total, (expert_total * DTYPE_BYTES["mxfp4"] + (total - expert_total) * base) / total
    return total, base
