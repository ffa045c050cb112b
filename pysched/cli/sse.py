"""Reading a ``text/event-stream`` (server-sent events) line by line.

The format (WHATWG HTML, "Server-sent events"): fields ``id:``, ``event:``, ``data:`` (repeated
``data`` lines join with newlines), a line starting with ``:`` is a comment (the server's
keepalive), and a blank line ends an event. A stream that ends mid-event drops that event, as a
browser does: its ``id`` was never confirmed, so resuming from the last complete one repeats it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerEvent:
    """One complete event; ``id`` is None when the event carried none."""

    id: str | None
    event: str
    data: str


def read_events(lines: Iterable[str]) -> Iterator[ServerEvent | None]:
    """The events in ``lines``; a ``None`` for each comment line, so a reader can tell that the
    connection is alive (keepalives) without an event."""
    event_id: str | None = None
    kind = ""
    data: list[str] = []
    seen = False
    for raw in lines:
        line = raw.rstrip("\r\n")
        if not line:
            if seen:
                yield ServerEvent(id=event_id, event=kind or "message", data="\n".join(data))
            event_id, kind, data, seen = None, "", [], False
            continue
        if line.startswith(":"):
            yield None
            continue
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "data":
            data.append(value)
        elif name == "event":
            kind = value
        elif name == "id":
            if "\0" not in value:
                event_id = value
        else:
            continue  # "retry" and unknown fields: nothing for us
        seen = True
