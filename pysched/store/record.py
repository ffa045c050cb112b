"""The values the store hands in and out: a ``Record`` and the ``StoreStats`` counters."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True, kw_only=True)
class Record:
    """One change, as the journal keeps it.

    ``type`` names the kind of change (``run``, ``firing``, ``config``, ...), lowercase letters
    and underscores. ``data`` is a JSON-able mapping (str keys; str, int, float, bool, None,
    lists and dicts inside); it is stored as JSON, so it comes back from a replay as plain dicts
    and lists (a tuple comes back as a list). ``seq`` is 0 until the store commits the record;
    the store then numbers it, from 1, in commit order, and ignores any seq given.

    The store never looks inside ``data``; the caller must not change it once handed over.
    """

    type: str
    data: Mapping[str, Any]
    seq: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class StoreStats:
    """Counters since the store was opened, for metrics and benchmarks.

    A *batch* is what one write carries: with group commit, the records of every commit that
    queued while the previous write was on its way. ``fsyncs`` counts journal fsyncs (0 with
    ``sync=False``). ``commits`` counts commits accepted (queued); ``commit_seconds`` /
    ``commit_count`` is the mean time a successful one took, from its call until its records
    were on disk.
    """

    commits: int = 0
    records: int = 0
    batches: int = 0
    fsyncs: int = 0
    bytes: int = 0
    last_batch: int = 0
    max_batch: int = 0
    snapshots: int = 0
    commit_seconds: float = 0.0
    commit_count: int = 0

    @property
    def records_per_fsync(self) -> float:
        """Mean records each fsync made durable (0.0 before the first)."""
        return self.records / self.fsyncs if self.fsyncs else 0.0
