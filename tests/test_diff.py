"""`cachelint diff`: one test per cause and detail, on realistic bodies."""

from __future__ import annotations

import pytest

from bodies import anthropic_body, claude_code_body, clone, openai_chat_body, openai_responses_body
from cachelint.diff import explain
from cachelint.prompt import Exchange, build_prompt
from cachelint.prompt.pointer import resolve
from cachelint.tokens import counter_for


def diff(before: dict, after: dict, before_headers=None, after_headers=None, path=None):
    b = build_prompt(Exchange(before, path=path, headers=before_headers))
    a = build_prompt(Exchange(after, path=path, headers=after_headers))
    return explain(b, a, counter_for(a.provider, a.model)), b, a


def assert_wasted(brk, before_prompt):
    assert brk.before_prompt_tokens == before_prompt.prompt_tokens
    assert brk.reprefilled_tokens == min(brk.before_prompt_tokens, brk.after_prompt_tokens) - brk.common_prefix_tokens
    assert brk.reprefilled_tokens > 0


# --- cause: none -------------------------------------------------------------------------------------------


def test_identical_requests_are_no_break():
    brk, b, _ = diff(anthropic_body(), anthropic_body())
    assert (brk.cause, brk.rule, brk.reprefilled_tokens) == ("none", None, 0)
    assert brk.common_prefix_tokens == b.prompt_tokens


def test_appended_turn_with_moved_breakpoint_is_no_break():
    before = claude_code_body()
    after = clone(before)
    del after["messages"][-1]["content"][-1]["cache_control"]
    after["messages"].append({"role": "assistant", "content": [{"type": "text", "text": "Done.", "cache_control": {"type": "ephemeral"}}]})
    brk, b, a = diff(before, after)
    assert brk.cause == "none"
    assert brk.common_prefix_tokens == b.prompt_tokens < a.prompt_tokens


def test_parameters_outside_the_cache_key_are_no_break():
    before, after = anthropic_body(), anthropic_body()
    after.update(stream=True, max_tokens=9, temperature=0.9, top_p=0.5, stop_sequences=["x"], metadata={"user_id": "u2"})
    assert diff(before, after)[0].cause == "none"


# --- model and parameters ------------------------------------------------------------------------------------


def test_model_changed():
    after = anthropic_body()
    after["model"] = "claude-haiku-4-5"
    brk, b, _ = diff(anthropic_body(), after)
    assert (brk.cause, brk.detail, brk.rule) == ("model_changed", "model", "CL401")
    assert brk.pointer == "/model" and brk.char == len("claude-")
    assert brk.common_prefix_tokens == 0 and brk.reprefilled_tokens == b.prompt_tokens


def test_tool_choice_change_keeps_tools_and_system_on_anthropic():
    before, after = anthropic_body(), anthropic_body()
    before["tool_choice"] = {"type": "auto"}
    after["tool_choice"] = {"type": "any"}
    brk, b, _ = diff(before, after)
    assert (brk.cause, brk.detail, brk.rule, brk.pointer) == ("params_changed", "tool_choice", "CL401", "/tool_choice/type")
    # Anthropic: tool_choice invalidates the messages cache only
    assert brk.common_prefix_tokens == b.tokens_before_section("messages") > 0
    assert_wasted(brk, b)


def test_thinking_toggled():
    after = anthropic_body()
    after["thinking"] = {"type": "enabled", "budget_tokens": 2048}
    brk, _, _ = diff(anthropic_body(), after)
    assert (brk.cause, brk.detail, brk.before) == ("params_changed", "thinking", "(absent)")


def test_anthropic_beta_header_set_changed():
    brk, b, _ = diff(anthropic_body(), anthropic_body(), {"anthropic-beta": "a-1,b-2"}, {"anthropic-beta": "b-2"})
    assert (brk.cause, brk.detail, brk.pointer, brk.common_prefix_tokens) == ("params_changed", "anthropic-beta", None, 0)
    # the same set in another order is the same cache key
    assert diff(anthropic_body(), anthropic_body(), {"anthropic-beta": "a-1,b-2"}, {"anthropic-beta": "b-2, a-1"})[0].cause == "none"


