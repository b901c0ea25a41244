"""Prices: the bundled dated table, cost arithmetic, LiteLLM's price file."""

from __future__ import annotations

import json

import pytest

from cachelint.errors import CachelintError
from cachelint.pricing import (
    BUNDLED,
    PRICES,
    PRICES_AS_OF,
    Cost,
    anthropic_base_price,
    cost,
    load_litellm_prices,
    lookup,
    wasted_prefill_usd,
)
from cachelint.prompt.usage import Usage
from cachelint.simulate import Prediction


def test_the_table_is_dated_and_every_row_has_a_source():
    assert PRICES_AS_OF == BUNDLED.as_of
    for price in PRICES:
        assert price.source, price.model
        assert min(price.input, price.cache_write_5m, price.cache_write_1h, price.cache_read, price.output) >= 0


READ_MULTIPLIERS = {"claude-fable-5-1": 0.025, "claude-mythos-5-1": 0.025, "claude-opus-5-5": 0.05,
                    "claude-sonnet-5-5": 0.05}


def test_anthropic_multipliers():
    for price in PRICES:
        if price.provider != "anthropic" or price.model == "claude-3-haiku":
            continue
        assert price.cache_write_5m == pytest.approx(1.25 * price.input), price.model
        assert price.cache_write_1h == pytest.approx(2.0 * price.input), price.model
        assert price.read_multiplier == pytest.approx(READ_MULTIPLIERS.get(price.model, 0.1)), price.model


@pytest.mark.parametrize(("model", "row"), [
    # the model pages' own numbers (input, 5m write, 1h write, read, output)
    ("claude-opus-5-5", (4.0, 5.0, 8.0, 0.20, 20.0)),
    ("claude-sonnet-5-5", (2.0, 2.5, 4.0, 0.10, 10.0)),
    ("claude-haiku-5-5", (0.10, 0.125, 0.20, 0.01, 0.50)),
    ("claude-fable-5-1", (10.0, 12.5, 20.0, 0.25, 50.0)),
    ("claude-3-haiku-20240307", (0.25, 0.30, 0.50, 0.03, 1.25)),
])
def test_anthropic_rows_match_the_pricing_pages(model, row):
    price = lookup(model)
    assert (price.input, price.cache_write_5m, price.cache_write_1h, price.cache_read, price.output) == \
        pytest.approx(row)


def test_haiku_5_5_long_prompt_band():
    small = cost("claude-haiku-5-5", Usage(prompt_tokens=100_000, output_tokens=1000))
    large = cost("claude-haiku-5-5", Usage(prompt_tokens=100_001, cache_read_tokens=90_000, output_tokens=1000))
    assert small.input == pytest.approx(100_000 * 0.10 / 1e6) and small.output == pytest.approx(1000 * 0.5 / 1e6)
    assert large.cache_read == pytest.approx(90_000 * 0.05 / 1e6)  # the higher band on every token
    assert large.output == pytest.approx(1000 * 2.5 / 1e6)


def test_openai_has_no_write_fee_before_gpt_5_6():
    for price in PRICES:
        if price.provider == "openai" and not price.model.startswith("gpt-5.6"):
            assert price.cache_write_5m == price.cache_write_1h == price.input, price.model


def test_gpt_5_6_bills_writes_at_1_25x():
    for name in ("gpt-5.6-sol", "gpt-5.6-terra", "gpt-5.6-luna"):
        price = lookup(name)
        assert price.cache_write_5m == pytest.approx(1.25 * price.input)
        assert price.cache_read == pytest.approx(0.1 * price.input)
    c = cost("gpt-5.6-terra", Usage(prompt_tokens=3000, cache_read_tokens=1000, cache_write_tokens=1500))
    assert c.cache_write == pytest.approx(1500 * 3.125 / 1e6) and c.input == pytest.approx(500 * 2.5 / 1e6)


