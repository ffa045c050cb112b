"""A calendar made only of listed days (a month-end calendar) has no business day past its
last one: a firing whose run date cannot be found is skipped, and a dependency whose date
cannot be found blocks its run. Neither may stop the engine (it once ended the firing task,
and with it every job)."""

from __future__ import annotations

from datetime import UTC, date, datetime

import trio

from pysched.engine.forecast import forecast
from pysched.timing.schedule import Schedule
from tests.engine.harness import Harness, config_from, states

CONFIG = """
calendars:
  month-end:
    weekdays: []
    workdays: [2026-06-30, 2026-07-31]
jobs:
  close-books:
    command: "true"
    schedule: "0 18 * * *"
    calendar: month-end
    run_date: next_business_day
  after:
    command: "true"
    schedule: "0 19 * * *"
    calendar: month-end
    depends_on: [{job: close-books, date: previous}]
  heartbeat:
    command: "true"
    schedule: "0 12 * * *"
"""


async def test_the_engine_goes_on_past_the_calendars_last_day(
    autojump_clock: trio.testing.MockClock,
) -> None:
    h = Harness(config_from(CONFIG), start=datetime(2026, 6, 29, 13, tzinfo=UTC))
    async with h.engine() as engine:
        await h.advance(engine, days=40)
        assert engine.error is None
        assert states(engine, job="close-books") == {"close-books.2026-07-31.1": "succeeded"}
        skipped = [
            event.data["reason"]
            for event in engine.events.recent()
            if event.kind == "firing_skipped" and event.data["job"] == "close-books"
        ]
        assert (
            "no run date for 2026-07-31: calendar 'month-end': no business day within 3660 "
            "days after 2026-07-31; check its weekdays, holidays and workdays"
        ) in skipped
        first = engine.book.get("after.2026-06-30.1")
        assert first.state.value == "blocked"
        assert first.reason.startswith(
            "no run date for close-books: calendar 'month-end': no business day within 3660 "
            "days before 2026-06-30"
        )
        # every other job kept firing
        assert len(engine.book.runs(job="heartbeat")) == 40


def test_the_schedule_and_the_forecast_skip_such_a_firing() -> None:
    config = config_from(CONFIG)
    job = config.jobs["close-books"]
    assert isinstance(job.schedule, Schedule)
    after = datetime(2026, 7, 31, tzinfo=UTC)
    firing = next(job.schedule.iter_firings(after, include_closed=True))
    assert (firing.at, firing.closed is not None) == (after.replace(hour=18), True)
    assert next(job.schedule.iter_firings(after), None) is None  # no open firing, no hang
    runs = forecast(config, date(2026, 7, 31), date(2026, 7, 31))
    assert [(run.job, run.run_date) for run in runs] == [
        ("heartbeat", date(2026, 7, 31)),
        ("after", date(2026, 7, 31)),
    ]
