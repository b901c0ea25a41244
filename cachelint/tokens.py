"""Token counters for prompt blocks.

- OpenAI models: tiktoken with the model's own encoding (o200k_base for current models).
- Anthropic models: Anthropic publishes no tokenizer. cachelint approximates Claude token counts with
  o200k_base and, where a recorded response carries real usage, reports how far the estimate is from it
  (see `cachelint.prompt.usage.estimate_error`).
- `--tokenizer PATH`: a local Hugging Face model directory, through transformers (exact token ids; the
  diff then also renders the model's chat template, see `cachelint.prompt.chat`).

cachelint never downloads anything to count tokens. tiktoken normally fetches its BPE files over the
network on first use; cachelint instead rebuilds them from the ranks shipped in the `quicktok-v1` wheel,
accepts them only if they match the SHA-256 that tiktoken itself pins for each file, and builds tiktoken's
Encoding from them. The verified definition is cached (marshal, checksummed) in cachelint's own folder
(`~/.cache/cachelint`, 0700, written through a private temporary file), so later runs load it in
milliseconds; an encoding is loaded only when a first text is counted.

Counts are cached by a hash of the block's text, so a growing conversation costs O(new tokens) per
request: only blocks never seen before are tokenized.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import marshal
import os
import tempfile
import threading
import types
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


def cache_dir() -> Path:
    """cachelint's own cache folder, owned by the user and closed to others (0700).

    `CACHELINT_CACHE_DIR`, else `$XDG_CACHE_HOME/cachelint`, else `~/.cache/cachelint`. Never a shared
    temporary folder: a predictable name there lets another user plant a link.
    """
    explicit = os.environ.get("CACHELINT_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "cachelint"


def write_private(path: Path, data: bytes) -> None:
    """Write a file atomically through a private temporary file beside it (O_EXCL, 0600; links never followed)."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _ranks_from_quicktok(name: str) -> dict[bytes, int]:
    """The BPE ranks of `name` from quicktok's shipped tables, accepted only if they rebuild tiktoken's pinned file.

    tiktoken's `<name>.tiktoken` file is one line per token: base64 of its bytes, a space, its rank. The file
    rebuilt from quicktok must have the SHA-256 that tiktoken itself pins for it.
    """
    import quicktok

    enc = quicktok.get_encoding(name)
    ranks: dict[bytes, int] = {}
    lines = []
    for rank in range(enc.n_vocab):
        if enc.is_special_token(rank):
            continue
        try:
            token = enc.decode_single_token_bytes(rank)
        except Exception:  # holes in the rank space
            continue
        ranks[token] = rank
        lines.append(base64.b64encode(token) + b" " + str(rank).encode() + b"\n")
    if hashlib.sha256(b"".join(lines)).hexdigest() != _TIKTOKEN_FILES[name][1]:
        raise CachelintError(f"the bundled {name} ranks do not match tiktoken's pinned hash; reinstall quicktok-v1")
    return ranks


def _tiktoken_definition(name: str, ranks: dict[bytes, int]) -> dict:
    """tiktoken's own definition of `name` (pattern, special tokens) around ranks it did not have to download.

    tiktoken's constructor for an encoding loads its ranks over the network; it is run here on a copy of its
    globals where the loader returns the verified ranks, so the pattern and special tokens stay tiktoken's.
    """
    import tiktoken_ext.openai_public as public

    constructor = getattr(public, name)
    scope = dict(constructor.__globals__, load_tiktoken_bpe=lambda *args, **kwargs: ranks)
    return types.FunctionType(constructor.__code__, scope, constructor.__name__)()


def _cached_definition(name: str) -> dict:
    """The definition of encoding `name`, from cachelint's cache (marshal, checked) or built once and cached."""
    path = cache_dir() / f"tiktoken-{name}-{_TIKTOKEN_FILES[name][1][:16]}.marshal"
    with contextlib.suppress(OSError, ValueError, EOFError, TypeError):
        blob = path.read_bytes()
        digest, payload = blob[:32], blob[32:]
        if hashlib.blake2b(payload, digest_size=32).digest() == digest:
            definition = marshal.loads(payload)
            if isinstance(definition, dict) and definition.get("name") == name:
                return definition
    definition = _tiktoken_definition(name, _ranks_from_quicktok(name))
    payload = marshal.dumps(definition)
    with contextlib.suppress(OSError):  # a read-only home only costs the next run the rebuild
        write_private(path, hashlib.blake2b(payload, digest_size=32).digest() + payload)
    return definition


def load_encoding(name: str):
    """A tiktoken Encoding, offline: verified ranks from quicktok, cached in cachelint's own folder."""
    import tiktoken

    if name not in _TIKTOKEN_FILES:
        try:
            return tiktoken.get_encoding(name)
        except Exception as exc:  # network or unknown encoding
            raise CachelintError(f"cannot load tiktoken encoding {name!r}: {exc}") from None
    return tiktoken.Encoding(**_cached_definition(name))


class TiktokenCounter:
    """Counts with a tiktoken encoding, loaded on the first text to count (a lint run often needs none)."""

    def __init__(self, encoding_name: str, name: str | None = None) -> None:
        self.encoding_name = encoding_name
        self.name = name or encoding_name
        self._encoding = None
        self._load_lock = threading.Lock()
        self._cache = _CountCache(self.encode)

    def encode(self, text: str) -> list[int]:
        encoding = self._encoding
        if encoding is None:
            with self._load_lock:
                if self._encoding is None:
                    self._encoding = load_encoding(self.encoding_name)
                encoding = self._encoding
        return encoding.encode_ordinary(text)

    def count(self, text: str) -> int:
        return self._cache.count(text)


class HFCounter:
    """An exact tokenizer from a local Hugging Face model directory (never downloads)."""

    def __init__(self, path: str) -> None:
        if not Path(path, "tokenizer_config.json").exists() and not Path(path, "tokenizer.json").exists():
            raise CachelintError(f"{path}: not a Hugging Face tokenizer directory (no tokenizer.json)")
        try:
            from cachelint.hf import transformers

            self.tokenizer = transformers("--tokenizer").AutoTokenizer.from_pretrained(path, local_files_only=True)
        except CachelintError:
            raise
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