def test_openai_reasoning_effort_changed():
    after = openai_responses_body()
    after["reasoning"] = {"effort": "high"}
    brk, _, _ = diff(openai_responses_body(), after)
    assert (brk.cause, brk.detail, brk.pointer) == ("params_changed", "reasoning.effort", "/reasoning/effort")


def test_openai_tool_choice_is_not_part_of_the_prefix():
    after = openai_chat_body()
    after["tool_choice"] = {"type": "allowed_tools", "mode": "auto", "tools": [{"type": "function", "function": {"name": "get_time"}}]}
    assert diff(openai_chat_body(), after)[0].cause == "none"


def test_openai_response_format_changed():
    before, after = openai_chat_body(), openai_chat_body()
    before["response_format"] = {"type": "json_schema", "json_schema": {"name": "a", "schema": {"type": "object"}}}
    after["response_format"] = {"type": "json_schema", "json_schema": {"name": "b", "schema": {"type": "object"}}}
    brk, b, _ = diff(before, after)
    assert (brk.cause, brk.detail, brk.pointer, brk.char) == ("params_changed", "response_format", "/response_format/json_schema/name", 0)
    assert brk.common_prefix_tokens >= b.tokens_before_section("schema")


# --- tools -------------------------------------------------------------------------------------------------


def test_tools_reordered():
    after = anthropic_body()
    after["tools"] = [after["tools"][1], after["tools"][0], after["tools"][2]]
    brk, b, _ = diff(anthropic_body(), after)
    assert (brk.cause, brk.detail, brk.rule, brk.pointer) == ("tools_changed", "tools_reordered", "CL201", "/tools/0")
    assert brk.common_prefix_tokens == 0
    assert "lookup_order, refund" in brk.before and "refund, lookup_order" in brk.after
    assert_wasted(brk, b)


def test_tool_added_and_removed():
    added = anthropic_body()
    added["tools"].append({"name": "cancel", "description": "Cancel an order.", "input_schema": {"type": "object"}})
    brk, b, _ = diff(anthropic_body(), added)
    assert (brk.cause, brk.detail, brk.rule, brk.pointer) == ("tools_changed", "tool_added", "CL202", "/tools/3")
    assert brk.extra["tools_added"] == ["cancel"]
    assert brk.common_prefix_tokens == b.tokens_before_section("system")

    removed = anthropic_body()
    del removed["tools"][1]
    brk, _, _ = diff(anthropic_body(), removed)
    assert (brk.detail, brk.rule, brk.pointer, brk.extra["tools_removed"]) == ("tool_removed", "CL202", "/tools/1", ["refund"])


def test_tool_edited():
    after = anthropic_body()
    after["tools"][2]["description"] = "Search the product manual and the FAQ."
    brk, b, _ = diff(anthropic_body(), after)
    assert (brk.cause, brk.detail, brk.rule) == ("tools_changed", "tool_edited", None)
    assert brk.pointer == "/tools/2/description" and brk.char == len("Search the product manual")
    assert_wasted(brk, b)


def test_tool_schema_json_key_order():
    after = anthropic_body()
    schema = after["tools"][1]["input_schema"]
    after["tools"][1]["input_schema"] = {"required": schema["required"], "type": "object", "properties": schema["properties"]}
    brk, _, _ = diff(anthropic_body(), after)
    assert (brk.cause, brk.detail, brk.rule) == ("tools_changed", "json_key_order", "CL102")
    assert brk.pointer == "/tools/1/input_schema/required"


