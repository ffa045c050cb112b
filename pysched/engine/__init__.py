"""The engine: runs from firing to final state, write-ahead, fail-stop (and the forecast, its
offline twin, in ``pysched.engine.forecast``)."""

from __future__ import annotations

from pysched.engine.actions import Engine
from pysched.engine.book import Book
from pysched.engine.events import Event, EventLog
from pysched.engine.opening import open_engine
from pysched.engine.runs import Attempt, AttemptOutcome, Run, RunState, Trigger

__all__ = [
    "Attempt",
    "AttemptOutcome",
    "Book",
    "Engine",
    "Event",
    "EventLog",
    "Run",
    "RunState",
    "Trigger",
    "open_engine",
]
