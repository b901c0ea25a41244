"""The local provider stand-in (tests/upstream.py), exercised by the real anthropic and openai SDK clients."""

from __future__ import annotations

import asyncio
import gzip
import json
import socket
import time

import anthropic
import httpx
import openai
import pytest
from upstream import Upstream, canonical, estimate_tokens, parse_faults

MODEL = "claude-sonnet-4-5"
GPT = "gpt-4o"
SYSTEM_TEXT = "A" * 4000  # 1000 tokens
USER = "hello there friend"  # 18 bytes -> 5 tokens


@pytest.fixture
def up():
    with Upstream() as server:
        yield server


def claude(up: Upstream) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=up.url, api_key="test-key", max_retries=0)


def gpt(up: Upstream) -> openai.OpenAI:
    return openai.OpenAI(base_url=up.url + "/v1", api_key="test-key", max_retries=0)


def cached_system(ttl: str | None = None) -> list[dict]:
    cc = {"type": "ephemeral", **({"ttl": ttl} if ttl else {})}
    return [{"type": "text", "text": SYSTEM_TEXT, "cache_control": cc}]


def usage_tuple(usage) -> tuple[int, int, int]:
    return usage.input_tokens, usage.cache_creation_input_tokens, usage.cache_read_input_tokens


def dechunk(data: bytes) -> bytes:
    out, rest = bytearray(), data
    while True:
        size_line, rest = rest.split(b"\r\n", 1)
        size = int(size_line, 16)
        if size == 0:
            assert rest == b"\r\n"
            return bytes(out)
        out += rest[:size]
        assert rest[size : size + 2] == b"\r\n"
        rest = rest[size + 2 :]


# ---------------------------------------------------------------------------------------------- basics


def test_tokens_are_utf8_bytes_over_four():
    assert [estimate_tokens(s) for s in ("", "a", "abcd", "abcde", "é" * 2, "ü" * 3)] == [0, 1, 1, 2, 1, 2]
    assert canonical({"b": 1, "a": [1, "é"]}) == '{"b":1,"a":[1,"é"]}'


def test_url_records_and_clean_stop():
    with Upstream() as server:
        url, port = server.url, server.port
        assert url == f"http://127.0.0.1:{port}"
        client = claude(server)
        message = client.beta.messages.create(model=MODEL, max_tokens=50, messages=[{"role": "user", "content": USER}])
        assert message.id == "msg_000001" and message.content[0].text == "ok: hello there friend"
        request, response = server.requests[0], server.responses[0].wait()
        assert request.method == "POST" and request.path == "/v1/messages?beta=true" and request.route == "/v1/messages"
        assert request.header("x-api-key") == "test-key" and request.header("anthropic-version")
        assert request.json["messages"][0]["content"] == USER and json.loads(request.body) == request.json
        assert response.status == 200 and response.complete and not response.stream
        assert response.header("request-id") == "req_000001"
        head, _, body = bytes(response.raw).partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200 OK\r\n") and b"content-length: %d" % len(body) in head
        assert body == bytes(response.body) == bytes(response.content)
        assert response.json == message.to_dict(exclude_none=True) | {"stop_sequence": None}
        client.close()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=1).close()


def test_unknown_route_and_bad_bodies(up):
    with httpx.Client(base_url=up.url) as http:
        r = http.get("/v1/models")
        assert r.status_code == 404 and r.json()["error"] == {
            "message": "Invalid URL (GET /v1/models)",
            "type": "invalid_request_error",
            "param": None,
            "code": None,
        }
        r = http.post("/v1/complete", headers={"anthropic-version": "2023-06-01"}, json={})
        assert r.status_code == 404 and r.json()["type"] == "error" and r.json()["error"]["type"] == "not_found_error"
        r = http.post("/v1/messages", content=b"{not json", headers={"content-type": "application/json"})
        assert r.status_code == 400
        assert r.json()["type"] == "error" and r.json()["error"]["type"] == "invalid_request_error"
        r = http.post("/v1/messages", json={"model": MODEL, "messages": []})
        assert r.status_code == 400 and r.json()["error"]["message"] == "max_tokens: Field required"
        for path in ("/v1/chat/completions", "/v1/responses"):
            r = http.post(path, content=b"nope")
            error = r.json()["error"]
            assert r.status_code == 400 and set(error) == {"message", "type", "param", "code"}
            assert error["type"] == "invalid_request_error"
        r = http.post("/v1/chat/completions", json={"model": GPT})
        assert r.status_code == 400 and r.json()["error"]["param"] == "messages"
        assert up.requests[2].json is None and up.requests[2].body == b"{not json"
        r = http.post(
            "/v1/messages/count_tokens",
            json={"model": MODEL, "system": SYSTEM_TEXT, "messages": [{"role": "user", "content": USER}]},
        )
        assert r.json() == {"input_tokens": 1005}
    with pytest.raises(anthropic.BadRequestError) as err:
        claude(up).messages.create(model=MODEL, max_tokens=10, messages=[])
    assert err.value.body["error"]["type"] == "invalid_request_error"


