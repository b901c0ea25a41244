"""Which lines of a tree produced an observed break, ranked, with how sure the link is.

Four ways in, by what broke:

- text (the system prompt, a message, an output schema): the characters before and after the changed span
  of the break's excerpts are aligned with every template of the tree (`index.Template`). A template fits
  when its literal parts around one hole are found on both sides of the change (next to it, or a short value
  away): the hole (or the line that produced the name in it) is the place. The more literal characters
  agree, the surer the link; a literal that is not there ends the alignment.
- tools: the tool names of the break are looked up as `"name": "..."` in the tree's dict literals; the list
  they live in is followed to where it is iterated into a list (where its order and membership are decided).
- history (truncated, removed or compacted messages): slices, pops and deletes of message lists in the tree.
- model / parameters: the model names as literals.

In every case a static finding (`cachelint check` on the tree) of the same rule family at the place raises
the link to certain and gives its rule and message. A finding alone, with nothing observed pointing at its
file, is not taken as the source: when no text, name or code of the tree matches, the answer is "not found".
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cachelint.check.finding import Finding
from cachelint.diff.locate import common_prefix_length
from cachelint.link.index import Hole, Site, Template, TreeIndex

CONFIDENCES = ("certain", "likely", "possible")
MIN_SCORE = 6  # literal characters that must agree before a template is a candidate at all
LIKELY_SCORE = 10
CERTAIN_SCORE = 16
MAX_TAIL_SHIFT = 12
VALUE_GAP = 32  # characters of a hole's value that may sit between its literal and the changed span
MAX_CANDIDATES = 5
# rule -> family: a finding of the same family as the break's rule can be its cause
FAMILIES = {
    "CL101": "value", "CL102": "value", "CL103": "value", "CL104": "value", "CL502": "value",
    "CL201": "tools", "CL202": "tools", "CL203": "tools", "CL301": "history", "CL401": "params", "CL402": "params",
}
_HISTORY_DETAILS = ("history_truncated", "message_removed", "history_summarized")


@dataclass(slots=True)
class Candidate:
    file: Path
    line: int
    message: str
    score: float
    confidence: str
    rule: str | None = None
    code: str = ""  # the code at the place, short (what a one-line summary shows)

    def to_json(self) -> dict[str, Any]:
        return {"file": display_path(self.file), "line": self.line, "rule": self.rule, "message": self.message,
                "confidence": self.confidence, "code": self.code}


def display_path(path: Path) -> str:
    """Relative to the working directory when the file is under it (what a terminal or editor opens), else absolute."""
    absolute = os.path.abspath(path)
    try:
        relative = os.path.relpath(absolute)
    except ValueError:
        return absolute
    return absolute if relative.startswith("..") else relative


def section_of(brk: dict[str, Any]) -> str | None:
    if brk.get("section"):
        return brk["section"]
    for d in brk.get("divergences") or []:
        if d.get("first") and d.get("section"):
            return d["section"]
    pointer = brk.get("pointer") or ""
    for name in ("tools", "system", "messages", "input", "instructions"):
        if pointer.startswith("/" + name):
            return {"input": "messages", "instructions": "system"}.get(name, name)
    return None


def family_of(brk: dict[str, Any]) -> str:
    if brk.get("rule") in FAMILIES:
        return FAMILIES[brk["rule"]]
    if brk.get("cause") == "tools_changed":
        return "tools"
    if brk.get("detail") in _HISTORY_DETAILS or brk.get("cause") == "compaction":
        return "history"
    if brk.get("cause") in ("model_changed", "params_changed"):
        return "params"
    return "value"


def link_break(brk: dict[str, Any], index: TreeIndex, findings: list[Finding]) -> list[Candidate]:
    """The ranked places of the tree that may have produced this break (empty: not found in the tree)."""
    cause, family = brk.get("cause"), family_of(brk)
    if cause == "tools_changed" and (tool_names(brk.get("before")) or tool_names(brk.get("after"))):
        found = _tool_candidates(brk, index)
    elif family == "history" and brk.get("detail") not in _HISTORY_DETAILS:
        # an old message edited in place: its text came from somewhere (a memory file re-read, a re-rendered
        # template); where the code rewrites history is the next guess
        found = _text_candidates(brk, index) or _history_candidates(index)
    elif family == "history":
        found = _history_candidates(index)
    elif cause == "model_changed":
        found = _literal_candidates([str(brk.get("after") or "")], index, "the model name")
    elif cause == "params_changed":
        found = _literal_candidates([str(brk.get("after") or "")], index, f"the {brk.get('detail')} value") if len(str(brk.get("after") or "")) >= 4 else []
    else:
        found = _text_candidates(brk, index)
    if not found:
        return []
    _with_findings(found, family, findings, index)
    best: dict[tuple[Path, int], Candidate] = {}
    for c in found:
        key = (c.file, c.line)
        if key not in best or c.score > best[key].score:
            best[key] = c
    ranked = sorted(best.values(), key=lambda c: (-c.score, str(c.file), c.line))
    return ranked[:MAX_CANDIDATES]


# --- text --------------------------------------------------------------------------------------------


def _strip_marks(text: str) -> tuple[str, bool, bool]:
    """An excerpt without its `…` marks, and whether it was cut at the start / the end."""
    cut_start, cut_end = text.startswith("…"), text.endswith("…")
    return text[1 if cut_start else 0 : len(text) - (1 if cut_end else 0)], cut_start, cut_end


def observed_context(brk: dict[str, Any]) -> tuple[str, str, str, str] | None:
    """(text before the change, changed text before, changed text after, text after the change) from the
    break's excerpts, or None when there are none.

    The excerpts are cut a fixed width after the first difference, so when the changed values differ in length
    their tails are cut at different places: the common end is looked for with either tail shortened by up to
    MAX_TAIL_SHIFT characters."""
    before, after = brk.get("before"), brk.get("after")
    if not isinstance(before, str) or not isinstance(after, str) or not (before or after):
        return None
    b, _, b_cut = _strip_marks(before)
    a, _, a_cut = _strip_marks(after)
    start = common_prefix_length(b, a)
    best = (-1, 0, 0)  # common tail, shortened from b, shortened from a
    shifts = range(-MAX_TAIL_SHIFT, MAX_TAIL_SHIFT + 1) if b_cut and a_cut else (0,)
    for shift in sorted(shifts, key=abs):
        trim_b, trim_a = max(0, shift), max(0, -shift)
        tail = _common_suffix(b[start : len(b) - trim_b], a[start : len(a) - trim_a])
        if tail > best[0]:
            best = (tail, trim_b, trim_a)
    tail, trim_b, trim_a = best
    b_end, a_end = len(b) - trim_b - tail, len(a) - trim_a - tail
    return a[:start], b[start:b_end], a[start:a_end], a[a_end:]


def _common_suffix(a: str, b: str) -> int:
    n = 0
    while n < len(a) and n < len(b) and a[-1 - n] == b[-1 - n]:
        n += 1
    return n


def align_left(parts: list[str | Hole], text: str, near: int = 0) -> int:
    """How many literal characters of `parts`, read right to left, agree with the end of `text`.

    The first literal must end within `near` characters of the end of `text` (the changed span may start inside
    the value of the hole, after a part of it that did not change); after each further hole (a value of unknown
    length) the next literal may be anywhere before. When the excerpt was cut inside a literal, the part of it
    that is there counts."""
    score, bound = 0, near
    for part in reversed(parts):
        if isinstance(part, Hole):
            bound = len(text)  # a hole of unknown length sits between
            continue
        window = text[max(0, len(text) - len(part) - bound) :]
        at = window.rfind(part)
        if at >= 0:
            score, text = score + len(part), text[: len(text) - len(window) + at]
            bound = 0
            continue
        for k in range(min(len(part), len(text)) - 1, 2, -1):  # the excerpt starts inside this literal
            if text.startswith(part[-k:]) and len(text) - k <= bound:
                return score + k
        return score
    return score


def align_right(parts: list[str | Hole], text: str, near: int = 0) -> int:
    """align_left's mirror: literal characters of `parts` that agree with the start of `text`."""
    score, bound = 0, near
    for part in parts:
        if isinstance(part, Hole):
            bound = len(text)
            continue
        window = text[: len(part) + bound]
        at = window.find(part)
        if at >= 0:
            score, text = score + len(part), text[at + len(part) :]
            bound = 0
            continue
        for k in range(min(len(part), len(text)), 2, -1):  # the excerpt ends inside this literal
            if text.endswith(part[:k]) and len(text) - k <= bound:
                return score + k
        return score
    return score


