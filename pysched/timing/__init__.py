"""Knowing when things happen: cron expressions with a written DST rule, business calendars,
run-date rules, durations and a job's whole schedule.

Nothing here imports from the engine, the web layer or the CLI.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pysched.errors import CalendarError, CronError, DurationError
from pysched.timing.calendar import DEFAULT_CALENDAR, Calendar, parse_weekdays
from pysched.timing.cron import Cron, DstGap, DstPolicy, DstRepeat
from pysched.timing.durations import format_duration, parse_duration
from pysched.timing.run_dates import RunDateRule, run_date_for
from pysched.timing.schedule import Firing, Schedule

__all__ = [
    "DEFAULT_CALENDAR",
    "Calendar",
    "CalendarError",
    "Clock",
    "Cron",
    "CronError",
    "DstGap",
    "DstPolicy",
    "DstRepeat",
    "DurationError",
    "FakeClock",
    "Firing",
    "RealClock",
    "RunDateRule",
    "Schedule",
    "format_duration",
    "parse_duration",
    "parse_weekdays",
    "run_date_for",
]

if TYPE_CHECKING:
    from pysched.timing.clock import Clock, FakeClock, RealClock

_CLOCKS = frozenset({"Clock", "FakeClock", "RealClock"})


def __getattr__(name: str) -> object:
    """The clocks, loaded on first use: they import trio, and the CLI, which reads dates and
    calendars with this package, never needs them (it starts a good part faster without)."""
    if name in _CLOCKS:
        from pysched.timing import clock

        return getattr(clock, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
