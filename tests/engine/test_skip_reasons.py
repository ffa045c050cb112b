"""The reasons dependencies give read as sentences, whatever final state the upstream is in."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from pysched.engine.book import Book
from pysched.engine.deps import Verdict, evaluate
from pysched.engine.runs import FINISHED, Run, RunState, Trigger
from tests.engine.harness import config_from

CONFIG = config_from(
    """
    jobs:
      load: {schedule: "0 2 * * *", command: "true"}
      report: {depends_on: [load], command: "true"}
      cleanup: {depends_on: [{job: load, on: failure}], command: "true"}
      audit: {depends_on: [{job: load, on: done}], command: "true"}
    """
)
DAY = date(2026, 10, 19)
AT = datetime(2026, 10, 19, 2, tzinfo=UTC)


def _judged(job: str, upstream: RunState) -> tuple[Verdict, str]:
    book = Book()
    book.add(
        Run(
            job="load",
            run_date=DAY,
            n=1,
            created_at=AT,
            scheduled_for=AT,
            trigger=Trigger.SCHEDULE,
            state=upstream,
        )
    )
    evaluation = evaluate(CONFIG.jobs[job], DAY, book)
    return evaluation.verdict, evaluation.reason


# every finished state, as the three conditions judge it
EXPECTED = {
    RunState.SUCCEEDED: (
        (Verdict.MET, ""),
        (Verdict.SKIPPED, "runs only if load.2026-10-19.1 fails, and it succeeded"),
    ),
    RunState.FAILED: (
        (Verdict.BLOCKED, "load.2026-10-19.1 failed"),
        (Verdict.MET, ""),
    ),
    RunState.LOST: (
        (Verdict.BLOCKED, "load.2026-10-19.1 was lost"),
        (Verdict.MET, ""),
    ),
    RunState.CANCELLED: (
        (Verdict.BLOCKED, "load.2026-10-19.1 was cancelled"),
        (Verdict.SKIPPED, "runs only if load.2026-10-19.1 fails, and it was cancelled"),
    ),
    RunState.SKIPPED: (
        (Verdict.SKIPPED, "load.2026-10-19.1 was skipped"),
        (Verdict.SKIPPED, "runs only if load.2026-10-19.1 fails, and it was skipped"),
    ),
}


def test_every_finished_state_is_covered() -> None:
    assert set(EXPECTED) == FINISHED


@pytest.mark.parametrize("state", list(EXPECTED), ids=lambda state: state.value)
def test_reasons_for_a_finished_upstream(state: RunState) -> None:
    on_success, on_failure = EXPECTED[state]
    assert _judged("report", state) == on_success
    assert _judged("cleanup", state) == on_failure
    assert _judged("audit", state) == (Verdict.MET, "")
