"""Slots: the global ``max_running`` cap and named pools, and the queue of ready runs.

Queued runs start by priority (higher first), then age (older first). The queue keeps one heap
per pool, so finding the next startable run never scans runs stuck behind a full pool; and runs
held back by their job's overlap rule are parked per job, so a backfill of a thousand dates of
one job is not looked through again on every pass, only its best run when the job may go on.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from pysched.engine.runs import Run

_NO_POOL = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class SlotUse:
    """A reading of the slots: attempts running, the cap, runs queued, and per pool
    ``(in use, size)``."""

    running: int
    max_running: int
    queued: int
    pools: Mapping[str, tuple[int, int]]


class Slots:
    def __init__(self, max_running: int, pools: Mapping[str, int]) -> None:
        self.max_running = max_running
        self.pools = dict(pools)
        self.running = 0
        self.in_pool: dict[str, int] = {}
        self._heaps: dict[str, list[tuple[int, int, str]]] = {}
        self._order = itertools.count()
        self._queued: set[str] = set()
        self._parked: dict[str, list[tuple[tuple[int, int, str], str]]] = {}
        """Per job: heap entries (with their pool) held back until ``unpark``, best first."""

    def reconfigure(self, max_running: int, pools: Mapping[str, int]) -> None:
        self.max_running = max_running
        self.pools = dict(pools)

    # -- the queue ---------------------------------------------------------------------------

    def enqueue(self, run: Run, priority: int, pool: str | None) -> None:
        if run.run_id in self._queued:
            return
        self._queued.add(run.run_id)
        entry = (-priority, next(self._order), run.run_id)
        heapq.heappush(self._heaps.setdefault(pool or _NO_POOL, []), entry)

    def discard(self, run_id: str) -> None:
        """Forget a queued run (held, cancelled, skipped); its heap entry is dropped lazily."""
        self._queued.discard(run_id)

    def __contains__(self, run_id: str) -> bool:
        return run_id in self._queued

    @property
    def queued(self) -> int:
        return len(self._queued)

    def take(
        self, limit: int, may_start: Callable[[str], bool | str]
    ) -> list[tuple[str, str | None]]:
        """Up to ``limit`` queued runs that fit the free slots, best first, as (run id, pool).

        ``may_start(run_id)`` answers True (start it), False (hold it back this time: it stays
        queued and is looked at again next time) or a job's name: hold it back until
        ``unpark(job)`` (it stays queued, parked; for runs that cannot start while another run
        of their job goes, and any of them would do as well as another).
        """
        chosen: list[tuple[str, str | None]] = []
        held_back: list[tuple[str, tuple[int, int, str]]] = []
        while len(chosen) < limit and self.running < self.max_running:
            best: tuple[int, int, str] | None = None
            best_pool = ""
            for pool, heap in self._heaps.items():
                while heap and heap[0][2] not in self._queued:
                    heapq.heappop(heap)  # lazily dropped
                if not heap:
                    continue
                if pool != _NO_POOL and self.in_pool.get(pool, 0) >= self.pools.get(pool, 0):
                    continue
                if best is None or heap[0] < best:
                    best, best_pool = heap[0], pool
            if best is None:
                break
            heapq.heappop(self._heaps[best_pool])
            run_id = best[2]
            verdict = may_start(run_id)
            if verdict is False:
                held_back.append((best_pool, best))
                continue
            if verdict is not True:
                heapq.heappush(self._parked.setdefault(verdict, []), (best, best_pool))
                continue
            self._queued.discard(run_id)
            self.acquire(best_pool or None)
            chosen.append((run_id, best_pool or None))
        touched: set[str] = set()
        for pool, entry in held_back:
            self._heaps[pool].append(entry)
            touched.add(pool)
        for pool in touched:  # one heapify, not a push for each run held back
            heapq.heapify(self._heaps[pool])
        return chosen

    def unpark(self, job: str, *, everything: bool = False) -> None:
        """Put ``job``'s best parked run (or all of them) back in the queue, to be looked at
        again: its job may go on (the run it waited for has stopped running or going), or the
        run may have changed (forced)."""
        parked = self._parked.get(job)
        while parked:
            entry, pool = heapq.heappop(parked)
            if entry[2] not in self._queued:
                continue  # discarded while parked
            heapq.heappush(self._heaps.setdefault(pool, []), entry)
            if not everything:
                break
        if not parked:
            self._parked.pop(job, None)

    def unpark_all(self) -> None:
        """Every parked run back in the queue (the rules may have changed: a reload)."""
        for job in list(self._parked):
            self.unpark(job, everything=True)

    def refile(self, place: Callable[[str], tuple[int, str | None]]) -> None:
        """File every queued run again, parked ones too, under the (priority, pool) that
        ``place(run_id)`` gives now: a reload may have moved its job to another pool (a run
        left under a pool that is gone would never start) or changed its priority. Each run
        keeps its place in age."""
        self.unpark_all()
        entries: dict[str, int] = {}
        for heap in self._heaps.values():
            for _, order, run_id in heap:
                if run_id in self._queued and order < entries.get(run_id, order + 1):
                    entries[run_id] = order
        self._heaps = {}
        for run_id, order in entries.items():
            priority, pool = place(run_id)
            self._heaps.setdefault(pool or _NO_POOL, []).append((-priority, order, run_id))
        for heap in self._heaps.values():
            heapq.heapify(heap)

    # -- counting --------------------------------------------------------------------------

    def acquire(self, pool: str | None) -> None:
        self.running += 1
        if pool:
            self.in_pool[pool] = self.in_pool.get(pool, 0) + 1

    def release(self, pool: str | None) -> None:
        self.running -= 1
        if pool:
            self.in_pool[pool] -= 1