# ----------------------------------------------------------------------------------------- anthropic


def test_anthropic_breakpoint_writes_then_reads(up):
    client = claude(up)
    messages = [{"role": "user", "content": USER}]
    first = client.messages.create(model=MODEL, max_tokens=100, system=cached_system(), messages=messages)
    assert usage_tuple(first.usage) == (5, 1000, 0)
    assert first.usage.cache_creation.ephemeral_5m_input_tokens == 1000
    assert first.usage.cache_creation.ephemeral_1h_input_tokens == 0
    assert first.usage.output_tokens == estimate_tokens("ok: hello there friend") == 6
    second = client.messages.create(model=MODEL, max_tokens=100, system=cached_system(), messages=messages)
    assert usage_tuple(second.usage) == (5, 0, 1000)
    # the conversation grows; the breakpoint moves to the newest message: read the system, write the rest
    grown = messages + [
        {"role": "assistant", "content": "ok: hello there friend"},  # 6 tokens
        {
            "role": "user",
            "content": [{"type": "text", "text": "and more", "cache_control": {"type": "ephemeral"}}],
        },  # 2
    ]
    third = client.messages.create(model=MODEL, max_tokens=100, system=cached_system(), messages=grown)
    assert usage_tuple(third.usage) == (0, 13, 1000)
    fourth = client.messages.create(model=MODEL, max_tokens=100, system=cached_system(), messages=grown)
    assert usage_tuple(fourth.usage) == (0, 0, 1013)
    assert up.responses[3].usage["cache_read_input_tokens"] == 1013


def test_anthropic_cache_is_per_model_betas_and_params(up):
    client = claude(up)
    kw = {"max_tokens": 100, "system": cached_system(), "messages": [{"role": "user", "content": USER}]}
    client.messages.create(model=MODEL, **kw)
    assert usage_tuple(client.messages.create(model="claude-opus-4-8", **kw).usage) == (5, 1000, 0)
    beta = client.messages.create(model=MODEL, extra_headers={"anthropic-beta": "context-1m-2025-08-07"}, **kw)
    assert usage_tuple(beta.usage) == (5, 1000, 0)
    # tool_choice is folded in where the messages start: a system breakpoint still reads
    tools = [{"name": "t", "description": "d", "input_schema": {"type": "object", "properties": {}}}]
    with_tools = dict(kw, tools=tools)
    client.messages.create(model=MODEL, **with_tools)
    assert (
        client.messages.create(model=MODEL, tool_choice={"type": "any"}, **with_tools).usage.cache_read_input_tokens
        > 1000
    )
    # a changed system block misses
    changed = dict(kw, system=[{"type": "text", "text": "B" + SYSTEM_TEXT[1:], "cache_control": {"type": "ephemeral"}}])
    assert client.messages.create(model=MODEL, **changed).usage.cache_read_input_tokens == 0


