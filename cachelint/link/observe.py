"""What the recorded traffic says about a workspace's code: for the editor (`cachelint lsp` with a store).

`Observations.load(store, root)` reads the store once (the report, joined to the tree with `annotate`) and
answers two questions cheaply afterwards:

- `for_span(file, first, last)`: the breaks whose top source place is on those lines (a finding's range), and
  the tokens they made the provider prefill again;
- `for_call(file, line)`: the hit rate of the sessions sent from an LLM call site. A session is sent from a
  call site when the template that best matches the start of its prompt is in the call site's file or in a
  module that file imports; when the workspace has exactly one call site, all traffic is its own. Otherwise
  nothing is claimed.

Only breaks and sessions of the last `WINDOW_DAYS` days count (when the report dates them).
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from cachelint.link.index import Site, TreeIndex, build_index

WINDOW_DAYS = 7
MAX_HEAD_CHARS = 400


@dataclass(slots=True)
class SpanStats:
    breaks: int = 0
    wasted_prefill_tokens: int = 0
    rules: set[str] = field(default_factory=set)

    def words(self) -> str:
        return (f"observed: {self.breaks:,} break{'' if self.breaks == 1 else 's'}, {self.wasted_prefill_tokens:,} tokens prefilled again "
                f"in the last {WINDOW_DAYS} days")


@dataclass(slots=True)
class CallStats:
    requests: int = 0
    sessions: int = 0
    prompt_tokens: int = 0
    cache_read_tokens: int = 0
    breaks: int = 0
    how: str = ""

    @property
    def hit_rate(self) -> float:
        return self.cache_read_tokens / self.prompt_tokens if self.prompt_tokens else 0.0

    def words(self) -> str:
        return (f"**cachelint, live**: hit rate {self.hit_rate:.0%} over {self.requests:,} request{'' if self.requests == 1 else 's'} "
                f"in {self.sessions:,} session{'' if self.sessions == 1 else 's'}, {self.breaks:,} break{'' if self.breaks == 1 else 's'} "
                f"(last {WINDOW_DAYS} days; {self.how})")


@dataclass(slots=True)
class Observations:
    store: Path
    root: Path
    places: dict[tuple[str, int], SpanStats] = field(default_factory=dict)
    calls: dict[tuple[str, int], CallStats] = field(default_factory=dict)
    call_sites: list[Site] = field(default_factory=list)
    stamp: tuple[int, ...] = ()

    @classmethod
    def load(cls, store: Path, root: Path, *, now: float | None = None) -> "Observations":
        from cachelint.link.annotate import annotate
        from cachelint.record.report import build_report
        from cachelint.record.store import Store

        found = cls(store=store, root=root, stamp=store_stamp(store))
        handle = Store(store, readonly=True)
        try:
            report = build_report(handle)
            index, findings = tree_of(root)
            annotate(report, root, index=index, findings=findings)
            since = (now or time.time()) - WINDOW_DAYS * 86400
            found._count_places(report, since)
            found._count_calls(report, handle, index, since)
        finally:
            handle.close()
        return found

    def fresh(self) -> bool:
        return store_stamp(self.store) == self.stamp

    def for_span(self, file: Path | str, first: int, last: int) -> SpanStats | None:
        key = os.path.abspath(file)
        total = SpanStats()
        for (path, line), stats in self.places.items():
            if path == key and first <= line <= last:
                total.breaks += stats.breaks
                total.wasted_prefill_tokens += stats.wasted_prefill_tokens
                total.rules |= stats.rules
        return total if total.breaks else None

    def for_call(self, file: Path | str, line: int) -> CallStats | None:
        return self.calls.get((os.path.abspath(file), line))

    def _count_places(self, report: dict[str, Any], since: float) -> None:
        from cachelint.link.annotate import places_of

        for path, line, brk, _session in places_of(report):
            if not _within(brk.get("at"), since):
                continue
            stats = self.places.setdefault((path, line), SpanStats())
            stats.breaks += 1
            stats.wasted_prefill_tokens += int(brk.get("wasted_prefill_tokens", brk.get("reprefilled_tokens")) or 0)
            if brk.get("rule"):
                stats.rules.add(brk["rule"])

    def _count_calls(self, report: dict[str, Any], store: Any, index: TreeIndex, since: float) -> None:
        self.call_sites = index.sites_of("call")
        if not self.call_sites:
            return
        imports = {(os.path.abspath(s.file), s.name) for s in index.sites_of("import")}
        for session in report.get("sessions") or []:
            turns = [t for t in session.get("turns") or [] if _within(t.get("at"), since)] if any("at" in t for t in session.get("turns") or []) else session.get("turns") or []
            if not turns:
                continue
            sites, how = self._sites_of(session["session"], store, index, imports)
            for site in sites:
                stats = self.calls.setdefault((os.path.abspath(site.file), site.line), CallStats(how=how))
                stats.sessions += 1
                stats.requests += len(turns)
                stats.prompt_tokens += sum(t.get("prompt_tokens") or 0 for t in turns)
                stats.cache_read_tokens += sum(t.get("cache_read_tokens") or 0 for t in turns)
                stats.breaks += sum(1 for b in session.get("breaks") or [] if _within(b.get("at"), since))
                if how not in stats.how:
                    stats.how = how if not stats.how else stats.how + "; " + how

    def _sites_of(self, session: str, store: Any, index: TreeIndex, imports: set[tuple[str, str]]) -> tuple[list[Site], str]:
        head = _prompt_head(store, session)
        builder = _best_template_file(head, index) if head else None
        if builder is not None:
            module = Path(builder).stem
            here = [s for s in self.call_sites if os.path.abspath(s.file) == builder]
            importers = {path for path, name in imports if name == module}
            there = [s for s in self.call_sites if os.path.abspath(s.file) in importers]
            if here or there:
                return here + there, f"prompt built in {os.path.relpath(builder)}"
        if len(self.call_sites) == 1:
            return self.call_sites, "the workspace's only LLM call site"
        return [], ""


_TREES: dict[str, tuple[tuple[Any, ...], TreeIndex, list[Any]]] = {}


def tree_of(root: Path) -> tuple[TreeIndex, list[Any]]:
    """The tree's index and static findings, kept while no file of it changed (the store changes far more
    often than the code: a reload then costs a walk and a stat per file, not a parse and a check)."""
    from cachelint.link.annotate import static_findings
    from cachelint.link.index import python_files, text_files

    key = os.path.abspath(root)
    python, texts = python_files(root), text_files(root)  # every file the index reads, walked once
    stamp: list[Any] = []
    for path in [*python, *texts]:
        try:
            st = os.stat(path)
        except OSError:
            continue
        stamp.append((str(path), st.st_mtime_ns, st.st_size))
    kept = _TREES.get(key)
    if kept is not None and kept[0] == tuple(stamp):
        return kept[1], kept[2]
    index, findings = build_index(root, python, texts), static_findings(root, processes=1)
    _TREES[key] = (tuple(stamp), index, findings)
    return index, findings


def call_spans(source: str) -> list[tuple[int, int]]:
    """(first line, last line) of each LLM call in a module's source (what a hover over a call site finds)."""
    import ast

    from cachelint.link.index import _LLM_CALL, _segment

    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    lines = source.splitlines()
    return [(node.lineno, node.end_lineno or node.lineno) for node in ast.walk(tree)
            if isinstance(node, ast.Call) and _LLM_CALL.search(_segment(lines, node) + "(")]