# --- system ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "old, new, kind",
    [
        ("2026-11-29T10:31:07Z", "2026-11-29T10:32:41Z", "timestamp"),
        ("3f2b9c1e-8a4d-4e6f-9b1a-2c3d4e5f6a7b", "9a0e1b2c-3d4f-4a5b-8c6d-7e8f9a0b1c2d", "uuid"),
    ],
)
def test_system_volatile_value(old, new, kind):
    after = anthropic_body()
    after["system"][1]["text"] = after["system"][1]["text"].replace(old, new)
    brk, b, _ = diff(anthropic_body(), after)
    assert (brk.cause, brk.detail, brk.rule, brk.value_kind) == ("system_changed", "volatile_value", "CL101", kind)
    text = anthropic_body()["system"][1]["text"]
    assert brk.pointer == "/system/1/text" and brk.char == next(i for i, (x, y) in enumerate(zip(old, new)) if x != y) + text.index(old)
    assert new[: 8] in brk.after or new[-8:] in brk.after
    assert brk.common_prefix_tokens > b.tokens_before_section("system")
    assert_wasted(brk, b)


@pytest.mark.parametrize(
    "old, new, kind",
    [
        ("Today is 2026-11-29.", "Today is 2026-11-30.", "date"),
        ("Today is Sunday, Nov 29.", "Today is Monday, Nov 30.", "date"),
        ("Local time 10:31.", "Local time 10:32.", "time"),
        ("Turn 7 of this chat.", "Turn 8 of this chat.", "number"),
        ("nonce=9f8e7d6c5b4a", "nonce=0a1b2c3d4e5f", "hex"),
    ],
)
def test_openai_system_volatile_kinds(old, new, kind):
    before, after = openai_chat_body(), openai_chat_body()
    before["messages"][0]["content"] += " " + old
    after["messages"][0]["content"] += " " + new
    brk, _, _ = diff(before, after)
    assert (brk.cause, brk.detail, brk.value_kind, brk.pointer) == ("system_changed", "volatile_value", kind, "/messages/0/content")


def test_system_whitespace():
    after = anthropic_body()
    after["system"][0]["text"] = after["system"][0]["text"].replace("Answer briefly", "Answer  briefly") + "\n"
    brk, _, _ = diff(anthropic_body(), after)
    assert (brk.cause, brk.detail, brk.rule) == ("system_changed", "whitespace", None)


def test_system_text_edited_and_developer_message():
    after = openai_chat_body()
    after["messages"][1]["content"] = "Prefer imperial units."
    brk, _, _ = diff(openai_chat_body(), after)
    assert (brk.cause, brk.detail, brk.pointer, brk.char) == ("system_changed", "text_edited", "/messages/1/content", len("Prefer "))


def test_responses_instructions_changed():
    after = openai_responses_body()
    after["instructions"] += " Be kind."
    brk, _, _ = diff(openai_responses_body(), after)
    assert (brk.cause, brk.pointer) == ("system_changed", "/instructions")


def test_system_string_is_one_text_block():
    # The Messages API documents a string as shorthand for one text block: the same prefix, no break.
    before, after = anthropic_body(), anthropic_body()
    before["system"] = "You are terse."
    after["system"] = [{"type": "text", "text": "You are terse.", "cache_control": {"type": "ephemeral"}}]
    brk, b, a = diff(before, after)
    assert (brk.cause, brk.rule, brk.reprefilled_tokens) == ("none", None, 0)
    assert b.prompt_tokens == a.prompt_tokens


def test_system_content_shape_openai_chat():
    before, after = openai_chat_body(), openai_chat_body()
    after["messages"][0]["content"] = [{"type": "text", "text": before["messages"][0]["content"]}]
    brk, _, _ = diff(before, after)
    assert (brk.cause, brk.detail) == ("system_changed", "content_shape")


def test_system_embedded_json_key_order():
    before, after = anthropic_body(), anthropic_body()
    before["system"][0]["text"] += ' User profile: {"name": "Ada", "plan": "pro", "tz": "UTC"}.'
    after["system"][0]["text"] += ' User profile: {"plan": "pro", "name": "Ada", "tz": "UTC"}.'
    brk, _, _ = diff(before, after)
    assert (brk.cause, brk.detail, brk.rule) == ("system_changed", "json_key_order", "CL102")


# --- messages ----------------------------------------------------------------------------------------------


