"""Clocks: where the engine gets the time, so tests can make a whole day pass in a blink.

The engine never calls ``datetime.now()`` or ``trio.sleep()`` itself; it asks its ``Clock``.
Instants are timezone-aware UTC.

- ``RealClock`` reads the wall clock and sleeps in bounded steps, so a wall-clock jump (NTP,
  a suspended laptop) is noticed within ``RealClock.MAX_STEP`` rather than after the full wait.
- ``FakeClock`` maps trio's own clock onto a chosen start instant. Under trio's
  ``MockClock(autojump_threshold=0)`` (pytest-trio's ``autojump_clock`` fixture) virtual time
  jumps to the next deadline whenever every task is blocked, so ``await clock.advance(hours=9)``
  runs everything due in those nine hours, in order, in milliseconds of real time.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from typing import Protocol

import trio


class Clock(Protocol):
    """The engine's only source of time.

    ``now()`` returns an aware UTC instant that never goes backwards within one clock (the real
    one may, if the wall clock is set back; the engine tolerates that). ``sleep_until`` returns
    at or after ``instant`` (at once if it has passed).

    **Cancellation:** ``sleep_until`` is a checkpoint and can be cancelled like ``trio.sleep``.
    """

    def now(self) -> datetime: ...

    async def sleep_until(self, instant: datetime) -> None: ...


class RealClock:
    """The wall clock (UTC), sleeping in steps of at most ``MAX_STEP`` seconds."""

    MAX_STEP = 30.0

    def now(self) -> datetime:
        return datetime.now(UTC)

    async def sleep_until(self, instant: datetime) -> None:
        while True:
            remaining = (instant - self.now()).total_seconds()
            if remaining <= 0:
                await trio.lowlevel.checkpoint()
                return
            await trio.sleep(min(remaining, self.MAX_STEP))


class FakeClock:
    """Virtual time for tests, built on trio's clock.

    ``FakeClock(start)`` reads ``start`` at the moment it is first used inside ``trio.run`` and
    moves exactly as trio's clock moves from then on. Outside a trio run it reads ``start``.
    """

    def __init__(self, start: datetime) -> None:
        if start.tzinfo is None:
            raise ValueError("FakeClock needs an aware start instant, e.g. tzinfo=UTC")
        self._start = start.astimezone(UTC)
        self._origin: float | None = None

    def _trio_origin(self) -> float:
        if self._origin is None:
            self._origin = trio.current_time()
        return self._origin

    def now(self) -> datetime:
        try:
            elapsed = trio.current_time() - self._trio_origin()
        except RuntimeError:  # not inside trio.run
            return self._start
        return self._start + timedelta(seconds=elapsed)

    async def sleep_until(self, instant: datetime) -> None:
        seconds = (instant.astimezone(UTC) - self._start).total_seconds()
        await trio.sleep_until(self._trio_origin() + seconds)

    async def advance(self, delta: timedelta) -> None:
        """Let ``delta`` of virtual time pass, running everything that falls due, in order.

        Needs trio's ``MockClock`` with autojump (pytest-trio's ``autojump_clock`` fixture, or
        ``trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))``); with any other
        clock it raises ``RuntimeError`` rather than really sleeping.
        """
        from trio.testing import MockClock  # here: trio.testing imports pytest when present

        clock = trio.lowlevel.current_clock()
        if not isinstance(clock, MockClock) or math.isinf(clock.autojump_threshold):
            raise RuntimeError(
                "FakeClock.advance needs trio's MockClock with autojump: use pytest-trio's "
                "autojump_clock fixture, or trio.run(main, clock=MockClock(autojump_threshold=0))"
            )
        self._trio_origin()
        await trio.sleep(delta.total_seconds())

    def __repr__(self) -> str:
        return f"FakeClock(now={self.now().isoformat()})"
