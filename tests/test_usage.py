"""Usage parsing from recorded responses and SSE streams, and the token-estimate error report."""

import json

import pytest

from bodies import claude_code_exchange
from cachelint.prompt import load_request
from cachelint.prompt.usage import estimate_error, from_response_body
from cachelint.sse import SSEParser, parse_events

ANTHROPIC_SSE = claude_code_exchange()["response"]["body"]
CHAT_SSE = (
    'data: {"id":"c1","choices":[{"index":0,"delta":{"content":"Hi"}}],"usage":null}\n\n'
    'data: {"id":"c1","choices":[],"usage":{"prompt_tokens":2006,"completion_tokens":300,"total_tokens":2306,'
    '"prompt_tokens_details":{"cached_tokens":1920}}}\n\n'
    "data: [DONE]\n\n"
)
RESPONSES_SSE = (
    'event: response.created\ndata: {"type":"response.created","response":{"id":"r1","usage":null}}\n\n'
    'event: response.output_text.delta\ndata: {"type":"response.output_text.delta","delta":"Hi"}\n\n'
    'event: response.completed\ndata: {"type":"response.completed","response":{"id":"r1","usage":{"input_tokens":5000,'
    '"input_tokens_details":{"cached_tokens":4096},"output_tokens":12}}}\n\n'
)


def test_anthropic_stream_usage_last_value_wins():
    usage = from_response_body("anthropic", ANTHROPIC_SSE)
    assert usage.prompt_tokens == 12 + 310 + 2240
    assert (usage.cache_read_tokens, usage.cache_write_tokens, usage.cache_write_5m_tokens) == (2240, 310, 310)
    assert usage.output_tokens == 57  # message_delta overrides message_start's 1
    assert usage.hit_rate == pytest.approx(2240 / 2562)


def test_openai_chat_final_usage_chunk():
    usage = from_response_body("openai-chat", CHAT_SSE)
    assert (usage.prompt_tokens, usage.cache_read_tokens, usage.uncached_tokens) == (2006, 1920, 86)


def test_responses_completed_event():
    usage = from_response_body("openai-responses", RESPONSES_SSE)
    assert (usage.prompt_tokens, usage.cache_read_tokens, usage.output_tokens) == (5000, 4096, 12)


def test_json_bodies():
    body = {"usage": {"input_tokens": 10, "cache_read_input_tokens": 90, "cache_creation_input_tokens": 0, "output_tokens": 3}}
    assert from_response_body("anthropic", body).prompt_tokens == 100
    assert from_response_body("anthropic", json.dumps(body)).cache_read_tokens == 90
    assert from_response_body("openai-chat", {"error": {"message": "overloaded"}}) is None


@pytest.mark.parametrize("provider, stream", [("anthropic", ANTHROPIC_SSE), ("openai-chat", CHAT_SSE), ("openai-responses", RESPONSES_SSE)])
def test_stream_split_at_every_byte_boundary_gives_the_same_events(provider, stream):
    raw = stream.replace("\n", "\r\n").encode()
    whole = parse_events(raw)
    for cut in range(1, len(raw)):
        parser = SSEParser()
        events = parser.feed(raw[:cut]) + parser.feed(raw[cut:]) + parser.close()
        assert events == whole, cut


def test_estimate_error_against_recorded_usage(tmp_path):
    path = tmp_path / "turn.json"
    path.write_text(json.dumps(claude_code_exchange()))
    loaded = load_request(path)
    err = estimate_error(loaded.prompt.prompt_tokens, loaded.usage)
    assert err["reported_prompt_tokens"] == 2562
    assert err["estimated_prompt_tokens"] == loaded.prompt.prompt_tokens
    assert err["error_tokens"] == loaded.prompt.prompt_tokens - 2562
    assert err["error_pct"] == round(100 * (loaded.prompt.prompt_tokens - 2562) / 2562, 1)


def test_usage_fed_byte_by_byte_equals_the_unstreamed_response():
    from cachelint.prompt.usage import StreamUsage

    parser, stream = SSEParser(), StreamUsage("anthropic")
    for byte in ANTHROPIC_SSE.encode():
        for event in parser.feed(bytes([byte])):
            stream.add(event)
    unstreamed = {"type": "message", "usage": {"input_tokens": 12, "cache_creation_input_tokens": 310, "cache_read_input_tokens": 2240,
                                               "cache_creation": {"ephemeral_5m_input_tokens": 310, "ephemeral_1h_input_tokens": 0}, "output_tokens": 57}}
    assert stream.usage == from_response_body("anthropic", unstreamed)


def test_counts_that_are_not_counts_are_ignored_not_passed_on():
    """A provider (or a stand-in) reporting strings, bools, negatives or floats must not put them in the store."""
    anthropic = from_response_body("anthropic", {"usage": {
        "input_tokens": "12", "cache_read_input_tokens": True, "cache_creation_input_tokens": -5, "output_tokens": "7",
        "cache_creation": {"ephemeral_5m_input_tokens": "3", "ephemeral_1h_input_tokens": 2.5}}})
    assert anthropic is not None
    assert (anthropic.prompt_tokens, anthropic.cache_read_tokens, anthropic.cache_write_tokens) == (0, 0, 0)
    assert (anthropic.output_tokens, anthropic.cache_write_5m_tokens, anthropic.cache_write_1h_tokens) == (None, None, None)
    openai = from_response_body("openai-chat", {"usage": {"prompt_tokens": 100, "completion_tokens": [1],
                                                          "prompt_tokens_details": {"cached_tokens": "64"}}})
    assert (openai.prompt_tokens, openai.cache_read_tokens, openai.output_tokens) == (100, 0, None)
