"""What kind of change turned one prefix text into another: volatile value, whitespace, JSON key order."""

from __future__ import annotations

import json
import re

from cachelint.diff.locate import common_prefix_length

_TOKEN_CHARS = r"0-9A-Za-z:+._/\-"
_SPLIT = re.compile(rf"([^{_TOKEN_CHARS}]+)")
_IS_TOKEN_CHAR = re.compile(rf"[{_TOKEN_CHARS}]")
_MONTHS = "jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec"
_DAYS = "mon|tue|tues|wed|thu|thur|thurs|fri|sat|sun"

# Checked in order; the first pattern both sides match names the kind.
VOLATILE_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("uuid", re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")),
    (
        "timestamp",
        re.compile(r"\d{4}-\d{2}-\d{2}[T_]\d{1,2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?", re.I),
    ),
    ("date", re.compile(r"\d{4}-\d{1,2}-\d{1,2}|\d{1,2}/\d{1,2}/\d{2,4}|\d{1,2}\.\d{1,2}\.\d{2,4}|\d{4}/\d{1,2}/\d{1,2}")),
    ("date", re.compile(rf"({_MONTHS})[a-z]*|({_DAYS})[a-z]*(day)?", re.I)),
    ("time", re.compile(r"\d{1,2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?", re.I)),
    ("number", re.compile(r"[+-]?\d+(\.\d+)?")),
    ("hex", re.compile(r"(0x)?[0-9a-fA-F]{8,}")),
    ("random", re.compile(r"(?=[A-Za-z0-9_\-]*\d)(?=[A-Za-z0-9_\-]*[A-Za-z])[A-Za-z0-9_\-]{16,}")),
]


def _kind(token: str) -> str | None:
    token = token.strip(".:,-/")
    for kind, pattern in VOLATILE_PATTERNS:
        if pattern.fullmatch(token):
            return kind
    return None


def changed_span(before: str, after: str) -> tuple[int, int, int]:
    """(start, end in before, end in after) of the region that differs, widened to whole value tokens."""
    start = common_prefix_length(before, after)
    suffix = 0
    limit = min(len(before), len(after)) - start
    while suffix < limit and before[-1 - suffix] == after[-1 - suffix]:
        suffix += 1
    b_end, a_end = len(before) - suffix, len(after) - suffix
    while start > 0 and _IS_TOKEN_CHAR.match(before[start - 1]):
        start -= 1
    while b_end < len(before) and a_end < len(after) and _IS_TOKEN_CHAR.match(before[b_end]):
        b_end += 1
        a_end += 1
    return start, b_end, a_end


def volatile_kind(before: str, after: str) -> str | None:
    """The kind of value (timestamp, date, time, uuid, number, hex, random) that changed in place, if the
    only differences between the texts are such values."""
    if before == after:
        return None
    start, b_end, a_end = changed_span(before, after)
    b_parts, a_parts = _SPLIT.split(before[start:b_end]), _SPLIT.split(after[start:a_end])
    if len(b_parts) != len(a_parts):
        return None
    found = None
    for index, (b, a) in enumerate(zip(b_parts, a_parts)):
        if b == a:
            continue
        if index % 2 == 1:  # separators must match
            return None
        kind_b, kind_a = _kind(b), _kind(a)
        if kind_b is None or kind_a is None:
            return None
        found = found or (kind_b if kind_b == kind_a else kind_a)
    return found


def whitespace_only(before: str, after: str) -> bool:
    return before != after and before.split() == after.split()


def json_key_order(before: str, after: str) -> bool:
    """True when the texts differ only in the key order of a JSON value around their first difference."""
    if before == after:
        return False
    try:
        if json.loads(before) == json.loads(after):
            return True
    except ValueError:
        pass
    at = common_prefix_length(before, after)
    decoder = json.JSONDecoder()
    tries = 0
    for start in range(at, -1, -1):
        if start >= len(before) or before[start] not in "{[":
            continue
        tries += 1
        if tries > 64:
            break
        try:
            b_value, b_end = decoder.raw_decode(before, start)
            a_value, a_end = decoder.raw_decode(after, start)
        except ValueError:
            continue
        if b_end > at and b_value == a_value and before[b_end:] == after[a_end:]:
            return True
    return False