def store_stamp(store: Path) -> tuple[int, ...]:
    """What changes when the proxy records: the store's and its write-ahead log's size and time."""
    stamp: list[int] = []
    for path in (store, Path(str(store) + "-wal")):
        try:
            st = os.stat(path)
            stamp += [st.st_mtime_ns, st.st_size]
        except OSError:
            stamp += [0, 0]
    return tuple(stamp)


def _within(at: Any, since: float) -> bool:
    if not isinstance(at, str):
        return True  # undated: counted
    try:
        return datetime.fromisoformat(at.replace("Z", "+00:00")).timestamp() >= since
    except ValueError:
        return True


def _prompt_head(store: Any, session: str) -> str:
    """The start of the session's first prompt (system prompt, instructions or first message), as text."""
    for row in store.rows(session):
        try:
            body = json.loads(row.request_body or "")
        except ValueError:
            return ""
        if not isinstance(body, dict):
            return ""
        parts: list[str] = []
        for key in ("system", "instructions"):
            parts += _texts(body.get(key))
        if not parts:
            for message in body.get("messages") or body.get("input") or []:
                if isinstance(message, dict):
                    parts += _texts(message.get("content"))
                    break
        return "\n".join(parts)[:MAX_HEAD_CHARS]
    return ""


def _texts(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [b["text"] for b in value if isinstance(b, dict) and isinstance(b.get("text"), str)]
    return []


def _best_template_file(head: str, index: TreeIndex) -> str | None:
    """The file of the template whose literal text covers most of the prompt's start (at least 16 characters)."""
    best, best_score = None, 15
    for template in index.templates:
        score = sum(min(len(p), 64) for p in template.parts if isinstance(p, str) and len(p) >= 8 and p[:64] in head)
        if score > best_score:
            best, best_score = os.path.abspath(template.file), score
    return best
