"""Snapshots on disk: a crash between any two steps replays correctly; in-flight commits."""

from __future__ import annotations

import errno
import logging
import os
import stat
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio
import trio.testing
from store_harness import FaultyDisk, as_records, fold, rec

from pysched.store import Record, Store, StoreError, check_state_dir

STEPS = ["rotated", "archived", "written", "renamed", "dir_synced", "segment_deleted"]
INSTALLED = {"renamed", "dir_synced", "segment_deleted"}  # the rename is the commit point


async def _history(store: Store) -> dict[str, object]:
    """Two segments' worth of changes and one earlier snapshot; returns the state."""
    model: dict[str, object] = {}
    for i in range(10):
        await store.commit([rec(f"k{i % 4}", i)])
        model[f"k{i % 4}"] = i
    await store.write_snapshot(as_records(model))
    for i in range(10, 20):
        await store.commit([rec(f"k{i % 5}", i)])
        model[f"k{i % 5}"] = i
    return model


@pytest.mark.parametrize("step", STEPS)
async def test_a_crash_at_any_step_replays_correctly(
    step: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = Store.open(tmp_path, sync=True)
    model = await _history(store)
    live = {key: value for key, value in model.items() if key != "k0"}
    disk = FaultyDisk(crash_at=step)
    store._disk = disk
    with pytest.raises(StoreError, match="cannot write the snapshot"):
        await store.write_snapshot(as_records(live), archived=[("2026-10", rec("k0", model["k0"]))])
    assert disk.steps[-1] == step
    assert store.failed is not None
    store.close()

    assert check_state_dir(tmp_path) == []
    with caplog.at_level(logging.INFO, logger="pysched.store"):
        store = Store.open(tmp_path, sync=True)
    expected = dict(live) if step in INSTALLED else dict(model)
    assert fold(store.records()) == expected
    archived = [(month, r.data["id"]) for month, r in store.archived()]
    assert archived == ([] if step == "rotated" else [("2026-10", "k0")])
    assert not (tmp_path / "snapshot.jsonl.tmp").exists()

    # and the store carries on: more commits, a full snapshot, a restart
    [after] = await store.commit([rec("k9", "x")])
    assert after.seq == 21
    expected["k9"] = "x"
    await store.write_snapshot(as_records(expected))
    store.close()
    store = Store.open(tmp_path)
    assert fold(store.records()) == expected
    assert list(tmp_path.glob("journal.*")) == []  # a segment is made by its first write
    store.close()


async def test_replay_is_the_snapshot_plus_later_segments_only(tmp_path: Path) -> None:
    store = Store.open(tmp_path, sync=False)
    model = await _history(store)
    await store.write_snapshot(as_records(model))
    await store.commit([rec("k1", "new")])
    store.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "journal.000003.jsonl",
        "lock",
        "snapshot.jsonl",
    ]
    header = (tmp_path / "snapshot.jsonl").read_bytes().splitlines()[0]
    assert b'"snapshot":{"segment":3,"seq":20,"records":5}' in header
    store = Store.open(tmp_path)
    assert len(list(store.records())) == 5 + 1
    store.close()


async def test_a_snapshot_waits_for_commits_in_flight(tmp_path: Path) -> None:
    store = Store.open(tmp_path, sync=True)
    await store.commit([rec("a", 0)])
    gate = threading.Event()
    store._disk = FaultyDisk(gate=gate)
    committed: list[Record] = []

    async def commit(key: str, value: int) -> None:
        committed.extend(await store.commit([rec(key, value)]))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(commit, "a", 1)  # leads a write, held at the gate
        await trio.testing.wait_all_tasks_blocked()
        nursery.start_soon(commit, "b", 1)  # queued behind it
        nursery.start_soon(commit, "c", 1)
        await trio.testing.wait_all_tasks_blocked()
        # the engine's state already holds all three changes (write-ahead)
        nursery.start_soon(store.write_snapshot, [rec("a", 1), rec("b", 1), rec("c", 1)])
        await trio.testing.wait_all_tasks_blocked()
        gate.set()
    assert sorted(r.seq for r in committed) == [2, 3, 4]
    await store.commit([rec("d", 1)])
    store.close()
    store = Store.open(tmp_path)
    replayed = list(store.records())
    assert fold(replayed) == {"a": 1, "b": 1, "c": 1, "d": 1}
    # b and c were queued at the rotation: they went to the new segment, replayed after the
    # snapshot (harmless: records are upserts)
    assert [r.seq for r in replayed] == [0, 0, 0, 3, 4, 5]
    store.close()


