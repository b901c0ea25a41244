"""`cachelint lsp`."""

from __future__ import annotations


import click



@click.command()
def lsp() -> None:
    """Run the language server on standard input and output (for editors; see vscode-ext/)."""
    from cachelint.lsp import main as serve

    serve()
