"""Runs and their states: every allowed change in one table.

A *run* is one execution of a job for one run date (``extract.2026-10-16.1``); it makes one or
more *attempts* (a retry is a new attempt; a rerun starts a new series of attempts). The state
diagram, in words:

``scheduled`` → ``waiting`` (a dependency not met yet) | ``blocked`` (a dependency can no
longer be met as things stand) | ``skipped`` → ``queued`` (ready, waiting for a slot) →
``running`` → ``retrying`` (waiting out a backoff) → ``queued`` → ``running`` → ``succeeded``
| ``failed``;
``held`` and ``cancelled`` come from operators, ``lost`` from an attempt that vanished.

``TRANSITIONS`` is the whole truth; ``Run.move`` refuses anything else with a
``TransitionError`` (a bug, never user input: actions check states first and raise
``ActionError``).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import date, datetime
from typing import Any

from pysched.errors import TransitionError


class RunState(enum.Enum):
    SCHEDULED = "scheduled"
    WAITING = "waiting"
    BLOCKED = "blocked"
    SKIPPED = "skipped"
    QUEUED = "queued"
    RUNNING = "running"
    RETRYING = "retrying"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    HELD = "held"
    CANCELLED = "cancelled"
    LOST = "lost"

    @property
    def finished(self) -> bool:
        return self in FINISHED


FINISHED = frozenset(
    {RunState.SUCCEEDED, RunState.FAILED, RunState.SKIPPED, RunState.CANCELLED, RunState.LOST}
)
"""States a run stays in until an operator reruns, forces or marks it."""

_S = RunState
_RESTART = frozenset({_S.WAITING, _S.BLOCKED, _S.QUEUED, _S.SKIPPED, _S.SUCCEEDED})
TRANSITIONS: Mapping[RunState, frozenset[RunState]] = {
    _S.SCHEDULED: frozenset(
        {_S.WAITING, _S.BLOCKED, _S.SKIPPED, _S.QUEUED, _S.HELD, _S.CANCELLED, _S.SUCCEEDED}
    ),
    _S.WAITING: frozenset({_S.QUEUED, _S.BLOCKED, _S.SKIPPED, _S.HELD, _S.CANCELLED, _S.SUCCEEDED}),
    _S.BLOCKED: frozenset({_S.WAITING, _S.QUEUED, _S.SKIPPED, _S.HELD, _S.CANCELLED, _S.SUCCEEDED}),
    _S.QUEUED: frozenset({_S.RUNNING, _S.SKIPPED, _S.HELD, _S.CANCELLED, _S.SUCCEEDED}),
    # running -> queued only on recovery: the attempt was journaled as starting, never began
    _S.RUNNING: frozenset({_S.SUCCEEDED, _S.FAILED, _S.RETRYING, _S.LOST, _S.CANCELLED, _S.QUEUED}),
    _S.RETRYING: frozenset({_S.QUEUED, _S.HELD, _S.CANCELLED, _S.SUCCEEDED}),
    _S.HELD: frozenset({_S.WAITING, _S.BLOCKED, _S.QUEUED, _S.SKIPPED, _S.CANCELLED, _S.SUCCEEDED}),
    # finished runs move again only by operators: rerun / force (re-evaluated from scratch),
    # mark_success
    _S.SUCCEEDED: frozenset({_S.WAITING, _S.BLOCKED, _S.QUEUED, _S.SKIPPED}),
    _S.FAILED: _RESTART,
    _S.CANCELLED: _RESTART,
    _S.LOST: _RESTART,
    _S.SKIPPED: frozenset({_S.WAITING, _S.BLOCKED, _S.QUEUED, _S.SUCCEEDED}),
}


class AttemptOutcome(enum.Enum):
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    KILLED = "killed"
    TIMED_OUT = "timed_out"
    LOST = "lost"
    START_FAILED = "start_failed"


class Trigger(enum.Enum):
    """What created a run."""

    SCHEDULE = "schedule"
    DEPENDENCY = "dependency"
    MANUAL = "manual"
    BACKFILL = "backfill"
    CATCH_UP = "catch_up"


@dataclass(frozen=True, slots=True, kw_only=True)
class Attempt:
    """One try at running the command. ``outcome`` is None while it runs."""

    number: int
    started_at: datetime
    ended_at: datetime | None = None
    exit_code: int | None = None
    signal: int | None = None
    outcome: AttemptOutcome | None = None
    info: Mapping[str, Any] = field(default_factory=dict[str, Any])
    message: str = ""

    def to_data(self) -> dict[str, Any]:
        return {
            "n": self.number,
            "start": self.started_at.isoformat(),
            "end": self.ended_at.isoformat() if self.ended_at else None,
            "code": self.exit_code,
            "sig": self.signal,
            "out": self.outcome.value if self.outcome else None,
            "info": dict(self.info),
            "msg": self.message,
        }

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> Attempt:
        return cls(
            number=int(data["n"]),
            started_at=datetime.fromisoformat(data["start"]),
            ended_at=datetime.fromisoformat(data["end"]) if data.get("end") else None,
            exit_code=data.get("code"),
            signal=data.get("sig"),
            outcome=_OUTCOMES[data["out"]] if data.get("out") else None,
            info=dict(data.get("info") or {}),
            message=str(data.get("msg") or ""),
        )


class Run:
    """One run of a job for a run date: mutable, kept consistent by its methods.

    ``series_start`` is the number of attempts made before the current series (a rerun starts
    a new series, so retries are counted per series while attempt numbers keep growing).
    """

    __slots__ = (
        "_attempt_data",
        "_fixed",
        "attempts",
        "committed",
        "created_at",
        "forced",
        "job",
        "n",
        "next_try_at",
        "reason",
        "run_date",
        "run_id",
        "scheduled_for",
        "series_start",
        "state",
        "trigger",
        "upstream",
    )

    def __init__(
        self,
        *,
        job: str,
        run_date: date,
        n: int,
        created_at: datetime,
        scheduled_for: datetime,
        trigger: Trigger,
        upstream: str | None = None,
        state: RunState = RunState.SCHEDULED,
        reason: str = "",
    ) -> None:
        self.job = job
        self.run_date = run_date
        self.n = n
        self.run_id = run_id_of(job, run_date, n)
        self.created_at = created_at
        self.scheduled_for = scheduled_for
        self.trigger = trigger
        self.upstream = upstream
        self.state = state
        self.reason = reason
        self.attempts: list[Attempt] = []
        self.series_start = 0
        self.next_try_at: datetime | None = None
        self.forced = False
        # the journal record is written at every change: the parts that never change, and
        # each attempt's part, are serialised once and reused
        self._fixed = {
            "id": self.run_id,
            "job": job,
            "date": run_date.isoformat(),
            "n": n,
            "created": created_at.isoformat(),
            "for": scheduled_for.isoformat(),
            "trigger": trigger.value,
            "upstream": upstream,
        }
        self._attempt_data: list[tuple[Attempt, dict[str, Any]]] = []
        self.committed: dict[str, Any] | None = None
        """The run as last written to the journal (the engine's fail-stop goes back to it)."""

    def move(self, to: RunState, reason: str = "") -> None:
        """Change state by the table (raises ``TransitionError`` otherwise)."""
        if to is not self.state and to not in TRANSITIONS[self.state]:
            raise TransitionError(
                f"run {self.run_id}: {self.state.value} -> {to.value} is not an allowed change"
            )
        self.state = to
        self.reason = reason

    @property
    def attempts_in_series(self) -> int:
        return len(self.attempts) - self.series_start

    @property
    def current_attempt(self) -> Attempt | None:
        return self.attempts[-1] if self.attempts else None

    def end_attempt(self, **changes: Any) -> Attempt:
        attempt = replace(self.attempts[-1], **changes)
        self.attempts[-1] = attempt
        return attempt

    def to_data(self) -> dict[str, Any]:
        cache = self._attempt_data
        del cache[len(self.attempts) :]
        for index, attempt in enumerate(self.attempts):
            if index == len(cache):
                cache.append((attempt, attempt.to_data()))
            elif cache[index][0] is not attempt:
                cache[index] = (attempt, attempt.to_data())
        return {
            **self._fixed,
            "state": self.state.value,
            "reason": self.reason,
            "attempts": [data for _, data in cache],
            "series": self.series_start,
            "next_try": self.next_try_at.isoformat() if self.next_try_at else None,
            "forced": self.forced,
        }

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> Run:
        """The run a journal record holds (``to_data`` reversed); fast, as a restart builds
        every live run this way."""
        run = cls.__new__(cls)
        run.job = data["job"]
        run.run_date = date.fromisoformat(data["date"])
        run.n = data["n"]
        run.run_id = data["id"]
        run.created_at = datetime.fromisoformat(data["created"])
        run.scheduled_for = datetime.fromisoformat(data["for"])
        run.trigger = _TRIGGERS[data["trigger"]]
        run.upstream = data.get("upstream")
        run.state = _STATES[data["state"]]
        run.reason = data.get("reason") or ""
        attempts = [Attempt.from_data(a) for a in data.get("attempts") or ()]
        run.attempts = attempts
        run.series_start = data.get("series") or 0
        next_try = data.get("next_try")
        run.next_try_at = datetime.fromisoformat(next_try) if next_try else None
        run.forced = bool(data.get("forced"))
        run._fixed = {key: data[key] for key in _FIXED_KEYS}
        run._attempt_data = list(zip(attempts, data.get("attempts") or (), strict=True))
        run.committed = None
        return run

    def __repr__(self) -> str:
        return f"<Run {self.run_id} {self.state.value}>"


_FIXED_KEYS = ("id", "job", "date", "n", "created", "for", "trigger", "upstream")
# enum lookups by value, without Enum.__call__'s overhead (replay builds every run at start)
_STATES = {state.value: state for state in RunState}
_TRIGGERS = {trigger.value: trigger for trigger in Trigger}
_OUTCOMES = {outcome.value: outcome for outcome in AttemptOutcome}


def run_id_of(job: str, run_date: date, n: int) -> str:
    """``<job>.<run_date>.<n>``, e.g. ``ice.2026-10-19.1``."""
    return f"{job}.{run_date.isoformat()}.{n}"
