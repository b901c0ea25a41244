"""`cachelint diff`."""

from __future__ import annotations


import click

from cachelint.commands.common import FORMATS, print_json, stdout_console
from cachelint.errors import CachelintError


@click.command()
@click.argument("before", type=click.Path(dir_okay=False, allow_dash=False))
@click.argument("after", type=click.Path(dir_okay=False, allow_dash=False))
@click.option("--format", "fmt", type=FORMATS, default="text", show_default=True, help="Output format.")
@click.option("--tokenizer", type=click.Path(file_okay=False), help="Local Hugging Face model dir: exact tokens and chat template.")
def diff(before: str, after: str, fmt: str, tokenizer: str | None) -> None:
    """Explain how AFTER's cached prefix relates to BEFORE's.

    BEFORE and AFTER are request bodies (Anthropic Messages, OpenAI Chat Completions or Responses) or
    recorded exchanges ({"request": ..., "response": ...}). Exit code 0 whether or not the prefix broke.

    \b
    Example:
      cachelint diff turn3.json turn4.json
      cachelint diff turn3.json turn4.json --format json
    """
    from cachelint.diff import explain
    from cachelint.diff.render import describe, fix, render_text
    from cachelint.prompt import load_request
    from cachelint.prompt.usage import estimate_error

    b = load_request(before, tokenizer_path=tokenizer)
    a = load_request(after, tokenizer_path=tokenizer)
    if b.prompt.provider != a.prompt.provider:
        raise CachelintError(f"BEFORE is an {b.prompt.provider} request and AFTER an {a.prompt.provider} request; compare requests to one API")
    from cachelint.tokens import counter_for

    counter = counter_for(a.prompt.provider, a.prompt.model, tokenizer)
    brk = explain(b.prompt, a.prompt, counter)
    if tokenizer:
        _exact_tokens(brk, b.prompt, a.prompt, counter)
    if fmt == "json":
        data = brk.to_json()
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
