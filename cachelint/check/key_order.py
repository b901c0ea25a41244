"""Where a dict's key order can change from one request to the next (CL102).

A dict's key order is its insertion order, so the same code filling it from the same data gives the same text
every time. It changes only where the data comes back in another order:

- rows read with a `SELECT` that has no `ORDER BY` (a database returns them in any order), each row setting a
  key: `for key, value in conn.execute("SELECT key, value FROM settings WHERE ..."): settings[key] = value`;
- a Redis hash read whole (`hgetall`), whose field order is its hash table's;
- a store that gives keys back in its own order (PostgreSQL jsonb: `stored_turns.reordering_store`), asked by
  the rule for the whole tree.

`unordered_source` follows the rendered value back through names, copies (`dict(x)`, `x.copy()`) and the
module's own functions that return it, a few steps deep.
"""

from __future__ import annotations

import re

import libcst as cst

from cachelint.check.module import ModuleContext, called_name, descendants
from cachelint.check.values import string_value

SELECT = re.compile(r"^\s*select\b", re.IGNORECASE)
ORDER_BY = re.compile(r"\border\s+by\b", re.IGNORECASE)
HASH_READS = frozenset({"hgetall"})
MAX_DEPTH = 3


def unordered_source(ctx: ModuleContext, expr: cst.BaseExpression | None, depth: int = 0) -> str | None:
    """Words for where the dict `expr` gets a key order that can change between requests, or None."""
    if expr is None or depth > MAX_DEPTH:
        return None
    if isinstance(expr, cst.Call):
        name = called_name(expr)
        if name in HASH_READS:
            return f"a Redis hash read whole (`{ctx.code(expr.func)}()`), whose field order is its hash table's"
        if name in ("dict", "copy", "deepcopy") or (isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "copy"):
            inner = expr.args[0].value if expr.args else expr.func.value if isinstance(expr.func, cst.Attribute) else None
            return unordered_source(ctx, inner, depth + 1)
        for function in ctx.called_functions(expr):
            for returned in ctx.returns_of(function):
                found = unordered_source(ctx, returned, depth + 1)
                if found:
                    return found
        return None
    if isinstance(expr, cst.Name):
        for binding, value in ctx.assigned_values(expr):
            found = unordered_source(ctx, value, depth + 1) if value is not None else None
            if found:
                return found
        return _filled_from_rows(ctx, expr)
    return None


def _filled_from_rows(ctx: ModuleContext, name: cst.Name) -> str | None:
    """`name[key] = value` in a loop over the rows of a `SELECT` with no `ORDER BY`, in the function that binds it."""
    function = ctx.enclosing_function(name)
    if function is None:
        return None
    for loop in (n for n in descendants(function.body) if isinstance(n, cst.For)):
        stores = [n for n in descendants(loop.body) if isinstance(n, cst.AssignTarget) and isinstance(n.target, cst.Subscript)
                  and isinstance(n.target.value, cst.Name) and n.target.value.value == name.value]
        if not stores:
            continue
        query = _unordered_query(ctx, loop.iter)
        if query:
            return f"rows of `{query}` with no ORDER BY, which the database returns in any order"
    return None


def _unordered_query(ctx: ModuleContext, iterable: cst.BaseExpression, depth: int = 0) -> str | None:
    """The SQL text of `conn.execute("SELECT ...")` (or of the cursor a name holds), when it has no ORDER BY."""
    if depth > 2:
        return None
    for node in (iterable, *descendants(iterable)):
        text = string_value(node) if isinstance(node, (cst.SimpleString, cst.ConcatenatedString)) else None
        if text is not None and SELECT.search(text):
            if ORDER_BY.search(text):
                return None
            query = " ".join(text.split())
            return query if len(query) <= 80 else query[:77] + "..."
    if isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Attribute):  # cursor.fetchall()
        iterable = iterable.func.value
    if isinstance(iterable, cst.Name):
        for _, value in ctx.assigned_values(iterable):
            if value is not None:
                found = _unordered_query(ctx, value, depth + 1)
                if found:
                    return found
    return None
