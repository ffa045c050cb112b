"""Runs read back from the journal: lazily, yet exactly as written, changes included."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

from hypothesis import given
from hypothesis import strategies as st

from pysched.engine.runs import Attempt, AttemptOutcome, Run, RunState, Trigger

AT = datetime(2026, 10, 19, 1, tzinfo=UTC)


def made(attempts: int, reason: str, forced: bool, next_try: bool) -> Run:
    run = Run(
        job="ice",
        run_date=date(2026, 10, 16),
        n=2,
        created_at=AT,
        scheduled_for=AT + timedelta(minutes=5),
        trigger=Trigger.BACKFILL,
        upstream="melt",
    )
    run.move(RunState.QUEUED, reason)
    for number in range(1, attempts + 1):
        run.attempts.append(
            Attempt(
                number=number,
                started_at=AT + timedelta(minutes=number),
                ended_at=AT + timedelta(minutes=number, seconds=30),
                exit_code=1,
                outcome=AttemptOutcome.FAILED,
                info={"minder_pid": 10 + number},
            )
        )
    run.forced = forced
    run.series_start = attempts // 2
    run.next_try_at = AT + timedelta(hours=1) if next_try else None
    return run


any_run = given(
    attempts=st.integers(0, 3),
    reason=st.text(max_size=20),
    forced=st.booleans(),
    next_try=st.booleans(),
)
"""The arguments of ``made``, drawn by hypothesis."""


@any_run
def test_a_run_reads_back_as_it_was_written(
    attempts: int, reason: str, forced: bool, next_try: bool
) -> None:
    original = made(attempts, reason, forced, next_try)
    data = original.to_data()
    frozen = Run.from_data(data)
    assert frozen.to_data() == data  # a snapshot of an untouched run rewrites the same record
    thawed = Run.from_data(data)
    assert (thawed.created_at, thawed.scheduled_for) == (
        original.created_at,
        original.scheduled_for,
    )
    assert (thawed.trigger, thawed.upstream, thawed.reason) == (Trigger.BACKFILL, "melt", reason)
    assert (thawed.forced, thawed.series_start, thawed.next_try_at) == (
        original.forced,
        original.series_start,
        original.next_try_at,
    )
    assert thawed.attempts == original.attempts
    assert thawed.to_data() == data


def test_changes_made_before_the_first_read_are_kept() -> None:
    data = made(1, "waiting for a slot", False, False).to_data()
    run = Run.from_data(data)
    run.move(RunState.HELD, "held by ops")
    run.forced = True
    written = run.to_data()  # still frozen: the changes come from the fields set since
    assert (written["state"], written["reason"], written["forced"]) == ("held", "held by ops", True)
    assert written["created"] == data["created"]
    assert run.created_at == AT  # thawing now keeps the changes
    assert (run.reason, run.forced, run.state) == ("held by ops", True, RunState.HELD)
    assert run.to_data() == written


def test_attempts_replaced_on_a_run_read_back() -> None:
    data = made(2, "", False, False).to_data()
    never_read = Run.from_data(data)
    never_read.attempts = []  # set before they were ever built from the record
    assert never_read.to_data()["attempts"] == []
    read = Run.from_data(data)
    read.attempts = read.attempts[:1]
    assert read.to_data()["attempts"] == data["attempts"][:1]
    assert Run.from_data(data).to_data() == data  # the record itself is untouched


def test_runs_read_back_share_their_run_date() -> None:
    data = made(0, "", False, False).to_data()
    first, second = Run.from_data(data), Run.from_data({**data, "n": 3})
    assert first.run_date == date(2026, 10, 16)
    assert first.run_date is second.run_date


@any_run
def test_a_refrozen_run_is_the_same_run_and_changes_again(
    attempts: int, reason: str, forced: bool, next_try: bool
) -> None:
    """What the engine does to a finished run once it is committed: it keeps only its record,
    yet reads, writes and changes as before (the same object, for whoever holds it)."""
    run = made(attempts, reason, forced, next_try)
    before = (run.created_at, run.scheduled_for, run.trigger, run.upstream, run.reason)
    later = (run.forced, run.series_start, run.next_try_at, run.ended_at, list(run.attempts))
    data = run.to_data()
    run.refreeze(data)
    assert run.committed is data
    assert run.to_data() == data  # a snapshot rewrites the same record, still frozen
    assert (run.created_at, run.scheduled_for, run.trigger, run.upstream, run.reason) == before
    assert (run.forced, run.series_start, run.next_try_at, run.ended_at, run.attempts) == later
    run.move(RunState.HELD, "held by ops")  # a change after it: kept, and written
    run.attempts.append(Attempt(number=attempts + 1, started_at=AT + timedelta(hours=2)))
    written = run.to_data()
    assert (written["state"], written["reason"]) == ("held", "held by ops")
    assert [a["n"] for a in written["attempts"]] == list(range(1, attempts + 2))
    assert data["state"] == "queued"  # the committed record itself is untouched


def test_a_record_without_a_zone_reads_its_offset_and_an_unknown_zone_is_no_error() -> None:
    """Records written before ``tz`` existed, or naming a zone this machine's data lacks, read
    back the instant with its offset, as before."""
    paris = Run(
        job="ice",
        run_date=date(2026, 10, 19),
        n=1,
        created_at=AT,
        scheduled_for=datetime(2026, 10, 19, 9, tzinfo=ZoneInfo("Europe/Paris")),
        trigger=Trigger.SCHEDULE,
    )
    data = paris.to_data()
    assert data["tz"] == "Europe/Paris"
    assert Run.from_data(data).scheduled_for.tzname() == "CEST"
    odd_zones = ("Mars/Olympus", "Europe", "../etc/passwd", "a" * 5000)
    without = {k: v for k, v in data.items() if k != "tz"}
    for record in (without, *({**data, "tz": zone} for zone in odd_zones)):
        back = Run.from_data(record).scheduled_for
        assert back == paris.scheduled_for
        assert back.utcoffset() == timedelta(hours=2)
    assert "tz" not in made(0, "", False, False).to_data()  # a UTC instant names no zone


def test_a_due_time_at_the_end_of_the_calendar_reads_back_without_its_zone() -> None:
    """Converting 9999-12-31T23:00Z to Paris would overflow: the offset is kept instead."""
    data = made(0, "", False, False).to_data()
    record = {**data, "for": "9999-12-31T23:00:00+00:00", "tz": "Europe/Paris"}
    run = Run.from_data(record)
    assert run.scheduled_for == datetime(9999, 12, 31, 23, tzinfo=UTC)
    assert run.reason == data["reason"]  # the other fields read as usual