def test_anthropic_top_level_cache_control_and_ttl_split(up):
    client = claude(up)
    messages = [{"role": "user", "content": USER}]
    auto = {
        "model": MODEL,
        "max_tokens": 100,
        "system": SYSTEM_TEXT,
        "messages": messages,
        "extra_body": {"cache_control": {"type": "ephemeral"}},
    }
    assert usage_tuple(client.messages.create(**auto).usage) == (0, 1005, 0)
    assert usage_tuple(client.messages.create(**auto).usage) == (0, 0, 1005)
    up.clear_cache()
    mixed = [
        {
            "role": "user",
            "content": [{"type": "text", "text": USER, "cache_control": {"type": "ephemeral", "ttl": "5m"}}],
        }
    ]
    usage = client.messages.create(model=MODEL, max_tokens=100, system=cached_system("1h"), messages=mixed).usage
    assert usage_tuple(usage) == (0, 1005, 0)
    assert (usage.cache_creation.ephemeral_1h_input_tokens, usage.cache_creation.ephemeral_5m_input_tokens) == (1000, 5)


def test_anthropic_breakpoint_rules_are_enforced(up):
    client = claude(up)
    five = [{"type": "text", "text": f"block {i}", "cache_control": {"type": "ephemeral"}} for i in range(5)]
    with pytest.raises(
        anthropic.BadRequestError, match="A maximum of 4 blocks with cache_control may be provided. Found 5."
    ):
        client.messages.create(model=MODEL, max_tokens=10, messages=[{"role": "user", "content": five}])
    late_1h = [
        {
            "role": "user",
            "content": [{"type": "text", "text": "x", "cache_control": {"type": "ephemeral", "ttl": "1h"}}],
        }
    ]
    with pytest.raises(anthropic.BadRequestError, match="ttl='1h'"):
        client.messages.create(model=MODEL, max_tokens=10, system=cached_system("5m"), messages=late_1h)


def test_anthropic_minimum_and_lookback_window():
    blocks = [{"type": "text", "text": f"block number {i:04d}"} for i in range(40)]  # 5 tokens each

    def convo(n: int) -> list[dict]:
        content = [dict(b) for b in blocks[:n]]
        content[-1]["cache_control"] = {"type": "ephemeral"}
        return [{"role": "user", "content": content}]

    with Upstream(anthropic_min_tokens=60) as server:
        client = claude(server)
        small = client.messages.create(model=MODEL, max_tokens=10, messages=convo(10)).usage  # 50 tokens < 60
        assert usage_tuple(small) == (50, 0, 0)
        # Anthropic's worked example: write at 12, hit at 12 from 15, then a breakpoint at 35 misses 15
        assert usage_tuple(client.messages.create(model=MODEL, max_tokens=10, messages=convo(12)).usage) == (0, 60, 0)
        assert usage_tuple(client.messages.create(model=MODEL, max_tokens=10, messages=convo(15)).usage) == (0, 15, 60)
        assert usage_tuple(client.messages.create(model=MODEL, max_tokens=10, messages=convo(35)).usage) == (0, 175, 0)
        assert usage_tuple(client.messages.create(model=MODEL, max_tokens=10, messages=convo(36)).usage) == (0, 5, 175)


def test_anthropic_ttl_expiry_uses_the_clock():
    now = [1000.0]
    with Upstream(clock=lambda: now[0]) as server:
        client = claude(server)
        kw = {
            "model": MODEL,
            "max_tokens": 100,
            "system": cached_system(),
            "messages": [{"role": "user", "content": USER}],
        }
        client.messages.create(**kw)
        now[0] += 299
        assert client.messages.create(**kw).usage.cache_read_input_tokens == 1000  # the read refreshes it
        now[0] += 299
        assert client.messages.create(**kw).usage.cache_read_input_tokens == 1000
        now[0] += 301
        assert usage_tuple(client.messages.create(**kw).usage) == (5, 1000, 0)


