"""Token prices as data: a bundled, dated table for Anthropic and OpenAI models, or LiteLLM's price file.

All prices are USD per million tokens (MTok): input (uncached), cache write 5 minutes, cache write 1 hour, cache
read, output. `PRICES` below is the only place they are written down; each row names its source.

- Anthropic (the pricing page and the model overview pages, checked 2026-12-01; providers.md §1.7): a 5-minute
  write costs 1.25x the input price, a 1-hour write 2x, a read 0.1x, except Fable/Mythos 5.1 (0.025x), Opus 5.5
  and Sonnet 5.5 (0.05x) and Claude 3 Haiku (its own column values). Haiku 5.5 has a second band for prompts over
  100,000 tokens.
- OpenAI (model pages, the pricing page as quoted, the caching cookbook): no cache-write fee before GPT-5.6, so
  both write columns equal the input price; GPT-5.6 and later bill writes at 1.25x input. Codex and mini variants
  have rows of their own (a `-codex` name is not its base model's). Rows only third parties confirm say so.
- Not modelled: long-context surcharges (over 200k input tokens), Batch and priority tiers, data residency.
- An unknown model has no price: `lookup` returns None, `cost` raises, and every caller reports "unknown".

`cost(model, usage)` prices a `cachelint.prompt.usage.Usage` (or a simulator `Prediction.to_usage()`): uncached
input = prompt - read - written (Anthropic's `input_tokens`; for OpenAI GPT-5.6+ the written tokens are assumed
to be part of `prompt_tokens`, as the cached ones are, which OpenAI does not state).

`load_litellm_prices(path)` reads LiteLLM's `model_prices_and_context_window.json` (keys per model:
`input_cost_per_token`, `output_cost_per_token`, `cache_creation_input_token_cost`, `cache_read_input_token_cost`,
optionally `cache_creation_input_token_cost_above_1hr`) into a table that replaces the bundled one. A Claude row
without the 1-hour key is priced at 2x input for 1-hour writes, not at the 5-minute rate.
"""

from __future__ import annotations

import datetime as _dt
import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cachelint.prompt.load import read_json
from cachelint.errors import CachelintError
from cachelint.prompt.usage import Usage
from cachelint.simulate.models import match_model, normalize_model

PRICES_AS_OF = "2026-12-01"
MTOK = 1_000_000


@dataclass(frozen=True, slots=True)
class Price:
    """USD per MTok for one model (or model-name prefix)."""

    model: str
    provider: str  # "anthropic" | "openai" | LiteLLM's provider name
    input: float
    cache_write_5m: float
    cache_write_1h: float
    cache_read: float
    output: float
    source: str = ""
    # a second price band for long prompts (Haiku 5.5: prompts over 100,000 tokens, reads and writes counted, pay
    # the higher band on every token of the request, output included)
    long_prompt_tokens: int | None = None
    long_prompt: Price | None = None

    @property
    def read_multiplier(self) -> float:
        return self.cache_read / self.input if self.input else 0.0

    def band(self, prompt_tokens: int) -> Price:
        """The band a request of `prompt_tokens` input tokens is billed at."""
        if self.long_prompt is not None and self.long_prompt_tokens is not None and prompt_tokens > self.long_prompt_tokens:
            return self.long_prompt
        return self


@dataclass(frozen=True, slots=True)
class Cost:
    """What one request cost, in USD."""

    input: float
    cache_write: float
    cache_read: float
    output: float

    @property
    def total(self) -> float:
        return self.input + self.cache_write + self.cache_read + self.output

    def to_json(self) -> dict[str, float]:
        return {"input": self.input, "cache_write": self.cache_write, "cache_read": self.cache_read,
                "output": self.output, "total": self.total}


