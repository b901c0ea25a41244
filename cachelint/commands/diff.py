"""`cachelint diff`."""

from __future__ import annotations


import click

from cachelint.commands.common import FORMATS, print_json, stdout_console
from cachelint.errors import CachelintError


@click.command()
@click.argument("before", type=click.Path(dir_okay=False, allow_dash=True))
@click.argument("after", type=click.Path(dir_okay=False, allow_dash=True))
@click.option("--format", "fmt", type=FORMATS, default="text", show_default=True, help="Output format.")
@click.option("--tokenizer", type=click.Path(file_okay=False), help="Local Hugging Face model dir: exact tokens and chat template.")
def diff(before: str, after: str, fmt: str, tokenizer: str | None) -> None:
    """Explain how AFTER's cached prefix relates to BEFORE's.

    BEFORE and AFTER are request bodies (Anthropic Messages, OpenAI Chat Completions or Responses) or
    recorded exchanges ({"request": ..., "response": ...}). Either one may be `-`: standard input.
    Exit code 0 whether or not the prefix broke.

    \b
    Example:
      cachelint diff turn3.json turn4.json
      cachelint diff turn3.json turn4.json --format json
      pbpaste | cachelint diff turn3.json -
    """
    from cachelint.diff import explain
    from cachelint.diff.render import describe, fix, render_text
    from cachelint.prompt.usage import estimate_error

    if before == "-" and after == "-":
        raise CachelintError("only one of BEFORE and AFTER can be standard input (-)")
    b = _load(before, tokenizer)
    a = _load(after, tokenizer)
    if b.prompt.provider != a.prompt.provider:
        raise CachelintError(f"BEFORE is an {b.prompt.provider} request and AFTER an {a.prompt.provider} request; compare requests to one API")
    from cachelint.tokens import counter_for

    counter = counter_for(a.prompt.provider, a.prompt.model, tokenizer)
    brk = explain(b.prompt, a.prompt, counter)
    if tokenizer:
        _exact_tokens(brk, b.prompt, a.prompt, counter)
    same = identical(b, a, brk)
    if fmt == "json":
        data = brk.to_json()
        data["identical"] = same
        data["explanation"] = describe(brk)
        data["fix"] = fix(brk)
        data["provider"] = a.prompt.provider
        data["tokenizer"] = a.prompt.tokenizer
        data["token_estimate"] = {
            "before": estimate_error(b.prompt.prompt_tokens, b.usage),
            "after": estimate_error(a.prompt.prompt_tokens, a.usage),
        }
        print_json(data)
        return
    console = stdout_console()
    if same:
        tokens = brk.after_prompt_tokens
        console.print(f"identical: BEFORE and AFTER are the same request ({tokens:,} token{'s' if tokens != 1 else ''}); "
                      "the whole prompt can be read from cache, if the first one was cached", highlight=False)
    else:
        render_text(brk, console)
    for label, loaded in (("BEFORE", b), ("AFTER", a)):
        err = estimate_error(loaded.prompt.prompt_tokens, loaded.usage)
        if err:
            console.print(
                f"  tokens   {label}: estimated {err['estimated_prompt_tokens']:,}, provider reported "
                f"{err['reported_prompt_tokens']:,} ({err['error_pct']:+.1f}%, {loaded.prompt.tokenizer})",
                style="dim",
            )


def _exact_tokens(brk, before, after, counter) -> None:
    """Replace estimated token numbers by the engine's own: both prompts rendered with the chat template."""
    from cachelint.diff.locate import common_prefix_items
    from cachelint.prompt.chat import to_chat

    ids_b = counter.chat_ids(*to_chat(before))
    ids_a = counter.chat_ids(*to_chat(after))
    brk.before_prompt_tokens, brk.after_prompt_tokens = len(ids_b), len(ids_a)
    brk.common_prefix_tokens = common_prefix_items(ids_b, ids_a)
    brk.extra["token_source"] = "chat_template"


def identical(before, after, brk) -> bool:
    """The same request twice: the same bytes of body (JSON key order included) and no cache-key difference."""
    import json

    return brk.cause == "none" and json.dumps(before.exchange.body) == json.dumps(after.exchange.body)


def _load(name: str, tokenizer: str | None):
    """One side of the diff: a file, or standard input for `-`."""
    from cachelint.prompt import LoadedRequest, build_prompt, exchange_from_json
    from cachelint.prompt.load import parse_json, read_json
    from cachelint.prompt.usage import from_response_body

    if name == "-":
        source = "standard input"
        text = click.get_text_stream("stdin").read()
        if not text.strip():
            raise CachelintError("standard input (-) is empty: pipe a request body or a recorded exchange into it")
        try:
            data = parse_json(text, source)
        except CachelintError as exc:
            hint = _jsonl_hint(source, text, "cachelint import FILE") if "invalid JSON" in str(exc) else None
            raise CachelintError(hint or str(exc)) from None
    else:
        source = name
        try:
            data = read_json(name)
        except CachelintError as exc:
            hint = _jsonl_hint(name, _head(name), f"cachelint import {name}") if "invalid JSON" in str(exc) else None
            raise CachelintError(hint or str(exc)) from None
    exchange = exchange_from_json(data, source)
    prompt = build_prompt(exchange, tokenizer_path=tokenizer)
    usage = from_response_body(prompt.provider, exchange.response_body) if exchange.response_body else None
    return LoadedRequest(prompt, usage, exchange)


def _head(path: str, limit: int = 1 << 20) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read(limit)
    except OSError:
        return ""


def _jsonl_hint(source: str, text: str, command: str) -> str | None:
    """A JSONL file (one recorded exchange per line) given where one request is expected: point at `import`."""
    import json

    lines = [line for line in text.splitlines() if line.strip()]
    if len(lines) < 2:
        return None
    try:
        first = json.loads(lines[0])
    except (ValueError, RecursionError):
        return None
    if not isinstance(first, dict):
        return None
    return (f"{source}: one JSON object per line (JSONL, recorded traffic?); diff compares two single requests. "
            f"Load the traffic with `{command}` and see each break with `cachelint report`, or save two lines as files to diff them")
