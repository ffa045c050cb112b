"""What the engine writes to the journal, and how it reads it back.

Every record is an idempotent upsert keyed by its identity (a run by its id, a firing by its
job, a config by its hash, an action by its id), so replaying a record twice, which a snapshot
taken while commits are in flight can cause, changes nothing.

========  ========================================================================
type      data
========  ========================================================================
run       the whole run (``Run.to_data``): state, reason, attempts, ...
runs      many runs at once, ``runs``: a list of ``run`` data (snapshots write runs in
          chunks of ``SNAPSHOT_CHUNK``: one line, one checksum and one parse for many
          runs, which is most of what a restart reads)
firing    ``job``, ``at``, ``run_date``, and ``run_id`` or ``skipped`` (the reason);
          with neither, a watermark: firings up to ``at`` are accounted for
          (``disabled: true`` when written for a disabled job: the time after it
          is not caught up either)
skips     a summary of many skipped firings: ``job``, ``count``, ``first``, ``last``,
          ``reason``
config    an applied config version: ``sha256``, ``text``, ``at``, ``by``
job       a job-level hold: ``job``, ``held``, ``by``, ``why``, ``at``
action    an operator action: ``id``, ``at``, ``by``, ``why``, ``action``, ``target``
========  ========================================================================
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Any, cast

from pysched.engine.book import Book
from pysched.engine.runs import Run
from pysched.gc_pause import collection_paused, freeze_if_large
from pysched.store import Record

SNAPSHOT_CHUNK = 500
"""Runs per ``runs`` record in a snapshot."""


@dataclass(slots=True)
class Replayed:
    """The state a journal describes, folded record by record.

    Runs are kept as their newest raw record while folding (a run has several records, one per
    change) and built once by ``build_book``: replay cost is then one parse per record and one
    ``Run`` per run.
    """

    book: Book = field(default_factory=Book)
    run_data: dict[str, Mapping[str, Any]] = field(default_factory=dict[str, Mapping[str, Any]])
    last_firing: dict[str, datetime] = field(default_factory=dict[str, datetime])
    configs: dict[str, Mapping[str, Any]] = field(default_factory=dict[str, Mapping[str, Any]])
    job_holds: dict[str, Mapping[str, Any]] = field(default_factory=dict[str, Mapping[str, Any]])
    actions: dict[str, Mapping[str, Any]] = field(default_factory=dict[str, Mapping[str, Any]])
    disabled: set[str] = field(default_factory=set[str])
    """Jobs whose newest firing record is a watermark written while they were disabled."""
    records: int = 0

    def fold(self, record: Record) -> None:
        data = record.data
        self.records += 1
        kind = record.type
        if kind == "run":
            self.run_data[data["id"]] = data
        elif kind == "runs":
            run_data = self.run_data
            for item in data["runs"]:
                run_data[item["id"]] = item
        elif kind == "firing":
            at = datetime.fromisoformat(data["at"])
            previous = self.last_firing.get(data["job"])
            if previous is None or at >= previous:
                self.last_firing[data["job"]] = at
                if data.get("disabled"):
                    self.disabled.add(data["job"])
                else:
                    self.disabled.discard(data["job"])
        elif kind == "skips":
            last = datetime.fromisoformat(data["last"])
            previous = self.last_firing.get(data["job"])
            if previous is None or last > previous:
                self.last_firing[data["job"]] = last
        elif kind == "config":
            # a version put in force again moves to the end, as the engine keeps it live
            self.configs.pop(data["sha256"], None)
            self.configs[data["sha256"]] = data
        elif kind == "job":
            if data.get("held"):
                self.job_holds[data["job"]] = data
            else:
                self.job_holds.pop(data["job"], None)
        elif kind == "action":
            self.actions[data["id"]] = data
        # unknown types are refused by the store's version check; newer record kinds that an
        # older engine does not know would be ignored here rather than crash a restart

    def build_book(self) -> Book:
        """Turn the folded run records into ``book`` (runs first seen first)."""
        # each run takes its record's place in the same dict, which the book then adopts
        runs = cast(dict[str, Any], self.run_data)
        self.run_data = {}
        for run_id, data in runs.items():
            runs[run_id] = Run.from_data(data)
        self.book.load(cast(dict[str, Run], runs))
        return self.book


def replay(records: Iterable[Record]) -> Replayed:
    """Fold every record (a restart's work), with the garbage collector paused meanwhile.

    A large replay ends by freezing what it built before the collector is back
    (``pysched.gc_pause.freeze_if_large``): the runs live as long as the engine.
    """
    state = Replayed()
    run_data, fold = state.run_data, state.fold
    with collection_paused():
        for record in records:
            if record.type == "run":  # most of a journal: ``fold``'s first case, inline
                data = record.data
                run_data[data["id"]] = data
                state.records += 1
            else:
                fold(record)
        state.build_book()
        freeze_if_large(len(state.book))
    return state


def firing_record(
    job: str,
    at: datetime,
    run_date: date,
    *,
    run_id: str | None,
    skipped: str | None = None,
    disabled: bool = False,
) -> Record:
    data: dict[str, Any] = {
        "job": job,
        "at": at.isoformat(),
        "run_date": run_date.isoformat(),
        "run_id": run_id,
        "skipped": skipped,
    }
    if disabled:
        data["disabled"] = True
    return Record(type="firing", data=data)


def snapshot_records(
    state: Replayed,
    *,
    now: datetime,
    history_days: int,
    needed: Container[tuple[str, date]] = (),
) -> tuple[list[Record], list[tuple[str, Record]], list[Run]]:
    """The records that rebuild ``state``, the records to archive, and the runs archived.

    Finished runs whose run date is more than ``history_days`` before ``now`` leave the live
    state: they go to the monthly archive of their run date and out of memory. Not those of a
    job and run date in ``needed``: an unfinished run still depends on them (a run blocked by
    an old failure waits for an operator to rerun or mark it, which needs it in the book).
    """
    cutoff = (now - timedelta(days=history_days)).date()
    live: list[Record] = [Record(type="config", data=c) for c in state.configs.values()]
    live += [Record(type="job", data=h) for h in state.job_holds.values()]
    live += [
        Record(
            type="firing",
            data={
                "job": job,
                "at": at.isoformat(),
                "run_date": None,
                "run_id": None,
                "skipped": None,
            },
        )
        for job, at in state.last_firing.items()
    ]
    archived: list[tuple[str, Record]] = []
    gone: list[Run] = []
    gone_ids: set[str] = set()
    chunk: list[dict[str, Any]] = []
    for run in state.book:
        data = run.to_data()
        if run.state.finished and run.run_date < cutoff and (run.job, run.run_date) not in needed:
            archived.append((run.run_date.strftime("%Y-%m"), Record(type="run", data=data)))
            gone.append(run)
            gone_ids.add(run.run_id)
        else:
            chunk.append(data)
            if len(chunk) == SNAPSHOT_CHUNK:
                live.append(Record(type="runs", data={"runs": chunk}))
                chunk = []
    if chunk:
        live.append(Record(type="runs", data={"runs": chunk}))
    for action in state.actions.values():
        record = Record(type="action", data=action)
        if action.get("target") in gone_ids:
            month = str(action.get("at", ""))[:7] or "unknown"
            archived.append((month, record))
        else:
            live.append(record)
    return live, archived, gone