@pytest.mark.parametrize(("model", "input_", "cached", "output"), [
    ("gpt-5-codex", 1.25, 0.125, 10.0),
    ("gpt-5.1-codex", 1.25, 0.125, 10.0),
    ("gpt-5.1-codex-mini", 0.25, 0.025, 2.0),
    ("gpt-5.1-codex-max", 1.25, 0.125, 10.0),
    ("gpt-5.2-codex", 1.75, 0.175, 14.0),
    ("gpt-5.3-codex", 1.75, 0.175, 14.0),
    ("gpt-5.4-mini", 0.75, 0.075, 4.5),
    ("gpt-5.5", 5.0, 0.5, 30.0),
    ("codex-mini-latest", 1.5, 0.375, 6.0),
    ("gpt-5-mini-2025-08-07", 0.25, 0.025, 2.0),
])
def test_codex_and_mini_variants_have_their_own_rows(model, input_, cached, output):
    price = lookup(model)
    assert price is not None, model
    assert (price.input, price.cache_read, price.output) == pytest.approx((input_, cached, output))


@pytest.mark.parametrize(("model", "row", "input_"), [
    ("claude-sonnet-4-5", "claude-sonnet-4-5", 3.0),
    ("claude-sonnet-4-5-20250929", "claude-sonnet-4-5", 3.0),
    ("us.anthropic.claude-sonnet-4-5-20250929-v1:0", "claude-sonnet-4-5", 3.0),
    ("anthropic/claude-haiku-4-5", "claude-haiku-4-5", 1.0),
    ("claude-opus-4-20250514", "claude-opus-4", 15.0),
    ("claude-opus-4-8", "claude-opus-4-8", 5.0),
    ("claude-3-5-haiku-latest", "claude-3-5-haiku", 0.8),
    ("claude-sonnet-5", "claude-sonnet-5", 2.0),
    ("gpt-4o-2024-08-06", "gpt-4o", 2.5),
    ("gpt-4o-mini", "gpt-4o-mini", 0.15),
    ("GPT-4.1", "gpt-4.1", 2.0),
    ("gpt-5.2", "gpt-5.2", 1.75),
])
def test_lookup_by_prefix(model, row, input_):
    price = lookup(model)
    assert price is not None and price.model == row and price.input == input_


@pytest.mark.parametrize("model", ["claude-opus-4-9", "gpt-5.3-codex-spark", "o3-pro", "llama-3", "", None])
def test_unknown_models_are_not_guessed(model):
    assert lookup(model) is None


def test_anthropic_cost_arithmetic():
    usage = Usage(prompt_tokens=1_000_000 + 200_000 + 100_000 + 50_000, cache_read_tokens=1_000_000,
                  cache_write_tokens=150_000, cache_write_5m_tokens=100_000, cache_write_1h_tokens=50_000,
                  output_tokens=10_000)
    c = cost("claude-sonnet-4-5", usage)
    assert c.input == pytest.approx(200_000 * 3.0 / 1e6)
    assert c.cache_read == pytest.approx(1_000_000 * 0.30 / 1e6)  # 0.1x
    assert c.cache_write == pytest.approx(100_000 * 3.75 / 1e6 + 50_000 * 6.0 / 1e6)  # 1.25x and 2x
    assert c.output == pytest.approx(10_000 * 15.0 / 1e6)
    assert c.total == pytest.approx(c.input + c.cache_write + c.cache_read + c.output)
    assert set(c.to_json()) == {"input", "cache_write", "cache_read", "output", "total"}


def test_unsplit_writes_are_5_minute_writes():
    c = cost("claude-haiku-4-5", Usage(prompt_tokens=3000, cache_write_tokens=2000))
    assert c.cache_write == pytest.approx(2000 * 1.25 / 1e6)
    assert c.input == pytest.approx(1000 * 1.0 / 1e6)
    assert c.output == 0.0


def test_openai_cost_arithmetic():
    c = cost("gpt-4o", Usage(prompt_tokens=2006, cache_read_tokens=1920, output_tokens=300))
    assert c.input == pytest.approx(86 * 2.5 / 1e6)
    assert c.cache_read == pytest.approx(1920 * 1.25 / 1e6)
    assert c.cache_write == 0.0
    assert c.output == pytest.approx(300 * 10.0 / 1e6)


