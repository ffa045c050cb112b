"""``engine.stop_starting()``: a graceful stop's first step fires nothing and starts nothing
more, yet still records the ends of what runs."""

from __future__ import annotations

from datetime import date, timedelta

import trio

from pysched.engine import RunState
from tests.engine.harness import Harness, config_from, states

CONFIG = """
jobs:
  ice: {schedule: "0 9 * * *", command: x}
  slow: {schedule: "0 3 1 1 *", command: x}
"""


async def test_after_stop_starting_nothing_fires_or_starts_but_ends_are_recorded(
    autojump_clock: trio.testing.MockClock,
) -> None:
    h = Harness(config_from(CONFIG), durations={"slow": timedelta(hours=2)})
    async with h.engine() as engine:
        slow = await engine.trigger("slow", date(2026, 10, 19))
        await engine.settle()
        assert engine.book.get(slow.run_id).state is RunState.RUNNING
        engine.stop_starting()
        ice = await engine.trigger("ice", date(2026, 10, 18))
        await h.advance(engine, hours=10)  # past 09:00, when ice fires
        assert states(engine) == {
            slow.run_id: "succeeded",  # its end is still recorded
            ice.run_id: "queued",  # ready, but not started
        }
        assert len(h.launcher.started) == 1
    # the next start starts what waited, and catches up the firing it did not make
    async with h.engine(store=h.store.reopen()) as again:
        await h.advance(again, minutes=5)
        assert again.book.get(ice.run_id).state is RunState.SUCCEEDED
        assert again.book.latest_for("ice", date(2026, 10, 19)) is not None
