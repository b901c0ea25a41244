"""Token counters for prompt blocks.

- OpenAI models: tiktoken with the model's own encoding (o200k_base for current models).
- Anthropic models: Anthropic publishes no tokenizer. cachelint approximates Claude token counts with
  o200k_base and, where a recorded response carries real usage, reports how far the estimate is from it
  (see `cachelint.prompt.usage.estimate_error`).
- `--tokenizer PATH`: a local Hugging Face model directory, through transformers (exact token ids; the
  diff then also renders the model's chat template, see `cachelint.prompt.chat`).

cachelint never downloads anything to count tokens. tiktoken normally fetches its BPE files over the
network on first use; cachelint instead rebuilds them from the ranks shipped in the `quicktok-v1` wheel,
checks them against the SHA-256 that tiktoken itself pins for each file, and seeds tiktoken's cache with
them. tiktoken then loads them as if it had downloaded them.

Counts are cached by a hash of the block's text, so a growing conversation costs O(new tokens) per
request: only blocks never seen before are tokenized.
"""

from __future__ import annotations

import base64
import hashlib
import os
import tempfile
import threading
from collections import OrderedDict
from functools import lru_cache
from pathlib import Path
from typing import Protocol

from cachelint.errors import CachelintError

# tiktoken's own URLs and pinned hashes (tiktoken_ext/openai_public.py); the cache file name is sha1(url).
_TIKTOKEN_FILES = {
    "o200k_base": (
        "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    ),
    "cl100k_base": (
        "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    ),
}
ANTHROPIC_APPROXIMATION = "o200k_base"
DEFAULT_ENCODING = "o200k_base"
_CACHE_ENTRIES = 200_000


class TokenCounter(Protocol):
    name: str

    def encode(self, text: str) -> list[int]: ...

    def count(self, text: str) -> int: ...


class _CountCache:
    """An LRU map from a text's content hash to its token count."""

    def __init__(self, encode, max_entries: int = _CACHE_ENTRIES) -> None:
        self._encode = encode
        self._counts: OrderedDict[bytes, int] = OrderedDict()
        self._max = max_entries
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def count(self, text: str) -> int:
        if not text:
            return 0
        digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
        with self._lock:
            cached = self._counts.get(digest)
            if cached is not None:
                self._counts.move_to_end(digest)
                self.hits += 1
                return cached
        n = len(self._encode(text))
        with self._lock:
            self.misses += 1
            self._counts[digest] = n
            if len(self._counts) > self._max:
                self._counts.popitem(last=False)
        return n


def _tiktoken_cache_dir() -> str:
    """Where tiktoken looks for its files (mirrors tiktoken.load.read_file_cached)."""
    if "TIKTOKEN_CACHE_DIR" in os.environ:
        return os.environ["TIKTOKEN_CACHE_DIR"]
    if "DATA_GYM_CACHE_DIR" in os.environ:
        return os.environ["DATA_GYM_CACHE_DIR"]
    return os.path.join(tempfile.gettempdir(), "data-gym-cache")


def _bpe_file_from_quicktok(name: str) -> bytes:
    """Rebuild tiktoken's `<name>.tiktoken` file (base64 token, space, rank) from quicktok's shipped ranks."""
    import quicktok

    enc = quicktok.get_encoding(name)
    lines = []
    for rank in range(enc.n_vocab):
        if enc.is_special_token(rank):
            continue
        try:
            token = enc.decode_single_token_bytes(rank)
        except Exception:  # holes in the rank space
            continue
        lines.append(base64.b64encode(token) + b" " + str(rank).encode() + b"\n")
    return b"".join(lines)


def seed_tiktoken_cache(name: str) -> None:
    """Make `tiktoken.get_encoding(name)` work offline by placing the verified BPE file in its cache."""
    if name not in _TIKTOKEN_FILES:
        return
    url, expected = _TIKTOKEN_FILES[name]
    cache_dir = _tiktoken_cache_dir()
    if cache_dir == "":
        return
    path = Path(cache_dir) / hashlib.sha1(url.encode()).hexdigest()
    if path.exists():
        return
    data = _bpe_file_from_quicktok(name)
    if hashlib.sha256(data).hexdigest() != expected:
        raise CachelintError(f"the bundled {name} ranks do not match tiktoken's pinned hash; reinstall quicktok-v1")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


class TiktokenCounter:
    def __init__(self, encoding_name: str, name: str | None = None) -> None:
        import tiktoken

        seed_tiktoken_cache(encoding_name)
        try:
            self._encoding = tiktoken.get_encoding(encoding_name)
        except Exception as exc:  # network or unknown encoding
            raise CachelintError(f"cannot load tiktoken encoding {encoding_name!r}: {exc}") from None
        self.name = name or encoding_name
        self._cache = _CountCache(self.encode)

    def encode(self, text: str) -> list[int]:
        return self._encoding.encode_ordinary(text)

    def count(self, text: str) -> int:
        return self._cache.count(text)


class HFCounter:
    """An exact tokenizer from a local Hugging Face model directory (never downloads)."""

    def __init__(self, path: str) -> None:
        if not Path(path, "tokenizer_config.json").exists() and not Path(path, "tokenizer.json").exists():
            raise CachelintError(f"{path}: not a Hugging Face tokenizer directory (no tokenizer.json)")
        try:
            from cachelint.hf import transformers

            self.tokenizer = transformers().AutoTokenizer.from_pretrained(path, local_files_only=True)
        except Exception as exc:
            raise CachelintError(f"cannot load the tokenizer in {path}: {str(exc).splitlines()[0]}") from None
        self.name = f"hf:{Path(path).resolve()}"  # the whole path: two folders of the same name are two tokenizers
        self._cache = _CountCache(self.encode)

    def encode(self, text: str) -> list[int]:
        return self.tokenizer.encode(text, add_special_tokens=False)

    def count(self, text: str) -> int:
        return self._cache.count(text)

    def chat_ids(self, messages: list[dict], tools: list[dict] | None = None) -> list[int]:
        """Token ids of a conversation rendered with the model's own chat template."""
        try:
            rendered = self.tokenizer.apply_chat_template(messages, tools=tools or None, tokenize=True)
        except Exception as exc:
            raise CachelintError(f"{self.name}: cannot render the chat template: {str(exc).splitlines()[0]}") from None
        if hasattr(rendered, "keys") and "input_ids" in rendered:
            rendered = rendered["input_ids"]
        return list(rendered)


@lru_cache(maxsize=8)
def tiktoken_counter(encoding_name: str, name: str | None = None) -> TiktokenCounter:
    return TiktokenCounter(encoding_name, name)


@lru_cache(maxsize=4)
def hf_counter(path: str) -> HFCounter:
    return HFCounter(path)


def encoding_for_model(model: str | None) -> str:
    if not model:
        return DEFAULT_ENCODING
    import tiktoken

    try:
        name = tiktoken.encoding_name_for_model(model)
    except KeyError:
        return DEFAULT_ENCODING
    return name if name in _TIKTOKEN_FILES else DEFAULT_ENCODING


def counter_for(provider: str, model: str | None, tokenizer_path: str | None = None) -> TokenCounter:
    """The token counter cachelint uses for a request."""
    if tokenizer_path:
        return hf_counter(str(Path(tokenizer_path).resolve()))
    if provider == "anthropic":
        return tiktoken_counter(ANTHROPIC_APPROXIMATION, f"anthropic-approx({ANTHROPIC_APPROXIMATION})")
    return tiktoken_counter(encoding_for_model(model))
