"""Find the first place two JSON values differ, as a JSON Pointer into the second one."""

from __future__ import annotations

from typing import Any

from cachelint.prompt.pointer import join


def common_prefix_length(a: str, b: str) -> int:
    n = min(len(a), len(b))
    i = 0
    # compare in chunks first: long shared prompts are the common case
    step = 4096
    while i + step <= n and a[i : i + step] == b[i : i + step]:
        i += step
    while i < n and a[i] == b[i]:
        i += 1
    return i


def common_prefix_items(a: list[Any], b: list[Any]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def first_difference(before: Any, after: Any, pointer: str) -> tuple[str, int | None] | None:
    """The deepest node of `after` where it stops matching `before`: (pointer, char offset or None).

    Strings give the offset (in code points) of the first differing character; arrays the first index that
    differs; objects the first key whose presence, position or value differs. None when the values are equal
    and their key orders match.
    """
    if isinstance(before, str) and isinstance(after, str):
        if before == after:
            return None
        return pointer, common_prefix_length(before, after)
    if isinstance(before, dict) and isinstance(after, dict):
        bkeys, akeys = list(before), list(after)
        for position, key in enumerate(akeys):
            if key not in before:
                return join(pointer, key), None
            if position >= len(bkeys) or bkeys[position] != key:
                if before[key] == after[key]:  # same value, moved: the key order changed here
                    return join(pointer, key), None
            found = first_difference(before[key], after[key], join(pointer, key))
            if found is not None:
                return found
        if len(bkeys) != len(akeys):  # a key was removed
            return pointer, None
        return None
    if isinstance(before, list) and isinstance(after, list):
        for index in range(min(len(before), len(after))):
            found = first_difference(before[index], after[index], join(pointer, index))
            if found is not None:
                return found
        if len(before) == len(after):
            return None
        return (join(pointer, len(before)), None) if len(after) > len(before) else (pointer, None)
    if type(before) is type(after) and before == after:
        return None
    return pointer, None
