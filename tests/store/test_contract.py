"""The store contract (``BaseStore``), run against the disk store (sync and not) and MemoryStore."""

from __future__ import annotations

import errno
from typing import Any

import pytest
import trio
from store_harness import Kind, as_records, fold, rec, triples

from pysched.store import Record, StoreError, base


async def test_commit_then_replay_round_trip(kind: Kind) -> None:
    store = kind.open()
    first = await store.commit([rec("a", 1), rec("b", {"nested": [1, 2.5, None, True]})])
    second = await store.commit([Record(type="firing", data={"id": "c", "value": "x"})])
    assert [r.seq for r in first + second] == [1, 2, 3]
    assert first[1].data == {"id": "b", "value": {"nested": [1, 2.5, None, True]}}
    assert list(store.records()) == first + second

    store = kind.reopen(store)
    assert triples(store.records()) == triples(first + second)
    store.close()


async def test_seq_continues_after_reopen(kind: Kind) -> None:
    store = kind.open()
    await store.commit([rec("a"), rec("b")])
    store = kind.reopen(store)
    [third] = await store.commit([rec("c")])
    assert third.seq == 3
    store = kind.reopen(store)
    assert [r.seq for r in store.records()] == [1, 2, 3]
    store.close()


async def test_data_comes_back_as_json_would(kind: Kind) -> None:
    store = kind.open()
    await store.commit([Record(type="run", data={"id": "t", "value": (1, 2), "ü": "naïve"})])
    store = kind.reopen(store)
    [back] = store.records()
    assert back.data == {"id": "t", "value": [1, 2], "ü": "naïve"}
    store.close()


async def test_bad_records_are_refused_and_use_no_seq(kind: Kind) -> None:
    store = kind.open()
    with pytest.raises(ValueError, match="record type 'Run'"):
        await store.commit([rec("a"), Record(type="Run", data={})])
    with pytest.raises(ValueError, match="not JSON-able"):
        await store.commit([Record(type="run", data={"id": "a", "value": {1, 2}})])
    with pytest.raises(ValueError, match="not JSON-able"):
        await store.commit([Record(type="run", data={"id": "a", "value": float("nan")})])
    assert store.failed is None
    [ok] = await store.commit([rec("a")])
    assert ok.seq == 1
    assert await store.commit([]) == []
    store.close()


async def test_concurrent_committers_all_durable_in_order(kind: Kind) -> None:
    store = kind.open()
    returned: dict[int, list[Record]] = {}

    async def committer(n: int) -> None:
        mine: list[Record] = []
        for i in range(5):
            mine += await store.commit([rec(f"{n}.{i}", i), rec(f"{n}.{i}b", i)])
        returned[n] = mine

    async with trio.open_nursery() as nursery:
        for n in range(40):
            nursery.start_soon(committer, n)
    seqs = sorted(r.seq for mine in returned.values() for r in mine)
    assert seqs == list(range(1, 401))
    for mine in returned.values():
        assert [r.seq for r in mine] == sorted(r.seq for r in mine)
        # the two records of one commit are neighbours
        assert all(mine[i + 1].seq == mine[i].seq + 1 for i in range(0, len(mine), 2))

    store = kind.reopen(store)
    replayed = list(store.records())
    assert [r.seq for r in replayed] == list(range(1, 401))
    assert {r.seq: r.data["id"] for r in replayed} == {
        r.seq: r.data["id"] for mine in returned.values() for r in mine
    }
    store.close()


async def test_snapshot_then_replay_gives_the_same_state(kind: Kind) -> None:
    store = kind.open()
    for i in range(30):
        await store.commit([rec(f"k{i % 7}", i)])
    model = fold(store.records())
    await store.write_snapshot(as_records(model))
    await store.commit([rec("k1", "after"), rec("new", 1)])
    model.update({"k1": "after", "new": 1})
    assert fold(store.records()) == model

    store = kind.reopen(store)
    replayed = list(store.records())
    assert fold(replayed) == model
    assert len(replayed) == 7 + 2  # the snapshot's records, then what came after
    [later] = await store.commit([rec("k2", "later")])
    assert later.seq == 33
    store.close()


async def test_commits_racing_a_snapshot_are_all_replayed(kind: Kind) -> None:
    store = kind.open()
    model: dict[str, object] = {}

    async def change(key: str, value: int) -> None:
        model[key] = value  # in memory first, then committed (write-ahead)
        await store.commit([rec(key, value)])

    for i in range(5):
        await change(f"k{i}", i)

    async def snapshots() -> None:
        for _ in range(2):
            await trio.sleep(0)
            await store.write_snapshot(as_records(model))  # the state of this very instant

    async def changes(offset: int) -> None:
        for i in range(30):  # on well after the last snapshot
            await change(f"c{offset}.{i}", i)  # a key of its own: a lost change shows

    async with trio.open_nursery() as nursery:
        nursery.start_soon(snapshots)
        for offset in range(4):
            nursery.start_soon(changes, offset)
    store = kind.reopen(store)
    assert fold(store.records()) == model
    store.close()


