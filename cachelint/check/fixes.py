"""Building fixes as text edits, and applying them to a source without breaking its formatting."""

from __future__ import annotations

import re

import libcst as cst

from cachelint.check.finding import Applicability, Edit, Finding, Fix
from cachelint.check.module import ModuleContext


def replace_node(ctx: ModuleContext, node: cst.CSTNode, new_code: str) -> Edit:
    span = ctx.span(node)
    return Edit(span.row, span.column, span.end_row, span.end_column, new_code)


def add_keyword(ctx: ModuleContext, call: cst.Call, keyword: str, value: str, applicability: Applicability = "safe") -> Fix:
    """`f(a)` -> `f(a, keyword=value)`, keeping the call's own layout."""
    args = list(call.args)
    for i, existing in enumerate(args):  # json.dumps(x, sort_keys=False): change the value, never repeat the keyword
        if existing.keyword is not None and existing.keyword.value == keyword:
            args[i] = existing.with_changes(value=cst.parse_expression(value))
            new = call.with_changes(args=args)
            return Fix(applicability, f"Set `{keyword}={value}`", (replace_node(ctx, call, ctx.module.code_for_node(new)),))
    arg = cst.Arg(keyword=cst.Name(keyword), value=cst.parse_expression(value), equal=cst.AssignEqual(
        whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")))
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


_LINE_END = re.compile(r"\r\n|\r|\n")


def _offsets(source: str) -> list[int]:
    """Where each row starts, counting rows as libcst does: only \\r\\n, \\r and \\n end a line (not form feeds,
    \\x85 or \\u2028, which str.splitlines would also split at)."""
    return [0] + [m.end() for m in _LINE_END.finditer(source)] + [len(source)]


def apply_edits(source: str, edits: list[Edit]) -> tuple[str, int]:
    """Apply non-overlapping edits (the first of overlapping ones wins; one that ends before it starts is skipped);
    returns (new source, edits applied)."""
    starts = _offsets(source)

    def offset(row: int, column: int) -> int:
        """A position as an index into `source`; positions past a line or the file end are clamped to them."""
        row = min(max(row, 1), len(starts) - 1)
        line_end = starts[row] if row < len(starts) - 1 else len(source)
        return min(starts[row - 1] + max(column, 1) - 1, line_end, len(source))

    spans = sorted(((offset(e.row, e.column), offset(e.end_row, e.end_column), e) for e in edits), key=lambda t: (t[0], t[1]))
    out, cursor, applied = [], 0, 0
    for start, end, edit in spans:
        if start < cursor or end < start:  # overlapping an applied edit, or ending before it starts: not applied
            continue
        out.append(source[cursor:start])
        out.append(edit.content)
        cursor = end
        applied += 1
    out.append(source[cursor:])
    return "".join(out), applied


def fixable(findings: list[Finding], unsafe: bool) -> list[Finding]:
    return [f for f in findings if f.fix is not None and (f.fix.applicability == "safe" or unsafe)]
