"""JSON Pointers (RFC 6901) into request bodies."""

from __future__ import annotations

from typing import Any


def escape(token: str | int) -> str:
    if not isinstance(token, str):
        return str(token)
    if "~" not in token and "/" not in token:
        return token
    return token.replace("~", "~0").replace("/", "~1")


def unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def join(pointer: str, *tokens: str | int) -> str:
    """Append reference tokens to a pointer: join("/messages", 3, "content") == "/messages/3/content"."""
    return pointer + "".join("/" + escape(t) for t in tokens)


def resolve(document: Any, pointer: str) -> Any:
    """The value a pointer names; KeyError / IndexError when it names nothing."""
    if pointer == "":
        return document
    if not pointer.startswith("/"):
        raise KeyError(f"not a JSON Pointer: {pointer!r}")
    value = document
    for raw in pointer[1:].split("/"):
        token = unescape(raw)
        if isinstance(value, list):
            if not token.isdigit() or (len(token) > 1 and token.startswith("0")):
                raise KeyError(f"bad array index {token!r} in {pointer!r}")
            value = value[int(token)]
        elif isinstance(value, dict):
            value = value[token]
        else:
            raise KeyError(f"{pointer!r} goes through a scalar")
    return value
