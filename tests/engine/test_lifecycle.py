"""Runs from firing to final state on the fake clock: the design example, chains, retries."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import trio

from pysched.config import load_config
from pysched.engine import RunState, open_engine
from pysched.store import MemoryStore
from pysched.testing import FakeLauncher
from pysched.timing import FakeClock
from tests.engine.harness import Harness, config_from, states

ICE = """
jobs:
  ice:
    schedule: "0 9 * * *"
    command: echo ice {run_date}
"""


async def test_design_example(tmp_path: Path, autojump_clock: trio.testing.MockClock) -> None:
    (tmp_path / "pysched.yaml").write_text(ICE)
    config = load_config(tmp_path / "pysched.yaml")
    clock = FakeClock(datetime(2026, 10, 19, tzinfo=UTC))
    async with open_engine(
        config, MemoryStore(), clock=clock, launcher=FakeLauncher(clock)
    ) as engine:
        await clock.advance(timedelta(hours=9, minutes=3))
        await engine.settle()
        ice = engine.book.latest_for("ice", clock.now().date())
        assert ice is not None
        assert (ice.run_id, ice.state.value) == ("ice.2026-10-19.1", "succeeded")
        attempt = ice.attempts[0]
        assert attempt.number == 1
        assert attempt.started_at == datetime(2026, 10, 19, 9, tzinfo=UTC)
        assert attempt.ended_at == datetime(2026, 10, 19, 9, 1, tzinfo=UTC)
        assert attempt.exit_code == 0
        assert attempt.outcome is not None and attempt.outcome.value == "succeeded"


async def test_run_ids_count_runs_per_date(autojump_clock: trio.testing.MockClock) -> None:
    h = Harness(config_from('jobs:\n  tick: {schedule: "0 */6 * * *", command: "true"}\n'))
    async with h.engine() as engine:
        await h.advance(engine, hours=24)
        ids = [run.run_id for run in engine.book.runs(job="tick")]
        assert ids == [
            "tick.2026-10-19.1",
            "tick.2026-10-19.2",
            "tick.2026-10-19.3",
            "tick.2026-10-20.1",
        ]
        assert engine.book.runs(job="tick", state="succeeded")[0].run_id == "tick.2026-10-19.1"


CHAIN = """
jobs:
  extract:
    schedule: "0 2 * * *"
    command: echo extract
  transform:
    depends_on: [extract]
    command: echo transform
  load:
    depends_on: [transform]
    command: echo load
  cleanup:
    depends_on: [{job: load, on: failure}]
    command: echo cleanup
"""


async def test_chain_runs_in_order(autojump_clock: trio.testing.MockClock) -> None:
    h = Harness(config_from(CHAIN), durations={"transform": timedelta(minutes=10)})
    async with h.engine() as engine:
        await h.advance(engine, hours=2)
        assert states(engine) == {
            "extract.2026-10-19.1": "running",
            "transform.2026-10-19.1": "waiting",
            "load.2026-10-19.1": "waiting",
            "cleanup.2026-10-19.1": "waiting",
        }
        assert engine.book.get("transform.2026-10-19.1").reason == (
            "waiting for extract.2026-10-19.1"
        )
        await h.advance(engine, minutes=30)
        assert states(engine) == {
            "extract.2026-10-19.1": "succeeded",
            "transform.2026-10-19.1": "succeeded",
            "load.2026-10-19.1": "succeeded",
            "cleanup.2026-10-19.1": "skipped",
        }
        started = [(s.run_id, s.at.strftime("%H:%M")) for s in h.launcher.started]
        assert started == [
            ("extract.2026-10-19.1", "02:00"),
            ("transform.2026-10-19.1", "02:01"),
            ("load.2026-10-19.1", "02:11"),
        ]
        assert (
            "runs only if load.2026-10-19.1 fails" in engine.book.get("cleanup.2026-10-19.1").reason
        )


async def test_failure_blocks_success_dependents_and_runs_failure_handler(
    autojump_clock: trio.testing.MockClock,
) -> None:
    h = Harness(config_from(CHAIN), outcomes={"load": [3]})
    async with h.engine() as engine:
        await h.advance(engine, hours=3)
        assert states(engine)["load.2026-10-19.1"] == "failed"
        assert states(engine)["cleanup.2026-10-19.1"] == "succeeded"
        load = engine.book.get("load.2026-10-19.1")
        assert load.attempts[0].exit_code == 3
        assert load.reason == "attempt 1 exited 3"


async def test_blocked_until_upstream_marked(autojump_clock: trio.testing.MockClock) -> None:
    h = Harness(config_from(CHAIN), outcomes={"transform": [1]})
    async with h.engine() as engine:
        await h.advance(engine, hours=3)
        assert states(engine)["load.2026-10-19.1"] == "blocked"
        assert engine.book.get("load.2026-10-19.1").reason == "transform.2026-10-19.1 failed"
        await engine.mark_success("transform.2026-10-19.1", by="ann", why="fixed by hand")
        await h.advance(engine, minutes=5)
        assert states(engine)["load.2026-10-19.1"] == "succeeded"
        actions = engine.actions_for("transform.2026-10-19.1")
        assert [(a["action"], a["by"], a["why"]) for a in actions] == [
            ("mark_success", "ann", "fixed by hand")
        ]


RETRY = """
jobs:
  flaky:
    schedule: "0 1 * * *"
    command: "false"
    retries: {count: 3, backoff: {initial: 1m, factor: 2, max: 3m}}
