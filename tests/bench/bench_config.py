"""Validation of a generated 5,000-job config. Goal: ≤ 2 s.

Run: ``uv run python tests/bench/bench_config.py`` (or ``nox -s bench``). The last line is a
JSON object of named figures.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from generated_config import generated_config

from pysched.config import parse_config


def main() -> None:
    text = generated_config(5_000)
    timings = []
    config = None
    for _ in range(3):
        started = time.perf_counter()
        config = parse_config(text, Path("generated.yaml"), {})
        timings.append(time.perf_counter() - started)
    assert config is not None and len(config.jobs) == 5_000
    best = min(timings)
    print(
        f"validated a 5,000-job config ({len(text.splitlines())} lines) in {best:.3f} s (best of 3)"
    )
    print(json.dumps({"jobs": 5_000, "validate_s": round(best, 3), "goal_s": 2.0}))


if __name__ == "__main__":
    main()
