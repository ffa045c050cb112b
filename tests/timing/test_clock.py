from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import trio
import trio.testing

from pysched.timing.clock import FakeClock, RealClock

START = datetime(2026, 10, 19, tzinfo=UTC)


async def test_fake_clock_advances_with_trio(autojump_clock: trio.testing.MockClock) -> None:
    clock = FakeClock(START)
    assert clock.now() == START
    await clock.advance(timedelta(hours=9, minutes=3))
    assert clock.now() == START + timedelta(hours=9, minutes=3)


async def test_sleepers_wake_in_order(autojump_clock: trio.testing.MockClock) -> None:
    clock = FakeClock(START)
    woke: list[tuple[str, datetime]] = []

    async def sleeper(name: str, at: datetime) -> None:
        await clock.sleep_until(at)
        woke.append((name, clock.now()))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(sleeper, "late", START + timedelta(hours=2))
        nursery.start_soon(sleeper, "early", START + timedelta(minutes=5))
        nursery.start_soon(sleeper, "past", START - timedelta(days=1))
        await clock.advance(timedelta(hours=3))
    assert [name for name, _ in woke] == ["past", "early", "late"]
    assert woke[1][1] == START + timedelta(minutes=5)
    assert woke[2][1] == START + timedelta(hours=2)


async def test_advance_refuses_without_mock_clock() -> None:
    with pytest.raises(RuntimeError, match="autojump"):
        await FakeClock(START).advance(timedelta(seconds=1))


def test_fake_clock_needs_aware_start() -> None:
    with pytest.raises(ValueError, match="aware"):
        FakeClock(datetime(2026, 1, 1))


def test_fake_clock_outside_trio_reads_start() -> None:
    assert FakeClock(START).now() == START


async def test_real_clock_past_instant_returns_at_once() -> None:
    clock = RealClock()
    now = clock.now()
    assert now.tzinfo is UTC
    with trio.fail_after(1):
        await clock.sleep_until(now - timedelta(hours=1))
