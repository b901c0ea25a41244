"""The report joined to the code: each break's source places, and each place's share of what breaks cost.

`annotate(report, source_dir)` adds to every break dict of `report["sessions"][*]["breaks"]`:

- `source`: the ranked places, `[{"file", "line", "rule", "message", "confidence", "finding"}]` (`rule` and
  `message` are the static finding's when `finding` is true, else the break's rule and how the place matched);
  an empty list when nothing in the tree matches;
- `source_note`: `"not found in DIR"` when the list is empty, else None;

and to the report `sources`: one entry per place that is some break's top candidate, most wasted prefill first,
`{"file", "line", "rule", "message", "confidence", "breaks", "wasted_prefill_tokens", "wasted_cost", "share"}`,
where `share` is the place's part of all the report's wasted prefill and `wasted_cost` is None when a break
of that place could not be priced; plus `sources_unmatched` for the breaks found nowhere in the tree and
`sources_not_code` for the breaks no code made (an expired cache, a miss only the provider saw), whose
`source_note` says so.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from cachelint.check.finding import Finding
from cachelint.errors import CachelintError
from cachelint.link.index import TreeIndex, build_index
from cachelint.link.match import display_path, link_break

NOT_FOUND = "not found in {dir}"
# breaks no code made: the request did not change (or only the provider saw a miss)
NOT_CODE = {
    "ttl_expired": "not a code change: the cache expired during an idle gap",
    "provider_side": "not a code change: the provider missed its own cache (the requests matched)",
    None: "not a code change cachelint saw: only the provider reported a miss",
}


def static_findings(root: Path, processes: int | None = None) -> list[Finding]:
    """`cachelint check ROOT`'s findings (its configuration, no result cache written into the tree); one
    process when asked (a threaded host such as the language server should not fork)."""
    from cachelint.check.config import Config, load_config
    from cachelint.check.run import run_check

    try:
        config = load_config(root)
    except CachelintError:
        config = Config(root=root)
    return [f for f in run_check([root], config, use_cache=False, processes=processes).findings if f.code != "CL999"]


def annotate(report: dict[str, Any], source_dir: Path, *, findings: list[Finding] | None = None, index: TreeIndex | None = None) -> None:
    """Add `source` / `source_note` to every break and `sources` to the report, in place."""
    root = Path(source_dir)
    if not root.is_dir():
        raise CachelintError(f"{source_dir}: not a directory")
    index = index or build_index(root)
    findings = static_findings(root) if findings is None else findings
    note = NOT_FOUND.format(dir=display_path(root))
    seen: dict[str, list[Any]] = {}  # the same break repeats (a clock ticks every turn): link it once
    for session in report.get("sessions") or []:
        for brk in session.get("breaks") or []:
            if brk.get("cause") in NOT_CODE:
                brk["source"], brk["source_note"] = [], NOT_CODE[brk.get("cause")]
                continue
            key = json.dumps([brk.get(k) for k in ("cause", "detail", "rule", "section", "pointer", "before", "after")], default=str)
            if key not in seen:
                seen[key] = link_break(brk, index, findings)
            places = seen[key]
            brk["source"] = [_place(c, brk) for c in places]
            brk["source_note"] = None if places else note
    report["sources"], report["sources_unmatched"], report["sources_not_code"] = rank_sources(report)


def _place(candidate: Any, brk: dict[str, Any]) -> dict[str, Any]:
    data = candidate.to_json()
    data["finding"] = candidate.rule is not None
    if data["rule"] is None:
        data["rule"] = brk.get("rule")
    return data


def _wasted_tokens(brk: dict[str, Any]) -> int:
    value = brk.get("wasted_prefill_tokens", brk.get("reprefilled_tokens"))
    return int(value or 0)


def rank_sources(report: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, Any], dict[str, Any]]:
    """Places by the wasted prefill of the breaks they are the top candidate of; the breaks found nowhere in
    the tree; the breaks no code made (an expired cache, the provider's own miss)."""
    total = sum(_wasted_tokens(b) for s in report.get("sessions") or [] for b in s.get("breaks") or [])
    places: dict[tuple[str, int], dict[str, Any]] = {}
    unmatched = {"breaks": 0, "wasted_prefill_tokens": 0, "wasted_cost": 0.0, "share": 0.0}
    not_code = dict(unmatched)
    for session in report.get("sessions") or []:
        for brk in session.get("breaks") or []:
            source = brk.get("source") or []
            if source:
                top = source[0]
                entry = places.setdefault((top["file"], top["line"]), {
                    "file": top["file"], "line": top["line"], "rule": top.get("rule"), "message": top.get("message"), "code": top.get("code"),
                    "confidence": top.get("confidence"), "breaks": 0, "wasted_prefill_tokens": 0, "wasted_cost": 0.0,
                })
            else:
                entry = not_code if brk.get("cause") in NOT_CODE else unmatched
            entry["breaks"] += 1
            entry["wasted_prefill_tokens"] += _wasted_tokens(brk)
            entry["wasted_cost"] = _add_cost(entry["wasted_cost"], brk)
    ranked = sorted(places.values(), key=lambda e: (-e["wasted_prefill_tokens"], -e["breaks"], e["file"], e["line"]))
    for entry in [*ranked, unmatched, not_code]:
        entry["share"] = round(entry["wasted_prefill_tokens"] / total, 4) if total else 0.0
        if isinstance(entry["wasted_cost"], float):
            entry["wasted_cost"] = round(entry["wasted_cost"], 6)
    return ranked, unmatched, not_code


def _add_cost(sum_so_far: float | None, brk: dict[str, Any]) -> float | None:
    """Money adds up only while every break is priced: one unknown makes the place's money unknown."""
    cost = brk.get("wasted_cost")
    if sum_so_far is None or cost is None and _wasted_tokens(brk) > 0:
        return None
    return sum_so_far + float(cost or 0.0)


def render_sources_text(report: dict[str, Any]) -> list[str]:
    """`app/prompts.py:12 CL101 datetime.now() -> 14 breaks, 61% of wasted prefill, $3.20`, one line per place."""
    lines = []
    for entry in report.get("sources") or []:
        lines.append(f"{entry['file']}:{entry['line']} {entry.get('rule') or ''} {_brief(entry.get('code') or entry.get('message'))} -> "
                     f"{_breaks(entry['breaks'])}, {entry['share']:.0%} of wasted prefill, {_money(entry['wasted_cost'])}"
                     f" ({entry.get('confidence')})".replace("  ", " "))
    for key, words in (("sources_unmatched", "not found in the source tree"), ("sources_not_code", "not a code change (cache expired, provider side)")):
        rest = report.get(key) or {}
        if rest.get("breaks"):
            lines.append(f"{words} -> {_breaks(rest['breaks'])}, {rest['share']:.0%} of wasted prefill, {_money(rest['wasted_cost'])}")
    return lines


def _brief(message: Any, width: int = 60) -> str:
    text = str(message or "").replace("\n", " ")
    return text if len(text) <= width else text[: width - 1] + "…"


def _breaks(n: int) -> str:
    return f"{n:,} break{'' if n == 1 else 's'}"


def _money(value: float | None) -> str:
    if value is None:
        return "cost unknown"
    return f"${value:,.2f}" if value >= 0.01 or value == 0 else f"${value:.4f}"


def places_of(report: dict[str, Any]) -> Iterable[tuple[str, int, dict[str, Any], dict[str, Any]]]:
    """(file, line, break, session) for every break's top candidate: what the editor shows next to a line."""
    for session in report.get("sessions") or []:
        for brk in session.get("breaks") or []:
            for place in (brk.get("source") or [])[:1]:
                yield os.path.abspath(place["file"]), int(place["line"]), brk, session
