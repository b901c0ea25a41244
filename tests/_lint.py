"""The two ways the per-round tests lint code: one module's text, or one file of a small tree written to disk
(so that the whole-project analysis sees the other files)."""

from __future__ import annotations

import textwrap

from cachelint.check.engine import ALL_CODES, lint_file, lint_source


def lint(source: str, codes: set[str], filename: str = "app.py"):
    return [f for f in lint_source(textwrap.dedent(source).lstrip("\n"), filename) if f.code in codes]


def lint_tree(tmp_path, files: dict[str, str], target: str, codes: set[str]):
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))
    path = tmp_path / target
    return [f for f in lint_file(path, str(path), ALL_CODES, None) if f.code in codes]
