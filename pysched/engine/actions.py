"""Operator actions: the engine's public methods for people (through the API and the CLI).

Every action is checked against the run's state first (an action the state does not allow
raises ``ActionError`` naming the state, and changes nothing), then applied inside the engine's
loop, journaled with who, when and why, and only then returned: the run you get back is durable.

======================  ===================================================================
action                  allowed from
======================  ===================================================================
``trigger(job, d)``     any job: a new run for run date ``d`` (dependencies apply)
``hold`` / ``release``  scheduled, waiting, blocked, queued, retrying / held
``hold_job``            a job: its new runs are created held (``release_job`` undoes it and
                        releases the runs the job hold held)
``cancel``              any unfinished run; a running attempt is killed first
``kill``                running: the attempt is killed, the run fails (no retry)
``rerun``               finished: a new series of attempts, dependencies re-checked
``force``               anything not running: start now, ignoring dependencies and time, not
                        pools
``mark_success``        anything not running: succeeded, which unblocks dependents
``backfill(job, a, b)`` a run for each date in [a, b] the job's calendar allows
======================  ===================================================================
"""

from __future__ import annotations

from collections.abc import Generator, Mapping, Sequence
from datetime import date, timedelta
from typing import Any

from pysched.config.model import Config, Job
from pysched.engine.core import EngineCore
from pysched.engine.runs import FINISHED, AttemptOutcome, Run, RunState, Trigger
from pysched.errors import ActionError, UnknownRunError
from pysched.store import Record
from pysched.timing.run_dates import LAST_YEAR

_HOLDABLE = (
    RunState.SCHEDULED,
    RunState.WAITING,
    RunState.BLOCKED,
    RunState.QUEUED,
    RunState.RETRYING,
)
_BACKFILL_LIMIT = 3_660


