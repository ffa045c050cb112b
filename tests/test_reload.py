"""The reloader on its own: secret rotation applies, a stop refuses reloads, and the list of
config versions has the same order before and after a restart."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import trio

from pysched.config import load_config
from pysched.errors import EngineStopped
from pysched.reload import Reloader
from tests.engine.harness import Harness

CONFIG = """
scheduler: {{state_dir: state, log_dir: logs, secrets_file: secrets.env}}
jobs:
  sec:
    schedule: "0 3 1 1 *"
    command: {command}
    overlap: allow
    env: {{PW: "${{PW}}"}}
"""


class Watcher:
    def __init__(self) -> None:
        self.said: list[str] = []

    def reloading(self, status: str | None = None) -> None:
        self.said.append("RELOADING")

    def ready(self, status: str | None = None) -> None:
        self.said.append(f"READY {status}")


def write(home: Path, *, command: str = "x", pw: str = "first") -> Path:
    secrets = home / "secrets.env"
    secrets.write_text(f"PW={pw}\n")
    os.chmod(secrets, 0o600)
    path = home / "pysched.yaml"
    path.write_text(CONFIG.format(command=command))
    return path


async def test_a_rotated_secret_is_applied_though_the_file_is_the_same(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    path = write(tmp_path)
    h = Harness(load_config(path))
    async with h.engine() as engine:
        reloader = Reloader(engine, path)
        write(tmp_path, pw="second")
        outcome = await reloader.reload(by="ann")
        assert (outcome.applied, outcome.changed) == (True, True)
        run = await engine.trigger("sec")
        await engine.settle()
        # (the clock may have jumped to a firing while the file was read in a thread: look
        # for this run's attempt, not the last one)
        (started,) = [s for s in h.launcher.started if s.run_id == run.run_id]
        assert started.env["PW"] == "second"
        unchanged = await reloader.reload(by="ann")
        assert unchanged.changed is False


async def test_a_stopping_scheduler_reloads_nothing_and_says_no_ready(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    path = write(tmp_path)
    h = Harness(load_config(path))
    async with h.engine() as engine:
        watcher = Watcher()
        reloader = Reloader(engine, path, watcher=watcher)
        reloader.stop()
        write(tmp_path, command="y")
        with pytest.raises(EngineStopped, match="stopping"):
            await reloader.reload(by="SIGHUP")
        assert watcher.said == []
        assert engine.config.jobs["sec"].command.display() == "x"


async def test_config_versions_keep_their_order_across_a_restart(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    """A version put in force again moves to the end, live and after a restart alike."""
    path = write(tmp_path, command="a")
    h = Harness(load_config(path))
    async with h.engine() as engine:
        reloader = Reloader(engine, path)
        for command in ("b", "a", "c"):
            write(tmp_path, command=command)
            await reloader.reload(by="ann")
        live = [data["sha256"] for data in engine.config_versions()]
    async with h.engine(store=h.store.reopen(), config=load_config(path)) as engine:
        replayed = [data["sha256"] for data in engine.config_versions()]
    assert replayed == live
    assert len(live) == 3  # a, b, c: a once, where it was last put in force


async def test_a_setting_for_the_next_start_is_compared_with_the_live_one(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    """Reloading a changed listen warns; reloading it back to what the server listens on
    does not (it used to compare with the last reload's file)."""
    path = write(tmp_path)
    h = Harness(load_config(path))
    async with h.engine() as engine:
        reloader = Reloader(engine, path)
        original = path.read_text()
        path.write_text(original.replace("scheduler: {", "scheduler: {listen: '127.0.0.1:9999', "))
        moved = await reloader.reload(by="ann")
        assert moved.warnings == ("scheduler.listen changed: it takes effect at the next start",)
        path.write_text(original)
        back = await reloader.reload(by="ann")
        assert back.warnings == ()
