"""The provider prompt-cache simulators: Anthropic's breakpoints, lookback and TTLs, OpenAI's 1024/128 rule."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cachelint.prompt import Exchange, build_prompt
from cachelint.prompt.usage import Usage
from cachelint.simulate import (
    AnthropicCacheSimulator,
    OpenAICacheSimulator,
    Prediction,
    explain_mismatch,
    simulator_for,
)
from cachelint.simulate.models import (
    anthropic_minimum,
    match_model,
    openai_cacheable,
    openai_default_retention,
    openai_uses_breakpoints,
)

DEMO = Path(__file__).resolve().parent.parent / "cachelint" / "demo" / "data"
EPH = {"type": "ephemeral"}
EPH_1H = {"type": "ephemeral", "ttl": "1h"}


class WordCounter:
    """One token per whitespace-separated word: exact, predictable counts for the rules under test."""

    name = "words"

    def encode(self, text: str) -> list[str]:
        return text.split()

    def count(self, text: str) -> int:
        return len(text.split())


def words(n: int, tag: str = "w") -> str:
    return " ".join(f"{tag}{i}" for i in range(n))


def prompt(body: dict, path: str | None = None):
    return build_prompt(Exchange(body=body, path=path), counter=WordCounter())


def text(n: int, tag: str, marker: dict | None = None) -> dict:
    block = {"type": "text", "text": words(n, tag)}
    if marker:
        block["cache_control"] = marker
    return block


def anthropic(messages: list[dict], system: list[dict] | None = None, model: str = "claude-sonnet-4-5",
              **extra) -> dict:
    body = {"model": model, "max_tokens": 1024, "messages": messages, **extra}
    if system is not None:
        body["system"] = system
    return body


def conversation(turns: int, marker: dict = EPH, system_marker: dict = EPH) -> dict:
    """An agent conversation after `turns` user turns, the breakpoint on the newest message."""
    messages = []
    for t in range(turns):
        messages.append({"role": "user", "content": [text(40, f"u{t}_")]})
        if t < turns - 1:
            messages.append({"role": "assistant", "content": [text(60, f"a{t}_")]})
    messages[-1]["content"][-1]["cache_control"] = marker
    return anthropic(messages, system=[text(1200, "sys", system_marker)])


def flat(n_blocks: int, per_block: int = 120) -> dict:
    """`n_blocks` text blocks, one per message, the breakpoint on the last (the docs' lookback example)."""
    messages = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": [text(per_block, f"b{i}_")]} for i in range(n_blocks)
    ]
    messages[-1]["content"][-1]["cache_control"] = EPH
    return anthropic(messages)


# --- the data table -----------------------------------------------------------------------------------------


def test_minimums_are_the_latest_copy_of_the_docs():
    assert anthropic_minimum("claude-sonnet-4-5") == 1024
    assert anthropic_minimum("claude-sonnet-4-5-20250929") == 1024
    assert anthropic_minimum("claude-opus-4-7") == 2048
    assert anthropic_minimum("claude-opus-4-5-20251101") == 4096
    assert anthropic_minimum("claude-opus-4-8") == 1024
    assert anthropic_minimum("claude-opus-4-20250514") == 1024  # Opus 4, not 4.5
    assert anthropic_minimum("claude-haiku-4-5") == 4096
    assert anthropic_minimum("claude-3-5-haiku-latest") == 2048
    assert anthropic_minimum("claude-opus-5") == 512
    assert anthropic_minimum("claude-fable-5-1") == 512
    assert anthropic_minimum("us.anthropic.claude-haiku-4-5-20251001-v1:0") == 4096
    assert anthropic_minimum("something-else") == 1024


def test_model_matching_does_not_confuse_versions():
    assert match_model("claude-opus-4-9", ["claude-opus-4"]) is None
    assert match_model("gpt-5.5", ["gpt-5"]) is None
    assert match_model("gpt-4o-2024-08-06", ["gpt-4o", "gpt-4o-mini"]) == "gpt-4o"
    assert match_model("gpt-4o-mini", ["gpt-4o", "gpt-4o-mini"]) == "gpt-4o-mini"


