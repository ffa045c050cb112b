"""200 ``sleep 1`` attempts made ready at once, through the engine with real minders.

The engine runs on the real clock with a disk journal (fsync on) and the local launcher: each
attempt is a minder process (``python -I -S minder.py -``) that runs ``sleep 1`` (argv, no
shell). All 200 jobs are triggered in one burst (200 concurrent ``engine.trigger`` calls);
``scheduler.max_running`` is 250 so no cap holds anything back.

Figures (last line, JSON):
- ``wall_s``: from the burst until the book shows all 200 runs succeeded (polled every 10 ms);
- ``floor_s``: the same 200 ``sleep 1`` commands spawned by a bare trio script
  (``trio.run_process`` x200 in one nursery), until all have exited; measured in the same run;
- ``ratio``: ``wall_s / floor_s`` (goal ≤ 1.25);
- ``peak_alive``: the most ``sleep`` commands alive at one instant, from the minders' own
  ``started_at`` (just before the command's spawn) and ``ended_at`` (just after its exit)
  timestamps, so it costs the loop nothing while measuring (goal ≥ 190);
- ``lag_p50_ms`` / ``lag_p99_ms`` / ``lag_max_ms``: lateness of a 10 ms ticker task on the
  engine's trio loop during the burst (``trio.sleep_until(t + 0.01)``, lateness = actual wake
  - intended, goal p99 ≤ 5 ms); ``floor_lag_p99_ms`` is the same ticker beside the bare floor;
- ``lag_p99_first_s_ms`` / ``floor_lag_p99_first_s_ms``: the same p99 over the wakes of the
  first second only, when the starts happen. The whole-run figure also counts the quiet second
  of ``sleep`` and a run that takes longer has more quiet wakes; this one compares like with
  like.
- ``first_start_s`` / ``last_start_s`` / ``last_end_s``: when the first and the last command
  started and the last one ended, in seconds after the burst began (the minders' timestamps).
  The wall time is about ``last_start_s`` + 1 s, so this is where a run's ratio comes from.
  The ``floor_*`` ones stamp each start just before ``trio.run_process`` is called;
- ``scheduler_cpu_s``: the CPU time of the bench's own process (the engine) over the burst;
  ``machine_cpu_s``: the whole machine's busy CPU over the same window (``/proc/stat``), so the
  rest is the minder host, the minders and the commands.
- ``all_running_s``, ``scheduler_cpu_starting_s`` / ``machine_cpu_starting_s``: when the
  first poll found every run handed over (its minder made: the attempt carries the minder's
  pid) or over, and the two CPU figures up to then. The minders start their commands after
  that, so this is when the engine's own part of the start is done. Null when no poll saw it;
- ``file_create_us``: the CPU time one new file cost in the bench's folder before the runs
  (``proc_readings.file_create_us``): each attempt creates four, and on ext4 without a journal that
  cost moves up to fiftyfold with the deletions of the minutes before, and the ratio with it;
- ``launcher_alone_s``, ``launcher_alone_ratio``, ``launcher_alone_failed`` and
  ``launcher_alone_*_start_s``: the same 200 attempts through the local launcher alone (minder
  host and minders, no engine, journal or book), measured right after the engine's run (always
  in that order). Beyond the floor, this is what the minders cost; between it and ``wall_s``,
  what the engine costs. ``launcher_alone_launcher_cpu_s`` / ``_host_cpu_s`` /
  ``_machine_cpu_s`` split that run's CPU: this process (the launcher's side), the minder host,
  and the whole machine (the rest is the minders and the commands). ``native_minder`` says
  whether the minders were the native one (``minder.c``) or forked Python minders
  (``PYSCHED_MINDER_NATIVE=0`` runs the bench with the latter).

The process uses the cyclic collector as ``pysched serve`` does (``tune_for_service``, and the
start-up heap frozen before the burst): with the defaults, a full collection of everything the
imports made (40 ms) landed in the burst.

Run: ``uv run python tests/bench/bench_concurrency.py [--jobs N]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from datetime import UTC, date, datetime
from pathlib import Path

import trio
from figures import percentile
from proc_readings import file_create_us, machine_busy_s, process_cpu_s

from pysched.config import parse_config
from pysched.engine import RunState, open_engine
from pysched.engine.runs import Run
from pysched.gc_pause import freeze_startup_heap, tune_for_service
from pysched.launch.base import AttemptSpec
from pysched.launch.local import LocalLauncher
from pysched.store import Store
from pysched.timing.clock import RealClock

TICK = 0.01


def config_text(jobs: int) -> str:
    lines = ["scheduler:", "  max_running: 250", "jobs:"]
    for i in range(jobs):
        # every job needs a schedule or a dependency: one that never fires during the bench
        lines += [f"  s{i:03d}:", '    schedule: "0 0 1 1 *"', '    command: [sleep, "1"]']
    return "\n".join(lines) + "\n"


class Ticker:
    """A task waking every 10 ms and writing down how late each wake was, in ms."""

    def __init__(self) -> None:
        self.lags: list[float] = []
        self.at: list[float] = []  # when each wake was meant to be (trio time)

    async def run(self) -> None:
        while True:
            intended = trio.current_time() + TICK
            await trio.sleep_until(intended)
            self.lags.append((trio.current_time() - intended) * 1000)
            self.at.append(intended)

    def lags_within(self, begun: float, seconds: float) -> list[float]:
        return [lag for lag, at in zip(self.lags, self.at) if at - begun <= seconds]


def peak_overlap(intervals: list[tuple[float, float]]) -> int:
    """The most intervals holding at one instant (an end at t comes before a start at t)."""
    events = sorted([(start, 1) for start, _ in intervals] + [(end, -1) for _, end in intervals])
    alive = peak = 0
    for _, step in events:
        alive += step
        peak = max(peak, alive)
    return peak


async def floor(jobs: int) -> dict:
    ticker = Ticker()
    intervals: list[tuple[float, float]] = []

    async def one() -> None:
        started = time.time()
        await trio.run_process(["sleep", "1"])
        intervals.append((started, time.time()))

    async with trio.open_nursery() as outer:
        outer.start_soon(ticker.run)
        t0 = time.perf_counter()
        begun = trio.current_time()
        begun_wall = time.time()
        async with trio.open_nursery() as nursery:
            for _ in range(jobs):
                nursery.start_soon(one)
        wall = time.perf_counter() - t0
        outer.cancel_scope.cancel()
    return {
        "wall_s": wall,
        "peak": peak_overlap(intervals),
        "lags": ticker.lags,
        "first_s": ticker.lags_within(begun, 1.0),
        "spans": spans(intervals, begun_wall),
    }


def spans(intervals: list[tuple[float, float]], begun: float) -> dict[str, float]:
    """When the first and the last command started, and the last ended, in s after ``begun``."""
    if not intervals:
        return {}
    starts = [start for start, _ in intervals]
    return {
        "first_start_s": round(min(starts) - begun, 3),
        "last_start_s": round(max(starts) - begun, 3),
        "last_end_s": round(max(end for _, end in intervals) - begun, 3),
    }


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def read_interval(log_dir: Path, run_id: str, job: str, run_date: str) -> tuple[float, float]:
    note = json.loads((log_dir / job / run_date / f"{run_id}.1.note.json").read_text())
    start = datetime.fromisoformat(note["started_at"]).timestamp()
    return start, datetime.fromisoformat(note["ended_at"]).timestamp()


async def launcher_alone(jobs: int, tmp: Path) -> dict:
    """The same 200 attempts started straight through the local launcher (its minder host and
    minders), without the engine: no journal, no book, no events. What this takes beyond the
    floor is the minders' own cost; what the engine takes beyond this is the engine's."""
    log_dir = tmp / "logs"
    launcher = LocalLauncher(log_dir)
    await launcher.prepare()
    today = date.today()
    specs = [
        AttemptSpec(
            run_id=f"s{i:03d}.{today.isoformat()}.1",
            job=f"s{i:03d}",
            run_date=today,
            attempt=1,
            argv=("sleep", "1"),
            scheduled_for=datetime.now(UTC),
        )
        for i in range(jobs)
    ]
    failed = 0

    async def one(spec: AttemptSpec) -> None:
        nonlocal failed
        handle = await launcher.start(spec)
        failed += not (await handle.wait()).succeeded

    host = launcher.minder_host

    def host_cpu_s() -> float:  # nothing to count without a minder host
        return process_cpu_s(host.pid) if host is not None and host.pid is not None else 0.0

    try:
        t0 = time.perf_counter()
        begun_wall = time.time()
        cpu0, machine0, host0 = time.process_time(), machine_busy_s(), host_cpu_s()
        async with trio.open_nursery() as nursery:
            for spec in specs:
                nursery.start_soon(one, spec)
        wall = time.perf_counter() - t0
        cpu, machine = time.process_time() - cpu0, machine_busy_s() - machine0
        host_cpu = host_cpu_s() - host0
    finally:
        launcher.close()
    intervals = await trio.to_thread.run_sync(
        lambda: [read_interval(log_dir, s.run_id, s.job, s.run_date.isoformat()) for s in specs]
    )
    return {
        "wall_s": wall,
        "failed": failed,
        "spans": spans(intervals, begun_wall),
        "cpu": {"launcher_cpu_s": cpu, "host_cpu_s": host_cpu, "machine_cpu_s": machine},
        "native": host is not None and host.native is not None,
    }


def handed_over(run: Run) -> bool:
    """Whether the engine has had the run's minder made: its attempt carries the minder's pid
    (the engine records it once ``launcher.start`` returns), or the run is over. A run is
    ``running`` earlier, from the pass that decides to start it, before the minder exists."""
    attempt = run.current_attempt
    return run.state.finished or (attempt is not None and bool(attempt.info))


async def through_engine(jobs: int, tmp: Path) -> dict:
    config = parse_config(config_text(jobs), tmp / "bench.yaml", {})
    log_dir = tmp / "logs"
    store = Store.open(tmp / "state", sync=True)
    launcher = LocalLauncher(log_dir)
    names = list(config.jobs)
    ticker = Ticker()
    peak_running = 0
    async with open_engine(config, store, clock=RealClock(), launcher=launcher) as engine:
        await trio.sleep(0.3)  # let start-up (watermarks, first commit) finish before the burst
        freeze_startup_heap()  # as `pysched serve` does once it is up
        run_ids: list[str] = []

        async def trigger(name: str) -> None:
            run = await engine.trigger(name)
            run_ids.append(run.run_id)

        async with trio.open_nursery() as outer:
            outer.start_soon(ticker.run)
            t0 = time.perf_counter()
            begun = trio.current_time()
            begun_wall = time.time()
            cpu0 = time.process_time()
            machine0 = machine_busy_s()
            async with trio.open_nursery() as burst:
                for name in names:
                    burst.start_soon(trigger, name)
            cpu_starting = machine_starting = all_running = None
            while True:
                runs = list(engine.book)
                running = sum(1 for run in runs if run.state is RunState.RUNNING)
                peak_running = max(peak_running, running)
                if cpu_starting is None and len(runs) == jobs and all(map(handed_over, runs)):
                    cpu_starting = time.process_time() - cpu0
                    all_running = time.perf_counter() - t0
                    machine_starting = machine_busy_s() - machine0
                if all(run.state.finished for run in runs) and len(runs) == jobs:
                    break
                await trio.sleep(TICK)
            wall = time.perf_counter() - t0
            cpu = time.process_time() - cpu0
            machine = machine_busy_s() - machine0
            outer.cancel_scope.cancel()
        states: dict[str, int] = {}
        for run in engine.book:
            states[run.state.value] = states.get(run.state.value, 0) + 1
        dates = {run.run_id: (run.job, run.run_date.isoformat()) for run in engine.book}
        error = engine.error
    launcher.close()  # its minder host, idle now: not left beside the launcher-alone run
    intervals = await trio.to_thread.run_sync(
        lambda: [read_interval(log_dir, rid, *dates[rid]) for rid in run_ids]
    )
    return {
        "wall_s": wall,
        "states": states,
        "peak": peak_overlap(intervals),
        "peak_running": peak_running,
        "lags": ticker.lags,
        "first_s": ticker.lags_within(begun, 1.0),
        "spans": spans(intervals, begun_wall),
        "cpu_s": cpu,
        "machine_s": machine,
        "cpu_starting_s": cpu_starting,
        "all_running_s": all_running,
        "machine_starting_s": machine_starting,
        "error": error,
    }


async def main_async(jobs: int) -> None:
    print(f"{jobs} jobs of `sleep 1`, ready at once, real clock, disk journal with fsync")
    bare = await floor(jobs)
    print(
        f"floor (bare trio.run_process x{jobs}): {bare['wall_s']:.3f} s, "
        f"peak {bare['peak']} alive, ticker p99 {percentile(bare['lags'], 0.99):.1f} ms"
    )
    # one folder for both, deleted only after both: deleting thousands of files makes new
    # ones dearer for a while on some file systems (see docs/benchmarks.md)
    with tempfile.TemporaryDirectory() as tmp:
        create_us = file_create_us(Path(tmp) / "probe")
        print(f"a new file in the bench's folder costs {create_us:.0f} µs of CPU")
        (Path(tmp) / "engine").mkdir()
        (Path(tmp) / "launcher").mkdir()
        result = await through_engine(jobs, Path(tmp) / "engine")
        alone = await launcher_alone(jobs, Path(tmp) / "launcher")
    lags = result["lags"]
    p50, p99, worst = percentile(lags, 0.5), percentile(lags, 0.99), max(lags, default=0.0)
    print(
        f"engine: {result['wall_s']:.3f} s until all finished; states {result['states']}; "
        f"error {result['error']}"
    )
    print(
        f"engine: peak {result['peak']} commands alive (minder timestamps), "
        f"peak {result['peak_running']} runs in state running (book, polled every 10 ms)"
    )
    print(
        f"ticker during the burst: {len(lags)} wakes, p50 {p50:.2f} ms, p99 {p99:.2f} ms, "
        f"max {worst:.2f} ms, mean {statistics.fmean(lags) if lags else 0:.2f} ms"
    )
    print(
        f"launcher alone (no engine): {alone['wall_s']:.3f} s, {alone['failed']} failed, "
        f"last command started at {alone['spans'].get('last_start_s')} s"
    )
    ratio = result["wall_s"] / bare["wall_s"]
    goals = [
        ("wall ≤ 1.25 × floor", ratio <= 1.25, f"ratio {ratio:.3f}"),
        ("peak alive ≥ 190", result["peak"] >= 190, f"peak {result['peak']}"),
        ("ticker p99 ≤ 5 ms", p99 <= 5, f"p99 {p99:.2f} ms"),
    ]
    for goal, met, figure in goals:
        print(f"goal {goal}: {'met' if met else 'NOT met'} ({figure})")
    print(
        json.dumps(
            {
                "jobs": jobs,
                "wall_s": round(result["wall_s"], 3),
                "floor_s": round(bare["wall_s"], 3),
                "ratio": round(ratio, 3),
                "peak_alive": result["peak"],
                "peak_running_book": result["peak_running"],
                "lag_p50_ms": round(p50, 2),
                "lag_p99_ms": round(p99, 2),
                "lag_max_ms": round(worst, 2),
                "floor_peak_alive": bare["peak"],
                "floor_lag_p99_ms": round(percentile(bare["lags"], 0.99), 2),
                "lag_p99_first_s_ms": round(percentile(result["first_s"], 0.99), 2),
                "floor_lag_p99_first_s_ms": round(percentile(bare["first_s"], 0.99), 2),
                "succeeded": result["states"].get("succeeded", 0),
                **result["spans"],
                "scheduler_cpu_s": round(result["cpu_s"], 3),
                "machine_cpu_s": round(result["machine_s"], 3),
                "scheduler_cpu_starting_s": _rounded(result["cpu_starting_s"]),
                "machine_cpu_starting_s": _rounded(result["machine_starting_s"]),
                "all_running_s": _rounded(result["all_running_s"]),
                "launcher_alone_s": round(alone["wall_s"], 3),
                "launcher_alone_ratio": round(alone["wall_s"] / bare["wall_s"], 3),
                "launcher_alone_failed": alone["failed"],
                "native_minder": alone["native"],
                **{f"launcher_alone_{key}": round(v, 3) for key, v in alone["cpu"].items()},
                **{f"launcher_alone_{key}": value for key, value in alone["spans"].items()},
                **{f"floor_{key}": value for key, value in bare["spans"].items()},
                "file_create_us": round(create_us),
            }
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=200)
    args = parser.parse_args()
    tune_for_service()  # the collector's thresholds `pysched serve` uses
    trio.run(main_async, args.jobs)


if __name__ == "__main__":
    main()
