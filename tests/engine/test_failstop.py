"""Write-ahead and fail-stop: nothing is shown or started on an unwritten change."""

from __future__ import annotations

import errno
from datetime import timedelta

import pytest
import trio

from pysched.engine import RunState
from pysched.errors import EngineStopped, StoreError
from pysched.store import MemoryStore
from tests.engine.harness import Harness, config_from

CONFIG = """
jobs:
  a: {schedule: "0 1 * * *", command: x}
  b: {schedule: "0 2 * * *", command: x}
"""


async def test_journal_failure_stops_the_engine(autojump_clock: trio.testing.MockClock) -> None:
    h = Harness(config_from(CONFIG), durations={"a": timedelta(minutes=30)})
    async with h.engine() as engine:
        await h.advance(engine, hours=1, minutes=5)
        a = engine.book.get("a.2026-10-19.1")
        assert a.state is RunState.RUNNING
        events_before = engine.events.last_id
        h.store.inject_failure(OSError(28, "No space left on device"))
        await h.advance(engine, minutes=30)  # a ends: its change cannot be written
        error = await engine.wait_failed()
        assert isinstance(error, StoreError)
        assert engine.error is error
        # put back to the last committed copy, nothing published about the lost change
        assert engine.book.get("a.2026-10-19.1").state is RunState.RUNNING
        assert engine.events.last_id == events_before
        await h.advance(engine, hours=2)
        assert engine.book.find("b.2026-10-19.1") is None  # nothing more created or started
        assert [s.run_id for s in h.launcher.started] == ["a.2026-10-19.1"]
        with pytest.raises(EngineStopped):
            await engine.trigger("b")

    # a new engine over what was written carries on: a's attempt is adopted (it ended while
    # unwatched), b fires as usual
    # same clock, same launcher: the virtual process outlived the engine
    async with h.engine(store=h.store.reopen()) as engine:
        a = engine.book.get("a.2026-10-19.1")
        assert a.state is RunState.SUCCEEDED
        assert a.attempts[0].ended_at is not None
        assert a.attempts[0].ended_at.strftime("%H:%M") == "01:30"
        await h.advance(engine, days=1)
        assert engine.book.get("b.2026-10-20.1").state is RunState.SUCCEEDED


async def test_failed_start_commit_starts_nothing(autojump_clock: trio.testing.MockClock) -> None:
    h = Harness(config_from(CONFIG))
    async with h.engine() as engine:
        h.store.inject_failure()
        await h.advance(engine, hours=3)
        assert engine.error is not None
        assert h.launcher.started == []
        assert len(engine.book) == 0
    async with h.engine(store=h.store.reopen()) as engine:
        # the firings at 01:00 and 02:00 were never written: caught up by policy (latest)
        assert {(r.run_id, r.trigger.value) for r in engine.book} == {
            ("a.2026-10-19.1", "catch_up"),
            ("b.2026-10-19.1", "catch_up"),
        }


async def test_fail_stop_reverts_actions_and_holds(autojump_clock: trio.testing.MockClock) -> None:
    h = Harness(config_from(CONFIG))
    async with h.engine() as engine:
        h.store.inject_failure()
        with pytest.raises(EngineStopped):
            await engine.hold_job("a", by="ann")
        assert engine.actions_for("a") == []
        assert engine.error is not None


