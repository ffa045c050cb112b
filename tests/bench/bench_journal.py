"""Benchmark: durable records per second through the journal, with group commit.

Run it with ``python tests/bench/bench_journal.py`` (or ``uv run python ...``). In a temporary
dir on the same disk as the system's temp dir it measures, each for a fixed time:

- ``c1``, ``c10``, ``c100``: 1, 10 and 100 concurrent committers, each committing one record
  at a time in a loop, with ``sync=True`` (every commit waits for its fsync);
- ``fsync_each``: the floor without group commit, a plain loop writing and fsyncing each record;
- ``no_fsync``: the same 100 committers with ``sync=False`` (written to the OS, never synced),
  and ``no_fsync_c1``: one committer so (no task switching at all).

Each record carries about 300 bytes of data, like a run's record. It prints human lines and,
as its last line, a JSON object of named figures: the rates (``*_per_s``), the mean records
per fsync with 100 committers, their mean commit latency, and ``c100_vs_no_fsync``, the durable
rate with 100 committers over the no-fsync rate of the same committers. The goal is at least
0.5: group commit should make durability cost at most half the throughput.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import trio

from pysched.store import Record, Store
from pysched.store.lines import encode_data, encode_line

SECONDS = 1.5
GOAL = 0.5


def record(n: int) -> Record:
    """A run-like record, about 300 bytes of JSON data."""
    return Record(
        type="run",
        data={
            "id": f"warehouse_load_{n % 500:03d}.2026-10-19.1",
            "job": f"warehouse_load_{n % 500:03d}",
            "run_date": "2026-10-19",
            "state": "running",
            "reason": "dependencies met; slot free in pool warehouse",
            "attempt": 1,
            "scheduled_at": "2026-10-19T02:00:00+00:00",
            "started_at": "2026-10-19T02:00:03.412000+00:00",
            "host": "sched-01",
            "pid": 40000 + n % 20000,
            "tries_left": 2,
            "pool": "warehouse",
        },
    )


async def committers(
    state_dir: Path, count: int, *, sync: bool, seconds: float
) -> tuple[float, dict[str, Any]]:
    """Records per second that ``count`` committers get durable in ``seconds``."""
    store = Store.open(state_dir, sync=sync)
    records = [record(n) for n in range(1000)]
    done = 0
    deadline = time.perf_counter() + seconds

    async def loop(offset: int) -> None:
        nonlocal done
        n = offset
        while time.perf_counter() < deadline:
            await store.commit([records[n % 1000]])
            n += count
            done += 1

    started = time.perf_counter()
    async with trio.open_nursery() as nursery:
        for offset in range(count):
            nursery.start_soon(loop, offset)
    elapsed = time.perf_counter() - started
    stats = store.stats
    store.close()
    return done / elapsed, {
        "records_per_fsync": stats.records_per_fsync,
        "mean_commit_ms": 1000 * stats.commit_seconds / max(1, stats.commit_count),
        "max_batch": stats.max_batch,
    }


def fsync_each(path: Path, seconds: float) -> float:
    """A plain loop: write one record's line and fsync it, as a journal without batching."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    data_json = encode_data(record(0).data)
    done = 0
    deadline = time.perf_counter() + seconds
    started = time.perf_counter()
    while time.perf_counter() < deadline:
        os.write(fd, encode_line(done + 1, "run", data_json))
        os.fdatasync(fd)
        done += 1
    elapsed = time.perf_counter() - started
    os.close(fd)
    return done / elapsed


async def run(state_dir: Path, count: int, sync: bool) -> tuple[float, dict[str, Any]]:
    return await committers(state_dir, count, sync=sync, seconds=SECONDS)


def main() -> None:
    figures: dict[str, Any] = {}
    size = len(encode_line(1, "run", encode_data(record(0).data)))
    print(f"record line: {size} bytes; each run lasts {SECONDS} s", file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="bench-journal-") as tmp:
        root = Path(tmp)
        figures["fsync_each_per_s"] = round(fsync_each(root / "plain.jsonl", SECONDS))
        print(f"fsync each record (plain loop): {figures['fsync_each_per_s']:>8,}/s")
        for count in (1, 10, 100):
            rate, extra = trio.run(run, root / f"c{count}", count, True)
            figures[f"c{count}_per_s"] = round(rate)
            print(
                f"sync=True, {count:>3} committer(s):     {round(rate):>8,}/s  "
                f"({extra['records_per_fsync']:.1f} records/fsync, "
                f"mean commit {extra['mean_commit_ms']:.2f} ms, max batch {extra['max_batch']})"
            )
            if count == 100:
                figures["records_per_fsync_c100"] = round(extra["records_per_fsync"], 1)
                figures["mean_commit_ms_c100"] = round(extra["mean_commit_ms"], 2)
        rate, _ = trio.run(run, root / "nosync1", 1, False)
        figures["no_fsync_c1_per_s"] = round(rate)
        print(f"sync=False,   1 committer:       {round(rate):>8,}/s")
        rate, _ = trio.run(run, root / "nosync100", 100, False)
        figures["no_fsync_per_s"] = round(rate)
        print(f"sync=False, 100 committers:      {round(rate):>8,}/s")
    ratio = figures["c100_per_s"] / figures["no_fsync_per_s"]
    figures["c100_vs_no_fsync"] = round(ratio, 2)
    figures["c100_vs_fsync_each"] = round(figures["c100_per_s"] / figures["fsync_each_per_s"], 1)
    figures["goal_ratio"] = GOAL
    verdict = "met" if ratio >= GOAL else "NOT met"
    print(f"100 durable committers: {ratio:.0%} of the no-fsync rate (goal {GOAL:.0%}: {verdict})")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
