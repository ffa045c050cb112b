"""Catch-up: what to do with the firings missed while the scheduler was down.

Each job's last firing is journaled, so on open the engine knows exactly which firings fell in
the gap. The job's ``catch_up`` policy decides which become runs: ``all`` (each, up to
``scheduler.max_catch_up``), ``latest`` (only the newest; the default) or ``none``. Every
firing not made into a run is written down as skipped with its reason; past
``INDIVIDUAL_SKIPS`` per job the rest are written as one summary record, so a week-long outage
of a one-minute job cannot flood the journal.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from pysched.config.model import CatchUp, Job
from pysched.timing.schedule import Firing

INDIVIDUAL_SKIPS = 50
SCAN_LIMIT = 100_000
"""At most this many missed firings are looked at per job (a bound, like every search)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Missed:
    """The decision for one job's missed firings."""

    runs: tuple[Firing, ...]
    skipped: tuple[tuple[Firing, str], ...]
    """Firings written down one by one, with the reason."""
    summary: tuple[int, datetime, datetime, str] | None = None
    """(count, first, last, reason) of further skipped firings, written as one record."""
    last: datetime | None = None
    """The newest firing looked at: becomes the job's last firing."""


def missed_firings(job: Job, last: datetime, now: datetime, max_catch_up: int) -> Missed:
    """Decide what happens to the firings of ``job`` in (``last``, ``now``]."""
    assert job.schedule is not None
    open_firings: list[Firing] = []
    skipped: list[tuple[Firing, str]] = []
    newest: datetime | None = None
    for count, firing in enumerate(job.schedule.iter_firings(last, until=now, include_closed=True)):
        if count >= SCAN_LIMIT:
            break
        newest = firing.at
        if firing.closed is not None:
            skipped.append((firing, firing.closed))
        else:
            open_firings.append(firing)
    policy = job.catch_up
    if policy is CatchUp.ALL:
        runs = open_firings[:max_catch_up]
        extra = [
            (f, f"catch-up: more than max_catch_up={max_catch_up} missed firings")
            for f in open_firings[max_catch_up:]
        ]
    elif policy is CatchUp.LATEST and open_firings:
        runs = open_firings[-1:]
        latest = open_firings[-1].at.isoformat()
        extra = [
            (f, f"catch-up latest: superseded by the missed firing at {latest}")
            for f in open_firings[:-1]
        ]
    else:
        runs = []
        extra = [(f, "catch-up none: missed while the scheduler was down") for f in open_firings]
    if policy is not CatchUp.ALL and max_catch_up == 0:
        extra = [(f, "catch-up: max_catch_up is 0") for f in runs] + extra
        runs = []
    all_skipped = sorted(skipped + extra, key=lambda item: item[0].at.timestamp())
    summary = None
    if len(all_skipped) > INDIVIDUAL_SKIPS:
        rest = all_skipped[INDIVIDUAL_SKIPS:]
        all_skipped = all_skipped[:INDIVIDUAL_SKIPS]
        summary = (len(rest), rest[0][0].at, rest[-1][0].at, rest[0][1])
    return Missed(runs=tuple(runs), skipped=tuple(all_skipped), summary=summary, last=newest)