# Sources, as checked on 2026-12-01 (docs/provider-truth.md gives the addresses and what each page said).
_A_PRICING = "Anthropic pricing page (platform.claude.com/docs/en/about-claude/pricing, model pricing table)"
_A_MODEL = "Anthropic model overview page (platform.claude.com/docs/.../models/<model>/overview), pricing box"
_A_CUT = _A_MODEL + "; cache reads 0.05x from 2026-10-07 (pricing-page changelog as quoted by claudit v1.9.2)"
_A_OLD = "Anthropic pricing page, older copy (Claude 3 models)"
_O_MODEL = "OpenAI model page (developers.openai.com/api/docs/models/<model>), text tokens"
_O_COOKBOOK = "OpenAI caching cookbook (providers.md §2.1): input and cached input; output: OpenAI pricing page"
_O_PAGE = "OpenAI pricing page (developers.openai.com/api/docs/pricing) as quoted by public price tables, 2026"
_O_56 = ("OpenAI GPT-5.6 preview (help center, quoted by several public posts 2026-06-27): input/output; cached "
         "input 0.1x and cache writes 1.25x input (OpenAI prompt-caching guide, GPT-5.6+)")
_O_THIRD = "third-party copies of OpenAI's price (OpenRouter, GitHub Copilot docs) [unconfirmed on OpenAI's page]"


def _anthropic(prefix: str, input_: float, output: float, source: str, read_multiplier: float = 0.1,
               long_prompt: tuple[int, float, float] | None = None) -> Price:
    """A Claude row: 5-minute writes 1.25x input, 1-hour writes 2x, reads `read_multiplier` x (providers.md §1.7)."""
    band = None
    if long_prompt is not None:
        threshold, long_input, long_output = long_prompt
        band = _anthropic(prefix, long_input, long_output, source, read_multiplier)
    return Price(prefix, "anthropic", input_, round(input_ * 1.25, 6), round(input_ * 2.0, 6),
                 round(input_ * read_multiplier, 6), output, source,
                 long_prompt[0] if long_prompt else None, band)


def _openai(prefix: str, input_: float, cached: float, output: float, source: str, write: float | None = None) -> Price:
    """An OpenAI row. No cache-write fee before GPT-5.6 (both write columns are the input price); GPT-5.6 and later
    bill writes (`write`, 1.25x input)."""
    write = input_ if write is None else write
    return Price(prefix, "openai", input_, write, write, cached, output, source)