async def test_retention_moves_records_to_the_archive(kind: Kind) -> None:
    store = kind.open()
    await store.commit([rec("old1", 1), rec("old2", 2), rec("keep", 3)])
    await store.write_snapshot(
        [rec("keep", 3)],
        archived=[("2026-09", rec("old1", 1)), ("2026-10", rec("old2", 2))],
    )
    await store.write_snapshot([rec("keep", 3)], archived=[("2026-09", rec("old3", 9))])
    store = kind.reopen(store)
    assert fold(store.records()) == {"keep": 3}
    assert [(month, r.data["id"]) for month, r in store.archived()] == [
        ("2026-09", "old1"),
        ("2026-09", "old3"),
        ("2026-10", "old2"),
    ]
    if kind.on_disk:
        assert sorted(p.name for p in (kind.state_dir / "archive").iterdir()) == [
            "2026-09.jsonl",
            "2026-10.jsonl",
        ]
    with pytest.raises(ValueError, match="not YYYY-MM"):
        await store.write_snapshot([], archived=[("2026-13", rec("x"))])
    store.close()


async def test_wants_snapshot_once_the_segment_is_big(kind: Kind) -> None:
    store = kind.open(snapshot_bytes=2_000)
    assert not store.wants_snapshot
    while not store.wants_snapshot:
        await store.commit([rec("k", "x" * 100)])
    assert store.stats.bytes > 2_000
    await store.write_snapshot([rec("k", "x" * 100)])
    assert not store.wants_snapshot
    store.close()


async def test_a_failed_write_stops_the_store(kind: Kind) -> None:
    store = kind.open()
    before = await store.commit([rec("a", 1), rec("b", 2)])
    kind.fail_next_write(store, OSError(errno.ENOSPC, "No space left on device"))
    with pytest.raises(StoreError, match="No space left on device") as caught:
        await store.commit([rec("c", 3)])
    assert isinstance(caught.value.__cause__, OSError)
    assert caught.value.__cause__.errno == errno.ENOSPC
    assert store.failed is caught.value
    with pytest.raises(StoreError, match="fail-stop"):
        await store.commit([rec("d", 4)])
    with pytest.raises(StoreError):
        await store.write_snapshot([])
    assert not store.wants_snapshot

    store = kind.reopen(store)
    assert store.failed is None
    assert triples(store.records()) == triples(before)
    [again] = await store.commit([rec("c", 3)])
    assert again.seq == 3
    store.close()


async def test_close_is_idempotent_and_final(kind: Kind) -> None:
    store = kind.open()
    await store.commit([rec("a")])
    store.close()
    store.close()
    with pytest.raises(StoreError, match="closed"):
        await store.commit([rec("b")])


async def test_a_commit_cancelled_before_it_starts_writes_nothing(kind: Kind) -> None:
    store = kind.open()
    with trio.CancelScope() as scope:
        scope.cancel()
        await store.commit([rec("a")])
    assert scope.cancelled_caught
    [first] = await store.commit([rec("b")])
    assert first.seq == 1
    store = kind.reopen(store)
    assert fold(store.records()) == {"b": 0}
    store.close()


async def test_stats_count_what_was_written(kind: Kind) -> None:
    store = kind.open()
    await store.commit([rec("a"), rec("b")])
    await store.commit([rec("c")])
    stats = store.stats
    assert (stats.commits, stats.records, stats.commit_count) == (2, 3, 2)
    assert stats.batches == 2
    assert stats.last_batch == 1
    assert stats.max_batch == 2
    assert stats.bytes == sum(len(line) for line in _lines(store)) > 0
    assert stats.fsyncs == (2 if kind.name == "disk_sync" else 0)
    assert stats.commit_seconds >= 0.0
    store.close()


def _lines(store: object) -> list[bytes]:
    from pysched.store import MemoryStore, Store

    if isinstance(store, MemoryStore):
        return [line for chunk in store._journal for line in chunk.splitlines(keepends=True)]
    assert isinstance(store, Store)
    return (store.state_dir / "journal.000001.jsonl").read_bytes().splitlines(keepends=True)


async def test_a_big_commit_closed_while_it_encodes_writes_nothing(
    kind: Kind, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A big commit encodes in slices with a checkpoint between them; a store closed (or
    failed) meanwhile refuses the commit instead of writing after the fact."""
    store = kind.open()
    await store.commit([rec("before")])
    encoded = 0
    real_encode = base.encode_data

    def encode_then_close(data: Any) -> bytes:
        nonlocal encoded
        encoded += 1
        if encoded == base.ENCODE_SLICE + 1:  # past the first checkpoint
            store.close()
        return real_encode(data)

    monkeypatch.setattr(base, "encode_data", encode_then_close)
    with pytest.raises(StoreError, match="closed"):
        await store.commit([rec(f"r{i}", i) for i in range(base.ENCODE_SLICE * 3)])
    monkeypatch.undo()
    store = kind.reopen(store)
    assert fold(store.records()) == {"before": 0}
    store.close()
