"""What the benches read of the machine and its processes beside their figures: CPU time, the
wait for a core, and what a new file costs. Linux only (``/proc``); a reading that cannot be
made is NaN, so a figure built on it says so instead of failing the bench."""

from __future__ import annotations

import os
import time
from pathlib import Path

from pysched.launch.minder import proc_stat

_TICK = os.sysconf("SC_CLK_TCK")


def process_cpu_s(pid: int) -> float:
    """User + system CPU seconds process ``pid`` has used so far (``/proc/PID/stat``)."""
    fields = proc_stat(pid)  # [0] is the file's field 3: utime and stime are [11] and [12]
    if fields is None:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / _TICK


def machine_busy_s() -> float:
    """CPU seconds all the machine's cores have spent working since boot (``/proc/stat``: user,
    nice, system, irq and softirq; not idle, iowait, or steal, which is the hypervisor running
    someone else)."""
    try:
        with open("/proc/stat") as f:
            ticks = [int(field) for field in f.readline().split()[1:]]
    except (OSError, ValueError):
        return float("nan")
    user, nice, system, _idle, _iowait, irq, softirq = ticks[:7]
    return (user + nice + system + irq + softirq) / _TICK


def queued_ns(schedstat: bytes | str) -> int:
    """The run-queue wait in a thread's ``schedstat`` text (its second field): nanoseconds the
    thread has spent ready to run but waiting for a core, so far."""
    return int(schedstat.split()[1])


def queued_s(pid: int) -> float:
    """Seconds the main thread of process ``pid`` (a trio program's loop) has waited for a core
    so far (``/proc/PID/task/PID/schedstat``)."""
    try:
        return queued_ns(Path(f"/proc/{pid}/task/{pid}/schedstat").read_text()) / 1e9
    except (OSError, IndexError, ValueError):
        return float("nan")


def file_create_us(folder: Path, count: int = 100) -> float:
    """Mean CPU time, in µs, to create one empty file in a new folder ``folder`` (``count`` of
    them, left in place for the bench's own clean-up: deleting them here would make the next
    creations dearer, see below).

    A bench that starts attempts creates four files for each, so this is part of what a burst
    costs the machine, and it moves a lot: on ext4 without a journal, the kernel skips the inode
    numbers freed in the last minute (six minutes while their block is unwritten), checking each in
    turn, so in a block group where thousands of files were just deleted (as every bench and
    test run does with its temporary folder) a creation has cost up to 1,258 µs of CPU against
    25 µs in a fresh one (``docs/benchmarks.md``, 2026-12-02, night).
    """
    folder.mkdir(parents=True)
    start = time.thread_time()
    for number in range(count):
        os.close(os.open(folder / f"probe-{number}", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    return (time.thread_time() - start) / count * 1e6
