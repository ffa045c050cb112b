"""The engine: runs from firing to final state, write-ahead, fail-stop (and the forecast, its
offline twin, in ``pysched.engine.forecast``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pysched.engine.runs import Attempt, AttemptOutcome, Run, RunState, Trigger

if TYPE_CHECKING:
    from pysched.engine.actions import Engine
    from pysched.engine.book import Book
    from pysched.engine.events import Event, EventLog
    from pysched.engine.opening import open_engine

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

_LAZY = {
    "Engine": "pysched.engine.actions",
    "Book": "pysched.engine.book",
    "Event": "pysched.engine.events",
    "EventLog": "pysched.engine.events",
    "open_engine": "pysched.engine.opening",
}


def __getattr__(name: str) -> object:
    """The engine itself, loaded on first use: it imports trio and the store, and the CLI,
    which reads run states from ``pysched.engine.runs``, never needs it."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
