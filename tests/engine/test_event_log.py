"""The event ring: numbered from ``first_id``, bounded, with a per-run index that forgets
what leaves the ring."""

from __future__ import annotations

from datetime import UTC, datetime

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
