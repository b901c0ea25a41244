"""Provider prompt-cache simulators: how much a provider *should* read from cache for each recorded request.

The proxy feeds every request of one cache scope (one API key or workspace) to a simulator in the order
they were sent, with when each was sent and when its response started:

    sim = AnthropicCacheSimulator()
    predicted = sim.record(prompt, at=sent_at, response_started_at=first_byte_at)
    why = explain_mismatch(predicted, reported_usage)   # None, or why the provider read something else

`predict(prompt, at)` answers the same question without changing the simulator's state. Both simulators
return a `Prediction` in the provider's own usage semantics (`prompt_tokens` includes every input token,
cached or not; the same as `cachelint.prompt.usage.Usage`). The rules and every per-model number come from
/work/shared/reference/providers.md; the numbers live in `cachelint.simulate.models`.

Token counts are cachelint's estimates (Claude's are an o200k_base approximation), so a prediction and the
provider's report never agree to the token: `explain_mismatch` accepts a relative tolerance (10% of the prompt
by default, at least 32 tokens) before calling them different.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from cachelint.prompt.usage import Usage

Reason = Literal[
    "no_breakpoint", "below_minimum", "ttl_expired", "not_yet_written", "lookback_exceeded", "prefix_changed", "cold",
]
Mismatch = Literal["ttl_expired", "not_yet_written", "server_side", "below_minimum"]

DEFAULT_TOLERANCE = 0.10  # relative to the prompt's size: token counts are estimates
DEFAULT_MIN_SLACK_TOKENS = 32  # and never less than this many tokens
DEFAULT_RACE_WINDOW_S = 2.0  # an entry that became readable this shortly before a request may not be there yet


@dataclass(frozen=True, slots=True)
class Prediction:
    """What the provider should report for one request, and why it could not read more.

    - `prompt_tokens`: every input token (read + written + neither).
    - `cache_read_tokens`: tokens read from cache (Anthropic `cache_read_input_tokens`, OpenAI `cached_tokens`).
    - `cache_write_tokens`: tokens written to cache (Anthropic `cache_creation_input_tokens`; OpenAI reports writes
      only for GPT-5.6+, so the classic OpenAI simulator predicts 0).
    - `uncached_tokens`: tokens prefilled this request, written or not (`prompt_tokens - cache_read_tokens`, as
      `Usage.uncached_tokens`).
    - `hit_position`: index into `prompt.blocks` of the last block read from cache, or None.
    - `reason`: why not more was read; None when nothing more could have been read (all of the prompt up to its
      last breakpoint was read, or the new part was never sent before). Otherwise:
      `no_breakpoint` (nothing marks a place to cache, or a cached prefix has no breakpoint that reads it),
      `below_minimum` (the prefix up to the last breakpoint is under the model's minimum),
      `cold` (nothing written in this scope yet for this model and cache-key parameters, or the prompt shares
      not even its first block with an earlier request: a new prefix),
      `ttl_expired` (a matching entry expired), `not_yet_written` (a matching entry's writer had not started
      its response yet), `lookback_exceeded` (a matching entry lies beyond every breakpoint's lookback window),
      `prefix_changed` (the best-matching earlier request diverged before the place it cached).
    """

    prompt_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    uncached_tokens: int
    hit_position: int | None
    reason: Reason | None
    provider: str = ""
    model: str | None = None
    cache_write_5m_tokens: int | None = None
    cache_write_1h_tokens: int | None = None
    minimum_tokens: int = 0
    breakpoints: tuple[int, ...] = ()  # block indexes the provider caches at (Anthropic, OpenAI GPT-5.6+)
    hit_idle_s: float | None = None  # seconds since the entry read was written or last read (request starts)
    hit_ready_s: float | None = None  # seconds since that entry became readable (None: its response start was unknown)
    ttl_floor_s: float = 300.0  # the shortest lifetime the provider may have given the entry read
    notes: tuple[str, ...] = field(default=())

    @property
    def hit_rate(self) -> float:
        return self.cache_read_tokens / self.prompt_tokens if self.prompt_tokens else 0.0

    def to_usage(self) -> Usage:
        """The prediction as provider usage, e.g. to price it with `cachelint.pricing.cost`."""
        return Usage(
            prompt_tokens=self.prompt_tokens,
            cache_read_tokens=self.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens,
            cache_write_5m_tokens=self.cache_write_5m_tokens,
            cache_write_1h_tokens=self.cache_write_1h_tokens,
        )

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["breakpoints"] = list(self.breakpoints)
        data["notes"] = list(self.notes)
        data["hit_rate"] = round(self.hit_rate, 4)
        return data


def _agree(predicted: int, reported: int, slack: float) -> bool:
    return abs(predicted - reported) <= slack


def explain_mismatch(
    prediction: Prediction,
    usage: Usage,
    *,
    tolerance: float = DEFAULT_TOLERANCE,
    min_slack_tokens: int = DEFAULT_MIN_SLACK_TOKENS,
    race_window_s: float = DEFAULT_RACE_WINDOW_S,
) -> Mismatch | None:
    """Why the provider's reported usage differs from the prediction; None when they agree.

    They agree when both the read and the written tokens, the predicted ones rescaled by the provider's prompt
    count over the estimated one, are within `tolerance` x the prompt's size (the larger of the predicted and the
    reported prompt tokens; at least `min_slack_tokens`) of each other: cachelint's token counts are estimates
    with a systematic bias, not the provider's.

    When the provider read **less** than predicted:
    - `below_minimum`: it neither read nor wrote anything although the prediction cached (Anthropic), or the prompt
      is under OpenAI's 1,024 tokens by the provider's count: the real minimum is higher than the table says.
    - `ttl_expired`: the entry the prediction read had been idle longer than the shortest lifetime the provider may
      give it (`ttl_floor_s`: 5 minutes; a 1-hour TTL silently applied as 5 minutes shows up here).
    - `not_yet_written`: that entry became readable less than `race_window_s` before the request, or when its
      writer's response started is unknown: the request probably raced its predecessor.
    - `server_side`: an identical prefix inside the TTL that still missed (eviction, routing, a provider bug).

    When the provider read **more** (or wrote differently): the prediction's own reason if it is one of
    `below_minimum` (the real minimum is lower), `ttl_expired` (the entry outlived its minimum lifetime),
    `not_yet_written` (the predecessor's response had started earlier than recorded); otherwise `server_side`
    (cache state this scope did not see: traffic outside the proxy, another client in the same workspace).
    """
    scale = max(prediction.prompt_tokens, usage.prompt_tokens, 1)
    slack = max(tolerance * scale, float(min_slack_tokens))
    # cachelint's counts are estimates with a systematic bias (Claude's tokenizer is not public): compare the
    # prediction rescaled to the provider's count of the same prompt
    ratio = usage.prompt_tokens / prediction.prompt_tokens if prediction.prompt_tokens and usage.prompt_tokens else 1.0
    reads_agree = _agree(round(prediction.cache_read_tokens * ratio), usage.cache_read_tokens, slack)
    writes_agree = _agree(round(prediction.cache_write_tokens * ratio), usage.cache_write_tokens, slack)
    if reads_agree and writes_agree:
        return None
    read_less = not reads_agree and usage.cache_read_tokens < prediction.cache_read_tokens
    if read_less or (reads_agree and usage.cache_write_tokens < prediction.cache_write_tokens):
        if prediction.provider == "anthropic":
            if usage.cache_read_tokens == 0 and usage.cache_write_tokens == 0:
                return "below_minimum"
        elif usage.prompt_tokens < max(prediction.minimum_tokens, 1) and usage.cache_read_tokens == 0:
            return "below_minimum"
        if not read_less:
            return "server_side"
        if prediction.hit_idle_s is not None and prediction.hit_idle_s > prediction.ttl_floor_s:
            return "ttl_expired"
        if prediction.hit_position is not None and (
            prediction.hit_ready_s is None or prediction.hit_ready_s < race_window_s
        ):
            return "not_yet_written"
        return "server_side"
    if prediction.reason in ("below_minimum", "ttl_expired", "not_yet_written"):
        return prediction.reason  # type: ignore[return-value]
    return "server_side"


from cachelint.simulate.anthropic import AnthropicCacheSimulator
from cachelint.simulate.openai import OpenAICacheSimulator


def simulator_for(provider: str, **options: Any) -> AnthropicCacheSimulator | OpenAICacheSimulator:
    """A fresh simulator for a prompt's provider ("anthropic", "openai-chat", "openai-responses")."""
    if provider == "anthropic":
        return AnthropicCacheSimulator(**options)
    return OpenAICacheSimulator(**options)


__all__ = [
    "AnthropicCacheSimulator", "Mismatch", "OpenAICacheSimulator", "Prediction", "Reason", "explain_mismatch",
    "simulator_for",
]
