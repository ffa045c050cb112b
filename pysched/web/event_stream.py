"""``GET /api/v1/events``: the engine's event stream as server-sent events.

Each event goes out as::

    id: 42
    event: run_changed
    data: {"id": 42, "at": "...", "kind": "run_changed", "data": {...}}

A client that reconnects with ``Last-Event-ID: 42`` (or ``?last_event_id=42``) gets every event
after 42 still in the engine's ring, then the live ones. One that fell further behind than the
ring, or that names an id this server never gave (the scheduler restarted and counts from 1
again), gets one ``reset`` event carrying the newest id: it should reload its view and carry on.

The engine never waits for a reader: the stream reads the ring at its own pace, so a slow
client only falls behind (and gets a ``reset``), it never slows the engine. A comment line goes
out every ``keepalive_seconds`` so proxies keep the connection open, and the stream ends at
once when the service starts stopping.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import AsyncGenerator

import orjson
import trio

from pysched.engine.events import RESET, Event, EventLog
from pysched.web.api_errors import ApiError
from pysched.web.views import event_view

_CACHE_SIZE = 4_096
_CHUNK = 256
"""At most this many events in one write."""


class EncodedEvents:
    """Each event's SSE bytes, encoded once however many clients receive it."""

    def __init__(self) -> None:
        self._cache: OrderedDict[int, bytes] = OrderedDict()

    def encode(self, event: Event) -> bytes:
        cached = self._cache.get(event.id)
        if cached is not None:
            return cached
        data = orjson.dumps(event_view(event), default=str)
        frame = b"id: %d\nevent: %s\ndata: %s\n\n" % (event.id, event.kind.encode(), data)
        self._cache[event.id] = frame
        if len(self._cache) > _CACHE_SIZE:
            self._cache.popitem(last=False)
        return frame


def resume_point(header: str | None, query: str | None) -> int | None:
    """The id a client resumes after (header first), or None for "from now on"."""
    text = header if header not in (None, "") else query
    if text in (None, ""):
        return None
    assert text is not None
    text = text.strip()
    if not (text.isascii() and text.isdigit() and len(text) <= 20):
        raise ApiError(
            400, f"Last-Event-ID {text[:40]!r} is not an event id", field="last_event_id"
        )
    return int(text)


def _reset(log: EventLog) -> bytes:
    newest = log.last_id
    data = orjson.dumps({"id": newest, "kind": RESET, "data": {}})
    return b"id: %d\nevent: %s\ndata: %s\n\n" % (newest, RESET.encode(), data)


async def event_frames(
    log: EventLog,
    after: int | None,
    *,
    stopping: trio.Event,
    keepalive_seconds: float,
    encoded: EncodedEvents,
) -> AsyncGenerator[bytes]:
    """The SSE frames of the events after ``after``, until ``stopping`` is set.

    **Cancellation:** the generator holds no cancel scope across a ``yield``; each wait is a
    nursery that ends before the next frame goes out.
    """
    yield b"retry: 2000\n\n"
    cursor = log.last_id if after is None else after
    if cursor > log.last_id:
        yield _reset(log)
        cursor = log.last_id
    while not stopping.is_set():
        events = log.since(cursor)
        if events is None:
            yield _reset(log)
            cursor = log.last_id
            continue
        if events:
            # the events ready now go out as one write (up to a chunk): one send per burst
            # rather than per event, which is what 100 clients of a busy engine cost
            for start in range(0, len(events), _CHUNK):
                chunk = events[start : start + _CHUNK]
                yield b"".join([encoded.encode(event) for event in chunk])
                cursor = chunk[-1].id
            continue
        woke = await _wait(log.next_published(), stopping, keepalive_seconds)
        if not woke and not stopping.is_set():
            yield b": keepalive\n\n"


async def _wait(published: trio.Event, stopping: trio.Event, seconds: float) -> bool:
    """Wait for ``published`` or the stop; False when ``seconds`` passed with neither."""
    woke = False
    with trio.move_on_after(seconds):
        async with trio.open_nursery() as nursery:

            async def on_event() -> None:
                nonlocal woke
                await published.wait()
                woke = True
                nursery.cancel_scope.cancel()

            async def on_stop() -> None:
                nonlocal woke
                await stopping.wait()
                woke = True
                nursery.cancel_scope.cancel()

            nursery.start_soon(on_event)
            nursery.start_soon(on_stop)
    return woke