async def test_a_snapshot_is_abandoned_if_a_commit_it_holds_fails(tmp_path: Path) -> None:
    store = Store.open(tmp_path, sync=True)
    await store.commit([rec("a", 0)])
    gate = threading.Event()
    store._disk = FaultyDisk(
        gate=gate, write_error=OSError(errno.EIO, "Input/output error"), only="journal."
    )
    failures: list[str] = []

    async def commit() -> None:
        with pytest.raises(StoreError):
            await store.commit([rec("a", 1)])
        failures.append("commit")

    async def snapshot() -> None:
        with pytest.raises(StoreError, match="Input/output error"):
            await store.write_snapshot([rec("a", 1)])  # holds the change that will fail
        failures.append("snapshot")

    async with trio.open_nursery() as nursery:
        nursery.start_soon(commit)
        await trio.testing.wait_all_tasks_blocked()
        nursery.start_soon(snapshot)
        await trio.testing.wait_all_tasks_blocked()
        gate.set()
    assert sorted(failures) == ["commit", "snapshot"]
    store.close()
    assert not (tmp_path / "snapshot.jsonl").exists()
    store = Store.open(tmp_path)
    assert fold(store.records()) == {"a": 0}
    store.close()


async def test_one_snapshot_at_a_time(tmp_path: Path) -> None:
    store = Store.open(tmp_path, sync=True)
    gate = threading.Event()
    store._disk = FaultyDisk(gate=gate)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(store.write_snapshot, [rec("a")])
        await trio.testing.wait_all_tasks_blocked()
        with pytest.raises(RuntimeError, match="already being written"):
            await store.write_snapshot([rec("a")])
        gate.set()
    store.close()


async def test_a_stop_as_a_snapshot_begins_lets_the_store_close(tmp_path: Path) -> None:
    # cancelled at the very start of its first worker-thread step (a SIGTERM while the
    # engine writes a snapshot): no thread ever runs it, and closing must not wait for one
    store = Store.open(tmp_path, sync=True)
    await store.commit([rec("a")])
    with trio.CancelScope() as scope:

        def live() -> Iterator[Record]:
            scope.cancel()  # lands at the next checkpoint: the hand-over to the thread
            yield rec("a")

        await store.write_snapshot(live())
    assert scope.cancelled_caught
    with trio.fail_after(5):
        await trio.to_thread.run_sync(store.close, abandon_on_cancel=True)
    store = Store.open(tmp_path)
    assert fold(store.records()) == {"a": 0}
    store.close()


async def test_bad_live_data_leaves_no_snapshot_and_the_store_working(tmp_path: Path) -> None:
    store = Store.open(tmp_path, sync=True)
    await store.commit([rec("a")])
    with pytest.raises(ValueError, match="not JSON-able"):
        await store.write_snapshot([Record(type="run", data={"id": "a", "value": object()})])
    assert store.failed is None
    assert not (tmp_path / "snapshot.jsonl").exists()
    assert not (tmp_path / "snapshot.jsonl.tmp").exists()
    await store.commit([rec("b")])
    store.close()
    store = Store.open(tmp_path)
    assert fold(store.records()) == {"a": 0, "b": 0}
    store.close()


async def test_an_archive_cut_short_by_a_crash_is_mended_before_appending(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = Store.open(tmp_path, sync=False)
    await store.write_snapshot([], archived=[("2026-10", rec("one"))])
    archive = tmp_path / "archive" / "2026-10.jsonl"
    whole = archive.read_bytes()
    archive.write_bytes(whole + whole[:25])  # a second append that a crash cut short
    assert [r.data["id"] for _, r in store.archived()] == ["one"]
    with caplog.at_level(logging.WARNING, logger="pysched.store"):
        await store.write_snapshot([], archived=[("2026-10", rec("two"))])
    assert "archive/2026-10.jsonl: cut 25 bytes" in caplog.text
    assert [r.data["id"] for _, r in store.archived()] == ["one", "two"]
    assert check_state_dir(tmp_path) == []
    store.close()


async def test_the_state_is_for_the_schedulers_user_only(tmp_path: Path) -> None:
    """The journal holds the config's text and operators' notes: files 0600, folders 0700
    (with the usual umask 022)."""
    previous = os.umask(0o022)
    try:
        state = tmp_path / "state"
        store = Store.open(state, sync=True)
        model = await _history(store)
        await store.write_snapshot(as_records(model), archived=[("2026-10", rec("k0", "old"))])
        await store.commit([rec("k1", "new")])
        store.close()
    finally:
        os.umask(previous)
    modes = {
        str(path.relative_to(state)): stat.S_IMODE(path.stat().st_mode)
        for path in [state, *state.rglob("*")]
    }
    assert modes == {
        ".": 0o700,
        "archive": 0o700,
        "archive/2026-10.jsonl": 0o600,
        "journal.000003.jsonl": 0o600,
        "lock": 0o600,
        "snapshot.jsonl": 0o600,
    }
