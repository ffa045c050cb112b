"""``open_engine``: the engine as an async context manager that owns its tasks."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from datetime import timedelta

import trio

from pysched.config.model import Config
from pysched.engine.actions import Engine
from pysched.engine.journal_state import replay
from pysched.launch.base import Launcher
from pysched.store import Store
from pysched.store.base import BaseStore
from pysched.timing.clock import Clock


@asynccontextmanager
async def open_engine(
    config: Config,
    store: BaseStore,
    *,
    clock: Clock,
    launcher: Launcher,
    kill_grace: timedelta = timedelta(seconds=10),
    seed: int | None = None,
    first_event_id: int = 1,
) -> AsyncGenerator[Engine]:
    """Replay ``store``, recover, catch up, and run the engine until the block exits.

    The engine takes ownership of ``store`` and closes it on exit (so a new engine can open the
    same state dir). Leaving the block stops firing and watching; attempts keep running under
    their minders and the next engine adopts them. ``seed`` fixes the backoff jitter;
    ``first_event_id`` is the id of the first event published (see ``EventLog``).

    **Cancellation:** cancelling the block is how the engine is stopped; a commit in flight is
    finished first (the store shields it), nothing half-written is acted on.
    """
    engine = Engine(
        config,
        store,
        clock=clock,
        launcher=launcher,
        kill_grace=kill_grace,
        seed=seed,
        first_event_id=first_event_id,
    )
    try:
        if isinstance(store, Store):
            # reading the journal is disk work: it goes to a worker thread
            state = await trio.to_thread.run_sync(lambda: replay(store.records()))
        else:
            # in memory there is no disk to wait for, and no thread to let a test's
            # autojump clock run ahead while it works
            state = replay(store.records())
        engine.restore(state)  # a big replay froze what it built (``replay``)
        async with trio.open_nursery() as nursery:
            await nursery.start(engine.run)
            try:
                yield engine
            finally:
                nursery.cancel_scope.cancel()
    finally:
        store.close()
