"""What the API shows of runs, jobs and events: plain JSON-ready dicts with readable keys.

The journal's records use short keys to stay small; the API spells things out
(``started_at``, ``exit_code``) and adds what a person wants at a glance: how long a run took
and how long the job's runs usually take.
"""

from __future__ import annotations

import statistics
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

import orjson
import trio

from pysched.config.model import Job
from pysched.engine.book import Book
from pysched.engine.events import Event
from pysched.engine.runs import Attempt, AttemptOutcome, Run, RunState

TYPICAL_SAMPLE = 20
"""How many of a job's latest succeeded runs its typical duration is the median of."""


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def attempt_view(attempt: Attempt) -> dict[str, Any]:
    return {
        "number": attempt.number,
        "started_at": attempt.started_at.isoformat(),
        "ended_at": _iso(attempt.ended_at),
        "exit_code": attempt.exit_code,
        "signal": attempt.signal,
        "outcome": attempt.outcome.value if attempt.outcome else None,
        "message": attempt.message,
        "has_log": attempt.outcome is not AttemptOutcome.START_FAILED,
    }


def _ended_at(run: Run, last: Attempt | None) -> datetime | None:
    """When a finished run ended: its last attempt's end if that ended it, else the instant
    it was finished (cancelled while queued, marked successful, skipped)."""
    if not run.state.finished:
        return None
    if last is not None and last.ended_at is not None and run.attempts_in_series > 0:
        return last.ended_at  # an attempt of its current series ended it
    return run.ended_at


def _series_start(run: Run) -> datetime:
    """When the run's current series of attempts began (a rerun or force starts a new one:
    the time an operator took to rerun is not the job's)."""
    attempts = run.attempts
    return attempts[min(run.series_start, len(attempts) - 1)].started_at


def run_duration(run: Run, now: datetime) -> float | None:
    """Seconds from the first attempt of the run's current series to its last attempt's end
    once the run has finished, to ``now`` while it is still going (running, waiting to try
    again, held between attempts); None before it started."""
    if not run.attempts:
        return None
    start = _series_start(run)
    last = run.attempts[-1]
    end = last.ended_at if run.state.finished and last.ended_at is not None else now
    return max(0.0, (end - start).total_seconds())


class TypicalDurations:
    """Each job's typical duration: the median of its latest succeeded runs (each from the
    start of the series of attempts that succeeded to its end).

    Worked out at most once per ``max_age`` seconds per job and shared by every request (a
    list of a hundred runs asks for the same few jobs again and again; a statistic a few
    seconds old is as good as a fresh one).
    """

    def __init__(self, book: Book, *, max_age: float = 5.0) -> None:
        self._book = book
        self._max_age = max_age
        self._known: dict[str, tuple[float, float | None]] = {}

    def of(self, job: str) -> float | None:
        now = trio.current_time()
        known = self._known.get(job)
        if known is not None and now - known[0] < self._max_age:
            return known[1]
        durations: list[float] = []
        for run in reversed(self._book.runs_of_job(job)):
            if run.state is RunState.SUCCEEDED:
                attempts = run.attempts
                last = attempts[-1] if attempts else None
                # a run marked successful whose attempts all failed says nothing of the job
                if (
                    last is not None
                    and last.ended_at is not None
                    and last.outcome is AttemptOutcome.SUCCEEDED
                ):
                    durations.append((last.ended_at - _series_start(run)).total_seconds())
                    if len(durations) == TYPICAL_SAMPLE:
                        break
        typical = statistics.median(durations) if durations else None
        self._known[job] = (now, typical)
        return typical