def test_openai_rules():
    assert openai_cacheable(1023) == 0
    assert openai_cacheable(1024) == 1024
    assert openai_cacheable(1151) == 1024
    assert openai_cacheable(1152) == 1152
    assert openai_cacheable(2006) == 1920  # the guide's example
    assert openai_uses_breakpoints("gpt-5.6") and openai_uses_breakpoints("gpt-5.6-mini")
    assert not openai_uses_breakpoints("gpt-5.2") and not openai_uses_breakpoints("gpt-4o")
    assert openai_default_retention("gpt-5.5-pro") == "24h"
    assert openai_default_retention("gpt-4.1") == "in_memory"


# --- Anthropic ----------------------------------------------------------------------------------------------


def test_the_demo_session_reads_grow_until_the_timestamp_breaks_the_system_prompt():
    from cachelint.prompt import exchange_from_json

    sim = AnthropicCacheSimulator()
    predictions = []
    for n in range(1, 7):
        exchange = exchange_from_json(json.loads((DEMO / f"turn-{n}.json").read_text()))
        p = build_prompt(exchange)
        predictions.append((p, sim.record(p, at=60.0 * n, response_started_at=60.0 * n + 2)))
    (p1, t1), (p2, t2), (p3, t3), (p4, t4), (p5, t5), (_p6, t6) = predictions
    assert (t1.cache_read_tokens, t1.reason) == (0, "cold")
    assert t1.cache_write_tokens == p1.prompt_tokens  # up to the breakpoint on the newest message
    assert t2.cache_read_tokens == p1.prompt_tokens and t2.reason is None
    assert t3.cache_read_tokens == p2.prompt_tokens
    assert t3.cache_read_tokens + t3.cache_write_tokens == p3.prompt_tokens
    # turn 4: the minute in system block 2 changed; the first system breakpoint is below the minimum (738 tokens)
    assert t4.cache_read_tokens == 0 and t4.reason == "prefix_changed"
    assert t4.cache_write_tokens == p4.prompt_tokens
    assert t5.cache_read_tokens == p4.prompt_tokens and t6.cache_read_tokens == p5.prompt_tokens
    assert explain_mismatch(t5, t5.to_usage()) is None


def test_growing_agent_turns_read_the_previous_turn():
    sim = AnthropicCacheSimulator()
    previous = None
    for turn in range(1, 6):
        p = prompt(conversation(turn))
        pred = sim.record(p, at=30.0 * turn, response_started_at=30.0 * turn + 1)
        if previous is None:
            assert pred.cache_read_tokens == 0 and pred.reason == "cold"
        else:
            assert pred.cache_read_tokens == previous.prompt_tokens
            assert pred.cache_write_tokens == p.prompt_tokens - previous.prompt_tokens
            assert pred.reason is None
            assert pred.hit_position == len(previous.blocks) - 1
        assert pred.uncached_tokens == p.prompt_tokens - pred.cache_read_tokens
        previous = p


def test_a_timestamp_in_the_system_prompt_misses_everything_after_it():
    def body(stamp: str) -> dict:
        tools = [{"name": "search", "description": words(1100, "d"), "input_schema": {"type": "object"},
                  "cache_control": EPH}]
        system = [text(30, "rules"), {"type": "text", "text": f"Current time: {stamp}"}, text(500, "more", EPH)]
        return anthropic([{"role": "user", "content": [text(20, "q", EPH)]}], system=system, tools=tools)

    sim = AnthropicCacheSimulator()
    first = prompt(body("2026-11-29T10:31"))
    sim.record(first, at=0.0, response_started_at=1.0)
    again = sim.record(prompt(body("2026-11-29T10:31")), at=30.0, response_started_at=31.0)
    assert again.cache_read_tokens == first.prompt_tokens
    changed = prompt(body("2026-11-29T10:32"))
    pred = sim.record(changed, at=60.0, response_started_at=61.0)
    tools_tokens = changed.blocks[0].tokens
    assert pred.cache_read_tokens == tools_tokens and pred.hit_position == 0  # the tools' breakpoint still hits
    assert pred.reason == "prefix_changed"
    assert pred.cache_write_tokens == changed.prompt_tokens - tools_tokens


