"""`--tokenizer PATH`: exact token ids and the model's chat template, from a local Hugging Face directory."""

from __future__ import annotations

import json

import pytest

from bodies import openai_chat_body
from test_cli import cachelint, write

TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}"
    "{% if m.get('tool_calls') %}{% for c in m['tool_calls'] %}<call>{{ c['function']['name'] }} {{ c['function']['arguments'] }}{% endfor %}{% endif %}"
    "<|end|>\n{% endfor %}"
)


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory):
    """A small word-level tokenizer with a chat template, trained here (nothing is downloaded)."""
    tokenizers = pytest.importorskip("tokenizers")
    transformers = pytest.importorskip("transformers")
    from bodies import anthropic_body, openai_responses_body

    corpus = [json.dumps(b) for b in (openai_chat_body(), anthropic_body(), openai_responses_body())]
    tok = tokenizers.Tokenizer(tokenizers.models.WordLevel(unk_token="[UNK]"))
    tok.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    trainer = tokenizers.trainers.WordLevelTrainer(special_tokens=["[UNK]", "<|end|>"])
    tok.train_from_iterator(corpus, trainer)
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", eos_token="<|end|>")
    fast.chat_template = TEMPLATE
    path = tmp_path_factory.mktemp("tiny-model")
    fast.save_pretrained(path)
    return path, fast


def rendered_ids(fast, body):
    from cachelint.prompt import Exchange, build_prompt
    from cachelint.prompt.chat import to_chat

    messages, tools = to_chat(build_prompt(Exchange(body)))
    ids = fast.apply_chat_template(messages, tools=tools or None, tokenize=True)
    return list(ids["input_ids"] if hasattr(ids, "keys") else ids)


def test_exact_tokens_through_the_chat_template(tmp_path, tokenizer_dir):
    path, fast = tokenizer_dir
    before = openai_chat_body()
    after = openai_chat_body()
    after["messages"].append({"role": "assistant", "content": "Sunny tomorrow."})
    out = cachelint("diff", write(tmp_path, "a.json", before), write(tmp_path, "b.json", after), "--tokenizer", str(path), "--format", "json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    ids_b, ids_a = rendered_ids(fast, before), rendered_ids(fast, after)
    assert data["token_source"] == "chat_template"
    assert data["tokenizer"].startswith("hf:")
    assert (data["before_prompt_tokens"], data["after_prompt_tokens"]) == (len(ids_b), len(ids_a))
    assert data["cause"] == "none" and data["common_prefix_tokens"] == len(ids_b)


def test_exact_common_prefix_stops_at_the_edit(tmp_path, tokenizer_dir):
    path, fast = tokenizer_dir
    before, after = openai_chat_body(), openai_chat_body()
    after["messages"][1]["content"] = "Prefer imperial units."
    out = cachelint("diff", write(tmp_path, "a.json", before), write(tmp_path, "b.json", after), "--tokenizer", str(path), "--format", "json")
    data = json.loads(out.stdout)
    ids_b, ids_a = rendered_ids(fast, before), rendered_ids(fast, after)
    shared = next(i for i, (x, y) in enumerate(zip(ids_b, ids_a)) if x != y)
    assert data["cause"] == "system_changed"
    assert data["common_prefix_tokens"] == shared
    assert data["reprefilled_tokens"] == min(len(ids_b), len(ids_a)) - shared


def test_not_a_tokenizer_directory(tmp_path):
    body = write(tmp_path, "a.json", openai_chat_body())
    out = cachelint("diff", body, body, "--tokenizer", str(tmp_path))
    assert out.returncode == 2 and "not a Hugging Face tokenizer directory" in out.stderr
