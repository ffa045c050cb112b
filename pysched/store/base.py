"""The store's contract, written once here; ``Store`` (disk) and ``MemoryStore`` keep to it.

The contract tests in ``tests/store/test_contract.py`` run against both.
"""

from __future__ import annotations

import abc
from collections.abc import Iterable, Iterator, Sequence

import trio

from pysched.errors import StoreError
from pysched.store.layout import is_month
from pysched.store.lines import check_type, encode_data, encode_line
from pysched.store.record import Record, StoreStats

ENCODE_SLICE = 200
"""Records encoded between two checkpoints of a big commit (about 2-3 ms of work)."""


class BaseStore(abc.ABC):
    """An append-only journal of typed records, handed back in order at the next start.

    The store is generic: it knows nothing of runs or jobs. The engine keeps its state in
    memory, commits every change as a ``Record`` *before* acting on it (write-ahead), and at
    start folds ``records()`` back into that state. The engine makes every record an idempotent
    upsert (replaying one twice changes nothing), which is what keeps snapshots simple.

    **Order and numbering.** ``commit`` numbers records from 1 in the order commits are called
    (``seq``), with no gaps; ``records()`` hands back the latest snapshot's records (with the seq
    they were given, often 0), then every record committed since, in seq order.

    **Durability.** ``await commit(records)`` returns once the records are on disk: written and
    fsynced with ``sync=True``; written to the OS (safe from a crash of the process, not of the
    machine) with ``sync=False``; held in memory by ``MemoryStore``. While one write is on its
    way, later commits queue, and the next write carries all of them with one fsync (group
    commit, docs/group-commit.md).

    **Fail-stop.** If a write or fsync fails, every commit waiting for it and every later commit
    or snapshot raises ``StoreError`` (the ``OSError`` as its cause) and ``failed`` holds that
    error; the store never retries, because after a failed fsync nobody knows what the disk
    holds. What was written before stays and is replayed at the next start; the records of a
    failed commit may or may not be there (a half-written last line is cut at the next open).

    **Snapshots and retention.** When ``wants_snapshot`` turns true (the current journal segment
    has passed ``snapshot_bytes``), the engine calls ``write_snapshot(live, archived)`` with
    records describing its whole current state, and the (month, record) pairs it no longer
    keeps live. Afterwards replay is that snapshot plus what was committed since, so restart
    time follows the size of the live state, not of history; archived records go to monthly
    archive files (``archived()``) and leave replay.

    **Threads.** ``commit`` and ``write_snapshot`` belong to the Trio loop; with ``sync=True``
    their disk work runs in worker threads, so the loop never waits on the disk. With
    ``sync=False`` and in ``MemoryStore`` no thread is used at all, which keeps tests under
    Trio's autojump ``MockClock`` deterministic. ``records()``, ``archived()`` and ``close()``
    are synchronous: call them at start-up and shut-down, or from a worker thread.
    """

    def __init__(self, *, snapshot_bytes: int, next_seq: int) -> None:
        self._snapshot_bytes = snapshot_bytes
        self._next_seq = next_seq
        self._segment_bytes = 0
        self._failed: StoreError | None = None
        self._closed = False
        self._counts = _Counts()

    @abc.abstractmethod
    def records(self) -> Iterator[Record]:
        """Every record replay needs: the snapshot's, then each one committed since, in order.

        Streams from the files (a restart never holds a journal file in memory). Raises
        ``StoreError`` naming file and line if a file changed under the store since it opened.
        """

    @abc.abstractmethod
    async def commit(self, records: Sequence[Record]) -> list[Record]:
        """Make ``records`` durable; return them with their ``seq`` set.

        Returns only once the records are on disk (see Durability above). Concurrent commits
        are numbered in the order they were called and written in that order, usually several
        to a write. Raises ``ValueError`` (and changes nothing) if a record's type is not
        lowercase letters and underscores or its data is not JSON-able; ``StoreError`` if the
        store has failed or is closed, or if this commit's write fails.

        **Cancellation:** a commit cancelled at its start (already cancelled when called) has
        written nothing. Once its records are queued, a cancelled commit's records may or may
        not become durable: the write that carries them belongs to no task and goes on, with the
        records of every other commit in its batch, whose committers it never delays.
        """

    @abc.abstractmethod
    async def write_snapshot(
        self, live: Iterable[Record], archived: Iterable[tuple[str, Record]] = ()
    ) -> None:
        """Replace everything before this point with ``live``; retire ``archived`` by month.

        ``live`` must describe the whole current state, including every change already
        committed *or queued by a commit still in flight* (records are upserts, so one both in
        the snapshot and replayed after it is harmless). ``archived`` pairs a ``"YYYY-MM"`` month
        with a record that leaves replay and is appended to that month's archive. Both are read
        in full at the call, before anything else can run, so a generator over the engine's
        state is fine; the records' data must not change afterwards.

        The state in ``live`` and the call must belong to the same instant: build ``live`` and
        call ``write_snapshot`` with no checkpoint in between (not in one task and then hand it
        to another to call later). A change committed in between would land in a segment the
        snapshot deletes, yet not be in the snapshot: it would be lost.

        Later commits go to a new segment at once. The archive is appended (and synced), the
        snapshot written to a temporary file, synced and renamed over the old one; only then are
        the segments it covers deleted. The snapshot is not installed before every commit
        queued at the call is durable; if one fails, the snapshot is abandoned. A crash at any
        step leaves files that replay correctly (an archived record may then be archived twice).

        Raises ``ValueError`` for a bad month or record (the snapshot is then not installed,
        the store goes on), ``RuntimeError`` if another snapshot is still being written,
        ``StoreError`` if the store has failed or the snapshot cannot be written (the store
        then fails: fail-stop).

        **Cancellation:** the snapshot may or may not be installed; either way replay is right.
        """

    @abc.abstractmethod
    def archived(self) -> Iterator[tuple[str, Record]]:
        """Every archived ``(month, record)``, month by month in the order they were archived."""

    @abc.abstractmethod
    def close(self) -> None:
        """Release the state dir (its lock) and any open file; idempotent.

        Commits after ``close`` raise ``StoreError``. Call it once no commit is in flight (a
        write still on its way finishes first; the lock is released when it has).
        """

    @property
    def failed(self) -> StoreError | None:
        """The error that stopped the store, or None while it works."""
        return self._failed

    @property
    def wants_snapshot(self) -> bool:
        """True once the current journal segment has passed ``snapshot_bytes``."""
        return self._segment_bytes > self._snapshot_bytes and self._failed is None

    @property
    def stats(self) -> StoreStats:
        """Counters since open (commits, records, batches, fsyncs, bytes, latency)."""
        c = self._counts
        return StoreStats(
            commits=c.commits,
            records=c.records,
            batches=c.batches,
            fsyncs=c.fsyncs,
            bytes=c.bytes,
            last_batch=c.last_batch,
            max_batch=c.max_batch,
            snapshots=c.snapshots,
            commit_seconds=c.commit_seconds,
            commit_count=c.commit_count,
        )

    # ---- shared by the implementations -------------------------------------------------------

    def _check_usable(self) -> None:
        if self._failed is not None:
            raise self._failed
        if self._closed:
            raise StoreError("the store is closed")

    async def _encode(self, records: Sequence[Record]) -> tuple[list[Record], bytes]:
        """Number ``records`` and encode their lines; ``ValueError`` before numbering any.

        A big commit's data (the costly part) is encoded with a checkpoint every
        ``ENCODE_SLICE`` records, so the loop stays responsive; numbering follows in one step,
        so two commits never interleave their numbers. Cancellation: a commit cancelled while
        encoding has numbered and written nothing.
        """
        encoded: list[tuple[Record, bytes]] = []
        for record in records:
            encoded.append((record, encode_data(record.data)))
            if len(encoded) % ENCODE_SLICE == 0:
                await trio.lowlevel.checkpoint()
                self._check_usable()  # closed or failed meanwhile: nothing is numbered
        for record, _ in encoded:
            check_type(record.type)
        seq = self._next_seq
        lines: list[bytes] = []
        numbered: list[Record] = []
        for record, data_json in encoded:
            lines.append(encode_line(seq, record.type, data_json))
            numbered.append(Record(type=record.type, data=record.data, seq=seq))
            seq += 1
        self._next_seq = seq
        self._counts.commits += 1
        return numbered, b"".join(lines)

    def _fail(self, what: str, cause: BaseException) -> StoreError:
        """Stop the store for good: every later call raises the returned error."""
        if self._failed is None:
            detail = cause.strerror if isinstance(cause, OSError) and cause.strerror else cause
            error = StoreError(f"{what}: {detail}; the store has stopped (fail-stop)")
            error.__cause__ = cause
            self._failed = error
        return self._failed

    def _count_batch(self, *, records: int, size: int, fsyncs: int, current: bool = True) -> None:
        """Count a batch written; ``current``: to the current segment (not one rotated away)."""
        c = self._counts
        c.records += records
        c.batches += 1
        c.fsyncs += fsyncs
        c.bytes += size
        c.last_batch = records
        c.max_batch = max(c.max_batch, records)
        if current:
            self._segment_bytes += size

    def _count_commit(self, seconds: float) -> None:
        c = self._counts
        c.commit_seconds += seconds
        c.commit_count += 1


class _Counts:
    """The mutable counters behind ``stats``."""

    __slots__ = (
        "batches",
        "bytes",
        "commit_count",
        "commit_seconds",
        "commits",
        "fsyncs",
        "last_batch",
        "max_batch",
        "records",
        "snapshots",
    )

    def __init__(self) -> None:
        self.commits = self.records = self.batches = self.fsyncs = self.bytes = 0
        self.last_batch = self.max_batch = self.snapshots = self.commit_count = 0
        self.commit_seconds = 0.0


def group_by_month(archived: Iterable[tuple[str, Record]]) -> dict[str, list[Record]]:
    """Archived records grouped by month; ``ValueError`` for a month not written YYYY-MM."""
    found: dict[str, list[Record]] = {}
    for month, record in archived:
        if not is_month(month):
            raise ValueError(f"archive month {month!r} is not YYYY-MM")
        found.setdefault(month, []).append(record)
    return found
