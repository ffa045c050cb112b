"""Overlap, pools and the global cap, priorities."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import date, timedelta

import pytest
import trio

from pysched.engine import Engine, RunState
from tests.engine.harness import Harness, config_from, states


def overlap_config(policy: str) -> str:
    return f"""
    jobs:
      poll:
        schedule: "*/10 * * * *"
        command: x
        overlap: {policy}
    """


async def test_overlap_skip(autojump_clock: trio.testing.MockClock) -> None:
    h = Harness(config_from(overlap_config("skip")), durations={"poll": timedelta(minutes=25)})
    async with h.engine() as engine:
        # the engine opens at 00:00, so the first firing is 00:10
        await h.advance(engine, minutes=41)
        assert states(engine) == {
            "poll.2026-10-19.1": "succeeded",
            "poll.2026-10-19.2": "skipped",
            "poll.2026-10-19.3": "skipped",
            "poll.2026-10-19.4": "running",
        }
        assert engine.book.get("poll.2026-10-19.2").reason == (
            "overlap: poll.2026-10-19.1 is still running"
        )


async def test_overlap_queue_keeps_newest_waiting(autojump_clock: trio.testing.MockClock) -> None:
    h = Harness(config_from(overlap_config("queue")), durations={"poll": timedelta(minutes=25)})
    async with h.engine() as engine:
        await h.advance(engine, minutes=31)
        assert states(engine) == {
            "poll.2026-10-19.1": "running",
            "poll.2026-10-19.2": "skipped",
            "poll.2026-10-19.3": "queued",
        }
        assert engine.book.get("poll.2026-10-19.2").reason == (
            "overlap: superseded by poll.2026-10-19.3"
        )
        await h.advance(engine, minutes=5)
        assert states(engine)["poll.2026-10-19.3"] == "running"
        assert h.launcher.started[1].at.strftime("%H:%M") == "00:35"


async def test_overlap_allow(autojump_clock: trio.testing.MockClock) -> None:
    h = Harness(config_from(overlap_config("allow")), durations={"poll": timedelta(minutes=25)})
    async with h.engine() as engine:
        await h.advance(engine, minutes=31)
        assert list(states(engine).values()) == ["running", "running", "running"]


POOLS = """
scheduler: {max_running: 3}
pools: {warehouse: 1}
jobs:
  a: {schedule: "0 1 * * *", command: x, pool: warehouse, priority: 1}
  b: {schedule: "0 1 * * *", command: x, pool: warehouse, priority: 5}
  c: {schedule: "0 1 * * *", command: x, pool: warehouse}
  d: {schedule: "0 1 * * *", command: x}
  e: {schedule: "0 1 * * *", command: x}
  f: {schedule: "0 1 * * *", command: x}