def test_ttl_5m_and_1h_measured_from_the_request_start():
    sim = AnthropicCacheSimulator()
    p = prompt(conversation(1))
    sim.record(p, at=0.0, response_started_at=1.0)
    assert sim.predict(p, at=299.0).cache_read_tokens == p.prompt_tokens
    late = sim.predict(p, at=301.0)  # the response may have ended at 200 s: the clock runs from the start
    assert late.cache_read_tokens == 0 and late.reason == "ttl_expired"

    sim = AnthropicCacheSimulator()
    p1h = prompt(conversation(1, EPH_1H, EPH_1H))
    first = sim.record(p1h, at=0.0, response_started_at=1.0)
    assert first.cache_write_1h_tokens == p1h.prompt_tokens and first.cache_write_5m_tokens == 0
    assert sim.predict(p1h, at=30 * 60.0).cache_read_tokens == p1h.prompt_tokens
    assert sim.predict(p1h, at=3601.0).reason == "ttl_expired"


def test_a_read_refreshes_the_ttl():
    sim = AnthropicCacheSimulator()
    p = prompt(conversation(1))
    sim.record(p, at=0.0, response_started_at=1.0)
    assert sim.record(p, at=240.0, response_started_at=241.0).cache_read_tokens == p.prompt_tokens
    assert sim.predict(p, at=480.0).cache_read_tokens == p.prompt_tokens  # 8 minutes after the write
    assert sim.predict(p, at=541.0).reason == "ttl_expired"


def test_a_new_prefix_is_cold_not_changed():
    sim = AnthropicCacheSimulator()
    sim.record(prompt(conversation(2)), at=0.0, response_started_at=1.0)
    other = anthropic([{"role": "user", "content": [text(40, "x", EPH)]}], system=[text(1200, "other", EPH)])
    assert sim.predict(prompt(other), at=10.0).reason == "cold"
    sim = OpenAICacheSimulator()
    sim.record(prompt(chat(1500)), at=0.0, response_started_at=1.0)
    fresh = {"model": "gpt-4.1", "messages": [{"role": "system", "content": words(1500, "z")}]}
    assert sim.predict(prompt(fresh), at=10.0).reason == "cold"


def test_predict_changes_nothing():
    sim = AnthropicCacheSimulator()
    p = prompt(conversation(1))
    assert sim.predict(p, at=0.0) == sim.predict(p, at=0.0)
    assert sim.predict(p, at=10.0).reason == "cold"
    sim.record(p, at=0.0, response_started_at=1.0)
    assert sim.predict(p, at=10.0).cache_read_tokens == p.prompt_tokens


def test_a_request_sent_before_its_predecessors_response_started_cannot_read_it():
    sim = AnthropicCacheSimulator()
    p = prompt(conversation(1))
    sim.record(p, at=0.0, response_started_at=10.0)
    racing = sim.record(p, at=5.0, response_started_at=12.0)
    assert racing.cache_read_tokens == 0 and racing.reason == "not_yet_written"
    assert racing.cache_write_tokens == p.prompt_tokens  # both write
    after = sim.record(p, at=11.0, response_started_at=13.0)
    assert after.cache_read_tokens == p.prompt_tokens


def test_below_the_minimum_nothing_is_cached():
    sim = AnthropicCacheSimulator()
    short = prompt(anthropic([{"role": "user", "content": [text(500, "q", EPH)]}]))
    for at in (0.0, 10.0):
        pred = sim.record(short, at=at, response_started_at=at + 1)
        assert (pred.cache_read_tokens, pred.cache_write_tokens, pred.reason) == (0, 0, "below_minimum")
    # the same 2,000 tokens are cached on Sonnet 4.5 (1,024) but not on Haiku 4.5 (4,096)
    body = anthropic([{"role": "user", "content": [text(2000, "q", EPH)]}])
    assert AnthropicCacheSimulator().predict(prompt(body), at=0.0).cache_write_tokens == 2000
    body["model"] = "claude-haiku-4-5"
    haiku = AnthropicCacheSimulator().predict(prompt(body), at=0.0)
    assert (haiku.cache_write_tokens, haiku.reason, haiku.minimum_tokens) == (0, "below_minimum", 4096)


def test_no_breakpoint_no_cache():
    sim = AnthropicCacheSimulator()
    p = prompt(anthropic([{"role": "user", "content": [text(3000, "q")]}]))
    sim.record(p, at=0.0)
    pred = sim.predict(p, at=1.0)
    assert (pred.cache_read_tokens, pred.cache_write_tokens, pred.reason) == (0, 0, "no_breakpoint")


