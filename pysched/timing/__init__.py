"""Knowing when things happen: cron expressions with a written DST rule, business calendars,
run-date rules, durations and a job's whole schedule.

Nothing here imports from the engine, the web layer or the CLI.
"""

from __future__ import annotations

from pysched.errors import CalendarError, CronError, DurationError
from pysched.timing.calendar import DEFAULT_CALENDAR, Calendar, parse_weekdays
from pysched.timing.clock import Clock, FakeClock, RealClock
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
