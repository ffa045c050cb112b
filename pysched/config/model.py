"""The checked, frozen shape of a config: what ``load_config`` returns.

Everything here is a value: frozen dataclasses and enums, built once by the loader after every
check has passed, then shared freely (the engine, the forecast, the API all read the same
objects). Nothing in a ``Config`` can be half-valid: a job's crons are parsed, its zone is a
``ZoneInfo``, its calendar is a ``Calendar``, its templates are parsed, its dependencies name
jobs that exist.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

from pysched.config.secrets import Secrets
from pysched.config.templates import RunContext, SecretSource, Template
from pysched.errors import Problem
from pysched.timing.calendar import DEFAULT_CALENDAR, Calendar
from pysched.timing.cron import DstPolicy
from pysched.timing.run_dates import RunDateRule
from pysched.timing.schedule import Schedule

TOKENS_FILE = "tokens.json"
"""The tokens file's name in the state dir, unless ``scheduler.tokens_file`` says otherwise."""
ADMIN_TOKEN_FILE = "admin.token"
"""The name, in the state dir, of the admin token the first ``serve`` writes."""
MINDER_DIR = "minder"
"""The folder, in the state dir, where ``serve`` keeps the native minder it builds."""


class Overlap(enum.Enum):
    """What a new run does while the job already has a run going."""

    QUEUE = "queue"
    SKIP = "skip"
    ALLOW = "allow"


class CatchUp(enum.Enum):
    """What happens to firings missed while the scheduler was down."""

    ALL = "all"
    LATEST = "latest"
    NONE = "none"


class Criticality(enum.Enum):
    LOW = "low"
    NORMAL = "normal"
    HIGH = "high"
    CRITICAL = "critical"


class Condition(enum.Enum):
    """The upstream outcome a dependency waits for."""

    SUCCESS = "success"
    FAILURE = "failure"
    DONE = "done"


@dataclass(frozen=True, slots=True, kw_only=True)
class Dependency:
    """``job``'s run for a run date (shifted by ``date_offset`` business days) must reach
    ``condition`` before the dependent run may start.

    ``date_offset`` is 0 for the same run date, -1 for ``previous``, -N for ``-N``; the days are
    counted in the *downstream* job's calendar.
    """

    job: str
    condition: Condition = Condition.SUCCESS
    date_offset: int = 0

    def upstream_run_date(self, run_date: date, calendar: Calendar | None) -> date:
        if self.date_offset == 0:
            return run_date
        return (calendar or DEFAULT_CALENDAR).shift(run_date, self.date_offset)


@dataclass(frozen=True, slots=True, kw_only=True)
class Backoff:
    """Waits between attempts: ``initial × factor^(n-1)``, capped at ``max``, then spread by
    ``± jitter`` (a fraction of the wait, 0 to 1)."""

    initial: timedelta = timedelta(seconds=30)
    factor: float = 2.0
    max: timedelta = timedelta(hours=1)
    jitter: float = 0.0

    def delay(self, retry_number: int, spread: float = 0.0) -> timedelta:
        """The wait before retry ``retry_number`` (1 = after the first failed attempt).

        ``spread`` is a number in [-1, 1] (random in production, fixed in tests) scaled by
        ``jitter``; the result is never negative and never above ``max``.
        """
        ceiling = self.max.total_seconds()
        base = min(self.initial.total_seconds() * self.factor ** max(retry_number - 1, 0), ceiling)
        return timedelta(seconds=max(0.0, min(base * (1 + self.jitter * spread), ceiling)))


@dataclass(frozen=True, slots=True, kw_only=True)
class Retries:
    count: int = 0
    backoff: Backoff = Backoff()


@dataclass(frozen=True, slots=True, kw_only=True)
class Command:
    """What an attempt runs: a string for ``/bin/sh -c`` or a list run without a shell."""

    shell: Template | None = None
    argv: tuple[Template, ...] = ()

    @property
    def secret_names(self) -> frozenset[str]:
        names: set[str] = set()
        for template in self._templates():
            names |= template.secret_names
        return frozenset(names)

    def render(self, ctx: RunContext, secrets: SecretSource) -> tuple[str, ...]:
        """The argv on its own: a string command has each value quoted into its text for
        where it sits (``Template.render(shell=True)``). For showing, or running elsewhere;
        attempts run ``render_with_env``'s form."""
        if self.shell is not None:
            return ("/bin/sh", "-c", self.shell.render(ctx, secrets, shell=True))
        return tuple(t.render(ctx, secrets) for t in self.argv)

    def render_with_env(
        self, ctx: RunContext, secrets: SecretSource
    ) -> tuple[tuple[str, ...], dict[str, str]]:
        """The argv an attempt runs, and the environment variables it needs: a string command
        refers to its values that are not plain through ``PYSCHED_VALUE_<n>``
        (``Template.render_shell``), so none of them is ever part of the shell's code; a list
        command needs none."""
        if self.shell is not None:
            text, values = self.shell.render_shell(ctx, secrets)
            return ("/bin/sh", "-c", text), values
        return tuple(t.render(ctx, secrets) for t in self.argv), {}

    def display(self, ctx: RunContext | None = None) -> str:
        """The command as people may see it: secrets shown as ``***``."""
        if self.shell is not None:
            return self.shell.render_masked(ctx, shell=True)
        return " ".join(t.render_masked(ctx) for t in self.argv)

    def _templates(self) -> tuple[Template, ...]:
        return (self.shell,) if self.shell is not None else self.argv


