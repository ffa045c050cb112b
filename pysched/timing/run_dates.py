"""Run dates: the business day a run is *for*, which need not be the day it fires.

A bank's end-of-day batch that starts at 02:00 on Monday is doing Friday's work: its inputs are
Friday's trades, its reports are headed with Friday's date, and its run id says Friday. That
date is the run's *run date* (Control-M calls it the order date, ODATE). A job's
:class:`RunDateRule` turns the local date on which a run fires — the date in the job's own time
zone — into its run date, using the job's business :class:`~pysched.timing.calendar.Calendar`.
The run date then names the run (``ice.2026-10-16.1``) and is what dependencies between jobs
match on, so Monday's 02:00 batch and Friday's 18:00 feed can meet on the same business day.
"""

from __future__ import annotations

import enum
from datetime import date, datetime, timedelta

from pysched.errors import CalendarError
from pysched.timing.calendar import DEFAULT_CALENDAR, Calendar

__all__ = ["RunDateRule", "parse_iso_date", "run_date_for"]


class RunDateRule(enum.Enum):
    """How a run's firing date (local to the job's zone) becomes the business day it is for.

    The values are the spellings a config uses (``run_date: previous_business_day``).
    """

    SAME_DAY = "same_day"
    """The run is for the day it fires on, business day or not (the default for most jobs)."""

    PREVIOUS_DAY = "previous_day"
    """The run is for the calendar day before it fires, whatever the calendar says: a nightly
    job that closes yesterday's books seven days a week."""

    PREVIOUS_BUSINESS_DAY = "previous_business_day"
    """The run is for the last business day strictly before the day it fires: a 02:00 batch on
    Monday is for Friday, or Thursday if that Friday was a holiday; on Tuesday it is for
    Monday."""

    NEXT_BUSINESS_DAY = "next_business_day"
    """The run is for the first business day strictly after the day it fires: an evening job
    that prepares tomorrow's business, so Friday evening prepares Monday (Tuesday if Monday is a
    holiday)."""


def run_date_for(local_date: date, rule: RunDateRule, calendar: Calendar | None = None) -> date:
    """The run date of a run that fires on ``local_date`` (the date in the job's time zone).

    ``calendar`` decides what a business day is for the two business-day rules and is ignored
    by the others; ``None`` means :data:`~pysched.timing.calendar.DEFAULT_CALENDAR` (Monday to
    Friday, no holidays).

    Raises:
        CalendarError: the calendar has no business day within its search limit, or the answer
            would fall outside the dates Python can represent.
        TypeError: ``local_date`` is a ``datetime``; take ``.date()`` in the job's zone first,
            because which day "now" is depends on the zone.
    """
    if isinstance(local_date, datetime):
        raise TypeError("run dates come from a local date, not a datetime; take .date() first")
    cal = DEFAULT_CALENDAR if calendar is None else calendar
    match rule:
        case RunDateRule.SAME_DAY:
            return local_date
        case RunDateRule.PREVIOUS_DAY:
            if local_date == date.min:
                raise CalendarError(f"there is no day before {local_date}")
            return local_date - timedelta(days=1)
        case RunDateRule.PREVIOUS_BUSINESS_DAY:
            return cal.previous_business_day(local_date)
        case RunDateRule.NEXT_BUSINESS_DAY:
            return cal.next_business_day(local_date)


FIRST_YEAR, LAST_YEAR = 1900, 9000
"""Dates outside these years are refused where people give them (the API, the CLI): nothing
real lives there, and date arithmetic near year 1 or 9999 would overflow."""


def year_problem(value: date) -> str | None:
    """Why ``value`` is refused as a date someone gave (outside FIRST_YEAR..LAST_YEAR), or
    None."""
    if FIRST_YEAR <= value.year <= LAST_YEAR:
        return None
    return f"{value.isoformat()} is outside the years {FIRST_YEAR}..{LAST_YEAR}"


def parse_iso_date(text: str) -> date:
    """The date ``text`` writes as ``YYYY-MM-DD`` (ASCII digits, exactly 10 characters).

    Raises ``ValueError`` for anything else. ``date.fromisoformat`` alone is not enough: since
    Python 3.11 it also reads ``20261016`` and ``2026-W42-5``, which the documentation refuses
    and which a typo can produce.
    """
    digits = text[:4] + text[5:7] + text[8:]
    if not (
        len(text) == 10 and text[4] == text[7] == "-" and digits.isascii() and digits.isdigit()
    ):
        raise ValueError(f"{text!r} is not written YYYY-MM-DD")
    return date.fromisoformat(text)
