"""A real `pysched serve` SIGKILLed at random moments while short real jobs run, then
restarted: in the end every run's attempts match what really happened (see tests/chaos.py;
the fifty-cycle version is tests/bench/bench_chaos.py)."""

from __future__ import annotations

import random
from pathlib import Path

from tests.chaos import kill_cycles, prepare, settle, verify


def test_sigkill_and_restart_lose_and_double_nothing(tmp_path: Path) -> None:
    config = prepare(tmp_path)
    kill_cycles(config, 3, random.Random(7), 0.8, 2.0)
    settle(config)
    tally = verify(tmp_path)
    assert tally.runs >= 15  # five caught-up minutes x three jobs
    assert (tally.lost, tally.doubled, tally.wrong) == (0, 0, 0), tally.problems