def test_a_prediction_can_be_priced():
    pred = Prediction(prompt_tokens=2000, cache_read_tokens=1500, cache_write_tokens=500, uncached_tokens=500,
                      hit_position=3, reason=None, cache_write_5m_tokens=500, cache_write_1h_tokens=0)
    c = cost("claude-sonnet-4-5", pred.to_usage())
    assert c.total == pytest.approx((1500 * 0.3 + 500 * 3.75) / 1e6)


def test_unknown_model_cost_is_a_one_line_error():
    with pytest.raises(CachelintError) as err:
        cost("mystery-model", Usage(prompt_tokens=10))
    assert "mystery-model" in str(err.value) and "\n" not in str(err.value)


def test_anthropic_base_price():
    assert anthropic_base_price("claude-sonnet-4-5") == 3.0
    assert anthropic_base_price("claude-opus-4-5") == 5.0
    assert anthropic_base_price("not-a-claude") is None
    assert anthropic_base_price("gpt-4o") is None


def test_wasted_prefill_by_each_providers_rule():
    # Anthropic: a write instead of a read (5 minutes by default, 1 hour when the entry was a 1-hour one)
    assert wasted_prefill_usd(1037, "claude-sonnet-4-5") == pytest.approx(1037 * 3.0 * (1.25 - 0.1) / 1e6)
    assert wasted_prefill_usd(1000, "claude-sonnet-4-5", ttl="1h") == pytest.approx(1000 * 3.0 * (2.0 - 0.1) / 1e6)
    assert wasted_prefill_usd(1000, "claude-sonnet-4-5", one_hour_tokens=400) == \
        pytest.approx((400 * (6.0 - 0.3) + 600 * (3.75 - 0.3)) / 1e6)
    # OpenAI before GPT-5.6: input instead of cached input
    assert wasted_prefill_usd(1000, "gpt-4o") == pytest.approx(1000 * (2.5 - 1.25) / 1e6)
    assert wasted_prefill_usd(1000, "gpt-5.1-codex-mini") == pytest.approx(1000 * (0.25 - 0.025) / 1e6)
    # GPT-5.6+: a billed cache write instead of a read
    assert wasted_prefill_usd(1000, "gpt-5.6-luna") == pytest.approx(1000 * (1.25 - 0.1) / 1e6)
    assert wasted_prefill_usd(0, "gpt-4o") == 0.0


@pytest.mark.parametrize("model", [None, "", "mystery-model", "claude-opus-9", "gpt-5.3-codex-spark"])
def test_unknown_models_are_unknown_never_zero(model):
    assert wasted_prefill_usd(1000, model) is None
    assert lookup(model) is None
    with pytest.raises(CachelintError):
        cost(model, Usage(prompt_tokens=1000))


# --- LiteLLM ------------------------------------------------------------------------------------------------

LITELLM = {
    "sample_spec": {"input_cost_per_token": 0.0, "output_cost_per_token": 0.0, "litellm_provider": "one of ..."},
    "claude-sonnet-4-5": {
        "litellm_provider": "anthropic", "input_cost_per_token": 3e-06, "output_cost_per_token": 1.5e-05,
        "cache_creation_input_token_cost": 3.75e-06, "cache_read_input_token_cost": 3e-07,
        "cache_creation_input_token_cost_above_1hr": 6e-06, "input_cost_per_token_above_200k_tokens": 6e-06,
    },
    "claude-haiku-4-5": {  # no 1h key: priced at 2x input, not at the 5-minute rate
        "litellm_provider": "anthropic", "input_cost_per_token": 1e-06, "output_cost_per_token": 5e-06,
        "cache_creation_input_token_cost": 1.25e-06, "cache_read_input_token_cost": 1e-07,
    },
    "azure/gpt-4o": {"litellm_provider": "azure", "input_cost_per_token": 5e-06, "output_cost_per_token": 1.5e-05},
    "gpt-4o": {"litellm_provider": "openai", "input_cost_per_token": 2.5e-06, "output_cost_per_token": 1e-05,
               "cache_read_input_token_cost": 1.25e-06},
    "text-embedding-3-small": {"litellm_provider": "openai", "input_cost_per_token": 2e-08, "mode": "embedding"},
    "dall-e-3": {"output_cost_per_image": 0.04},
    "my-model": {"input_cost_per_token": 1e-06, "output_cost_per_token": 2e-06, "cache_read_input_token_cost": None},
}


