"""The book's indexes agree with a plain scan, whatever is added, replaced and removed."""

from __future__ import annotations

from datetime import UTC, date, datetime

from hypothesis import given
from hypothesis import strategies as st

from pysched.engine.book import Book
from pysched.engine.runs import Run, RunState, Trigger

AT = datetime(2026, 10, 19, tzinfo=UTC)
JOBS = ["a", "b"]
DATES = [date(2026, 10, 16), date(2026, 10, 19)]


def run(job: str, day: date, n: int, state: RunState = RunState.SCHEDULED) -> Run:
    made = Run(job=job, run_date=day, n=n, created_at=AT, scheduled_for=AT, trigger=Trigger.MANUAL)
    made.state = state
    return made


@given(
    steps=st.lists(
        st.tuples(
            st.sampled_from(["add", "replace", "remove"]),
            st.sampled_from(JOBS),
            st.sampled_from(DATES),
            st.integers(1, 3),
            st.sampled_from([RunState.SCHEDULED, RunState.SUCCEEDED]),
        ),
        max_size=30,
    )
)
def test_indexes_match_a_scan(steps: list) -> None:
    book = Book()
    for action, job, day, n, state in steps:
        made = run(job, day, n, state)
        present = made.run_id in book
        if action == "add" and not present:
            book.add(made)
        elif action == "replace":
            book.replace(made)
        elif action == "remove" and present:
            book.remove(book.get(made.run_id))
    everything = list(book)
    for job in [*JOBS, None]:
        for day in [*DATES, None]:
            for state in [RunState.SUCCEEDED, None]:
                expected = [
                    r
                    for r in everything
                    if (job is None or r.job == job)
                    and (day is None or r.run_date == day)
                    and (state is None or r.state is state)
                ]
                assert book.runs(job=job, run_date=day, state=state) == expected
    for job in JOBS:
        assert list(book.runs_of_job(job)) == [r for r in everything if r.job == job]
        for day in DATES:
            expected = [r for r in everything if r.job == job and r.run_date == day]
            assert book.runs_for(job, day) == expected
            assert book.count_for(job, day) == len(expected)
            assert book.latest_for(job, day) is (expected[-1] if expected else None)
    loaded = Book()
    loaded.load({r.run_id: r for r in everything})
    assert list(loaded) == everything
    for job in [*JOBS, None]:
        for day in [*DATES, None]:
            assert loaded.runs(job=job, run_date=day) == book.runs(job=job, run_date=day)
    for job in JOBS:
        assert list(loaded.runs_of_job(job)) == list(book.runs_of_job(job))
        for day in DATES:
            assert loaded.runs_for(job, day) == book.runs_for(job, day)
            assert loaded.latest_for(job, day) is book.latest_for(job, day)


@given(
    first=st.lists(st.tuples(st.sampled_from(JOBS), st.sampled_from(DATES), st.integers(1, 3))),
    then=st.lists(st.tuples(st.sampled_from(JOBS), st.sampled_from(DATES), st.integers(1, 3))),
)
def test_loading_into_a_book_is_replacing_one_by_one(first: list, then: list) -> None:
    loaded, replaced = Book(), Book()
    for batch in (first, then):
        runs = {made.run_id: made for made in (run(job, day, n) for job, day, n in batch)}
        loaded.load(dict(runs))
        for made in runs.values():
            replaced.replace(made)
    assert list(loaded) == list(replaced)
    for job in [*JOBS, None]:
        for day in [*DATES, None]:
            assert loaded.runs(job=job, run_date=day) == replaced.runs(job=job, run_date=day)
    for job in JOBS:
        for day in DATES:
            assert loaded.runs_for(job, day) == replaced.runs_for(job, day)
