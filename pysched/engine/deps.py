"""Dependencies: is a run free to start, still waiting, blocked, or never going to run?

A dependency names an upstream job, a condition (``success``, ``failure``, ``done``) and a run
date offset counted in business days of the downstream job's calendar. It looks at the newest
run of the upstream job for that date:

============  ===========  ==================  ======================
upstream      on: success  on: failure         on: done
============  ===========  ==================  ======================
none yet      waiting      waiting             waiting
not finished  waiting      waiting             waiting
succeeded     met          skipped             met
failed, lost  blocked      met                 met
cancelled     blocked      skipped             met
skipped       skipped      skipped             met
============  ===========  ==================  ======================

``blocked`` means "cannot be met as things stand": an operator may rerun the upstream or mark
it successful, and the dependent goes back to waiting. ``skipped`` means the condition can never
come true from the upstream's final state (a ``cleanup`` on failure when ``load`` succeeded).
Several dependencies combine as: any skipped → skipped; else any blocked → blocked; else any
waiting → waiting; else met.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import date

from pysched.config.model import Condition, Dependency, Job
from pysched.engine.book import Book
from pysched.engine.runs import RunState
from pysched.errors import CalendarError


class Verdict(enum.IntEnum):
    """Ordered so that ``max`` of several verdicts is their combination."""

    MET = 0
    WAITING = 1
    BLOCKED = 2
    SKIPPED = 3


@dataclass(frozen=True, slots=True, kw_only=True)
class Evaluation:
    verdict: Verdict
    reason: str
    watches: tuple[tuple[str, date], ...]
    """The (upstream job, run date) pairs whose changes can change this evaluation."""


_FAILED = (RunState.FAILED, RunState.LOST)
_OUTCOMES = {
    RunState.SUCCEEDED: "succeeded",
    RunState.FAILED: "failed",
    RunState.SKIPPED: "was skipped",
    RunState.CANCELLED: "was cancelled",
    RunState.LOST: "was lost",
}
"""How a reason says that a run ended in each finished state ("and it was cancelled")."""


def evaluate(job: Job, run_date: date, book: Book) -> Evaluation:
    """Judge every dependency of ``job``'s run for ``run_date`` against the book."""
    verdict = Verdict.MET
    reasons: list[str] = []
    watches: list[tuple[str, date]] = []
    for dependency in job.depends_on:
        try:
            upstream_date = dependency.upstream_run_date(run_date, job.calendar)
        except CalendarError as exc:  # no business day in reach: only an operator can settle it
            one, reason = Verdict.BLOCKED, f"no run date for {dependency.job}: {exc}"
        else:
            watches.append((dependency.job, upstream_date))
            one, reason = _judge(dependency, upstream_date, book)
        if one > verdict:
            verdict, reasons = one, [reason]
        elif one == verdict and one is not Verdict.MET:
            reasons.append(reason)
    return Evaluation(verdict=verdict, reason="; ".join(reasons), watches=tuple(watches))


def _judge(dependency: Dependency, upstream_date: date, book: Book) -> tuple[Verdict, str]:
    name = f"{dependency.job} ({upstream_date.isoformat()})"
    upstream = book.latest_for(dependency.job, upstream_date)
    if upstream is None:
        return Verdict.WAITING, f"waiting for {name} to run"
    state = upstream.state
    if not state.finished:
        return Verdict.WAITING, f"waiting for {upstream.run_id}"
    condition = dependency.condition
    if condition is Condition.DONE:
        return Verdict.MET, ""
    if condition is Condition.SUCCESS:
        if state is RunState.SUCCEEDED:
            return Verdict.MET, ""
        if state is RunState.SKIPPED:
            return Verdict.SKIPPED, f"{upstream.run_id} was skipped"
        return Verdict.BLOCKED, f"{upstream.run_id} {_OUTCOMES[state]}"
    # Condition.FAILURE
    if state in _FAILED:
        return Verdict.MET, ""
    return Verdict.SKIPPED, f"runs only if {upstream.run_id} fails, and it {_OUTCOMES[state]}"
