"""An incremental Server-Sent Events parser (the WHATWG event-stream rules), fed bytes as they arrive.

The proxy taps streamed LLM responses chunk by chunk with it; recorded streams are parsed with the same
code, so usage read live equals usage read from a file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Event:
    event: str  # "message" when the stream names none
    data: str


_LINE_END = re.compile(rb"\r\n|\r|\n")


class SSEParser:
    """Linear in the stream's size, however it is chunked (a 50 MB line arriving in 64 KiB pieces included)."""

    def __init__(self) -> None:
        self._partial: list[bytes] = []  # the current unterminated line, in pieces
        self._event = ""
        self._data: list[str] = []
        self._pending_cr = False  # the last chunk ended in CR: a leading LF in the next one belongs to it

    def feed(self, chunk: bytes) -> list[Event]:
        """Parse what `chunk` completes; keep the rest for the next call. Chunks may split anywhere."""
        if not chunk:
            return []
        if self._pending_cr:
            self._pending_cr = False
            if chunk.startswith(b"\n"):
                chunk = chunk[1:]
        if b"\n" not in chunk and b"\r" not in chunk:
            self._partial.append(chunk)
            return []
        buffer = b"".join(self._partial) + chunk if self._partial else chunk
        self._partial = []
        events: list[Event] = []
        position = 0
        for match in _LINE_END.finditer(buffer):
            event = self._line(buffer[position : match.start()].decode("utf-8", "replace"))
            if event is not None:
                events.append(event)
            position = match.end()
            if match.group() == b"\r" and position == len(buffer):
                self._pending_cr = True
        if position < len(buffer):
            self._partial.append(buffer[position:])
        return events

    def close(self) -> list[Event]:
        """End of stream: a final line without a terminator still counts; an unterminated event is dropped
        unless it has data (lenient, as recorded streams are often cut)."""
        events = []
        if self._partial:
            rest, self._partial = b"".join(self._partial), []
            event = self._line(rest.decode("utf-8", "replace"))
            if event is not None:
                events.append(event)
        event = self._dispatch()
        if event is not None:
            events.append(event)
        return events

    def _line(self, line: str) -> Event | None:
        if line == "":
            return self._dispatch()
        if line.startswith(":"):
            return None
        field, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if field == "event":
            self._event = value
        elif field == "data":
            self._data.append(value)
        return None

    def _dispatch(self) -> Event | None:
        if not self._data:
            self._event = ""
            return None
        event = Event(self._event or "message", "\n".join(self._data))
        self._event, self._data = "", []
        return event


def parse_events(stream: bytes | str) -> list[Event]:
    """All events of a complete recorded stream."""
    parser = SSEParser()
    raw = stream.encode("utf-8") if isinstance(stream, str) else stream
    return parser.feed(raw) + parser.close()
