"""The `cachelint` command line: the group, its commands (one module each in cachelint.commands) and the
error policy (a user error is one line and exit 2, never a traceback)."""

from __future__ import annotations

import os
import sys

import click

from cachelint import __version__
from cachelint.commands.check import check
from cachelint.commands.demo import demo
from cachelint.commands.diff import diff
from cachelint.commands.importer import import_
from cachelint.commands.kv import kv
from cachelint.commands.lsp import lsp
from cachelint.commands.proxy import proxy
from cachelint.commands.replay import replay
from cachelint.commands.report import report
from cachelint.commands.rule import rule
from cachelint.commands.sessions import sessions
from cachelint.errors import CachelintError


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, "--version", "-V", prog_name="cachelint")
def cli() -> None:
    """Make LLM prompt caching visible and correct.

    Providers and engines reuse KV state only for an exact token prefix. cachelint finds the code that breaks
    it (check, lsp), watches live traffic and explains every break (proxy, report), measures the real reuse on
    a vLLM and what a fix buys (replay), explains one break (diff) and prices the KV cache (kv). Start with
    `cachelint demo`.
    """


for _command in (diff, kv, check, rule, proxy, report, replay, import_, sessions, lsp, demo):
    cli.add_command(_command)


def main(argv: list[str] | None = None) -> None:
    try:
        cli.main(args=argv, prog_name="cachelint", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("cachelint: aborted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(2 if exc.exit_code == 2 else exc.exit_code)
    except CachelintError as exc:
        click.echo(f"cachelint: error: {exc}", err=True)
        sys.exit(2)
    except (KeyboardInterrupt, BrokenPipeError):
        sys.exit(130)
    except Exception as exc:  # a bug: one line, not a traceback, unless asked
        if os.environ.get("CACHELINT_DEBUG"):
            raise
        click.echo(f"cachelint: internal error: {type(exc).__name__}: {exc} (set CACHELINT_DEBUG=1 for a traceback)", err=True)
        sys.exit(2)
    sys.exit(0)