def test_history_truncated_from_the_front():
    before = anthropic_body()
    after = clone(before)
    after["messages"] = after["messages"][2:]
    brk, b, _ = diff(before, after)
    assert (brk.cause, brk.detail, brk.rule, brk.pointer) == ("messages_changed", "history_truncated", "CL301", "/messages/0")
    assert brk.extra["messages_dropped"] == 2
    assert brk.common_prefix_tokens == b.tokens_before_section("messages")
    assert_wasted(brk, b)


def test_history_compacted_into_a_summary():
    before = anthropic_body()
    before["messages"].append({"role": "assistant", "content": "Yes, until it is delivered."})
    after = clone(before)
    after["messages"] = [{"role": "user", "content": "Summary: order 1234 shipped with UPS."}] + after["messages"][3:]
    brk, _, _ = diff(before, after)
    assert (brk.cause, brk.detail, brk.rule, brk.extra["messages_dropped"]) == ("compaction", "history_summarized", None, 3)


def test_message_removed_in_the_middle():
    before = anthropic_body()
    after = clone(before)
    del after["messages"][3]
    brk, _, _ = diff(before, after)
    assert (brk.cause, brk.detail, brk.rule, brk.pointer) == ("messages_changed", "message_removed", "CL301", "/messages/3")


def test_message_edited():
    after = anthropic_body()
    after["messages"][3]["content"] = "It shipped with DHL."
    brk, b, _ = diff(anthropic_body(), after)
    assert (brk.cause, brk.detail, brk.rule) == ("messages_changed", "message_edited", "CL301")
    assert (brk.pointer, brk.char) == ("/messages/3/content", len("It shipped with "))
    assert_wasted(brk, b)


def test_volatile_value_in_an_earlier_message():
    before, after = anthropic_body(), anthropic_body()
    before["messages"][0]["content"] = "[sent 10:31:07] Where is my order 1234?"
    after["messages"][0]["content"] = "[sent 10:33:59] Where is my order 1234?"
    brk, _, _ = diff(before, after)
    assert (brk.cause, brk.detail, brk.value_kind, brk.rule) == ("messages_changed", "volatile_value", "time", "CL101")


def test_message_string_is_one_text_block():
    # Claude Code sends the newest user message as one text block with a breakpoint, then as a string.
    before = anthropic_body()
    before["messages"][0]["content"] = [{"type": "text", "text": "Where is my order 1234?", "cache_control": {"type": "ephemeral"}}]
    brk, _, _ = diff(before, anthropic_body())
    assert (brk.cause, brk.rule) == ("none", None)


def test_message_content_shape_openai_chat():
    before, after = openai_chat_body(), openai_chat_body()
    user = next(i for i, m in enumerate(before["messages"]) if m["role"] == "user")
    after["messages"][user]["content"] = [{"type": "text", "text": before["messages"][user]["content"]}]
    brk, _, _ = diff(before, after)
    assert (brk.cause, brk.detail, brk.rule) == ("messages_changed", "content_shape", "CL301")


def test_tool_use_input_key_order():
    before, after = openai_chat_body(), openai_chat_body()
    after["messages"][3]["tool_calls"][0]["function"]["arguments"] = "{\"unit\": \"C\", \"city\": \"Oslo\"}"
    brk, _, _ = diff(before, after)
    assert (brk.cause, brk.detail, brk.rule) == ("messages_changed", "json_key_order", "CL102")
    assert brk.pointer == "/messages/3/tool_calls/0/function/arguments"


def test_last_turns_dropped():
    before = anthropic_body()
    after = clone(before)
    after["messages"] = after["messages"][:3]
    brk, _, a = diff(before, after)
    assert (brk.cause, brk.detail) == ("messages_changed", "message_removed")
    assert brk.common_prefix_tokens == a.prompt_tokens and brk.reprefilled_tokens == 0


def test_location_pointer_names_a_node_of_after():
    after = anthropic_body()
    after["messages"][2]["content"][0]["content"] = "{\"status\": \"delivered\", \"carrier\": \"UPS\"}"
    brk, _, _ = diff(anthropic_body(), after)
    assert brk.pointer == "/messages/2/content/0/content"
    assert resolve(after, brk.pointer)[brk.char :].startswith("delivered")


