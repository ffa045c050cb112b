"""Memory a finished run holds in a running engine (not one read back at a restart).

50 jobs fire every minute on a fake clock (the fake launcher, a disk journal without fsync)
for an hour, so the event ring (10,000 events) is full; then ``tracemalloc`` measures the next
hour, 3,000 runs more. The fake launcher keeps every start it made (for tests to look at): that
share is measured apart by dropping its records, and taken out.

Figures (last line, JSON):
- ``bytes_per_finished_run``: what the engine holds for each finished run created while it
  ran, the fake launcher's share taken out;
- ``fake_launcher_bytes_per_run``: the share taken out;
- ``runs``: how many runs the engine held at the end.

Compare ``bytes_per_run`` of ``bench_engine.py`` (a run read back at a restart).

Run: ``uv run python tests/bench/bench_live_memory.py``.
"""

from __future__ import annotations

import gc
import json
import tempfile
import tracemalloc
from datetime import UTC, datetime, timedelta
from pathlib import Path

import trio
import trio.testing

from pysched.config import parse_config
from pysched.engine import open_engine
from pysched.store import Store
from pysched.testing import FakeLauncher
from pysched.timing import FakeClock

JOBS = 50
CONFIG = "scheduler: {timezone: UTC, history_days: 90}\njobs:\n" + "".join(
    f'  j{i}:\n    schedule: "* * * * *"\n    command: x\n' for i in range(JOBS)
)


async def measure() -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        clock = FakeClock(datetime(2026, 10, 19, tzinfo=UTC))
        launcher = FakeLauncher(clock)
        config = parse_config(CONFIG, Path(tmp) / "pysched.yaml", {})
        store = Store.open(Path(tmp) / "state", sync=False)
        async with open_engine(config, store, clock=clock, launcher=launcher, seed=1) as engine:

            async def minutes(count: int) -> None:
                for _ in range(count):
                    await clock.advance(timedelta(minutes=1))
                    await engine.settle()

            tracemalloc.start()  # from the start: what the runs free later must count too
            await minutes(60)  # the event ring fills
            gc.collect()
            first, runs_first = tracemalloc.get_traced_memory()[0], len(engine.book)
            await minutes(60)
            gc.collect()
            second, runs_second = tracemalloc.get_traced_memory()[0], len(engine.book)
            launcher.started.clear()
            launcher._processes.clear()  # pyright: ignore[reportPrivateUsage]
            gc.collect()
            third = tracemalloc.get_traced_memory()[0]
            tracemalloc.stop()
    added = runs_second - runs_first
    fake = (second - third) / runs_second
    return {
        "bytes_per_finished_run": round((second - first) / added - fake),
        "fake_launcher_bytes_per_run": round(fake),
        "runs": runs_second,
    }


def main() -> None:
    print(f"{JOBS} jobs firing every minute for two hours, fake clock and launcher")
    figures = trio.run(measure, clock=trio.testing.MockClock(autojump_threshold=0))
    print(
        f"a finished run holds {figures['bytes_per_finished_run']} bytes "
        f"(the fake launcher's {figures['fake_launcher_bytes_per_run']} taken out)"
    )
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
