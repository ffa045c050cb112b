"""Restarts: catch-up of missed firings by policy, adoption of attempts, apply_config."""

from __future__ import annotations

import logging
from datetime import date, timedelta

import pytest
import trio

from pysched.engine import RunState
from pysched.errors import ActionError
from pysched.testing import FakeLauncher
from tests.engine.harness import Harness, config_from, states


def hourly(policy: str, extra: str = "") -> str:
    return f"""
    scheduler: {{max_catch_up: 3}}
    jobs:
      tick:
        schedule: "0 * * * *"
        command: x
        catch_up: {policy}
        {extra}
    """


@pytest.mark.parametrize(
    ("policy", "runs", "skipped"),
    [
        ("all", ["tick.2026-10-19.2", "tick.2026-10-19.3", "tick.2026-10-19.4"], 2),
        ("latest", ["tick.2026-10-19.2"], 4),
        ("none", [], 5),
    ],
)
async def test_catch_up_policies(
    policy: str, runs: list[str], skipped: int, autojump_clock: trio.testing.MockClock
) -> None:
    h = Harness(config_from(hourly(policy)))
    async with h.engine() as engine:
        await h.advance(engine, hours=1, minutes=30)  # fires at 01:00
    await h.clock.advance(timedelta(hours=5))  # down from 01:30 to 06:30: 02..06 missed
    second = h.store.reopen()
    async with h.engine(store=second) as engine:
        caught = [r.run_id for r in engine.book if r.trigger.value == "catch_up"]
        assert caught == runs
        if policy == "latest":
            assert engine.book.get("tick.2026-10-19.2").scheduled_for.strftime("%H") == "06"
        skip_events = [e for e in engine.events.since(0) or [] if e.kind == "firing_skipped"]
        assert len(skip_events) == skipped
        await h.advance(engine, minutes=31)  # 07:00 fires as usual
        assert engine.book.runs(job="tick")[-1].trigger.value == "schedule"

    # the skips are in the journal with their reasons
    records = [r for r in second.reopen().records() if r.type == "firing" and r.data["skipped"]]
    assert len(records) == skipped
    assert all(r.data["skipped"].startswith("catch-up") for r in records)


async def test_running_attempt_adopted_after_restart(
    autojump_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture
) -> None:
    h = Harness(config_from(hourly("latest")), durations={"tick": timedelta(minutes=40)})
    async with h.engine() as engine:
        await h.advance(engine, hours=1, minutes=10)
        assert states(engine) == {"tick.2026-10-19.1": "running"}
    caplog.set_level(logging.INFO, logger="pysched")
    async with h.engine(store=h.store.reopen()) as engine:
        await engine.settle()
        # the operator reads it in the log: no state changes, so no event says it
        assert "tick.2026-10-19.1 attempt 1 is still running: adopted" in caplog.text
        run = engine.book.get("tick.2026-10-19.1")
        assert run.state is RunState.RUNNING  # adopted: still running at 01:10
        await h.advance(engine, minutes=31)
        assert run.state is RunState.SUCCEEDED
        assert run.attempts[0].ended_at is not None
        assert run.attempts[0].ended_at.strftime("%H:%M") == "01:40"
        assert len(h.launcher.started) == 1  # never started twice


async def test_vanished_attempt_is_lost_and_retried(
    autojump_clock: trio.testing.MockClock,
) -> None:
    h = Harness(
        config_from(hourly("latest", "retries: 1")), durations={"tick": timedelta(minutes=40)}
    )
    async with h.engine() as engine:
        await h.advance(engine, hours=1, minutes=10)
    h.launcher._processes.clear()  # the machine rebooted: no trace of the attempt
    async with h.engine(store=h.store.reopen()) as engine:
        run = engine.book.get("tick.2026-10-19.1")
        assert run.attempts[0].outcome is not None
        assert run.attempts[0].outcome.value == "lost"
        assert run.state in (RunState.RETRYING, RunState.RUNNING)
        await h.advance(engine, minutes=45)
        assert run.state is RunState.SUCCEEDED
        assert [a.number for a in run.attempts] == [1, 2]


async def test_apply_config_adds_changes_and_removes_jobs(
    autojump_clock: trio.testing.MockClock,
) -> None:
    first = config_from(
        """
        jobs:
          keep: {schedule: "0 1 * * *", command: x}
          gone: {schedule: "0 5 * * *", command: x}
          move: {schedule: "0 6 * * *", command: x}
        """
    )
    second = config_from(
        """
        jobs:
          keep: {schedule: "0 1 * * *", command: x}
          move: {schedule: "0 4 * * *", command: x}
          new: {schedule: "0 3 * * *", command: y}
        """
    )
    h = Harness(first)
    async with h.engine() as engine:
        await h.advance(engine, hours=2)
        await engine.apply_config(second, by="ann")
        await h.advance(engine, hours=8)
        assert [r.run_id for r in engine.book] == [
            "keep.2026-10-19.1",
            "new.2026-10-19.1",
            "move.2026-10-19.1",
        ]
        assert engine.book.get("move.2026-10-19.1").scheduled_for.strftime("%H") == "04"
    versions = [r.data["sha256"] for r in h.store.reopen().records() if r.type == "config"]
    assert versions == [first.sha256, second.sha256]


