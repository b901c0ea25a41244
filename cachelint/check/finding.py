"""What `cachelint check` reports: findings with positions and optional fixes.

Rows and columns are 1-based, columns count Unicode code points (as libcst does); the LSP layer converts
to UTF-16 for editors. `end_*` is exclusive of the last character, as in ruff's JSON output.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Severity = Literal["error", "warning"]
Applicability = Literal["safe", "unsafe"]
Confidence = Literal["certain", "likely"]


@dataclass(frozen=True, slots=True)
class Edit:
    """Replace the text between two positions (1-based rows and columns) with `content`."""

    row: int
    column: int
    end_row: int
    end_column: int
    content: str

    def to_json(self) -> dict[str, Any]:
        return {
            "content": self.content,
            "location": {"row": self.row, "column": self.column},
            "end_location": {"row": self.end_row, "column": self.end_column},
        }


@dataclass(frozen=True, slots=True)
class Fix:
    applicability: Applicability
    message: str
    edits: tuple[Edit, ...]

    def to_json(self) -> dict[str, Any]:
        return {"applicability": self.applicability, "message": self.message, "edits": [e.to_json() for e in self.edits]}


@dataclass(frozen=True, slots=True)
class Finding:
    code: str  # CL101
    name: str  # volatile-value-in-prefix
    message: str
    severity: Severity
    filename: str
    row: int
    column: int
    end_row: int
    end_column: int
    fix: Fix | None = None
    extra: dict[str, Any] = field(default_factory=dict, compare=False)
    confidence: Confidence = "certain"  # certain: the data reaches a recognized SDK call; likely: only its shape says so

    def to_json(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "name": self.name,
            "message": self.message,
            "severity": self.severity,
            "filename": self.filename,
            "location": {"row": self.row, "column": self.column},
            "end_location": {"row": self.end_row, "column": self.end_column},
            "fix": self.fix.to_json() if self.fix else None,
            "confidence": self.confidence,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Finding":
        fix = data.get("fix")
        return cls(
            code=data["code"],
            name=data["name"],
            message=data["message"],
            severity=data["severity"],
            filename=data["filename"],
            row=data["location"]["row"],
            column=data["location"]["column"],
            end_row=data["end_location"]["row"],
            end_column=data["end_location"]["column"],
            fix=Fix(
                fix["applicability"],
                fix.get("message", ""),
                tuple(
                    Edit(e["location"]["row"], e["location"]["column"], e["end_location"]["row"], e["end_location"]["column"], e["content"])
                    for e in fix["edits"]
                ),
            )
            if fix
            else None,
            confidence=data.get("confidence", "certain"),
        )


def seen_from(findings: list[Finding], filename: str) -> list[Finding]:
    """The findings of one document (an editor's, or stdin's): a finding reported in another module of the tree, where
    a value this document's request takes in is made, is shown where this document reaches it, as it reads from here
    (the document is what is being checked, and its rows are what its diagnostics can name)."""
    from dataclasses import replace

    shown = []
    for finding in findings:
        caller = finding.extra.get("caller") if finding.filename != filename else None
        if caller:
            row, column, end_row, end_column, message = caller
            finding = replace(finding, filename=filename, row=row, column=column, end_row=end_row, end_column=end_column, message=message)
        shown.append(finding)
    return shown
