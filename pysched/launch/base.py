"""The launcher interface: the engine's only way to run, watch and stop a command.

A launcher turns an ``AttemptSpec`` into something running and hands back an ``AttemptHandle``
to wait on or kill. The engine owns the task that waits (one per attempt, in its attempts
nursery); a launcher owns no task of its own (the local one keeps one helper process, its
minder host, which ends with the scheduler). Implementations: ``FakeLauncher`` in
``pysched.testing`` (virtual processes on the fake clock), the local launcher with its minder
process, and later a remote launcher that runs attempts on agents. One contract test suite runs
against all of them.

Recovery: after a restart the engine asks ``recover(spec, info)`` about each attempt the journal
says was running. ``info`` is whatever the handle's ``info`` held when the attempt started (pids,
process start times, a note's path). The launcher answers with a handle to adopt, the way the
attempt ended while nobody watched, ``NOT_STARTED`` when it provably never began (the engine
starts it then, once), or ``None`` when it vanished (the engine records it as ``lost``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any, Protocol


@dataclass(frozen=True, slots=True, kw_only=True)
class AttemptSpec:
    """Everything needed to start one attempt. ``argv`` and ``env`` hold real secret values:
    never log them; ``display`` is the command with secrets masked."""

    run_id: str
    job: str
    run_date: date
    attempt: int
    argv: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict[str, str])
    """Added to the launcher's base environment: the job's ``env`` and the ``PYSCHED_*``."""
    cwd: Path | None = None
    scheduled_for: datetime
    display: str = ""
    redact: Mapping[str, str] = field(default_factory=dict[str, str])
    """Texts of this attempt that hold a secret (its program, its folder), each with the form
    to show instead: a launcher writes the shown form in anything it keeps (notes, messages)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ExitStatus:
    """How a command ended: ``exit_code`` for a normal exit, ``signal`` when a signal ended it,
    neither when it could not be started at all (``message`` says why).

    ``ended_at`` is when it ended if the launcher knows better than the engine's clock (a
    minder's note read after a restart); otherwise None and the engine uses its clock.
    """

    exit_code: int | None = None
    signal: int | None = None
    ended_at: datetime | None = None
    message: str = ""
    lost: bool = False
    """The command ran but the launcher lost sight of how it ended (its minder died under it):
    neither ``exit_code`` nor ``signal`` is known, and the engine records the attempt ``lost``."""

    @property
    def succeeded(self) -> bool:
        return self.exit_code == 0 and self.signal is None


@dataclass(frozen=True, slots=True)
class NotStarted:
    """``recover``'s answer when the launcher can tell the attempt never began: nothing of it
    was ever spawned (the scheduler stopped between journaling the start and starting it).
    The engine then starts it, once, under the same attempt number."""


NOT_STARTED = NotStarted()


class AttemptHandle(Protocol):
    """A started attempt.

    ``info`` is JSON-able and journaled with the attempt (pids and start times, so a restart
    can find it again). ``wait`` returns once the command has ended. ``kill`` asks it to stop:
    SIGTERM to its process group, then SIGKILL after ``grace``; it returns once the signal is
    sent, and ``wait`` reports the end.

    **Cancellation:** cancelling ``wait`` stops watching, never the command: leaving the engine
    leaves attempts running under their minders, and the next start adopts them.
    """

    @property
    def info(self) -> Mapping[str, Any]: ...

    async def wait(self) -> ExitStatus: ...

    async def kill(self, grace: timedelta) -> None: ...


class Launcher(Protocol):
    """Starts attempts. ``start`` returns once whatever watches the command exists (the
    minder); it may raise ``OSError`` if even that cannot start. A command that cannot start
    comes back from ``wait`` as an ``ExitStatus`` with neither code nor signal; the engine
    records either as a failed start."""

    async def prepare(self) -> None:
        """Get ready to start attempts (the local launcher starts its minder host), so the
        first start after the scheduler starts pays nothing extra. Called once as the engine
        opens, in a task of its own that the engine's close cancels; it should not raise (what
        fails here is tried again by the first ``start``, which reports it), and the engine
        logs and carries on if it does. A launcher written before this method existed, without
        it, is used as before."""
        ...

    async def start(self, spec: AttemptSpec) -> AttemptHandle: ...

    async def recover(
        self, spec: AttemptSpec, info: Mapping[str, Any]
    ) -> AttemptHandle | ExitStatus | NotStarted | None: ...
