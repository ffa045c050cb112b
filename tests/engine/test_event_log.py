"""The event ring: numbered from ``first_id``, bounded, with a per-run index that forgets
what leaves the ring."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pysched.engine.events import EventLog

AT = datetime(2026, 10, 19, tzinfo=UTC)


@given(
    capacity=st.integers(1, 8),
    runs=st.lists(st.sampled_from(["a", "b", "c", None]), max_size=40),
    first_id=st.integers(1, 10**15),
)
def test_a_runs_events_are_exactly_those_still_in_the_ring(
    capacity: int, runs: list[str | None], first_id: int
) -> None:
    log = EventLog(capacity, first_id=first_id)
    for run in runs:
        log.publish(AT, "run_changed", {"run_id": run} if run else {"job": "x"})
    ring = log.recent()
    assert len(ring) == min(capacity, len(runs))
    assert [e.id for e in ring] == list(
        range(first_id + len(runs) - len(ring), first_id + len(runs))
    )
    for run in ("a", "b", "c"):
        assert log.for_run(run) == [e for e in ring if e.data.get("run_id") == run]
    assert log.since(first_id - 1 + len(runs) - len(ring)) == ring


@pytest.mark.parametrize("first_id", [1, 1_796_085_971_114_662])
def test_zero_means_from_this_logs_first_event_whatever_its_number(first_id: int) -> None:
    log = EventLog(capacity=5, first_id=first_id)
    assert (log.published, log.last_id) == (0, first_id - 1)
    assert log.since(0) == []
    for n in range(3):
        log.publish(AT, "run_changed", {"run_id": f"r{n}"})
    assert log.published == 3
    assert [event.id for event in log.since(0) or []] == [first_id, first_id + 1, first_id + 2]
    if first_id > 1:  # an id from before this life, not 0: a reset
        assert log.since(first_id - 2) is None
    for n in range(3):
        log.publish(AT, "run_changed", {"run_id": f"s{n}"})
    assert log.since(0) is None  # the first event has left the ring
