"""Operator actions: each allowed change, and the ActionError naming the state otherwise."""

from __future__ import annotations

from datetime import date, timedelta

import pytest
import trio

from pysched.engine import RunState
from pysched.errors import ActionError, UnknownRunError
from tests.engine.harness import Harness, config_from, states

CONFIG = """
jobs:
  up:
    schedule: "0 2 * * *"
    command: x
  down:
    depends_on: [up]
    command: x
  solo:
    schedule: "0 3 * * *"
    command: x
    calendar: wk
calendars:
  wk: {}
"""


def harness(**kw) -> Harness:
    return Harness(config_from(CONFIG), durations={"up": timedelta(minutes=30)}, **kw)


async def test_trigger_creates_run_with_dependents(autojump_clock: trio.testing.MockClock) -> None:
    h = harness()
    async with h.engine() as engine:
        run = await engine.trigger("up", date(2026, 10, 16), by="ann", why="re-feed")
        assert run.run_id == "up.2026-10-16.1"
        assert run.trigger.value == "manual"
        assert engine.book.latest_for("down", date(2026, 10, 16)) is not None
        await h.advance(engine, hours=1)
        assert states(engine, run_date=date(2026, 10, 16)) == {
            "up.2026-10-16.1": "succeeded",
            "down.2026-10-16.1": "succeeded",
        }
        again = await engine.trigger("up", date(2026, 10, 16))
        assert again.run_id == "up.2026-10-16.2"


async def test_trigger_unknown_job(autojump_clock: trio.testing.MockClock) -> None:
    async with harness().engine() as engine:
        with pytest.raises(UnknownRunError, match="no job 'nope'"):
            await engine.trigger("nope")
        with pytest.raises(LookupError):
            await engine.hold("nope.2026-10-19.1")


async def test_hold_release_and_action_errors(autojump_clock: trio.testing.MockClock) -> None:
    h = harness()
    async with h.engine() as engine:
        await h.advance(engine, hours=1, minutes=59)
        run = await engine.trigger("up", date(2026, 10, 19))
        down = engine.book.get("down.2026-10-19.1")
        assert down.state is RunState.WAITING
        held = await engine.hold(down.run_id, by="bob", why="wait for the vendor")
        assert held.state is RunState.HELD
        assert held.reason == "held by bob: wait for the vendor"
        await h.advance(engine, hours=1)
        assert engine.book.get("up.2026-10-19.1").state is RunState.SUCCEEDED
        assert down.state is RunState.HELD  # the hold wins over met dependencies
        with pytest.raises(ActionError, match=r"cannot hold .*: it is held") as caught:
            await engine.hold(down.run_id)
        assert caught.value.state == "held"
        await engine.release(down.run_id, by="bob")
        await engine.settle()
        assert down.state in (RunState.RUNNING, RunState.QUEUED)
        await h.advance(engine, minutes=5)
        assert down.state is RunState.SUCCEEDED
        with pytest.raises(ActionError, match="it is succeeded"):
            await engine.release(down.run_id)
        with pytest.raises(ActionError, match="it is succeeded"):
            await engine.kill(run.run_id)


async def test_kill_fails_the_run_without_retry(autojump_clock: trio.testing.MockClock) -> None:
    h = harness()
    async with h.engine() as engine:
        await h.advance(engine, hours=2, minutes=5)
        up = engine.book.get("up.2026-10-19.1")
        assert up.state is RunState.RUNNING
        await engine.kill(up.run_id, by="ann", why="runaway")
        await engine.settle()
        assert up.state is RunState.FAILED
        assert up.reason == "killed by ann: runaway"
        assert up.attempts[0].outcome is not None and up.attempts[0].outcome.value == "killed"
        assert engine.book.get("down.2026-10-19.1").state is RunState.BLOCKED