async def test_a_failed_snapshot_stops_the_engine_at_once(
    autojump_clock: trio.testing.MockClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the snapshot's failure stops the store; the engine must not go on "ready" until its next
    # commit, which on a quiet schedule may be hours away
    store = MemoryStore()
    h = Harness(config_from(CONFIG), store=store, durations={"a": timedelta(hours=5)})

    async def failing(*_: object) -> None:
        raise store._fail("cannot write the snapshot", OSError(errno.EIO, "I/O error"))

    monkeypatch.setattr(store, "write_snapshot", failing)
    async with h.engine() as engine:
        await h.advance(engine, hours=1, minutes=5)  # a runs until 06:00; b fires at 02:00
        assert engine.error is None
        monkeypatch.setattr(store, "_snapshot_bytes", 1)  # the journal is now "big"
        await engine.call(lambda: None)  # a pass that writes nothing: then the snapshot
        with trio.fail_after(60):  # virtual seconds: nothing else happens before 02:00
            error = await engine.wait_failed()
        assert "cannot write the snapshot" in str(error)
        assert engine.book.find("b.2026-10-19.1") is None


async def test_a_rerun_of_a_finished_run_is_rolled_back_whole(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """A finished run keeps only its committed record (``Run.refreeze``); a rerun whose commit
    fails puts it back to exactly that record, attempts and all."""
    h = Harness(config_from(CONFIG), outcomes={"a": [1]})
    async with h.engine() as engine:
        await h.advance(engine, hours=1, minutes=5)
        done = engine.book.get("a.2026-10-19.1")
        assert done.state is RunState.FAILED
        record = done.to_data()
        assert done.committed == record  # what the journal holds
        h.store.inject_failure()
        with pytest.raises(EngineStopped):
            await engine.rerun("a.2026-10-19.1", by="ann")
        back = engine.book.get("a.2026-10-19.1")
        assert back.state is RunState.FAILED
        assert back.to_data() == record
        assert [a.number for a in back.attempts] == [1]


async def test_a_finished_run_reruns_from_its_record(
    autojump_clock: trio.testing.MockClock,
) -> None:
    h = Harness(config_from(CONFIG), outcomes={"a": [1, 0]})
    async with h.engine() as engine:
        await h.advance(engine, hours=1, minutes=5)
        assert engine.book.get("a.2026-10-19.1").state is RunState.FAILED
        run = await engine.rerun("a.2026-10-19.1", by="ann")
        await h.advance(engine, minutes=5)
        assert run.state is RunState.SUCCEEDED
        assert [(a.number, a.exit_code) for a in run.attempts] == [(1, 1), (2, 0)]
        assert run.created_at.strftime("%H:%M") == "01:00"  # read back from the record


PARIS_DUE_TIME = """
jobs:
  a:
    schedule: "0 9 * * *"
    timezone: Europe/Paris
    command: ["echo", "{scheduled_for:%H:%M %Z}"]
"""
"""A job whose command shows the zone of its due time (``%Z``: CEST in October)."""


async def test_a_rerun_renders_its_due_time_in_the_zone_of_its_first_attempt(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """A finished run keeps its own ``scheduled_for``: the record holds its offset only, and
    ``{scheduled_for:%Z}`` must not turn from CEST into UTC+02:00 on a rerun."""
    h = Harness(config_from(PARIS_DUE_TIME), outcomes={"a": [1, 0]})
    async with h.engine() as engine:
        await h.advance(engine, hours=9, minutes=5)
        assert engine.book.get("a.2026-10-19.1").state is RunState.FAILED
        await engine.rerun("a.2026-10-19.1", by="ops")
        await h.advance(engine, minutes=5)
        assert [start.command for start in h.launcher.started] == [
            ("echo", "09:00 CEST"),
            ("echo", "09:00 CEST"),
        ]


async def test_a_restart_reads_the_due_time_back_in_its_zone(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """The run record names the zone of ``scheduled_for`` (``tz``): after a restart a rerun
    still renders ``%Z`` as the first attempt did. A record without it reads as before."""
    h = Harness(config_from(PARIS_DUE_TIME), outcomes={"a": [1, 0]})
    async with h.engine() as engine:
        await h.advance(engine, hours=9, minutes=5)
        committed = engine.book.get("a.2026-10-19.1").committed
        assert committed is not None and committed["tz"] == "Europe/Paris"
    async with h.engine(store=h.store.reopen()) as engine:
        await engine.rerun("a.2026-10-19.1", by="ops")
        await h.advance(engine, minutes=5)
    assert [start.command for start in h.launcher.started] == [
        ("echo", "09:00 CEST"),
        ("echo", "09:00 CEST"),
    ]
