"""How steady this machine's CPU is: the same small piece of work, timed over and over.

Nothing of pysched runs here. Read the other benches' tails against it: when a fixed piece of
work (a Python loop of about 0.1 ms) sometimes takes ten times as long in CPU time, with
nothing else running, a scheduler's p99 of a few milliseconds cannot be steadier than the
machine under it. On the machine of docs/benchmarks.md (a 2-core virtual machine) the p99.9
chunk took 10-13 times the median, CPU time included: the virtual CPU itself runs slower for
moments, which no process on it can see or avoid.

Figures (last line, JSON): ``chunk_p50_us``, ``chunk_p99_us``, ``chunk_p999_us``,
``chunk_max_us`` (CPU time of the calling thread per chunk), ``slow_chunks_pct`` (chunks over 5
times the median), ``chunks``, and ``wall_over_cpu`` (wall time over CPU time in all: above 1
when the process waited for a core).

Run: ``uv run python tests/bench/bench_machine.py [--seconds S]``.
"""

from __future__ import annotations

import argparse
import json
import time

from figures import percentile


def chunk() -> int:
    total = 0
    for i in range(2_000):
        total += i * i
    return total


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=10.0)
    args = parser.parse_args()
    cpu: list[float] = []
    wall_start, cpu_start = time.perf_counter(), time.thread_time()
    end = wall_start + args.seconds
    while time.perf_counter() < end:
        before = time.thread_time()
        chunk()
        cpu.append((time.thread_time() - before) * 1e6)
    wall_over_cpu = (time.perf_counter() - wall_start) / (time.thread_time() - cpu_start)
    median = percentile(cpu, 0.5)
    slow = sum(1 for value in cpu if value > 5 * median)
    figures = {
        "chunks": len(cpu),
        "chunk_p50_us": round(median),
        "chunk_p99_us": round(percentile(cpu, 0.99)),
        "chunk_p999_us": round(percentile(cpu, 0.999)),
        "chunk_max_us": round(max(cpu)),
        "slow_chunks_pct": round(100 * slow / len(cpu), 2),
        "wall_over_cpu": round(wall_over_cpu, 3),
    }
    print(
        f"{len(cpu):,} chunks of the same work over {args.seconds:.0f} s: CPU time p50 "
        f"{figures['chunk_p50_us']} us, p99 {figures['chunk_p99_us']} us, p99.9 "
        f"{figures['chunk_p999_us']} us, max {figures['chunk_max_us']} us; "
        f"{figures['slow_chunks_pct']}% over 5 x the median"
    )
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
