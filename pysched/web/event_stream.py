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

import contextlib
from collections import OrderedDict
from collections.abc import AsyncGenerator, Callable, Generator

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


class Stopping:
    """Set once, when the service starts stopping: event streams end at once, including those
    waiting for the next event at that moment (their waits are cancelled)."""

    def __init__(self) -> None:
        self._set = False
        self._waits: set[trio.CancelScope] = set()

    def is_set(self) -> bool:
        return self._set

    def set(self) -> None:
        self._set = True
        for scope in self._waits:
            scope.cancel()

    @contextlib.contextmanager
    def cancels(self, scope: trio.CancelScope) -> Generator[None]:
        """Within the block, the stop cancels ``scope`` (at once if it has already come)."""
        if self._set:
            scope.cancel()
        self._waits.add(scope)
        try:
            yield
        finally:
            self._waits.discard(scope)


class Turns:
    """Lets the event streams write a few at a time.

    One publish wakes every stream at once, and Trio runs every task that is ready before it
    looks at its clock again: a hundred streams each writing a burst in the same round would
    hold the loop for tens of milliseconds. A stream takes a turn before each write; at most
    ``per_round`` streams get one in a scheduling round, the others wait for the next rounds.
    The turn ends before the write, so a slow client never holds the others up.
    """

    def __init__(self, per_round: int = 4) -> None:
        self._lot = trio.CapacityLimiter(per_round)

    async def take(self) -> None:
        async with self._lot:
            await trio.lowlevel.checkpoint()


EVENT_ID_MAX = 2**63 - 1
"""The largest event id a client may resume after (what a signed 64-bit integer holds, as
JSON readers everywhere do)."""


def resume_point(header: str | None, query: str | None) -> int | None:
    """The id a client resumes after (header first), or None for "from now on".

    An empty header counts as none (an EventSource that has seen no id yet may send one); the
    caller reads the query with ``text_query``, which refuses an empty value."""
    text = header if header not in (None, "") else query
    if text in (None, ""):
        return None
    assert text is not None
    text = text.strip()
    if not (
        text.isascii()
        and text.isdigit()
        and len(text) <= len(str(EVENT_ID_MAX))
        and int(text) <= EVENT_ID_MAX
    ):
        raise ApiError(
            400, f"Last-Event-ID {text[:40]!r} is not an event id", field="last_event_id"
        )
    return int(text)


def _reset(log: EventLog, *, restarted: bool = False) -> bytes:
    """A ``reset`` to the newest event; or, for a client from before this scheduler started
    (``restarted``), to just before its first event: what it did while starting (attempts
    adopted or lost, catch-up) then follows, which is what an operator most needs to see."""
    at = log.first_id - 1 if restarted else log.last_id
    body = {"restarted": True} if restarted else {}
    data = orjson.dumps({"id": at, "kind": RESET, "data": body})
    return b"id: %d\nevent: %s\ndata: %s\n\n" % (at, RESET.encode(), data)


async def event_frames(
    log: EventLog,
    after: int | None,
    *,
    stopping: Stopping,
    keepalive_seconds: float,
    encoded: EncodedEvents,
    turns: Turns | None = None,
    allowed: Callable[[], bool] | None = None,
) -> AsyncGenerator[bytes]:
    """The SSE frames of the events after ``after``, until ``stopping`` is set, or until
    ``allowed()`` (asked before each write) says the caller may no longer read them (its token
    was revoked); each write waits for a turn when ``turns`` is given (the service shares one
    among its streams).

    **Cancellation:** the generator holds no cancel scope across a ``yield``; each wait (and
    each turn) ends before the next frame goes out.
    """
    yield b"retry: 2000\n\n"
    cursor = log.last_id if after is None else after
    if cursor > log.last_id:  # an id this log never gave (a clock set back, another server)
        yield _reset(log)
        cursor = log.last_id
    elif 0 < cursor < log.first_id - 1:
        # from before this scheduler started (ids grow across restarts): a reset at once, and
        # this life's events from its first, while the ring still holds it
        restarted = log.since(log.first_id - 1) is not None
        yield _reset(log, restarted=restarted)
        cursor = log.first_id - 1 if restarted else log.last_id
    while not stopping.is_set():
        if allowed is not None and not allowed():
            return
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
                if turns is not None:
                    await turns.take()
                yield b"".join([encoded.encode(event) for event in chunk])
                cursor = chunk[-1].id
            continue
        woke = await _wait(log.next_published(), stopping, keepalive_seconds)
        if not woke and not stopping.is_set() and (allowed is None or allowed()):
            yield b": keepalive\n\n"


async def _wait(published: trio.Event, stopping: Stopping, seconds: float) -> bool:
    """Wait for ``published`` or the stop; False when ``seconds`` passed with neither.

    One wait in this task (no helper tasks): a publish wakes every idle stream at once, so
    what each wake-up costs is paid a hundred times over.
    """
    with trio.move_on_after(seconds) as scope:
        with stopping.cancels(scope):
            await published.wait()
            return True
    return stopping.is_set()
