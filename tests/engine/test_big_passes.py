"""A pass that changes many runs yields to other tasks in slices, yet stays one atomic commit."""

from __future__ import annotations

from datetime import date, timedelta

import pytest
import trio

from pysched.engine import Engine, RunState, core
from pysched.engine.core import WORK_SLICE
from pysched.errors import EngineStopped
from tests.engine.harness import Harness, config_from

CONFIG = """
scheduler: {history_days: 3000}
jobs:
  gate: {schedule: "0 3 1 1 *", command: x}
  churn: {depends_on: [gate], command: x}
"""
RUNS = 1_000


async def held_runs(engine: Engine) -> None:
    await engine.hold_job("churn")
    first = date(2020, 1, 1)
    runs = await engine.backfill("churn", first, first + timedelta(days=RUNS - 1))
    assert {run.state for run in runs} == {RunState.HELD}


async def release_watched(engine: Engine) -> tuple[int, list[set[RunState]], BaseException | None]:
    """Release the held runs while a ticker counts its turns and a reader looks at the book
    each time ``committed()`` lets it."""
    turns = 0
    seen: list[set[RunState]] = []
    done = False
    error: BaseException | None = None

    async def ticker() -> None:
        nonlocal turns
        while not done:
            turns += 1
            await trio.lowlevel.checkpoint()

    async def reader() -> None:
        while not done:
            await engine.committed()
            seen.append({run.state for run in engine.book.runs(job="churn")})
            await trio.lowlevel.checkpoint()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(ticker)
        nursery.start_soon(reader)
        await trio.lowlevel.checkpoint()  # both have started
        turns = 0
        try:
            await engine.release_job("churn")
        except EngineStopped as exc:
            error = exc
        done = True
    return turns, seen, error


async def test_a_big_release_lets_other_tasks_run(autojump_clock: trio.testing.MockClock) -> None:
    h = Harness(config_from(CONFIG))
    async with h.engine() as engine:
        await held_runs(engine)
        before = engine.events.last_id
        turns, seen, error = await release_watched(engine)
        assert error is None
        # the handler, the journal encoding and the effects each yield every 100-200 runs: a
        # single unsliced pass would give the ticker only the commit's and the pass's turns
        assert turns >= 20
        # readers saw all held or all waiting, never half a release
        assert seen and all(states in ({RunState.HELD}, {RunState.WAITING}) for states in seen)
        assert seen[-1] == {RunState.WAITING}
        events = engine.events.since(before)
        assert events is not None
        assert [e.kind for e in events].count("run_changed") == RUNS
        assert events[-1].kind == "action"  # the action comes after the runs it changed


async def test_a_big_release_that_cannot_be_written_changes_nothing(
    autojump_clock: trio.testing.MockClock,
) -> None:
    h = Harness(config_from(CONFIG))
    async with h.engine() as engine:
        await held_runs(engine)
        before = engine.events.last_id
        h.store.inject_failure()
        turns, seen, error = await release_watched(engine)
        assert isinstance(error, EngineStopped)
        assert turns >= 10  # it did yield while it worked
        assert {run.state for run in engine.book.runs(job="churn")} == {RunState.HELD}
        assert all(states == {RunState.HELD} for states in seen)
        assert engine.events.last_id == before
        assert engine.held_jobs == frozenset({"churn"})
        with pytest.raises(EngineStopped):
            await engine.release_job("churn")


async def test_an_engine_stopped_in_the_middle_of_a_big_pass_keeps_none_of_it(
    autojump_clock: trio.testing.MockClock,
) -> None:
    h = Harness(config_from(CONFIG))
    answers: list[str] = []
    stopped: list[Engine] = []
    async with trio.open_nursery() as outer:
        with trio.CancelScope() as engine_scope:
            async with h.engine() as engine:
                stopped.append(engine)
                await held_runs(engine)

                async def release() -> None:
                    try:
                        await engine.release_job("churn")
                    except EngineStopped:
                        answers.append("stopped")

                outer.start_soon(release)
                for _ in range(5):  # the release is under way, between two of its slices
                    await trio.lowlevel.checkpoint()
                assert engine._pass_open  # pyright: ignore[reportPrivateUsage]
                engine_scope.cancel()
                await trio.sleep_forever()
    assert answers == ["stopped"]
    assert {run.state for run in stopped[0].book.runs(job="churn")} == {RunState.HELD}
    async with h.engine(store=h.store.reopen()) as again:
        assert {run.state for run in again.book.runs(job="churn")} == {RunState.HELD}
        assert again.held_jobs == frozenset({"churn"})


TRIGGERS_CONFIG = "jobs:\n" + "".join(
    f'  t{i}: {{schedule: "0 3 1 1 *", command: x}}\n' for i in range(6)
)


async def triggers_stopped_after(turns: int) -> tuple[dict[str, str], set[str]]:
    """Six triggers posted together, the engine cancelled ``turns`` scheduler turns later:
    what each caller was answered, and the runs the journal holds afterwards."""
    h = Harness(config_from(TRIGGERS_CONFIG))
    answers: dict[str, str] = {}

    async def trigger(engine: Engine, job: str) -> None:
        try:
            await engine.trigger(job)
            answers[job] = "ok"
        except EngineStopped:
            answers[job] = "stopped"

    with trio.fail_after(30):  # a caller left waiting fails the test rather than hang it
        async with trio.open_nursery() as outer:
            with trio.CancelScope() as engine_scope:
                async with h.engine() as engine:
                    for job in engine.config.jobs:
                        outer.start_soon(trigger, engine, job)
                    for _ in range(turns):
                        await trio.lowlevel.checkpoint()
                    engine_scope.cancel()
                    await trio.sleep_forever()
    async with h.engine(store=h.store.reopen()) as again:
        written = {run.job for run in again.book.runs()}
    return answers, written