def _run_fields(run: Run) -> dict[str, Any]:
    """Everything of a run's view but the two figures that change with time."""
    attempts = run.attempts
    last = attempts[-1] if attempts else None
    return {
        "run_id": run.run_id,
        "job": run.job,
        "run_date": run.run_date.isoformat(),
        "n": run.n,
        "state": run.state.value,
        "reason": run.reason,
        "trigger": run.trigger.value,
        "upstream": run.upstream,
        "created_at": run.created_at.isoformat(),
        "scheduled_for": run.scheduled_for.isoformat(),
        "next_try_at": _iso(run.next_try_at),
        "forced": run.forced,
        "started_at": _iso(attempts[0].started_at) if attempts else None,
        "ended_at": _iso(_ended_at(run, last)),
        "attempts": [attempt_view(attempt) for attempt in attempts],
    }


class RunViews:
    """Runs as the API shows them, each encoded once per change and reused: a list of a
    hundred runs is then a hundred byte strings joined, not six hundred timestamps formatted.

    A cached view is keyed by everything in it that can change (state, reason, the attempts,
    the next try, forced), so a change is never served stale; at most ``size`` are kept. The
    cache holds JSON bytes, which the cyclic garbage collector does not track: a cache of
    dicts held about five tracked objects per run, and full collections over them took tens of
    milliseconds of the loop.
    """

    def __init__(self, typical: TypicalDurations, *, size: int = 20_000) -> None:
        self.typical = typical
        self._size = size
        self._cache: OrderedDict[str, tuple[tuple[Any, ...], bytes]] = OrderedDict()

    def encoded(self, run: Run, now: datetime) -> bytes:
        """The run's view as JSON (an object), as the API sends it."""
        attempts = run.attempts
        state = run.state
        # a finished run's duration no longer changes with time: encoded once, kept
        fixed = state.finished and (not attempts or attempts[-1].ended_at is not None)
        key = (state, run.reason, len(attempts), attempts[-1] if attempts else None)
        key += (run.next_try_at, run.forced, run.ended_at)
        cached = self._cache.get(run.run_id)
        if cached is not None and cached[0] == key:
            self._cache.move_to_end(run.run_id)
            head = cached[1]
        else:
            fields = _run_fields(run)
            if fixed:
                fields["duration_s"] = run_duration(run, now)
            head = orjson.dumps(fields, default=str)[:-1]  # without its closing brace
            self._cache[run.run_id] = (key, head)
            if len(self._cache) > self._size:
                self._cache.popitem(last=False)
        typical = orjson.dumps(self.typical.of(run.job))
        if fixed:
            return b'%s,"typical_duration_s":%s}' % (head, typical)
        duration = orjson.dumps(run_duration(run, now))
        return b'%s,"duration_s":%s,"typical_duration_s":%s}' % (head, duration, typical)

    def fragment(self, run: Run, now: datetime) -> orjson.Fragment:
        """The run's view, ready to be placed in an answer as it is (no re-encoding)."""
        return orjson.Fragment(self.encoded(run, now))


def job_view(
    job: Job,
    *,
    held: bool,
    next_firings: Iterable[datetime],
    recent: Iterable[Run],
    now: datetime,
    views: RunViews,
) -> dict[str, Any]:
    return {
        "name": job.name,
        "description": job.description,
        "owner": job.owner,
        "schedule": " | ".join(str(cron) for cron in job.schedule.crons) if job.schedule else None,
        "timezone": job.timezone.key,
        "calendar": job.calendar.name if job.calendar else None,
        "pool": job.pool,
        "priority": job.priority,
        "depends_on": [dependency.job for dependency in job.depends_on],
        "dependencies": [
            {"job": d.job, "on": d.condition.value, "date_offset": d.date_offset}
            for d in job.depends_on
        ],
        "enabled": job.enabled,
        "held": held,
        "next_firings": [instant.isoformat() for instant in next_firings],
        "recent_runs": [views.fragment(run, now) for run in recent],
    }


def event_view(event: Event) -> dict[str, Any]:
    return {
        "id": event.id,
        "at": event.at.isoformat(),
        "kind": event.kind,
        "data": dict(event.data),
    }


def action_view(action: Mapping[str, Any]) -> dict[str, Any]:
    keys = ("id", "at", "by", "why", "action", "target")
    return {key: action.get(key) for key in keys}
