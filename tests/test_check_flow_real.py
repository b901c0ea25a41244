"""CL1xx on the shapes real apps take (issue 14): values that cross functions and modules, and prompt-shaped
renderers whose request is sent out of sight. Each class of code is one small file written the way apps
write it; the quiet cases are the false alarms that must stay quiet."""

from __future__ import annotations

import textwrap

from cachelint.check.engine import lint_source


def lint(source: str, codes: set[str] | None = None, filename: str = "adapter.py"):
    source = textwrap.dedent(source).lstrip("\n")
    return [f for f in lint_source(source, filename) if codes is None or f.code in codes]


# --- history renderers: a conversation rendered into provider messages, sent by someone else ---------------

TOOL_RESULTS_RENDERED = """
    import json

    def _result_text(value):
        if isinstance(value, str):
            return value
        return json.dumps(value)

    class ChatFormatter:
        def to_messages(self, turns):
            out = []
            for turn in turns:
                out.append({"role": "user", "content": turn.question})
                for result in turn.tool_results:
                    out.append({"role": "tool", "tool_call_id": result.id, "content": _result_text(result.value)})
            return out
"""


def test_json_of_stored_tool_results_rendered_per_turn_is_found_as_likely():
    found = lint(TOOL_RESULTS_RENDERED, {"CL102"})
    assert [(f.row, f.confidence) for f in found] == [(6, "likely")]
    assert "sort_keys" in found[0].message and "sent elsewhere" in found[0].message


def test_tool_call_arguments_stored_into_a_message_after_it_is_built_are_followed():
    source = """
        import json

        def _as_tool_call(call):
            return {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": json.dumps(call.args)}}

        def history_messages(history):
            messages = []
            for step in history:
                message = {"role": "assistant", "content": step.text}
                if step.calls:
                    message["tool_calls"] = [_as_tool_call(c) for c in step.calls]
                messages.append(message)
            return messages
    """
    assert [f.row for f in lint(source, {"CL102"})] == [4]


def test_a_set_of_references_joined_into_rendered_history_is_found():
    source = """
        def rebuild(chat_history):
            rendered = []
            for chat in chat_history:
                if chat.sources:
                    refs = "\\n".join({f"# {s.uri}\\n{s.text}" for s in chat.sources})
                    rendered.append({"role": "user", "content": [{"type": "text", "text": f"Notes:\\n{refs}"}]})
                rendered.append({"role": chat.role, "content": chat.text})
            return rendered
    """
    found = lint(source, {"CL103"})
    assert [(f.row, f.confidence) for f in found] == [(5, "likely")]


def test_a_message_class_called_with_role_and_content_is_a_message():
    source = """
        import os
        from langchain_core.messages import ChatMessage

        def replay(turns, folder):
            out = []
            for turn in turns:
                listing = ", ".join(os.listdir(folder))
                out.append(ChatMessage(role="user", content=f"{turn.text}\\nFiles: {listing}"))
            return out
    """
    assert [f.row for f in lint(source, {"CL103"})] == [7]


def test_a_renderer_with_sorted_and_sort_keys_stays_quiet():
    source = """
        import json

        def to_messages(turns):
            out = []
            for turn in turns:
                tags = ", ".join(sorted({t.lower() for t in turn.tags}))
                out.append({"role": "user", "content": f"{turn.text} [{tags}]"})
                out.append({"role": "tool", "tool_call_id": turn.id, "content": json.dumps(turn.result, sort_keys=True)})
            return out
    """
    assert lint(source, {"CL102", "CL103"}) == []


def test_json_of_a_value_known_not_to_be_a_dict_stays_quiet():
    source = """
        import json

        def blocks(content):
            out = []
            for block in content:
                if isinstance(block, dict):
                    out.append(block)
                else:
                    out.append({"type": "text", "text": json.dumps(block)})
            return out
    """
    assert lint(source, {"CL102"}) == []


def test_an_agent_loop_appending_its_new_tool_results_stays_quiet():
    """The function that sends the request appends each new tool result once: it is kept as it was sent."""
    source = """
        import json
        from openai import OpenAI
        client = OpenAI()

        def run(task, tools, registry):
            messages = [{"role": "system", "content": "You are an agent."}, {"role": "user", "content": task}]
            while True:
                reply = client.chat.completions.create(model="gpt-4o", messages=messages, tools=tools).choices[0].message
                messages.append(reply)
                if not reply.tool_calls:
                    return reply.content
                for call in reply.tool_calls:
                    result = registry[call.function.name](**json.loads(call.function.arguments))
                    messages.append({"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)})
    """
    assert lint(source, {"CL102"}) == []


def test_a_single_newest_message_built_once_per_call_stays_quiet():
    """Not in a loop: the newest turn, not reused yet."""
    source = """
        import json

        def user_message(payload):
            return {"role": "user", "content": json.dumps(payload)}
    """
    assert lint(source, {"CL102"}) == []
