"""A read never shows a change whose commit is still in flight (invariant 1): it waits for the
commit, and if the commit fails it sees the change taken back."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from pathlib import Path

import trio

from pysched.store import MemoryStore, Record
from tests.web.api_harness import open_api


class GatedStore(MemoryStore):
    """Commits wait at a gate the test opens (and may fail on purpose)."""

    def __init__(self) -> None:
        super().__init__()
        self.gate: trio.Event | None = None
        self.waiting = trio.Event()

    async def commit(self, records: Sequence[Record]) -> list[Record]:
        if self.gate is not None and records:
            self.waiting.set()
            await self.gate.wait()
        return await super().commit(records)


async def read_during_commit(tmp_path: Path, *, fail: bool) -> tuple[object, object, bool]:
    store = GatedStore()
    async with open_api(tmp_path, store=store) as api:
        store.gate = trio.Event()
        answered = trio.Event()
        result: dict[str, object] = {}
        async with trio.open_nursery() as nursery:

            async def act() -> None:
                try:
                    await api.engine.trigger("extract", date(2026, 10, 16))
                except Exception as exc:  # the fail-stop answers the action with an error
                    result["error"] = exc

            async def read() -> None:
                await store.waiting.wait()  # the run is in the book, its commit in flight
                status, body = await api.get("/api/v1/runs?date=2026-10-16", role="viewer")
                result["status"], result["ids"] = status, [r["run_id"] for r in body["runs"]]
                answered.set()

            nursery.start_soon(act)
            nursery.start_soon(read)
            await store.waiting.wait()
            await trio.testing.wait_all_tasks_blocked()
            early = answered.is_set()
            if fail:
                store.inject_failure()
            store.gate.set()
        return result["status"], result["ids"], early


async def test_a_read_waits_for_the_commit(tmp_path: Path) -> None:
    status, ids, early = await read_during_commit(tmp_path, fail=False)
    assert not early
    assert status == 200 and isinstance(ids, list) and ids[0] == "extract.2026-10-16.1"


async def test_a_read_never_sees_a_change_whose_commit_failed(tmp_path: Path) -> None:
    status, ids, early = await read_during_commit(tmp_path, fail=True)
    assert not early
    assert status == 200 and ids == []
