"""Input prices and cache multipliers, as data (providers.md, Anthropic's pricing table).

Prices are USD per million input tokens. Cache writes cost 1.25x (5 minutes) or 2x (1 hour) the base input
price on Anthropic; reads cost 0.1x.
"""

from __future__ import annotations

ANTHROPIC_WRITE_5M = 1.25
ANTHROPIC_WRITE_1H = 2.0
ANTHROPIC_READ = 0.1

# model-name prefix -> base input price per MTok
ANTHROPIC_BASE_PRICES = {
    "claude-opus-4": 5.0,  # Opus 4.5 - 4.8 (Opus 4 / 4.1 were 15.0; not distinguished here)
    "claude-opus-5": 5.0,
    "claude-sonnet-5": 2.0,
    "claude-sonnet-4": 3.0,
    "claude-haiku-4": 1.0,
    "claude-3-5-haiku": 0.8,
}


def anthropic_base_price(model: str | None) -> float:
    """Base input price for a Claude model (falls back to Sonnet 4's)."""
    name = (model or "").lower()
    for prefix, price in ANTHROPIC_BASE_PRICES.items():
        if name.startswith(prefix):
            return price
    return 3.0


def wasted_prefill_usd(tokens: int, model: str | None) -> float:
    """What re-prefilling `tokens` costs over reading them from cache: a 5-minute write instead of a read."""
    return tokens * anthropic_base_price(model) * (ANTHROPIC_WRITE_5M - ANTHROPIC_READ) / 1_000_000
