"""The fake launcher's virtual processes end at their own instants, woken by one timer task:
in order, an earlier end arriving later wakes first, a kill leaves no stop behind, and a
process outlives the Trio run that started it."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import trio
import trio.testing

from pysched.launch.base import AttemptHandle, AttemptSpec
from pysched.testing import FakeLauncher
from pysched.timing import FakeClock

START = datetime(2026, 10, 19, tzinfo=UTC)


def _spec(job: str) -> AttemptSpec:
    return AttemptSpec(
        run_id=f"{job}.2026-10-19.1",
        job=job,
        run_date=date(2026, 10, 19),
        attempt=1,
        argv=("true",),
        scheduled_for=START,
    )


def _launcher(clock: FakeClock, **seconds: int) -> FakeLauncher:
    durations = {job: timedelta(seconds=s) for job, s in seconds.items()}
    return FakeLauncher(clock, durations=durations)


async def _ends(clock: FakeClock, launcher: FakeLauncher, jobs: list[str]) -> dict[str, float]:
    """Start ``jobs`` in that order and wait on each; the virtual second each one ended at."""
    ended: dict[str, float] = {}

    async def watch(job: str) -> None:
        handle = await launcher.start(_spec(job))
        status = await handle.wait()
        assert status.exit_code == 0 and status.ended_at == clock.now()
        ended[job] = (clock.now() - START).total_seconds()

    async with trio.open_nursery() as nursery:
        for job in jobs:
            nursery.start_soon(watch, job)
            await trio.testing.wait_all_tasks_blocked()
    return ended


async def test_each_process_ends_at_its_own_instant(autojump_clock: trio.abc.Clock) -> None:
    clock = FakeClock(START)
    launcher = _launcher(clock, a=30, b=10, c=20, d=10)
    ended = await _ends(clock, launcher, ["a", "b", "c", "d"])
    assert ended == {"a": 30.0, "b": 10.0, "c": 20.0, "d": 10.0}


async def test_an_earlier_end_started_later_wakes_first(autojump_clock: trio.abc.Clock) -> None:
    clock = FakeClock(START)
    launcher = _launcher(clock, long=600, short=5)
    ended = await _ends(clock, launcher, ["long", "short"])
    assert ended == {"long": 600.0, "short": 5.0}


def test_a_killed_process_leaves_no_stop_behind() -> None:
    mock = trio.testing.MockClock()  # moves only when jumped

    async def main() -> None:
        clock = FakeClock(START)
        launcher = _launcher(clock, doomed=10, other=50)
        async with trio.open_nursery() as nursery:
            doomed = await launcher.start(_spec("doomed"))
            other = await launcher.start(_spec("other"))
            nursery.start_soon(doomed.wait)
            nursery.start_soon(other.wait)
            await trio.testing.wait_all_tasks_blocked()
            assert trio.lowlevel.current_statistics().seconds_to_next_deadline == 10
            await doomed.kill(timedelta(seconds=5))
            await trio.testing.wait_all_tasks_blocked()
            # the timer sleeps again, until the one process still running ends
            assert trio.lowlevel.current_statistics().seconds_to_next_deadline == 50
            mock.jump(50)
        assert (await doomed.wait()).signal is not None
        assert (await other.wait()).exit_code == 0

    trio.run(main, clock=mock)


def test_a_process_outlives_the_trio_run_that_started_it() -> None:
    clock = FakeClock(START)
    launcher = _launcher(clock, job=60)
    handles: list[AttemptHandle] = []

    async def first() -> None:
        handles.append(await launcher.start(_spec("job")))
        with trio.move_on_after(10):
            await handles[0].wait()  # the scheduler stops: the process runs on

    async def second() -> None:
        found = await launcher.recover(_spec("job"), handles[0].info)
        assert found is handles[0]
        status = await handles[0].wait()
        assert status.exit_code == 0

    trio.run(first, clock=trio.testing.MockClock(autojump_threshold=0))
    trio.run(second, clock=trio.testing.MockClock(autojump_threshold=0))


def test_a_waiter_cancelled_leaves_no_stop_behind() -> None:
    # an engine stops (its waiters are cancelled): the process runs on, but nobody waits for
    # its end, so virtual time must not jump there
    mock = trio.testing.MockClock()

    async def main() -> None:
        clock = FakeClock(START)
        launcher = _launcher(clock, job=50)
        handle = await launcher.start(_spec("job"))
        async with trio.open_nursery() as nursery:
            nursery.start_soon(handle.wait)
            await trio.testing.wait_all_tasks_blocked()
            assert trio.lowlevel.current_statistics().seconds_to_next_deadline == 50
            nursery.cancel_scope.cancel()
        await trio.testing.wait_all_tasks_blocked()
        assert trio.lowlevel.current_statistics().seconds_to_next_deadline == float("inf")
        mock.jump(50)
        assert (await handle.wait()).exit_code == 0  # it ended all the same

    trio.run(main, clock=mock)
