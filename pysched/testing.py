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

import heapq
import itertools
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

    def __init__(self, clock: Clock, ends_at: datetime, exit_code: int, timer: _EndTimer) -> None:
        self._clock = clock
        self._timer = timer
        self.ends_at = ends_at
        self.exit_code = exit_code
        self.killed_at: datetime | None = None
        self.ended = trio.Event()
        """Set when it ends or is killed (by ``_EndTimer`` or ``kill``), in the current run."""
        self.pid = 0
        self.waiters = 0

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
            self._timer.watch(self)
            self.waiters += 1
            try:
                await self.ended.wait()
            finally:
                self.waiters -= 1
                if not self.waiters and not self.ended.is_set():
                    self._timer.dropped(self)  # no one waits now: its end is no deadline
        else:
            await trio.lowlevel.checkpoint()
        status = self.status()
        assert status is not None
        return status

    async def kill(self, grace: timedelta) -> None:
        if self.status() is None:
            self.killed_at = self._clock.now()
            self.ended.set()
            self._timer.dropped(self)
        await trio.lowlevel.checkpoint()


class _EndTimer:
    """Wakes each waited-on virtual process at its end: one task of the Trio run sleeps until
    the earliest end, however many processes are waited on (a sleep each would cost every
    attempt two cancel scopes and a ``Cancelled``)."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._due: list[tuple[datetime, int, _FakeProcess]] = []
        self._count = itertools.count()
        self._run: trio.lowlevel.TrioToken | None = None
        self._asleep: trio.CancelScope | None = None
        self._sleeping_until: datetime | None = None
        self._more = trio.Event()

    def watch(self, process: _FakeProcess) -> None:
        run = trio.lowlevel.current_trio_token()
        if run is not self._run:  # a new Trio run: the waiters and the task of the last are gone
            self._run = run
            self._due = []
            self._asleep = self._sleeping_until = None
            self._more = trio.Event()
            trio.lowlevel.spawn_system_task(self._wake_ends, name="pysched fake process ends")
        if process.ended.is_set():  # a waiter of an earlier run was woken; this one waits anew
            process.ended = trio.Event()
        heapq.heappush(self._due, (process.ends_at, next(self._count), process))
        if self._asleep is not None and self._sleeping_until is not None:
            if process.ends_at < self._sleeping_until:
                self._asleep.cancel()  # sleep again, until this earlier end
        else:
            self._more.set()

    def dropped(self, process: _FakeProcess) -> None:
        """A process killed, or no longer waited on (its waiter cancelled: an engine
        stopped), needs no waking: if the timer sleeps until its end, it sleeps again, until
        the next, so an autojump clock never jumps to an end nobody waits for."""
        if self._asleep is not None and self._due and self._due[0][2] is process:
            self._asleep.cancel()

    async def _wake_ends(self) -> None:
        while True:
            due = self._due
            while due and (due[0][2].killed_at is not None or not due[0][2].waiters):
                heapq.heappop(due)
            if not due:
                self._more = trio.Event()
                await self._more.wait()
                continue
            with trio.CancelScope() as asleep:
                self._asleep, self._sleeping_until = asleep, due[0][0]
                await self._clock.sleep_until(due[0][0])
            self._asleep = self._sleeping_until = None
            now = self._clock.now()
            while due and due[0][0] <= now:
                heapq.heappop(due)[2].ended.set()


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
        self.prepared = 0
        """How many times ``prepare`` was called (the engine calls it once as it opens)."""
        self._processes: dict[tuple[str, int], _FakeProcess] = {}
        self._timer = _EndTimer(clock)

    async def prepare(self) -> None:
        await trio.lowlevel.checkpoint()
        self.prepared += 1

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
        process = _FakeProcess(self.clock, now + duration, code, self._timer)
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