"""


def max_concurrent(engine: Engine, jobs: set[str]) -> int:
    edges = []
    for run in engine.book:
        if run.job in jobs:
            for attempt in run.attempts:
                assert attempt.ended_at is not None
                edges.append((attempt.started_at, 1))
                edges.append((attempt.ended_at, -1))
    peak = current = 0
    for _, step in sorted(edges):  # an end at T sorts before a start at T
        current += step
        peak = max(peak, current)
    return peak


async def test_pool_and_global_cap(autojump_clock: trio.testing.MockClock) -> None:
    h = Harness(config_from(POOLS), durations={j: timedelta(minutes=10) for j in "abcdef"})
    async with h.engine() as engine:
        await h.advance(engine, minutes=61)
        running = {r.job for r in engine.book.runs(state=RunState.RUNNING)}
        assert len(running) == 3
        assert len(running & {"a", "b", "c"}) == 1
        assert "b" in running  # highest priority in the pool goes first
        await h.advance(engine, hours=1)
        assert set(states(engine).values()) == {"succeeded"}
        assert max_concurrent(engine, {"a", "b", "c"}) == 1
        assert max_concurrent(engine, set("abcdef")) == 3
        order = [s.run_id.split(".")[0] for s in h.launcher.started if s.run_id[0] in "abc"]
        assert order == ["b", "a", "c"]  # priority, then age


async def test_queue_overlap_never_supersedes_a_run_waiting_to_retry(
    autojump_clock: trio.testing.MockClock,
) -> None:
    h = Harness(
        config_from(
            """
            jobs:
              poll:
                schedule: "*/10 * * * *"
                command: x
                overlap: queue
                retries: {count: 1, backoff: {initial: 15m}}
            """
        ),
        durations={"poll": timedelta(minutes=2)},
        outcomes={"poll.2026-10-19.1": [1, 0]},
    )
    async with h.engine() as engine:
        await h.advance(engine, minutes=21)
        # run 1 failed at 00:12 and waits to retry at 00:27; it counts as active, so run 2
        # (00:20) queues behind it rather than starting, and is not allowed to supersede it
        assert states(engine) == {
            "poll.2026-10-19.1": "retrying",
            "poll.2026-10-19.2": "queued",
        }
        await h.advance(engine, minutes=10)
        assert states(engine)["poll.2026-10-19.1"] == "succeeded"


def spans(engine: Engine, job: str) -> list[tuple[str, str, str]]:
    """Every attempt of ``job``: (run id, start, end) as HH:MM, in start order."""
    found = [
        (run.run_id, attempt.started_at.strftime("%H:%M"), attempt.ended_at.strftime("%H:%M"))
        for run in engine.book.runs(job=job)
        for attempt in run.attempts
        if attempt.ended_at is not None
    ]
    return sorted(found, key=lambda span: span[1])


@pytest.mark.parametrize("policy", ["queue", "skip"])
async def test_runs_ready_together_take_turns(
    policy: str, autojump_clock: trio.testing.MockClock
) -> None:
    """A backfill makes five runs of one job ready in one pass: none of them was going when
    the slots chose, yet only one may start; the others wait their turn (under ``skip`` too:
    they were queued before any of them ran)."""
    config = f"""
    jobs:
      poll: {{schedule: "0 3 1 1 *", command: x, overlap: {policy}}}
    """
    h = Harness(config_from(config), durations={"poll": timedelta(minutes=10)})
    async with h.engine() as engine:
        await engine.backfill("poll", date(2026, 10, 12), date(2026, 10, 16))
        await engine.settle()
        waiting = engine.book.runs(job="poll", state=RunState.QUEUED)
        assert len(waiting) == 4
        assert {run.reason for run in waiting} == {"waiting for another run of poll to finish"}
        await h.advance(engine, minutes=55)
        assert max_concurrent(engine, {"poll"}) == 1
        assert [span[0] for span in spans(engine, "poll")][:5] == [
            f"poll.2026-10-{day}.1" for day in range(12, 17)
        ]


async def test_a_long_backfill_journals_each_waiting_run_a_few_times_not_once_per_turn(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Runs waiting their turn are not looked through (nor rewritten) each time one finishes:
    the journal grows with the runs, not with their square."""
    config = """
    jobs:
      poll: {schedule: "0 3 1 1 *", command: x}
    """
    h = Harness(config_from(config), durations={"poll": timedelta(minutes=1)})
    async with h.engine() as engine:
        await engine.backfill("poll", date(2026, 8, 1), date(2026, 9, 29))  # 60 dates
        await engine.settle()
        assert len(engine.book.runs(job="poll", state=RunState.QUEUED)) == 59
        await h.advance(engine, minutes=61)
        assert len(engine.book.runs(job="poll", state=RunState.SUCCEEDED)) == 60
        assert max_concurrent(engine, {"poll"}) == 1
        starts = [span[0] for span in spans(engine, "poll")]
        assert starts == sorted(starts)  # oldest date first
    changes = [r for r in h.store.records() if r.type == "run"]
    assert len(changes) <= 5 * 60  # created, queued (with its reason), running, succeeded


POLL = """
jobs:
  poll: {schedule: "0 3 1 1 *", command: x}
"""


@asynccontextmanager
async def poll_backfilled() -> AsyncIterator[Engine]:
    """Job ``poll`` (ten-minute attempts, ``overlap: queue``) backfilled for three dates: the
    first runs, the other two wait their turn."""
    h = Harness(config_from(POLL), durations={"poll": timedelta(minutes=10)})
    async with h.engine() as engine:
        await engine.backfill("poll", date(2026, 10, 12), date(2026, 10, 14))
        await engine.settle()
        assert len(engine.book.runs(job="poll", state=RunState.QUEUED)) == 2
        yield engine


