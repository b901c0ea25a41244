"""Per-model prompt-cache rules, as data: the one place the simulators read them from.

Every number here comes from /work/shared/reference/providers.md and carries the date of its source. Provider
docs changed these values several times in 2026 (Opus 4.7 went 4096 -> 2048, Sonnet 4.6 2048 -> 1024), so they
are data, not constants in code: pass another table to the simulators to correct one without a release.

Anthropic: minimum cacheable prompt length per model, the "latest copy" column of providers.md §1.5 (the
Anthropic prompt-caching page, latest stored copy: later than the 2026-06-29 capture, the one that lists Opus 5
and Fable 5.1; the fact sheet was compiled 2026-11-29). A prompt whose prefix up to a breakpoint is shorter
than this is not cached, with no error (§1.4).

OpenAI: no per-model table. Automatic caching from 1,024 prompt tokens, hits in 128-token increments
(1,024 + k x 128; providers.md §2.1, OpenAI guide and 2024-10-01 launch post). GPT-5.6 and later cache at
breakpoints instead (§2.2).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

ANTHROPIC_MINIMUMS_SOURCE = (
    "Anthropic prompt-caching docs, latest stored copy (after the 2026-06-29 capture; lists Opus 5 and "
    "Fable/Mythos 5.1), via providers.md §1.5, compiled 2026-11-29"
)
ANTHROPIC_MINIMUMS_AS_OF = "2026-11-29"


@dataclass(frozen=True, slots=True)
class AnthropicCacheRule:
    prefix: str  # model-name prefix, matched by `match_model`
    minimum_tokens: int  # minimum cacheable prompt length (tokens up to and including the breakpoint)
    note: str = ""


# model-name prefix -> minimum cacheable prompt length. The longest matching prefix wins.
ANTHROPIC_CACHE_RULES: tuple[AnthropicCacheRule, ...] = (
    AnthropicCacheRule("claude-fable-5-1", 512),
    AnthropicCacheRule("claude-mythos-5-1", 512),
    AnthropicCacheRule("claude-fable-5", 512),
    AnthropicCacheRule("claude-mythos-5", 512),
    AnthropicCacheRule("claude-opus-5", 512),
    AnthropicCacheRule("claude-sonnet-5", 1024),
    AnthropicCacheRule("claude-mythos-preview", 2048, "Mythos Preview"),
    AnthropicCacheRule("claude-opus-4-8", 1024, "Opus 4.8 launch page: a lower 1,024-token minimum"),
    AnthropicCacheRule("claude-opus-4-7", 2048, "4096 in the 2026-05-04 copy"),
    AnthropicCacheRule("claude-opus-4-6", 4096),
    AnthropicCacheRule("claude-opus-4-5", 4096),
    AnthropicCacheRule("claude-opus-4-1", 1024),
    AnthropicCacheRule("claude-opus-4", 1024, "Opus 4 (claude-opus-4-0, claude-opus-4-20250514)"),
    AnthropicCacheRule("claude-sonnet-4-6", 1024, "2048 in the 2026-05-04 copy; a user saw 2048 (sdk-python#1194)"),
    AnthropicCacheRule("claude-sonnet-4-5", 1024),
    AnthropicCacheRule("claude-sonnet-4", 1024, "Sonnet 4 (claude-sonnet-4-0, claude-sonnet-4-20250514)"),
    AnthropicCacheRule("claude-3-7-sonnet", 1024, "listed only in the 2026-05-04 copy"),
    AnthropicCacheRule("claude-haiku-4-5", 4096),
    AnthropicCacheRule("claude-3-5-haiku", 2048),
    AnthropicCacheRule("claude-3-haiku", 2048, "older copies only"),
)
ANTHROPIC_DEFAULT_MINIMUM = 1024  # unknown Claude models: the most common value in every copy

# Anthropic TTLs (providers.md §1.6): default 5 minutes, optional 1 hour, measured from the start of the request
# that wrote or last read the entry; a read refreshes it.
ANTHROPIC_TTL_SECONDS = {"5m": 300.0, "1h": 3600.0}
ANTHROPIC_MAX_BREAKPOINTS = 4  # §1.3
ANTHROPIC_LOOKBACK_POSITIONS = 20  # §1.4, the breakpoint itself counts as the first

# OpenAI (providers.md §2.1 classic, §2.2 GPT-5.6+).
OPENAI_MINIMUM_TOKENS = 1024
OPENAI_INCREMENT_TOKENS = 128
OPENAI_IN_MEMORY_IDLE_SECONDS = 600.0  # "typically evicted after 5-10 minutes of inactivity": the upper end
OPENAI_IN_MEMORY_MIN_IDLE_SECONDS = 300.0  # the lower end, for explaining a miss
OPENAI_IN_MEMORY_MAX_IDLE_SECONDS = 3600.0  # "max 1 hour"
OPENAI_EXTENDED_SECONDS = 24 * 3600.0  # prompt_cache_retention: "24h"
OPENAI_BREAKPOINT_TTL_SECONDS = 1800.0  # GPT-5.6+: prompt_cache_options.ttl "30m" (a minimum lifetime)
OPENAI_MAX_NEW_WRITES = 4  # GPT-5.6+: new cache writes per request
OPENAI_READ_BREAKPOINTS = 50  # GPT-5.6+: reads consider up to the latest 50 breakpoints
# models whose default retention is 24h and that do not support in_memory (§2.1: gpt-5.5, gpt-5.5-pro, later)
OPENAI_EXTENDED_DEFAULT_PREFIXES = ("gpt-5.5",)
# models that cache at breakpoints (§2.2: "GPT-5.6 and later")
OPENAI_BREAKPOINT_MODEL_PREFIXES = ("gpt-5.6", "gpt-5.7", "gpt-5.8", "gpt-5.9", "gpt-6", "gpt-7")

# request parameters besides the messages and the tools that are part of what a cache matches, per API: Anthropic
# renders tool_choice and the thinking settings into the prompt, and a beta header set changes it (providers.md
# §1; OpenAI's headers key nothing); OpenAI's reasoning effort changes the rendered prompt, and "the structured output schema serves as a prefix
# to the system message" (OpenAI's prompt caching guide), so response_format (Chat Completions) and text.format
# (Responses) do too; prompt_cache_key routes the request to a cache.
CACHE_KEY_PARAMS: dict[str, tuple[str, ...]] = {
    "anthropic": ("model", "tool_choice", "thinking", "extra_headers", "betas"),
    "openai-chat": ("model", "reasoning_effort", "response_format", "prompt_cache_key"),
    "openai-responses": ("model", "reasoning", "text", "prompt_cache_key"),
}

_PROVIDER_PREFIX = re.compile(r"^(?:[a-z0-9_-]+/)+")  # anthropic/, openai/, azure/, vertex_ai/ ...
_REGION_PREFIX = re.compile(r"^(?:[a-z]{2,4}\.)?(?:anthropic|openai)\.")  # Bedrock: us.anthropic.claude-...
# What may follow a table prefix and still be the same model: a snapshot date, a Bedrock version, -latest.
# A version digit (claude-opus-4 + "-9", gpt-5 + ".5") is another model and does not match.
_SAME_MODEL_SUFFIX = re.compile(
    r"(?:-latest|[-@]\d{8}|-\d{4}-\d{2}-\d{2})?(?:-v\d+(?::\d+)?)?(?::[a-z0-9._-]*)?(?:\[1m\])?$"
)


def normalize_model(model: str | None) -> str:
    """A model name as the tables spell it: lower case, without a router or Bedrock region prefix."""
    name = (model or "").strip().lower()
    name = _PROVIDER_PREFIX.sub("", name)
    return _REGION_PREFIX.sub("", name)


def match_model(model: str | None, prefixes) -> str | None:
    """The longest table prefix naming `model` (a dated snapshot or `-latest` alias matches its family)."""
    name = normalize_model(model)
    best = None
    for prefix in prefixes:
        same = name.startswith(prefix) and _SAME_MODEL_SUFFIX.match(name, len(prefix))
        if same and (best is None or len(prefix) > len(best)):
            best = prefix
    return best


def anthropic_rule(
    model: str | None, rules: tuple[AnthropicCacheRule, ...] = ANTHROPIC_CACHE_RULES
) -> AnthropicCacheRule:
    """The cache rule for a Claude model; unknown models get the default minimum."""
    by_prefix = {r.prefix: r for r in rules}
    prefix = match_model(model, by_prefix)
    if prefix:
        return by_prefix[prefix]
    return AnthropicCacheRule(normalize_model(model), ANTHROPIC_DEFAULT_MINIMUM, "unknown model: the default")


def anthropic_minimum(model: str | None, rules: tuple[AnthropicCacheRule, ...] = ANTHROPIC_CACHE_RULES) -> int:
    return anthropic_rule(model, rules).minimum_tokens


def openai_cacheable(tokens: int) -> int:
    """How much of a common prefix of `tokens` tokens OpenAI's classic caching can read: 0 below 1,024, then
    1,024 + k x 128 (the guide's example: a 2,006-token prompt repeated reads 1,920)."""
    if tokens < OPENAI_MINIMUM_TOKENS:
        return 0
    return OPENAI_MINIMUM_TOKENS + (tokens - OPENAI_MINIMUM_TOKENS) // OPENAI_INCREMENT_TOKENS * OPENAI_INCREMENT_TOKENS


def _family(model: str | None, prefixes: tuple[str, ...]) -> bool:
    name = normalize_model(model)
    return any(name == p or name.startswith((p + "-", p + ".")) for p in prefixes)


# Models that cache no prompt at all: OpenAI's automatic caching is "enabled for gpt-4o and newer" (providers.md
# §2.1; Azure: "all Azure OpenAI models GPT-4o or newer"), except the first gpt-4o snapshot, gpt-4o-2024-05-13; and
# Anthropic's prompt caching began with the Claude 3 family, but not all of it: it launched for Claude 3.5 Sonnet and
# Claude 3 Haiku, then Claude 3 Opus, and never covered Claude 3 Sonnet (Anthropic's launch of 2024-08-14: "in public
# beta for Claude 3.5 Sonnet and Claude 3 Haiku, with support for Claude 3 Opus coming soon"; later lists add the 3.5
# Haiku and the Claude 4 family). A request to one of them has nothing to break.
UNCACHED_MODEL_PREFIXES = (
    "claude-instant", "claude-instant-1", "claude-instant-1.1", "claude-instant-1.2", "claude-1", "claude-2", "claude-2.0", "claude-2.1",
    "claude-3-sonnet",
    "claude-v1", "claude-v2", "claude-instant-v1",
    "gpt-3.5-turbo", "gpt-3.5-turbo-16k", "gpt-3.5-turbo-instruct", "gpt-3.5-turbo-0125", "gpt-3.5-turbo-1106", "gpt-3.5-turbo-0613",
    "gpt-4", "gpt-4-0314", "gpt-4-0613", "gpt-4-32k", "gpt-4-turbo", "gpt-4-turbo-preview", "gpt-4-1106-preview",
    "gpt-4-0125-preview", "gpt-4-vision-preview", "gpt-4o-2024-05-13", "text-davinci-003", "davinci-002", "babbage-002",
)


def caches_prompts(model: str | None) -> bool:
    """False for a model known to cache nothing (UNCACHED_MODEL_PREFIXES); True for every other name, an unknown or
    absent one included."""
    return not model or match_model(model, UNCACHED_MODEL_PREFIXES) is None


def openai_uses_breakpoints(model: str | None) -> bool:
    """GPT-5.6 and later cache at breakpoints (providers.md §2.2)."""
    return _family(model, OPENAI_BREAKPOINT_MODEL_PREFIXES)


def openai_default_retention(model: str | None) -> str:
    """"24h" for models whose default is extended retention (gpt-5.5 and later), else "in_memory"."""
    if _family(model, OPENAI_EXTENDED_DEFAULT_PREFIXES) or openai_uses_breakpoints(model):
        return "24h"
    return "in_memory"


def common_prefix_hashes(a: list[bytes], b: list[bytes]) -> int:
    """Blocks two prompts share from the start. Hashes are cumulative, so equality is monotone: binary search."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[mid - 1] == b[mid - 1]:
            lo = mid
        else:
            hi = mid - 1
    return lo