def test_anthropic_streams_with_the_sdk_helpers():
    with Upstream(event_delay=0.01) as server:
        client = claude(server)
        kw = {
            "model": MODEL,
            "max_tokens": 100,
            "system": cached_system(),
            "messages": [{"role": "user", "content": USER}],
        }
        with client.messages.stream(**kw) as stream:
            text = "".join(stream.text_stream)
            final = stream.get_final_message()
        assert text == final.content[0].text == "ok: hello there friend"
        assert usage_tuple(final.usage) == (5, 1000, 0) and final.usage.output_tokens == 6
        assert final.stop_reason == "end_turn" and final.id == "msg_000001"
        response = server.responses[0].wait()
        assert response.stream and response.chunked and response.complete
        assert response.header("content-type") == "text/event-stream; charset=utf-8"
        assert response.header("transfer-encoding") == "chunked" and response.header("content-length") is None
        _head, _, framed = bytes(response.raw).partition(b"\r\n\r\n")
        assert dechunk(framed) == bytes(response.body) == bytes(response.content)
        assert len(response.chunks) == len(response.events) == 10  # one chunk per event, flushed separately
        gaps = [b - a for a, b in zip(response.chunk_times, response.chunk_times[1:])]
        assert min(gaps) >= 0.009
        events = [e.type for e in client.messages.create(stream=True, **kw)]
        assert events == [
            "message_start",
            "content_block_start",
            "content_block_delta",
            "content_block_delta",
            "content_block_delta",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop",
        ]  # the SDK drops ping
        assert b'event: ping\ndata: {"type":"ping"}\n\n' in server.responses[1].content
        start = server.responses[1].events[0]["data"]["message"]["usage"]
        assert (start["input_tokens"], start["cache_read_input_tokens"], start["output_tokens"]) == (5, 1000, 1)
        delta = server.responses[1].events[-2]["data"]["usage"]
        assert delta == {
            "input_tokens": 5,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 1000,
            "output_tokens": 6,
        }


def test_events_reach_the_client_before_the_stream_ends():
    with Upstream(event_delay=0.1) as server:
        with claude(server).messages.create(
            model=MODEL, max_tokens=100, stream=True, messages=[{"role": "user", "content": "one two three four"}]
        ) as stream:
            first = next(iter(stream))
            received = time.monotonic()
            assert first.type == "message_start"
            rest = list(stream)
        assert rest[-1].type == "message_stop"
        assert received < server.responses[0].chunk_times[-1] - 0.3


def test_async_anthropic():
    async def main(server: Upstream):
        client = anthropic.AsyncAnthropic(base_url=server.url, api_key="k", max_retries=0)
        kw = {
            "model": MODEL,
            "max_tokens": 100,
            "system": cached_system(),
            "messages": [{"role": "user", "content": USER}],
        }
        first = await client.messages.create(**kw)
        async with client.messages.stream(**kw) as stream:
            final = await stream.get_final_message()
        raw = [e.type async for e in await client.messages.create(stream=True, **kw)]
        await client.close()
        return first, final, raw

    with Upstream(event_delay=0.005) as server:
        first, final, raw = asyncio.run(main(server))
    assert usage_tuple(first.usage) == (5, 1000, 0) and usage_tuple(final.usage) == (5, 0, 1000)
    assert raw[0] == "message_start" and raw[-1] == "message_stop"


def test_max_tokens_truncates(up):
    message = claude(up).messages.create(model=MODEL, max_tokens=2, messages=[{"role": "user", "content": USER}])
    assert (
        message.stop_reason == "max_tokens"
        and message.content[0].text == "ok: hell"
        and message.usage.output_tokens == 2
    )


# -------------------------------------------------------------------------------------------- openai


def long_chat(user: str = "hi", system: str = "x" * 5000) -> list[dict]:
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]  # 1250 + 1 tokens


def test_openai_chat_cached_tokens_in_128_steps(up):
    client = gpt(up)
    short = client.chat.completions.create(model=GPT, messages=[{"role": "user", "content": USER}])
    assert (short.usage.prompt_tokens, short.usage.prompt_tokens_details.cached_tokens) == (5, 0)
    assert short.choices[0].message.content == "ok: hello there friend" and short.id == "chatcmpl-000001"
    first = client.chat.completions.create(model=GPT, messages=long_chat())
    assert (first.usage.prompt_tokens, first.usage.prompt_tokens_details.cached_tokens) == (1251, 0)
    second = client.chat.completions.create(model=GPT, messages=long_chat())
    assert second.usage.prompt_tokens_details.cached_tokens == 1152  # 1024 + 1*128 <= 1251
    assert second.usage.total_tokens == second.usage.prompt_tokens + second.usage.completion_tokens
    # the shared prefix is counted in whole 4-byte tokens, then floored to 1024 + k*128
    for extra, expected in ((512, 1664), (1051, 2176), (1052, 2304)):
        system = "x" * (5000 + extra * 4)
        client.chat.completions.create(model=GPT, messages=long_chat("abcdefgh-first", system))
        usage = client.chat.completions.create(model=GPT, messages=long_chat("abcdefgh-second", system)).usage
        shared = 1250 + extra + 2  # the system, then "abcd" "efgh" of the user message
        assert usage.prompt_tokens_details.cached_tokens == expected == 1024 + (shared - 1024) // 128 * 128
    # another model, another cache; below 1024 never cached
    assert (
        client.chat.completions.create(model="gpt-4.1", messages=long_chat()).usage.prompt_tokens_details.cached_tokens
        == 0
    )
    assert (
        client.chat.completions.create(
            model=GPT, messages=long_chat(system="x" * 4000)
        ).usage.prompt_tokens_details.cached_tokens
        == 0
    )


