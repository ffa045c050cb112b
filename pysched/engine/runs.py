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

import contextlib
import enum
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import date, datetime
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

from pysched.errors import TransitionError


class RunState(enum.Enum):
    finished: bool
    """Whether a run stays in this state until an operator reruns, forces or marks it
    (``FINISHED``); set on each member below, as a plain attribute: it is read on every
    change of every run."""

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

    # Members are singletons compared by identity: hash them by identity too, in C (Enum's
    # own hash is a Python call on the name, and states are looked up in sets on every move).
    __hash__ = object.__hash__


FINISHED = frozenset(
    {RunState.SUCCEEDED, RunState.FAILED, RunState.SKIPPED, RunState.CANCELLED, RunState.LOST}
)
"""States a run stays in until an operator reruns, forces or marks it."""
for _state in RunState:
    _state.finished = _state in FINISHED

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
        "_attempts",
        "_fixed",
        "_frozen",
        "committed",
        "created_at",
        "ended_at",
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
        self._attempts: list[Attempt] | None = []
        self.series_start = 0
        self.next_try_at: datetime | None = None
        self.ended_at: datetime | None = None
        """When the run last reached a final state (None while it is not finished)."""
        self.forced = False
        # the journal record is written at every change: the parts that never change, and
        # each attempt's part, are serialised once and reused
        self._fixed: Mapping[str, Any] = {
            "id": self.run_id,
            "job": job,
            "date": run_date.isoformat(),
            "n": n,
            "created": created_at.isoformat(),
            "for": scheduled_for.isoformat(),
            "trigger": trigger.value,
            "upstream": upstream,
        }
        zone = getattr(scheduled_for.tzinfo, "key", None)  # a ZoneInfo's name, if it is one
        if zone is not None:
            self._fixed["tz"] = zone  # ISO 8601 keeps the offset only; ``%Z`` needs the zone
        self._attempt_data: list[tuple[Attempt, dict[str, Any]]] = []
        self._frozen = False
        """True for a run read back by ``from_data`` whose other fields are not read yet."""
        self.committed: Mapping[str, Any] | None = None
        """The run as last written to the journal, or as read back from it (the engine's
        fail-stop goes back to it; the API shows it). Never changed: a commit replaces it."""

    @property
    def attempts(self) -> list[Attempt]:
        """The attempts, oldest first. A run read back from the journal builds them on first
        use: most runs a restart reads are finished and never looked at again."""
        attempts = self._attempts
        if attempts is None:
            raw: list[dict[str, Any]] = self._fixed.get("attempts") or []
            attempts = [Attempt.from_data(item) for item in raw]
            self._attempt_data = list(zip(attempts, raw, strict=True))
            self._attempts = attempts
        return attempts

    @attempts.setter
    def attempts(self, value: list[Attempt]) -> None:
        self._attempts = value
        self._attempt_data = []

    def move(self, to: RunState, reason: str = "") -> None:
        """Change state by the table (raises ``TransitionError`` otherwise)."""
        if to is not self.state and to not in TRANSITIONS[self.state]:
            raise TransitionError(
                f"run {self.run_id}: {self.state.value} -> {to.value} is not an allowed change"
            )
        self.state = to
        self.reason = reason
        if to.finished:
            self.next_try_at = None  # a cancelled or marked run has no next try

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
        if self._frozen:
            return self._frozen_data()
        return {
            **self._fixed,
            "state": self.state.value,
            "reason": self.reason,
            "attempts": self._attempts_data(),
            "series": self.series_start,
            "next_try": self.next_try_at.isoformat() if self.next_try_at else None,
            "forced": self.forced,
            "ended": self.ended_at.isoformat() if self.ended_at else None,
        }

    def record(self) -> Mapping[str, Any]:
        """The run in its journal record's form, without building its objects: what was last
        committed of it (``committed``), or ``to_data`` for a run never committed (made by
        hand, or new in a pass not yet committed). Between the engine's passes
        (``Engine.committed``) that is the run as it is. The same object until the next
        commit of the run, so a reader may cache what it makes of it by identity; never
        change it."""
        committed = self.committed
        return committed if committed is not None else self.to_data()

    def _frozen_data(self) -> dict[str, Any]:
        """``to_data`` of a run not thawed since it was read: its record, with whatever has
        been set since (a snapshot writes every live run; it need not parse them all)."""
        data = dict(self._fixed)
        data["state"] = self.state.value
        data["attempts"] = self._attempts_data()
        for name, key in _CHANGEABLE:
            try:
                value = object.__getattribute__(self, name)
            except AttributeError:
                continue  # unchanged since it was read
            if isinstance(value, datetime):
                value = value.isoformat()
            data[key] = value
        return data

    def _attempts_data(self) -> list[dict[str, Any]]:
        if self._attempts is None:  # never built: the journal's own data is still right
            return list(self._fixed.get("attempts") or ())
        cache = self._attempt_data
        del cache[len(self._attempts) :]
        for index, attempt in enumerate(self._attempts):
            if index == len(cache):
                cache.append((attempt, attempt.to_data()))
            elif cache[index][0] is not attempt:
                cache[index] = (attempt, attempt.to_data())
        return [data for _, data in cache]

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> Run:
        """The run a journal record holds (``to_data`` reversed).

        Fast, as a restart builds every live run this way: only what the book's indexes and
        the engine's start-up need is read now (id, job, run date, state); the rest is read
        from the record on first use (``_thaw``), and most runs a restart reads are finished
        and never looked at again.
        """
        run = cls.__new__(cls)
        run.job = data["job"]
        text = data["date"]
        run_date = _DATES.get(text)
        if run_date is None:
            run_date = _run_date(text)
        run.run_date = run_date
        run.n = data["n"]
        run.run_id = data["id"]
        run.state = _STATES[data["state"]]
        run._attempts = None
        run._fixed = data  # to_data overrides every key that can change, so the record
        # itself serves as the fixed part (it is never mutated: records are immutable)
        # (``_attempt_data`` is left unset: whatever sets ``_attempts`` sets it too)
        run.committed = data
        run._frozen = True
        return run

    def refreeze(self, data: Mapping[str, Any]) -> None:
        """Go back to the form ``from_data`` gives, from ``data``: this run's ``to_data`` as
        just committed. A finished run then keeps only its record until something reads it
        again, as after a restart; most finished runs are never looked at again (about 0.9 KB
        less a run: see docs/benchmarks.md, "A fourteen-minute soak")."""
        self._fixed = data
        self._attempts = None
        for name in (*_THAWED, "_attempt_data"):  # read again from the record on first use
            with contextlib.suppress(AttributeError):
                object.__delattr__(self, name)
        self.committed = data
        self._frozen = True

    def _thaw(self) -> None:
        """Read the fields ``from_data`` left for later; a field already set (a change made
        since) is kept."""
        data = self._fixed
        next_try = data.get("next_try")
        ended = data.get("ended")
        values: dict[str, Any] = {
            "created_at": datetime.fromisoformat(data["created"]),
            "scheduled_for": _in_zone(datetime.fromisoformat(data["for"]), data.get("tz")),
            "trigger": _TRIGGERS[data["trigger"]],
            "upstream": data.get("upstream"),
            "reason": data.get("reason") or "",
            "series_start": data.get("series") or 0,
            "next_try_at": datetime.fromisoformat(next_try) if next_try else None,
            "forced": bool(data.get("forced")),
            "ended_at": datetime.fromisoformat(ended) if ended else None,
        }
        for name, value in values.items():
            try:
                object.__getattribute__(self, name)
            except AttributeError:
                object.__setattr__(self, name, value)
        self._frozen = False

    if not TYPE_CHECKING:  # typed as plain attributes; this only fills them in on first use

        def __getattr__(self, name: str) -> Any:
            if name in _THAWED:
                self._thaw()
                return object.__getattribute__(self, name)
            raise AttributeError(name)

    def __repr__(self) -> str:
        return f"<Run {self.run_id} {self.state.value}>"


