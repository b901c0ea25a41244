"""Keeping one huge exchange (or a burst) from delaying the others: analysis is bounded, the stored row never is.

The recorder analyzes on one thread. Analysis time grows with the number of JSON objects in a request (a 10^6
message request took minutes), so an exchange with more than MAX_OBJECTS objects, or any exchange dequeued while
more than SHED_BACKLOG wait behind it, is stored as it came (headers cleaned, bodies if kept) with a note saying
why it was not analyzed. The user is told once per episode.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable

from cachelint.record.exchange import Captured, escape_text, route_provider
from cachelint.record.secrets import clean_headers, clean_url
from cachelint.record.store import Row

MAX_OBJECTS = 100_000  # JSON objects in one request body above which it is stored without analysis
SHED_BACKLOG = 500  # queued exchanges above which analysis is shed until the recorder catches up
UNANALYZED_SESSION = "unanalyzed"
_MODEL = re.compile(rb'"model"\s*:\s*"((?:[^"\\]|\\.){1,200})"')


class Shedder:
    def __init__(self, notice: Callable[[str], None]) -> None:
        self.notice = notice
        self.shedding = False
        self.shed = 0

    def reason(self, item: Captured, backlog: int) -> str | None:
        """Why this exchange is stored without analysis, or None to analyze it."""
        if backlog > SHED_BACKLOG:
            if not self.shedding:
                self.shedding = True
                self.notice(f"the recorder is {backlog} exchanges behind: storing them without analysis until it catches up (no row is dropped)")
            self.shed += 1
            return f"not analyzed: the recorder was {backlog} exchanges behind (over {SHED_BACKLOG}); the row is kept"
        if self.shedding and backlog == 0:
            self.shedding = False
            self.notice(f"the recorder caught up ({self.shed} exchanges stored without analysis)")
        objects = count_objects(item)
        if objects > MAX_OBJECTS:
            self.shed += 1
            self.notice(f"an exchange with {objects:,} JSON objects is stored without analysis (over {MAX_OBJECTS:,}), so it does not hold up the others")
            return f"not analyzed: {objects:,} JSON objects in the request (over {MAX_OBJECTS:,})"
        return None


def count_objects(item: Captured) -> int:
    """`{` bytes in the decoded request: an upper bound on its JSON objects, counted at C speed. The body is
    decoded once for the shedder and the recorder; one that cannot be decoded (or is too large) counts 0: the
    recorder records why, without parsing it."""
    body = item.request_decoded()
    return body.count(b"{") if body is not None else 0


def unanalyzed_row(item: Captured, reason: str, store_bodies: bool) -> Row:
    """The exchange as it came: what crossed the wire (credentials removed), no usage, no break."""
    found = _MODEL.search(item.request_body[:65536])
    row = Row(
        session=UNANALYZED_SESSION,
        seq=0,
        started_at=item.started_at,
        provider=route_provider(item.path),
        model=escape_text(found.group(1).decode("utf-8", "replace")) if found else None,
        method=item.method,
        url=clean_url(item.url),
        status=item.status,
        error=f"{item.error}; {reason}" if item.error else reason,
        ttft=(item.first_byte_at - item.started_at) if item.first_byte_at else None,
        duration=(item.ended_at - item.started_at) if item.ended_at else None,
        request_headers=clean_headers(item.request_headers),
        response_headers=clean_headers(item.response_headers),
        streamed=item.streamed,
        request_sha256=hashlib.sha256(item.request_body).hexdigest(),
    )
    if store_bodies:
        decoded = item.request_decoded()
        row.request_body = escape_text((decoded if decoded is not None else item.request_body).decode("utf-8", "replace"))
        text = item.response_text()
        row.response_body = escape_text(text) if text is not None else None
    return row
