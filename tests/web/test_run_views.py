"""The API's view of a run, made from its journal record: the same for a run as it is in memory
and as read back from the journal, and never stale after a change."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import orjson
import trio
from hypothesis import given
from hypothesis import strategies as st

from pysched.engine.book import Book
from pysched.engine.runs import Attempt, AttemptOutcome, Run, RunState, Trigger
from pysched.web.views import RunViews, TypicalDurations

AT = datetime(2026, 10, 19, 1, 0, 0, 250_000, tzinfo=UTC)
NOW = AT + timedelta(hours=5)

ENDS = [
    AttemptOutcome.SUCCEEDED,
    AttemptOutcome.FAILED,
    AttemptOutcome.START_FAILED,
    AttemptOutcome.KILLED,
    None,  # still running
]


def made(state: RunState, ends: list[AttemptOutcome | None], series: int, reason: str) -> Run:
    run = Run(
        job="ice",
        run_date=date(2026, 10, 16),
        n=2,
        created_at=AT,
        scheduled_for=AT + timedelta(minutes=5),
        trigger=Trigger.MANUAL,
        upstream=None,
        state=state,
        reason=reason,
    )
    for number, outcome in enumerate(ends, 1):
        started = AT + timedelta(minutes=number, microseconds=number)
        run.attempts.append(
            Attempt(
                number=number,
                started_at=started,
                ended_at=None if outcome is None else started + timedelta(seconds=30 * number),
                exit_code=None if outcome is None else number - 1,
                outcome=outcome,
                message="" if outcome is not AttemptOutcome.START_FAILED else "no such program",
            )
        )
    run.series_start = min(series, len(ends))
    if state.finished:
        run.ended_at = AT + timedelta(hours=1)
    return run


def view(views: RunViews, run: Run) -> dict[str, object]:
    async def encoded() -> bytes:
        return views.encoded(run, NOW)

    return orjson.loads(trio.run(encoded))


def views_of(*runs: Run) -> RunViews:
    book = Book()
    for run in runs:
        book.add(run)
    return RunViews(TypicalDurations(book))


@given(
    state=st.sampled_from(list(RunState)),
    ends=st.lists(st.sampled_from(ENDS), max_size=3),
    series=st.integers(0, 3),
    reason=st.text(max_size=10),
)
def test_a_run_shows_the_same_in_memory_and_read_back_from_the_journal(
    state: RunState, ends: list[AttemptOutcome | None], series: int, reason: str
) -> None:
    live = made(state, ends, series, reason)
    read_back = Run.from_data(orjson.loads(orjson.dumps(live.to_data())))
    shown = view(views_of(live), live)
    assert view(views_of(read_back), read_back) == shown
    # and what it shows is the run's own fields, spelled out
    attempts = live.attempts
    assert shown["state"] == state.value
    assert shown["reason"] == reason
    assert shown["started_at"] == (attempts[0].started_at.isoformat() if attempts else None)
    assert [a["ended_at"] for a in shown["attempts"]] == [  # type: ignore[union-attr]
        a.ended_at.isoformat() if a.ended_at else None for a in attempts
    ]
    assert [a["has_log"] for a in shown["attempts"]] == [  # type: ignore[union-attr]
        a.outcome is not AttemptOutcome.START_FAILED for a in attempts
    ]
    if not attempts:
        assert shown["duration_s"] is None
    else:
        start = attempts[min(live.series_start, len(attempts) - 1)].started_at
        last = attempts[-1]
        end = last.ended_at if state.finished and last.ended_at else NOW
        assert shown["duration_s"] == max(0.0, (end - start).total_seconds())
    if state.finished:
        in_series = len(attempts) > live.series_start
        ended = attempts[-1].ended_at if attempts and attempts[-1].ended_at and in_series else None
        assert shown["ended_at"] == (ended or live.ended_at).isoformat()  # type: ignore[union-attr]
    else:
        assert shown["ended_at"] is None


def test_a_run_read_back_is_shown_without_building_its_objects() -> None:
    """Most runs a restart reads are finished and only ever looked at: showing them keeps them
    in their record's form (about 0.9 KB less a run than built)."""
    live = made(RunState.SUCCEEDED, [AttemptOutcome.SUCCEEDED], 0, "exit 0")
    read_back = Run.from_data(orjson.loads(orjson.dumps(live.to_data())))
    views = views_of(read_back)
    assert view(views, read_back)["typical_duration_s"] == 30.0
    assert read_back._frozen  # pyright: ignore[reportPrivateUsage]
    assert read_back._attempts is None  # pyright: ignore[reportPrivateUsage]


def test_a_view_follows_each_commit_of_its_run() -> None:
    """A view is cached with the record it was made from: a new record (the next commit) gives a
    new view, and the same record the same bytes."""
    run = made(RunState.RUNNING, [None], 0, "")
    run.committed = run.to_data()
    views = views_of(run)
    first = view(views, run)
    assert first["state"] == "running"
    run.move(RunState.SUCCEEDED, "exit 0")
    ended = AT + timedelta(minutes=2)
    run.end_attempt(ended_at=ended, exit_code=0, outcome=AttemptOutcome.SUCCEEDED)
    assert view(views, run) == first  # not committed yet: the API shows what the journal holds
    run.committed = run.to_data()
    after = view(views, run)
    assert after["state"] == "succeeded"
    assert after["duration_s"] == (ended - run.attempts[0].started_at).total_seconds()


def test_a_jobs_typical_duration_follows_every_change_of_its_runs() -> None:
    """Worked out again when, and only when, one of the job's runs changed in the book: never a
    few seconds stale, and not redone for every run of a list."""
    first = made(RunState.SUCCEEDED, [AttemptOutcome.SUCCEEDED], 0, "exit 0")  # 30 s
    book = Book()
    book.add(first)
    typical = TypicalDurations(book)
    assert typical.of("ice") == 30.0
    second = made(RunState.SUCCEEDED, [AttemptOutcome.FAILED, AttemptOutcome.SUCCEEDED], 1, "")
    second.n = 3
    second.run_id = "ice.2026-10-16.3"
    book.add(second)  # a new run: its last attempt took 60 s
    assert typical.of("ice") == 45.0
    started = first.attempts[0].started_at
    first.end_attempt(ended_at=started + timedelta(seconds=90))
    first.committed = first.to_data()  # changed and committed, but the book not told
    assert typical.of("ice") == 45.0  # so the figure is the one worked out before
    book.changed(first)  # as the engine does for each run it commits
    assert typical.of("ice") == 75.0
