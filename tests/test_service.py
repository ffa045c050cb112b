"""serve: replay, run, stop on a signal; fail-stop exits 1. (Fake launcher; real processes
come with the local launcher's own tests.)"""

from __future__ import annotations

import os
import signal
import textwrap
from datetime import UTC, datetime, timedelta
from pathlib import Path

import trio
import trio.testing

from pysched.config import Config, load_config
from pysched.engine import Engine
from pysched.service import Serving, describe, serve
from pysched.testing import FakeLauncher
from pysched.timing import FakeClock


def write_config(tmp_path: Path) -> Path:
    path = tmp_path / "pysched.yaml"
    path.write_text(
        textwrap.dedent(
            """
            scheduler: {state_dir: state, log_dir: logs}
            jobs:
              ice: {schedule: "0 9 * * *", command: echo ice}
            """
        )
    )
    return path


async def start_serving(
    config: Config,
    launcher: FakeLauncher,
    clock: FakeClock,
    task_status: trio.TaskStatus[Engine] = trio.TASK_STATUS_IGNORED,
) -> None:
    async def serving(task_status: trio.TaskStatus[Serving]) -> None:
        await serve(
            config,
            launcher_factory=lambda _: launcher,
            clock=clock,
            sync=False,
            http=False,
            stop_signals=(signal.SIGUSR1,),
            reload_signals=(),
            task_status=task_status,
        )

    async with trio.open_nursery() as nursery:
        started: Serving = await nursery.start(serving)
        task_status.started(started.engine)


async def test_serve_runs_until_signalled(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    config = load_config(write_config(tmp_path))
    clock = FakeClock(datetime(2026, 10, 19, tzinfo=UTC))
    launcher = FakeLauncher(clock)
    async with trio.open_nursery() as nursery:
        engine = await nursery.start(start_serving, config, launcher, clock)
        await clock.advance(timedelta(hours=9, minutes=5))
        await engine.settle()
        assert engine.book.get("ice.2026-10-19.1").state.value == "succeeded"
        os.kill(os.getpid(), signal.SIGUSR1)
    assert (tmp_path / "state").is_dir()
    # the state dir is free again: a second serve can open it
    async with trio.open_nursery() as nursery:
        engine = await nursery.start(start_serving, config, launcher, clock)
        assert engine.book.get("ice.2026-10-19.1").state.value == "succeeded"
        nursery.cancel_scope.cancel()


def test_describe_events() -> None:
    from pysched.engine.events import Event

    at = datetime(2026, 10, 19, tzinfo=UTC)
    assert (
        describe(
            Event(
                id=1,
                at=at,
                kind="run_changed",
                data={"run_id": "a.2026-10-19.1", "state": "waiting", "reason": "x"},
            )
        )
        == "a.2026-10-19.1 waiting — x"
    )
    assert (
        describe(
            Event(
                id=2,
                at=at,
                kind="attempt_ended",
                data={
                    "run_id": "a.2026-10-19.1",
                    "attempt": 1,
                    "outcome": "failed",
                    "exit_code": 3,
                },
            )
        )
        == "a.2026-10-19.1 attempt 1 failed (exit 3)"
    )
