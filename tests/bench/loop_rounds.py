"""Where a trio loop's time goes: its long rounds, and the task steps in them.

A *round* is what the loop runs between two waits for I/O: every task that was ready, one step
each. A ticker's lateness says a round was long; ``LongRounds`` (a trio instrument) says what
was in it. Each round longer than ``threshold_ms`` is kept with its longest steps, each with
its wall time, the CPU time of the loop's thread during it, the time that thread waited on the
kernel's run queue for a core during it (``/proc/thread-self/schedstat``, second field), the
time the cyclic garbage collector took in it, and its task's name (for a Quart request, the
request's path too). A step whose wall time is about its CPU time is the code, or the
collector; one whose wall time is about its CPU time plus its run-queue wait was ready but had
no core (other threads or processes had both); what is left beyond those two the thread spent
asleep in the kernel: blocked on the disk or a lock, or waiting for the GIL a worker thread
held.

This is how a server's at-rest tail was traced to single list requests of 10-65 ms of CPU
(``docs/benchmarks.md``, 2026-12-02, morning). The instrument costs a few microseconds and a
read of ``/proc`` a step: use it to find where time goes, not for the figures.
"""

from __future__ import annotations

import gc
import os
import time
from typing import Any, NamedTuple

import trio
from proc_readings import queued_ns


def _own_schedstat() -> int | None:
    """A descriptor on the calling thread's ``schedstat``, or None where there is none."""
    try:
        return os.open("/proc/thread-self/schedstat", os.O_RDONLY)
    except OSError:
        return None


class Step(NamedTuple):
    """One task step of a long round (a list of five in ``rounds.json``)."""

    wall_ms: float
    cpu_ms: float
    queued_ms: float  # waiting on the run queue for a core
    collector_ms: float
    task: str


Round = tuple[float, float, int, list[Step]]  # ended at (monotonic), wall ms, steps, longest


def _task_name(task: trio.lowlevel.Task) -> str:
    name = task.name.rsplit(".", 1)[-1]
    if name == "handle_request":  # Quart's request task: which request
        frame = getattr(task.coro, "cr_frame", None)
        request = frame.f_locals.get("request") if frame is not None else None
        path = getattr(request, "full_path", None)
        if path is not None:
            name += f" {path}"
    return name


class LongRounds(trio.abc.Instrument):
    """Keeps each loop round over ``threshold_ms`` with its ``keep`` longest steps (of those
    over ``step_ms``). Make it on the thread that runs the loop (it reads that thread's
    run-queue wait) and add it before the loop's work starts; it watches the collector through
    ``gc.callbacks`` from then on."""

    def __init__(self, threshold_ms: float = 4.0, *, step_ms: float = 0.3, keep: int = 8) -> None:
        self.threshold_ms, self.step_ms, self.keep = threshold_ms, step_ms, keep
        self.rounds: list[Round] = []
        self._round_start = 0.0
        self._steps: list[Step] = []
        self._count = 0
        self._step_start = self._step_cpu = 0.0
        self._step_queued = 0
        self._schedstat = _own_schedstat()
        self._gc_start = self._gc_ms = 0.0
        gc.callbacks.append(self._on_collection)

    def _on_collection(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._gc_start = time.perf_counter()
        else:
            self._gc_ms += (time.perf_counter() - self._gc_start) * 1000

    def after_io_wait(self, timeout: float) -> None:
        self._round_start = time.perf_counter()
        self._steps, self._count = [], 0

    def _queued_ns(self) -> int:
        """Nanoseconds the loop's thread has waited on the run queue for a core, all told (0
        where the kernel does not say)."""
        if self._schedstat is None:
            return 0
        return queued_ns(os.pread(self._schedstat, 64, 0))

    def after_run(self) -> None:
        if self._schedstat is not None:
            os.close(self._schedstat)
            self._schedstat = None

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        self._step_start, self._step_cpu = time.perf_counter(), time.thread_time()
        self._step_queued = self._queued_ns()
        self._gc_ms = 0.0

    def after_task_step(self, task: trio.lowlevel.Task) -> None:
        self._count += 1
        wall = (time.perf_counter() - self._step_start) * 1000
        if wall > self.step_ms and self._step_start:
            cpu = (time.thread_time() - self._step_cpu) * 1000
            queued = (self._queued_ns() - self._step_queued) / 1e6
            step = Step(
                round(wall, 2),
                round(cpu, 2),
                round(queued, 2),
                round(self._gc_ms, 2),
                _task_name(task),
            )
            self._steps.append(step)

    def before_io_wait(self, timeout: float) -> None:
        if not self._round_start:
            return
        wall = (time.perf_counter() - self._round_start) * 1000
        if wall > self.threshold_ms:
            longest = sorted(self._steps, reverse=True)[: self.keep]
            self.rounds.append((time.monotonic(), round(wall, 2), self._count, longest))


def print_longest(
    rounds: list[Any], windows: dict[str, tuple[float, float]], top: int = 15
) -> None:
    """Print the ``top`` longest rounds, each with the phase (of ``windows``) it fell in."""

    def phase(at: float) -> str:
        return next((name for name, (a, b) in windows.items() if a <= at <= b), "-")

    print(
        f"the loop's {top} longest rounds "
        "(wall ms; steps: wall / CPU / waited for a core / collector ms, task):"
    )
    for at, wall, count, longest in sorted(rounds, key=lambda r: -r[1])[:top]:
        steps = ", ".join(f"{w} / {c} / {q} / {g} {name}" for w, c, q, g, name in longest[:4])
        print(f"  {wall:7.1f} ms  {phase(at):6} {count:3} steps: {steps}")
