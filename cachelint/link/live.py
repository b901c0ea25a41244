"""The live half of `--source DIR`: `cachelint proxy --source DIR` names the line of each break as it happens.

The tree is indexed and checked once, when the proxy starts; each break is then linked as the report links it
(`match.link_break`), the same break once. The place is put on the row's break (`brk["source"]`) for the live
views (the dashboard's log, the `--no-dashboard` lines, OTLP); `cachelint report --source DIR` links the stored
breaks again, so a tree edited since is read as it is then."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cachelint.link.annotate import NOT_CODE, static_findings
from cachelint.link.index import build_index
from cachelint.link.match import link_break
from cachelint.record.report import _break, is_break
from cachelint.record.store import Row

MAX_REMEMBERED = 1000


class LiveLinker:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.index = build_index(root)
        self.findings = static_findings(root, processes=1)
        self._seen: dict[str, list[dict[str, Any]]] = {}

    def describe(self) -> str:
        return f"{len(self.index.files):,} files of {self.root} indexed, {len(self.findings):,} static findings"

    def on_row(self, row: Row) -> None:
        if row.brk is None or not is_break(row) or row.brk.get("cause") in NOT_CODE:
            return
        brk = _break(row.seq, row, None)
        key = json.dumps([brk.get(k) for k in ("cause", "detail", "rule", "section", "pointer", "before", "after")], default=str)
        if key not in self._seen:
            if len(self._seen) >= MAX_REMEMBERED:
                self._seen.pop(next(iter(self._seen)))
            self._seen[key] = [c.to_json() for c in link_break(brk, self.index, self.findings)]
        row.brk["source"] = self._seen[key]


def place_text(brk: dict[str, Any] | None) -> str | None:
    """`app/prompts.py:12` for a break linked to a place (its best candidate), else None."""
    places = (brk or {}).get("source") or []
    return f"{places[0]['file']}:{places[0]['line']}" if places else None
