"""Forecast of 1,000 generated jobs over 31 days. Goal: ≤ 2 s.

Run: ``uv run python tests/bench/bench_forecast.py`` (or ``nox -s bench``). The last line is a
JSON object of named figures.
"""

from __future__ import annotations

import json
import sys
import time
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from generated_config import generated_config

from pysched.config import parse_config
from pysched.engine.forecast import forecast


def main() -> None:
    config = parse_config(generated_config(1_000), Path("generated.yaml"), {})
    timings = []
    runs = []
    for _ in range(3):
        started = time.perf_counter()
        runs = forecast(config, date(2026, 10, 1), date(2026, 10, 31))
        timings.append(time.perf_counter() - started)
    best = min(timings)
    print(f"forecast 1,000 jobs x 31 days: {len(runs):,} runs in {best:.3f} s (best of 3)")
    print(
        json.dumps(
            {
                "jobs": 1_000,
                "days": 31,
                "runs": len(runs),
                "forecast_s": round(best, 3),
                "goal_s": 2.0,
            }
        )
    )


if __name__ == "__main__":
    main()