def _in_zone(at: datetime, zone: Any) -> datetime:
    """``at`` (read from ISO 8601, so with a fixed offset) in the zone it was written in, when
    the record names one this machine's zone data has; else as read. The same instant either
    way: only ``tzname`` (``%Z``) and later arithmetic across a clock change differ."""
    if not isinstance(zone, str) or at.tzinfo is None or len(zone) > 255:
        return at
    try:
        return at.astimezone(ZoneInfo(zone))
    except Exception:  # a hand-edited record ("Europe" is a folder, year 9999): never raise
        return at


_THAWED = frozenset(
    {
        "created_at",
        "scheduled_for",
        "trigger",
        "upstream",
        "reason",
        "series_start",
        "next_try_at",
        "forced",
        "ended_at",
    }
)
_CHANGEABLE = (
    ("reason", "reason"),
    ("series_start", "series"),
    ("next_try_at", "next_try"),
    ("forced", "forced"),
    ("ended_at", "ended"),
)
"""Fields that change after a run is created, with their record keys (state and attempts are
handled on their own)."""
# enum lookups by value, without Enum.__call__'s overhead (replay builds every run at start)
_STATES = {state.value: state for state in RunState}
_TRIGGERS = {trigger.value: trigger for trigger in Trigger}
_OUTCOMES = {outcome.value: outcome for outcome in AttemptOutcome}


_DATES: dict[str, date] = {}
"""Run dates read back, by their text: the runs of one date share one ``date``."""


def _run_date(text: str) -> date:
    if len(_DATES) >= 4096:
        _DATES.clear()
    run_date = _DATES[text] = date.fromisoformat(text)
    return run_date


def run_id_of(job: str, run_date: date, n: int) -> str:
    """``<job>.<run_date>.<n>``, e.g. ``ice.2026-10-19.1``."""
    return f"{job}.{run_date.isoformat()}.{n}"
