"""Shared helpers for engine tests: configs from text, an engine on a fake clock."""

from __future__ import annotations

import textwrap
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from pysched.config import Config, parse_config
from pysched.engine import Engine, open_engine
from pysched.store import MemoryStore
from pysched.testing import FakeLauncher
from pysched.timing import FakeClock

START = datetime(2026, 10, 19, tzinfo=UTC)  # a Monday


def config_from(text: str, env: Mapping[str, str] | None = None) -> Config:
    return parse_config(textwrap.dedent(text), Path("pysched.yaml"), env or {})


class Harness:
    def __init__(
        self,
        config: Config,
        *,
        start: datetime = START,
        durations: Mapping[str, timedelta] | None = None,
        outcomes: Mapping[str, Sequence[int]] | None = None,
        store: Any = None,
        fail_start: Sequence[str] = (),
        first_event_id: int = 1,
    ) -> None:
        self.config = config
        self.first_event_id = first_event_id
        self.clock = FakeClock(start)
        self.launcher = FakeLauncher(
            self.clock, durations=durations, outcomes=outcomes, fail_start=fail_start
        )
        self.store = store if store is not None else MemoryStore()

    @asynccontextmanager
    async def engine(
        self, store: Any = None, config: Config | None = None
    ) -> AsyncIterator[Engine]:
        async with open_engine(
            config or self.config,
            store if store is not None else self.store,
            clock=self.clock,
            launcher=self.launcher,
            seed=1,
            first_event_id=self.first_event_id,
        ) as engine:
            await engine.settle()
            yield engine

    async def advance(self, engine: Engine, **kw: float) -> None:
        await self.clock.advance(timedelta(**kw))
        await engine.settle()


def states(engine: Engine, **filters: Any) -> dict[str, str]:
    return {run.run_id: run.state.value for run in engine.book.runs(**filters)}