# THE price table: model-name prefix -> USD per MTok. The longest matching prefix wins (dated snapshots and
# `-latest` aliases match their family; another version number does not). A model that is not here has no
# price: its cost is None ("unknown"), never $0.
PRICES: tuple[Price, ...] = (
    # Anthropic: the pricing page's table (every row follows the 1.25x / 2x multipliers; reads 0.1x except where noted)
    _anthropic("claude-fable-5-1", 10.0, 50.0, _A_PRICING + "; reads 0.025x", 0.025),
    _anthropic("claude-mythos-5-1", 10.0, 50.0, _A_PRICING + "; reads 0.025x", 0.025),
    _anthropic("claude-fable-5", 10.0, 50.0, _A_PRICING),
    _anthropic("claude-mythos-5", 10.0, 50.0, _A_PRICING),
    _anthropic("claude-opus-5-5", 4.0, 20.0, _A_MODEL + " (5m $5, 1h $8, read $0.20: 0.05x)", 0.05),
    _anthropic("claude-opus-5", 5.0, 25.0, _A_PRICING),
    _anthropic("claude-opus-4-8", 5.0, 25.0, _A_PRICING),
    _anthropic("claude-opus-4-7", 5.0, 25.0, _A_PRICING),
    _anthropic("claude-opus-4-6", 5.0, 25.0, _A_PRICING),
    _anthropic("claude-opus-4-5", 5.0, 25.0, _A_PRICING),
    _anthropic("claude-opus-4-1", 15.0, 75.0, _A_PRICING),
    _anthropic("claude-opus-4", 15.0, 75.0, _A_PRICING),
    _anthropic("claude-sonnet-5-5", 2.0, 10.0, _A_CUT, 0.05),
    # Sonnet 5: $2 in the pricing page and the model overview; some third-party code calls it an introductory price
    _anthropic("claude-sonnet-5", 2.0, 10.0, _A_PRICING),
    _anthropic("claude-sonnet-4-6", 3.0, 15.0, _A_PRICING),
    _anthropic("claude-sonnet-4-5", 3.0, 15.0, _A_PRICING),
    _anthropic("claude-sonnet-4", 3.0, 15.0, _A_PRICING),
    _anthropic("claude-3-7-sonnet", 3.0, 15.0, _A_PRICING + " (deprecated)"),
    _anthropic("claude-haiku-5-5", 0.10, 0.50, _A_MODEL + "; prompts over 100,000 tokens: $0.50 / $2.50",
               long_prompt=(100_000, 0.50, 2.50)),
    _anthropic("claude-haiku-4-5", 1.0, 5.0, _A_PRICING),
    _anthropic("claude-3-5-haiku", 0.8, 4.0, _A_PRICING),
    # Haiku 3 is the one row off the multipliers: 5m $0.30, 1h $0.50, read $0.03 (pricing page)
    Price("claude-3-haiku", "anthropic", 0.25, 0.30, 0.50, 0.03, 1.25, _A_OLD),
    # OpenAI
    _openai("gpt-4o", 2.5, 1.25, 10.0, _O_COOKBOOK),
    _openai("gpt-4o-mini", 0.15, 0.075, 0.6, _O_PAGE),
    _openai("gpt-4.1", 2.0, 0.5, 8.0, _O_COOKBOOK),
    _openai("gpt-4.1-mini", 0.4, 0.1, 1.6, _O_PAGE),
    _openai("gpt-4.1-nano", 0.1, 0.025, 0.4, _O_PAGE),
    _openai("gpt-5", 1.25, 0.125, 10.0, _O_PAGE),
    _openai("gpt-5-codex", 1.25, 0.125, 10.0, _O_MODEL),
    _openai("gpt-5-mini", 0.25, 0.025, 2.0, _O_PAGE),
    _openai("gpt-5-nano", 0.05, 0.005, 0.4, _O_COOKBOOK),
    _openai("gpt-5.1", 1.25, 0.125, 10.0, _O_PAGE),
    _openai("gpt-5.1-codex", 1.25, 0.125, 10.0, _O_THIRD),
    _openai("gpt-5.1-codex-max", 1.25, 0.125, 10.0, _O_THIRD),
    _openai("gpt-5.1-codex-mini", 0.25, 0.025, 2.0, _O_THIRD),
    _openai("gpt-5.2", 1.75, 0.175, 14.0, _O_COOKBOOK),
    _openai("gpt-5.2-codex", 1.75, 0.175, 14.0, _O_THIRD),
    _openai("gpt-5.3-codex", 1.75, 0.175, 14.0, _O_THIRD),
    _openai("gpt-5.4", 2.5, 0.25, 15.0, _O_PAGE),
    _openai("gpt-5.4-mini", 0.75, 0.075, 4.5, _O_PAGE),
    _openai("gpt-5.4-nano", 0.2, 0.02, 1.25, _O_PAGE),
    _openai("gpt-5.5", 5.0, 0.5, 30.0, _O_PAGE),
    _openai("gpt-5.6-sol", 5.0, 0.5, 30.0, _O_56, write=6.25),
    _openai("gpt-5.6-terra", 2.5, 0.25, 15.0, _O_56, write=3.125),
    _openai("gpt-5.6-luna", 1.0, 0.1, 6.0, _O_56, write=1.25),
    _openai("codex-mini-latest", 1.5, 0.375, 6.0, _O_MODEL),
    _openai("o1", 15.0, 7.5, 60.0, _O_PAGE),
    _openai("o3", 2.0, 0.5, 8.0, _O_PAGE),
    _openai("o4-mini", 1.1, 0.275, 4.4, _O_PAGE),
)


