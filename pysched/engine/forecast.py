"""The forecast: every run a config would create in a window of days, without running anything.

It walks the same ``Schedule`` objects the engine's firing heap uses, so a forecast and the real
day agree by construction: a run for each open firing of each enabled job, plus a run for each
dependency-only job whenever a job it depends on (same run date) gets a run it has not had for
that run date yet. Firings are taken by their local date in each job's own zone, so
``--date 2026-10-19`` means "what fires on the 19th where each job lives".
"""

from __future__ import annotations

import heapq
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Literal

from pysched.config.model import Config
from pysched.timing.schedule import Schedule

Trigger = Literal["schedule", "dependency"]

FORECAST_DAYS_MAX = 366
"""The longest window the server forecasts, in days (the API's ``/forecast``; offline, with
the config file, the CLI goes to two years: that is the caller's own CPU)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ForecastRun:
    """One run the config would create: when, for which business day, and why."""

    job: str
    run_date: date
    fires_at: datetime
    """When the run is created: the firing (in the job's zone), or its upstream's firing."""
    trigger: Trigger
    upstream: str | None = None
    """For a dependency-created run, the job whose run created it."""

    def to_json(self) -> dict[str, str | None]:
        return {
            "job": self.job,
            "run_date": self.run_date.isoformat(),
            "fires_at": self.fires_at.isoformat(),
            "fires_at_utc": self.fires_at.astimezone(UTC).isoformat(),
            "trigger": self.trigger,
            "upstream": self.upstream,
        }


def forecast(
    config: Config, start: date, end: date, *, limit: int | None = None
) -> list[ForecastRun]:
    """Every run created by firings whose local date is within ``start``..``end`` (inclusive),
    in firing order (ties by config order), each dependency-created run right after its
    creator. A scheduled job makes a run at every firing, even several for one run date; a
    dependency-only job gets one run per run date, from the first upstream run of that date.

    With ``limit``, it stops once it has more than ``limit`` runs (the caller then knows the
    window holds too many to show)."""
    if end < start:
        raise ValueError(f"the window ends ({end}) before it starts ({start})")
    dependency_only: dict[str, list[str]] = defaultdict(list)
    for name, job in config.jobs.items():
        if job.schedule is None and job.enabled:
            for dependency in job.depends_on:
                if dependency.date_offset == 0 and dependency.job != name:
                    dependency_only[dependency.job].append(name)

    streams = [
        _firings_of(index, name, job.schedule, start, end)
        for index, (name, job) in enumerate(config.jobs.items())
        if job.enabled and job.schedule is not None
    ]
    created: set[tuple[str, date]] = set()
    runs: list[ForecastRun] = []
    for _, _, name, run_date, at in heapq.merge(*streams):
        if limit is not None and len(runs) > limit:
            break
        # a job may fire several times for one run date (hourly, say): each firing is a run
        created.add((name, run_date))
        runs.append(ForecastRun(job=name, run_date=run_date, fires_at=at, trigger="schedule"))
        pending = [(name, downstream) for downstream in dependency_only.get(name, ())]
        while pending:
            upstream, downstream = pending.pop(0)
            if (downstream, run_date) in created:
                continue
            created.add((downstream, run_date))
            runs.append(
                ForecastRun(
                    job=downstream,
                    run_date=run_date,
                    fires_at=at,
                    trigger="dependency",
                    upstream=upstream,
                )
            )
            pending.extend((downstream, d) for d in dependency_only.get(downstream, ()))
    return runs


def _firings_of(
    index: int, name: str, schedule: Schedule, start: date, end: date
) -> Iterator[tuple[datetime, int, str, date, datetime]]:
    """(UTC instant, config order, job, run date, local instant) for heap-merging."""
    tz = schedule.tz
    # start a little before local midnight of ``start``: firings are strictly after this
    after = datetime.combine(start, time(0), tzinfo=tz) - timedelta(hours=4)
    until = datetime.combine(end + timedelta(days=1), time(0), tzinfo=tz) + timedelta(hours=4)
    for firing in schedule.iter_firings(after, until=until):
        local_day = firing.at.date()
        if local_day < start:
            continue
        if local_day > end:
            return
        yield firing.at.astimezone(UTC), index, name, firing.run_date, firing.at
