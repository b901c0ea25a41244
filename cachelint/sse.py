"""An incremental Server-Sent Events parser (the WHATWG event-stream rules), fed bytes as they arrive.

The proxy taps streamed LLM responses chunk by chunk with it; recorded streams are parsed with the same
code, so usage read live equals usage read from a file.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Event:
    event: str  # "message" when the stream names none
    data: str


class SSEParser:
    def __init__(self) -> None:
        self._buffer = b""
        self._event = ""
        self._data: list[str] = []
        self._pending_cr = False

    def feed(self, chunk: bytes) -> list[Event]:
        """Parse what `chunk` completes; keep the rest for the next call. Chunks may split anywhere."""
        self._buffer += chunk
        events: list[Event] = []
        while (line := self._next_line()) is not None:
            event = self._line(line)
            if event is not None:
                events.append(event)
        return events

    def close(self) -> list[Event]:
        """End of stream: a final line without a terminator still counts; an unterminated event is dropped
        unless it has data (lenient, as recorded streams are often cut)."""
        events = []
        if self._buffer:
            rest, self._buffer = self._buffer, b""
            event = self._line(rest.decode("utf-8", "replace"))
            if event is not None:
                events.append(event)
        event = self._dispatch()
        if event is not None:
            events.append(event)
        return events

    def _next_line(self) -> str | None:
        """Pop one line ending in CRLF, LF or CR; a CR at the very end may still be the first half of CRLF."""
        buf = self._buffer
        if self._pending_cr:
            if not buf:
                return None
            self._pending_cr = False
            if buf.startswith(b"\n"):
                buf = self._buffer = buf[1:]
        lf, cr = buf.find(b"\n"), buf.find(b"\r")
        ends = [i for i in (lf, cr) if i >= 0]
        if not ends:
            return None
        i = min(ends)
        line = buf[:i].decode("utf-8", "replace")
        if i == cr:
            if i + 1 < len(buf):
                self._buffer = buf[i + 2 :] if buf[i + 1] == 0x0A else buf[i + 1 :]
            else:
                self._buffer, self._pending_cr = b"", True
        else:
            self._buffer = buf[i + 1 :]
        return line

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
