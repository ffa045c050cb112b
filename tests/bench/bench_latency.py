"""Firing latency on the real clock: from the instant a run is asked for to its command's start.

What is measured, exactly: cron fires at most once a minute, so instead of waiting for minute
boundaries this bench drives the engine-side path with ``engine.trigger``. For each of 100
firings, spaced 100 ms apart, it records ``T = time.time()`` immediately before
``await engine.trigger("tick")``, and the command (``date +%s.%N``, argv, no shell) prints the
wall-clock instant at which it is executing into the attempt's ``.out`` file. Latency is that
printed instant minus ``T``: it covers the trigger call into the engine's loop, creating the run,
the dependency check, the slot, the journal commit with fsync (write-ahead: the run is durable
as running before anything is spawned), the spawn of the minder in a worker thread, the
minder's own Python start-up, and the exec of ``date``. It does NOT cover the firing task's
wake-up from ``clock.sleep_until`` for a cron instant (the ``RealClock`` sleeps with
``trio.sleep``, whose lateness ``bench_concurrency.py``'s ticker shows).

Figures (last line, JSON): ``p50_ms``, ``p99_ms``, ``max_ms`` of that latency (goal p99 ≤ 20 ms),
``firings`` (100); and, to show where the time goes, ``minder_p50_ms`` (T to the minder's
``started_at``, taken just before it spawns the command) and ``trigger_p50_ms`` (T to
``engine.trigger`` returning, i.e. the run durable in the journal).

Run: ``uv run python tests/bench/bench_latency.py [--firings N]``.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from datetime import datetime
from pathlib import Path

import trio
from figures import percentile

from pysched.config import parse_config
from pysched.engine import open_engine
from pysched.launch.local import LocalLauncher
from pysched.store import Store
from pysched.timing.clock import RealClock

SPACING = 0.1
CONFIG = """\
jobs:
  tick:
    schedule: "0 0 1 1 *"   # never fires during the bench: only the triggers run it
    overlap: allow          # a slow attempt must not hold the next firing back
    command: [date, "+%s.%N"]
"""


async def fire(firings: int, tmp: Path) -> dict:
    config = parse_config(CONFIG, tmp / "bench.yaml", {})
    log_dir = tmp / "logs"
    store = Store.open(tmp / "state", sync=True)
    asked: list[tuple[str, str, float, float]] = []  # run id, run date, T, trigger returned
    async with open_engine(
        config, store, clock=RealClock(), launcher=LocalLauncher(log_dir)
    ) as engine:
        await trio.sleep(0.3)  # let start-up (watermarks, first commit) finish
        next_at = trio.current_time()
        for _ in range(firings):
            next_at += SPACING
            await trio.sleep_until(next_at)
            t = time.time()
            run = await engine.trigger("tick")
            asked.append((run.run_id, run.run_date.isoformat(), t, time.time()))
        with trio.fail_after(30):
            while not all(run.state.finished for run in engine.book):
                await trio.sleep(0.01)
        states: dict[str, int] = {}
        for run in engine.book:
            states[run.state.value] = states.get(run.state.value, 0) + 1
    command: list[float] = []
    minder: list[float] = []
    trigger: list[float] = []
    for run_id, day, t, returned in asked:
        folder = log_dir / "tick" / day
        printed = float((folder / f"{run_id}.1.out").read_text().strip())
        started = json.loads((folder / f"{run_id}.1.spawned").read_text())["started_at"]
        command.append((printed - t) * 1000)
        minder.append((datetime.fromisoformat(started).timestamp() - t) * 1000)
        trigger.append((returned - t) * 1000)
    return {"command": command, "minder": minder, "trigger": trigger, "states": states}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--firings", type=int, default=100)
    args = parser.parse_args()
    print(
        f"{args.firings} triggers of `date +%s.%N`, {SPACING * 1000:.0f} ms apart, real clock, "
        "disk journal with fsync, local launcher"
    )
    with tempfile.TemporaryDirectory() as tmp:
        result = trio.run(fire, args.firings, Path(tmp))
    print(f"states: {result['states']}")
    for name, key in [
        ("T → trigger returned (run journaled)", "trigger"),
        ("T → minder started_at", "minder"),
        ("T → command running", "command"),
    ]:
        values = result[key]
        print(
            f"{name}: p50 {percentile(values, 0.5):.1f} ms, p99 {percentile(values, 0.99):.1f} "
            f"ms, max {max(values):.1f} ms"
        )
    latency = result["command"]
    p99 = percentile(latency, 0.99)
    print(f"goal p99 ≤ 20 ms: {'met' if p99 <= 20 else 'NOT met'} ({p99:.1f} ms)")
    print(
        json.dumps(
            {
                "p50_ms": round(percentile(latency, 0.5), 1),
                "p99_ms": round(p99, 1),
                "max_ms": round(max(latency), 1),
                "firings": args.firings,
                "minder_p50_ms": round(percentile(result["minder"], 0.5), 1),
                "trigger_p50_ms": round(percentile(result["trigger"], 0.5), 1),
            }
        )
    )


if __name__ == "__main__":
    main()
