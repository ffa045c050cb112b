"""``MemoryStore``: the store's contract kept in memory, for tests.

It encodes every record to the journal's own line format and decodes it on replay, so a record
that the disk store would refuse (data that is not JSON) is refused here too, and what comes
back is exactly what a restart would see. It never uses a thread, so it runs under Trio's
autojump clock without letting time jump.
"""

from __future__ import annotations

import errno
from collections.abc import Iterable, Iterator, Sequence

import trio

from pysched.store.base import BaseStore, group_by_month
from pysched.store.lines import encode_record, read_fields, record_from
from pysched.store.record import Record


class MemoryStore(BaseStore):
    """A store in memory. ``inject_failure`` makes it fail; ``reopen`` is a restart."""

    def __init__(self, *, snapshot_bytes: int = 64 * 2**20) -> None:
        super().__init__(snapshot_bytes=snapshot_bytes, next_seq=1)
        self._snapshot: list[bytes] = []  # the live records' lines
        self._journal: list[bytes] = []  # one entry per commit: its lines
        self._archive: dict[str, list[bytes]] = {}
        self._durable_seq = 0
        self._injected: Exception | None = None

    def inject_failure(self, error: Exception | None = None) -> None:
        """Make the next commit fail with ``error`` (an EIO ``OSError`` if None) wrapped in a
        ``StoreError``; the store then stays failed, like a disk store after a failed fsync."""
        self._injected = error if error is not None else OSError(errno.EIO, "injected I/O error")

    def reopen(self) -> MemoryStore:
        """A fresh store holding exactly what was committed, as the next start would see it
        (the failed commit's records are not there)."""
        fresh = MemoryStore(snapshot_bytes=self._snapshot_bytes)
        fresh._snapshot = list(self._snapshot)
        fresh._journal = list(self._journal)
        fresh._archive = {month: list(lines) for month, lines in self._archive.items()}
        fresh._durable_seq = self._durable_seq
        fresh._next_seq = self._durable_seq + 1
        fresh._segment_bytes = sum(len(lines) for lines in self._journal)
        return fresh

    def records(self) -> Iterator[Record]:
        for line in self._snapshot:
            yield record_from(read_fields(line), min_seq=0)
        for lines in self._journal:
            for line in lines.splitlines(keepends=True):
                yield record_from(read_fields(line))

    def archived(self) -> Iterator[tuple[str, Record]]:
        for month in sorted(self._archive):
            for line in self._archive[month]:
                yield month, record_from(read_fields(line), min_seq=0)

    async def commit(self, records: Sequence[Record]) -> list[Record]:
        self._check_usable()
        await trio.lowlevel.checkpoint_if_cancelled()
        if not records:
            await trio.lowlevel.cancel_shielded_checkpoint()
            return []
        numbered, data = await self._encode(records)
        if self._injected is not None:
            raise self._fail("cannot write the journal (memory)", self._injected)
        self._journal.append(data)
        self._durable_seq = numbered[-1].seq
        self._count_batch(records=len(numbered), size=len(data), fsyncs=0)
        self._count_commit(0.0)
        await trio.lowlevel.cancel_shielded_checkpoint()
        return numbered

    async def write_snapshot(
        self, live: Iterable[Record], archived: Iterable[tuple[str, Record]] = ()
    ) -> None:
        self._check_usable()
        await trio.lowlevel.checkpoint_if_cancelled()
        snapshot = [encode_record(record) for record in live]
        retired = {
            month: [encode_record(record) for record in records]
            for month, records in group_by_month(archived).items()
        }
        for month, lines in retired.items():
            self._archive.setdefault(month, []).extend(lines)
        self._snapshot = snapshot
        self._journal = []
        self._segment_bytes = 0
        self._counts.snapshots += 1
        await trio.lowlevel.cancel_shielded_checkpoint()

    def close(self) -> None:
        self._closed = True