def test_the_docs_20_block_lookback_example():
    sim = AnthropicCacheSimulator()
    turn1 = sim.record(prompt(flat(10)), at=0.0, response_started_at=1.0)
    assert turn1.cache_write_tokens == 1200 and turn1.breakpoints == (9,)
    turn2 = sim.record(prompt(flat(15)), at=10.0, response_started_at=11.0)
    assert (turn2.cache_read_tokens, turn2.hit_position, turn2.cache_write_tokens) == (1200, 9, 600)
    turn3 = sim.record(prompt(flat(35)), at=20.0, response_started_at=21.0)  # checks 35..16; 15 is outside
    assert turn3.cache_read_tokens == 0 and turn3.reason == "lookback_exceeded"
    assert turn3.cache_write_tokens == 35 * 120


def test_a_run_of_tool_calls_counts_as_one_position():
    def fan_out() -> dict:
        body = flat(15)
        del body["messages"][-1]["content"][-1]["cache_control"]
        body["messages"].append({"role": "assistant" if len(body["messages"]) % 2 else "user", "content": [
            {"type": "tool_use", "id": f"t{i}", "name": "read", "input": {"path": f"f{i}"}} for i in range(12)]})
        results = [{"type": "tool_result", "tool_use_id": f"t{i}", "content": words(5, f"r{i}_")} for i in range(12)]
        results[-1]["cache_control"] = EPH
        body["messages"].append({"role": "user", "content": results})
        return body

    for collapse, expected in ((True, 15 * 120), (False, 0)):
        sim = AnthropicCacheSimulator(collapse_tool_runs=collapse)
        sim.record(prompt(flat(15)), at=0.0, response_started_at=1.0)
        pred = sim.predict(prompt(fan_out()), at=10.0)  # 24 more blocks, but 2 positions when collapsed
        assert pred.cache_read_tokens == expected
        if not collapse:
            assert pred.reason == "lookback_exceeded"


def test_more_than_4_breakpoints_only_4_are_used():
    system = [text(300, f"s{i}_", EPH) for i in range(5)]
    body = anthropic([{"role": "user", "content": [text(10, "q")]}], system=system)
    sim = AnthropicCacheSimulator()
    first = sim.record(prompt(body), at=0.0, response_started_at=1.0)
    assert first.breakpoints == (0, 1, 2, 3)
    assert any(n.startswith("too_many_breakpoints") for n in first.notes)
    assert first.cache_write_tokens == 1200  # up to the 4th breakpoint; the 5th writes nothing
    again = sim.predict(prompt(body), at=10.0)
    assert again.cache_read_tokens == 1200 and again.reason is None


def test_a_top_level_cache_control_puts_the_breakpoint_on_the_last_block():
    def body(turns: int) -> dict:
        b = conversation(turns)
        for m in b["messages"]:
            for c in m["content"]:
                c.pop("cache_control", None)
        b["cache_control"] = EPH
        return b

    sim = AnthropicCacheSimulator()
    p1 = prompt(body(1))
    first = sim.record(p1, at=0.0, response_started_at=1.0)
    assert first.breakpoints == (0, len(p1.blocks) - 1)  # the system block's own marker, then the automatic one
    second = sim.record(prompt(body(2)), at=20.0, response_started_at=21.0)
    assert second.cache_read_tokens == p1.prompt_tokens


def test_mixed_ttls_split_the_write_and_outlive_each_other():
    body = anthropic([{"role": "user", "content": [text(300, "q", EPH)]}], system=[text(1100, "sys", EPH_1H)])
    sim = AnthropicCacheSimulator()
    first = sim.record(prompt(body), at=0.0, response_started_at=1.0)
    assert (first.cache_write_1h_tokens, first.cache_write_5m_tokens) == (1100, 300)
    later = sim.predict(prompt(body), at=30 * 60.0)
    assert later.cache_read_tokens == 1100 and later.reason == "ttl_expired"  # the 5m entry is gone


def test_the_cache_is_per_model_and_tool_choice_keeps_the_system_cache():
    body = anthropic([{"role": "user", "content": [text(300, "q", EPH)]}], system=[text(1100, "sys", EPH)])
    sim = AnthropicCacheSimulator()
    sim.record(prompt(body), at=0.0, response_started_at=1.0)
    other = dict(body, model="claude-opus-4-8")
    assert sim.predict(prompt(other), at=10.0).reason == "cold"
    choice = dict(body, tool_choice={"type": "any"})
    pred = sim.predict(prompt(choice), at=10.0)
    assert pred.cache_read_tokens == 1100 and pred.reason == "prefix_changed"


