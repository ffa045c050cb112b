"""A launcher's words about an attempt never carry a secret into the journal or the API."""

from __future__ import annotations

import json
from datetime import date
from typing import NoReturn

import trio

from pysched.launch.base import AttemptSpec
from pysched.testing import FakeLauncher
from tests.engine.harness import Harness, config_from

SECRET = "hunter2-very-secret"
CONFIG = """
jobs:
  load:
    schedule: "0 3 1 1 *"
    command: ["/opt/${DEPLOY_KEY}/load", "--all"]
    cwd: "/srv/${DEPLOY_KEY}"
"""


class QuotingLauncher(FakeLauncher):
    """Cannot start anything, and says so quoting the real program and folder."""

    specs: list[AttemptSpec]

    async def start(self, spec: AttemptSpec) -> NoReturn:
        self.specs.append(spec)
        raise OSError(f"cannot start {spec.argv[0]!r} in {spec.cwd}")


def quoting(secret: str) -> tuple[Harness, QuotingLauncher]:
    """A harness whose launcher quotes the program and folder, with ``secret`` in both."""
    h = Harness(config_from(CONFIG, {"DEPLOY_KEY": secret}))
    launcher = QuotingLauncher(h.clock)
    launcher.specs = []
    h.launcher = launcher
    return h, launcher


async def test_a_start_error_quoting_a_secret_is_journaled_masked(
    autojump_clock: trio.testing.MockClock,
) -> None:
    h, launcher = quoting(SECRET)
    async with h.engine() as engine:
        run = await engine.trigger("load", date(2026, 10, 19))
        await engine.settle()
        attempt = engine.book.get(run.run_id).attempts[0]
        assert attempt.message == "cannot start '/opt/***/load' in /srv/***"
        journal = json.dumps([record.data for record in h.store.records()])
        assert SECRET not in journal
        events = engine.events.since(0)
        assert events is not None
        assert SECRET not in json.dumps([event.data for event in events], default=str)
    # the launcher is told which of its texts to show masked (the minder's note uses it)
    spec = launcher.specs[0]
    assert dict(spec.redact) == {
        f"/opt/{SECRET}/load": "/opt/***/load",
        f"/srv/{SECRET}": "/srv/***",
    }


async def test_a_secret_in_a_folder_that_path_tidies_up_stays_masked(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """``Path`` writes "/srv/ab//key/" as "/srv/ab/key": the raw value is no longer in it, so
    masking by value alone let it through (into the note, the journal and the API)."""
    h, launcher = quoting("ab//Slash3dSecret/")
    async with h.engine() as engine:
        run = await engine.trigger("load", date(2026, 10, 19))
        await engine.settle()
        attempt = engine.book.get(run.run_id).attempts[0]
        assert "Slash3dSecret" not in attempt.message
        assert attempt.message.endswith(" in /srv/***")
        journal = json.dumps([record.data for record in h.store.records()])
        assert "Slash3dSecret" not in journal
    assert launcher.specs[0].redact["/srv/ab/Slash3dSecret"] == "/srv/***"


async def test_a_secret_in_a_string_command_travels_in_the_environment(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """The command line (which ``ps`` shows) holds a reference; the value is in the attempt's
    environment, where the shell expands it as data."""
    config = """
    jobs:
      login:
        schedule: "0 3 1 1 *"
        command: 'connect --date {run_date} --password "${PW}"'
    """
    h = Harness(config_from(config, {"PW": "p$(touch x)'w"}))
    async with h.engine() as engine:
        await engine.trigger("login", date(2026, 10, 19))
        await engine.settle()
    (started,) = h.launcher.started
    assert started.command == (
        "/bin/sh",
        "-c",
        'connect --date 2026-10-19 --password "${PYSCHED_VALUE_2}"',
    )
    assert started.env["PYSCHED_VALUE_2"] == "p$(touch x)'w"