@dataclass(frozen=True, slots=True, kw_only=True)
class Job:
    name: str
    command: Command
    schedule: Schedule | None
    """None for a dependency-only job, created by its upstreams' runs."""
    timezone: ZoneInfo
    calendar: Calendar | None = None
    run_date: RunDateRule = RunDateRule.SAME_DAY
    depends_on: tuple[Dependency, ...] = ()
    overlap: Overlap = Overlap.QUEUE
    retries: Retries = Retries()
    timeout: timedelta | None = None
    pool: str | None = None
    priority: int = 0
    env: Mapping[str, Template] = field(default_factory=dict[str, Template])
    cwd: Template | None = None
    description: str = ""
    owner: str = ""
    tags: tuple[str, ...] = ()
    criticality: Criticality = Criticality.NORMAL
    catch_up: CatchUp = CatchUp.LATEST
    dst: DstPolicy = DstPolicy()
    enabled: bool = True

    @property
    def business_calendar(self) -> Calendar:
        """The calendar business-day rules count in (Mon–Fri when the job names none)."""
        return self.calendar or DEFAULT_CALENDAR


@dataclass(frozen=True, slots=True, kw_only=True)
class Listen:
    """Where the service listens: ``scheduler.listen`` as ``HOST:PORT`` (IPv6 in brackets)."""

    host: str
    port: int

    @classmethod
    def parse(cls, text: str) -> Listen:
        """``127.0.0.1:8080``, ``[::1]:8080`` or ``0.0.0.0:8080``; ``ValueError`` otherwise."""
        host, sep, port_text = text.strip().rpartition(":")
        if not sep or not host:
            raise ValueError("expected HOST:PORT")
        if host.startswith("[") and host.endswith("]"):
            host = host[1:-1]
            if not host:  # hypercorn would bind every address: never by accident
                raise ValueError(
                    "no host in the brackets — write [::1]:8080 for this machine only, "
                    "or [::]:8080 for every address"
                )
        elif ":" in host:
            raise ValueError("put an IPv6 address in brackets, e.g. [::1]:8080")
        if not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
            raise ValueError(f"port {port_text!r} is not a number from 0 to 65535")
        return cls(host=host, port=int(port_text))

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Tls:
    """``scheduler.tls``: PEM files of the certificate (with its chain) and its private key."""

    cert: Path
    key: Path


@dataclass(frozen=True, slots=True, kw_only=True)
class SchedulerSettings:
    state_dir: Path
    log_dir: Path
    timezone: ZoneInfo
    max_running: int = 64
    secrets_file: Path | None = None
    catch_up: CatchUp = CatchUp.LATEST
    max_catch_up: int = 100
    history_days: int = 90
    listen: Listen = field(default_factory=lambda: Listen(host="127.0.0.1", port=8080))
    tls: Tls | None = None
    tokens_file: Path | None = None
    """Where the API tokens' hashes live; ``tokens_path`` applies the default."""

    @property
    def tokens_path(self) -> Path:
        """The tokens file: ``tokens_file``, or ``state_dir/tokens.json``."""
        return self.tokens_file or self.state_dir / TOKENS_FILE

    @property
    def admin_token_path(self) -> Path:
        """The admin token the first ``serve`` writes (owner-only) for the CLI on this host."""
        return self.state_dir / ADMIN_TOKEN_FILE

    @property
    def minder_dir(self) -> Path:
        """Where ``serve`` keeps the native minder (``pysched.launch.native_minder``)."""
        return self.state_dir / MINDER_DIR

    @property
    def url(self) -> str:
        """The base URL the service answers on (``https`` with TLS)."""
        return f"{'https' if self.tls else 'http'}://{self.listen}"


SHORTEST_VERSION_PREFIX = 6
"""A config version is named by its sha256 or a prefix of at least this many hex digits."""


def version_prefix_problem(text: str) -> str | None:
    """Why ``text`` cannot name a config version, or None when it can (the API and the CLI
    refuse the same texts, with these words)."""
    if len(text) >= SHORTEST_VERSION_PREFIX and all(c in "0123456789abcdef" for c in text.lower()):
        return None
    return (
        f"{text!r} is not a config version: give at least {SHORTEST_VERSION_PREFIX} hex digits "
        "of its sha256 (pysched config versions lists them)"
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class Config:
    """A whole checked config. ``text`` and ``sha256`` identify the version it came from."""

    path: Path
    text: str
    sha256: str
    scheduler: SchedulerSettings
    calendars: Mapping[str, Calendar]
    pools: Mapping[str, int]
    jobs: Mapping[str, Job]
    secrets: Secrets
    warnings: tuple[Problem, ...] = ()

    def dependents_of(self, job: str) -> tuple[str, ...]:
        """Names of the jobs that depend on ``job``, in config order."""
        return tuple(
            name for name, j in self.jobs.items() if any(d.job == job for d in j.depends_on)
        )