@pytest.mark.parametrize("turns", range(0, 40, 2))
async def test_an_engine_stopped_at_any_turn_answers_every_caller_truly(
    autojump_clock: trio.testing.MockClock, monkeypatch: pytest.MonkeyPatch, turns: int
) -> None:
    """Wherever the cancellation lands (a pass folding its batch, its commit, its effects, or
    the inbox not yet taken), every caller is answered: ``ok`` for a run the journal holds,
    ``EngineStopped`` for one it does not."""
    monkeypatch.setattr(core, "SLICE", 1)  # the effects yield after each one: more places to land
    answers, written = await triggers_stopped_after(turns)
    assert len(answers) == 6
    assert {job for job, answer in answers.items() if answer == "ok"} == written


BURST = 200
BURST_CONFIG = "scheduler: {max_running: 250}\njobs:\n" + "".join(
    f'  b{i:03d}: {{schedule: "0 3 1 1 *", command: x}}\n' for i in range(BURST)
)


async def test_a_burst_of_triggers_and_starts_is_folded_in_slices(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """200 triggers arrive together, so one pass folds them all, then starts their attempts:
    the pass yields every ``WORK_SLICE`` runs it creates and attempts it starts."""
    h = Harness(config_from(BURST_CONFIG))
    growth: list[tuple[int, int]] = []

    def counts(engine: Engine) -> tuple[int, int]:
        runs = engine.book.runs()
        return len(runs), sum(len(run.attempts) for run in runs)

    async with h.engine() as engine:

        async def ticker() -> None:
            last = counts(engine)
            while last != (BURST, BURST):
                await trio.lowlevel.checkpoint()
                now = counts(engine)
                growth.append((now[0] - last[0], now[1] - last[1]))
                last = now

        async with trio.open_nursery() as nursery:
            nursery.start_soon(ticker)
            await trio.lowlevel.checkpoint()
            for name in engine.config.jobs:
                nursery.start_soon(engine.trigger, name)
        await engine.settle()
        assert {run.state for run in engine.book.runs()} == {RunState.RUNNING}
    # trio may run the loop at the end of one batch and the start of the next: two slices
    # between two of the ticker's turns at most (unsliced, the 200 triggers were one step)
    assert max(runs for runs, _ in growth) <= 2 * WORK_SLICE
    assert max(attempts for _, attempts in growth) <= 2 * WORK_SLICE


async def test_a_reader_waits_for_one_pass_at_most_while_work_keeps_coming(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Twenty tasks triggering back to back keep a pass always due (as 200 attempts starting
    at once do); a reader that finds a pass open reads as soon as that one closes, not after
    the next ones too."""
    h = Harness(config_from(CONFIG))
    async with h.engine() as engine:
        closes = 0
        close_pass = engine._close_pass  # pyright: ignore[reportPrivateUsage]

        def counting_close() -> None:
            nonlocal closes
            closes += 1
            close_pass()

        monkeypatch.setattr(engine, "_close_pass", counting_close)
        waited: list[int] = []
        done = False

        async def trigger_back_to_back() -> None:
            while not done:
                await engine.trigger("gate")

        with trio.fail_after(30):  # a stalled loop fails rather than hangs
            async with trio.open_nursery() as nursery:
                for _ in range(20):
                    nursery.start_soon(trigger_back_to_back)
                while len(waited) < 200:
                    await trio.lowlevel.checkpoint()
                    if engine._pass_open:  # pyright: ignore[reportPrivateUsage]
                        before = closes
                        await engine.committed()
                        waited.append(closes - before)
                done = True
        assert set(waited) == {1}


async def test_readers_cancelled_while_they_wait_never_hold_the_engine() -> None:
    """Readers cancelled at every moment around a pass's close: the loop goes on (triggers
    still complete) and no reader is left counted."""
    h = Harness(config_from(CONFIG))
    async with h.engine() as engine:
        triggered = 0
        done = False

        async def trigger_back_to_back() -> None:
            nonlocal triggered
            while not done:
                await engine.trigger("gate")
                triggered += 1

        async def reader(scope: trio.CancelScope) -> None:
            with scope:
                await engine.committed()

        with trio.fail_after(30):
            async with trio.open_nursery() as nursery:
                for _ in range(5):
                    nursery.start_soon(trigger_back_to_back)
                for turn in range(2_000):
                    scopes = [trio.CancelScope() for _ in range(3)]
                    for scope in scopes:
                        nursery.start_soon(reader, scope)
                    for _ in range(turn % 3):  # cancelled 0, 1 or 2 turns later
                        await trio.lowlevel.checkpoint()
                    for scope in scopes:
                        scope.cancel()
                before = triggered
                while triggered < before + 50:  # the loop still runs passes
                    await trio.lowlevel.checkpoint()
                done = True
        assert engine._readers_waiting == 0  # pyright: ignore[reportPrivateUsage]