async def test_a_restart_after_a_reschedule_catches_up_no_firing_that_never_was(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """A reload that moves a job's minute (or removes the job and adds it back) must move
    its last-firing mark too: else the next start looks at the time since the old schedule's
    last firing with the new schedule, and "catches up" a firing nobody missed."""
    hourly = 'jobs:\n  ph: {schedule: "25 * * * *", command: x, catch_up: all}\n'
    moved = 'jobs:\n  ph: {schedule: "26 * * * *", command: x, catch_up: all}\n'
    none = 'jobs:\n  other: {schedule: "0 0 1 1 *", command: x}\n'
    h = Harness(config_from(hourly))
    async with h.engine() as engine:
        await h.advance(engine, minutes=25, seconds=30)  # ph fired at 00:25
        await h.advance(engine, minutes=1)  # 00:26:30
        await engine.apply_config(config_from(moved), by="ann")  # 00:26 already gone by
        await h.advance(engine, minutes=1)
        assert [r.run_id for r in engine.book] == ["ph.2026-10-19.1"]
        await engine.apply_config(config_from(none), by="ann")  # ph removed at 00:27:30
        await h.advance(engine, hours=1, minutes=1)  # ph would have fired at 01:26
        await engine.apply_config(config_from(moved), by="ann")  # and back, at 01:28:30
    await h.clock.advance(timedelta(minutes=10))  # down until 01:38:30
    async with h.engine(store=h.store.reopen(), config=config_from(moved)) as engine:
        assert [r.run_id for r in engine.book] == ["ph.2026-10-19.1"]  # nothing caught up
        await h.advance(engine, hours=1)
        assert [(r.run_id, r.trigger.value) for r in engine.book] == [
            ("ph.2026-10-19.1", "schedule"),
            ("ph.2026-10-19.2", "schedule"),  # 02:26, as the schedule in force says
        ]


async def test_a_reload_that_changes_dependencies_judges_waiting_runs_again(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """``down`` waits for ``up``; a reload removes ``up`` and drops ``down``'s dependency. The
    run used to wait for ever (and start only after a restart)."""
    first = config_from(
        """
        jobs:
          up: {schedule: "0 3 1 1 *", command: x}
          down: {schedule: "0 3 1 1 *", depends_on: [up], command: x}
        """
    )
    second = config_from('jobs:\n  down: {schedule: "0 3 1 1 *", command: x}\n')
    h = Harness(first)
    async with h.engine() as engine:
        run = await engine.trigger("down")
        await engine.settle()
        assert engine.book.get(run.run_id).state is RunState.WAITING
        await engine.apply_config(second, by="ann")
        await engine.settle()
        assert engine.book.get(run.run_id).state is RunState.RUNNING


async def test_restart_without_a_job_cancels_its_waiting_runs_and_watches_running_ones(
    autojump_clock: trio.testing.MockClock,
) -> None:
    first = config_from(
        """
        pools: {one: 1}
        jobs:
          long: {schedule: "0 1 * * *", command: x, pool: one}
          next: {schedule: "0 1 * * *", command: x, pool: one}
        """
    )
    h = Harness(first, durations={"long": timedelta(hours=2), "next": timedelta(hours=2)})
    async with h.engine() as engine:
        await h.advance(engine, hours=1, minutes=30)
        assert set(states(engine).values()) == {"running", "queued"}
    second = config_from('jobs:\n  other: {schedule: "0 9 * * *", command: x}\n')
    store = h.store.reopen()
    async with h.engine(store=store, config=second) as engine:
        running = [r for r in engine.book if r.state is RunState.RUNNING]
        queued_before = [r for r in engine.book if r.state is RunState.CANCELLED]
        assert len(running) == 1 and len(queued_before) == 1
        assert queued_before[0].reason == "job removed from the config"
        await h.advance(engine, hours=2)
        assert running[0].state is RunState.SUCCEEDED  # watched to its end, not lost
        with pytest.raises(ActionError, match=r"no longer in the config"):
            await engine.rerun(running[0].run_id)


async def test_disabled_period_is_not_caught_up(autojump_clock: trio.testing.MockClock) -> None:
    on = config_from('jobs:\n  tick: {schedule: "0 * * * *", command: x, catch_up: all}\n')
    off = config_from(
        'jobs:\n  tick: {schedule: "0 * * * *", command: x, catch_up: all, enabled: false}\n'
    )
    h = Harness(on)
    async with h.engine() as engine:
        await h.advance(engine, hours=1, minutes=30)
    second = h.store.reopen()
    async with h.engine(store=second, config=off) as engine:
        await h.advance(engine, hours=5)
        assert len(engine.book) == 1
    await h.clock.advance(timedelta(hours=2))  # down for two more hours, still disabled
    async with h.engine(store=second.reopen(), config=on) as engine:
        assert [r.trigger.value for r in engine.book] == ["schedule"]


async def test_trigger_older_than_history_is_refused(
    autojump_clock: trio.testing.MockClock,
) -> None:
    h = Harness(
        config_from('scheduler: {history_days: 10}\njobs:\n  a: {schedule: "@daily", command: x}\n')
    )
    async with h.engine() as engine:
        with pytest.raises(ActionError, match=r"older than scheduler\.history_days"):
            await engine.trigger("a", date(2026, 10, 1))
        run = await engine.trigger("a", date(2026, 10, 10))
        assert run.run_id == "a.2026-10-10.1"


async def test_attempt_journaled_but_never_started_is_started_once(
    autojump_clock: trio.testing.MockClock,
) -> None:
    h = Harness(config_from(hourly("latest")), durations={"tick": timedelta(minutes=10)})
    async with h.engine() as engine:
        await h.advance(engine, hours=1, minutes=5)
        assert states(engine) == {"tick.2026-10-19.1": "running"}
    # the scheduler died after journaling the start and before spawning anything: a launcher
    # that has no trace of attempt 1 (a new FakeLauncher) says so
    from pysched.testing import FakeLauncher

    h.launcher = FakeLauncher(h.clock, durations={"tick": timedelta(minutes=10)})
    async with h.engine(store=h.store.reopen()) as engine:
        await h.advance(engine, minutes=15)
        run = engine.book.get("tick.2026-10-19.1")
        assert run.state is RunState.SUCCEEDED
        assert [a.number for a in run.attempts] == [1]
        assert [(s.run_id, s.attempt) for s in h.launcher.started] == [("tick.2026-10-19.1", 1)]


async def test_a_kill_or_cancel_asked_before_a_restart_still_stands(
    autojump_clock: trio.testing.MockClock,
) -> None:
    config = """
    jobs:
      k: {schedule: "0 1 * * *", command: x, retries: 3}
      c: {schedule: "0 1 * * *", command: x, retries: 3}
    """
    h = Harness(config_from(config), durations={"k": timedelta(hours=1), "c": timedelta(hours=1)})
    async with h.engine() as engine:
        await h.advance(engine, hours=1, minutes=5)
        await engine.cancel("c.2026-10-19.1", by="ann", why="stop")
        await engine.kill("k.2026-10-19.1", by="ann", why="runaway")
        # the scheduler stops at once: the attempts' ends are not recorded
    async with h.engine(store=h.store.reopen()) as engine:
        await h.advance(engine, hours=2)
        killed, cancelled = engine.book.get("k.2026-10-19.1"), engine.book.get("c.2026-10-19.1")
        assert (killed.state, killed.reason) == (RunState.FAILED, "killed by ann: runaway")
        assert [a.outcome.value for a in killed.attempts if a.outcome] == ["killed"]
        assert (cancelled.state, cancelled.reason) == (RunState.CANCELLED, "cancelled by ann: stop")
        assert len(cancelled.attempts) == 1
    assert len(h.launcher.started) == 2  # neither was started again


async def test_an_attempt_cancelled_before_its_start_is_not_started_after_a_restart(
    autojump_clock: trio.testing.MockClock,
) -> None:
    h = Harness(config_from(hourly("latest")), durations={"tick": timedelta(minutes=10)})
    async with h.engine() as engine:
        await h.advance(engine, hours=1, minutes=5)
        await engine.cancel("tick.2026-10-19.1", by="ann")
    # as if the scheduler had died after journaling the start (and the cancel) and before
    # spawning anything: a launcher with no trace of the attempt
    from pysched.testing import FakeLauncher

    h.launcher = FakeLauncher(h.clock, durations={"tick": timedelta(minutes=10)})
    async with h.engine(store=h.store.reopen()) as engine:
        await h.advance(engine, minutes=15)
        run = engine.book.get("tick.2026-10-19.1")
        assert run.state is RunState.CANCELLED
        assert h.launcher.started == []


async def test_retention_keeps_an_old_failure_that_a_blocked_run_still_waits_on(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Finished runs older than history_days leave the book at snapshot time, but not one an
    unfinished run is blocked by: an operator must still be able to rerun or mark it."""
    config = """
    scheduler: {history_days: 2}
    jobs:
      tick: {schedule: "0 * * * *", command: x}
      fail: {schedule: "0 3 * * *", command: x}
      dep: {depends_on: [fail], command: x}
    """
    from pysched.store import MemoryStore

    h = Harness(
        config_from(config), outcomes={"fail": [1]}, store=MemoryStore(snapshot_bytes=20_000)
    )
    async with h.engine() as engine:
        await h.advance(engine, days=8)
        assert engine.store_stats.snapshots > 0
        assert engine.book.find("tick.2026-10-19.1") is None  # archived
        blocked = engine.book.get("dep.2026-10-19.1")
        assert (blocked.state, blocked.reason) == (RunState.BLOCKED, "fail.2026-10-19.1 failed")
        before = {run.run_id: run.to_data() for run in engine.book}
    async with h.engine(store=h.store.reopen()) as engine:
        assert {run.run_id: run.to_data() for run in engine.book} == before
        await engine.mark_success("fail.2026-10-19.1", by="ann")
        await h.advance(engine, minutes=30)
        assert engine.book.get("dep.2026-10-19.1").state is RunState.SUCCEEDED


async def test_an_attempt_that_ended_while_down_does_not_skip_the_firing_it_missed(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Catch-up is judged after the attempts found running are asked after: one that ended
    while the scheduler was down is no longer going, so ``overlap: skip`` lets the missed
    firing run (it used to be skipped as "still running")."""
    h = Harness(
        config_from(hourly("all", "overlap: skip")), durations={"tick": timedelta(minutes=40)}
    )
    async with h.engine() as engine:
        await h.advance(engine, hours=1, minutes=10)
        assert states(engine) == {"tick.2026-10-19.1": "running"}
    await h.clock.advance(timedelta(hours=1, minutes=5))  # down until 02:15; tick.1 ended 01:40
    async with h.engine(store=h.store.reopen()) as engine:
        await engine.settle()
        assert engine.book.get("tick.2026-10-19.1").state is RunState.SUCCEEDED
        missed = engine.book.get("tick.2026-10-19.2")  # the 02:00 firing, caught up
        assert missed.state is not RunState.SKIPPED, missed.reason
        await h.advance(engine, minutes=45)
        assert missed.state is RunState.SUCCEEDED


@pytest.mark.parametrize("restart", [False, True], ids=["reload", "restart"])
async def test_a_removed_jobs_failing_attempt_is_not_retried(
    autojump_clock: trio.testing.MockClock, restart: bool
) -> None:
    """The job is removed (by a reload, or by a restart with the new config) while its attempt
    runs; the attempt then fails with retries left. Both ways the run ends failed, saying why
    it was not retried, rather than waiting forever to start a job that is gone."""
    first = config_from(
        """
        jobs:
          flaky:
            schedule: "0 1 * * *"
            command: x
            retries: {count: 2, backoff: {initial: 1m}}
          other: {schedule: "0 9 * * *", command: x}
        """
    )
    second = config_from('jobs:\n  other: {schedule: "0 9 * * *", command: x}\n')
    h = Harness(first, durations={"flaky": timedelta(hours=1)}, outcomes={"flaky": [3, 3, 3]})
    async with h.engine() as engine:
        await h.advance(engine, hours=1, minutes=30)
        assert states(engine, job="flaky") == {"flaky.2026-10-19.1": "running"}
        if not restart:
            await engine.apply_config(second, by="ann")
            await h.advance(engine, hours=2)
        run = engine.book.get("flaky.2026-10-19.1")
    if restart:
        async with h.engine(store=h.store.reopen(), config=second) as engine:
            await h.advance(engine, hours=2)
            run = engine.book.get("flaky.2026-10-19.1")
    assert run.state is RunState.FAILED
    assert len(run.attempts) == 1
    assert run.reason == "attempt 1 exited 3; not retried: job removed from the config"


async def test_an_interrupted_start_of_a_removed_job_is_cancelled_not_queued(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Journaled as starting, never begun (the launcher has no trace of it), and its job gone
    from the config at the restart: cancelled, never left queued for a job that cannot start."""
    first = config_from(
        'jobs:\n  gone: {schedule: "0 1 * * *", command: x}\n'
        '  other: {schedule: "0 9 * * *", command: x}\n'
    )
    second = config_from('jobs:\n  other: {schedule: "0 9 * * *", command: x}\n')
    h = Harness(first, durations={"gone": timedelta(minutes=10)})
    async with h.engine() as engine:
        await h.advance(engine, hours=1, minutes=5)
    h.launcher = FakeLauncher(h.clock)  # no trace of attempt 1: it never started
    async with h.engine(store=h.store.reopen(), config=second) as engine:
        await h.advance(engine, hours=1)
        run = engine.book.get("gone.2026-10-19.1")
        assert (run.state, run.reason) == (RunState.CANCELLED, "job removed from the config")
        assert h.launcher.started == []