class PriceTable:
    """Prices by model name: an exact name first, then the longest table prefix, then `fallback`."""

    def __init__(self, prices: Iterable[Price], *, source: str, as_of: str, fallback: PriceTable | None = None) -> None:
        self.source = source
        self.as_of = as_of
        self.fallback = fallback
        self.exact: dict[str, Price] = {}
        self.by_name: dict[str, Price] = {}
        self._memo: dict[str, Price | None] = {}
        for price in prices:
            self.exact.setdefault(price.model.lower(), price)
            self.by_name.setdefault(normalize_model(price.model), price)

    def __len__(self) -> int:
        return len(self.exact)

    def lookup(self, model: str | None) -> Price | None:
        if model:
            raw = model.strip().lower()
            if raw not in self._memo:
                found = self.exact.get(raw) or self.by_name.get(normalize_model(raw))
                if found is None:
                    prefix = match_model(raw, self.by_name)
                    found = self.by_name[prefix] if prefix else None
                self._memo[raw] = found
            if self._memo[raw] is not None:
                return self._memo[raw]
        return self.fallback.lookup(model) if self.fallback else None

    def price(self, model: str | None) -> Price:
        found = self.lookup(model)
        if found is None:
            raise CachelintError(f"no price for model {model!r} in {self.source} (as of {self.as_of}); "
                                 "pass a LiteLLM price file")
        return found

    def cost(self, model: str | None, usage: Usage) -> Cost:
        return price_usage(self.price(model), usage)


BUNDLED = PriceTable(PRICES, source="cachelint's bundled price table", as_of=PRICES_AS_OF)


def price_usage(price: Price, usage: Usage) -> Cost:
    """Price one request's usage. Unsplit writes are 5-minute writes (Anthropic's default TTL). A model with a
    long-prompt band (Haiku 5.5) is priced at the band the request's prompt falls in."""
    price = price.band(usage.prompt_tokens)
    w5, w1 = usage.cache_write_5m_tokens, usage.cache_write_1h_tokens
    if w5 is None and w1 is None:
        w5, w1 = usage.cache_write_tokens, 0
    w5, w1 = w5 or 0, w1 or 0
    w5 += max(usage.cache_write_tokens - w5 - w1, 0)
    uncached = max(usage.prompt_tokens - usage.cache_read_tokens - w5 - w1, 0)
    return Cost(
        input=uncached * price.input / MTOK,
        cache_write=(w5 * price.cache_write_5m + w1 * price.cache_write_1h) / MTOK,
        cache_read=usage.cache_read_tokens * price.cache_read / MTOK,
        output=(usage.output_tokens or 0) * price.output / MTOK,
    )


def lookup(model: str | None, table: PriceTable | None = None) -> Price | None:
    return (table or BUNDLED).lookup(model)


def cost(model: str | None, usage: Usage, table: PriceTable | None = None) -> Cost:
    """What `usage` cost at `model`'s prices; CachelintError for a model the table does not know."""
    return (table or BUNDLED).cost(model, usage)


# --- LiteLLM's price file ---------------------------------------------------------------------------------------

_LITELLM_FIELDS = (
    "input_cost_per_token", "output_cost_per_token", "cache_creation_input_token_cost",
    "cache_read_input_token_cost", "cache_creation_input_token_cost_above_1hr",
)
_CANONICAL_PROVIDERS = ("anthropic", "openai", "text-completion-openai")


def _per_token(path: Path, model: str, spec: dict[str, Any], name: str) -> float | None:
    value = spec.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise CachelintError(f"{path}: {model}: {name} is {value!r}, not a non-negative number")
    return float(value) * MTOK