async def test_cancel_running_and_waiting(autojump_clock: trio.testing.MockClock) -> None:
    h = harness()
    async with h.engine() as engine:
        await h.advance(engine, hours=2, minutes=5)
        await engine.cancel("down.2026-10-19.1", by="ann")
        await engine.cancel("up.2026-10-19.1", by="ann")
        await engine.settle()
        assert states(engine) == {
            "up.2026-10-19.1": "cancelled",
            "down.2026-10-19.1": "cancelled",
        }
        with pytest.raises(ActionError, match=r"cannot cancel .*: it is cancelled"):
            await engine.cancel("up.2026-10-19.1")


async def test_rerun_and_force(autojump_clock: trio.testing.MockClock) -> None:
    h = harness(outcomes={"up.2026-10-19.1": [1, 0]})
    async with h.engine() as engine:
        await h.advance(engine, hours=3)
        up = engine.book.get("up.2026-10-19.1")
        assert up.state is RunState.FAILED
        assert engine.book.get("down.2026-10-19.1").state is RunState.BLOCKED
        await engine.rerun(up.run_id, by="ann", why="vendor fixed it")
        await h.advance(engine, hours=1)
        assert up.state is RunState.SUCCEEDED
        assert [a.number for a in up.attempts] == [1, 2]
        assert engine.book.get("down.2026-10-19.1").state is RunState.SUCCEEDED
        # force: start a run now, ignoring its dependencies
        later = await engine.trigger("down", date(2026, 10, 20))
        assert later.state is RunState.WAITING
        await engine.force(later.run_id, by="ann")
        await h.advance(engine, minutes=2)
        assert later.state is RunState.SUCCEEDED
        with pytest.raises(ActionError, match=r"cannot rerun .*: it is waiting"):
            await engine.rerun((await engine.trigger("down", date(2026, 10, 21))).run_id)


async def test_hold_job_holds_new_runs(autojump_clock: trio.testing.MockClock) -> None:
    h = harness()
    async with h.engine() as engine:
        await engine.hold_job("up", by="ann", why="maintenance")
        with pytest.raises(ActionError, match="already held"):
            await engine.hold_job("up")
        await h.advance(engine, hours=3)
        up = engine.book.get("up.2026-10-19.1")
        assert up.state is RunState.HELD
        assert up.reason == "job held by ann: maintenance"
        released = await engine.release_job("up", by="ann")
        assert [r.run_id for r in released] == ["up.2026-10-19.1"]
        await h.advance(engine, hours=1)
        assert up.state is RunState.SUCCEEDED


async def test_backfill_follows_calendar(autojump_clock: trio.testing.MockClock) -> None:
    h = harness()
    async with h.engine() as engine:
        runs = await engine.backfill("solo", date(2026, 10, 9), date(2026, 10, 13), by="ann")
        assert [r.run_id for r in runs] == [
            "solo.2026-10-09.1",
            "solo.2026-10-12.1",
            "solo.2026-10-13.1",
        ]
        with pytest.raises(ActionError, match="before it starts"):
            await engine.backfill("solo", date(2026, 10, 13), date(2026, 10, 9))
        up_runs = await engine.backfill("up", date(2026, 10, 10), date(2026, 10, 11))
        assert len(up_runs) == 2  # no calendar: every day
        assert engine.book.latest_for("down", date(2026, 10, 10)) is not None


async def test_mark_success_on_running_refused(autojump_clock: trio.testing.MockClock) -> None:
    h = harness()
    async with h.engine() as engine:
        await h.advance(engine, hours=2, minutes=1)
        with pytest.raises(ActionError, match="it is running") as caught:
            await engine.mark_success("up.2026-10-19.1")
        assert caught.value.state == "running"


async def test_run_dates_near_the_end_of_time_are_refused(autojump_clock: object) -> None:
    from datetime import date

    import pytest

    from pysched.errors import ActionError
    from tests.engine.harness import Harness, config_from

    config = config_from('jobs:\n  a: {schedule: "0 3 * * *", command: "true"}\n')
    async with Harness(config).engine() as engine:
        with pytest.raises(ActionError, match="after the year 9000"):
            await engine.backfill("a", date(9999, 12, 1), date(9999, 12, 31))
        with pytest.raises(ActionError, match="after the year 9000"):
            await engine.trigger("a", date(9999, 12, 31))
        assert engine.error is None