async def test_forcing_a_run_that_waits_its_turn_starts_it_at_once(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with poll_backfilled() as engine:
        await engine.force("poll.2026-10-14.1", by="ann")
        await engine.settle()
        assert engine.book.get("poll.2026-10-14.1").state is RunState.RUNNING
        assert engine.book.get("poll.2026-10-12.1").state is RunState.RUNNING
        assert engine.book.get("poll.2026-10-13.1").state is RunState.QUEUED


async def test_runs_waiting_their_turn_start_once_a_reload_allows_overlap(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with poll_backfilled() as engine:
        await engine.apply_config(config_from(POLL.replace("x}", "x, overlap: allow}")))
        await engine.settle()
        assert len(engine.book.runs(job="poll", state=RunState.RUNNING)) == 3


async def test_holding_the_next_run_in_line_lets_the_one_after_it_go(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """The run next in line may wait for a pool slot, not for its job; held there, it must not
    leave the runs behind it waiting for it."""
    config = """
    pools: {db: 2}
    jobs:
      poll: {schedule: "0 3 1 1 *", command: x, pool: db}
      a: {schedule: "0 3 1 1 *", command: x, pool: db}
      b: {schedule: "0 3 1 1 *", command: x, pool: db, priority: 10}
    """
    minutes = {"poll": 10, "a": 15, "b": 15}
    h = Harness(
        config_from(config), durations={k: timedelta(minutes=v) for k, v in minutes.items()}
    )
    async with h.engine() as engine:
        await engine.backfill("poll", date(2026, 10, 12), date(2026, 10, 14))
        await engine.settle()  # the first runs; the others wait for it
        await engine.trigger("a")  # the pool's other slot, until minute 15
        await h.advance(engine, minutes=9)
        await engine.trigger("b")  # first in line for db when poll's first run ends
        await h.advance(engine, minutes=2)
        second = engine.book.get("poll.2026-10-13.1")
        assert engine.book.runs(job="b")[0].state is RunState.RUNNING
        assert second.state is RunState.QUEUED  # poll's first run is over: it waits for db
        await engine.hold(second.run_id, by="ann")
        await h.advance(engine, minutes=30)
        assert engine.book.get("poll.2026-10-14.1").state is RunState.SUCCEEDED


def retrying_job(schedule: str, failing_once: int) -> Harness:
    """Job ``p`` (two-minute attempts, two retries 10 minutes apart) whose runs 1 to
    ``failing_once`` fail their first attempt."""
    config = f"""
    jobs:
      p:
        schedule: "{schedule}"
        command: x
        retries: {{count: 2, backoff: {{initial: 10m}}}}
    """
    return Harness(
        config_from(config),
        durations={"p": timedelta(minutes=2)},
        outcomes={f"p.2026-10-19.{n}": [1, 0] for n in range(1, failing_once + 1)},
    )


async def test_a_retry_that_comes_due_goes_before_a_newer_run(
    autojump_clock: trio.testing.MockClock,
) -> None:
    h = retrying_job("0,5 1 * * *", failing_once=1)
    async with h.engine() as engine:
        await h.advance(engine, hours=1, minutes=30)
        # run 1 fails at 01:02 and retries at 01:12; run 2 (01:05) waits for it all along
        assert spans(engine, "p") == [
            ("p.2026-10-19.1", "01:00", "01:02"),
            ("p.2026-10-19.1", "01:12", "01:14"),
            ("p.2026-10-19.2", "01:14", "01:16"),
        ]


async def test_catch_up_all_runs_every_missed_firing_in_order(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Missed firings of one run date are not superseded by each other under ``queue``."""
    h = Harness(
        config_from(
            """
            jobs:
              q: {schedule: "0 * * * *", command: x, catch_up: all}
            """
        ),
        durations={"q": timedelta(minutes=30)},
    )
    async with h.engine():
        pass
    await h.clock.advance(timedelta(hours=4, minutes=30))
    async with h.engine(store=h.store.reopen()) as engine:
        await h.advance(engine, hours=2)
        missed = [f"q.2026-10-19.{n}" for n in range(1, 5)]  # 01:00 to 04:00
        assert [span[0] for span in spans(engine, "q")][:4] == missed
        assert all(engine.book.get(run_id).state is RunState.SUCCEEDED for run_id in missed)


async def test_two_retries_due_together_do_not_wait_for_each_other(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Both queued for a retry, both going: each would wait for the other for ever; the
    slots' order picks one, and the other waits for that one only."""
    h = retrying_job("0 3 1 1 *", failing_once=2)
    async with h.engine() as engine:
        first = await engine.trigger("p")
        await h.advance(engine, minutes=3)  # p.1 failed at 00:02, retrying until 00:12
        await engine.hold(first.run_id)
        await engine.trigger("p")  # p.2 starts (nothing going) and fails at 00:05
        await h.advance(engine, minutes=3)
        await engine.release(first.run_id)  # its retry is due: queued, waiting for p.2
        await h.advance(engine, hours=2)
        assert set(states(engine, job="p").values()) == {"succeeded"}
        assert max_concurrent(engine, {"p"}) == 1


async def test_a_forced_run_chosen_first_is_going_for_the_others(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Two slots free at once: the forced run and a newer one of its job are chosen in one
    dispatch; the forced one ignores overlap, the newer one still waits for it."""
    h = Harness(
        config_from(
            """
            scheduler: {max_running: 2}
            jobs:
              blk: {schedule: "0 3 1 1 *", command: x, overlap: allow}
              p: {schedule: "0 3 1 1 *", command: x}
            """
        ),
        durations={"p": timedelta(minutes=10), "blk": timedelta(minutes=5)},
    )
    async with h.engine() as engine:
        await engine.trigger("blk")
        await engine.trigger("blk")  # both slots taken until 00:05
        forced = await engine.trigger("p")
        await engine.hold(forced.run_id)
        await engine.force(forced.run_id)
        newer = await engine.trigger("p")
        await h.advance(engine, minutes=30)
        assert max_concurrent(engine, {"p"}) == 1
        assert [span[0] for span in spans(engine, "p")] == [forced.run_id, newer.run_id]


async def test_a_due_retry_waits_for_the_running_run_even_with_another_in_backoff(
    autojump_clock: trio.testing.MockClock,
) -> None:
    h = retrying_job("0 3 1 1 *", failing_once=3)
    # p.1 runs again while p.3 waits out its backoff; releasing p.2 (its retry due) must see
    # p.1 running, whichever of the two the job's set of going runs offers first
    async with h.engine() as engine:
        p1 = await engine.trigger("p")  # 00:00-00:02 fails, retrying until 00:12
        await h.advance(engine, minutes=3)
        await engine.hold(p1.run_id)  # held: not going
        p2 = await engine.trigger("p")  # 00:03-00:05 fails, retrying until 00:15
        await h.advance(engine, minutes=3)
        await engine.hold(p2.run_id)
        await engine.trigger("p")  # p.3 00:06-00:08 fails, retrying until 00:18
        await h.advance(engine, minutes=3)  # 00:09
        await engine.release(p1.run_id)  # due retry; p.3 only in backoff: p.1 starts
        await h.advance(engine, seconds=30)
        assert engine.book.get(p1.run_id).state.value == "running"
        await engine.release(p2.run_id)  # due retry; p.1 RUNNING, p.3 retrying
        await h.advance(engine, hours=2)
        assert max_concurrent(engine, {"p"}) == 1


async def test_queued_runs_follow_their_job_to_another_pool_on_reload(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Queued runs were filed under the pool their job had when they queued: moved to a pool
    that a reload then removed, they never started; moved to a smaller pool, they overran it."""
    before = """
    scheduler: {max_running: 1}
    pools: {a: 5, b: 1, z: 1}
    jobs:
      zj: {schedule: "0 3 1 1 *", command: x, pool: z, overlap: allow}
      yj: {schedule: "0 3 1 1 *", command: x, pool: a, overlap: allow}
      other: {schedule: "0 3 1 1 *", command: x, pool: b}
    """
    after = """
    scheduler: {max_running: 10}
    pools: {a: 5, b: 1}
    jobs:
      zj: {schedule: "0 3 1 1 *", command: x, overlap: allow}
      yj: {schedule: "0 3 1 1 *", command: x, pool: b, overlap: allow}
      other: {schedule: "0 3 1 1 *", command: x, pool: b}
    """
    h = Harness(config_from(before), durations={"zj": timedelta(minutes=10)})
    async with h.engine() as engine:
        for job in ("zj", "zj", "zj", "yj", "yj"):
            await engine.trigger(job)
        await engine.settle()
        assert len(engine.book.runs(state=RunState.QUEUED)) == 4  # max_running 1
        await engine.apply_config(config_from(after))
        await engine.settle()
        # zj's queued runs left pool z (gone) and start; of yj's, one fits pool b (size 1)
        assert len(engine.book.runs(job="zj", state=RunState.RUNNING)) == 3
        assert len(engine.book.runs(job="yj", state=RunState.RUNNING)) == 1
        await engine.trigger("other")
        await engine.settle()
        assert engine.book.runs(job="other")[0].state is RunState.QUEUED  # b is full
        assert engine.slot_use().pools["b"] == (1, 1)