def load_litellm_prices(path: str | Path, *, fallback: PriceTable | None = None) -> PriceTable:
    """A price table from LiteLLM's `model_prices_and_context_window.json` (per-token USD), usable in place of
    `BUNDLED` (pass `fallback=BUNDLED` to keep the bundled rows for models the file lacks). Rows without both an
    input and an output price (images, embeddings, `sample_spec`) are skipped; a malformed file or price raises
    CachelintError."""
    path = Path(path)
    data = read_json(path)
    if not isinstance(data, dict):
        kind = type(data).__name__
        raise CachelintError(f"{path}: not a LiteLLM price file (expected a JSON object of models, got a {kind})")
    prices: list[Price] = []
    for model, spec in data.items():
        if model == "sample_spec" or not isinstance(spec, dict):
            continue
        costs = {name: _per_token(path, model, spec, name) for name in _LITELLM_FIELDS}
        input_, output = costs["input_cost_per_token"], costs["output_cost_per_token"]
        if input_ is None or output is None:
            continue
        provider = spec.get("litellm_provider") if isinstance(spec.get("litellm_provider"), str) else ""
        claude = provider == "anthropic" or "claude" in model.lower()
        write_5m = costs["cache_creation_input_token_cost"]
        if write_5m is None:
            write_5m = input_ * 1.25 if claude else input_
        write_1h = costs["cache_creation_input_token_cost_above_1hr"]
        if write_1h is None:
            write_1h = input_ * 2.0 if claude else write_5m
        read = costs["cache_read_input_token_cost"]
        if read is None:
            read = input_ * 0.1 if claude else input_
        provider = provider or ("anthropic" if claude else "")
        prices.append(Price(model, provider, input_, write_5m, write_1h, read, output, f"LiteLLM {path.name}"))
    if not prices:
        raise CachelintError(
            f"{path}: no model with input_cost_per_token and output_cost_per_token: not a LiteLLM price file"
        )
    # the provider's own row wins over a router's copy of the same model name
    prices.sort(key=lambda p: p.provider not in _CANONICAL_PROVIDERS)
    try:
        as_of = _dt.datetime.fromtimestamp(path.stat().st_mtime, _dt.UTC).date().isoformat()
    except OSError:
        as_of = "unknown"
    return PriceTable(prices, source=f"LiteLLM price file {path}", as_of=as_of, fallback=fallback)


# --- wasted prefill ---------------------------------------------------------------------------------------------


def wasted_prefill_usd(tokens: int, model: str | None, table: PriceTable | None = None, *, ttl: str = "5m",
                       prompt_tokens: int = 0, one_hour_tokens: int = 0) -> float | None:
    """What prefilling `tokens` again cost over reading them from cache, by the provider's own billing rule, or
    None for a model without a price (unknown is not $0):

    - Anthropic: the tokens were written (a 5-minute write, or a 1-hour one with `ttl="1h"`) instead of read.
    - OpenAI: they were billed as input instead of cached input; GPT-5.6 and later bill them as a cache write
      (1.25x input) where they are written, which is what the write column of their row holds.

    `prompt_tokens` picks the price band of a model with one (Haiku 5.5 over 100,000 tokens); `one_hour_tokens`
    of the `tokens` were written again as 1-hour entries (the request's own cache_creation split)."""
    price = lookup(model, table)
    if price is None:
        return None
    price = price.band(prompt_tokens)
    tokens = max(tokens, 0)
    one_hour = tokens if ttl == "1h" else min(max(one_hour_tokens, 0), tokens)
    return (one_hour * max(price.cache_write_1h - price.cache_read, 0.0)
            + (tokens - one_hour) * max(price.cache_write_5m - price.cache_read, 0.0)) / MTOK


def anthropic_base_price(model: str | None) -> float | None:
    """Base input price (USD/MTok) for a Claude model; None for a model the table does not price."""
    found = BUNDLED.lookup(model)
    return found.input if found is not None and found.provider == "anthropic" else None
