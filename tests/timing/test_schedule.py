"""Schedule: crons x zone x calendar x DST rule x run-date rule."""

from __future__ import annotations

from datetime import UTC, date, datetime
from itertools import islice
from zoneinfo import ZoneInfo

from pysched.timing.calendar import Calendar
from pysched.timing.cron import Cron, DstPolicy, DstRepeat
from pysched.timing.run_dates import RunDateRule
from pysched.timing.schedule import Schedule

NEW_YORK = ZoneInfo("America/New_York")
LONDON = ZoneInfo("Europe/London")


def firings(schedule: Schedule, after: datetime, count: int, **kw) -> list[str]:
    out = []
    for firing in schedule.iter_firings(after, **kw):
        out.append(str(firing.at))
        if len(out) == count:
            break
    return out


def test_several_crons_keep_both_fall_back_occurrences() -> None:
    schedule = Schedule(
        crons=(Cron.parse("0 * * * *"), Cron.parse("15 * * * *"), Cron.parse("45 1 * * *")),
        tz=NEW_YORK,
    )
    got = firings(schedule, datetime(2026, 11, 1, 4, 30, tzinfo=UTC), 6)
    assert got == [
        "2026-11-01 01:00:00-04:00",
        "2026-11-01 01:15:00-04:00",
        "2026-11-01 01:45:00-04:00",
        "2026-11-01 01:00:00-05:00",
        "2026-11-01 01:15:00-05:00",
        "2026-11-01 02:00:00-05:00",
    ]


def test_same_instant_from_two_crons_fires_once() -> None:
    schedule = Schedule(crons=(Cron.parse("0 2 * * *"), Cron.parse("0 2 * * 1-5")), tz=LONDON)
    got = firings(schedule, datetime(2026, 10, 18, tzinfo=UTC), 2)
    assert got == ["2026-10-18 02:00:00+01:00", "2026-10-19 02:00:00+01:00"]


def test_calendar_closes_days_and_run_date_rule_applies() -> None:
    uk = Calendar.create("uk", country="GB", subdivision="ENG")
    schedule = Schedule(
        crons=(Cron.parse("0 2 * * *"),),
        tz=LONDON,
        calendar=uk,
        run_date_rule=RunDateRule.PREVIOUS_BUSINESS_DAY,
    )
    after = datetime(2026, 12, 24, tzinfo=UTC)
    got = [(f.at.date(), f.run_date) for f in islice(schedule.iter_firings(after), 2)]
    assert got == [
        (date(2026, 12, 24), date(2026, 12, 23)),
        (date(2026, 12, 29), date(2026, 12, 24)),
    ]
    closed = list(islice(schedule.iter_firings(after, include_closed=True), 5))
    reasons = [f.closed for f in closed]
    assert reasons[0] is None
    assert reasons[1] == "2026-12-25 is a holiday (Christmas Day) in calendar 'uk'"
    assert reasons[2] == "2026-12-26 is a holiday (Boxing Day) in calendar 'uk'"
    assert reasons[3] == "2026-12-27 is not a business day in calendar 'uk'"


def test_schedule_that_only_matches_closed_days_stops() -> None:
    weekdays_only = Calendar.create("wk")
    schedule = Schedule(crons=(Cron.parse("0 2 * * SAT"),), tz=LONDON, calendar=weekdays_only)
    assert schedule.next_firing(datetime(2026, 1, 1, tzinfo=UTC)) is None


def test_until_bounds_the_iteration() -> None:
    schedule = Schedule(crons=(Cron.parse("@hourly"),), tz=ZoneInfo("UTC"))
    start = datetime(2026, 1, 1, tzinfo=UTC)
    got = list(schedule.iter_firings(start, until=datetime(2026, 1, 1, 5, tzinfo=UTC)))
    assert len(got) == 5


def test_dst_policy_passes_through() -> None:
    schedule = Schedule(
        crons=(Cron.parse("30 1 * * *"),), tz=NEW_YORK, dst=DstPolicy(repeat=DstRepeat.BOTH)
    )
    got = firings(schedule, datetime(2026, 11, 1, 4, tzinfo=UTC), 2)
    assert got == ["2026-11-01 01:30:00-04:00", "2026-11-01 01:30:00-05:00"]
