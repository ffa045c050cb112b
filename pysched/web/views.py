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

from pysched.config.model import Job
from pysched.engine.book import Book
from pysched.engine.events import Event
from pysched.engine.runs import AttemptOutcome, Run, RunState

TYPICAL_SAMPLE = 20
"""How many of a job's latest succeeded runs its typical duration is the median of."""


def attempt_view(attempt: Mapping[str, Any]) -> dict[str, Any]:
    """An attempt as the API shows it, from its part of the run's record."""
    outcome = attempt.get("out") or None
    return {
        "number": attempt["n"],
        "started_at": attempt["start"],
        "ended_at": attempt.get("end") or None,
        "exit_code": attempt.get("code"),
        "signal": attempt.get("sig"),
        "outcome": outcome,
        "message": str(attempt.get("msg") or ""),
        "has_log": outcome != _START_FAILED,
    }


_START_FAILED = AttemptOutcome.START_FAILED.value
_SUCCEEDED = AttemptOutcome.SUCCEEDED.value
_SUCCEEDED_STATE = RunState.SUCCEEDED.value
_FINISHED = frozenset(state.value for state in RunState if state.finished)


def _series_start(record: Mapping[str, Any]) -> str:
    """When the run's current series of attempts began (a rerun or force starts a new one:
    the time an operator took to rerun is not the job's); the record has attempts."""
    attempts = record["attempts"]
    return attempts[min(record.get("series") or 0, len(attempts) - 1)]["start"]


def _seconds(start: str, end: str | datetime) -> float:
    if not isinstance(end, datetime):
        end = datetime.fromisoformat(end)
    return (end - datetime.fromisoformat(start)).total_seconds()


def run_duration(record: Mapping[str, Any], now: datetime) -> float | None:
    """Seconds from the first attempt of the run's current series to its last attempt's end
    once the run has finished, to ``now`` while it is still going (running, waiting to try
    again, held between attempts); None before it started."""
    attempts = record.get("attempts")
    if not attempts:
        return None
    end = attempts[-1].get("end") if record["state"] in _FINISHED else None
    return max(0.0, _seconds(_series_start(record), end or now))


class TypicalDurations:
    """Each job's typical duration: the median of its latest succeeded runs (each from the
    start of the series of attempts that succeeded to its end).

    Worked out once per change of the job's runs (``Book.version_of``) and shared by every
    request: a list of a hundred runs asks for the same few jobs again and again. Read from
    the runs' records, so it builds none of their objects.
    """

    def __init__(self, book: Book) -> None:
        self._book = book
        self._known: dict[str, tuple[int, float | None]] = {}

    def of(self, job: str) -> float | None:
        version = self._book.version_of(job)
        known = self._known.get(job)
        if known is not None and known[0] == version:
            return known[1]
        durations: list[float] = []
        for run in reversed(self._book.runs_of_job(job)):
            record = run.record()  # what the journal holds, even while a pass changes the run
            if record["state"] != _SUCCEEDED_STATE:
                continue
            attempts = record.get("attempts")
            # a run marked successful whose attempts all failed says nothing of the job
            if (
                attempts
                and (end := attempts[-1].get("end"))
                and attempts[-1].get("out") == _SUCCEEDED
            ):
                durations.append(_seconds(_series_start(record), end))
                if len(durations) == TYPICAL_SAMPLE:
                    break
        typical = statistics.median(durations) if durations else None
        self._known[job] = (version, typical)
        return typical


def _ended_at(record: Mapping[str, Any]) -> str | None:
    """When a finished run ended: its last attempt's end if that ended it, else the instant
    it was finished (cancelled while queued, marked successful, skipped)."""
    if record["state"] not in _FINISHED:
        return None
    attempts = record.get("attempts") or ()
    if attempts and attempts[-1].get("end") and len(attempts) > (record.get("series") or 0):
        return attempts[-1]["end"]  # an attempt of its current series ended it
    return record.get("ended") or None


def run_fields(record: Mapping[str, Any]) -> dict[str, Any]:
    """Everything of a run's view but the two figures that change with time, from its record
    (``Run.record``): the journal's short keys spelled out, its timestamps as written."""
    attempts = record.get("attempts") or ()
    return {
        "run_id": record["id"],
        "job": record["job"],
        "run_date": record["date"],
        "n": record["n"],
        "state": record["state"],
        "reason": record.get("reason") or "",
        "trigger": record["trigger"],
        "upstream": record.get("upstream"),
        "created_at": record["created"],
        "scheduled_for": record["for"],
        "next_try_at": record.get("next_try") or None,
        "forced": bool(record.get("forced")),
        "started_at": attempts[0]["start"] if attempts else None,
        "ended_at": _ended_at(record),
        "attempts": [attempt_view(attempt) for attempt in attempts],
    }


class RunViews:
    """Runs as the API shows them, each encoded once per change and reused: a list of a
    hundred runs is then a hundred byte strings joined, not six hundred timestamps formatted.

    A view is made from the run's journal record (``Run.record``): the timestamps are already
    text there, and a run read back from the journal need not build its objects (most are
    finished and are only ever looked at). A record is replaced, never changed, at each
    commit of its run, so a cached view is kept with the record it was made from and used
    while that is still the run's: a change is never served stale. At most ``size`` are kept.
    The views are JSON bytes, which the cyclic garbage collector does not track: a cache of
    dicts held about five tracked objects per run, and full collections over them took tens of
    milliseconds of the loop. The record kept with a view is the run's own while the run is in
    the book and unchanged; an entry for a run archived or changed since keeps its old record
    (about 1.4 KB) until the view is made again or the entry is evicted.
    """

    def __init__(self, typical: TypicalDurations, *, size: int = 20_000) -> None:
        self.typical = typical
        self._size = size
        self._cache: OrderedDict[str, tuple[Mapping[str, Any], bytes]] = OrderedDict()

    def encoded(self, run: Run, now: datetime) -> bytes:
        """The run's view as JSON (an object), as the API sends it."""
        record = run.record()
        attempts = record.get("attempts")
        # a finished run's duration no longer changes with time: encoded once, kept
        fixed = record["state"] in _FINISHED and (not attempts or bool(attempts[-1].get("end")))
        cached = self._cache.get(run.run_id)
        if cached is not None and cached[0] is record:
            self._cache.move_to_end(run.run_id)
            head = cached[1]
        else:
            fields = run_fields(record)
            if fixed:
                fields["duration_s"] = run_duration(record, now)
            head = orjson.dumps(fields, default=str)[:-1]  # without its closing brace
            self._cache[run.run_id] = (record, head)
            if len(self._cache) > self._size:
                self._cache.popitem(last=False)
        typical = orjson.dumps(self.typical.of(run.job))
        if fixed:
            return b'%s,"typical_duration_s":%s}' % (head, typical)
        duration = orjson.dumps(run_duration(record, now))
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
