"""The engine over one fake day with 10,000 jobs and a disk journal with fsync.

Figures (last line, JSON):
- ``lifecycles_per_s``: runs taken from firing to final state per second of wall time
  (goal ≥ 2,000 on the 2-core machine);
- ``records_per_fsync``: journal records carried by each fsync (group commit at work);
- ``bytes_per_run``: memory per live run as the engine holds it after a restart (goal ≤ 4 KB);
- ``restart_s``: opening the store and replaying the day's journal (goal ≤ 3 s);
- ``restart_30d_s``: the same after 30 simulated days (runs older than ``history_days`` leave
  the live state at snapshot time; goal ≤ 3 s).

Run: ``uv run python tests/bench/bench_engine.py [--jobs N]``.
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import tempfile
import time
import tracemalloc
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import trio
import trio.testing

from pysched.config import Config, parse_config
from pysched.engine import open_engine
from pysched.engine.journal_state import replay, snapshot_records
from pysched.gc_pause import tune_for_service
from pysched.store import Record, Store
from pysched.testing import FakeLauncher
from pysched.timing import FakeClock

DAY = datetime(2026, 10, 19, tzinfo=UTC)


def generated(jobs: int, history_days: int, seed: int = 3) -> tuple[str, dict[str, list[int]]]:
    """Chains of five (one scheduled head, four dependency-only), every tenth chain head
    waiting on two other heads (fan-in), a third of the jobs in pools, 10% failing once."""
    rng = random.Random(seed)
    lines = [
        "scheduler:",
        "  max_running: 200",
        f"  history_days: {history_days}",
        "pools: {db: 20, warehouse: 5, api: 50}",
        "defaults:",
        "  retries: {count: 1, backoff: {initial: 30s, factor: 2, max: 5m}}",
        "jobs:",
    ]
    outcomes: dict[str, list[int]] = {}
    for i in range(jobs):
        name = f"j{i:05d}"
        lines.append(f"  {name}:")
        lines.append(f"    command: run {name} {{run_date}}")
        if i % 5 == 0:
            # a nightly batch: every chain head fires between 01:00 and 02:59
            lines.append(f'    schedule: "{rng.randrange(60)} {rng.choice([1, 2])} * * *"')
            if i % 50 == 0 and i >= 50:
                lines.append(f"    depends_on: [{{job: j{i - 50:05d}, on: done}}, j{i - 25:05d}]")
        else:
            lines.append(f"    depends_on: [j{i - 1:05d}]")
        if i % 3 == 0:
            lines.append(f"    pool: {rng.choice(['db', 'warehouse', 'api'])}")
        if rng.random() < 0.10:
            outcomes[name] = [1, 0]
    return "\n".join(lines) + "\n", outcomes


async def one_day(config: Config, outcomes: dict[str, list[int]], state_dir: Path) -> dict:
    # Virtual time jumps to the next deadline only once the engine has folded everything due
    # (an "autojump" that waits for idle): with a disk journal, fsyncs run in worker threads,
    # and trio's own autojump would let virtual time race ahead while they run.
    mock = trio.lowlevel.current_clock()
    assert isinstance(mock, trio.testing.MockClock)
    clock = FakeClock(DAY)
    launcher = FakeLauncher(clock, outcomes=outcomes, default_duration=timedelta(minutes=2))
    store = Store.open(state_dir, sync=True)
    started = time.perf_counter()
    async with open_engine(config, store, clock=clock, launcher=launcher, seed=1) as engine:
        end = DAY + timedelta(days=1)
        while clock.now() < end:
            await engine.settle()
            if all(run.state.finished for run in engine.book) and clock.now() > DAY.replace(hour=3):
                break  # the night's batch is done
            wait = trio.lowlevel.current_statistics().seconds_to_next_deadline
            mock.jump(min(wait, (end - clock.now()).total_seconds()))
        wall = time.perf_counter() - started
        finished = sum(1 for run in engine.book if run.state.finished)
        states: dict[str, int] = {}
        for run in engine.book:
            states[run.state.value] = states.get(run.state.value, 0) + 1
        stats = store.stats
    return {
        "wall_s": wall,
        "runs": len(engine.book),
        "finished": finished,
        "states": states,
        "attempts": len(launcher.started),
        "records": stats.records,
        "fsyncs": stats.fsyncs,
    }


def restart(state_dir: Path) -> tuple[float, int]:
    gc.collect()
    started = time.perf_counter()
    store = Store.open(state_dir, sync=True)
    state = replay(store.records())
    elapsed = time.perf_counter() - started
    store.close()
    return elapsed, len(state.book)


def bytes_per_run(state_dir: Path) -> float:
    store = Store.open(state_dir, sync=True)
    records = list(store.records())
    store.close()
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    state = replay(records)
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    return (after - before) / max(len(state.book), 1)


async def grow_history(state_dir: Path, days: int, history_days: int) -> None:
    """Append ``days`` more days of the first day's runs (dates shifted, two records per run,
    as a run changes several times), snapshotting with retention as the engine does, so the
    journal holds a month of history."""
    store = Store.open(state_dir, sync=False)
    state = replay(store.records())
    template = [run.to_data() for run in state.book]
    for day in range(1, days + 1):
        shift = timedelta(days=day)
        records: list[Record] = []
        for data in template:
            run_date = date.fromisoformat(data["date"]) + shift
            new = {**data, "date": run_date.isoformat()}
            new["id"] = f"{data['job']}.{new['date']}.{data['n']}"
            records += [Record(type="run", data=new), Record(type="run", data=new)]
        for start in range(0, len(records), 5_000):
            await store.commit(records[start : start + 5_000])
        for record in records:
            state.fold(record)
        state.build_book()
        if store.wants_snapshot:
            now = DAY + shift + timedelta(days=1)
            live, archived, gone = snapshot_records(state, now=now, history_days=history_days)
            for run in gone:
                state.book.remove(run)
            await store.write_snapshot(live, archived)
    store.close()


def main() -> None:
    tune_for_service()  # as `pysched serve` does
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--history-days", type=int, default=7)
    args = parser.parse_args()
    text, outcomes = generated(args.jobs, args.history_days)
    print(f"{args.jobs:,} jobs: chains of five, fan-in every tenth chain, pools, 10% retried")
    config = parse_config(text, Path("bench.yaml"), {})
    with tempfile.TemporaryDirectory() as tmp:
        state_dir = Path(tmp) / "state"
        day = trio.run(one_day, config, outcomes, state_dir, clock=trio.testing.MockClock())
        rate = day["finished"] / day["wall_s"]
        print(
            f"one fake day: {day['runs']:,} runs ({day['finished']:,} finished, "
            f"{day['attempts']:,} attempts) in {day['wall_s']:.1f} s: {rate:,.0f} lifecycles/s"
        )
        print(f"states: {day['states']}")
        per_fsync = day["records"] / max(day["fsyncs"], 1)
        records, fsyncs = day["records"], day["fsyncs"]
        print(f"journal: {records:,} records in {fsyncs:,} fsyncs ({per_fsync:.1f}/fsync)")
        restart_s, live = restart(state_dir)
        print(f"restart after one day: {restart_s:.2f} s for {live:,} live runs")
        per_run = bytes_per_run(state_dir)
        print(f"memory: {per_run:,.0f} bytes per live run")
        trio.run(grow_history, state_dir, 29, args.history_days)
        restart_30, live_30 = restart(state_dir)
        print(
            f"restart after 30 days (history_days={args.history_days}): {restart_30:.2f} s for "
            f"{live_30:,} live runs"
        )
    print(
        json.dumps(
            {
                "jobs": args.jobs,
                "runs": day["runs"],
                "lifecycles_per_s": round(rate),
                "records_per_fsync": round(per_fsync, 1),
                "bytes_per_run": round(per_run),
                "restart_s": round(restart_s, 2),
                "restart_30d_s": round(restart_30, 2),
                "live_runs_30d": live_30,
            }
        )
    )


if __name__ == "__main__":
    main()
