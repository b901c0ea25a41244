"""`cachelint sessions`."""

from __future__ import annotations


import click

from cachelint.commands.common import print_json


@click.command()
@click.argument("directory", required=False, type=click.Path(file_okay=False))
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def sessions(directory, fmt) -> None:
    """Hit rate, tokens and cost per agent session, from the agents' own transcripts: Claude Code
    (~/.claude/projects) and Codex rollouts (~/.codex/sessions).

    Transcripts hold no request bodies, so they cannot say why a cache broke: run `cachelint proxy` for that.
    The session ids printed are those `cachelint report --session` takes for the same conversation.
    A line or a file that cannot be read is skipped, and said on standard error.
    """
    from cachelint.record.transcripts import Skipped, read_sessions

    skipped = Skipped()
    found = read_sessions(directory, skipped)
    for message in skipped.messages():
        click.echo(f"cachelint: warning: {message}", err=True)
    if fmt == "json":
        print_json([s.to_json() for s in found])
        return
    for s in (x.to_json() for x in found):
        click.echo(f"{s['session']}  {s['agent']}  {s['project']}  {s['requests']} responses  hit rate {s['hit_rate']:.0%}  read {s['cache_read_tokens']:,}  "
                   f"written {s['cache_write_tokens']:,}  output {s['output_tokens']:,}  {_money(s)}  low-hit responses {s['low_hit_responses']}")
    click.echo(f"{len(found)} sessions. Transcripts hold no request bodies, so causes cannot be named here: run `cachelint proxy` to see why a cache broke.")


def _money(s: dict) -> str:
    if s["cost"] is None:
        return "cost unknown (no price for " + ", ".join(s["unpriced_models"]) + ")"
    return f"${s['cost']:.4f}"