"""


async def test_retries_with_backoff(autojump_clock: trio.testing.MockClock) -> None:
    h = Harness(config_from(RETRY), outcomes={"flaky": [1, 1, 1, 0]})
    async with h.engine() as engine:
        await h.advance(engine, hours=2)
        run = engine.book.get("flaky.2026-10-19.1")
        assert run.state is RunState.SUCCEEDED
        starts = [a.started_at.strftime("%H:%M") for a in run.attempts]
        # each attempt takes 1m; waits 1m, 2m, then 3m (4m capped at max)
        assert starts == ["01:00", "01:02", "01:05", "01:09"]
        assert [a.exit_code for a in run.attempts] == [1, 1, 1, 0]
        env = [s.env["PYSCHED_ATTEMPT"] for s in h.launcher.started]
        assert env == ["1", "2", "3", "4"]


async def test_retries_exhausted_fail(autojump_clock: trio.testing.MockClock) -> None:
    h = Harness(config_from(RETRY), outcomes={"flaky": [1]})
    async with h.engine() as engine:
        await h.advance(engine, minutes=61)
        run = engine.book.get("flaky.2026-10-19.1")
        assert run.state is RunState.RETRYING
        assert "retry 1 of 3" in run.reason
        await h.advance(engine, hours=1)
        assert run.state is RunState.FAILED
        assert len(run.attempts) == 4


async def test_timeout_kills_and_counts_as_failure(
    autojump_clock: trio.testing.MockClock,
) -> None:
    h = Harness(
        config_from(
            'jobs:\n  slow: {schedule: "0 1 * * *", command: x, timeout: 5m, retries: 1}\n'
        ),
        durations={"slow": timedelta(hours=1)},
    )
    async with h.engine() as engine:
        await h.advance(engine, hours=2)
        run = engine.book.get("slow.2026-10-19.1")
        assert run.state is RunState.FAILED
        assert [a.outcome.value for a in run.attempts if a.outcome] == ["timed_out", "timed_out"]
        assert run.attempts[0].ended_at == datetime(2026, 10, 19, 1, 5, tzinfo=UTC)
        assert run.reason == "attempt 2 timed out"


async def test_start_failure_is_recorded(autojump_clock: trio.testing.MockClock) -> None:
    h = Harness(config_from('jobs:\n  a: {schedule: "0 1 * * *", command: x}\n'), fail_start=["a"])
    async with h.engine() as engine:
        await h.advance(engine, hours=2)
        run = engine.book.get("a.2026-10-19.1")
        assert run.state is RunState.FAILED
        assert run.attempts[0].outcome is not None
        assert run.attempts[0].outcome.value == "start_failed"
        assert "no such file" in run.attempts[0].message


async def test_calendar_and_run_date_rule(autojump_clock: trio.testing.MockClock) -> None:
    h = Harness(
        config_from(
            """
            calendars: {uk: {country: GB, subdivision: ENG}}
            jobs:
              eod:
                schedule: "0 2 * * *"
                timezone: Europe/London
                calendar: uk
                run_date: previous_business_day
                command: x
            """
        ),
        start=datetime(2026, 12, 23, tzinfo=UTC),
    )
    async with h.engine() as engine:
        await h.advance(engine, days=7)
        assert [(r.run_id, r.scheduled_for.date()) for r in engine.book] == [
            ("eod.2026-12-22.1", date(2026, 12, 23)),
            ("eod.2026-12-23.1", date(2026, 12, 24)),
            ("eod.2026-12-24.1", date(2026, 12, 29)),
        ]


async def test_the_launcher_is_prepared_once_as_the_engine_opens(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """So the local launcher's minder host is up before the first firing, not started by it."""
    h = Harness(config_from('jobs:\n  a: {schedule: "0 1 * * *", command: x}\n'))
    assert h.launcher.prepared == 0
    async with h.engine() as engine:
        assert h.launcher.prepared == 1
        await h.advance(engine, hours=2)
        assert h.launcher.prepared == 1
        assert states(engine) == {"a.2026-10-19.1": "succeeded"}


class _OlderLauncher:
    """A launcher written before ``prepare`` existed: ``start`` and ``recover`` only."""

    def __init__(self, inner: FakeLauncher) -> None:
        self.start = inner.start
        self.recover = inner.recover


class _FailingPrepare(FakeLauncher):
    async def prepare(self) -> None:
        raise RuntimeError("the agents are not reachable yet")


async def test_a_launcher_without_prepare_or_whose_prepare_fails_still_runs_jobs(
    autojump_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture
) -> None:
    config = config_from('jobs:\n  a: {schedule: "0 1 * * *", command: x}\n')
    for older in (True, False):
        clock = FakeClock(datetime(2026, 10, 19, tzinfo=UTC))
        launcher: Any = _OlderLauncher(FakeLauncher(clock)) if older else _FailingPrepare(clock)
        async with open_engine(config, MemoryStore(), clock=clock, launcher=launcher) as engine:
            await engine.settle()
            await clock.advance(timedelta(hours=2))
            await engine.settle()
            assert {run.state for run in engine.book} == {RunState.SUCCEEDED}
    assert "the launcher could not get ready" in caplog.text
