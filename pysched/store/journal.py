"""``Store``: the journal on disk, with group commit, snapshots and retention.

The contract is on ``BaseStore``; the files are described in ``layout`` and docs/journal.md.

Group commit needs no background task (so the store needs no nursery). A commit that finds no
write on its way starts one in a worker thread, carrying every record queued so far; commits
that arrive meanwhile queue in the next batch. When a write ends, its completion (run in the
loop) starts the next batch's write *at once*, before it wakes anyone, so the disk never waits
for a task to be scheduled; then it wakes the committers of the batch just written. Seq numbers
are handed out in queue order and batches are written in that order: the journal has no gaps.
Since the write is nobody's task, a cancelled committer strands nobody.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import trio

from pysched.errors import StoreError
from pysched.store.base import BaseStore, group_by_month
from pysched.store.disk import Disk, StateLock
from pysched.store.layout import (
    ARCHIVE_DIR,
    SNAPSHOT,
    SNAPSHOT_TMP,
    STATE_DIR_MODE,
    STATE_FILE_MODE,
    Kind,
    archive_name,
    is_month,
    list_archives,
    list_segments,
    read_header,
    replay_file,
    scan_file,
    segment_name,
)
from pysched.store.lines import SnapshotHeader, encode_header, encode_record
from pysched.store.record import Record

logger = logging.getLogger(__name__)

_OPEN_APPEND = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC
_CHUNK = 1 << 20  # snapshot bytes gathered before each write


class _Batch:
    """The records of the commits that share one write (and one fsync)."""

    __slots__ = ("chunks", "count", "done", "error", "failure", "segment", "size")

    def __init__(self) -> None:
        self.chunks: list[bytes] = []
        self.count = 0
        self.segment = 0
        self.size = 0
        self.failure: BaseException | None = None  # what the write raised, in the thread
        self.done = trio.Event()  # written, or failed (then ``error`` is set)
        self.error: StoreError | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class _Opened:
    state_dir: Path
    lock: StateLock
    next_seq: int
    segment: int
    segment_used: bool
    segment_bytes: int


class Store(BaseStore):
    """The journal on disk, in a state dir that it locks. Open it with ``Store.open``."""

    state_dir: Path

    def __init__(self, opened: _Opened, *, sync: bool, snapshot_bytes: int) -> None:
        super().__init__(snapshot_bytes=snapshot_bytes, next_seq=opened.next_seq)
        self.state_dir = opened.state_dir
        self._lock = opened.lock
        self._sync = sync
        self._disk = Disk()
        self._segment = opened.segment
        self._segment_used = opened.segment_used  # has a write been sent to it (file exists)
        self._segment_bytes = opened.segment_bytes
        self._fd: int | None = None
        self._fd_segment = 0
        self._pending: _Batch | None = None  # filling while another is written
        self._writing: _Batch | None = None  # its write is on its way in a worker thread
        self._writing_run: trio.lowlevel.TrioToken | None = None  # the run told when it ends
        self._latest: _Batch | None = None  # the last batch made (pending or being written)
        self._threads = 0  # worker threads using the files: close() waits for them
        self._quiet = threading.Condition()
        self._snapshotting = False

    @classmethod
    def open(
        cls,
        state_dir: str | os.PathLike[str],
        *,
        sync: bool = True,
        snapshot_bytes: int = 64 * 2**20,
    ) -> Store:
        """Open the journal in ``state_dir`` (created if missing) and become its only owner.

        Synchronous: call it before the Trio loop starts or from a worker thread. It takes the
        lock (``StoreError`` naming the holder's pid if another pysched has it), reads the
        snapshot and every segment after it line by line, removes what a crash mid-snapshot
        left behind, and cuts a torn last line off the last segment (logged as a warning: a
        crash interrupted that write, so it was never acknowledged). Anything else wrong (a bad
        checksum or an unknown format version on any other line, a missing segment, a gap in
        seq numbers) raises ``StoreError`` naming file and line: nothing is dropped silently.

        ``sync=False`` skips every fsync (safe from a crash of the process, not of the
        machine) and does all its work in the loop thread: for tests and throwaway runs.
        ``snapshot_bytes`` is the segment size past which ``wants_snapshot`` turns true.
        """
        opened = _open_dir(Path(state_dir), sync=sync)
        return cls(opened, sync=sync, snapshot_bytes=snapshot_bytes)

    # ---- replay ------------------------------------------------------------------------------

    def records(self) -> Iterator[Record]:
        first = 1
        snapshot = self.state_dir / SNAPSHOT
        if snapshot.exists():
            first = self._checked(read_header, snapshot).segment
            yield from self._replay(snapshot, SNAPSHOT, "snapshot")
        for number, path in list_segments(self.state_dir).items():
            if number >= first:
                yield from self._replay(path, segment_name(number), "journal")

    def archived(self) -> Iterator[tuple[str, Record]]:
        for path in list_archives(self.state_dir):
            if not is_month(path.stem):
                continue
            name = archive_name(path.stem)
            for record in self._replay(path, name, "archive", tail_may_tear=True):
                yield path.stem, record

    def _replay(
        self, path: Path, name: str, kind: Kind, *, tail_may_tear: bool = False
    ) -> Iterator[Record]:
        try:
            yield from replay_file(path, name, kind, tail_may_tear=tail_may_tear)
        except ValueError as exc:
            raise StoreError(f"{exc} (state dir {self.state_dir})") from None

    def _checked(self, read: Callable[[Path], SnapshotHeader], path: Path) -> SnapshotHeader:
        try:
            return read(path)
        except ValueError as exc:
            raise StoreError(f"{exc} (state dir {self.state_dir})") from None

    # ---- commit ------------------------------------------------------------------------------

    async def commit(self, records: Sequence[Record]) -> list[Record]:
        self._check_usable()
        await trio.lowlevel.checkpoint_if_cancelled()
        if not records:
            await trio.lowlevel.cancel_shielded_checkpoint()
            return []
        started = time.perf_counter()
        numbered, data = await self._encode(records)
        if self._sync:
            batch = self._pending
            if batch is None:
                batch = self._pending = self._latest = _Batch()
            batch.chunks.append(data)
            batch.count += len(numbered)
            if self._writing is None:
                self._start_write()
            elif self._writing_run is not trio.lowlevel.current_trio_token():
                await self._adopt_write()
            await batch.done.wait()
            if batch.error is not None:
                raise batch.error
        else:
            # No fsync: a write to the page cache is a memory copy, done here without a
            # thread hop (which would also let an autojump clock run ahead in tests).
            segment = self._take_segment()
            try:
                self._write(segment, data)
            except Exception as exc:
                raise self._fail(f"cannot write {segment_name(segment)}", exc) from exc
            self._count_batch(records=len(numbered), size=len(data), fsyncs=0, current=True)
            await trio.lowlevel.cancel_shielded_checkpoint()
        self._count_commit(time.perf_counter() - started)
        return numbered

    def _start_write(self) -> None:
        """Send the pending batch to a worker thread; its completion comes back to the loop."""
        batch = self._pending
        assert batch is not None and self._writing is None
        self._pending = None
        self._writing = batch
        batch.segment = self._take_segment()
        data = b"".join(batch.chunks)
        batch.size = len(data)
        token = self._writing_run = trio.lowlevel.current_trio_token()

        def write() -> None:
            try:
                self._write(batch.segment, data)
            except BaseException as exc:  # the loop fails the store with it
                batch.failure = exc
            finally:
                self._leave_thread()

        def deliver(_: object) -> None:
            # If the run has ended, its committers went with it; the next run adopts the write.
            with contextlib.suppress(trio.RunFinishedError):
                token.run_sync_soon(self._written, batch)

        self._enter_thread()
        try:
            trio.lowlevel.start_thread_soon(write, deliver, name="pysched journal write")
        except Exception as exc:  # no thread could be started: fail, never strand anyone
            self._leave_thread()
            self._writing = None
            self._abandon(batch, self._fail("cannot start a journal write", exc))

    async def _adopt_write(self) -> None:
        """Finish the books of a write started by a Trio run that has ended since."""
        stale = self._writing
        with trio.CancelScope(shield=True):
            await trio.to_thread.run_sync(self._wait_for_threads)
        if stale is not None:
            self._written(stale)

    def _written(self, batch: _Batch) -> None:
        """A write ended (in the loop, from ``run_sync_soon``; must not raise)."""
        if self._writing is not batch:
            return  # already adopted by a later run
        self._writing = None
        if batch.failure is not None:
            where = segment_name(batch.segment)
            self._abandon(batch, self._fail(f"cannot write {where}", batch.failure))
            return
        self._count_batch(
            records=batch.count,
            size=batch.size,
            fsyncs=1,
            current=batch.segment == self._segment,
        )
        if self._pending is not None:
            if self._closed:
                self._abandon(self._pending, StoreError("the store is closed"))
            else:
                self._start_write()  # first, so the disk is busy while tasks wake
        batch.done.set()

    def _abandon(self, batch: _Batch | None, error: StoreError) -> None:
        """Fail ``batch`` and any batch queued behind it: their committers raise ``error``."""
        for each in (batch, self._pending):
            if each is not None:
                each.error = error
                each.done.set()
        self._pending = None

    def _take_segment(self) -> int:
        self._segment_used = True
        return self._segment

    def _write(self, segment: int, data: bytes) -> None:
        """Append ``data`` to ``segment`` (and sync it); in a worker thread when syncing."""
        fd = self._fd
        if fd is None or self._fd_segment != segment:
            fd = self._open_segment(segment)
        self._disk.write(fd, data)
        if self._sync:
            self._disk.sync(fd)

    def _open_segment(self, segment: int) -> int:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        path = self.state_dir / segment_name(segment)
        created = not path.exists()
        fd = os.open(path, _OPEN_APPEND, STATE_FILE_MODE)
        self._fd, self._fd_segment = fd, segment
        if created and self._sync:
            # Without this a machine crash could lose the new file's name, and with it the
            # records an fsync of the file had made "durable".
            self._disk.sync_dir(self.state_dir)
        return fd

    # ---- snapshots ---------------------------------------------------------------------------

    async def write_snapshot(
        self, live: Iterable[Record], archived: Iterable[tuple[str, Record]] = ()
    ) -> None:
        self._check_usable()
        await trio.lowlevel.checkpoint_if_cancelled()
        if self._snapshotting:
            raise RuntimeError("a snapshot is already being written")
        # Everything up to the rotation happens before any other task can run: ``live`` is
        # the state as of this instant, and every later commit goes to the new segment.
        records = list(live)
        by_month = group_by_month(archived)
        if self._segment_used:
            self._segment += 1
            self._segment_used = False
            self._segment_bytes = 0
        header = SnapshotHeader(segment=self._segment, seq=self._next_seq - 1, records=len(records))
        latest = self._latest
        queued = latest if latest is not None and not latest.done.is_set() else None
        self._snapshotting = True
        try:
            await self._off_loop(self._prepare_snapshot, header, records, by_month)
            if queued is not None:
                await queued.done.wait()  # the snapshot may hold its changes: are they durable?
                if queued.error is not None:
                    raise queued.error
            self._check_usable()
            await self._off_loop(self._install_snapshot, header)
        except (StoreError, ValueError):
            raise
        except Exception as exc:
            raise self._fail("cannot write the snapshot", exc) from exc
        finally:
            self._snapshotting = False
        self._counts.snapshots += 1
        if not self._sync:
            await trio.lowlevel.cancel_shielded_checkpoint()

    async def _off_loop(self, work: Callable[..., None], *args: Any) -> None:
        if not self._sync:
            work(*args)
            return

        ran = False

        def in_thread() -> None:
            nonlocal ran
            ran = True
            try:
                work(*args)
            finally:
                self._leave_thread()

        self._enter_thread()
        try:
            await trio.to_thread.run_sync(in_thread)
        except BaseException:
            # cancelled before a thread took it (a stop during a snapshot): nothing will leave
            # for it, and ``close`` would wait for it forever. Once a thread has it, run_sync
            # waits for its end, so ``ran`` cannot turn True after this.
            if not ran:
                self._leave_thread()
            raise

    def _prepare_snapshot(
        self, header: SnapshotHeader, records: list[Record], by_month: dict[str, list[Record]]
    ) -> None:
        """Append the archive, then write the snapshot to its temporary file (synced)."""
        disk = self._disk
        disk.step("rotated")
        archive_data = {
            month: b"".join(encode_record(r) for r in found) for month, found in by_month.items()
        }
        for month, data in archive_data.items():
            self._append_archive(month, data)
        disk.step("archived")
        temporary = self.state_dir / SNAPSHOT_TMP
        fd = os.open(
            temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, STATE_FILE_MODE
        )
        try:
            chunk = [encode_header(header)]
            size = 0
            for record in records:
                line = encode_record(record)
                chunk.append(line)
                size += len(line)
                if size >= _CHUNK:
                    disk.write(fd, b"".join(chunk))
                    chunk.clear()
                    size = 0
            disk.write(fd, b"".join(chunk))
            if self._sync:
                disk.sync(fd)
        except ValueError:  # a record the caller got wrong: no snapshot, the store goes on
            temporary.unlink()
            raise
        finally:
            os.close(fd)
        disk.step("written")

    def _install_snapshot(self, header: SnapshotHeader) -> None:
        """Rename the snapshot into place, then delete the segments it covers."""
        disk = self._disk
        os.replace(self.state_dir / SNAPSHOT_TMP, self.state_dir / SNAPSHOT)
        disk.step("renamed")
        if self._sync:
            disk.sync_dir(self.state_dir)
        disk.step("dir_synced")
        for number, path in list_segments(self.state_dir).items():
            if number < header.segment:
                path.unlink()
                disk.step("segment_deleted")

    def _append_archive(self, month: str, data: bytes) -> None:
        folder = self.state_dir / ARCHIVE_DIR
        if not folder.is_dir():
            folder.mkdir(STATE_DIR_MODE)
            if self._sync:
                self._disk.sync_dir(self.state_dir)
        path = folder / f"{month}.jsonl"
        created = not path.exists()
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, STATE_FILE_MODE)
        try:
            if not created:
                _cut_unfinished_line(fd, archive_name(month))
            self._disk.write(fd, data)
            if self._sync:
                self._disk.sync(fd)
        finally:
            os.close(fd)
        if created and self._sync:
            self._disk.sync_dir(folder)

    # ---- closing -----------------------------------------------------------------------------

    def close(self) -> None:
        self._closed = True
        self._wait_for_threads()  # a write on its way finishes first (at most one fsync)
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)
        self._lock.release()

    def _wait_for_threads(self) -> None:
        with self._quiet:
            self._quiet.wait_for(lambda: self._threads == 0)

    def _enter_thread(self) -> None:
        with self._quiet:
            self._threads += 1

    def _leave_thread(self) -> None:
        with self._quiet:
            self._threads -= 1
            self._quiet.notify_all()


def _cut_unfinished_line(fd: int, name: str) -> None:
    """Truncate an archive that a crash left without its final newline (before appending)."""
    size = os.fstat(fd).st_size
    end = size
    while end > 0:
        start = max(0, end - 65536)
        block = os.pread(fd, end - start, start)
        if end == size and block.endswith(b"\n"):
            return
        newline = block.rfind(b"\n")
        if newline >= 0:
            end = start + newline + 1
            break
        end = start
    logger.warning("%s: cut %d bytes of a torn last line before appending", name, size - end)
    os.ftruncate(fd, end)


# ---- opening -----------------------------------------------------------------------------------


def _open_dir(state_dir: Path, *, sync: bool) -> _Opened:
    try:
        state_dir.mkdir(STATE_DIR_MODE, parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreError(f"cannot create state dir {state_dir}: {exc.strerror or exc}") from exc
    try:
        lock = StateLock.acquire(state_dir)
    except OSError as exc:
        raise StoreError(f"cannot lock state dir {state_dir}: {exc.strerror or exc}") from exc
    try:
        return _read_dir(state_dir, lock, sync=sync)
    except OSError as exc:
        lock.release()
        raise StoreError(f"cannot open state dir {state_dir}: {exc}") from exc
    except BaseException:
        lock.release()
        raise


def _read_dir(state_dir: Path, lock: StateLock, *, sync: bool) -> _Opened:
    def refuse(problem: str) -> StoreError:
        return StoreError(f"{problem} (state dir {state_dir})")

    leftover = state_dir / SNAPSHOT_TMP
    if leftover.exists():
        leftover.unlink()
        logger.info("%s: removed an unfinished snapshot a crash left", SNAPSHOT_TMP)
    header: SnapshotHeader | None = None
    if (state_dir / SNAPSHOT).exists():
        try:
            header = scan_file(
                state_dir / SNAPSHOT, SNAPSHOT, "snapshot", strict=True, quick=True
            ).header
        except ValueError as exc:
            raise refuse(str(exc)) from None
    first = header.segment if header is not None else 1
    segments = list_segments(state_dir)
    covered = [path for number, path in segments.items() if number < first]
    for path in covered:
        path.unlink()
        logger.info("%s: removed, the snapshot covers it (a crash came before it was)", path.name)
    if covered and sync:
        Disk().sync_dir(state_dir)
    kept = {number: path for number, path in segments.items() if number >= first}
    for expected, number in enumerate(kept, start=first):
        if number != expected:
            raise refuse(
                f"{segment_name(expected)}:0: missing, yet {segment_name(number)} follows: "
                "replay would lose records"
            )
    previous: int | None = None
    for index, (number, path) in enumerate(kept.items()):
        name = segment_name(number)
        try:
            scan = scan_file(
                path,
                name,
                "journal",
                previous_seq=previous,
                tail_may_tear=index == len(kept) - 1,
                strict=True,
                quick=True,
            )
        except ValueError as exc:
            raise refuse(str(exc)) from None
        if previous is None and scan.first_seq is not None:
            start = header.seq + 1 if header is not None else 1
            if scan.first_seq > start:
                raise refuse(
                    f"{name}:1: the journal starts at seq {scan.first_seq}, not {start}: "
                    "records are missing"
                )
        if scan.torn is not None:
            removed = path.stat().st_size - scan.torn.offset
            _cut(path, scan.torn.offset, sync=sync)
            logger.warning(
                "%s: cut it off (%d bytes): a crash interrupted that write, which was never "
                "acknowledged",
                scan.torn,
                removed,
            )
        if scan.last_seq is not None:
            previous = scan.last_seq
    last_seq = max(previous or 0, header.seq if header is not None else 0)
    if kept:
        segment, path = next(reversed(kept.items()))
        used, size = True, path.stat().st_size
    else:
        segment, used, size = first, False, 0
    return _Opened(
        state_dir=state_dir,
        lock=lock,
        next_seq=last_seq + 1,
        segment=segment,
        segment_used=used,
        segment_bytes=size,
    )


def _cut(path: Path, offset: int, *, sync: bool) -> None:
    with path.open("r+b") as file:
        file.truncate(offset)
        if sync:
            os.fsync(file.fileno())
