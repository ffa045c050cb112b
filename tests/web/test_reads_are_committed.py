"""A read never shows a change whose commit is still in flight (invariant 1).

The run reads (one run, the list of runs) answer during a pass's commit with the state before
it: a run's journal record stays as it was until the commit, and a run the pass is making is
not listed yet (asked for by id, it is shown once written). Every other read waits for the
commit. If the commit fails, no read ever sees the change.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Sequence
from datetime import date
from pathlib import Path
from typing import Any

import pytest
import trio

from pysched.store import MemoryStore, Record
from tests.web.api_harness import Api, open_api

DAY = date(2026, 10, 16)
commit_written_or_failed = pytest.mark.parametrize(
    "fail", [False, True], ids=["commit_written", "commit_failed"]
)


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


class Reads:
    """What each read answered, and whether it answered while the commit was held."""

    def __init__(self) -> None:
        self.early: dict[str, bool] = {}
        self.status: dict[str, int] = {}
        self.body: dict[str, Any] = {}


async def read_during_commit(
    api: Api,
    action: Callable[[], Awaitable[object]],
    paths: dict[str, str],
    *,
    fail: bool,
) -> Reads:
    """Run ``action``, hold its commit, send a GET to each of ``paths`` meanwhile, then let
    the commit go on (or fail). The API's store must be a ``GatedStore``."""
    store = api.harness.store
    assert isinstance(store, GatedStore)
    reads = Reads()
    store.gate = trio.Event()
    store.waiting = trio.Event()
    async with trio.open_nursery() as nursery:

        async def act() -> None:
            with contextlib.suppress(Exception):  # a fail-stop answers it with an error
                await action()

        async def read(name: str, path: str) -> None:
            reads.status[name], reads.body[name] = await api.get(path, role="viewer")

        nursery.start_soon(act)
        await store.waiting.wait()  # the change is in the book, its commit in flight
        for name, path in paths.items():
            nursery.start_soon(read, name, path)
        await trio.testing.wait_all_tasks_blocked()
        reads.early = {name: name in reads.status for name in paths}
        if fail:
            store.inject_failure()
        store.gate.set()
    store.gate = None
    return reads


@commit_written_or_failed
async def test_a_run_being_made_is_not_listed_and_shown_by_id_once_written(
    tmp_path: Path, fail: bool
) -> None:
    async with open_api(tmp_path, store=GatedStore()) as api:
        reads = await read_during_commit(
            api,
            lambda: api.engine.trigger("extract", DAY),
            {
                "list": "/api/v1/runs?date=2026-10-16",
                "one": "/api/v1/runs/extract.2026-10-16.1",
            },
            fail=fail,
        )
        assert reads.early["list"]  # at once, with what the journal held
        assert reads.status["list"] == 200 and reads.body["list"] == {"runs": [], "count": 0}
        assert not reads.early["one"]  # waits for the commit that writes it
        if fail:
            assert reads.status["one"] == 404
        else:
            assert reads.status["one"] == 200
            assert reads.body["one"]["run_id"] == "extract.2026-10-16.1"
        status, body = await api.get("/api/v1/runs?job=extract", role="viewer")
        assert status == 200 and body["count"] == (0 if fail else 1)


@commit_written_or_failed
async def test_a_run_being_changed_is_read_as_it_was_until_its_commit(
    tmp_path: Path, fail: bool
) -> None:
    async with open_api(tmp_path, store=GatedStore()) as api:
        run = await api.engine.trigger("transform", DAY, by="alice")  # waits for extract
        assert run.state.value == "waiting"
        one = f"/api/v1/runs/{run.run_id}"
        reads = await read_during_commit(
            api,
            lambda: api.engine.hold(run.run_id, by="bob"),
            {
                "one": one,
                "waiting": "/api/v1/runs?date=2026-10-16&state=waiting",
                "held": "/api/v1/runs?date=2026-10-16&state=held",
                "job": "/api/v1/jobs/transform",  # shows the job's runs as they are: waits
            },
            fail=fail,
        )
        assert reads.early == {"one": True, "waiting": True, "held": True, "job": False}
        assert reads.body["one"]["state"] == "waiting"
        assert [a["action"] for a in reads.body["one"]["actions"]] == ["trigger"]
        assert [r["run_id"] for r in reads.body["waiting"]["runs"]] == [run.run_id]
        assert reads.body["held"]["count"] == 0
        after = "waiting" if fail else "held"
        assert [r["state"] for r in reads.body["job"]["recent_runs"]] == [after]

        status, body = await api.get(one, role="viewer")
        assert status == 200 and body["state"] == after
        actions = [a["action"] for a in body["actions"]]
        assert actions == (["trigger"] if fail else ["trigger", "hold"])
        status, body = await api.get(f"/api/v1/runs?date=2026-10-16&state={after}")
        assert status == 200 and body["count"] == 1


async def test_a_rerun_run_keeps_its_duration_in_the_jobs_typical_one_until_written(
    tmp_path: Path, autojump_clock: object
) -> None:
    """The job's typical duration is worked out from journal records too: while the rerun
    of its one succeeded run is being written, the run still counts as it was. A read that
    looks at the live run (an attempt's log: the rerun's attempt 2) waits for the commit."""
    async with open_api(tmp_path, store=GatedStore()) as api:
        run = await api.engine.trigger("extract", DAY)
        await api.advance(minutes=5)
        one = f"/api/v1/runs/{run.run_id}"
        reads = await read_during_commit(
            api,
            lambda: api.engine.rerun(run.run_id),
            {"one": one, "log": f"{one}/attempts/2/log"},
            fail=False,
        )
        assert reads.early == {"one": True, "log": False}
        shown = reads.body["one"]
        assert shown["state"] == "succeeded" and shown["duration_s"] is not None
        assert shown["typical_duration_s"] == shown["duration_s"]
