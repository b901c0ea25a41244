"""Property tests: appending never breaks the prefix; a one-character change is located exactly."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bodies import anthropic_body, clone, openai_chat_body, openai_responses_body
from cachelint.diff import explain
from cachelint.prompt import Exchange, build_prompt
from cachelint.prompt.pointer import join, resolve
from cachelint.tokens import counter_for

BODIES = {"anthropic": anthropic_body, "openai-chat": openai_chat_body, "openai-responses": openai_responses_body}
SETTINGS = settings(max_examples=int(__import__("os").environ.get("CACHELINT_EXAMPLES", "150")), deadline=None, suppress_health_check=[HealthCheck.too_slow])
text = st.text(min_size=0, max_size=200)


def run(before: dict, after: dict):
    b, a = build_prompt(Exchange(before)), build_prompt(Exchange(after))
    return explain(b, a, counter_for(a.provider, a.model)), b, a


def message(kind: str, role: str, content: str, as_blocks: bool) -> dict:
    if kind == "openai-responses":
        part = "input_text" if role == "user" else "output_text"
        return {"role": role, "content": [{"type": part, "text": content}] if as_blocks else content}
    return {"role": role, "content": [{"type": "text", "text": content}] if as_blocks else content}


@SETTINGS
@given(kind=st.sampled_from(sorted(BODIES)), texts=st.lists(text, min_size=1, max_size=4), as_blocks=st.booleans())
def test_appending_messages_never_breaks_the_prefix(kind, texts, as_blocks):
    before = BODIES[kind]()
    after = clone(before)
    key = "input" if kind == "openai-responses" else "messages"
    for i, t in enumerate(texts):
        after[key].append(message(kind, "assistant" if i % 2 == 0 else "user", t, as_blocks))
    brk, b, _ = run(before, after)
    assert brk.cause == "none"
    assert brk.common_prefix_tokens == b.prompt_tokens
    assert brk.reprefilled_tokens == 0


def string_places(value, pointer="", parent_key=None):
    """Pointers to every non-empty string that is content (not a type tag, role or cache marker)."""
    if isinstance(value, dict):
        for k, v in value.items():
            if k not in ("type", "role", "cache_control"):
                yield from string_places(v, join(pointer, k), k)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from string_places(v, join(pointer, i), parent_key)
    elif isinstance(value, str) and value:
        yield pointer


def set_at(document, pointer, new):
    parent, _, last = pointer.rpartition("/")
    container = resolve(document, parent)
    container[int(last) if isinstance(container, list) else last.replace("~1", "/").replace("~0", "~")] = new


@SETTINGS
@given(kind=st.sampled_from(sorted(BODIES)), data=st.data())
def test_a_changed_character_is_located_at_that_place(kind, data):
    before = BODIES[kind]()
    places = sorted(string_places(before))
    pointer = data.draw(st.sampled_from(places), label="pointer")
    original = resolve(before, pointer)
    index = data.draw(st.integers(0, len(original) - 1), label="index")
    char = data.draw(st.characters(blacklist_categories=("Cs",)).filter(lambda c: c != original[index]), label="char")
    after = clone(before)
    set_at(after, pointer, original[:index] + char + original[index + 1 :])
    brk, _, _ = run(before, after)
    assert brk.cause != "none"
    assert (brk.pointer, brk.char) == (pointer, index)
