"""Round 17: classes read from a spent set's findings and misses (holdout21, apps that call the SDKs directly).

- CL101: a message converter that writes a fresh id (`uuid4()`, or a fallback for a missing one) into every stored
  turn it converts again for each request; a reply parsed once is not a stored turn.
- CL501: a provider adapter whose every caller in sight (by name, through a registry, or through a builder) asks
  one question with a list made for it is not carrying a conversation; a litellm request whose model is a
  setting goes to Anthropic when the project names a Claude model it can be run with.
- CL104: a parameter typed with an Enum (or `Literal`, `bool`) is a mode, not per-call data.
- CL301: a window over past sessions' summaries is not a cut of a conversation.
- CL201: tools of several MCP servers merged into the list a function named for tools returns.
"""

from __future__ import annotations

import textwrap

from cachelint.check.engine import ALL_CODES, lint_file, lint_source


def lint(source: str, codes: set[str]):
    return [f for f in lint_source(textwrap.dedent(source).lstrip("\n"), "agent.py") if f.code in codes]


def lint_tree(tmp_path, files: dict[str, str], target: str, codes: set[str]):
    for name, text in files.items():
        (tmp_path / name).write_text(textwrap.dedent(text).lstrip("\n"))
    path = tmp_path / target
    return [f for f in lint_file(path, str(path), ALL_CODES, None) if f.code in codes]


# --- CL101: ids minted afresh for old turns ---------------------------------------------------------------------

CONVERTER = '''
import uuid


def new_call_id() -> str:
    return str(uuid.uuid4())[-9:]


def to_template_message(message: dict) -> dict:
    if message["role"] == "assistant" and "tool_calls" in message:
        for call in message["tool_calls"]:
            call["id"] = new_call_id()
        return {"role": "assistant", "content": "", "tool_calls": message["tool_calls"]}
    if message["role"] == "tool":
        return dict(role="tool", content=message["content"], tool_call_id=new_call_id())
    return {"role": message["role"], "content": message["content"]}


def render_prompt(tokenizer, messages):
    return tokenizer.apply_chat_template([to_template_message(m) for m in messages], tokenize=False)
'''


def test_a_converter_applied_to_every_stored_turn_that_mints_ids_is_found():
    found = lint(CONVERTER, {"CL101"})
    assert [f.row for f in found] == [11, 14], found
    assert all("`to_template_message` writes into every stored turn it converts again" in f.message for f in found)
    assert all(f.severity == "error" and f.confidence == "likely" for f in found)


def test_the_same_converter_applied_to_a_reply_parsed_once_is_quiet():
    parsed = CONVERTER.replace("[to_template_message(m) for m in messages]", "[to_template_message(c.message) for c in response.choices]")
    assert lint(parsed, {"CL101"}) == []


def test_an_id_kept_from_the_stored_turn_is_quiet():
    kept = CONVERTER.replace('call["id"] = new_call_id()', 'call["id"] = call["id"]').replace("tool_call_id=new_call_id()",
                                                                                             'tool_call_id=message["tool_call_id"]')
    assert lint(kept, {"CL101"}) == []


def test_a_fallback_id_for_a_stored_call_without_one_is_found_where_it_is_minted():
    source = '''
    import uuid


    def build_messages(history):
        messages = []
        for turn in history:
            calls = []
            for call in turn["tool_calls"]:
                call_id = call.get("call_id") or f"call_{uuid.uuid4().hex}"
                calls.append({"id": call_id, "type": "function", "function": {"name": call["name"], "arguments": "{}"}})
            messages.append({"role": "assistant", "content": None, "tool_calls": calls})
        return messages
    '''
    found = lint(source, {"CL101"})
    assert [f.row for f in found] == [9], found


def test_a_single_dispatch_converter_is_named_by_its_dispatcher():
    source = '''
    import uuid
    from functools import singledispatch


    @singledispatch
    def to_openai(message):
        raise NotImplementedError


    @to_openai.register(dict)
    def _(message):
        return {"role": "assistant", "tool_calls": [{"id": str(uuid.uuid4()), "type": "function",
                                                     "function": {"name": message["name"], "arguments": "{}"}}]}


    def complete(client, messages):
        return client.chat.completions.create(model="gpt-4o", messages=[to_openai(m) for m in messages])
    '''
    found = lint(source, {"CL101"})
    assert [f.row for f in found] == [12], found
    assert "`to_openai` writes" in found[0].message
