"""Fifty SIGKILL/restart cycles of a real `pysched serve` over a steady stream of short real
jobs; reports runs, kills, lost, doubled and wrong outcomes (the last three must be 0).

Run: ``uv run python tests/bench/bench_chaos.py [--cycles N]``. The last line is JSON.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[2]))

from tests.chaos import kill_cycles, prepare, settle, verify


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cycles", type=int, default=50)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        config = prepare(home, minutes_back=10)
        started = time.perf_counter()
        kills = kill_cycles(config, args.cycles, random.Random(11), 0.3, 2.5)
        settle(config)
        tally = verify(home)
        wall = time.perf_counter() - started
    for problem in tally.problems[:20]:
        print("problem:", problem)
    print(
        f"{args.cycles} SIGKILL/restart cycles in {wall:.0f} s: {tally.runs} runs, "
        f"{tally.lost} lost, {tally.doubled} doubled, {tally.wrong} wrong"
    )
    print(
        json.dumps(
            {
                "runs": tally.runs,
                "kills": kills,
                "lost": tally.lost,
                "doubled": tally.doubled,
                "wrong": tally.wrong,
                "wall_s": round(wall),
            }
        )
    )


if __name__ == "__main__":
    main()