def test_openai_chat_streams(up):
    client = gpt(up)
    client.chat.completions.create(model=GPT, messages=long_chat())
    chunks = list(
        client.chat.completions.create(
            model=GPT, messages=long_chat(), stream=True, stream_options={"include_usage": True}
        )
    )
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "ok: hi"
    assert chunks[-1].choices == [] and chunks[-1].usage.prompt_tokens_details.cached_tokens == 1152
    assert all(c.usage is None for c in chunks[:-1])
    assert chunks[-2].choices[0].finish_reason == "stop"
    assert bytes(up.responses[1].content).endswith(b"data: [DONE]\n\n")
    plain = list(client.chat.completions.create(model=GPT, messages=long_chat(), stream=True))
    assert all(c.choices for c in plain) and b'"usage"' not in bytes(up.responses[2].content)
    with client.chat.completions.stream(
        model=GPT, messages=long_chat(), stream_options={"include_usage": True}
    ) as stream:
        final = stream.get_final_completion()
    assert final.choices[0].message.content == "ok: hi" and final.usage.prompt_tokens == 1251


def test_openai_responses(up):
    client = gpt(up)
    long_input = [
        {"role": "developer", "content": "y" * 6000},
        {"role": "user", "content": [{"type": "input_text", "text": USER}]},
    ]
    first = client.responses.create(model=GPT, input=long_input, instructions="be brief")
    assert first.output_text == "ok: hello there friend" and first.id == "resp_000001"
    assert (first.usage.input_tokens, first.usage.input_tokens_details.cached_tokens) == (2 + 1500 + 5, 0)
    assert first.usage.total_tokens == first.usage.input_tokens + first.usage.output_tokens
    events = list(client.responses.create(model=GPT, input=long_input, instructions="be brief", stream=True))
    assert events[0].type == "response.created" and events[-1].type == "response.completed"
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert "".join(e.delta for e in events if e.type == "response.output_text.delta") == "ok: hello there friend"
    assert events[-1].response.usage.input_tokens_details.cached_tokens == 1408  # 1024 + 3*128 <= 1507
    with client.responses.stream(model=GPT, input=long_input, instructions="be brief") as stream:
        final = stream.get_final_response()
    assert final.output_text == "ok: hello there friend" and final.usage.input_tokens_details.cached_tokens == 1408
    # chat and responses keep separate caches; so do prompt_cache_key values
    assert (
        client.responses.create(
            model=GPT, input=long_input, instructions="be brief", prompt_cache_key="k"
        ).usage.input_tokens_details.cached_tokens
        == 0
    )


def test_async_openai():
    async def main(server: Upstream):
        client = openai.AsyncOpenAI(base_url=server.url + "/v1", api_key="k", max_retries=0)
        await client.chat.completions.create(model=GPT, messages=long_chat())
        stream = await client.chat.completions.create(
            model=GPT, messages=long_chat(), stream=True, stream_options={"include_usage": True}
        )
        chunks = [c async for c in stream]
        events = [e async for e in await client.responses.create(model=GPT, input="hello world", stream=True)]
        await client.close()
        return chunks, events

    with Upstream(event_delay=0.005) as server:
        chunks, events = asyncio.run(main(server))
    assert chunks[-1].usage.prompt_tokens_details.cached_tokens == 1152
    assert events[-1].response.usage.input_tokens == 3