def _text_candidates(brk: dict[str, Any], index: TreeIndex) -> list[Candidate]:
    context = observed_context(brk)
    if context is None:
        return []
    prefix, _old, new, suffix = context
    near = prefix[-(VALUE_GAP + 4) :] + "\x00" + suffix[: VALUE_GAP + 4]
    anchors = {near[i : i + 4] for i in range(len(near) - 3)} - {g for g in (near[i : i + 4] for i in range(len(near) - 3)) if "\x00" in g}
    if len(new) >= 4:
        anchors.add(new[:32])
    out: list[Candidate] = []
    for template in index.templates:
        text = template.text
        if not any(a in text for a in anchors):
            continue  # no literal of this template touches the change: cheap to skip on a big tree
        if template.has_holes:
            out += _hole_fits(template, prefix, suffix)
        if not template.has_holes or template.part_lines:  # a text file: an edited line is a literal fit
            fit = _literal_fit(template, prefix, new, suffix)
            if fit is not None:
                out.append(fit)
    return out


def _hole_fits(template: Template, prefix: str, suffix: str) -> list[Candidate]:
    out = []
    for i, part in enumerate(template.parts):
        if not isinstance(part, Hole):
            continue
        left = align_left(template.parts[:i], prefix, VALUE_GAP)
        right = align_right(template.parts[i + 1 :], suffix, VALUE_GAP)
        score = left + right
        if score < MIN_SCORE:
            continue
        # a literal next to the hole that is not found where the text has room for it speaks against the fit
        left_missing = left == 0 and len(prefix) >= 8 and any(isinstance(p, str) for p in template.parts[:i])
        right_missing = right == 0 and len(suffix) >= 8 and any(isinstance(p, str) for p in template.parts[i + 1 :])
        if (left_missing or right_missing) and score < 2 * CERTAIN_SCORE:
            continue
        both = left > 0 and right > 0 or (left > 0 and not suffix) or (right > 0 and not prefix)
        if score >= CERTAIN_SCORE and both:
            confidence = "certain"
        elif score >= LIKELY_SCORE:
            confidence = "likely"
        else:
            confidence = "possible"
        shown = _preview(template, i)
        if part.producer_line is not None:
            line, message = part.producer_line, f"{part.producer_code} is the changed value (as {part.code} in {shown})"
        else:
            line, message = part.line, f"{part.code} is the changed value in {shown}"
        out.append(Candidate(template.file, line, message, score, confidence, code=part.producer_code or part.code))
    return out


