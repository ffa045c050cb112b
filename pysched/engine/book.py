"""The book: every run the engine knows, indexed so nothing needs a scan.

It answers from memory, in creation order: by run id, by job and run date, by job. The engine
is the only writer; everyone else reads (``engine.book``).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import date

from pysched.engine.runs import Run, RunState
from pysched.errors import UnknownRunError


class Book:
    def __init__(self) -> None:
        self._runs: dict[str, Run] = {}
        self._by_key: dict[tuple[str, date], Run | list[Run]] = {}
        """The run of a job and run date, or its runs (two or more) once it is rerun: most keys
        have one run, which then needs no list of its own."""
        self._by_job: dict[str, list[Run]] = {}
        self._by_date: dict[date, list[Run]] = {}
        self._versions: dict[str, int] = {}
        """Per job, a number that grows whenever one of its runs is added, replaced, removed
        or committed changed (``changed``): a reader may keep what it works out of a job's
        runs for as long as it stays the same."""

    def version_of(self, job: str) -> int:
        """The job's version (see ``changed``); 0 for a job whose runs never changed since
        the book was loaded."""
        return self._versions.get(job, 0)

    def changed(self, run: Run) -> None:
        """Say that ``run`` changed (the engine calls it for each run it commits)."""
        self._versions[run.job] = self._versions.get(run.job, 0) + 1

    def add(self, run: Run) -> None:
        if run.run_id in self._runs:
            raise ValueError(f"run {run.run_id} is already in the book")
        self._runs[run.run_id] = run
        key = (run.job, run.run_date)
        same = self._by_key.get(key)
        if same is None:
            self._by_key[key] = run
        elif isinstance(same, list):
            same.append(run)
        else:
            self._by_key[key] = [same, run]
        self._by_job.setdefault(run.job, []).append(run)
        self._by_date.setdefault(run.run_date, []).append(run)
        self.changed(run)

    def load(self, runs: dict[str, Run]) -> None:
        """``replace`` with each of ``runs`` (by id) in turn, faster: a replay builds the book so.

        An empty book takes the dict itself as its index by id (no copy, no rehash): the
        caller hands it over and must not use it afterwards.
        """
        if self._runs:
            for run in runs.values():
                self.replace(run)
            return
        self._runs = runs
        by_key, by_job, by_date = self._by_key, self._by_job, self._by_date
        for run in runs.values():
            job, day = run.job, run.run_date
            key = (job, day)
            same = by_key.get(key)
            if same is None:
                by_key[key] = run
            elif isinstance(same, list):
                same.append(run)
            else:
                by_key[key] = [same, run]
            runs_of = by_job.get(job)
            if runs_of is None:
                by_job[job] = [run]
            else:
                runs_of.append(run)
            runs_of = by_date.get(day)
            if runs_of is None:
                by_date[day] = [run]
            else:
                runs_of.append(run)

    def replace(self, run: Run) -> None:
        """Put ``run`` in place of the run with the same id (replay and fail-stop revert)."""
        old = self._runs.get(run.run_id)
        if old is None:
            self.add(run)
            return
        self._runs[run.run_id] = run
        key = (run.job, run.run_date)
        same = self._by_key[key]
        if isinstance(same, list):
            same[same.index(old)] = run
        elif same is old:
            self._by_key[key] = run
        else:
            raise ValueError(f"run {run.run_id} is not where its job and run date say")
        for index in (self._by_job[run.job], self._by_date[run.run_date]):
            index[index.index(old)] = run
        self.changed(run)

    def remove(self, run: Run) -> None:
        del self._runs[run.run_id]
        key = (run.job, run.run_date)
        same = self._by_key[key]
        if isinstance(same, list):
            same.remove(run)
            if len(same) == 1:
                self._by_key[key] = same[0]
        elif same is run:
            del self._by_key[key]
        else:
            raise ValueError(f"run {run.run_id} is not where its job and run date say")
        self._by_job[run.job].remove(run)
        if not self._by_job[run.job]:
            del self._by_job[run.job]
        self._by_date[run.run_date].remove(run)
        if not self._by_date[run.run_date]:
            del self._by_date[run.run_date]
        self.changed(run)

    def get(self, run_id: str) -> Run:
        """The run with that id; ``UnknownRunError`` (a ``LookupError``) if there is none."""
        run = self._runs.get(run_id)
        if run is None:
            raise UnknownRunError(run_id)
        return run

    def find(self, run_id: str) -> Run | None:
        return self._runs.get(run_id)

    def latest_for(self, job: str, run_date: date) -> Run | None:
        """The newest run of ``job`` for ``run_date`` (the one dependencies look at)."""
        same = self._by_key.get((job, run_date))
        return same[-1] if isinstance(same, list) else same

    def runs_for(self, job: str, run_date: date) -> list[Run]:
        return list(self._for_key(job, run_date))

    def count_for(self, job: str, run_date: date) -> int:
        return len(self._for_key(job, run_date))

    def _for_key(self, job: str, run_date: date) -> Sequence[Run]:
        same = self._by_key.get((job, run_date))
        if same is None:
            return ()
        return same if isinstance(same, list) else (same,)

    def runs(
        self,
        job: str | None = None,
        run_date: date | None = None,
        state: RunState | str | None = None,
    ) -> list[Run]:
        """Runs matching every filter given, in creation order."""
        if job is not None and run_date is not None:
            source: Sequence[Run] | Iterator[Run] = self._for_key(job, run_date)
        elif job is not None:
            source = self._by_job.get(job, [])
        elif run_date is not None:
            source = self._by_date.get(run_date, [])
        else:
            source = iter(self._runs.values())
        wanted = RunState(state) if isinstance(state, str) else state
        return [
            run
            for run in source
            if (run_date is None or run.run_date == run_date)
            and (wanted is None or run.state is wanted)
        ]

    def runs_of_job(self, job: str) -> Sequence[Run]:
        """The job's runs in creation order, without a copy: read it, do not keep it."""
        return self._by_job.get(job, ())

    def __iter__(self) -> Iterator[Run]:
        return iter(self._runs.values())

    def __len__(self) -> int:
        return len(self._runs)

    def __contains__(self, run_id: object) -> bool:
        return run_id in self._runs
