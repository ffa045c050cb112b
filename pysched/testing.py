"""Fakes for testing configs and pysched itself: part of the product, documented.

``FakeLauncher`` runs attempts as virtual processes on a ``FakeClock``: each takes the duration
you give its job, ends with the exit code you give its attempt, honours kill and timeout, and
remembers what it started. With pytest-trio's ``autojump_clock`` a whole day runs in a blink::

    clock = FakeClock(datetime(2026, 10, 19, tzinfo=UTC))
    launcher = FakeLauncher(clock, durations={"load": timedelta(minutes=20)},
                            outcomes={"fetch-rates": [1, 0]})
    async with open_engine(config, MemoryStore(), clock=clock, launcher=launcher) as engine:
        await clock.advance(timedelta(hours=9))
        await engine.settle()

A virtual process outlives the engine that started it (as a real one outlives the scheduler
under its minder): a new engine given the same ``FakeLauncher`` adopts it if it is still
"running" at that instant, or reads how it ended.
"""

from __future__ import annotations

import signal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import trio

from pysched.launch.base import NOT_STARTED, AttemptSpec, ExitStatus, NotStarted
from pysched.timing.clock import Clock

__all__ = ["FakeLauncher", "StartedAttempt"]


@dataclass(frozen=True, slots=True, kw_only=True)
class StartedAttempt:
    """What ``FakeLauncher`` was asked to start. ``env`` holds real values: tests only."""

    run_id: str
    attempt: int
    command: tuple[str, ...]
    env: Mapping[str, str]
    at: datetime


class _FakeProcess:
    """A virtual process: it ends at ``ends_at`` with ``exit_code`` unless killed first."""

    def __init__(self, clock: Clock, ends_at: datetime, exit_code: int) -> None:
        self._clock = clock
        self.ends_at = ends_at
        self.exit_code = exit_code
        self.killed_at: datetime | None = None
        self._scope: trio.CancelScope | None = None
        self.pid = 0

    @property
    def info(self) -> Mapping[str, Any]:
        return {"fake_pid": self.pid}

    def status(self) -> ExitStatus | None:
        """How it ended, or None while it still runs."""
        if self.killed_at is not None:
            return ExitStatus(signal=signal.SIGTERM, ended_at=self.killed_at, message="killed")
        if self._clock.now() >= self.ends_at:
            return ExitStatus(exit_code=self.exit_code, ended_at=self.ends_at)
        return None

    async def wait(self) -> ExitStatus:
        if self.status() is None:
            with trio.CancelScope() as scope:
                self._scope = scope
                await self._clock.sleep_until(self.ends_at)
            self._scope = None
        else:
            await trio.lowlevel.checkpoint()
        status = self.status()
        assert status is not None
        return status

    async def kill(self, grace: timedelta) -> None:
        if self.status() is None:
            self.killed_at = self._clock.now()
            if self._scope is not None:
                self._scope.cancel()
        await trio.lowlevel.checkpoint()


class FakeLauncher:
    """Virtual attempts on a fake clock.

    ``durations`` maps a job to how long each attempt takes (else ``default_duration``);
    ``outcomes`` maps a job to the exit codes of its successive attempts within a run (attempt
    1, 2, ...; the last repeats; default 0). A key may also be a run id
    (``load.2026-10-22.1``), which wins over the job's entry: that is how a test makes one day
    fail. ``started`` lists every attempt started, in order.
    ``fail_start`` names jobs whose attempts cannot start (as a missing program would).
    """

    def __init__(
        self,
        clock: Clock,
        *,
        durations: Mapping[str, timedelta] | None = None,
        default_duration: timedelta = timedelta(minutes=1),
        outcomes: Mapping[str, Sequence[int]] | None = None,
        fail_start: Sequence[str] = (),
    ) -> None:
        self.clock = clock
        self.durations = dict(durations or {})
        self.default_duration = default_duration
        self.outcomes = {job: list(codes) for job, codes in (outcomes or {}).items()}
        self.fail_start = set(fail_start)
        self.started: list[StartedAttempt] = []
        self._processes: dict[tuple[str, int], _FakeProcess] = {}

    async def start(self, spec: AttemptSpec) -> _FakeProcess:
        await trio.lowlevel.checkpoint()
        if spec.job in self.fail_start:
            raise OSError(f"cannot start {spec.display or spec.argv[0]!r}: no such file")
        now = self.clock.now()
        self.started.append(
            StartedAttempt(
                run_id=spec.run_id, attempt=spec.attempt, command=spec.argv, env=spec.env, at=now
            )
        )
        codes = self.outcomes.get(spec.run_id) or self.outcomes.get(spec.job) or [0]
        code = codes[min(spec.attempt, len(codes)) - 1]
        duration = self.durations.get(spec.job, self.default_duration)
        process = _FakeProcess(self.clock, now + duration, code)
        process.pid = len(self.started)
        self._processes[(spec.run_id, spec.attempt)] = process
        return process

    async def recover(
        self, spec: AttemptSpec, info: Mapping[str, Any]
    ) -> _FakeProcess | ExitStatus | NotStarted | None:
        await trio.lowlevel.checkpoint()
        process = self._processes.get((spec.run_id, spec.attempt))
        if process is not None:
            return process.status() or process
        if not any(s.run_id == spec.run_id and s.attempt == spec.attempt for s in self.started):
            return NOT_STARTED
        return None  # started once, gone without a trace (``_processes`` cleared: a reboot)

    def attempts_of(self, run_id: str) -> list[StartedAttempt]:
        return [s for s in self.started if s.run_id == run_id]