def test_reported_usage_corrects_the_state():
    sim = AnthropicCacheSimulator()
    p = prompt(conversation(1, EPH_1H, EPH_1H))
    downgraded = Usage(prompt_tokens=p.prompt_tokens, cache_write_tokens=p.prompt_tokens,
                       cache_write_5m_tokens=p.prompt_tokens, cache_write_1h_tokens=0)
    sim.record(p, at=0.0, response_started_at=1.0, usage=downgraded)
    assert sim.predict(p, at=600.0).reason == "ttl_expired"  # stored as the 5 minutes the provider applied
    sim = AnthropicCacheSimulator()
    sim.record(p, at=0.0, response_started_at=1.0, usage=Usage(prompt_tokens=p.prompt_tokens))
    assert sim.predict(p, at=10.0).cache_read_tokens == 0  # the provider cached nothing


# --- OpenAI -------------------------------------------------------------------------------------------------


def chat(system_words: int, user: str = "hello", model: str = "gpt-4.1", **extra) -> dict:
    return {"model": model, "messages": [{"role": "system", "content": words(system_words, "s")},
                                         {"role": "user", "content": user}], **extra}


def test_openai_2006_tokens_repeated_read_1920():
    sim = OpenAICacheSimulator()
    p = prompt({"model": "gpt-4o", "messages": [{"role": "user", "content": words(2006)}]}, "/v1/chat/completions")
    first = sim.record(p, at=0.0, response_started_at=0.5)
    assert (first.cache_read_tokens, first.cache_write_tokens, first.reason) == (0, 0, "cold")
    second = sim.record(p, at=10.0, response_started_at=10.5)
    assert second.prompt_tokens == 2006 and second.cache_read_tokens == 1920 and second.reason is None
    assert explain_mismatch(second, Usage(prompt_tokens=2006, cache_read_tokens=1920)) is None


def test_openai_below_1024_tokens_nothing_is_cached():
    sim = OpenAICacheSimulator()
    p = prompt(chat(900))
    sim.record(p, at=0.0)
    pred = sim.predict(p, at=5.0)
    assert (pred.cache_read_tokens, pred.reason) == (0, "below_minimum")


def test_openai_a_growing_chat_reads_the_previous_prompt_in_128_token_steps():
    sim = OpenAICacheSimulator()
    body = chat(1500)
    first = prompt(body)
    sim.record(first, at=0.0, response_started_at=1.0)
    body["messages"] += [{"role": "assistant", "content": words(200, "a")}, {"role": "user", "content": "and then?"}]
    pred = sim.record(prompt(body), at=20.0, response_started_at=21.0)
    assert pred.cache_read_tokens == openai_cacheable(first.prompt_tokens) == 1408
    assert pred.reason is None


def test_openai_prompt_cache_key_separates_caches():
    sim = OpenAICacheSimulator()
    a, b = prompt(chat(1500, prompt_cache_key="user-a")), prompt(chat(1500, prompt_cache_key="user-b"))
    sim.record(a, at=0.0, response_started_at=1.0)
    other = sim.record(b, at=5.0, response_started_at=6.0)
    assert other.cache_read_tokens == 0 and other.reason == "cold"
    assert sim.record(a, at=10.0).cache_read_tokens == openai_cacheable(a.prompt_tokens)


def test_openai_idle_eviction_and_24h_retention():
    sim = OpenAICacheSimulator()
    p = prompt(chat(1500))
    sim.record(p, at=0.0, response_started_at=1.0)
    assert sim.predict(p, at=9 * 60.0).cache_read_tokens > 0
    expired = sim.predict(p, at=11 * 60.0)
    assert expired.cache_read_tokens == 0 and expired.reason == "ttl_expired"

    sim = OpenAICacheSimulator()
    p24 = prompt(chat(1500, prompt_cache_retention="24h"))
    sim.record(p24, at=0.0, response_started_at=1.0)
    assert sim.predict(p24, at=2 * 3600.0).cache_read_tokens == openai_cacheable(p24.prompt_tokens)
    assert sim.predict(p24, at=25 * 3600.0).reason == "ttl_expired"


