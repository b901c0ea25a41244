"""The canonical prompt model: adapters, pointers, tokens."""

import json
import pytest

from bodies import anthropic_body, claude_code_exchange, openai_chat_body, openai_responses_body
from cachelint.errors import CachelintError
from cachelint.prompt import build_prompt, exchange_from_json
from cachelint.prompt.load import detect_provider
from cachelint.prompt.pointer import join, resolve
from cachelint.tokens import counter_for


def prompt_of(body, **kw):
    return build_prompt(exchange_from_json(body), **kw)


def test_claude_code_request_orders_tools_system_messages():
    exchange = exchange_from_json(claude_code_exchange())
    prompt = build_prompt(exchange)
    assert prompt.provider == "anthropic"
    assert exchange.path == "/v1/messages?beta=true"
    sections = [b.section for b in prompt.blocks]
    assert sections == sorted(sections, key=["tools", "system", "messages"].index)
    assert [b.name for b in prompt.section_blocks("tools")] == ["Bash", "Glob", "Grep", "Read", "Edit"]
    system = prompt.section_blocks("system")
    assert [b.pointer for b in system] == ["/system/0/text", "/system/1/text"]
    assert all(b.cache_control == {"type": "ephemeral"} for b in system)
    # the moving breakpoint on the newest message is recorded but not part of the content
    last = prompt.blocks[-1]
    assert last.cache_control == {"type": "ephemeral"}
    assert "cache_control" not in last.text
    assert prompt.params == {"anthropic-beta": ["claude-code-20250219", "interleaved-thinking-2025-05-14"]}


def test_every_block_pointer_resolves_to_its_value():
    for body in (anthropic_body(), openai_chat_body(), openai_responses_body()):
        prompt = prompt_of(body)
        for block in prompt.blocks:
            node = resolve(body, block.pointer)
            if isinstance(node, dict):
                node = {k: v for k, v in node.items() if k != "cache_control"}
                if block.kind == "message_fields":
                    node = {k: node[k] for k in block.value}
            assert node == block.value, block.pointer


def test_anthropic_blocks_keep_types_and_shapes():
    prompt = prompt_of(anthropic_body())
    kinds = [(b.section, b.kind, b.role, b.shape) for b in prompt.section_blocks("messages")]
    assert kinds == [
        ("messages", "text", "user", "block"),  # a string is one text block (the Messages API shorthand)
        ("messages", "text", "assistant", "block"),
        ("messages", "tool_use", "assistant", "block"),
        ("messages", "tool_result", "user", "block"),
        ("messages", "text", "assistant", "block"),
        ("messages", "text", "user", "block"),
    ]


def test_openai_chat_leading_system_and_developer_messages_are_the_system_prompt():
    prompt = prompt_of(openai_chat_body())
    assert prompt.provider == "openai-chat"
    system = prompt.section_blocks("system")
    assert [b.text for b in system] == ["You are a travel assistant. Be brief.", "Prefer metric units."]
    calls = [b for b in prompt.blocks if b.kind == "tool_call"]
    assert calls[0].pointer == "/messages/3/tool_calls/0"
    fields = [b for b in prompt.blocks if b.kind == "message_fields"]
    assert fields[0].value == {"tool_call_id": "call_1"}
    assert "temperature" not in prompt.params


def test_openai_chat_response_format_is_a_schema_block_after_tools():
    body = openai_chat_body()
    body["response_format"] = {"type": "json_schema", "json_schema": {"name": "answer", "schema": {"type": "object"}}}
    prompt = prompt_of(body)
    sections = [b.section for b in prompt.blocks]
    assert sections.index("schema") == len(prompt.section_blocks("tools"))
    assert sections.index("schema") < sections.index("system")