def _literal_fit(template: Template, prefix: str, new: str, suffix: str) -> Candidate | None:
    """A literal that holds the changed text itself with the text around it (an edited constant, an edited line
    of a text file)."""
    probe = prefix[-16:] + new + suffix[:16]
    if len(probe) < LIKELY_SCORE or not new:
        return None
    for i, literal in enumerate(template.parts):
        if not isinstance(literal, str) or probe not in literal:
            continue
        confidence = "certain" if len(probe) >= 2 * CERTAIN_SCORE else "likely"
        at = literal.find(probe) + len(prefix[-16:])
        shown = _line_around(literal, at) if template.part_lines else literal
        return Candidate(template.file, template.line_at(i, at), f"the changed text is written here ({_short(shown)})",
                         float(len(probe)), confidence, code=_short(shown, 30))
    return None


def _line_around(text: str, at: int) -> str:
    """The line of `text` that holds character `at`."""
    start = text.rfind("\n", 0, at) + 1
    end = text.find("\n", at)
    return text[start : end if end >= 0 else len(text)]


def _preview(template: Template, hole: int) -> str:
    text = "".join(("{…}" if j != hole else "{" + p.code + "}") if isinstance(p, Hole) else p for j, p in enumerate(template.parts))  # type: ignore[union-attr]
    return _short(text)


def _short(text: str, width: int = 60) -> str:
    flat = text.replace("\n", "⏎")
    return repr(flat if len(flat) <= width else flat[: width - 1] + "…")


# --- tools -------------------------------------------------------------------------------------------


def tool_names(text: Any) -> list[str]:
    if not isinstance(text, str) or not text.startswith("tools:"):
        return []
    return [n.strip() for n in text[len("tools:") :].split(",") if n.strip()]


