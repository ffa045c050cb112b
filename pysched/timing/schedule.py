"""A job's schedule: when it fires and which business day each firing is for.

A ``Schedule`` puts together what a job's YAML says about time: one or more cron expressions,
the job's zone, its business calendar, its DST policy and its run-date rule. It answers the one
question the engine's firing heap and the offline forecast both ask: *what is the next firing
after this instant, and what run date does it carry?*

Firings that the cron allows but the calendar closes (a Saturday, Christmas Day) are not
silently lost: ``iter_firings(..., include_closed=True)`` yields them with ``closed`` set to the
reason, so the engine can write each skip down. Every search is bounded: a schedule whose crons
only ever match closed days stops yielding after ``HORIZON`` instead of spinning.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

from pysched.errors import CalendarError, CronError
from pysched.timing.calendar import Calendar
from pysched.timing.cron import Cron, DstPolicy
from pysched.timing.run_dates import RunDateRule, run_date_for

HORIZON = timedelta(days=3 * 366)
"""How far past ``after`` a search for an open firing may look before it gives up."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Firing:
    """One instant a schedule fires at.

    ``at`` is aware, in the job's zone (``at.date()`` is the local date the calendar judged);
    ``run_date`` is the business day the run is for; ``closed`` is None for a real firing, or
    why the calendar closed that day.
    """

    at: datetime
    run_date: date
    closed: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Schedule:
    crons: tuple[Cron, ...]
    tz: ZoneInfo
    calendar: Calendar | None = None
    dst: DstPolicy = DstPolicy()
    run_date_rule: RunDateRule = RunDateRule.SAME_DAY

    def next_firing(self, after: datetime) -> Firing | None:
        """The first open firing strictly after ``after``, or None within ``HORIZON``."""
        return next(self.iter_firings(after), None)

    def iter_firings(
        self, after: datetime, *, until: datetime | None = None, include_closed: bool = False
    ) -> Iterator[Firing]:
        """Firings strictly after ``after`` (and at or before ``until``), in time order.

        Several crons firing at the same instant make one firing. Without ``until`` the
        iteration stops once no open firing is found within ``HORIZON`` of the last one.
        """
        last_open = after.astimezone(UTC)
        limit = until.astimezone(UTC) if until is not None else None
        day: date | None = None
        closed: str | None = None
        run_date = after.date()
        for utc, at in self._instants(after):
            if limit is not None and utc > limit:
                return
            if limit is None and utc - last_open > HORIZON:
                return
            local_day = at.date()
            if local_day != day:  # firings come in time order: judge each day once
                day = local_day
                closed = self._closed_reason(local_day)
                run_date = local_day
                if closed is None:
                    try:
                        run_date = self.run_date_of(local_day)
                    except CalendarError as exc:  # a calendar of listed days, past its last
                        closed = f"no run date for {local_day.isoformat()}: {exc}"
            if closed is None:
                last_open = utc
                yield Firing(at=at, run_date=run_date)
            elif include_closed:
                yield Firing(at=at, run_date=local_day, closed=closed)

    def _instants(self, after: datetime) -> Iterator[tuple[datetime, datetime]]:
        """(UTC, local) firing instants of all crons merged, each instant once.

        Merging compares in UTC: Python compares two datetimes of the same zone by wall time
        and ignores ``fold``, which would merge 01:00 EDT with 01:00 EST on fall-back night.
        """
        streams = [cron.iter_after(after, self.tz, dst=self.dst) for cron in self.crons]
        if len(streams) == 1:
            stream = streams[0]
            while (head := _utc_head(stream)) is not None:
                yield head
            return
        heads = [_utc_head(stream) for stream in streams]
        previous: datetime | None = None
        while True:
            candidates = [head for head in heads if head is not None]
            if not candidates:
                return
            utc, at = min(candidates, key=lambda head: head[0])
            for index, head in enumerate(heads):
                if head is not None and head[0] == utc:
                    heads[index] = _utc_head(streams[index])
            if utc != previous:
                previous = utc
                yield utc, at

    def run_date_of(self, local_day: date) -> date:
        """The run date a firing on ``local_day`` (in the job's zone) is for."""
        return run_date_for(local_day, self.run_date_rule, self.calendar)

    def _closed_reason(self, local_day: date) -> str | None:
        calendar = self.calendar
        if calendar is None or calendar.is_business_day(local_day):
            return None
        name = calendar.holiday_name(local_day)
        why = f"a holiday ({name})" if name else "not a business day"
        return f"{local_day.isoformat()} is {why} in calendar {calendar.name!r}"


def _utc_head(stream: Iterator[datetime]) -> tuple[datetime, datetime] | None:
    """The stream's next firing as (UTC, local); None once it ends (even at year 9999)."""
    try:
        at = next(stream, None)
    except CronError:
        return None
    return None if at is None else (at.astimezone(UTC), at)