def test_openai_responses_instructions_and_items():
    prompt = prompt_of(openai_responses_body())
    assert prompt.provider == "openai-responses"
    assert prompt.section_blocks("system")[0].pointer == "/instructions"
    assert [b.kind for b in prompt.section_blocks("messages")] == ["text", "function_call", "function_call_output", "text", "text"]
    assert prompt.params == {"reasoning.effort": "medium"}
    assert prompt_of({"model": "gpt-5", "input": "hi"}).blocks[0].pointer == "/input"


@pytest.mark.parametrize(
    "path, body, provider",
    [
        ("/v1/messages?beta=true", {"messages": []}, "anthropic"),
        ("/v1/chat/completions", {"messages": []}, "openai-chat"),
        ("/v1/responses", {"input": "x"}, "openai-responses"),
        (None, {"model": "claude-opus-4-5", "messages": []}, "anthropic"),
        (None, {"model": "x", "system": "s", "messages": []}, "anthropic"),
        (None, {"model": "x", "messages": [{"role": "system", "content": "s"}]}, "openai-chat"),
        (None, {"model": "x", "input": []}, "openai-responses"),
    ],
)
def test_provider_detection(path, body, provider):
    assert detect_provider(body, path) == provider


@pytest.mark.parametrize(
    "data, message",
    [
        ([1, 2], "no known request shape"),
        ({"model": "x"}, "no known request shape"),
        ({"messages": "hi"}, "/messages must be a list"),
        ({"model": "claude-x", "messages": [{"role": "user", "content": 3}]}, "/messages/0/content must be a string"),
        ({"model": "claude-x", "messages": [{"role": "user", "content": [{"text": "no type"}]}]}, "/messages/0/content/0 is not a content block"),
        ({"model": "gpt-4o", "messages": [{"content": "no role"}], "tools": []}, "/messages/0 is not a message"),
        ({"request": {"body": "{not json"}}, "not JSON"),
    ],
)
def test_bad_bodies_raise_one_clear_error(data, message):
    with pytest.raises(CachelintError, match=message.replace("/", "/")):
        build_prompt(exchange_from_json(data))


def test_tokens_are_counted_per_block_and_cached_by_content():
    counter = counter_for("openai-chat", "gpt-4o")
    assert counter.encode("hello world") == [24912, 2375]  # o200k_base, as published by OpenAI
    body = openai_chat_body()
    first = prompt_of(body)
    assert first.prompt_tokens == sum(b.tokens for b in first.blocks) > 0
    misses = counter._cache.misses
    body["messages"].append({"role": "assistant", "content": "Tomorrow brings sun and 5 °C."})
    grown = prompt_of(body)
    # only the new message was tokenized: a growing conversation costs O(new tokens)
    assert counter._cache.misses - misses == 1
    assert grown.prompt_tokens > first.prompt_tokens


def test_json_pointer_escaping():
    doc = {"a/b": {"m~n": [10, 20]}}
    pointer = join("", "a/b", "m~n", 1)
    assert pointer == "/a~1b/m~0n/1"
    assert resolve(doc, pointer) == 20


def test_the_next_request_reuses_the_blocks_it_shares_and_counts_only_new_text():
    from cachelint.prompt.load import Exchange, build_prompt

    first = {"model": "claude-sonnet-4-5", "system": [{"type": "text", "text": "You are terse.", "cache_control": {"type": "ephemeral"}}],
             "tools": [{"name": "read", "input_schema": {"type": "object"}}],
             "messages": [{"role": "user", "content": [{"type": "text", "text": "one", "cache_control": {"type": "ephemeral"}}]}]}
    second = json.loads(json.dumps(first))
    second["messages"][0]["content"][0].pop("cache_control")  # the breakpoint moves to the newest message
    second["messages"] += [{"role": "assistant", "content": "two"},
                           {"role": "user", "content": [{"type": "text", "text": "three", "cache_control": {"type": "ephemeral"}}]}]
    p1 = build_prompt(Exchange(first))
    p2 = build_prompt(Exchange(second), previous=p1)
    fresh = build_prompt(Exchange(second))
    assert [(b.pointer, b.value, b.tokens, b.cache_control, b.digest) for b in p2.blocks] == \
           [(b.pointer, b.value, b.tokens, b.cache_control, b.digest) for b in fresh.blocks]
    assert p2.blocks[0] is p1.blocks[0] and p2.blocks[1] is p1.blocks[1]  # tools and system: the same objects
    assert p2.blocks[2] is not p1.blocks[2]  # its marker moved: a new block, counted again
    other = build_prompt(Exchange({**second, "system": "Another prompt."}), previous=p1)
    assert other.blocks[1] is not p1.blocks[1] and other.blocks[1].value == "Another prompt."


