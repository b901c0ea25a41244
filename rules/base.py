"""What a rule is: a small class with its doc, its VALID / INVALID examples (which are its tests) and a check."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import libcst as cst

from cachelint.check.finding import Fix, Severity
from cachelint.rules import RULE_META, RuleMeta

if TYPE_CHECKING:
    from cachelint.check.analysis import Analysis


@dataclass(frozen=True, slots=True)
class Invalid:
    """Code the rule must flag: at `line` (1-based) if given; `fixed` is the source after its fix."""

    code: str
    line: int | None = None
    fixed: str | None = None
    message: str | None = None  # a substring the message must contain


@dataclass(slots=True)
class Report:
    node: cst.CSTNode
    message: str
    severity: Severity | None = None  # None: the rule's default
    fix: Fix | None = None
    confidence: str = "certain"  # certain: the flow reaches a recognized call; likely: only the call's shape says so
    position: tuple[int, int] | None = None  # (row, column) inside the node where the finding starts: a line of a long string
    also_at: cst.CSTNode | None = None  # where it was reported before it moved (the request whose body it is): a noqa there holds
    # a value found in another module of the tree, reported where it is made: (its file, row, column, end row, end
    # column, the row its statement starts on); values.reported_at_origin
    elsewhere: tuple[str, int, int, int, int, int] | None = None

    @classmethod
    def at(cls, site, node: cst.CSTNode, message: str, **kwargs) -> "Report":
        """A report about the request sent at `site` (its confidence is the call site's)."""
        return cls(node, message, confidence=site.confidence, **kwargs)


class Rule:
    code: ClassVar[str]
    what: ClassVar[str]
    why: ClassVar[str]
    example: ClassVar[str]
    instead: ClassVar[str]
    fix_safety: ClassVar[str]
    options: ClassVar[str] = ""
    VALID: ClassVar[list[str]] = []
    INVALID: ClassVar[list[Invalid]] = []
    without_sites: ClassVar[bool] = False  # also run on a module with no LLM request (prompt-shaped data only)

    @classmethod
    def meta(cls) -> RuleMeta:
        return RULE_META[cls.code]

    def check(self, analysis: "Analysis") -> Iterator[Report]:
        raise NotImplementedError

    @classmethod
    def doc_markdown(cls) -> str:
        m = cls.meta()
        parts = [
            f"## {m.code} {m.name}",
            "",
            f"**Default severity:** {m.severity}. **Fix:** {cls.fix_safety}",
            "",
            "### What it does",
            cls.what.strip(),
            "",
            "### Why is this bad?",
            cls.why.strip(),
            "",
            "### Example",
            "```python",
            cls.example.strip("\n"),
            "```",
            "",
            "### Use instead",
            "```python",
            cls.instead.strip("\n"),
            "```",
        ]
        if cls.options:
            parts += ["", "### Options", cls.options.strip()]
        return "\n".join(parts) + "\n"
