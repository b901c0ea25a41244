"""The canonical prompt model: a provider request as the ordered blocks of its cacheable prefix.

Every part of cachelint that reasons about reuse (the diff, the simulators, the proxy, the replay, the
dynamic rules) works on this model, never on raw provider JSON:

    provider request body  --adapter-->  Prompt(model, key params, [Block, ...])  --tokens-->  counts

A Block is one unit of the prefix in the order the provider builds it (tools, then the output schema, then
the system prompt, then the conversation). It keeps a JSON Pointer back into the original body so every
finding can name the exact place. `cache_control` markers are recorded but are not content: moving a
breakpoint does not change the prefix.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Literal

Provider = Literal["anthropic", "openai-chat", "openai-responses"]
Section = Literal["tools", "schema", "system", "messages"]

# Provider prefix order. A change in an earlier section invalidates everything after it.
SECTION_ORDER: dict[str, int] = {"tools": 0, "schema": 1, "system": 2, "messages": 3}


def canonical_text(value: Any) -> str:
    """The text a block contributes: strings as they are, structures as compact JSON in their own key order.

    Key order is kept on purpose: providers hash bytes, so `{"a":1,"b":2}` and `{"b":2,"a":1}` are
    different prefixes.
    """
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def same_json(a: Any, b: Any) -> bool:
    """True when two parsed JSON values serialize to the same bytes: the same types (1, 1.0 and true differ), the
    same values (0.0 and -0.0 differ), the same key order. Python's == says {"a":1,"b":2} == {"b":2,"a":1}; a
    cache does not. Iterative, so any depth the JSON parser accepted is fine. One mutable object found on both
    sides is not taken as equal: it may have been changed in place since the other side was read."""
    stack = [(a, b)]
    pop, push = stack.pop, stack.append
    while stack:
        x, y = pop()
        kind = type(x)
        if kind is not type(y):
            return False
        if kind is str:
            if x != y:
                return False
        elif kind is dict:
            if x is y or len(x) != len(y) or list(x) != list(y):
                return False
            for key, value in x.items():
                other = y[key]
                if type(value) is str:  # most leaves: compared here rather than through the stack
                    if type(other) is not str or value != other:
                        return False
                else:
                    push((value, other))
        elif kind is list:
            if x is y or len(x) != len(y):
                return False
            stack.extend(zip(x, y))
        elif kind is float:
            if x.__repr__() != y.__repr__():
                return False
        elif x != y:
            return False
    return True


def chain_digest(parent: bytes, salt: bytes, block: Block) -> bytes:
    """The hash chain's link for `block` after `parent` (what a prefix cache keys a block by), kept on the block:
    a block the next request took over, after the same prefix, is not hashed again."""
    cached = block._chain
    if cached is not None and cached[0] == parent and cached[1] == salt:
        return cached[2]
    link = hashlib.blake2b(parent + salt + b"\0" + block.digest, digest_size=16).digest()
    object.__setattr__(block, "_chain", (parent, salt, link))
    return link


def key_digest(section: str, kind: str, role: str | None, shape: str, text: str) -> bytes:
    """A 16-byte hash of a block key (see `Block.key`)."""
    head = json.dumps([section, kind, role, shape]).encode()
    return hashlib.blake2b(head + b"\0" + text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


@dataclass(frozen=True, slots=True)
class Block:
    """One unit of the cached prefix."""

    section: Section
    kind: str  # tool, response_format, text, image, document, tool_use, tool_result, thinking, tool_call, ...
    pointer: str  # RFC 6901 pointer into the original body
    value: Any  # the JSON value at `pointer`, with cache_control markers removed
    role: str | None = None  # message role for conversation blocks
    message: int | None = None  # index of the message (or input item) the block belongs to
    shape: Literal["string", "block"] = "block"  # content sent as a bare string or as a typed block
    cache_control: dict[str, Any] | None = None
    tokens: int = 0
    # Computed once per block (a block reused for the next request of a conversation keeps them).
    _text: str | None = field(default=None, init=False, repr=False, compare=False)
    _digest: bytes | None = field(default=None, init=False, repr=False, compare=False)
    _chain: tuple[bytes, bytes, bytes] | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def text(self) -> str:
        text = self._text
        if text is None:
            text = canonical_text(self.value)
            object.__setattr__(self, "_text", text)
        return text

    @property
    def key(self) -> tuple[Any, ...]:
        """What must be equal for two blocks to be the same prefix bytes."""
        return (self.section, self.kind, self.role, self.shape, self.text)

    @property
    def digest(self) -> bytes:
        """A 16-byte hash of `key`: equal digests, equal prefix bytes."""
        digest = self._digest
        if digest is None:
            digest = key_digest(*self.key)
            object.__setattr__(self, "_digest", digest)
        return digest

    def same_place_and_value(self, other: Block) -> bool:
        """The same part of the request at the same place with the same content and marker (cheap to ask: the
        values are compared as parsed, never serialized)."""
        return (
            self.pointer == other.pointer
            and self.kind == other.kind
            and self.role == other.role
            and self.message == other.message
            and self.shape == other.shape
            and self.section == other.section
            and same_json(self.cache_control, other.cache_control)
            and same_json(self.value, other.value)
        )

    @property
    def name(self) -> str | None:
        """A tool's name, for tool blocks."""
        if self.kind == "tool" and isinstance(self.value, dict):
            name = self.value.get("name")
            if name is None and isinstance(self.value.get("function"), dict):
                name = self.value["function"].get("name")
            return name if isinstance(name, str) else None
        return None


@dataclass(slots=True)
class Prompt:
    """A request as the provider's cache sees it."""

    provider: Provider
    model: str | None
    params: dict[str, Any]  # request parameters that are part of the cache key (canonical JSON values)
    blocks: list[Block]
    body: Any = field(repr=False, default=None)
    tokenizer: str = ""  # name of the token counter that filled Block.tokens
    top_level_cache_control: dict[str, Any] | None = None

    @property
    def prompt_tokens(self) -> int:
        return sum(b.tokens for b in self.blocks)

    def section_blocks(self, section: Section) -> list[Block]:
        return [b for b in self.blocks if b.section == section]

    def tokens_before_section(self, section: Section) -> int:
        """Tokens in every section that comes before `section` in the provider's prefix order."""
        limit = SECTION_ORDER[section]
        return sum(b.tokens for b in self.blocks if SECTION_ORDER[b.section] < limit)

    def breakpoints(self) -> list[int]:
        """Indexes of blocks that carry an explicit cache_control marker."""
        return [i for i, b in enumerate(self.blocks) if b.cache_control is not None]
