"""Random configs, outcomes and operator actions: the engine's invariants always hold.

Hypothesis draws a small config (scheduled and dependency-only jobs, a one-slot pool,
retries, overlap policies, timeouts), attempt outcomes and durations, and a sequence of
operator actions at random moments; at the end of the second simulated day it checks that no
slot was ever over-used, no attempt ran twice, nothing is left running or queued, and the
journal replays to exactly the state the engine holds in memory (write-ahead: nothing acted on
was unwritten).
"""

from __future__ import annotations

import contextlib
from datetime import timedelta
from typing import Any

import trio
import trio.testing
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pysched.engine import Engine
from pysched.engine.journal_state import replay
from pysched.errors import ActionError, UnknownRunError
from tests.engine.harness import Harness, config_from

ACTIONS = ["hold", "release", "cancel", "kill", "rerun", "force", "mark_success", "trigger"]


@st.composite
def scenarios(draw: st.DrawFn) -> dict[str, Any]:
    count = draw(st.integers(2, 6))
    lines = ["scheduler: {max_running: 3}", "pools: {p1: 1}", "jobs:"]
    durations: dict[str, timedelta] = {}
    outcomes: dict[str, list[int]] = {}
    for i in range(count):
        name = f"j{i}"
        lines.append(f"  {name}:")
        lines.append("    command: x")
        if i == 0 or draw(st.booleans()):
            lines.append(
                f'    schedule: "{draw(st.integers(0, 59))} {draw(st.integers(0, 5))} * * *"'
            )
        if i > 0 and draw(st.booleans()):
            up = draw(st.integers(0, i - 1))
            on = draw(st.sampled_from(["success", "failure", "done"]))
            lines.append(f"    depends_on: [{{job: j{up}, on: {on}}}]")
        elif not any(line.startswith("    schedule") for line in lines[-2:]):
            lines.append('    schedule: "0 1 * * *"')
        if draw(st.booleans()):
            lines.append("    pool: p1")
        lines.append(f"    retries: {draw(st.integers(0, 2))}")
        lines.append(f"    overlap: {draw(st.sampled_from(['queue', 'skip', 'allow']))}")
        if draw(st.booleans()):
            lines.append(f"    timeout: {draw(st.integers(5, 60))}m")
        durations[name] = timedelta(minutes=draw(st.integers(1, 30)))
        outcomes[name] = draw(st.lists(st.sampled_from([0, 0, 1]), min_size=1, max_size=3))
    actions = draw(
        st.lists(
            st.tuples(st.integers(1, 400), st.sampled_from(ACTIONS), st.integers(0, count - 1)),
            max_size=8,
        )
    )
    return {
        "text": "\n".join(lines) + "\n",
        "durations": durations,
        "outcomes": outcomes,
        "actions": sorted(actions),
    }


async def act(engine: Engine, action: str, job: str) -> None:
    if action == "trigger":
        await engine.trigger(job, by="prop")
        return
    runs = engine.book.runs(job=job)
    if not runs:
        return
    with contextlib.suppress(ActionError, UnknownRunError):
        await getattr(engine, action)(runs[-1].run_id, by="prop")


def check_invariants(engine: Engine, h: Harness) -> None:
    spans: list[tuple[Any, Any, str, bool]] = []
    for run in engine.book:
        numbers = [a.number for a in run.attempts]
        assert numbers == list(range(1, len(numbers) + 1)), run
        assert run.state.value != "running", run  # by 23:00 on day two nothing still runs
        assert run.state.value != "queued", run  # nor waits for a slot or its turn
        for attempt in run.attempts:
            assert attempt.ended_at is not None and attempt.outcome is not None, run
            pool = engine.config.jobs[run.job].pool == "p1"
            spans.append((attempt.started_at, attempt.ended_at, run.run_id, pool))
    started = [(s.run_id, s.attempt) for s in h.launcher.started]
    assert len(started) == len(set(started)), "an attempt was started twice"
    events = sorted(
        [(s, 1, pool) for s, _, _, pool in spans] + [(e, -1, pool) for _, e, _, pool in spans],
        key=lambda item: (item[0], item[1]),
    )
    running = in_pool = 0
    for _, step, pool in events:
        running += step
        in_pool += step if pool else 0
        assert running <= 3, "global cap exceeded"
        assert in_pool <= 1, "pool p1 over-used"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_engine_invariants(scenario: dict[str, Any]) -> None:
    async def main() -> None:
        h = Harness(
            config_from(scenario["text"]),
            durations=scenario["durations"],
            outcomes=scenario["outcomes"],
        )
        async with h.engine() as engine:
            elapsed = 0
            for minute, action, index in scenario["actions"]:
                await h.advance(engine, minutes=minute - elapsed)
                elapsed = minute
                await act(engine, action, f"j{index}")
                await engine.settle()
            # up to 23:00 on the second day: the day's work is long done, the next day's
            # firings (from 00:00) have not begun
            await h.advance(engine, minutes=47 * 60 - elapsed)
            check_invariants(engine, h)
            memory = {run.run_id: run.to_data() for run in engine.book}
        journal = replay(h.store.reopen().records())
        assert {run.run_id: run.to_data() for run in journal.book} == memory

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
