"""Helpers the store tests share: a store of each kind, a disk that fails on demand, a fold."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pysched.store import MemoryStore, Record, Store
from pysched.store.base import BaseStore
from pysched.store.disk import Disk

KINDS = ["disk_sync", "disk_nosync", "memory"]


class Crash(Exception):
    """Raised by ``FaultyDisk.step``: the files stay as a crash at that step would leave them."""


class FaultyDisk(Disk):
    """A ``Disk`` that fails a write (after ``partial`` bytes) or an fsync (only of files whose
    path holds ``only``, if given), crashes at a snapshot step, or holds every write until
    ``gate`` is set."""

    def __init__(
        self,
        *,
        write_error: OSError | None = None,
        partial: int = 0,
        sync_error: OSError | None = None,
        crash_at: str | None = None,
        gate: threading.Event | None = None,
        only: str | None = None,
    ) -> None:
        self.write_error = write_error
        self.partial = partial
        self.sync_error = sync_error
        self.crash_at = crash_at
        self.gate = gate
        self.only = only
        self.steps: list[str] = []

    def write(self, fd: int, data: bytes) -> None:
        if self.gate is not None:
            assert self.gate.wait(10)
        if self.write_error is not None and self._applies(fd):
            if self.partial:
                os.write(fd, data[: self.partial])
            raise self.write_error
        super().write(fd, data)

    def _applies(self, fd: int) -> bool:
        return self.only is None or self.only in os.readlink(f"/proc/self/fd/{fd}")

    def sync(self, fd: int) -> None:
        if self.sync_error is not None and self._applies(fd):
            raise self.sync_error
        super().sync(fd)

    def step(self, name: str) -> None:
        self.steps.append(name)
        if name == self.crash_at:
            raise Crash(name)


@dataclass
class Kind:
    """Opens, reopens and breaks a store of one kind (``disk_sync``, ``disk_nosync``,
    ``memory``) so one test body runs against all of them."""

    name: str
    tmp: Path

    @property
    def on_disk(self) -> bool:
        return self.name != "memory"

    @property
    def state_dir(self) -> Path:
        return self.tmp / "state"

    def open(self, **options: Any) -> BaseStore:
        if self.name == "memory":
            return MemoryStore(**options)
        return Store.open(self.state_dir, sync=self.name == "disk_sync", **options)

    def reopen(self, store: BaseStore) -> BaseStore:
        store.close()
        if isinstance(store, MemoryStore):
            return store.reopen()
        assert isinstance(store, Store)
        return Store.open(self.state_dir, sync=self.name == "disk_sync")

    def fail_next_write(self, store: BaseStore, error: OSError) -> None:
        if isinstance(store, MemoryStore):
            store.inject_failure(error)
        else:
            store._disk = FaultyDisk(write_error=error)  # type: ignore[attr-defined]


def rec(key: str, value: Any = 0, kind: str = "run") -> Record:
    return Record(type=kind, data={"id": key, "value": value})


def fold(records: Iterable[Record]) -> dict[str, Any]:
    """The state records describe: the last value of each id (records are upserts)."""
    state: dict[str, Any] = {}
    for record in records:
        state[record.data["id"]] = record.data["value"]
    return state


def as_records(state: dict[str, Any]) -> list[Record]:
    return [rec(key, value) for key, value in state.items()]


def triples(records: Iterable[Record]) -> list[tuple[int, str, dict[str, Any]]]:
    return [(r.seq, r.type, dict(r.data)) for r in records]
