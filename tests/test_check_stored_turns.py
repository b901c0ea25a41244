"""CL102 on stored turns re-serialized for every request in a tree that keeps them in PostgreSQL jsonb (issue 14).

jsonb gives an object's keys back in its own order, so a tool call rendered with `json.dumps(call.args)` from the
model's dict in its own turn and from the reloaded row in every later turn is two different prefixes. Each case is
a small tree written the way apps write it (a session store with a JSONB column, a provider adapter that converts
the stored history); the quiet cases are the false alarms that must stay quiet.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from cachelint.check.engine import lint_source

STORE = """
    from sqlalchemy import Column, String
    from sqlalchemy.dialects.postgresql import JSONB

    class StoredEvent:
        id = Column(String, primary_key=True)
        content = Column(JSONB)
"""

CONVERTER = """
    import json

    def to_messages(events):
        messages = []
        for event in events:
            for call in event.tool_calls:
                messages.append({
                    "role": "assistant",
                    "tool_calls": [{"id": call.id, "type": "function",
                                    "function": {"name": call.name, "arguments": json.dumps(call.args)}}],
                })
            if event.tool_response is not None:
                messages.append({"role": "tool", "tool_call_id": event.call_id,
                                 "content": json.dumps(event.tool_response.result)})
        return messages
