"""What the benches share to turn samples into figures, and to read the machine beside them."""

from __future__ import annotations

import os
import time
from pathlib import Path


def percentile(values: list[float], q: float) -> float:
    """The ``q`` quantile of ``values`` (nearest rank); NaN for no values."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def machine_busy_s() -> float:
    """CPU seconds the whole machine has been busy since boot (``/proc/stat``: all but idle
    and iowait)."""
    with open("/proc/stat") as f:
        ticks = [int(field) for field in f.readline().split()[1:]]
    return (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")


def file_create_us(folder: Path, count: int = 100) -> float:
    """Mean CPU time, in microseconds, to create one empty file in a new folder ``folder``
    (``count`` of them, left in place for the bench's own clean-up: deleting them here would
    slow the next creations down, see below).

    A bench that starts attempts creates four files for each, so this is part of what a burst
    costs the machine. It moves a lot: on an ext4 file system without a journal, the kernel
    skips the inode numbers freed in the last minute (five more while their block is unwritten)
    and checks each in turn, so in a block group where thousands of files were just deleted (as
    every bench and test run does with its temporary folder) a creation has been measured at
    0.2-1.2 ms against 25 us in a fresh one (``docs/benchmarks.md``, 2026-12-02, night).
    """
    folder.mkdir(parents=True)
    start = time.thread_time()
    for number in range(count):
        os.close(os.open(folder / f"probe-{number}", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    return (time.thread_time() - start) / count * 1e6