def _tool_candidates(brk: dict[str, Any], index: TreeIndex) -> list[Candidate]:
    before, after = tool_names(brk.get("before")), tool_names(brk.get("after"))
    changed = sorted(set(before) ^ set(after)) or after
    wanted = set(before) | set(after)
    defined = [s for s in index.sites_of("tool_name") if s.name in wanted]
    if not defined:
        return []
    out: list[Candidate] = []
    containers = [s for s in index.sites_of("tool_container") if set(s.code.split(",")) & wanted]
    seen: set[tuple[Path, int]] = set()
    for container in containers:
        uses = [s for s in index.sites_of("iterate", container.name) if (s.file, s.line) != (container.file, container.line)]
        uses.sort(key=lambda s: (s.file != container.file, str(s.file), s.line))
        for rank, use in enumerate(uses):
            if (use.file, use.line) in seen:
                continue
            seen.add((use.file, use.line))
            score = 20.0 - rank
            code = _line_text(use)
            out.append(Candidate(use.file, use.line, f"the tool list is built from {container.name} here: {code}", score, "likely", code=code))
        held = ", ".join(sorted(wanted & set(container.code.split(","))))
        written = not uses  # a list written out and sent as it is: where it is written is where it is decided
        out.append(Candidate(container.file, container.line, f"{container.name} holds the tool definitions ({held})",
                             12.0 if written else 8.0, "likely" if written else "possible", code=container.name))
    if brk.get("detail") != "tools_reordered":
        for site in index.sites_of("tool_append"):
            if site.name in changed:
                code = _line_text(site)
                out.append(Candidate(site.file, site.line, f"tool {site.name!r} is put into the list here, on some requests only: {code}", 15.0, "likely", code=code))
        for site in defined:
            if site.name in changed:
                out.append(Candidate(site.file, site.line, f"the definition of tool {site.name!r}", 9.0, "possible", code=site.name))
    if not containers:  # tools written inline where the request is built: their first definition is the place
        first = min(defined, key=lambda s: (str(s.file), s.line))
        out.append(Candidate(first.file, first.line, f"the tool list is written here ({', '.join(sorted(wanted))})", 12.0, "likely", code=first.name))
    return out


# --- history, model, findings -----------------------------------------------------------------------


def _history_candidates(index: TreeIndex) -> list[Candidate]:
    if not index.sites_of("call"):
        return []  # nothing in the tree sends a request: the history is kept elsewhere
    shrinks = index.sites_of("shrink")
    confidence = "likely" if len(shrinks) == 1 else "possible"
    return [Candidate(s.file, s.line, f"{s.name} is cut here: {_line_text(s)}", 12.0, confidence, code=_line_text(s)) for s in shrinks]


def _literal_candidates(values: list[str], index: TreeIndex, what: str) -> list[Candidate]:
    out = []
    for value in values:
        if not value or value in ("(absent)", "null"):
            continue
        value = value.strip('"')
        for template in index.templates:
            if not template.has_holes and template.parts[0] == value:
                out.append(Candidate(template.file, template.line, f"{what} {value!r} is written here", 12.0, "likely", code=repr(value)))
    return out


def _with_findings(found: list[Candidate], family: str, findings: list[Finding], index: TreeIndex) -> None:
    """A finding of the break's family on a candidate's line (or its statement) makes the link certain and
    names the rule; a finding of the family elsewhere in a candidate's file is listed as possible."""
    files = {c.file for c in found}
    by_file: dict[Path, list[Finding]] = {}
    for f in findings:
        if FAMILIES.get(f.code) == family:
            by_file.setdefault(Path(os.path.abspath(f.filename)), []).append(f)
    for c in found:
        for f in by_file.get(Path(os.path.abspath(c.file)), []):
            if f.row <= c.line <= max(f.end_row, f.row) or abs(f.row - c.line) <= 1:
                c.rule, c.message, c.confidence, c.score = f.code, f.message, "certain", c.score + 20
                break
    taken = {(Path(os.path.abspath(c.file)), c.line) for c in found}
    for path in {Path(os.path.abspath(p)) for p in files}:
        for f in by_file.get(path, []):
            if (path, f.row) not in taken:
                found.append(Candidate(path, f.row, f.message, 5.0, "possible", f.code, code=f.name))


def _line_text(site: Site) -> str:
    try:
        with open(site.file, encoding="utf-8-sig") as fh:
            for number, text in enumerate(fh, start=1):
                if number == site.line:
                    code = re.sub(r"\s+#[^'\"]*$", "", text).strip()
                    return code if len(code) <= 80 else code[:77] + "..."
    except OSError:
        pass
    return site.code
