"""Catch-up: what to do with the firings missed while the scheduler was down.

Each job's last firing is journaled, so on open the engine knows exactly which firings fell in
the gap. The job's ``catch_up`` policy decides which become runs: ``all`` (each, up to
``scheduler.max_catch_up`` of the newest), ``latest`` (only the newest; the default) or
``none``. Every firing not made into a run is written down as skipped with its reason; past
``INDIVIDUAL_SKIPS`` per job the rest are written as one summary record, so a week-long outage
of a one-minute job cannot flood the journal.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from itertools import islice

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
    """(count, first, last, reasons) of further skipped firings, written as one record."""


def missed_firings(job: Job, last: datetime, now: datetime, max_catch_up: int) -> Missed:
    """Decide what happens to the firings of ``job`` in (``last``, ``now``]."""
    assert job.schedule is not None
    scanned = list(
        islice(job.schedule.iter_firings(last, until=now, include_closed=True), SCAN_LIMIT)
    )
    unexamined: tuple[int, datetime, datetime, str] | None = None
    if len(scanned) == SCAN_LIMIT:
        # an outage long enough to pass the bound: look at the last two days in full, and
        # write down that the firings in between were not examined one by one
        resume = max(scanned[-1].at, now - timedelta(days=2))
        unexamined = (
            0,
            scanned[-1].at,
            resume,
            f"catch-up: more than {SCAN_LIMIT:,} missed firings; those between were "
            "not examined one by one",
        )
        scanned += list(job.schedule.iter_firings(resume, until=now, include_closed=True))
    open_firings = [f for f in scanned if f.closed is None]
    skipped = [(f, f.closed) for f in scanned if f.closed is not None]
    policy = job.catch_up
    keep = max_catch_up if policy is CatchUp.ALL else min(1, max_catch_up)
    runs: list[Firing] = []
    extra: list[tuple[Firing, str]] = []
    if policy is CatchUp.NONE or keep == 0:
        why = (
            "catch-up none: missed while the scheduler was down"
            if policy is CatchUp.NONE
            else "catch-up: scheduler.max_catch_up is 0"
        )
        extra = [(f, why) for f in open_firings]
    elif open_firings:
        # the newest firings are the ones worth running
        runs = open_firings[-keep:]
        older = open_firings[: len(open_firings) - len(runs)]
        if policy is CatchUp.ALL:
            why = f"catch-up all: more than max_catch_up={max_catch_up} missed firings"
        else:
            why = f"catch-up latest: superseded by the missed firing at {runs[-1].at.isoformat()}"
        extra = [(f, why) for f in older]
    every = sorted([*skipped, *extra], key=lambda item: item[0].at.timestamp())
    summary = unexamined
    if len(every) > INDIVIDUAL_SKIPS:
        rest = every[INDIVIDUAL_SKIPS:]
        every = every[:INDIVIDUAL_SKIPS]
        reasons = sorted({reason for _, reason in rest})
        if unexamined is not None:
            reasons.append(unexamined[3])
        summary = (len(rest), rest[0][0].at, rest[-1][0].at, "; ".join(reasons))
    return Missed(runs=tuple(runs), skipped=tuple(every), summary=summary)