@pytest.mark.parametrize("before, after", [
    ({"a": 1, "b": 2}, {"b": 2, "a": 1}),
    ({"n": 1}, {"n": 1.0}),
    ({"n": 1}, {"n": True}),
    ([{"x": [1, {"y": "z"}]}], [{"x": [1, {"y": "z "}]}]),
])
def test_a_reused_block_must_serialize_to_the_same_bytes(before, after):
    """Key order and number types change the prefix bytes, though Python's == calls the values equal."""
    from cachelint.prompt.load import Exchange, build_prompt

    def body(value):
        return {"model": "claude-sonnet-4-5", "messages": [{"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f", "input": value}]},
                                                           {"role": "user", "content": "next"}]}

    p1 = build_prompt(Exchange(body(before)))
    p2 = build_prompt(Exchange(body(after)), previous=p1)
    assert p2.blocks[0] is not p1.blocks[0] and p2.blocks[0].text != p1.blocks[0].text
    assert p2.blocks[1] is p1.blocks[1]


def test_reuse_holds_for_negative_zero_deep_nesting_and_bodies_changed_in_place():
    """Found by a review: -0.0 == 0.0 in Python but not in bytes; a 700-deep value must not overflow the stack on
    the second request; a body changed in place after it was built must not be taken as unchanged."""
    from cachelint.prompt.load import Exchange, build_prompt

    def body(value):
        return {"model": "gpt-4o", "messages": [{"role": "user", "content": [{"type": "text", "text": "x"}, {"type": "input_audio", "v": value}]},
                                                {"role": "user", "content": "next"}]}

    zero = build_prompt(Exchange(body(0.0)))
    negative = build_prompt(Exchange(body(-0.0)), previous=zero)
    assert negative.blocks[1].text.endswith('"v":-0.0}') and negative.blocks[1] is not zero.blocks[1]

    deep: list = []
    for _ in range(700):
        deep = [deep]
    first = build_prompt(Exchange(body(deep)))
    again = build_prompt(Exchange(json.loads(json.dumps(body(deep)))), previous=first)
    assert again.blocks[1] is first.blocks[1]

    shared = {"model": "claude-sonnet-4-5", "messages": [{"role": "user", "content": [{"type": "text", "text": "a", "cache_control": {"type": "ephemeral"}}]}]}
    p1 = build_prompt(Exchange(shared))
    shared["messages"][0]["content"][0].pop("cache_control")  # SDK-style code moving its marker in place
    shared["messages"].append({"role": "assistant", "content": "b"})
    p2 = build_prompt(Exchange(shared), previous=p1)
    assert p2.blocks[0].cache_control is None and len(p2.blocks) == 2


def test_a_reused_history_is_held_once():
    from cachelint.prompt.load import Exchange, build_prompt

    first = {"model": "claude-sonnet-4-5", "system": "s", "messages": [{"role": "user", "content": "one"}]}
    second = json.loads(json.dumps(first))
    second["messages"].append({"role": "assistant", "content": "two"})
    p1 = build_prompt(Exchange(first))
    p2 = build_prompt(Exchange(second), previous=p1)
    assert p2.body["messages"][0] is p1.body["messages"][0]  # the previous request's object, not a second copy
    assert p2.body["messages"][1] is second["messages"][1] and second["messages"][0] is not p1.body["messages"][0]
