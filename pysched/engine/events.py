"""The event stream: every committed change, numbered, for the UI, the CLI, alerts and metrics.

The engine publishes an event only after the change it describes is durable (write-ahead), so a
reader never sees something the journal could lose. Events are kept in a bounded ring; a reader
that falls further behind than the ring gets a ``reset`` and reloads. Publishing never blocks
and never waits for a reader: a slow reader loses its place, the engine does not slow down.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import AsyncIterator, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import trio


@dataclass(frozen=True, slots=True, kw_only=True)
class Event:
    """``kind``: run_created, run_changed, attempt_started, attempt_ended, action,
    config_applied, reload_failed, firing_skipped, firings_skipped (alerts add their own)."""

    id: int
    at: datetime
    kind: str
    data: Mapping[str, Any]


RESET = "reset"


class EventLog:
    """A bounded, numbered ring of events with waiting readers.

    Ids count up from ``first_id``. The service starts them from the wall clock (in
    microseconds), so every id a scheduler hands out is larger than any its predecessor
    did: a reader resuming with an id from before a restart is behind the ring, and gets a
    ``reset`` instead of silently missing what the new scheduler published.
    """

    def __init__(self, capacity: int = 10_000, *, first_id: int = 1) -> None:
        self._events: deque[Event] = deque(maxlen=capacity)
        self._capacity = capacity
        self._first_id = first_id
        self._next_id = first_id
        self._by_run: dict[str, deque[Event]] = {}
        """The events in the ring that name a run, per run (for a run's page)."""
        self._changed = trio.Event()

    @property
    def last_id(self) -> int:
        return self._next_id - 1

    @property
    def first_id(self) -> int:
        """The id of this log's first event (published or not yet)."""
        return self._first_id

    @property
    def published(self) -> int:
        """How many events this log has published."""
        return self._next_id - self._first_id

    def publish(self, at: datetime, kind: str, data: Mapping[str, Any]) -> Event:
        event = self._append(at, kind, data)
        self._wake_readers()
        return event

    def publish_all(self, events: Iterable[tuple[datetime, str, Mapping[str, Any]]]) -> None:
        """Publish each ``(at, kind, data)`` in order, waking the readers once at the end."""
        for at, kind, data in events:
            self._append(at, kind, data)
        self._wake_readers()

    def _append(self, at: datetime, kind: str, data: Mapping[str, Any]) -> Event:
        event = Event(id=self._next_id, at=at, kind=kind, data=data)
        self._next_id += 1
        events = self._events
        if len(events) == self._capacity:  # the oldest leaves the ring, and its run's index
            self._forget(events[0])
        events.append(event)
        run_id = data.get("run_id")
        if run_id is not None:
            self._by_run.setdefault(run_id, deque()).append(event)
        return event

    def _wake_readers(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    def _forget(self, event: Event) -> None:
        run_id = event.data.get("run_id")
        if run_id is None:
            return
        mine = self._by_run.get(run_id)
        if mine and mine[0] is event:
            mine.popleft()
            if not mine:
                del self._by_run[run_id]

    def for_run(self, run_id: str) -> list[Event]:
        """The events in the ring about ``run_id``, oldest first (no scan of the ring)."""
        return list(self._by_run.get(run_id, ()))

    def recent(self) -> list[Event]:
        """Every event still in the ring, oldest first."""
        return list(self._events)

    def next_published(self) -> trio.Event:
        """An event set when the next event is published. Take it right after reading
        ``since`` (no checkpoint between), so nothing published in between is missed."""
        return self._changed

    def since(self, last_id: int) -> list[Event] | None:
        """Events after ``last_id``, or None when some of them already left the ring.

        ``0`` means "from this log's first event", whatever ``first_id`` is: every event since
        the engine started, while the first is still in the ring."""
        if last_id == 0:
            last_id = self._first_id - 1
        if not self._events or last_id >= self.last_id:
            return []
        first = self._events[0].id
        if last_id + 1 < first:
            return None
        # the tail only: a reader that keeps up asks for a few events out of thousands
        return list(itertools.islice(self._events, last_id + 1 - first, None))

    async def follow(self, last_id: int | None = None) -> AsyncIterator[Event]:
        """Yield events after ``last_id`` (default: from now on) as they come.

        When the reader has fallen behind the ring it gets one event of kind ``reset`` (id of
        the newest event) and continues from there; it should reload its view.
        """
        cursor = self.last_id if last_id is None else last_id
        while True:
            events = self.since(cursor)
            if events is None:
                newest = self._events[-1]
                yield Event(id=newest.id, at=newest.at, kind=RESET, data={})
                cursor = newest.id
                continue
            if not events:
                await self._changed.wait()
                continue
            for event in events:
                yield event
                cursor = event.id
