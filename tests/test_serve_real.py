"""serve with real processes: the local launcher and its minders, the real clock."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import trio

from pysched.config import load_config
from pysched.engine import RunState
from pysched.launch.local import LocalLauncher
from pysched.launch.native_minder import find_compiler
from pysched.service import serve

CONFIG = """
scheduler: {state_dir: state, log_dir: logs}
jobs:
  hello:
    schedule: "0 3 1 1 *"
    command: echo "hello {run_date}" && echo oops >&2 && exit 3
  quiet:
    depends_on: [{job: hello, on: failure}]
    command: [printf, "%s", "{job}"]
"""


def write(tmp_path: Path) -> Path:
    path = tmp_path / "pysched.yaml"
    path.write_text(textwrap.dedent(CONFIG))
    return path


async def test_serve_runs_real_commands(tmp_path: Path) -> None:
    config = load_config(write(tmp_path))
    async with trio.open_nursery() as nursery:
        serving = await nursery.start(
            lambda task_status: serve(
                config,
                launcher_factory=lambda c: LocalLauncher(c.scheduler.log_dir),
                http=False,
                stop_signals=(signal.SIGUSR2,),
                reload_signals=(),
                task_status=task_status,
            )
        )
        engine = serving.engine
        run = await engine.trigger("hello", by="test")
        with trio.fail_after(20):
            while engine.book.runs(job="quiet", state=RunState.SUCCEEDED) == []:
                await trio.sleep(0.05)
        assert run.state is RunState.FAILED
        assert run.attempts[0].exit_code == 3
        nursery.cancel_scope.cancel()
    logs = tmp_path / "logs" / "hello" / run.run_date.isoformat()
    assert (logs / f"{run.run_id}.1.out").read_text() == f"hello {run.run_date}\n"
    assert (logs / f"{run.run_id}.1.err").read_text() == "oops\n"


def test_serve_command_stops_on_sigterm_and_holds_the_lock(tmp_path: Path) -> None:
    config = write(tmp_path)
    command = [sys.executable, "-m", "pysched", "serve", str(config), "--listen", "127.0.0.1:0"]
    # its own native minder, in the state dir, as in real use (not the suite's shared one)
    env = {k: v for k, v in os.environ.items() if k != "PYSCHED_MINDER_CACHE"}
    first = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, env=env)
    try:
        deadline = time.monotonic() + 20
        while not (tmp_path / "state" / "lock").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)
        second = subprocess.run(command, capture_output=True, text=True, timeout=30)
        assert second.returncode == 1
        assert "in use by another pysched" in second.stderr
        first.send_signal(signal.SIGTERM)
        _, err = first.communicate(timeout=30)
    finally:
        first.kill()
    assert first.returncode == 0, err
    assert "serving 2 jobs" in err
    assert "stopped by SIGTERM" in err
    if find_compiler() is not None:
        built = [p.name for p in (tmp_path / "state" / "minder").iterdir()]
        assert len(built) == 1 and built[0].startswith("pysched-minder-"), built
        assert "built the native minder" in err
        assert "minder host started" in err and "native minders" in err