def test_openai_not_yet_written_and_changed_prefix():
    sim = OpenAICacheSimulator()
    p = prompt(chat(1500))
    sim.record(p, at=0.0, response_started_at=3.0)
    racing = sim.predict(p, at=1.0)
    assert racing.cache_read_tokens == 0 and racing.reason == "not_yet_written"

    # a value changed inside the system prompt: the common prefix inside the block still counts
    def stamped(minute: int) -> dict:
        body = chat(0)
        body["messages"][0]["content"] = f"{words(1300, 'a')} Time: 10:{minute} {words(1000, 'b')}"
        return body

    sim = OpenAICacheSimulator()
    same = prompt(stamped(31))
    sim.record(same, at=0.0, response_started_at=1.0)
    assert sim.predict(same, at=10.0).cache_read_tokens == openai_cacheable(same.prompt_tokens) == 2176
    changed = sim.predict(prompt(stamped(32)), at=10.0)  # ~1,302 tokens in common, estimated from characters
    assert 1152 <= changed.cache_read_tokens <= 1408 and changed.reason == "prefix_changed"
    early = stamped(31)
    early["messages"][0]["content"] = "NOW " + early["messages"][0]["content"]
    assert sim.predict(prompt(early), at=10.0).cache_read_tokens == 0


def test_openai_responses_api_and_reasoning_effort_scope():
    body = {"model": "gpt-5", "instructions": words(1500, "i"), "input": "hi", "reasoning": {"effort": "low"}}
    sim = OpenAICacheSimulator()
    sim.record(prompt(body, "/v1/responses"), at=0.0, response_started_at=1.0)
    assert sim.predict(prompt(body, "/v1/responses"), at=5.0).cache_read_tokens == 1408
    body["reasoning"] = {"effort": "high"}
    assert sim.predict(prompt(body, "/v1/responses"), at=5.0).reason == "cold"


def marked(n: int, tag: str) -> dict:
    return {"type": "text", "text": words(n, tag), "prompt_cache_breakpoint": {"mode": "explicit"}}


def test_gpt56_explicit_breakpoints():
    def body(user: str, options: dict | None = None, system_marker: bool = True) -> dict:
        system = marked(1200, "s") if system_marker else {"type": "text", "text": words(1200, "s")}
        b = {"model": "gpt-5.6", "prompt_cache_key": "k",
             "messages": [{"role": "system", "content": [system]}, {"role": "user", "content": user}]}
        if options:
            b["prompt_cache_options"] = options
        return b

    sim = OpenAICacheSimulator()
    first = sim.record(prompt(body("first question")), at=0.0, response_started_at=1.0)
    assert first.breakpoints == (0, 1) and first.cache_write_tokens == first.prompt_tokens
    second = sim.record(prompt(body("another question")), at=10.0, response_started_at=11.0)
    assert second.cache_read_tokens == 1200 and second.hit_position == 0  # exact, no 128-token rounding
    assert second.cache_write_tokens == second.prompt_tokens - 1200

    # explicit mode without markers: nothing cached, nothing charged
    none = OpenAICacheSimulator().predict(prompt(body("q", {"mode": "explicit"}, system_marker=False)), at=0.0)
    assert (none.cache_read_tokens, none.cache_write_tokens, none.reason) == (0, 0, "no_breakpoint")

    # implicit only: a changing tail reads nothing (no fallback to the unmarked prefix)
    sim = OpenAICacheSimulator()
    sim.record(prompt(body("one", system_marker=False)), at=0.0, response_started_at=1.0)
    tail = sim.predict(prompt(body("two", system_marker=False)), at=10.0)
    assert tail.cache_read_tokens == 0 and tail.cache_write_tokens == tail.prompt_tokens


def test_gpt56_growing_chat_reads_the_earlier_implicit_breakpoint():
    b = {"model": "gpt-5.6", "messages": [{"role": "system", "content": words(1200, "s")},
                                          {"role": "user", "content": "first"}]}
    sim = OpenAICacheSimulator()
    first = sim.record(prompt(b), at=0.0, response_started_at=1.0)
    b["messages"] += [{"role": "assistant", "content": "answer"}, {"role": "user", "content": "second"}]
    pred = sim.record(prompt(b), at=10.0, response_started_at=11.0)
    assert pred.cache_read_tokens == first.prompt_tokens
    strict = OpenAICacheSimulator(implicit_history_reads=False)
    b2 = dict(b, messages=b["messages"][:2])
    strict.record(prompt(b2), at=0.0, response_started_at=1.0)
    assert strict.predict(prompt(b), at=10.0).cache_read_tokens == 0


