"""A real `pysched serve` SIGKILLed at random moments while short real jobs run, then
restarted: in the end every run's attempts match what really happened.

The runs come from catch-up: the journal is seeded with a watermark ten minutes back, so each
start makes runs for the minutes missed (``catch_up: all``), and every restart adds the minutes
that passed meanwhile. The 50-cycle version is ``tests/bench/bench_chaos.py``.
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import textwrap
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import trio

from pysched.engine.journal_state import firing_record, replay
from pysched.store import Store

JOBS = {"ok": 0, "bad": 3, "slow": 0}
CONFIG = """
scheduler: {state_dir: state, log_dir: logs, max_running: 4, max_catch_up: 10}
defaults: {catch_up: all}
jobs:
  ok:   {schedule: "* * * * *", command: "sleep 0.1; exit 0", overlap: allow}
  bad:  {schedule: "* * * * *", command: "sleep 0.2; exit 3", retries: 1,
         overlap: allow}
  slow: {schedule: "* * * * *", command: "sleep 0.6; exit 0", overlap: allow}
"""


def seed(state_dir: Path) -> None:
    async def write() -> None:
        store = Store.open(state_dir, sync=True)
        start = datetime.now(UTC) - timedelta(minutes=5)
        await store.commit([firing_record(job, start, start.date(), run_id=None) for job in JOBS])
        store.close()

    trio.run(write)


def serve(config: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "pysched", "serve", str(config)],
        stderr=subprocess.PIPE,
        text=True,
    )


def journal(state_dir: Path):  # type: ignore[no-untyped-def]
    store = Store.open(state_dir, sync=True)
    try:
        return replay(store.records())
    finally:
        store.close()


def test_sigkill_and_restart_lose_and_double_nothing(tmp_path: Path) -> None:
    config = tmp_path / "pysched.yaml"
    config.write_text(textwrap.dedent(CONFIG))
    seed(tmp_path / "state")
    rng = random.Random(7)
    for _ in range(3):
        process = serve(config)
        time.sleep(rng.uniform(0.8, 2.0))
        process.send_signal(signal.SIGKILL)
        process.communicate(timeout=30)
    # a last, gentle run until everything has finished
    for _ in range(20):
        process = serve(config)
        time.sleep(3.0)
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=30)
        # 0, or killed by the TERM if it came before the handler was in place (a busy machine)
        assert process.returncode in (0, -signal.SIGTERM), err
        state = journal(tmp_path / "state")
        if all(run.state.finished for run in state.book):
            break
    state = journal(tmp_path / "state")
    runs = list(state.book)
    assert len(runs) >= 15, [r.run_id for r in runs]  # five caught-up minutes x three jobs
    logs = tmp_path / "logs"
    started_files = {p.name.removesuffix(".started.json") for p in logs.rglob("*.started.json")}
    journaled = set()
    for run in runs:
        assert run.state.finished, run
        assert run.state.value != "lost", run
        numbers = [a.number for a in run.attempts]
        assert numbers == list(range(1, len(numbers) + 1)), run
        expected = JOBS[run.job]
        for attempt in run.attempts:
            journaled.add(f"{run.run_id}.{attempt.number}")
            note = (
                logs
                / run.job
                / run.run_date.isoformat()
                / (f"{run.run_id}.{attempt.number}.note.json")
            )
            written = json.loads(note.read_text())
            assert attempt.exit_code == written["exit_code"] == expected, (run, written)
        if run.job == "bad":
            assert run.state.value == "failed" and len(run.attempts) == 2
        else:
            assert run.state.value == "succeeded" and len(run.attempts) == 1
    assert started_files == journaled  # every attempt started exactly once, none unrecorded
