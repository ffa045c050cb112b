"""Killing a real `pysched serve` at random moments and checking nothing was lost or doubled.

Shared by the crash test (a few cycles, in the suite) and ``tests/bench/bench_chaos.py`` (fifty
cycles). The runs come from catch-up: the journal is seeded with a watermark some minutes back,
so each start makes runs for the minutes missed (``catch_up: all``), and every restart adds the
minutes that passed meanwhile.
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import trio

from pysched.engine.journal_state import Replayed, firing_record, replay
from pysched.store import Store

EXIT_CODES = {"ok": 0, "bad": 3, "slow": 0}
CONFIG = """
scheduler: {state_dir: state, log_dir: logs, max_running: 4, max_catch_up: 10}
defaults: {catch_up: all, overlap: allow}
jobs:
  ok:   {schedule: "* * * * *", command: "sleep 0.1; exit 0"}
  bad:  {schedule: "* * * * *", command: "sleep 0.2; exit 3",
         retries: {count: 1, backoff: {initial: 1s}}}
  slow: {schedule: "* * * * *", command: "sleep 0.6; exit 0"}
"""


@dataclass
class Tally:
    runs: int = 0
    kills: int = 0
    lost: int = 0
    doubled: int = 0
    wrong: int = 0
    problems: list[str] = field(default_factory=list[str])


def prepare(home: Path, minutes_back: int = 5) -> Path:
    config = home / "pysched.yaml"
    config.write_text(textwrap.dedent(CONFIG))

    async def seed() -> None:
        store = Store.open(home / "state", sync=True)
        start = datetime.now(UTC) - timedelta(minutes=minutes_back)
        records = [firing_record(job, start, start.date(), run_id=None) for job in EXIT_CODES]
        await store.commit(records)
        store.close()

    trio.run(seed)
    return config


def serve(config: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "pysched", "serve", str(config), "--listen", "127.0.0.1:0"],
        stderr=subprocess.PIPE,
        text=True,
    )


def journal(state_dir: Path) -> Replayed:
    store = Store.open(state_dir, sync=True)
    try:
        return replay(store.records())
    finally:
        store.close()


def kill_cycles(config: Path, cycles: int, rng: random.Random, low: float, high: float) -> int:
    """Start serve and SIGKILL it after a random while, ``cycles`` times."""
    for _ in range(cycles):
        process = serve(config)
        time.sleep(rng.uniform(low, high))
        process.send_signal(signal.SIGKILL)
        process.communicate(timeout=30)
    return cycles


def settle(config: Path, rounds: int = 20) -> None:
    """Run serve gently (SIGTERM after a while) until every run has finished."""
    for _ in range(rounds):
        process = serve(config)
        # long enough for a start-up on a busy machine, the launcher's two-second grace for a
        # minder that never wrote its started file, and a one-second retry backoff
        time.sleep(6.0)
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=30)
        # 0, or killed by the TERM if it came before the handler was in place (a busy machine)
        assert process.returncode in (0, -signal.SIGTERM), err
        if all(run.state.finished for run in journal(config.parent / "state").book):
            return


def verify(home: Path) -> Tally:
    """Compare the journal with what the minders wrote: lost, doubled and wrong outcomes."""
    state = journal(home / "state")
    logs = home / "logs"
    tally = Tally(runs=len(state.book))
    # a marker says what its minder started; an empty one, that no command was started
    started = [p.name.removesuffix(".spawned") for p in logs.rglob("*.spawned") if p.stat().st_size]
    journaled: set[str] = set()
    for run in state.book:
        if not run.state.finished or run.state.value == "lost":
            tally.lost += 1
            tally.problems.append(f"{run.run_id} ended {run.state.value}")
        numbers = [a.number for a in run.attempts]
        if numbers != list(range(1, len(numbers) + 1)):
            tally.doubled += 1
            tally.problems.append(f"{run.run_id} attempts {numbers}")
        expected = EXIT_CODES[run.job]
        for attempt in run.attempts:
            key = f"{run.run_id}.{attempt.number}"
            journaled.add(key)
            note = logs / run.job / run.run_date.isoformat() / f"{key}.note.json"
            written = json.loads(note.read_text()) if note.exists() else {}
            if not (attempt.exit_code == written.get("exit_code") == expected):
                tally.wrong += 1
                tally.problems.append(f"{key}: journal {attempt.exit_code}, note {written}")
        tries = 2 if run.job == "bad" else 1
        final = "failed" if run.job == "bad" else "succeeded"
        if run.state.value != final or len(run.attempts) != tries:
            tally.wrong += 1
            tally.problems.append(f"{run.run_id} {run.state.value} after {len(run.attempts)}")
    tally.doubled += len(started) - len(set(started))
    unrecorded = set(started) - journaled
    tally.doubled += len(unrecorded)  # an attempt started that the journal does not know
    tally.problems += [f"started but not journaled: {key}" for key in sorted(unrecorded)]
    return tally
