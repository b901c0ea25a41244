"""Plain-words explanations of a break, and the text output of `cachelint diff`."""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from cachelint.rules import NAMES
from cachelint.diff.explain import Break
from cachelint.diff.locate import common_prefix_length

_KIND_WORDS = {
    "timestamp": "timestamp", "date": "date", "time": "time of day", "uuid": "UUID",
    "number": "number (a counter, id or clock)", "hex": "hex token", "random": "random token",
}
_SECTION_WORDS = {"tools": "tool definitions", "schema": "output schema", "system": "system prompt", "messages": "conversation"}


def describe(brk: Break) -> str:
    """The cause in plain words."""
    where = _SECTION_WORDS.get(brk.section or "", "prefix")
    d = brk.detail
    if brk.cause == "none":
        return "AFTER extends BEFORE: its whole prefix can be read from cache."
    if brk.cause == "model_changed":
        return f"The model changed ({brk.before} -> {brk.after}); caches are per model, so nothing is reused."
    if brk.cause == "params_changed":
        if "header" in brk.extra:
            return f"The {d} header changed ({brk.before} -> {brk.after}); it is part of the cache key, so nothing is reused."
        return f"The cache-key parameter {d} changed ({brk.before} -> {brk.after}) between turns."
    if brk.cause == "compaction":
        return "The history was compacted: earlier messages were replaced by a summary, so the prompt is written to the cache again from there."
    return {
        "volatile_value": f"A {_KIND_WORDS.get(brk.value_kind or '', 'volatile value')} changed in place in the {where}.",
        "tools_reordered": "The same tools were sent in a different order.",
        "tool_added": f"The tool list changed: added {', '.join(brk.extra.get('tools_added', [])) or 'a tool'}.",
        "tool_removed": f"The tool list changed: removed {', '.join(brk.extra.get('tools_removed', [])) or 'a tool'}.",
        "tool_edited": "A tool definition changed.",
        "json_key_order": f"The same JSON was serialized with its keys in another order in the {where}.",
        "whitespace": f"Only whitespace changed in the {where}.",
        "content_shape": "The same content was sent as a plain string one time and as a list of blocks the next.",
        "text_edited": f"The {where} text changed.",
        "history_truncated": "Earlier messages were dropped from the history (truncated or compacted).",
        "message_removed": "An earlier message was removed from the history.",
        "message_edited": "An earlier message was edited after it was sent.",
        "response_format": "The structured-output schema changed.",
        "system_removed": "The system prompt was dropped.",
        "system_added": "A system prompt was added where there was none.",
        "schema_removed": "The structured-output schema was dropped.",
        "schema_added": "A structured-output schema was added.",
    }.get(d or "", f"The {where} changed.")


def fix(brk: Break) -> str:
    """The fix in one sentence."""
    if brk.cause == "none":
        return "Nothing to fix."
    if brk.cause == "model_changed":
        return "Keep one model per conversation; send a side task to another model as its own conversation."
    if brk.cause == "params_changed":
        if "header" in brk.extra:
            return (f"The {brk.detail} header is usually set by the client itself (e.g. a CLI version or feature flag); "
                    "if it is yours, keep it fixed for the whole conversation, and see the other divergences listed.")
        return f"Keep {brk.detail} fixed for the whole conversation."
    if brk.cause == "compaction":
        return ("Nothing to fix if it was needed: a compaction pays when the summary saves more tokens on every later "
                "request than the one full write it costs; compact rarely and in large steps, never on every turn.")
    return {
        "volatile_value": "Move the value out of the cached prefix (into the newest user message) or freeze it once per session.",
        "tools_reordered": "Sort the tools by name (or keep one fixed order) before every request.",
        "tool_added": "Keep one tool list per conversation; restrict tools per turn with tool_choice or tool search instead.",
        "tool_removed": "Keep one tool list per conversation; restrict tools per turn with tool_choice or tool search instead.",
        "tool_edited": "Keep tool definitions fixed for the life of a conversation.",
        "json_key_order": "Serialize JSON with sorted keys (json.dumps(..., sort_keys=True)).",
        "whitespace": "Build the text the same way every time; do not re-strip or re-indent it per request.",
        "content_shape": "Always send a message's content in the same shape (string or blocks) on every turn.",
        "text_edited": "Keep the system prompt fixed; put per-request data at the end of the newest user message.",
        "history_truncated": "Keep history append-only; if you must compact, do it rarely and in large steps.",
        "message_removed": "Keep history append-only: never remove a message after it was sent.",
        "message_edited": "Keep history append-only: never edit a message after it was sent.",
        "response_format": "Keep the response schema fixed for the conversation.",
        "system_removed": "Send the same system prompt on every request of the conversation.",
        "system_added": "Send the same system prompt on every request of the conversation, from the first.",
        "schema_removed": "Keep the response schema fixed for the conversation.",
        "schema_added": "Keep the response schema fixed for the conversation.",
    }.get(brk.detail or "", "Keep everything before the newest message identical between requests.")


def render_text(brk: Break, console: Console, before_name: str = "BEFORE", after_name: str = "AFTER") -> None:
    pct = 100.0 * brk.common_prefix_tokens / brk.after_prompt_tokens if brk.after_prompt_tokens else 0.0
    if brk.cause == "none":
        console.print(Text("no break", style="bold green"), f"— {describe(brk)}")
        console.print(f"  shared prefix  {brk.common_prefix_tokens:,} tokens ({pct:.0f}% of AFTER's {brk.after_prompt_tokens:,})")
        return
    head = Text()
    head.append("cache break", style="bold red")
    head.append(f"  {brk.cause}")
    if brk.detail:
        head.append(f" / {brk.detail}", style="bold")
    if brk.rule:
        head.append(f"  [{brk.rule} {NAMES.get(brk.rule, '')}]", style="cyan")
    console.print(head)
    console.print(f"  {describe(brk)}")
    where = brk.pointer if brk.pointer is not None else f"header {brk.extra.get('header', '')}".strip()
    if "before_pointer" in brk.extra:
        where = f"{where or '(the request)'} (removed: {brk.extra['before_pointer']} in {before_name})"
    char = f", char {brk.char}" if brk.char is not None else ""
    console.print(Text(f"  at       {where}{char}", style="dim"))
    b_text, a_text = _highlight(_oneline(brk.before), _oneline(brk.after))
    console.print(Text.assemble("  before   ", b_text))
    console.print(Text.assemble("  after    ", a_text))
    console.print(
        f"  reuse    {brk.common_prefix_tokens:,} of {brk.after_prompt_tokens:,} tokens ({pct:.0f}%); "
        f"{brk.reprefilled_tokens:,} tokens of {before_name} prefilled again"
    )
    console.print(Text.assemble("  fix      ", (fix(brk), "bold")))


def _highlight(before: str, after: str) -> tuple[Text, Text]:
    """The two excerpts with the part that differs marked."""
    start = common_prefix_length(before, after)
    end = 0
    while end < min(len(before), len(after)) - start and before[-1 - end] == after[-1 - end]:
        end += 1
    out = []
    for text, style in ((before, "bold white on red"), (after, "bold white on green")):
        t = Text(text[:start], style="dim")
        t.append(text[start : len(text) - end], style=style)
        t.append(text[len(text) - end :], style="dim")
        out.append(t)
    return out[0], out[1]


def _oneline(text: str) -> str:
    return text.replace("\n", "⏎").replace("\r", "␍")
