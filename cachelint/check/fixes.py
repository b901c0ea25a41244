"""Building fixes as text edits, and applying them to a source without breaking its formatting."""

from __future__ import annotations

import libcst as cst

from cachelint.check.finding import Applicability, Edit, Finding, Fix
from cachelint.check.module import ModuleContext


def replace_node(ctx: ModuleContext, node: cst.CSTNode, new_code: str) -> Edit:
    span = ctx.span(node)
    return Edit(span.row, span.column, span.end_row, span.end_column, new_code)


def add_keyword(ctx: ModuleContext, call: cst.Call, keyword: str, value: str, applicability: Applicability = "safe") -> Fix:
    """`f(a)` -> `f(a, keyword=value)`, keeping the call's own layout."""
    arg = cst.Arg(keyword=cst.Name(keyword), value=cst.parse_expression(value), equal=cst.AssignEqual(
        whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")))
    args = list(call.args)
    if args and args[-1].comma is cst.MaybeSentinel.DEFAULT:
        args[-1] = args[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
        args.append(arg)
    elif args:  # a trailing comma already: keep it after the new argument
        trailing = args[-1].comma
        args[-1] = args[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
        args.append(arg.with_changes(comma=trailing))
    else:
        args.append(arg)
    new = call.with_changes(args=args)
    return Fix(applicability, f"Add `{keyword}={value}`", (replace_node(ctx, call, ctx.module.code_for_node(new)),))


def wrap(ctx: ModuleContext, node: cst.BaseExpression, function: str, applicability: Applicability = "safe") -> Fix:
    """`expr` -> `function(expr)`."""
    code = ctx.module.code_for_node(node)
    return Fix(applicability, f"Wrap in `{function}()`", (replace_node(ctx, node, f"{function}({code})"),))


def _offsets(source: str) -> list[int]:
    starts = [0]
    for line in source.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    return starts


def apply_edits(source: str, edits: list[Edit]) -> tuple[str, int]:
    """Apply non-overlapping edits (the first of overlapping ones wins); returns (new source, edits applied)."""
    starts = _offsets(source)

    def offset(row: int, column: int) -> int:
        return starts[row - 1] + column - 1

    spans = sorted(((offset(e.row, e.column), offset(e.end_row, e.end_column), e) for e in edits), key=lambda t: (t[0], t[1]))
    out, cursor, applied = [], 0, 0
    for start, end, edit in spans:
        if start < cursor:
            continue
        out.append(source[cursor:start])
        out.append(edit.content)
        cursor = end
        applied += 1
    out.append(source[cursor:])
    return "".join(out), applied


def fixable(findings: list[Finding], unsafe: bool) -> list[Finding]:
    return [f for f in findings if f.fix is not None and (f.fix.applicability == "safe" or unsafe)]
