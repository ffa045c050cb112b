"""examples/etl.yaml over ten simulated weeks on the fake clock.

England has no bank holiday within a fortnight of the October clock change, so one stretch
from Monday 2026-08-24 to Monday 2026-11-02 covers both: the Summer bank holiday (Monday
2026-08-31) and the end of British Summer Time (Sunday 2026-10-25).
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import trio

from pysched.config import load_config
from pysched.engine import Engine, RunState, open_engine
from pysched.store import MemoryStore
from pysched.testing import FakeLauncher
from pysched.timing import FakeClock

EXAMPLE = Path(__file__).parents[2] / "examples" / "etl.yaml"
LONDON = ZoneInfo("Europe/London")
FAILING_DAY = date(2026, 9, 15)


def overlapping(engine: Engine, jobs: set[str]) -> list[tuple[str, str]]:
    spans = [
        (a.started_at, a.ended_at, run.run_id)
        for run in engine.book
        if run.job in jobs
        for a in run.attempts
    ]
    clashes = []
    for start, end, run_id in spans:
        for other_start, other_end, other_id in spans:
            assert end is not None and other_end is not None
            if run_id < other_id and start < other_end and other_start < end:
                clashes.append((run_id, other_id))
    return clashes


async def test_ten_weeks_of_the_example(autojump_clock: trio.testing.MockClock) -> None:
    config = load_config(EXAMPLE)
    uk = config.calendars["uk"]
    clock = FakeClock(datetime(2026, 8, 24, tzinfo=LONDON).astimezone(UTC))
    launcher = FakeLauncher(
        clock,
        outcomes={"fetch-rates": [1, 0], f"load.{FAILING_DAY}.1": [1]},
    )
    async with open_engine(config, MemoryStore(), clock=clock, launcher=launcher) as engine:
        for _ in range(70):
            await clock.advance(timedelta(days=1))
            await engine.settle()

        extracts = engine.book.runs(job="extract")
        fired_on = [run.scheduled_for.astimezone(LONDON) for run in extracts]
        assert all(at.strftime("%H:%M") == "02:00" for at in fired_on)  # BST and GMT alike
        days = [at.date() for at in fired_on]
        assert days == uk.business_days(date(2026, 8, 24), date(2026, 11, 1))
        assert date(2026, 8, 31) not in days  # Summer bank holiday
        assert [run.run_date for run in extracts] == [uk.previous_business_day(d) for d in days]
        by_day = {d: run for d, run in zip(days, extracts, strict=True)}
        assert by_day[date(2026, 9, 1)].run_date == date(2026, 8, 28)  # Tue after the holiday
        assert by_day[date(2026, 10, 19)].run_date == date(2026, 10, 16)  # Monday for Friday
        # the clock change: Friday 02:00 BST is 01:00 UTC, Monday 02:00 GMT is 02:00 UTC
        assert by_day[date(2026, 10, 23)].scheduled_for.astimezone(UTC).hour == 1
        assert by_day[date(2026, 10, 26)].scheduled_for.astimezone(UTC).hour == 2

        for run in engine.book.runs(job="fetch-rates"):
            assert run.state is RunState.SUCCEEDED
            assert [a.exit_code for a in run.attempts] == [1, 0]  # flaky, retried

        assert overlapping(engine, {"transform", "load"}) == []  # warehouse pool: one slot

        for run in engine.book.runs(job="load"):
            expected = RunState.FAILED if run.run_date == FAILING_DAY else RunState.SUCCEEDED
            assert run.state is expected, run
        cleanups = {run.run_date: run.state for run in engine.book.runs(job="cleanup")}
        assert cleanups.pop(FAILING_DAY) is RunState.SUCCEEDED
        assert set(cleanups.values()) == {RunState.SKIPPED}
        for run in engine.book:
            if run.job in ("extract", "transform"):
                assert run.state is RunState.SUCCEEDED
        assert len(engine.book.runs(job="transform")) == len(extracts)