class Engine(EngineCore):
    """The engine with its operator actions. Create it with ``open_engine``."""

    async def trigger(
        self, job: str, run_date: date | None = None, *, by: str = "", why: str = ""
    ) -> Run:
        """Create a new run of ``job`` for ``run_date`` (default: the run date a firing now
        would carry). Its dependencies apply as for a scheduled run."""

        def handler() -> Run:
            definition = self._job(job)
            day = run_date or self.run_date_for_today(definition)
            self._within_history(day)
            run = self._create(definition, day, scheduled_for=self._time(), trigger=Trigger.MANUAL)
            self._record_action("trigger", run.run_id, by, why)
            return run

        return await self.call(handler)

    async def hold(self, run_id: str, *, by: str = "", why: str = "") -> Run:
        def handler() -> Run:
            run = self._run(run_id, "hold", _HOLDABLE)
            self._move(run, RunState.HELD, _who("held", by, why))
            self._record_action("hold", run_id, by, why)
            return run

        return await self.call(handler)

    async def release(self, run_id: str, *, by: str = "", why: str = "") -> Run:
        def handler() -> Run:
            run = self._run(run_id, "release", (RunState.HELD,))
            self._still_configured(run, "release")
            self._release(run)
            self._record_action("release", run_id, by, why)
            return run

        return await self.call(handler)

    async def cancel(self, run_id: str, *, by: str = "", why: str = "") -> Run:
        def handler() -> Run:
            run = self.book.get(run_id)
            if run.state.finished:
                raise ActionError(
                    f"cannot cancel {run_id}: it is {run.state.value} — it has finished already",
                    state=run.state.value,
                )
            if run.state is RunState.RUNNING:
                if self._stop_asked(run) is RunState.CANCELLED:
                    return run  # already being cancelled: the first request and its words stand
                self._touch(run)
                run.reason = _who("cancelled", by, why)
                self._request_kill(run, RunState.CANCELLED)
            else:
                self._move(run, RunState.CANCELLED, _who("cancelled", by, why))
            self._record_action("cancel", run_id, by, why)
            return run

        return await self.call(handler)

    async def kill(self, run_id: str, *, by: str = "", why: str = "") -> Run:
        def handler() -> Run:
            run = self._run(run_id, "kill", (RunState.RUNNING,))
            if self._stop_asked(run) is not None:
                # already being killed or cancelled: the first request and its words stand
                # (a kill after a cancel would only make it end failed instead of cancelled)
                return run
            self._touch(run)
            run.reason = _who("killed", by, why)
            self._request_kill(run, AttemptOutcome.KILLED)
            self._record_action("kill", run_id, by, why)
            return run

        return await self.call(handler)

    async def rerun(self, run_id: str, *, by: str = "", why: str = "") -> Run:
        def handler() -> Run:
            run = self._run(run_id, "rerun", tuple(FINISHED))
            self._still_configured(run, "rerun")
            self._touch(run)
            run.series_start = len(run.attempts)
            run.forced = False
            self._evaluate(run)
            self._notify.add((run.job, run.run_date))
            self._record_action("rerun", run_id, by, why)
            return run

        return await self.call(handler)

    async def force(self, run_id: str, *, by: str = "", why: str = "") -> Run:
        def handler() -> Run:
            run = self.book.get(run_id)
            if run.state is RunState.RUNNING:
                raise ActionError(
                    f"cannot force {run_id}: it is running (already started)", state="running"
                )
            self._still_configured(run, "force")
            self._touch(run)
            if run.state.finished:
                run.series_start = len(run.attempts)
            run.forced = True
            run.next_try_at = None
            self._unwatch(run, self.config.jobs.get(run.job))
            self._move(run, RunState.QUEUED, _who("forced", by, why))
            self._enqueue(run)
            self._slots.unpark(run.job, everything=True)  # it may have been parked, waiting
            self._record_action("force", run_id, by, why)
            return run

        return await self.call(handler)

    async def mark_success(self, run_id: str, *, by: str = "", why: str = "") -> Run:
        def handler() -> Run:
            run = self.book.get(run_id)
            if run.state in (RunState.RUNNING, RunState.SUCCEEDED):
                hint = " — kill or cancel it first" if run.state is RunState.RUNNING else ""
                raise ActionError(
                    f"cannot mark {run_id} successful: it is {run.state.value}{hint}",
                    state=run.state.value,
                )
            self._unwatch(run, self.config.jobs.get(run.job))
            self._move(run, RunState.SUCCEEDED, _who("marked successful", by, why))
            self._record_action("mark_success", run_id, by, why)
            return run

        return await self.call(handler)

    async def audit(self, action: str, target: str, *, by: str = "", why: str = "") -> None:
        """Journal an action taken outside the engine's runs and jobs (an API token created
        or revoked) in the audit trail, as an ``action`` record and event like any other."""
        await self.call(lambda: self._record_action(action, target, by, why))

    async def hold_job(self, job: str, *, by: str = "", why: str = "") -> None:
        def handler() -> None:
            self._job(job)
            if job in self._job_holds:
                raise ActionError(f"job {job!r} is already held", state="held")
            data = {
                "job": job,
                "held": True,
                "by": by,
                "why": why,
                "at": self._time().isoformat(),
            }
            self._job_holds[job] = data
            self._undo.append(lambda: self._job_holds.pop(job, None))
            self._records.append(_job_record(data))
            self._record_action("hold_job", job, by, why)

        await self.call(handler)

    async def release_job(self, job: str, *, by: str = "", why: str = "") -> list[Run]:
        def steps() -> Generator[None, None, list[Run]]:
            self._job(job)
            if job not in self._job_holds:
                raise ActionError(f"job {job!r} is not held", state="released")
            held = self._job_holds.pop(job)
            self._undo.append(lambda: self._job_holds.__setitem__(job, held))
            data = {
                "job": job,
                "held": False,
                "by": by,
                "why": why,
                "at": self._time().isoformat(),
            }
            self._records.append(_job_record(data))
            released: list[Run] = []
            for run in self.book.runs(job=job, state=RunState.HELD):
                if run.reason.startswith("job held"):
                    self._release(run)
                    released.append(run)
                    yield
            self._record_action("release_job", job, by, why)
            return released

        return await self.call_in_steps(steps)

    async def backfill(
        self, job: str, start: date, end: date, *, by: str = "", why: str = ""
    ) -> list[Run]:
        """A run of ``job`` for each date in ``start``..``end`` its calendar allows (every day
        without a calendar); dependents are created as usual."""

        def steps() -> Generator[None, None, list[Run]]:
            definition = self._job(job)
            if end < start:
                raise ActionError(f"backfill ends ({end}) before it starts ({start})")
            if (end - start).days > _BACKFILL_LIMIT:
                raise ActionError(f"backfill is limited to {_BACKFILL_LIMIT} days")
            self._within_history(start)
            self._within_history(end)
            runs: list[Run] = []
            day = start
            while day <= end:
                if definition.calendar is None or definition.calendar.is_business_day(day):
                    runs.append(
                        self._create(
                            definition,
                            day,
                            scheduled_for=self._time(),
                            trigger=Trigger.BACKFILL,
                        )
                    )
                    yield
                day += timedelta(days=1)
            self._record_action("backfill", job, by, why or f"{start}..{end}")
            return runs

        return await self.call_in_steps(steps)

    async def apply_config(self, new: Config, *, by: str = "") -> None:
        """Apply a new config: new jobs start firing, removed jobs stop (their running runs
        finish, their waiting runs are cancelled), changed jobs take effect for new runs. The
        version (text and hash) is journaled."""
        await self.call(lambda: self.apply(new, by=by))

    async def reload_failed(self, problems: Sequence[str], *, by: str = "") -> None:
        """Record that a reload was refused (the running config stays): journaled as an
        action on ``config`` and published as a ``reload_failed`` event with every problem."""

        def handler() -> None:
            count = len(problems)
            summary = (
                f"{count} problem{'s' if count != 1 else ''}: {problems[0] if problems else ''}"
            )
            self._record_action("reload_failed", "config", by, summary)
            now = self._time()
            data = {"by": by, "problems": list(problems), "sha256": self.config.sha256}
            self._publish(now, "reload_failed", data)

        await self.call(handler)

    # -- helpers (inside the loop) -----------------------------------------------------------

    def _job(self, name: str) -> Job:
        job = self.config.jobs.get(name)
        if job is None:
            raise UnknownRunError(name, "job")
        return job

    def _run(self, run_id: str, action: str, allowed: tuple[RunState, ...]) -> Run:
        run = self.book.get(run_id)
        if run.state not in allowed:
            hint = _way_out(action, run.state)
            raise ActionError(
                f"cannot {action} {run_id}: it is {run.state.value}{hint}", state=run.state.value
            )
        return run

    def _still_configured(self, run: Run, action: str) -> None:
        if run.job not in self.config.jobs:
            raise ActionError(
                f"cannot {action} {run.run_id}: job {run.job!r} is no longer in the config",
                state=run.state.value,
            )

    def _within_history(self, day: date) -> None:
        """Runs for dates past ``history_days`` may already be archived: making a new one
        could reuse an archived run's id, so it is refused. Dates after ``LAST_YEAR`` are
        refused too (date arithmetic near year 9999 overflows)."""
        if day.year > LAST_YEAR:
            raise ActionError(f"run date {day} is after the year {LAST_YEAR}")
        days = self.config.scheduler.history_days
        oldest = (self._time() - timedelta(days=days)).date()
        if day < oldest:
            raise ActionError(
                f"run date {day} is older than scheduler.history_days ({days} days): its runs "
                "may be archived; raise history_days to work on it"
            )

    def _release(self, run: Run) -> None:
        self._evaluate(run)  # re-judged from scratch, as if just created


def _way_out(action: str, state: RunState) -> str:
    """What a refusal adds after the state it names: why, and an action that the run's state
    does allow (never one that would be refused too)."""
    if action == "release":
        return " — only a held run can be released"
    if action == "kill":
        if state.finished:
            return " — only a running run can be killed, and this one has finished"
        return " — only a running run can be killed (cancel stops this one)"
    if action == "rerun":
        if state is RunState.RUNNING:
            return " — only a finished run can be rerun (kill or cancel it first)"
        return " — only a finished run can be rerun (cancel it first)"
    if action == "hold":
        if state is RunState.RUNNING:
            return " — only a run that has not started can be held (kill or cancel stops it)"
        if state.finished:
            return " — only a run that has not started can be held (rerun runs it again)"
    return ""


def _who(verb: str, by: str, why: str) -> str:
    text = f"{verb} by {by}" if by else verb
    return f"{text}: {why}" if why else text


def _job_record(data: Mapping[str, Any]) -> Record:
    return Record(type="job", data=data)
