"""A chain of 40 jobs run end to end through the engine with real minders.

``c00`` runs ``true`` and has a schedule that never fires during the bench; ``c01`` .. ``c39``
are dependency-only (each depends on the one before) and run ``true``. Triggering ``c00``
creates the whole chain at once (dependency-only runs are made with their upstream's run); each
link then starts only once the one before has succeeded. Real clock, disk journal with fsync,
local launcher (each attempt a ``python -I -S minder.py -`` process).

Figures (last line, JSON):
- ``wall_s``: from the trigger until the book shows ``c39`` succeeded (polled every 2 ms;
  goal ≤ 1 s);
- ``per_link_ms``: ``wall_s`` / 40, the cost of one link (engine commit, minder start-up,
  the command, the minder's note, the engine noticing);
- ``minder_ms_p50``: the median span from a minder's ``started_at`` to its ``ended_at``, read
  from its note (the command itself plus the minder's own bookkeeping around it).

Run: ``uv run python tests/bench/bench_chain.py [--jobs N]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from datetime import datetime
from pathlib import Path

import trio

from pysched.config import parse_config
from pysched.engine import open_engine
from pysched.launch.local import LocalLauncher
from pysched.store import Store
from pysched.timing.clock import RealClock


def config_text(jobs: int) -> str:
    lines = [
        "scheduler:",
        "  max_running: 50",
        "jobs:",
        "  c00:",
        '    schedule: "0 0 1 1 *"',  # never fires during the bench: only the trigger runs it
        "    command: [true]",
    ]
    for i in range(1, jobs):
        lines += [f"  c{i:02d}:", f"    depends_on: [c{i - 1:02d}]", "    command: [true]"]
    return "\n".join(lines) + "\n"


def minder_span_ms(note: Path) -> float:
    data = json.loads(note.read_text())
    started = datetime.fromisoformat(data["started_at"])
    return (datetime.fromisoformat(data["ended_at"]) - started).total_seconds() * 1000


async def chain(jobs: int, tmp: Path) -> dict:
    config = parse_config(config_text(jobs), tmp / "bench.yaml", {})
    log_dir = tmp / "logs"
    store = Store.open(tmp / "state", sync=True)
    last = f"c{jobs - 1:02d}"
    async with open_engine(
        config, store, clock=RealClock(), launcher=LocalLauncher(log_dir)
    ) as engine:
        await trio.sleep(0.3)  # let start-up (watermarks, first commit) finish
        t0 = time.perf_counter()
        head = await engine.trigger("c00")
        while True:
            tail = engine.book.latest_for(last, head.run_date)
            if tail is not None and tail.state.finished:
                break
            if engine.error is not None:
                raise engine.error
            await trio.sleep(0.002)
        wall = time.perf_counter() - t0
        states: dict[str, int] = {}
        for run in engine.book:
            states[run.state.value] = states.get(run.state.value, 0) + 1
    notes = sorted(log_dir.rglob("*.note.json"))
    spans = [minder_span_ms(note) for note in notes]
    return {"wall_s": wall, "states": states, "tail": tail.state.value, "spans": spans}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=40)
    args = parser.parse_args()
    print(f"a chain of {args.jobs} jobs running `true`, real clock, disk journal with fsync")
    with tempfile.TemporaryDirectory() as tmp:
        result = trio.run(chain, args.jobs, Path(tmp))
    wall = result["wall_s"]
    per_link = wall / args.jobs * 1000
    span = statistics.median(result["spans"]) if result["spans"] else float("nan")
    print(f"states: {result['states']}; last link {result['tail']}")
    print(f"wall {wall:.3f} s: {per_link:.1f} ms per link; minder started→ended p50 {span:.1f} ms")
    met = wall <= 1.0 and result["tail"] == "succeeded"
    print(f"goal wall ≤ 1 s: {'met' if met else 'NOT met'} ({wall:.3f} s)")
    print(
        json.dumps(
            {
                "wall_s": round(wall, 3),
                "jobs": args.jobs,
                "per_link_ms": round(per_link, 1),
                "minder_ms_p50": round(span, 1),
                "succeeded": result["states"].get("succeeded", 0),
            }
        )
    )


if __name__ == "__main__":
    main()
