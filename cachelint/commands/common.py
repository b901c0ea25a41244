"""What the commands share: output helpers."""

from __future__ import annotations

import json
from typing import Any

import click
from rich.console import Console

FORMATS = click.Choice(["text", "json"])


def stdout_console() -> Console:
    return Console(highlight=False, soft_wrap=True)


def print_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False))
