"""The engine with real processes under minders: a restart adopts what still runs."""

from __future__ import annotations

import json
import os
import signal
import textwrap
from datetime import timedelta
from pathlib import Path

import trio

from pysched.config import load_config
from pysched.engine import AttemptOutcome, RunState, open_engine
from pysched.launch.local import LocalLauncher
from pysched.store import Store
from pysched.timing import RealClock

CONFIG = """
scheduler: {state_dir: state, log_dir: logs}
jobs:
  slow:
    schedule: "0 3 1 1 *"
    command: sleep 1.5; echo done
  after:
    depends_on: [slow]
    command: echo after {run_date}
"""


async def wait_for(predicate, seconds: float = 20) -> None:  # type: ignore[no-untyped-def]
    with trio.fail_after(seconds):
        while not predicate():
            await trio.sleep(0.05)


async def test_restart_adopts_a_running_attempt_and_never_starts_it_twice(tmp_path: Path) -> None:
    (tmp_path / "pysched.yaml").write_text(textwrap.dedent(CONFIG))
    config = load_config(tmp_path / "pysched.yaml")
    state = config.scheduler.state_dir
    launcher = LocalLauncher(config.scheduler.log_dir)
    async with open_engine(
        config, Store.open(state, sync=True), clock=RealClock(), launcher=launcher
    ) as engine:
        run = await engine.trigger("slow", by="test")
        await wait_for(lambda: run.attempts and run.attempts[0].info)
        run_id = run.run_id
    # the scheduler is gone; the minder and `sleep` run on
    async with open_engine(
        config,
        Store.open(state, sync=True),
        clock=RealClock(),
        launcher=LocalLauncher(config.scheduler.log_dir),
    ) as engine:
        adopted = engine.book.get(run_id)
        assert adopted.state is RunState.RUNNING
        await wait_for(lambda: engine.book.runs(job="after", state=RunState.SUCCEEDED) != [])
        assert adopted.state is RunState.SUCCEEDED
        assert [a.number for a in adopted.attempts] == [1]
        assert adopted.attempts[0].exit_code == 0
    out = tmp_path / "logs" / "slow" / adopted.run_date.isoformat() / f"{run_id}.1.out"
    assert out.read_text() == "done\n"  # one attempt, run once


STUBBORN = """
scheduler: {state_dir: state, log_dir: logs}
jobs:
  stubborn:
    schedule: "0 3 1 1 *"
    command: trap '' TERM; sleep 30
    retries: 2
"""


async def test_a_kill_asked_before_a_restart_is_carried_out_after_it(tmp_path: Path) -> None:
    """The command ignores SIGTERM; the scheduler stops during the kill's grace, before the
    SIGKILL. The next start sends SIGTERM and, after the grace, SIGKILL again: the run fails
    as killed, and is not retried."""
    (tmp_path / "pysched.yaml").write_text(textwrap.dedent(STUBBORN))
    config = load_config(tmp_path / "pysched.yaml")
    state, logs = config.scheduler.state_dir, config.scheduler.log_dir
    grace = timedelta(seconds=1)
    async with open_engine(
        config,
        Store.open(state, sync=True),
        clock=RealClock(),
        launcher=LocalLauncher(logs),
        kill_grace=timedelta(seconds=60),  # this scheduler stops long before its SIGKILL
    ) as engine:
        run = await engine.trigger("stubborn", by="test")
        await wait_for(lambda: run.attempts and run.attempts[0].info)
        await engine.kill(run.run_id, by="ann", why="runaway")
        run_id = run.run_id
    async with open_engine(
        config,
        Store.open(state, sync=True),
        clock=RealClock(),
        launcher=LocalLauncher(logs),
        kill_grace=grace,
    ) as engine:
        killed = engine.book.get(run_id)
        await wait_for(lambda: killed.state.finished, seconds=15)
        assert killed.state is RunState.FAILED
        assert killed.reason == "killed by ann: runaway"
        assert [(a.number, a.outcome) for a in killed.attempts] == [(1, AttemptOutcome.KILLED)]
        assert killed.attempts[0].signal == signal.SIGKILL


async def test_a_second_kill_or_cancel_changes_nothing_and_a_cancel_goes_further(
    tmp_path: Path,
) -> None:
    (tmp_path / "pysched.yaml").write_text(textwrap.dedent(STUBBORN))
    config = load_config(tmp_path / "pysched.yaml")
    async with open_engine(
        config,
        Store.open(config.scheduler.state_dir, sync=False),
        clock=RealClock(),
        launcher=LocalLauncher(config.scheduler.log_dir),
        kill_grace=timedelta(seconds=1),
    ) as engine:
        run = await engine.trigger("stubborn", by="test")
        await wait_for(lambda: run.attempts and run.attempts[0].info)
        await engine.kill(run.run_id, by="ann", why="runaway")
        again = await engine.kill(run.run_id, by="bob")  # nothing more to do: no error
        assert again.reason == "killed by ann: runaway"  # the first word stands
        await engine.cancel(run.run_id, by="bob", why="not today")  # a cancel goes further
        await engine.cancel(run.run_id, by="ann")
        await engine.kill(run.run_id, by="ann")
        await wait_for(lambda: run.state.finished, seconds=15)
        assert (run.state, run.reason) == (RunState.CANCELLED, "cancelled by bob: not today")


async def test_a_minder_killed_under_its_command_is_lost_and_the_retry_waits(
    tmp_path: Path,
) -> None:
    # the minder dies (an OOM killer, a stray kill -9) while its command runs on: the attempt
    # is lost, not "could not start", and the retry never runs beside the orphaned command
    side = tmp_path / "side.txt"
    (tmp_path / "pysched.yaml").write_text(
        textwrap.dedent(
            f"""
            scheduler: {{state_dir: state, log_dir: logs}}
            jobs:
              m:
                schedule: "0 3 1 1 *"
                retries: {{count: 1, backoff: {{initial: 1s}}}}
                command: >-
                  echo start $PYSCHED_ATTEMPT >> {side}; sleep 1.5;
                  echo end $PYSCHED_ATTEMPT >> {side}
            """
        )
    )
    config = load_config(tmp_path / "pysched.yaml")
    launcher = LocalLauncher(config.scheduler.log_dir)
    async with open_engine(
        config,
        Store.open(config.scheduler.state_dir, sync=True),
        clock=RealClock(),
        launcher=launcher,
    ) as engine:
        run = await engine.trigger("m", by="test")
        await wait_for(lambda: run.attempts and run.attempts[0].info)
        marker = next(config.scheduler.log_dir.rglob("*.1.spawned"))
        await wait_for(lambda: marker.stat().st_size > 0)
        os.kill(json.loads(marker.read_text())["minder_pid"], signal.SIGKILL)
        await wait_for(lambda: engine.book.get(run.run_id).state.finished)
        done = engine.book.get(run.run_id)
    assert side.read_text().split("\n")[:4] == ["start 1", "end 1", "start 2", "end 2"]
    first, second = done.attempts
    assert first.outcome is AttemptOutcome.LOST
    assert "its minder ended while the command ran" in first.message
    assert second.outcome is AttemptOutcome.SUCCEEDED
    assert done.state is RunState.SUCCEEDED
