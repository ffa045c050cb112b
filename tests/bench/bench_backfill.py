"""A long backfill of one job under ``overlap: queue``, on the fake clock.

``backfill`` makes one run per date; only one may run at a time, the others wait their turn.
Each attempt takes a minute of fake time, so the backfill is worked off one run a minute. The
figures say what the waiting costs: journal records written (``records``, and per run), and
the CPU time of the whole backfill (``cpu_s``). Runs that wait are parked per job and their
reason names the job, so both grow with the number of dates, not with its square (until
2026-12-01 every waiting run was looked at, and its reason rewritten and journaled, each time
one finished: 1,000 dates wrote 502,607 records).

Run: ``uv run python tests/bench/bench_backfill.py [--dates N]`` (default 3,660, the most one
backfill may ask for). The last line is a JSON object of named figures.
"""

from __future__ import annotations

import argparse
import json
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import trio
import trio.testing

from pysched.config import parse_config
from pysched.engine import RunState, open_engine
from pysched.store import MemoryStore
from pysched.testing import FakeLauncher
from pysched.timing import FakeClock

CONFIG = """
scheduler: {history_days: 4000}
jobs:
  load:
    schedule: "0 3 1 1 *"
    command: echo load {run_date}
"""
START = datetime(2026, 10, 19, 12, tzinfo=UTC)


async def backfill(dates: int) -> dict[str, float]:
    config = parse_config(CONFIG, Path("bench.yaml"), {})
    clock = FakeClock(START)
    launcher = FakeLauncher(clock, default_duration=timedelta(minutes=1))
    store = MemoryStore()
    cpu = time.process_time()
    async with open_engine(config, store, clock=clock, launcher=launcher) as engine:
        last = START.date() - timedelta(days=1)
        await engine.backfill("load", last - timedelta(days=dates - 1), last)
        await engine.settle()
        for _ in range(dates + 1):
            await clock.advance(timedelta(minutes=1))
            await engine.settle()
        succeeded = len(engine.book.runs(job="load", state=RunState.SUCCEEDED))
        records = store.stats.records
    return {
        "dates": dates,
        "succeeded": succeeded,
        "records": records,
        "records_per_run": round(records / dates, 2),
        "cpu_s": round(time.process_time() - cpu, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dates", type=int, default=3_660)
    args = parser.parse_args()
    figures = trio.run(backfill, args.dates, clock=trio.testing.MockClock(autojump_threshold=0))
    print(
        f"backfill of {figures['dates']:,} dates of one job (overlap: queue, one-minute attempts): "
        f"{figures['succeeded']:,} succeeded, {figures['records']:,} journal records "
        f"({figures['records_per_run']} a run), {figures['cpu_s']} s of CPU"
    )
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