@pytest.mark.parametrize("before, after, detail, pointer, before_pointer", [
    ({"model": "gpt-4o", "messages": [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "hi"}]},
     {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}, "system_removed", "/messages/0/content", None),
    ({"model": "claude-sonnet-4-5", "system": "You are terse.", "messages": [{"role": "user", "content": "hi"}]},
     {"model": "claude-sonnet-4-5", "messages": [{"role": "user", "content": "hi"}]}, "system_removed", "", "/system"),
    ({"model": "claude-sonnet-4-5", "messages": [{"role": "user", "content": "hi"}]},
     {"model": "claude-sonnet-4-5", "system": "You are terse.", "messages": [{"role": "user", "content": "hi"}]}, "system_added", "/system", None),
])
def test_a_system_prompt_dropped_or_added_is_named_as_such(before, after, detail, pointer, before_pointer):
    from cachelint.diff import explain
    from cachelint.diff.render import describe, fix
    from cachelint.prompt.load import Exchange, build_prompt
    from cachelint.tokens import counter_for

    pb, pa = build_prompt(Exchange(before)), build_prompt(Exchange(after))
    brk = explain(pb, pa, counter_for(pa.provider, pa.model))
    assert (brk.cause, brk.detail, brk.pointer, brk.extra.get("before_pointer")) == ("system_changed", detail, pointer, before_pointer)
    assert "system prompt" in describe(brk) and "system prompt" in fix(brk)


def diff_cli(*args: str, stdin: str | None = None):
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "cachelint", "diff", *args], input=stdin, capture_output=True, text=True, timeout=120)


def test_diff_reads_standard_input_for_a_dash(tmp_path):
    import json

    before = tmp_path / "before.json"
    before.write_text(json.dumps(anthropic_body()))
    after = anthropic_body()
    after["system"][1]["text"] = after["system"][1]["text"].replace("10:31:07", "10:45:00")
    out = diff_cli(str(before), "-", "--format", "json", stdin=json.dumps(after))
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert (data["cause"], data["detail"], data["identical"]) == ("system_changed", "volatile_value", False)
    assert json.loads(diff_cli("-", str(before), "--format", "json", stdin=json.dumps(after)).stdout)["cause"] == "system_changed"
    both = diff_cli("-", "-", stdin="{}")
    assert both.returncode == 2 and "only one of BEFORE and AFTER can be standard input" in both.stderr
    empty = diff_cli(str(before), "-", stdin="")
    assert empty.returncode == 2 and "standard input (-) is empty" in empty.stderr


def test_identical_requests_say_identical(tmp_path):
    import json

    path = tmp_path / "turn.json"
    path.write_text(json.dumps(anthropic_body()))
    out = diff_cli(str(path), str(path))
    assert out.returncode == 0 and out.stdout.startswith("identical: BEFORE and AFTER are the same request"), out.stdout
    assert json.loads(diff_cli(str(path), "-", "--format", "json", stdin=path.read_text()).stdout)["identical"] is True
    grown = anthropic_body()
    grown["messages"].append({"role": "assistant", "content": "Yes."})
    other = tmp_path / "next.json"
    other.write_text(json.dumps(grown))
    assert "identical" not in diff_cli(str(path), str(other)).stdout  # a turn appended: no break, but not the same


def test_a_jsonl_file_gets_a_hint_to_import_it(tmp_path):
    import json

    line = json.dumps({"request": {"path": "/v1/messages", "body": anthropic_body()}, "response": {"status": 200, "body": {}}})
    traffic = tmp_path / "traffic.jsonl"
    traffic.write_text(line + "\n" + line + "\n")
    single = tmp_path / "one.json"
    single.write_text(json.dumps(anthropic_body()))
    out = diff_cli(str(traffic), str(single))
    assert out.returncode == 2 and out.stderr.count("\n") == 1
    assert f"use `cachelint import {traffic}`" in out.stderr or f"`cachelint import {traffic}`" in out.stderr
    piped = diff_cli(str(single), "-", stdin=line + "\n" + line + "\n")
    assert piped.returncode == 2 and "cachelint import" in piped.stderr
