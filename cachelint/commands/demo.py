"""`cachelint demo`."""

from __future__ import annotations


import click

from cachelint.commands.common import FORMATS, stdout_console


@click.command()
@click.option("--format", "fmt", type=FORMATS, default="text", show_default=True, help="Output format.")
def demo(fmt: str) -> None:
    """Show what cachelint is for, offline, on a bundled recorded agent session."""
    from cachelint.demo import run_demo

    run_demo(fmt, stdout_console())
