"""CL101 on a fresh id or time written into earlier turns each time a stored conversation is rendered into
messages (issue 14: a tool call kept without an id gets a new uuid4 on every request, so every message from it
on is prefilled again). The quiet cases: the stored id, and the newest message alone."""

from __future__ import annotations

import textwrap

from cachelint.check.engine import lint_source


def findings(source: str):
    source = textwrap.dedent(source).lstrip("\n")
    return [f for f in lint_source(source, "adapter.py") if f.code == "CL101"]


RENDERER = """
    import uuid

    def to_api_messages(records):
        out = [{"role": "system", "content": "You are a helpful agent."}]
        for r in records:
            if r.kind == "tool_call":
                call_id = r.call_id or f"call_{uuid.uuid4().hex[:8]}"
                out.append({"role": "assistant", "tool_calls": [{"id": call_id, "type": "function",
                                                                   "function": {"name": r.name, "arguments": r.args}}]})
            else:
                out.append({"role": r.role, "content": r.text})
        return out
"""


def test_a_fresh_tool_call_id_in_a_rendered_history():
    found = findings(RENDERER)
    assert [f.row for f in found] == [7]
    assert "uuid" in found[0].message and "rendered again for every request" in found[0].message


def test_the_stored_id_is_quiet():
    source = RENDERER.replace(' or f"call_{uuid.uuid4().hex[:8]}"', "")
    assert source != RENDERER and findings(source) == []


def test_a_time_in_each_rendered_turn():
    source = """
        from datetime import datetime

        def render(history):
            return [{"role": m.role, "content": f"[{datetime.now():%H:%M:%S}] {m.text}"} for m in history]
    """
    assert [f.row for f in findings(source)] == [4]


def test_the_newest_message_alone_is_quiet():
    source = """
        import uuid

        def new_turn(text):
            return {"role": "user", "content": text, "id": str(uuid.uuid4())}
    """
    assert findings(source) == []


def test_messages_made_from_this_call_s_outputs_are_quiet():
    source = """
        import time, uuid

        def observations(outputs):
            return [{"role": "user", "content": o["output"], "extra": {"timestamp": time.time()}} for o in outputs]

        def convert(response):
            out = []
            for choice in response.choices:
                out.append({"role": "assistant", "content": None,
                            "tool_calls": [{"id": f"call_{uuid.uuid4().hex}", "type": "function", "function": choice.call}]})
            return out
    """
    assert findings(source) == []
