"""The engine with real processes under minders: a restart adopts what still runs."""

from __future__ import annotations

import textwrap
from pathlib import Path

import trio

from pysched.config import load_config
from pysched.engine import RunState, open_engine
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