# -------------------------------------------------------------------------------------------- faults


def test_fault_names_parse():
    assert parse_faults("status=429, gzip").status == 429
    assert parse_faults("status=500-nobody").nobody
    assert parse_faults("big=10").big_size == 10 and parse_faults("drip=0.01").drip_delay == 0.01
    for bad in ("status=abc", "explode", "gzip=brotli"):
        with pytest.raises(ValueError):
            parse_faults(bad)
    with pytest.raises(ValueError):
        Upstream(fault="nope")


@pytest.mark.parametrize(
    "status, anthropic_error, openai_error, kind",
    [
        (429, anthropic.RateLimitError, openai.RateLimitError, "rate_limit_error"),
        (500, anthropic.InternalServerError, openai.InternalServerError, "api_error"),
        (529, anthropic.OverloadedError, openai.InternalServerError, "overloaded_error"),
    ],
)
def test_status_faults(up, status, anthropic_error, openai_error, kind):
    headers = {"x-upstream-fault": f"status={status}"}
    with pytest.raises(anthropic_error) as err:
        claude(up).messages.create(
            model=MODEL, max_tokens=10, messages=[{"role": "user", "content": "hi"}], extra_headers=headers
        )
    assert err.value.status_code == status and err.value.body["error"]["type"] == kind
    assert err.value.response.headers.get("retry-after") == ("1" if status == 429 else None)
    with pytest.raises(openai_error) as err:
        gpt(up).chat.completions.create(
            model=GPT, messages=[{"role": "user", "content": "hi"}], stream=True, extra_headers=headers
        )
    assert err.value.status_code == status and set(err.value.body) == {"message", "type", "param", "code"}
    with pytest.raises(openai_error):
        gpt(up).responses.create(model=GPT, input="hi", extra_headers=headers)


def test_status_500_without_body(up):
    with pytest.raises(anthropic.InternalServerError):
        claude(up).messages.create(
            model=MODEL,
            max_tokens=10,
            messages=[{"role": "user", "content": "hi"}],
            extra_headers={"x-upstream-fault": "status=500-nobody"},
        )
    response = up.responses[0]
    assert response.status == 500 and response.body == b"" and response.header("content-length") == "0"
    assert response.header("content-type") is None


def test_invalid_json(up):
    with pytest.raises(json.JSONDecodeError):
        claude(up).messages.create(
            model=MODEL,
            max_tokens=10,
            messages=[{"role": "user", "content": "hi"}],
            extra_headers={"x-upstream-fault": "invalid-json"},
        )
    with pytest.raises(json.JSONDecodeError):
        list(
            gpt(up).chat.completions.create(
                model=GPT,
                messages=[{"role": "user", "content": "hi"}],
                stream=True,
                extra_headers={"x-upstream-fault": "invalid-json"},
            )
        )
    assert up.responses[0].status == 200 and up.responses[0].json is None


def test_close_midstream(up):
    with pytest.raises(anthropic.APIConnectionError):
        claude(up).messages.create(
            model=MODEL,
            max_tokens=10,
            messages=[{"role": "user", "content": "hi"}],
            extra_headers={"x-upstream-fault": "close-midstream"},
        )
    got = []
    with pytest.raises(httpx.RemoteProtocolError):
        for event in claude(up).messages.create(
            model=MODEL,
            max_tokens=10,
            stream=True,
            messages=[{"role": "user", "content": "hi"}],
            extra_headers={"x-upstream-fault": "close-midstream"},
        ):
            got.append(event.type)
    assert got and got[0] == "message_start" and "message_stop" not in got
    response = up.responses[1].wait()
    assert response.aborted and not response.complete and not bytes(response.raw).endswith(b"0\r\n\r\n")
    with pytest.raises(httpx.RemoteProtocolError):
        list(
            gpt(up).responses.create(
                model=GPT, input="hi", stream=True, extra_headers={"x-upstream-fault": "close-midstream"}
            )
        )
    # the server keeps serving after an aborted connection
    assert (
        claude(up)
        .messages.create(model=MODEL, max_tokens=10, messages=[{"role": "user", "content": "hi"}])
        .content[0]
        .text
        == "ok: hi"
    )


