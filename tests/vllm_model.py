"""Build a tiny random-weight Llama-style model that a real vLLM can serve: `python vllm_model.py OUT_DIR [--max-positions N] [--answer-at-once]`.

Run with the Python of the vLLM environment (it needs torch and transformers). Prefix reuse is a property of
token ids, so random weights do not matter; what matters is a real tokenizer and a chat template that renders
everything a request carries: tools (in their order), tool calls and tool results.
"""

from __future__ import annotations

import json
from pathlib import Path

SPECIAL = ["<s>", "</s>", "<|system|>", "<|user|>", "<|assistant|>", "<|tool|>", "<|tools|>", "<|call|>", "<|end|>"]

CHAT_TEMPLATE = (
    "{{- bos_token -}}"
    "{%- if tools %}<|tools|>{% for t in tools %}{{ t | tojson }}\n{% endfor %}<|end|>\n{% endif -%}"
    "{%- for m in messages -%}"
    "<|{{ m.role }}|>"
    "{%- if m.content is string %}{{ m.content }}"
    "{%- elif m.content %}{% for p in m.content %}{% if p.text is defined %}{{ p.text }}{% endif %}{% endfor %}"
    "{%- endif -%}"
    "{%- if m.tool_calls %}{% for c in m.tool_calls %}<|call|>{{ c.function.name }} "
    "{%- if c.function.arguments is string %}{{ c.function.arguments }}{% else %}{{ c.function.arguments | tojson }}{% endif -%}"
    "{% endfor %}{% endif -%}"
    "<|end|>\n"
    "{%- endfor -%}"
    "{%- if add_generation_prompt %}<|assistant|>{% endif -%}"
)


def training_text() -> list[str]:
    """Text to learn merges from: this repository's own prose and code, so tokens are realistic in length."""
    root = Path(__file__).resolve().parent.parent
    texts = []
    for pattern in ("README.md", "docs/*.md", "cachelint/**/*.py"):
        for path in sorted(root.glob(pattern)):
            texts.append(path.read_text(encoding="utf-8", errors="replace"))
    return texts or ["the quick brown fox jumps over the lazy dog 0123456789"]


def build(out: Path, max_positions: int = 8192, *, answer_at_once: bool = False) -> None:
    """`max_positions`: the longest prompt the model takes (its RoPE table); an agent's prompt (Claude Code's
    system prompt and tools) needs tens of thousands of tokens. `answer_at_once`: the model ends every answer
    with its first token (end-of-turn), at any temperature, so an agent driven against it gets a short, valid
    answer instead of random text up to its output limit; prefill, and so prefix reuse, is unchanged."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=4096, special_tokens=SPECIAL, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False
    )
    tok.train_from_iterator(training_text(), trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<s>", eos_token="<|end|>", unk_token=None, pad_token="</s>",
        additional_special_tokens=SPECIAL[2:],
    )
    fast.chat_template = CHAT_TEMPLATE
    vocab = len(fast)
    config = LlamaConfig(
        vocab_size=vocab,
        hidden_size=256,
        intermediate_size=512,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=64,
        max_position_embeddings=max_positions,
        bos_token_id=fast.bos_token_id,
        eos_token_id=fast.eos_token_id,
        pad_token_id=fast.pad_token_id,
        tie_word_embeddings=not answer_at_once,
        torch_dtype="float32",
    )
    torch.manual_seed(0)
    model = LlamaForCausalLM(config)
    if answer_at_once:
        _end_every_answer(model, fast.eos_token_id)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    fast.save_pretrained(out)
    config_path = out / "tokenizer_config.json"
    data = json.loads(config_path.read_text())
    if "chat_template" not in data and not (out / "chat_template.jinja").exists():
        data["chat_template"] = CHAT_TEMPLATE
        config_path.write_text(json.dumps(data, indent=2))


def _end_every_answer(model, eos: int) -> None:
    """One residual dimension holds a large constant (every token's embedding has it); the final norm keeps only
    that dimension and the output head reads it into the end-of-turn logit alone: that logit is about 300, every
    other 0."""
    import torch

    with torch.no_grad():
        model.model.embed_tokens.weight[:, 0] = 8.0
        model.model.norm.weight.zero_()
        model.model.norm.weight[0] = 1.0
        model.lm_head.weight.zero_()
        model.lm_head.weight[eos, 0] = 20.0


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description="a tiny random-weight model for vLLM")
    parser.add_argument("out")
    parser.add_argument("--max-positions", type=int, default=8192)
    parser.add_argument("--answer-at-once", action="store_true", help="every answer is end-of-turn at once (for agents)")
    args = parser.parse_args()
    build(Path(args.out), args.max_positions, answer_at_once=args.answer_at_once)
    print(args.out)
