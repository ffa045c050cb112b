"""One contract, every launcher: the fake one (virtual processes on the fake clock) and the
local one (real processes under minders). The remote launcher will join this table."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from pysched.launch.base import (
    NOT_STARTED,
    AttemptHandle,
    AttemptSpec,
    ExitStatus,
    Launcher,
    NotStarted,
)
from pysched.launch.local import LocalLauncher
from pysched.testing import FakeLauncher
from pysched.timing import FakeClock


@dataclass
class Subject:
    launcher: Launcher
    spec: Callable[[str, int], AttemptSpec]
    """spec(kind, attempt) for kind in: ok, fail, slow."""
    real: bool


def _spec(job: str, argv: tuple[str, ...], attempt: int = 1) -> AttemptSpec:
    return AttemptSpec(
        run_id=f"{job}.2026-10-19.1",
        job=job,
        run_date=date(2026, 10, 19),
        attempt=attempt,
        argv=argv,
        env={"PYSCHED_ATTEMPT": str(attempt)},
        scheduled_for=datetime(2026, 10, 19, tzinfo=UTC),
    )


@pytest.fixture(params=["fake", "local", "local-direct"])
def subject(request: pytest.FixtureRequest, tmp_path: Path) -> Subject:
    commands = {
        "ok": ("/bin/sh", "-c", "exit 0"),
        "fail": ("/bin/sh", "-c", "exit 4"),
        "slow": ("/bin/sh", "-c", "sleep 30"),
    }
    if request.param == "fake":
        clock = FakeClock(datetime(2026, 10, 19, tzinfo=UTC))
        fake = FakeLauncher(
            clock,
            durations={"slow": timedelta(seconds=30)},
            default_duration=timedelta(seconds=1),
            outcomes={"fail": [4]},
        )
        return Subject(fake, lambda kind, n: _spec(kind, commands[kind], n), real=False)
    local = LocalLauncher(tmp_path / "logs", minder_host=request.param == "local")
    return Subject(local, lambda kind, n: _spec(kind, commands[kind], n), real=True)


@pytest.fixture
def launch_clock(subject: Subject) -> trio.testing.MockClock | None:
    """The fake launcher lives on virtual time (an autojump clock, which pytest-trio picks up
    from any fixture holding a clock); the local one on real time."""
    return None if subject.real else trio.testing.MockClock(autojump_threshold=0)


async def test_success_and_failure(subject: Subject, launch_clock: Any) -> None:
    ok = await subject.launcher.start(subject.spec("ok", 1))
    fail = await subject.launcher.start(subject.spec("fail", 1))
    with trio.fail_after(60):
        assert (await ok.wait()).succeeded
        status = await fail.wait()
    assert status.exit_code == 4 and not status.succeeded
    assert dict(ok.info)  # something to find it again after a restart


async def test_kill_ends_it_by_signal(subject: Subject, launch_clock: Any) -> None:
    handle = await subject.launcher.start(subject.spec("slow", 1))
    await trio.sleep(0.3)
    await handle.kill(timedelta(seconds=2))
    with trio.fail_after(60):
        status = await handle.wait()
    assert status.signal is not None
    assert not status.succeeded


async def test_recover_after_the_end_reads_how_it_ended(
    subject: Subject, launch_clock: Any
) -> None:
    handle: AttemptHandle = await subject.launcher.start(subject.spec("fail", 1))
    with trio.fail_after(60):
        await handle.wait()
    found = await subject.launcher.recover(subject.spec("fail", 1), handle.info)
    assert isinstance(found, ExitStatus)
    assert found.exit_code == 4


async def test_recover_adopts_a_running_attempt(subject: Subject, launch_clock: Any) -> None:
    handle = await subject.launcher.start(subject.spec("slow", 1))
    with trio.move_on_after(0.3):
        await handle.wait()  # stop watching: the attempt keeps running
    found = await subject.launcher.recover(subject.spec("slow", 1), handle.info)
    assert found is not None and not isinstance(found, ExitStatus | NotStarted)
    await found.kill(timedelta(seconds=2))
    with trio.fail_after(60):
        assert (await found.wait()).signal is not None


async def test_recover_of_an_attempt_never_started(subject: Subject, launch_clock: Any) -> None:
    # journaled as starting, but the scheduler stopped before it spawned anything
    assert await subject.launcher.recover(subject.spec("ok", 9), {}) is NOT_STARTED