def test_error_midstream(up):
    with pytest.raises(anthropic.APIStatusError, match="Overloaded"):
        list(
            claude(up).messages.create(
                model=MODEL,
                max_tokens=10,
                stream=True,
                messages=[{"role": "user", "content": "hi"}],
                extra_headers={"x-upstream-fault": "error-midstream"},
            )
        )
    with pytest.raises(openai.APIError):
        list(
            gpt(up).chat.completions.create(
                model=GPT,
                messages=[{"role": "user", "content": "hi"}],
                stream=True,
                extra_headers={"x-upstream-fault": "error-midstream"},
            )
        )
    assert up.responses[0].wait().complete and b"event: error" in bytes(up.responses[0].content)


def test_drip_gives_the_same_stream_one_byte_at_a_time():
    with Upstream() as server:
        client = claude(server)
        kw = {"model": MODEL, "max_tokens": 100, "messages": [{"role": "user", "content": USER}]}
        plain = [e.to_dict() for e in client.messages.create(stream=True, **kw)]
        dripped = [
            e.to_dict() for e in client.messages.create(stream=True, extra_headers={"x-upstream-fault": "drip"}, **kw)
        ]
        assert dripped == [
            {**e, "message": {**e["message"], "id": "msg_000002"}} if e["type"] == "message_start" else e for e in plain
        ]
        response = server.responses[1].wait()
        assert set(map(len, response.chunks)) == {1} and len(response.chunks) == len(response.content)
        # a JSON body drips too (chunked)
        message = client.messages.create(extra_headers={"x-upstream-fault": "drip"}, **kw)
        assert message.content[0].text == "ok: hello there friend" and server.responses[2].chunked


def test_no_usage(up):
    headers = {"x-upstream-fault": "no-usage"}
    events = [
        e.to_dict()
        for e in claude(up).messages.create(
            model=MODEL, max_tokens=10, stream=True, messages=[{"role": "user", "content": "hi"}], extra_headers=headers
        )
    ]
    assert "usage" not in events[0]["message"] and all("usage" not in e for e in events)
    chunks = list(
        gpt(up).chat.completions.create(
            model=GPT,
            messages=[{"role": "user", "content": "hi"}],
            stream=True,
            stream_options={"include_usage": True},
            extra_headers=headers,
        )
    )
    assert all(c.choices and c.usage is None for c in chunks)
    events = list(gpt(up).responses.create(model=GPT, input="hi", stream=True, extra_headers=headers))
    assert events[-1].type == "response.completed" and events[-1].response.usage is None
    assert (
        "usage"
        not in gpt(up)
        .chat.completions.create(model=GPT, messages=[{"role": "user", "content": "hi"}], extra_headers=headers)
        .to_dict()
    )
    assert up.responses[0].usage is not None  # what would have been reported is still recorded


def test_big(up):
    message = claude(up).messages.create(
        model=MODEL,
        max_tokens=10,
        messages=[{"role": "user", "content": "hi"}],
        extra_headers={"x-upstream-fault": "big=1000000"},
    )
    assert len(message.content[0].text) == 1_000_000 and message.usage.output_tokens == 250_000
    assert len(up.responses[0].body) > 1_000_000
    text = "".join(
        c.choices[0].delta.content or ""
        for c in gpt(up).chat.completions.create(
            model=GPT,
            messages=[{"role": "user", "content": "hi"}],
            stream=True,
            extra_headers={"x-upstream-fault": "big"},
        )
        if c.choices
    )
    assert len(text) == up.big_size == 4 * 1024 * 1024