async def test_a_cancelled_retrying_run_has_no_next_try(
    autojump_clock: trio.testing.MockClock,
) -> None:
    config = config_from(
        """
        jobs:
          flaky:
            schedule: "0 2 * * *"
            command: x
            retries: {count: 2, backoff: {initial: 10m}}
        """
    )
    h = Harness(config, outcomes={"flaky": [1, 0]})
    async with h.engine() as engine:
        await h.advance(engine, hours=2, minutes=2)
        run = engine.book.get("flaky.2026-10-19.1")
        assert run.state is RunState.RETRYING and run.next_try_at is not None
        await engine.cancel(run.run_id, by="ann")
        assert (run.state, run.next_try_at) == (RunState.CANCELLED, None)


async def test_a_rerun_cancelled_before_its_attempt_ended_when_cancelled(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """The run's end is the cancel, not the end of the previous series' last attempt."""
    from pysched.web.views import run_fields  # the API's view of a run

    config = config_from(
        """
        pools: {one: 1}
        jobs:
          up: {schedule: "0 2 * * *", command: x, pool: one}
          long: {schedule: "0 3 * * *", command: x, pool: one}
        """
    )
    h = Harness(config, outcomes={"up": [1]}, durations={"long": timedelta(hours=2)})
    async with h.engine() as engine:
        await h.advance(engine, hours=3, minutes=5)  # up failed at 02:01; long holds the pool
        up = engine.book.get("up.2026-10-19.1")
        assert up.state is RunState.FAILED
        failed_at = up.attempts[-1].ended_at
        await engine.rerun(up.run_id, by="ann")
        await h.advance(engine, minutes=30)
        assert up.state is RunState.QUEUED  # waiting for the pool
        await engine.cancel(up.run_id, by="ann")
        assert failed_at is not None
        ended = run_fields(up.record())["ended_at"]
        assert ended == h.clock.now().isoformat() != failed_at.isoformat()


async def test_a_refusal_suggests_only_an_action_the_run_allows(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Refusals name a way out; it used to be one that was refused too (``kill`` on a failed run
    said "cancel stops a run in any state", and cancelling it was refused)."""
    h = harness(outcomes={"up.2026-10-19.1": [1]})
    async with h.engine() as engine:
        await h.advance(engine, hours=2, minutes=5)  # up running, down waiting for it
        with pytest.raises(ActionError, match=r"it is waiting .*\(cancel stops this one\)"):
            await engine.kill("down.2026-10-19.1")
        with pytest.raises(ActionError, match=r"it is waiting .*\(cancel it first\)$"):
            await engine.rerun("down.2026-10-19.1")
        with pytest.raises(ActionError, match=r"it is running .*\(kill or cancel stops it\)"):
            await engine.hold("up.2026-10-19.1")
        with pytest.raises(ActionError, match=r"it is running .*\(kill or cancel it first\)"):
            await engine.rerun("up.2026-10-19.1")
        await h.advance(engine, hours=1)  # up failed (no retries); down blocked
        assert engine.book.get("up.2026-10-19.1").state is RunState.FAILED
        with pytest.raises(ActionError) as refused:
            await engine.kill("up.2026-10-19.1")
        assert "has finished" in str(refused.value) and "cancel" not in str(refused.value)
        with pytest.raises(ActionError, match=r"it is failed .*\(rerun runs it again\)"):
            await engine.hold("up.2026-10-19.1")
        await engine.hold("down.2026-10-19.1")  # blocked by the failure: it may be held
        with pytest.raises(ActionError, match=r"cannot hold down\.2026-10-19\.1: it is held$"):
            await engine.hold("down.2026-10-19.1")
        await engine.rerun("up.2026-10-19.1")  # the way out it named is allowed
