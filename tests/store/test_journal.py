"""The disk store: group commit, threads, torn tails, damaged files, the lock, failing disks."""

from __future__ import annotations

import errno
import json
import logging
import os
import subprocess
import sys
import threading
import zlib
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing
from store_harness import FaultyDisk, fold, rec, triples

import pysched.store as store_package
from pysched.store import MemoryStore, Record, Store, StoreError
from pysched.store.check import inspect_state_dir

SEGMENT = "journal.000001.jsonl"
ROOT = Path(__file__).resolve().parents[2]


def test_public_names() -> None:
    assert set(store_package.__all__) == {
        "MemoryStore",
        "Record",
        "Store",
        "StoreError",
        "StoreStats",
        "check_state_dir",
    }


def test_line_format_is_exact(tmp_path: Path) -> None:
    async def main() -> None:
        store = Store.open(tmp_path, sync=False)
        await store.commit([Record(type="run", data={"id": "ice", "n": 1})])
        store.close()

    trio.run(main)
    line = (tmp_path / SEGMENT).read_bytes()
    head = b'{"v":1,"seq":1,"type":"run","data":{"id":"ice","n":1}'
    assert line == head + b',"crc":"%08x"}\n' % zlib.crc32(head)
    assert json.loads(line)["seq"] == 1


# ---- group commit ------------------------------------------------------------------------------


async def test_group_commit_batches_concurrent_commits(tmp_path: Path) -> None:
    store = Store.open(tmp_path, sync=True)
    await store.commit([rec("warm-up")])
    async with trio.open_nursery() as nursery:
        for n in range(100):
            nursery.start_soon(store.commit, [rec(f"r{n}")])
    stats = store.stats
    assert stats.commits == 101
    assert stats.fsyncs <= 10, stats  # one for the warm-up, then a few batches
    assert stats.max_batch >= 50
    assert [r.seq for r in store.records()] == list(range(1, 102))
    store.close()


async def test_sync_writes_run_in_a_worker_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    threads: list[str] = []

    class Recording(FaultyDisk):
        def sync(self, fd: int) -> None:
            threads.append(threading.current_thread().name)
            super().sync(fd)

    store = Store.open(tmp_path, sync=True)
    store._disk = Recording()
    await store.commit([rec("a")])
    assert threads and threading.main_thread().name not in threads
    store.close()