"""


def write(path: Path, source: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(source).lstrip("\n"))
    return path


def row_of(source: str, needle: str) -> int:
    return next(i for i, line in enumerate(textwrap.dedent(source).lstrip("\n").splitlines(), 1) if needle in line)


def lint_file(path: Path) -> list:
    return [f for f in lint_source(path.read_text(), str(path)) if f.code == "CL102"]


def app(tmp_path: Path, adapter: str, *, store: bool = True, name: str = "adapter.py") -> Path:
    """A package `app` with a session store (JSONB or not) and the adapter under test."""
    write(tmp_path / "app" / "__init__.py", "")
    write(tmp_path / "app" / "sessions.py", STORE if store else STORE.replace("postgresql import JSONB", "sqlite import JSON")
          .replace("Column(JSONB)", "Column(JSON)"))
    return write(tmp_path / "app" / name, adapter)


def test_tool_calls_and_results_of_stored_turns_rendered_per_request_are_found(tmp_path):
    found = lint_file(app(tmp_path, CONVERTER))
    assert [f.row for f in found] == [row_of(CONVERTER, "json.dumps(call.args)"), row_of(CONVERTER, "json.dumps(event.tool_response")]
    assert all(f.confidence == "likely" for f in found)
    assert "the arguments of a tool call" in found[0].message and "a tool result" in found[1].message
    assert "app/sessions.py:2" in found[0].message and "jsonb" in found[0].message
    assert found[0].fix is not None and "sort_keys=True" in str(found[0].fix)


def test_without_a_store_that_reorders_keys_the_same_code_renders_the_same_order(tmp_path):
    assert lint_file(app(tmp_path, CONVERTER, store=False)) == []


def test_sorted_keys_are_quiet(tmp_path):
    assert lint_file(app(tmp_path, CONVERTER.replace("json.dumps(call.args)", "json.dumps(call.args, sort_keys=True)")
                         .replace("json.dumps(event.tool_response.result)", "json.dumps(event.tool_response.result, sort_keys=True)"))) == []


def test_a_module_helper_that_returns_json_dumps_is_followed_and_named(tmp_path):
    source = """
        import json
        from litellm import ChatCompletionToolMessage, Function

        def _safe_json(obj):
            try:
                return json.dumps(obj, ensure_ascii=False)
            except TypeError:
                return str(obj)

        def _content_to_message(content):
            tool_messages = []
            for part in content.parts:
                if part.function_response:
                    tool_messages.append(ChatCompletionToolMessage(role="tool", tool_call_id=part.function_response.id,
                                                                   content=_safe_json(part.function_response.response)))
            return tool_messages
        """
    found = lint_file(app(tmp_path, source))
    assert [f.row for f in found] == [row_of(source, "content=_safe_json(")]
    assert "`_safe_json()`" in found[0].message and found[0].fix is None


def test_str_of_a_stored_tool_response_is_found_and_str_of_message_text_is_not(tmp_path):
    source = """
        from anthropic import types as anthropic_types

        def part_to_block(part):
            if part.function_response:
                content = ""
                if part.function_response.response.get("result"):
                    content = str(part.function_response.response["result"])
                return {"type": "tool_result", "tool_use_id": part.function_response.id, "content": content}

        def history(runs):
            out = []
            for run in runs:
                for msg in run.messages:
                    out.append({"role": "tool", "tool_call_id": msg.tool_call_id, "content": str(msg.content)})
            return out
        """
    found = lint_file(app(tmp_path, source))
    assert [f.row for f in found] == [row_of(source, "content = str(")]


def test_history_narrowed_to_fit_and_kept_on_the_agent_is_stored(tmp_path):
    source = """
        import json

        class Agent:
            def _build_messages(self, system_prompt, query):
                working_history = self._truncate_history_to_fit(self.chat_history, 4000)
                messages = [{"role": "system", "content": system_prompt}]
                for turn in working_history:
                    calls = turn.get("tool_calls") or []
                    for call in calls:
                        args = call.get("arguments")
                        args_str = json.dumps(args) if isinstance(args, dict) else (args or "{}")
                        messages.append({"role": "assistant", "content": None, "tool_calls": [
                            {"id": call["call_id"], "type": "function", "function": {"name": call["name"], "arguments": args_str}}]})
                messages.append({"role": "user", "content": query})
                return messages
        """
    found = lint_file(app(tmp_path, source))
    assert [f.row for f in found] == [row_of(source, "args_str = json.dumps(")]


def test_a_fresh_tool_result_put_into_a_message_once_is_quiet(tmp_path):
    source = """
        import json

        class Handler:
            def create_tool_message(self, tool_call, result):
                content = json.dumps(result) if not isinstance(result, str) else result
                return {"role": "tool", "tool_call_id": tool_call.id, "content": content}
        """
    assert lint_file(app(tmp_path, source)) == []


def test_an_agent_loop_helper_growing_the_callers_history_is_quiet(tmp_path):
    source = """
        import json

        def execute_tools(tool_calls, messages, executor):
            for call in tool_calls:
                result = executor.run(call.name, call.arguments)
                messages.append({"role": "assistant", "content": None, "tool_calls": [
                    {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": json.dumps(call.arguments)}}]})
                messages.append({"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)})
            return messages
        """
    assert lint_file(app(tmp_path, source)) == []


def test_a_function_that_sends_the_request_itself_appends_its_newest_turn_once(tmp_path):
    source = """
        import json
        from openai import OpenAI

        client = OpenAI()

        def run(history, tools):
            messages = list(history)
            response = client.chat.completions.create(model="gpt-4.1", messages=messages, tools=tools)
            for call in response.choices[0].message.tool_calls:
                messages.append({"role": "assistant", "tool_calls": [
                    {"id": call.id, "type": "function", "function": {"name": call.function.name,
                                                                     "arguments": json.dumps(call.function.parsed)}}]})
            return messages
        """
    assert lint_file(app(tmp_path, source)) == []


def test_test_suites_are_quiet(tmp_path):
    assert lint_file(app(tmp_path, CONVERTER, name="tests/test_adapter.py")) == []


def test_a_source_with_no_file_has_no_tree_and_is_quiet():
    source = textwrap.dedent(CONVERTER).lstrip("\n")
    assert [f for f in lint_source(source, "adapter.py") if f.code == "CL102"] == []


def test_jsonb_that_holds_no_conversation_reorders_no_turn(tmp_path):
    """A vector store's metadata column, or a test of the database layer, is no store of conversations."""
    module = app(tmp_path, CONVERTER, store=False)
    write(tmp_path / "app" / "vectors.py", """
        from sqlalchemy.dialects.postgresql import JSONB

        class Embedding:
            metadata_ = Column(JSONB)
    """)
    write(tmp_path / "tests" / "test_db.py", """
        from sqlalchemy.dialects.postgresql import JSONB

        class ChatSessionRow:
            payload = Column(JSONB)
    """)
    assert lint_file(module) == []


def test_a_providers_fresh_response_converted_once_is_quiet(tmp_path):
    """`_convert_to_chat_completion(anthropic_msg)` turns the response just received into the stored format once;
    later turns read the stored string back, so nothing is serialized again."""
    source = """
        import json

        class AnthropicProvider:
            def _convert_to_chat_completion(self, anthropic_msg):
                tool_calls = []
                for block in anthropic_msg.content:
                    if block.type == "tool_use":
                        tool_calls.append({"id": block.id, "type": "function",
                                           "function": {"name": block.name, "arguments": json.dumps(block.input)}})
                return {"role": "assistant", "tool_calls": tool_calls}
        """
    assert lint_file(app(tmp_path, source)) == []