def test_gzip(up):
    headers = {"x-upstream-fault": "gzip"}
    message = claude(up).messages.create(
        model=MODEL, max_tokens=10, messages=[{"role": "user", "content": USER}], extra_headers=headers
    )
    assert message.content[0].text == "ok: hello there friend"
    response = up.responses[0]
    assert response.header("content-encoding") == "gzip" and gzip.decompress(bytes(response.body)) == bytes(
        response.content
    )
    assert bytes(response.body) != bytes(response.content)
    chunks = list(
        gpt(up).chat.completions.create(
            model=GPT,
            messages=[{"role": "user", "content": USER}],
            stream=True,
            stream_options={"include_usage": True},
            extra_headers=headers,
        )
    )
    assert chunks[-1].usage.prompt_tokens == 5 and up.responses[1].header("content-encoding") == "gzip"
    up.responses[1].wait()  # the client stops at [DONE]; the gzip trailer may still be on its way
    assert gzip.decompress(bytes(up.responses[1].body)) == bytes(up.responses[1].content)
    with httpx.Client() as http:
        r = http.post(
            up.url + "/v1/messages",
            headers={"accept-encoding": "identity", **headers},
            json={"model": MODEL, "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]},
        )
        assert "content-encoding" not in r.headers and r.json()["type"] == "message"
        r = http.post(
            up.url + "/v1/messages",
            headers={"accept-encoding": "gzip"},
            json={"model": MODEL, "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]},
        )
        assert "content-encoding" not in r.headers  # never compressed without the fault
        r = http.post(
            up.url + "/v1/messages",
            headers={"accept-encoding": "identity", "x-upstream-fault": "gzip=force"},
            json={"model": MODEL, "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]},
        )
        assert r.headers["content-encoding"] == "gzip" and r.json()["type"] == "message"


def test_fault_precedence_instance_queue_header():
    with Upstream(fault="status=529") as server:
        client = claude(server)
        kw = {"model": MODEL, "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]}
        with pytest.raises(anthropic.OverloadedError):
            client.messages.create(**kw)
        server.queue_faults("status=429", None)
        with pytest.raises(anthropic.RateLimitError):
            client.messages.create(**kw)
        assert client.messages.create(**kw).content[0].text == "ok: hi"  # the queued None
        assert client.messages.create(extra_headers={"x-upstream-fault": "none"}, **kw).content[0].text == "ok: hi"
        server.fault = lambda request: "status=500" if request.json["max_tokens"] == 7 else None
        with pytest.raises(anthropic.InternalServerError):
            client.messages.create(**{**kw, "max_tokens": 7})
        client.messages.create(**kw)
        assert [r.fault for r in server.requests] == ["status=529", "status=429", None, "none", "status=500", None]
        assert [r.status for r in server.responses] == [529, 429, 200, 200, 500, 200]
        with pytest.raises(anthropic.BadRequestError, match="unknown upstream fault"):
            client.messages.create(extra_headers={"x-upstream-fault": "explode"}, **kw)


# ---------------------------------------------------------------------------------------------- websocket


def test_responses_over_websocket_continue_a_previous_response():
    from upstream import WebSocketClient

    with Upstream(event_delay=0.0) as up:
        ws = WebSocketClient(up.url + "/v1/responses")
        first_input = [{"role": "developer", "content": "B" * 4400}, {"role": "user", "content": USER}]
        ws.send_json({"type": "response.create", "model": GPT, "input": first_input, "generate": False})
        warm = ws.until("response.completed")
        assert warm[-1]["response"]["output"][0]["content"][0]["text"] == ""  # a prewarm generates nothing
        ws.send_json({"type": "response.create", "model": GPT, "input": first_input})
        events = ws.until("response.completed")
        assert [e["type"] for e in events][:2] == ["response.created", "response.in_progress"]
        done = events[-1]["response"]
        ws.send_json({"type": "response.create", "model": GPT, "previous_response_id": done["id"],
                      "input": [{"role": "user", "content": "and again"}]})
        second = ws.until("response.completed")[-1]["response"]
        ws.send_json({"type": "response.create", "model": GPT, "previous_response_id": "resp_nope", "input": []})
        error = ws.recv_json()
        ws.close()
    assert error["type"] == "error" and error["error"]["code"] == "previous_response_not_found"
    # the continued request is the full conversation: earlier input, the earlier output, the new items
    full = up.requests[2].json["input"]
    assert full[:2] == first_input and full[2]["id"] == done["output"][0]["id"] and full[3]["content"] == "and again"
    assert [r.method for r in up.requests] == ["WS", "WS", "WS"]
    assert second["usage"]["input_tokens"] > done["usage"]["input_tokens"] >= 1024
    assert second["usage"]["input_tokens_details"]["cached_tokens"] >= 1024  # the prefix the first request cached
    assert up.responses[2].usage == second["usage"]