@pytest.mark.parametrize("sync", [False, None], ids=["disk_nosync", "memory"])
async def test_no_thread_without_sync(
    sync: bool | None,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    autojump_clock: trio.testing.MockClock,
) -> None:
    async def no_threads(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a thread was used")

    def no_thread_soon(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a thread was started")

    monkeypatch.setattr(trio.to_thread, "run_sync", no_threads)
    monkeypatch.setattr(trio.lowlevel, "start_thread_soon", no_thread_soon)
    store = MemoryStore() if sync is None else Store.open(tmp_path, sync=sync)
    start = trio.current_time()
    async with trio.open_nursery() as nursery:
        for n in range(20):
            nursery.start_soon(store.commit, [rec(f"r{n}")])
    await store.write_snapshot([rec("all")], archived=[("2026-10", rec("old"))])
    assert trio.current_time() == start  # the autojump clock never got a chance to run ahead
    assert fold(store.records()) == {"all": 0}
    store.close()


async def test_cancelling_the_committer_that_started_a_write_strands_nobody(
    tmp_path: Path,
) -> None:
    store = Store.open(tmp_path, sync=True)
    gate = threading.Event()
    store._disk = FaultyDisk(gate=gate)
    results: list[list[Record]] = []

    async def follower(key: str) -> None:
        results.append(await store.commit([rec(key)]))

    async with trio.open_nursery() as nursery:
        with trio.CancelScope() as leader_scope:
            nursery.start_soon(follower, "f1")  # queued behind the first write
            nursery.start_soon(follower, "f2")

            async def cancel_soon() -> None:
                await trio.testing.wait_all_tasks_blocked()
                leader_scope.cancel()
                gate.set()

            nursery.start_soon(cancel_soon)
            await store.commit([rec("leader")])
    assert sorted(r.data["id"] for batch in results for r in batch) == ["f1", "f2"]
    store = _reopen(store)
    assert fold(store.records()) == {"leader": 0, "f1": 0, "f2": 0}
    store.close()


async def test_a_cancelled_committer_does_not_strand_the_others(tmp_path: Path) -> None:
    store = Store.open(tmp_path, sync=True)
    gate = threading.Event()
    store._disk = FaultyDisk(gate=gate)
    done: list[str] = []

    async def commit(key: str) -> None:
        await store.commit([rec(key)])
        done.append(key)

    cancel_me = trio.CancelScope()

    async def cancelled_commit() -> None:
        with cancel_me:
            await store.commit([rec("cancelled")])
        done.append("cancelled" if not cancel_me.cancelled_caught else "was cancelled")

    async with trio.open_nursery() as nursery:
        nursery.start_soon(commit, "leader")
        await trio.testing.wait_all_tasks_blocked()
        nursery.start_soon(commit, "other")
        nursery.start_soon(cancelled_commit)  # queued behind the leader with "other"
        await trio.testing.wait_all_tasks_blocked()
        cancel_me.cancel()
        await trio.testing.wait_all_tasks_blocked()
        gate.set()
    assert sorted(done) == ["leader", "other", "was cancelled"]
    # the cancelled commit's record rode with the next write: it may be durable, and here is
    assert fold(store.records()) == {"leader": 0, "other": 0, "cancelled": 0}
    store.close()


async def test_a_batch_whose_committers_were_all_cancelled_is_still_written_in_order(
    tmp_path: Path,
) -> None:
    store = Store.open(tmp_path, sync=True)
    gate = threading.Event()
    store._disk = FaultyDisk(gate=gate)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(store.commit, [rec("leader")])
        await trio.testing.wait_all_tasks_blocked()
        with trio.CancelScope() as scope:
            scope.deadline = trio.current_time() + 0.05
            await store.commit([rec("orphan")])
        gate.set()
    [after] = await store.commit([rec("after")])
    assert after.seq == 3
    assert [r.data["id"] for r in store.records()] == ["leader", "orphan", "after"]
    store.close()


def test_a_run_that_ends_with_a_write_on_its_way(tmp_path: Path) -> None:
    store = Store.open(tmp_path, sync=True)
    gate = threading.Event()
    store._disk = FaultyDisk(gate=gate)

    async def give_up() -> None:
        with trio.move_on_after(0.05):
            await store.commit([rec("a")])

    trio.run(give_up)  # the run is over; the write still waits at the gate
    gate.set()

    async def carry_on() -> None:
        [b] = await store.commit([rec("b")])
        assert b.seq == 2

    trio.run(carry_on)
    store.close()
    store = Store.open(tmp_path)
    assert [r.data["id"] for r in store.records()] == ["a", "b"]
    store.close()


def test_close_waits_for_a_write_on_its_way(tmp_path: Path) -> None:
    store = Store.open(tmp_path, sync=True)
    gate = threading.Event()
    store._disk = FaultyDisk(gate=gate)

    async def give_up() -> None:
        with trio.move_on_after(0.05):
            await store.commit([rec("a")])

    trio.run(give_up)
    threading.Timer(0.05, gate.set).start()
    store.close()  # returns once the write is done: the lock is free, nothing left running
    store = Store.open(tmp_path)
    assert [r.data["id"] for r in store.records()] == ["a"]
    store.close()


# ---- torn tails and damaged files --------------------------------------------------------------


async def _committed(path: Path, count: int = 3) -> list[Record]:
    store = Store.open(path, sync=False)
    out = await store.commit([rec(f"k{i}", i) for i in range(count)])
    store.close()
    return out


def _reopen(store: Store) -> Store:
    store.close()
    return Store.open(store.state_dir, sync=False)


def _line(seq: int, version: int = 1, crc: str | None = None) -> bytes:
    head = f'{{"v":{version},"seq":{seq},"type":"run","data":{{"id":"x","value":0}}'.encode()
    return head + b',"crc":"%s"}\n' % (crc or f"{zlib.crc32(head):08x}").encode()


@pytest.mark.parametrize(
    "tail",
    [
        _line(4)[:-1],  # everything but the newline
        _line(4)[:30],  # half a JSON line
        _line(4, crc="00000000"),  # a whole line whose checksum is wrong
        b"\x00" * 40,  # a block the file system extended but never wrote
    ],
    ids=["no_newline", "half_line", "bad_crc_last_line", "zeros"],
)
async def test_torn_tail_is_cut_and_logged(
    tail: bytes, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    before = await _committed(tmp_path)
    segment = tmp_path / SEGMENT
    size = segment.stat().st_size
    with segment.open("ab") as file:
        file.write(tail)
    with caplog.at_level(logging.WARNING, logger="pysched.store"):
        store = Store.open(tmp_path, sync=True)
    assert segment.stat().st_size == size
    [warning] = caplog.records
    assert warning.levelno == logging.WARNING
    assert f"{SEGMENT}:4: torn last line" in warning.getMessage()
    assert triples(store.records()) == triples(before)
    [next_one] = await store.commit([rec("next")])
    assert next_one.seq == 4
    store.close()

    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="pysched.store"):
        store = Store.open(tmp_path)
    assert caplog.records == []
    assert len(list(store.records())) == 4
    store.close()


async def test_the_torn_tail_warning_says_what_store_check_and_the_docs_say(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    await _committed(tmp_path)
    tail = _line(4)[:-1]
    with (tmp_path / SEGMENT).open("ab") as file:
        file.write(tail)
    [checked] = inspect_state_dir(tmp_path).warnings
    with caplog.at_level(logging.WARNING, logger="pysched.store"):
        Store.open(tmp_path, sync=False).close()
    [warning] = caplog.records
    torn = f"{SEGMENT}:4: torn last line (no newline at its end)"
    assert warning.getMessage() == (
        f"{torn}: cut it off ({len(tail)} bytes): a crash interrupted that write, which was "
        "never acknowledged"
    )
    assert checked.startswith(f"{torn}: ")
    # docs/journal.md quotes the warning (wrapped): the same words
    docs = " ".join((ROOT / "docs" / "journal.md").read_text().split())
    quoted = warning.getMessage().replace(SEGMENT, "journal.000005.jsonl").replace(":4:", ":912:")
    assert quoted.replace(f"({len(tail)} bytes)", "(57 bytes)") in docs


async def test_a_flipped_byte_mid_file_is_refused(tmp_path: Path) -> None:
    await _committed(tmp_path, count=5)
    segment = tmp_path / SEGMENT
    lines = segment.read_bytes().splitlines(keepends=True)
    lines[2] = lines[2].replace(b'"value":2', b'"value":3')
    segment.write_bytes(b"".join(lines))
    with pytest.raises(StoreError, match=rf"^{SEGMENT}:3: bad checksum") as caught:
        Store.open(tmp_path)
    assert str(tmp_path) in str(caught.value)
    with pytest.raises(StoreError, match="bad checksum"):  # the refusal released the lock
        Store.open(tmp_path)
    # and cut nothing
    assert segment.read_bytes() == b"".join(lines)


def test_damage_in_an_earlier_segment_is_not_a_torn_tail(tmp_path: Path) -> None:
    (tmp_path / SEGMENT).write_bytes(_line(1) + _line(2)[:-1])
    (tmp_path / "journal.000002.jsonl").write_bytes(_line(3))
    with pytest.raises(StoreError, match=rf"{SEGMENT}:2: no newline"):
        Store.open(tmp_path)


async def test_an_unknown_version_is_refused(tmp_path: Path) -> None:
    await _committed(tmp_path)
    with (tmp_path / SEGMENT).open("ab") as file:
        file.write(_line(4, version=2))
    with pytest.raises(StoreError, match=rf"{SEGMENT}:4: unknown format version 2"):
        Store.open(tmp_path)


async def test_a_missing_line_is_refused(tmp_path: Path) -> None:
    await _committed(tmp_path, count=4)
    segment = tmp_path / SEGMENT
    lines = segment.read_bytes().splitlines(keepends=True)
    segment.write_bytes(b"".join(lines[:1] + lines[2:]))
    with pytest.raises(StoreError, match=rf"{SEGMENT}:2: seq 3 where 2 was expected"):
        Store.open(tmp_path)


async def test_a_missing_segment_is_refused(tmp_path: Path) -> None:
    await _committed(tmp_path)
    (tmp_path / "journal.000003.jsonl").write_bytes(_line(4))
    with pytest.raises(StoreError, match=r"journal\.000002\.jsonl:0: missing"):
        Store.open(tmp_path)


async def test_a_line_that_is_not_a_record_is_refused(tmp_path: Path) -> None:
    await _committed(tmp_path)
    head = b'{"v":1,"seq":4,"kind":"run"'
    line = head + b',"crc":"%08x"}\n' % zlib.crc32(head)
    with (tmp_path / SEGMENT).open("ab") as file:
        file.write(line + _line(5))
    with pytest.raises(StoreError, match=rf"{SEGMENT}:4: not a record"):
        Store.open(tmp_path)


def test_a_state_dir_that_is_a_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "state").write_text("")
    with pytest.raises(StoreError, match="cannot create state dir"):
        Store.open(tmp_path / "state")


# ---- the lock ----------------------------------------------------------------------------------


def test_a_second_open_fails_naming_the_pid(tmp_path: Path) -> None:
    store = Store.open(tmp_path)
    with pytest.raises(StoreError, match=rf"in use by another pysched \(pid {os.getpid()}\)"):
        Store.open(tmp_path)
    store.close()
    Store.open(tmp_path).close()


def test_a_deleted_lock_file_does_not_let_a_second_scheduler_in(tmp_path: Path) -> None:
    # someone tidies the state dir while pysched runs: the dir itself is locked too
    store = Store.open(tmp_path)
    (tmp_path / "lock").unlink()
    with pytest.raises(StoreError, match="in use by another pysched"):
        Store.open(tmp_path)
    store.close()
    Store.open(tmp_path).close()


def test_the_lock_held_by_another_process(tmp_path: Path) -> None:
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, os, sys\n"
            "fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)\n"
            "fcntl.flock(fd, fcntl.LOCK_EX)\n"
            "os.write(fd, b'%d\\n' % os.getpid())\n"
            "print('locked', flush=True)\n"
            "sys.stdin.read()\n",
            str(tmp_path / "lock"),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline() == b"locked\n"
        with pytest.raises(StoreError, match=rf"\(pid {holder.pid}\)"):
            Store.open(tmp_path)
    finally:
        holder.communicate(b"")
    Store.open(tmp_path).close()  # the kernel dropped the lock with its holder


# ---- failing disks -----------------------------------------------------------------------------


async def test_a_write_that_fails_half_way_is_a_torn_tail_next_time(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = Store.open(tmp_path, sync=True)
    before = await store.commit([rec("a"), rec("b")])
    store._disk = FaultyDisk(write_error=OSError(errno.ENOSPC, "No space left"), partial=20)
    outcomes: list[BaseException | None] = []

    async def commit(key: str) -> None:
        try:
            await store.commit([rec(key)])
            outcomes.append(None)
        except StoreError as exc:
            outcomes.append(exc)

    async with trio.open_nursery() as nursery:
        for key in ("c", "d", "e"):
            nursery.start_soon(commit, key)
    assert len(outcomes) == 3 and all(isinstance(o, StoreError) for o in outcomes)
    assert store.failed is not None and "journal.000001.jsonl" in str(store.failed)
    with pytest.raises(StoreError):
        await store.commit([rec("f")])
    store.close()

    with caplog.at_level(logging.WARNING, logger="pysched.store"):
        store = Store.open(tmp_path)
    assert "torn last line" in caplog.text
    assert triples(store.records()) == triples(before)
    store.close()


async def test_a_failed_fsync_is_never_retried(tmp_path: Path) -> None:
    store = Store.open(tmp_path, sync=True)
    before = await store.commit([rec("a"), rec("b")])
    disk = FaultyDisk(sync_error=OSError(errno.EIO, "Input/output error"))
    store._disk = disk
    with pytest.raises(StoreError, match="Input/output error") as caught:
        await store.commit([rec("c")])
    assert isinstance(caught.value.__cause__, OSError)
    disk.sync_error = None  # the disk "recovers": the store must not trust it again
    with pytest.raises(StoreError):
        await store.commit([rec("d")])
    store.close()

    store = Store.open(tmp_path)
    replayed = triples(store.records())
    # the failed commit's line reached the page cache, so it may be replayed; nothing else is
    assert replayed[:2] == triples(before)
    assert [seq for seq, _, _ in replayed[2:]] in ([], [3])
    store.close()


async def test_records_refuses_a_file_damaged_after_open(tmp_path: Path) -> None:
    await _committed(tmp_path)
    store = Store.open(tmp_path)
    segment = tmp_path / SEGMENT
    segment.write_bytes(segment.read_bytes().replace(b'"value":1', b'"value":7'))
    with pytest.raises(StoreError, match=rf"{SEGMENT}:2: bad checksum"):
        list(store.records())
    store.close()