def test_simulator_for():
    assert isinstance(simulator_for("anthropic"), AnthropicCacheSimulator)
    assert isinstance(simulator_for("openai-chat"), OpenAICacheSimulator)


# --- explain_mismatch ---------------------------------------------------------------------------------------


def hit_prediction(**changes) -> Prediction:
    base = {
        "prompt_tokens": 2000, "cache_read_tokens": 1800, "cache_write_tokens": 200, "uncached_tokens": 200,
        "hit_position": 5, "reason": None, "provider": "anthropic", "model": "claude-sonnet-4-5",
        "minimum_tokens": 1024, "hit_idle_s": 60.0, "hit_ready_s": 58.0,
    }
    return Prediction(**{**base, **changes})


def test_explain_mismatch_agrees_within_the_tolerance():
    pred = hit_prediction()
    assert explain_mismatch(pred, Usage(prompt_tokens=2100, cache_read_tokens=1900, cache_write_tokens=200)) is None
    assert explain_mismatch(pred, Usage(prompt_tokens=2000, cache_read_tokens=1500, cache_write_tokens=500)) is not None
    assert explain_mismatch(pred, Usage(prompt_tokens=2000, cache_read_tokens=1500, cache_write_tokens=500),
                            tolerance=0.2) is None


def test_explain_mismatch_reasons():
    missed = Usage(prompt_tokens=2000, cache_read_tokens=0, cache_write_tokens=2000)
    assert explain_mismatch(hit_prediction(), missed) == "server_side"  # identical prefix, inside the TTL
    assert explain_mismatch(hit_prediction(hit_idle_s=1200.0), missed) == "ttl_expired"  # a 1h TTL applied as 5m
    assert explain_mismatch(hit_prediction(hit_ready_s=0.3), missed) == "not_yet_written"
    assert explain_mismatch(hit_prediction(hit_ready_s=None), missed) == "not_yet_written"
    assert explain_mismatch(hit_prediction(), Usage(prompt_tokens=2000)) == "below_minimum"
    below = hit_prediction(cache_read_tokens=0, cache_write_tokens=0, uncached_tokens=2000, hit_position=None,
                           reason="below_minimum", hit_idle_s=None, hit_ready_s=None)
    assert explain_mismatch(below, Usage(prompt_tokens=2000, cache_write_tokens=2000)) == "below_minimum"
    expired = hit_prediction(cache_read_tokens=0, cache_write_tokens=2000, reason="ttl_expired", hit_position=None)
    provider_read = Usage(prompt_tokens=2000, cache_read_tokens=1800, cache_write_tokens=200)
    assert explain_mismatch(expired, provider_read) == "ttl_expired"
    cold = hit_prediction(cache_read_tokens=0, cache_write_tokens=2000, reason="cold", hit_position=None)
    assert explain_mismatch(cold, provider_read) == "server_side"


def test_explain_mismatch_on_simulated_requests():
    sim = AnthropicCacheSimulator()
    p = prompt(conversation(1))
    sim.record(p, at=0.0)  # response start unknown
    pred = sim.record(p, at=0.5)
    assert pred.cache_read_tokens == p.prompt_tokens
    missed = Usage(prompt_tokens=p.prompt_tokens, cache_write_tokens=p.prompt_tokens)
    assert explain_mismatch(pred, missed) == "not_yet_written"

    sim = OpenAICacheSimulator()
    o = prompt(chat(1100))
    sim.record(o, at=0.0, response_started_at=1.0)
    pred = sim.predict(o, at=30.0)
    assert pred.cache_read_tokens == 1024
    assert explain_mismatch(pred, Usage(prompt_tokens=1010, cache_read_tokens=0)) == "below_minimum"
    assert explain_mismatch(pred, Usage(prompt_tokens=1110, cache_read_tokens=0)) == "server_side"


@pytest.mark.parametrize("cls", [AnthropicCacheSimulator, OpenAICacheSimulator])
def test_prediction_json_round_trip(cls):
    pred = cls().predict(prompt(conversation(1)) if cls is AnthropicCacheSimulator else prompt(chat(1500)), at=0.0)
    data = json.loads(json.dumps(pred.to_json()))
    assert data["prompt_tokens"] == pred.prompt_tokens and data["reason"] == "cold"
    assert pred.to_usage().prompt_tokens == pred.prompt_tokens
