"""The engine's inbox: each item is one thing that happened and must be folded into state.

Tasks around the engine (the firing task, attempt watchers, retry timers, operator calls) never
touch state themselves; they post one of these and the engine's loop handles it, so every
change happens in one place, in order, and is journaled before anything acts on it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import trio

from pysched.launch.base import ExitStatus
from pysched.timing.schedule import Firing


@dataclass(frozen=True, slots=True, kw_only=True)
class Fire:
    job: str
    firing: Firing


@dataclass(frozen=True, slots=True, kw_only=True)
class AttemptStarted:
    run_id: str
    number: int
    info: Mapping[str, Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class AttemptEnded:
    run_id: str
    number: int
    status: ExitStatus | None
    """None: the attempt vanished (lost), or never started when ``start_error`` is set."""
    start_error: str | None = None
    never_started: bool = False
    """The launcher proved the attempt never began (the scheduler stopped in between)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RetryDue:
    run_id: str
    attempts: int
    """How many attempts the run had when the timer was set (a stale timer is ignored)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Dispatch:
    """Start what the free slots allow (posted when a burst did not fit in one pass)."""


@dataclass(slots=True, kw_only=True)
class Call:
    """An operator action or a config change: ``handler`` runs inside the loop and returns the
    result; the caller waits for ``done`` (set after the change is durable). With ``in_steps``
    the handler returns a generator that yields after each run it changes, and the loop takes
    a checkpoint now and then (``EngineCore.call_in_steps``)."""

    handler: Callable[[], Any]
    in_steps: bool = False
    done: trio.Event = field(default_factory=trio.Event)
    result: Any = None
    error: BaseException | None = None


Work = Fire | AttemptStarted | AttemptEnded | RetryDue | Dispatch | Call