def write(tmp_path, data, name="prices.json"):
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def test_litellm_file_replaces_the_bundled_table(tmp_path):
    table = load_litellm_prices(write(tmp_path, LITELLM))
    assert len(table) == 5  # sample_spec, the embedding and the image model are skipped
    sonnet = table.price("claude-sonnet-4-5-20250929")
    assert (sonnet.input, sonnet.cache_write_5m, sonnet.cache_write_1h, sonnet.cache_read, sonnet.output) == \
        pytest.approx((3.0, 3.75, 6.0, 0.3, 15.0))
    haiku = table.price("claude-haiku-4-5")
    assert haiku.cache_write_1h == pytest.approx(2.0)
    assert table.price("gpt-4o").input == pytest.approx(2.5)  # the provider's row, not Azure's
    assert table.price("azure/gpt-4o").input == pytest.approx(5.0)
    assert table.price("gpt-4o").cache_write_5m == pytest.approx(2.5)  # no write fee
    mine = table.price("my-model")
    assert mine.cache_read == pytest.approx(1.0)  # no read discount known: the input price
    assert table.lookup("claude-opus-4-8") is None
    usage = Usage(prompt_tokens=2000, cache_read_tokens=1000, cache_write_tokens=500, cache_write_1h_tokens=500,
                  cache_write_5m_tokens=0, output_tokens=100)
    c = cost("claude-sonnet-4-5", usage, table)
    assert c.total == pytest.approx((500 * 3.0 + 1000 * 0.3 + 500 * 6.0 + 100 * 15.0) / 1e6)
    assert table.as_of and "prices.json" in table.source


def test_litellm_file_with_a_fallback(tmp_path):
    table = load_litellm_prices(write(tmp_path, LITELLM), fallback=BUNDLED)
    assert table.price("claude-opus-4-8").input == 5.0
    assert table.price("gpt-4o").source.startswith("LiteLLM")


@pytest.mark.parametrize(("content", "message"), [
    ("{not json", "invalid JSON at line 1"),
    ("[1, 2]", "not a LiteLLM price file"),
    ('"prices"', "not a LiteLLM price file"),
    ("{}", "no model with input_cost_per_token"),
    (json.dumps({"sample_spec": {"input_cost_per_token": 0, "output_cost_per_token": 0}}), "no model"),
    (json.dumps({"m": {"input_cost_per_token": "cheap", "output_cost_per_token": 1e-6}}),
     "m: input_cost_per_token is 'cheap'"),
    (json.dumps({"m": {"input_cost_per_token": -1e-6, "output_cost_per_token": 1e-6}}), "not a non-negative number"),
    (json.dumps({"m": {"input_cost_per_token": True, "output_cost_per_token": 1e-6}}), "not a non-negative number"),
])
def test_bad_litellm_files(tmp_path, content, message):
    with pytest.raises(CachelintError) as err:
        load_litellm_prices(write(tmp_path, content))
    assert message in str(err.value)
    assert "\n" not in str(err.value)


def test_missing_or_unreadable_litellm_files(tmp_path):
    with pytest.raises(CachelintError, match="no such file"):
        load_litellm_prices(tmp_path / "absent.json")
    with pytest.raises(CachelintError, match="is a directory"):
        load_litellm_prices(tmp_path)
    bad = tmp_path / "latin1.json"
    bad.write_bytes(b'{"m\xe9": 1}')
    with pytest.raises(CachelintError, match="not UTF-8"):
        load_litellm_prices(bad)


def test_cost_dataclass():
    c = Cost(input=1.0, cache_write=2.0, cache_read=3.0, output=4.0)
    assert c.total == 10.0
