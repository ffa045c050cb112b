"""The engine: one loop that moves every run from firing to final state, write-ahead.

Everything that happens (a firing falls due, an attempt ends, a retry timer expires, an operator
acts) arrives as an item in the engine's inbox. One loop takes what is there (up to a batch),
folds it into state in memory, commits all the changed records to the journal in one commit,
and only after the commit returns publishes events and acts: starts attempts, arms timers,
answers callers. So nothing is ever shown or started on a change the journal could lose
(write-ahead), and a burst of changes costs one commit (group commit happens by itself).

If the journal cannot write, the engine fail-stops: every run changed since the last good commit
goes back to its committed copy, ``engine.error`` is set, ``wait_failed()`` returns, and nothing
more is created or started. The next engine over the same journal carries on from what was
truly written.

Tasks: the loop, the firing task, one watcher per attempt and one timer per retrying run, all
in the engine's one nursery inside ``open_engine``. Leaving ``open_engine``
cancels them: attempts are no longer watched but keep running under their minders.
"""

from __future__ import annotations

import heapq
import logging
import random
from collections import deque
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping
from datetime import UTC, date, datetime, timedelta
from functools import partial
from typing import Any, TypeVar

import trio

from pysched.config.model import Config, Job, Overlap
from pysched.config.templates import RunContext
from pysched.engine import journal_state
from pysched.engine.book import Book
from pysched.engine.catch_up import missed_firings
from pysched.engine.deps import Verdict, evaluate
from pysched.engine.events import EventLog
from pysched.engine.journal_state import Replayed, firing_record
from pysched.engine.runs import Attempt, AttemptOutcome, Run, RunState, Trigger
from pysched.engine.slots import Slots, SlotUse
from pysched.engine.work import (
    AttemptEnded,
    AttemptStarted,
    Call,
    Dispatch,
    Fire,
    RetryDue,
    Work,
)
from pysched.errors import CalendarError, EngineStopped, PyschedError, StoreError, TemplateError
from pysched.launch.base import AttemptHandle, AttemptSpec, ExitStatus, Launcher, NotStarted
from pysched.store import Record, StoreStats
from pysched.store.base import BaseStore
from pysched.timing.clock import Clock
from pysched.timing.run_dates import run_date_for
from pysched.timing.schedule import Firing

log = logging.getLogger(__name__)
T = TypeVar("T")

INBOX_BATCH = 2_000
"""At most this many inbox items are folded into one commit."""
START_BATCH = 32
"""At most this many attempts are started per loop pass, so the loop stays responsive: a burst
of 200 ready runs is started over about seven passes of a few milliseconds each, with a
checkpoint between them, rather than one pass of 30-60 ms that a 10 ms ticker would feel."""
SLICE = 100
"""A pass that changes many runs (an operator releasing a held job's 1,000 runs) yields to the
other tasks every this many steps: its handler's steps, the runs it encodes for the journal and
the effects it runs after the commit. The pass stays one atomic commit: readers wait for it
(``committed``) or read only what it leaves alone until then (``journaled``), and the loop is
never blocked for more than a few milliseconds at a time."""
WORK_SLICE = 1
"""The heavier steps of a pass yield every this many: inbox items folded (200 triggers arriving
at once are one pass), dependents re-evaluated, attempts started (each renders its command and
environment). Each costs 0.1-0.3 ms, so the loop is held for that long at a time. Short steps are
what keeps an API request quick while a burst starts: a request needs several turns of trio's
scheduler (read, route, answer, write), and each turn waits for the step the engine takes in
it. 16 made steps of a few milliseconds, and a one-run read while 200 attempts started took
over 20 ms in most runs; 4 and 2 did better, 1 best (docs/benchmarks.md, "Measurements of
2026-12-02, evening"). A checkpoint costs a few microseconds."""
EVENTS_PER_EFFECT = 16
"""Events asked one after another in a pass are published by one effect, up to this many (the
event streams wake once per effect, not once per event)."""


class _Watch:
    """What the engine keeps about a running attempt."""

    __slots__ = ("handle", "job", "kill_reason", "number", "pool", "redact")

    def __init__(self, job: Job | None, number: int, pool: str | None) -> None:
        self.job = job
        self.number = number
        self.pool = pool
        self.handle: AttemptHandle | None = None
        self.kill_reason: AttemptOutcome | RunState | None = None
        """KILLED or TIMED_OUT (the attempt's outcome), or CANCELLED (the run's fate)."""
        self.redact: Mapping[str, str] = {}
        """The attempt's ``AttemptSpec.redact``, to mask the launcher's words about it."""


class EngineCore:
    """The machinery of the engine; ``pysched.engine.actions.Engine`` adds the operator actions.

    Public, read-only: ``book``, ``config``, ``events``, ``error``, ``clock``.
    """

    def __init__(
        self,
        config: Config,
        store: BaseStore,
        *,
        clock: Clock,
        launcher: Launcher,
        kill_grace: timedelta = timedelta(seconds=10),
        seed: int | None = None,
        first_event_id: int = 1,
    ) -> None:
        self.config = config
        self.clock = clock
        self.launcher = launcher
        self.kill_grace = kill_grace
        self.book = Book()
        self.events = EventLog(first_id=first_event_id)
        self.error: BaseException | None = None
        self._store = store
        self._random = random.Random(seed)
        self._inbox: deque[Work] = deque()
        self._wakeup = trio.Event()
        self._idle = trio.Event()
        self._busy = False
        self._loop_ended = False
        """The loop has ended (cancelled or fail-stopped): a call is refused at once."""
        self._failed = trio.Event()
        self._slots = Slots(config.scheduler.max_running, config.pools)
        self._heap: list[tuple[datetime, int, str, Firing]] = []
        self._heap_version: dict[str, int] = {}
        self._sleep_scope: trio.CancelScope | None = None
        self._starting_stopped = False
        self._recovering = 0
        """Attempts found running at start-up whose launcher has not answered yet."""
        self._after_recovery: list[Call] = []
        """Catch-up, held back until every attempt found running has been asked after: an
        attempt that ended while the scheduler was down must count as ended, not going, when
        the overlap rules judge the firings it missed."""
        self._last_firing: dict[str, datetime] = {}
        self._disabled: set[str] = set()
        self._configs: dict[str, Mapping[str, Any]] = {}
        self._job_holds: dict[str, Mapping[str, Any]] = {}
        self._actions: dict[str, Mapping[str, Any]] = {}
        self._watching: dict[tuple[str, date], set[str]] = {}
        self._watches: dict[str, _Watch] = {}
        self._active: dict[str, set[str]] = {}
        """Per job, its runs that are running or waiting out a retry backoff (for overlap)."""
        self._undo: list[Callable[[], object]] = []
        """How to put back this pass's changes to state other than runs, if the commit fails."""
        self._dependency_only: dict[str, list[str]] = {}
        # per loop pass: runs changed (with their committed copy), records, effects
        self._dirty: dict[str, Mapping[str, Any] | None] = {}
        self._records: list[Record] = []
        self._effects: list[Callable[[], object]] = []
        self._events_due: list[tuple[datetime, str, Mapping[str, Any]]] = []
        self._events_effect: Callable[[], object] | None = None
        """The effect that publishes ``_events_due`` (``_publish``)."""
        self._notify: set[tuple[str, date]] = set()
        self._dispatch_wanted = False
        self._snapshotting = False
        self._nursery: trio.Nursery | None = None
        self._attempts: trio.Nursery | None = None
        self._action_seq = 0
        self._now: datetime | None = None
        """The instant of the current loop pass: every change in one pass happens at once."""
        self._pass_open = False
        """True from a pass's first change until its commit returns: the book shows changes
        the journal does not hold yet."""
        self._pass_closed = trio.Event()
        self._readers_waiting = 0
        """Tasks in ``committed()`` waiting for the open pass to close, or woken by its close
        and not yet run: the loop opens no pass while there are any."""
        self._index_config()

    # -- public ---------------------------------------------------------------------------

    def _time(self) -> datetime:
        return self._now if self._now is not None else self.clock.now()

    async def settle(self) -> None:
        """Return once nothing more can happen without time passing or an attempt ending.

        Meant for tests: every task is blocked and the loop has nothing left to fold.
        """
        from trio.testing import wait_all_tasks_blocked  # here: it imports pytest when present

        while True:
            await wait_all_tasks_blocked()
            if self.error is not None or (not self._inbox and not self._busy):
                return
            await self._idle.wait()

    async def committed(self) -> None:
        """Return once no change is waiting for its commit, so that what the book shows is
        durable: call it right before reading ``book``, with no checkpoint in between.

        The loop changes runs in memory first and then awaits the journal (write-ahead); a
        reader that looks during that await, or while a big pass yields between its slices
        (``SLICE``), would see a change that a failed commit then takes back. Returns at once
        (no checkpoint) when no pass is open.

        A reader waits for one pass at most: the loop opens no new pass until the readers that
        the last close woke have run (without it, while work kept arriving, as when 200
        attempts start at once, a reader could find the next pass already open each time it
        woke, and wait through five of them and their commits).

        **Cancellation:** a reader cancelled while it waits still leaves the count, so a
        cancelled read never holds the engine.
        """
        while self._pass_open:
            self._readers_waiting += 1
            try:
                await self._pass_closed.wait()
            finally:
                self._readers_waiting -= 1

    def journaled(self, run: Run) -> bool:
        """Whether the run's record (``Run.record``) is one the journal holds, so a reader
        may show it without waiting for ``committed``: always between passes, and during a
        pass for every run but one the pass is making. A run the open pass changes keeps its
        committed record until the commit replaces it (``_touch``), so a reader during the
        pass sees the run as it was before the pass, never half of it."""
        return run.committed is not None or not self._pass_open

    def stop_starting(self) -> None:
        """Fire nothing more and start no more attempts: the first step of a graceful stop,
        taken before anything that may take a while (requests in flight finishing). Attempts
        a pass in progress has already journaled as starting are still launched.

        Runs that become ready meanwhile stay ``queued``, and firings due meanwhile are not
        made: the next start starts the one and catches up the other. Attempts already
        running are still watched, their ends recorded; actions and reads still work.
        """
        self._starting_stopped = True
        if self._sleep_scope is not None:
            self._sleep_scope.cancel()

    async def wait_failed(self) -> BaseException:
        """Wait until the engine fail-stops; return the cause (also in ``engine.error``)."""
        await self._failed.wait()
        assert self.error is not None
        return self.error

    @property
    def store_stats(self) -> StoreStats:
        """The journal's counters since open (commits, batches, fsyncs, commit latency)."""
        return self._store.stats

    def slot_use(self) -> SlotUse:
        """How many attempts run now, against ``max_running`` and each pool's size."""
        slots = self._slots
        return SlotUse(
            running=slots.running,
            max_running=slots.max_running,
            queued=slots.queued,
            pools={name: (slots.in_pool.get(name, 0), size) for name, size in slots.pools.items()},
        )

    @property
    def held_jobs(self) -> frozenset[str]:
        """Jobs an operator has held (``hold_job``): their new runs are created held."""
        return frozenset(self._job_holds)

    def config_versions(self) -> list[Mapping[str, Any]]:
        """Every config version journaled, oldest first: ``sha256``, ``text``, ``at``, ``by``.
        The last is the one in force."""
        return list(self._configs.values())

    # -- starting up ------------------------------------------------------------------------

    def restore(self, state: Replayed) -> None:
        """Take over the state a journal replay produced (before the loop starts)."""
        self.book = state.book
        self._last_firing = dict(state.last_firing)
        self._disabled = set(state.disabled)
        self._configs = dict(state.configs)
        self._job_holds = dict(state.job_holds)
        self._actions = dict(state.actions)
        self._action_seq = len(self._actions)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """The engine's service: recover, catch up, then fire and move runs until cancelled."""
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            self._attempts = nursery
            self._startup()
            nursery.start_soon(self._prepare_launcher)  # the first start then waits for nothing
            nursery.start_soon(self._loop)
            nursery.start_soon(self._firing_task)
            task_status.started()

    async def _prepare_launcher(self) -> None:
        """The launcher's ``prepare``, if it has one (a launcher written before it existed may
        not), never letting it take the engine down: its first ``start`` tries again."""
        prepare = getattr(self.launcher, "prepare", None)
        if prepare is None:
            return
        try:
            await prepare()
        except Exception:
            log.exception("the launcher could not get ready; its first start will try again")

    def _startup(self) -> None:
        now = self._time()
        self._record_config_version(by="startup")
        stops = _stops_journaled(self._actions.values())
        for run in self.book:
            state = run.state
            if _going(run):  # what _move keeps up from here on
                self._active.setdefault(run.job, set()).add(run.run_id)
            if state is RunState.RUNNING:
                self._recover_attempt(run, stops.get(run.run_id))  # even for a removed job
            elif state.finished:
                continue
            elif run.job not in self.config.jobs:
                self._post(Call(handler=lambda run=run: self._cancel_removed(run)))
            elif state in _EVALUABLE:
                self._post(Call(handler=lambda run=run: self._evaluate(run)))
            elif state is RunState.QUEUED:
                self._enqueue(run)
            elif state is RunState.RETRYING:
                self._arm_retry(run)
        for name, job in self.config.jobs.items():
            if job.schedule is None:
                continue
            last = self._last_firing.get(name)
            if last is None or not job.enabled or name in self._disabled:
                # first seen, disabled, or disabled when the scheduler last ran: firings up to
                # now are accounted for (a disabled job's firings are not "missed" when it is
                # enabled again)
                self._watermark(name, now, disabled=not job.enabled)
            elif last < now:
                catch_up = Call(handler=lambda job=job, last=last: self._catch_up(job, last, now))
                if self._recovering:
                    self._after_recovery.append(catch_up)
                else:
                    self._post(catch_up)
            self._plan(name, now)
        self._post(Dispatch())

    def _cancel_removed(self, run: Run) -> None:
        self._move(run, RunState.CANCELLED, "job removed from the config")

    def _watermark(self, name: str, now: datetime, *, disabled: bool = False) -> None:
        """Journal that ``name``'s firings are accounted for up to ``now`` (a job seen for the
        first time, or disabled), so firings missed after this, even before its first firing,
        are caught up rather than silently lost."""
        self._set_last_firing(name, now)
        was_disabled = name in self._disabled
        if disabled:
            self._disabled.add(name)
        else:
            self._disabled.discard(name)
        self._undo.append(
            lambda: (self._disabled.add if was_disabled else self._disabled.discard)(name)
        )
        self._records.append(firing_record(name, now, now.date(), run_id=None, disabled=disabled))

    def _set_last_firing(self, name: str, at: datetime) -> None:
        previous = self._last_firing.get(name)
        self._last_firing[name] = at
        self._undo.append(lambda: _restore(self._last_firing, name, previous))

    # -- the loop -------------------------------------------------------------------------

    def _post(self, work: Work) -> None:
        self._inbox.append(work)
        self._wakeup.set()

    async def _loop(self) -> None:
        """Take passes until cancelled or fail-stopped.

        **Cancellation:** every call is answered, wherever the cancellation lands: those of a
        pass not yet written get ``EngineStopped`` (nothing of the pass stays), those of a pass
        written get their result even if its effects were cut short (the next engine recovers
        attempts it did not start), and those still in the inbox get ``EngineStopped``, as
        does every call made afterwards.
        """
        try:
            await self._passes()
        finally:
            self._loop_ended = True
            self._fail_pending_calls()

    async def _passes(self) -> None:
        while True:
            if not self._inbox:
                self._busy = False
                self._idle.set()
                self._idle = trio.Event()
                await self._wakeup.wait()
                self._wakeup = trio.Event()
                # one more turn of the scheduler first: the other tasks woken at the same time
                # (attempts that ended together, a firing, a due retry) post their work too,
                # and it all goes into this pass and its one commit
                await trio.lowlevel.checkpoint()
                continue
            while self._readers_waiting:  # woken by the last close: they run in the next turn
                await trio.lowlevel.checkpoint()
            self._busy = True
            self._now = self.clock.now()
            batch = [self._inbox.popleft() for _ in range(min(len(self._inbox), INBOX_BATCH))]
            calls = [work for work in batch if isinstance(work, Call)]
            self._pass_open = True
            try:
                for index, work in enumerate(batch, 1):
                    if isinstance(work, Call):
                        await self._call(work)
                    else:
                        self._handle(work)
                    if index % WORK_SLICE == 0:
                        await trio.lowlevel.checkpoint()
                await self._settle_changes()
                committed = await self._commit()
            except BaseException:
                # cancelled at one of the pass's checkpoints (the engine is being stopped):
                # nothing of it was written, so nothing of it may stay in the book
                self._roll_back()
                for call in calls:
                    call.error = self._stopped()
                    call.done.set()
                raise
            finally:
                self._close_pass()
            if not committed:
                for call in calls:
                    call.error = call.error or self._stopped()
                    call.done.set()
                return
            effects, self._effects = self._effects, []
            try:
                for index, effect in enumerate(effects, 1):
                    effect()
                    if index % SLICE == 0:
                        await trio.lowlevel.checkpoint()
            finally:
                for call in calls:
                    call.done.set()
            self._maybe_snapshot()
            self._now = None
            await trio.lowlevel.checkpoint()

    async def _call(self, work: Call) -> None:
        """Run an operator's handler; one written in steps (``Call.in_steps``, a generator
        that yields after each run it changes) gets a checkpoint every ``SLICE`` steps."""
        try:
            result = work.handler()
            if not work.in_steps:
                work.result = result
                return
            steps: Iterator[None] = result
            done = 0
            while True:
                try:
                    next(steps)
                except StopIteration as finished:
                    work.result = finished.value
                    return
                done += 1
                if done % SLICE == 0:
                    await trio.lowlevel.checkpoint()
        except PyschedError as exc:
            work.error = exc

    def _close_pass(self) -> None:
        self._pass_open = False
        self._pass_closed.set()
        self._pass_closed = trio.Event()

    def _handle(self, work: Work) -> None:
        if isinstance(work, Fire):
            self._on_fire(work)
        elif isinstance(work, AttemptStarted):
            self._on_attempt_started(work)
        elif isinstance(work, AttemptEnded):
            self._on_attempt_ended(work)
        elif isinstance(work, RetryDue):
            self._on_retry_due(work)
        else:
            self._dispatch_wanted = True

    async def _settle_changes(self) -> None:
        """Re-evaluate dependents of what changed, then start what the slots allow; yields
        every ``WORK_SLICE`` evaluations and starts."""
        done = 0
        for _ in range(1000):  # bounded: each pass only looks at runs a change touched
            if not self._notify:
                break
            notify, self._notify = self._notify, set()
            for key in notify:
                for run_id in sorted(self._watching.get(key, ())):
                    run = self.book.find(run_id)
                    if run is not None and run.state in _EVALUABLE and not run.forced:
                        self._evaluate(run)
                        done += 1
                        if done % WORK_SLICE == 0:
                            await trio.lowlevel.checkpoint()
        if self._dispatch_wanted or self._slots.queued:
            self._dispatch_wanted = False
            await self._dispatch()

    async def _commit(self) -> bool:
        """Journal every run changed in this pass and the other records; False on fail-stop."""
        if not self._dirty and not self._records:
            if self._store.failed is not None:  # (a snapshot's failure) nothing more is written
                self._fail_stop(self._store.failed)
                return False
            return True
        changed = [run for run_id in self._dirty if (run := self.book.find(run_id)) is not None]
        written: list[dict[str, Any]] = []
        for index, run in enumerate(changed, 1):
            written.append(run.to_data())
            if index % SLICE == 0:
                await trio.lowlevel.checkpoint()
        records = [Record(type="run", data=data) for data in written]
        records += self._records
        try:
            await self._store.commit(records)
        except StoreError as exc:
            self._fail_stop(exc)
            return False
        for record in self._records:
            if record.type == "action":  # shown only once written, even during a pass
                self._actions[record.data["id"]] = record.data
        for run, data in zip(changed, written, strict=True):
            run.committed = data  # the copy fail-stop goes back to
            self.book.changed(run)
            if run.state.finished:  # (its attempt's watch went when the attempt ended)
                run.refreeze(data)  # its record alone, until something reads it again
        self._dirty.clear()
        self._records = []
        self._undo = []
        return True

    def _fail_stop(self, error: StoreError) -> None:
        """Put every uncommitted run back, drop what was about to happen, and report."""
        log.error("journal failed, engine stopping: %s", error)
        self._roll_back()
        self.error = error
        self._failed.set()
        self._idle.set()
        if self._nursery is not None:
            # stop firing and starting; attempt watchers go too (their ends cannot be recorded)
            self._nursery.cancel_scope.cancel()

    def _roll_back(self) -> None:
        """Put every run changed since the last good commit back to its committed copy (a run
        created since goes), undo the pass's other changes, and drop its records and effects."""
        for run_id, committed in self._dirty.items():
            run = self.book.find(run_id)
            if run is None:
                continue
            if committed is None:
                self.book.remove(run)
            else:
                self.book.replace(Run.from_data(committed))
        for undo in reversed(self._undo):
            undo()
        self._undo = []
        self._dirty.clear()
        self._records = []
        self._effects = []

    def _stopped(self) -> EngineStopped:
        """What a call the engine will not carry out is answered: why it stopped, if it
        fail-stopped; else that it stopped (was cancelled) before the call was written."""
        if self.error is not None:
            return EngineStopped(f"the engine stopped: {self.error}")
        return EngineStopped("the engine stopped before this was written")

    def _fail_pending_calls(self) -> None:
        while self._inbox:
            work = self._inbox.popleft()
            if isinstance(work, Call):
                work.error = self._stopped()
                work.done.set()

    async def call(self, handler: Callable[[], Any]) -> Any:
        """Run ``handler`` inside the loop; return its result once its changes are durable."""
        return await self._submit(Call(handler=handler))

    async def call_in_steps(self, steps: Callable[[], Generator[None, None, T]]) -> T:
        """``call`` for a handler that may change many runs: a generator function that yields
        after each run it changes and returns its result. The loop lets other tasks run every
        ``SLICE`` steps; the change is still one commit, durable when this returns.

        Check everything that can refuse the action before the first ``yield``: an error
        raised later leaves the earlier steps' changes in the commit.
        """
        result: T = await self._submit(Call(handler=steps, in_steps=True))
        return result

    async def _submit(self, work: Call) -> Any:
        if self.error is not None or self._loop_ended:
            raise self._stopped()
        self._post(work)
        await work.done.wait()
        if work.error is not None:
            raise work.error
        return work.result

    # -- changing runs (inside the loop only) ---------------------------------------------

    def _touch(self, run: Run) -> None:
        if run.run_id not in self._dirty:
            if run.run_id not in self.book:
                self._dirty[run.run_id] = None
            else:
                # what fail-stop goes back to (a run put in the book by hand has no commit yet)
                self._dirty[run.run_id] = run.committed = run.record()

    def _move(self, run: Run, to: RunState, reason: str = "") -> None:
        self._touch(run)
        before = run.state
        run.move(to, reason)
        was_going = run.run_id in self._active.get(run.job, ())
        going = _going(run)
        if going and not was_going:
            self._active.setdefault(run.job, set()).add(run.run_id)
        elif was_going and not going:
            active = self._active[run.job]
            active.discard(run.run_id)
            if not active:
                del self._active[run.job]
        if (was_going and not going) or (before is RunState.QUEUED and to is not before):
            # the run its job's parked runs wait for stopped going, or one ahead of them left
            # the queue (started, held, cancelled): the best of them is looked at again, so
            # none waits for a run that will not come
            self._slots.unpark(run.job)
        if before is not to:
            if to.finished:
                run.ended_at = self._time()
            elif before.finished:
                run.ended_at = None  # rerun: going again
            if before.finished or to.finished:
                self._notify.add((run.job, run.run_date))
            if before is RunState.QUEUED:
                self._slots.discard(run.run_id)
            self._effect_publish("run_changed", run, before=before.value)

    def _effect_publish(self, kind: str, run: Run, **extra: Any) -> None:
        data = {
            "run_id": run.run_id,
            "job": run.job,
            "state": run.state.value,
            "reason": run.reason,
            **extra,
        }
        self._publish(self._time(), kind, data)

    def _publish(self, at: datetime, kind: str, data: Mapping[str, Any]) -> None:
        """Publish an event once this pass is committed, in the order asked. Events asked
        one after another share one effect (up to ``EVENTS_PER_EFFECT`` of them, so the loop
        still yields every ``SLICE`` effects within a few milliseconds): readers wake once per
        effect."""
        due = self._events_due
        if (
            len(due) >= EVENTS_PER_EFFECT
            or not self._effects
            or self._effects[-1] is not self._events_effect
        ):
            due = self._events_due = []
            self._events_effect = partial(self.events.publish_all, due)
            self._effects.append(self._events_effect)
        due.append((at, kind, data))

    def _create(
        self,
        job: Job,
        run_date: date,
        *,
        scheduled_for: datetime,
        trigger: Trigger,
        upstream: str | None = None,
    ) -> Run:
        n = self.book.count_for(job.name, run_date) + 1
        run = Run(
            job=job.name,
            run_date=run_date,
            n=n,
            created_at=self._time(),
            scheduled_for=scheduled_for,
            trigger=trigger,
            upstream=upstream,
        )
        self._touch(run)
        self.book.add(run)
        self._notify.add((run.job, run.run_date))
        self._effect_publish("run_created", run, trigger=trigger.value, upstream=upstream)
        hold = self._job_holds.get(job.name)
        if hold is not None:
            why = hold.get("why") or ""
            reason = f"job held by {hold.get('by') or 'an operator'}"
            self._move(run, RunState.HELD, f"{reason}: {why}" if why else reason)
        else:
            self._evaluate(run)
        for downstream in self._dependency_only.get(job.name, ()):
            if self.book.count_for(downstream, run_date) == 0:
                self._create(
                    self.config.jobs[downstream],
                    run_date,
                    scheduled_for=scheduled_for,
                    trigger=Trigger.DEPENDENCY,
                    upstream=job.name,
                )
        return run

    def _evaluate(self, run: Run) -> None:
        """Judge a not-yet-started run's dependencies and move it accordingly."""
        job = self.config.jobs.get(run.job)
        if job is None:
            self._move(run, RunState.CANCELLED, "job removed from the config")
            return
        result = evaluate(job, run.run_date, self.book)
        for key in result.watches:
            self._watching.setdefault(key, set()).add(run.run_id)
        if result.verdict is Verdict.MET:
            self._ready(run, job)
        elif result.verdict is Verdict.WAITING:
            self._move(run, RunState.WAITING, result.reason)
        elif result.verdict is Verdict.BLOCKED:
            self._move(run, RunState.BLOCKED, result.reason)
        else:
            self._move(run, RunState.SKIPPED, result.reason)

    def _unwatch(self, run: Run, job: Job | None) -> None:
        if job is None:
            return
        for dependency in job.depends_on:
            try:
                key = (dependency.job, dependency.upstream_run_date(run.run_date, job.calendar))
            except CalendarError:
                continue  # no run date, so never watched (``evaluate``)
            watchers = self._watching.get(key)
            if watchers is not None:
                watchers.discard(run.run_id)
                if not watchers:
                    del self._watching[key]

    def _active_run(self, job: str, other_than: str) -> Run | None:
        """A run of ``job`` that is going (``_going``), for overlap: one that is running if
        there is one (a due retry waits only for that; reasons name it), else any."""
        found: Run | None = None
        for run_id in self._active.get(job, ()):
            if run_id != other_than and (run := self.book.find(run_id)) is not None:
                if run.state is RunState.RUNNING:
                    return run
                found = found or run
        return found

    def _ready(self, run: Run, job: Job) -> None:
        """Dependencies are met: apply the overlap policy and queue for a slot."""
        self._unwatch(run, job)
        active = self._active_run(job.name, run.run_id)
        if active is not None and job.overlap is Overlap.SKIP and not run.forced:
            going = "running" if active.state is RunState.RUNNING else "retrying"
            self._move(run, RunState.SKIPPED, f"overlap: {active.run_id} is still {going}")
            return
        reason = ""
        if job.overlap is Overlap.QUEUE and not run.forced:
            # keep only the newest waiting run of each run date (never one that has started a
            # series of attempts, nor a forced one)
            for other in self.book.runs_for(job.name, run.run_date):
                if (
                    other is not run
                    and other.state is RunState.QUEUED
                    and other.n < run.n
                    and other.attempts_in_series == 0
                    and not other.forced
                    and other.trigger is not Trigger.CATCH_UP  # catch_up: all asked for each
                ):
                    self._move(other, RunState.SKIPPED, f"overlap: superseded by {run.run_id}")
            if active is not None:
                reason = _overlap_reason(job.name)
        self._move(run, RunState.QUEUED, reason)
        self._enqueue(run)

    def _enqueue(self, run: Run) -> None:
        job = self.config.jobs.get(run.job)
        if job is None:  # never left queued for a job that cannot start any more
            self._move(run, RunState.CANCELLED, "job removed from the config")
            return
        self._slots.enqueue(run, job.priority, job.pool)
        self._dispatch_wanted = True

    def _may_start(self, run_id: str, chosen: dict[str, str]) -> bool | str:
        """Whether the slots may start this queued run now, as far as overlap goes: True,
        False, or the job's name when the run must wait for another run of its job (the slots
        park it until that one stops going; see ``Slots.take``).

        ``chosen`` maps each job to the first run the current dispatch let through: runs
        chosen together are not going yet while the slots choose, so at most one run of a job
        whose overlap is not ``allow`` may be among them, besides forced ones (which ignore
        overlap themselves, but are going for the others once chosen)."""
        run = self.book.find(run_id)
        if run is None or run.state not in (RunState.QUEUED, RunState.RETRYING):
            return False
        job = self.config.jobs.get(run.job)
        if job is None:
            return False
        if job.overlap is Overlap.ALLOW:
            return True
        if run.forced:
            chosen.setdefault(run.job, run_id)
            return True
        active = self._active_run(job.name, run.run_id)
        if active is not None and _going(run) and active.state is not RunState.RUNNING:
            # a retry that came due waits only for an attempt under way: two going runs that
            # both wait for the other would wait forever (the slots' order picks between them)
            active = None
        blocker = active.run_id if active is not None else chosen.setdefault(run.job, run_id)
        if blocker == run_id:
            return True
        if run.attempts_in_series > 0:
            return False  # a due retry (it says "retry due") is looked at on every pass
        reason = _overlap_reason(run.job)
        if run.reason != reason:
            self._touch(run)
            run.reason = reason
            self._effect_publish("run_changed", run)  # no ``before``: only the reason changed
        return run.job

    async def _dispatch(self) -> None:
        if self.error is not None or self._starting_stopped:
            return
        chosen: dict[str, str] = {}
        started = self._slots.take(START_BATCH, lambda run_id: self._may_start(run_id, chosen))
        for index, (run_id, pool) in enumerate(started, 1):
            self._start_attempt(self.book.get(run_id), pool)
            if index % WORK_SLICE == 0 and index < len(started):
                await trio.lowlevel.checkpoint()
        if len(started) == START_BATCH:
            self._post(Dispatch())

    def _start_attempt(self, run: Run, pool: str | None) -> None:
        job = self.config.jobs[run.job]
        number = len(run.attempts) + 1
        now = self._time()
        self._touch(run)
        run.attempts.append(Attempt(number=number, started_at=now))
        run.next_try_at = None
        self._move(run, RunState.RUNNING, "")
        watch = _Watch(job, number, pool)
        self._watches[run.run_id] = watch
        try:
            spec = self._spec(run, job, number)
        except TemplateError as exc:
            # cannot even build the command (a secret went missing since the config loaded)
            self._post(
                AttemptEnded(run_id=run.run_id, number=number, status=None, start_error=str(exc))
            )
            return
        watch.redact = spec.redact
        self._effects.append(lambda: self._spawn(self._watch_attempt, run.run_id, spec, watch))

    def _spec(self, run: Run, job: Job, number: int) -> AttemptSpec:
        context = RunContext(
            job=run.job,
            run_id=run.run_id,
            run_date=run.run_date,
            attempt=number,
            scheduled_for=run.scheduled_for,
        )
        secrets = self.config.secrets
        env = {name: template.render(context, secrets) for name, template in job.env.items()}
        env.update(
            PYSCHED_JOB=run.job,
            PYSCHED_RUN_ID=run.run_id,
            PYSCHED_RUN_DATE=run.run_date.isoformat(),
            PYSCHED_ATTEMPT=str(number),
            PYSCHED_SCHEDULED_FOR=run.scheduled_for.isoformat(),
        )
        base = self._base_dir
        cwd = base / job.cwd.render(context, secrets) if job.cwd is not None else base
        argv, values = job.command.render_with_env(context, secrets)
        env.update(values)  # last: the values a string command refers to
        redact = {
            text: shown
            for text in (argv[0] if argv else "", str(cwd))
            if (shown := secrets.mask(text)) != text
        }
        if job.cwd is not None and job.cwd.secret_names:
            # the folder as the launcher will name it: ``Path`` tidies "a//b/" into "a/b",
            # which may no longer hold the secret's value as written, and so escape the mask
            redact[str(cwd)] = str(base / job.cwd.render_masked(context))
        return AttemptSpec(
            run_id=run.run_id,
            job=run.job,
            run_date=run.run_date,
            attempt=number,
            argv=argv,
            env=env,
            cwd=cwd,
            scheduled_for=run.scheduled_for,
            display=job.command.display(context),
            redact=redact,
        )

    def _masked(self, message: str, watch: _Watch | None) -> str:
        """A launcher's message with every secret masked, also in the program and folder as
        the launcher named them (``AttemptSpec.redact``: a tidied path may escape the mask)."""
        message = self.config.secrets.mask(message)
        for text, shown in watch.redact.items() if watch is not None else ():
            message = message.replace(text, shown)
        return message

    def _spawn(self, fn: Callable[..., Any], *args: Any) -> None:
        if self._attempts is not None and self.error is None:
            self._attempts.start_soon(fn, *args)

    # -- attempts (tasks outside the loop; they only post) ---------------------------------

    async def _watch_attempt(self, run_id: str, spec: AttemptSpec, watch: _Watch) -> None:
        try:
            handle = await self.launcher.start(spec)
        except (OSError, PyschedError) as exc:
            self._post(
                AttemptEnded(run_id=run_id, number=watch.number, status=None, start_error=str(exc))
            )
            return
        watch.handle = handle
        self._post(AttemptStarted(run_id=run_id, number=watch.number, info=dict(handle.info)))
        await self._wait_attempt(run_id, handle, watch, started_at=self.clock.now())

    async def _wait_attempt(
        self, run_id: str, handle: AttemptHandle, watch: _Watch, *, started_at: datetime
    ) -> None:
        if watch.kill_reason is not None:  # killed before the launcher gave us a handle
            self._spawn(handle.kill, self.kill_grace)
        if watch.job is None or watch.job.timeout is None:
            status = await handle.wait()
        else:
            async with trio.open_nursery() as nursery:
                deadline = started_at + watch.job.timeout
                nursery.start_soon(self._time_out, handle, watch, deadline)
                status = await handle.wait()
                nursery.cancel_scope.cancel()
        self._post(AttemptEnded(run_id=run_id, number=watch.number, status=status))

    async def _time_out(self, handle: AttemptHandle, watch: _Watch, deadline: datetime) -> None:
        await self.clock.sleep_until(deadline)
        if watch.kill_reason is None:
            watch.kill_reason = AttemptOutcome.TIMED_OUT
        # a task of its own: the kill's grace goes on after the attempt's end (the command may
        # die at once and leave children that ignore SIGTERM, which SIGKILL must still reach)
        self._spawn(handle.kill, self.kill_grace)

    def _recover_attempt(self, run: Run, stop: tuple[str, datetime] | None = None) -> None:
        """After a restart: adopt a still-running attempt, record one that ended, or lose it.

        A job removed from the config while its attempt ran is still asked after: its attempt
        is watched to its end (and not retried), never silently forgotten. ``stop`` is the
        last kill or cancel asked for this run (the action and when): asked during this
        attempt, it still stands, and is carried out again (SIGTERM, the grace, SIGKILL).
        """
        job = self.config.jobs.get(run.job)
        attempt = run.current_attempt
        if attempt is None:
            self._post(AttemptEnded(run_id=run.run_id, number=0, status=None))
            return
        pool = job.pool if job is not None else None
        watch = _Watch(job, attempt.number, pool)
        if stop is not None and stop[1] >= attempt.started_at:
            watch.kill_reason = _STOPS[stop[0]]
        self._watches[run.run_id] = watch
        self._slots.acquire(pool)
        spec: AttemptSpec | None = None
        if job is not None:
            try:
                spec = self._spec(run, job, attempt.number)
            except TemplateError:
                spec = None  # a secret went missing: the launcher finds attempts by id anyway
        if spec is None:
            spec = AttemptSpec(
                run_id=run.run_id,
                job=run.job,
                run_date=run.run_date,
                attempt=attempt.number,
                argv=(),
                scheduled_for=run.scheduled_for,
            )
        found_spec = spec
        watch.redact = spec.redact
        self._recovering += 1
        self._effects.append(
            lambda: self._spawn(self._adopt, run.run_id, found_spec, attempt, watch)
        )

    async def _adopt(self, run_id: str, spec: AttemptSpec, attempt: Attempt, watch: _Watch) -> None:
        try:
            found = await self.launcher.recover(spec, attempt.info)
            if isinstance(found, NotStarted):
                self._post(
                    AttemptEnded(
                        run_id=run_id, number=watch.number, status=None, never_started=True
                    )
                )
                return
            if found is None or isinstance(found, ExitStatus):
                self._post(AttemptEnded(run_id=run_id, number=watch.number, status=found))
                return
        finally:
            self._recovered_one()
        watch.handle = found
        minder = found.info.get("minder_pid")
        log.info(
            "%s attempt %d is still running%s: adopted, and watched to its end",
            run_id,
            watch.number,
            f" (minder pid {minder})" if isinstance(minder, int) else "",
        )
        await self._wait_attempt(run_id, found, watch, started_at=attempt.started_at)

    def _recovered_one(self) -> None:
        """One attempt found running at start-up has been asked after (its end, if it ended,
        is posted); after the last, the held-back catch-up goes in behind those ends."""
        self._recovering -= 1
        if self._recovering == 0:
            held, self._after_recovery = self._after_recovery, []
            for call in held:
                self._post(call)

    # -- handlers (inside the loop) --------------------------------------------------------

    def _on_fire(self, work: Fire) -> None:
        job = self.config.jobs.get(work.job)
        firing = work.firing
        if job is None or not job.enabled:
            return
        self._set_last_firing(job.name, firing.at)
        if firing.closed is not None:
            self._skip_firing(job.name, firing, firing.closed)
            return
        run = self._create(job, firing.run_date, scheduled_for=firing.at, trigger=Trigger.SCHEDULE)
        self._records.append(firing_record(job.name, firing.at, firing.run_date, run_id=run.run_id))

    def _on_attempt_started(self, work: AttemptStarted) -> None:
        run = self.book.find(work.run_id)
        if run is None or run.current_attempt is None:
            return
        if run.current_attempt.number != work.number:
            return
        self._touch(run)
        run.attempts[-1] = Attempt(
            number=work.number, started_at=run.attempts[-1].started_at, info=work.info
        )
        self._effect_publish("attempt_started", run, attempt=work.number, info=dict(work.info))

    def _on_attempt_ended(self, work: AttemptEnded) -> None:
        run = self.book.find(work.run_id)
        watch = self._watches.pop(work.run_id, None)
        if watch is not None:
            self._slots.release(watch.pool)
            self._dispatch_wanted = True
        if run is None or run.state is not RunState.RUNNING:
            return
        kill_reason = watch.kill_reason if watch is not None else None
        if work.never_started and kill_reason is None:
            # journaled as starting, never begun: start it now, under the same number, once
            self._touch(run)
            run.attempts.pop()
            self._move(run, RunState.QUEUED, "its start was interrupted by a restart")
            self._enqueue(run)
            return
        job = watch.job if watch is not None else self.config.jobs.get(run.job)
        removed = run.job not in self.config.jobs  # since the attempt started: no retry
        status = work.status
        now = self._time()
        if work.never_started:  # and killed or cancelled meanwhile: it is not started now
            outcome, message = AttemptOutcome.KILLED, "stopped before its command started"
        elif work.start_error is not None:
            outcome, message = AttemptOutcome.START_FAILED, work.start_error
        elif status is not None and status.lost:  # it ran; how it ended is unknown
            if isinstance(kill_reason, AttemptOutcome):
                outcome = kill_reason
            elif kill_reason is RunState.CANCELLED:
                outcome = AttemptOutcome.KILLED
            else:
                outcome = AttemptOutcome.LOST
            message = status.message
        elif status is not None and status.exit_code is None and status.signal is None:
            # the launcher ran, the command never did (no such program, a bad cwd)
            outcome, message = AttemptOutcome.START_FAILED, status.message
        elif status is None:
            outcome, message = AttemptOutcome.LOST, "the attempt vanished while unwatched"
        elif isinstance(kill_reason, AttemptOutcome):
            outcome, message = kill_reason, status.message
        elif kill_reason is RunState.CANCELLED:
            outcome, message = AttemptOutcome.KILLED, status.message
        elif status.succeeded:
            outcome, message = AttemptOutcome.SUCCEEDED, status.message
        else:
            outcome, message = AttemptOutcome.FAILED, status.message
        self._touch(run)
        run.end_attempt(
            ended_at=(status.ended_at if status is not None and status.ended_at else now),
            exit_code=status.exit_code if status is not None else None,
            signal=status.signal if status is not None else None,
            outcome=outcome,
            # a launcher's words may quote the program or folder, which may hold a secret
            message=self._masked(message, watch),
        )
        self._effect_publish(
            "attempt_ended",
            run,
            attempt=work.number,
            outcome=outcome.value,
            exit_code=status.exit_code if status is not None else None,
        )
        if outcome is AttemptOutcome.SUCCEEDED:
            self._move(run, RunState.SUCCEEDED, "")
        elif kill_reason is RunState.CANCELLED:
            self._move(run, RunState.CANCELLED, run.reason or "cancelled")
        elif outcome is AttemptOutcome.KILLED or kill_reason is AttemptOutcome.KILLED:
            # killed by an operator: not retried, even if the attempt vanished meanwhile
            self._move(run, RunState.FAILED, run.reason or "killed")
        elif job is not None and run.attempts_in_series < 1 + job.retries.count and not removed:
            retry = run.attempts_in_series
            spread = self._random.uniform(-1.0, 1.0)
            delay = job.retries.backoff.delay(retry, spread)
            run.next_try_at = now + delay
            self._move(
                run,
                RunState.RETRYING,
                f"attempt {work.number} {_said(outcome, status)}; retry {retry} of "
                # to the second, as every time an operator reads (the instant itself keeps
                # its microseconds in next_try_at)
                f"{job.retries.count} at "
                f"{run.next_try_at.replace(microsecond=0).isoformat()}",
            )
            self._arm_retry(run)
        else:
            final = RunState.LOST if outcome is AttemptOutcome.LOST else RunState.FAILED
            said = f"attempt {work.number} {_said(outcome, status)}"
            if removed:
                said += "; not retried: job removed from the config"
            self._move(run, final, said)

    def _arm_retry(self, run: Run) -> None:
        at = run.next_try_at or self._time()
        marker = RetryDue(run_id=run.run_id, attempts=len(run.attempts))
        self._effects.append(lambda: self._spawn(self._retry_timer, at, marker))

    async def _retry_timer(self, at: datetime, marker: RetryDue) -> None:
        await self.clock.sleep_until(at)
        self._post(marker)

    def _on_retry_due(self, work: RetryDue) -> None:
        run = self.book.find(work.run_id)
        if run is None or run.state is not RunState.RETRYING:
            return
        if len(run.attempts) != work.attempts:
            return
        self._move(run, RunState.QUEUED, "retry due")
        self._enqueue(run)

    # -- firing ----------------------------------------------------------------------------

    def _plan(self, name: str, after: datetime) -> None:
        """(Re)compute a job's next firing; the firing task sleeps until the earliest."""
        job = self.config.jobs.get(name)
        version = self._heap_version.get(name, 0) + 1
        self._heap_version[name] = version
        if job is not None and job.enabled and job.schedule is not None:
            firing = next(job.schedule.iter_firings(after, include_closed=True), None)
            if firing is None:
                log.warning("job %s has no firing within the search horizon", name)
            else:
                heapq.heappush(self._heap, (firing.at.astimezone(UTC), version, name, firing))
        if self._sleep_scope is not None:
            self._sleep_scope.cancel()  # the firing task re-reads the heap

    async def _firing_task(self) -> None:
        """Sleep until the earliest next firing, post it, plan that job's next one.

        **Cancellation:** ``_plan`` cancels the current sleep when the heap changes, so a new or
        changed job's earlier firing is never slept through.
        """
        while not self._starting_stopped:
            while self._heap and self._heap_version.get(self._heap[0][2]) != self._heap[0][1]:
                heapq.heappop(self._heap)  # superseded by a later _plan
            if self._heap and self._heap[0][0] <= self._time() + _FIRING_TOLERANCE:
                _, _, name, firing = heapq.heappop(self._heap)
                self._post(Fire(job=name, firing=firing))
                self._plan(name, firing.at)
                continue
            with trio.CancelScope() as scope:
                self._sleep_scope = scope
                if self._heap:
                    await self.clock.sleep_until(self._heap[0][0])
                else:
                    await trio.sleep_forever()
            self._sleep_scope = None

    def _catch_up(self, job: Job, last: datetime, now: datetime) -> None:
        """Decide the firings of ``job`` missed in (``last``, ``now``] by its policy; ``now``
        is the instant the firing heap was planned from, so no firing is made twice."""
        missed = missed_firings(job, last, now, self.config.scheduler.max_catch_up)
        for firing, reason in missed.skipped:
            self._skip_firing(job.name, firing, reason)
        if missed.summary is not None:
            count, first, last_at, reason = missed.summary
            data = {
                "job": job.name,
                "count": count,
                "first": first.isoformat(),
                "last": last_at.isoformat(),
                "reason": reason,
            }
            self._records.append(Record(type="skips", data=data))
            self._publish(now, "firings_skipped", data)
        for firing in missed.runs:
            run = self._create(
                job, firing.run_date, scheduled_for=firing.at, trigger=Trigger.CATCH_UP
            )
            self._records.append(
                firing_record(job.name, firing.at, firing.run_date, run_id=run.run_id)
            )
        self._watermark(job.name, now)

    def _skip_firing(self, job: str, firing: Firing, reason: str) -> None:
        """Write down a firing that makes no run (calendar, catch-up): nothing is dropped
        silently."""
        self._records.append(
            firing_record(job, firing.at, firing.run_date, run_id=None, skipped=reason)
        )
        data = {"job": job, "at": firing.at.isoformat(), "reason": reason}
        self._publish(self._time(), "firing_skipped", data)

    # -- config --------------------------------------------------------------------------

    def _index_config(self) -> None:
        self._base_dir = self.config.path.parent.absolute()
        self._dependency_only = {}
        for name, job in self.config.jobs.items():
            if job.schedule is None and job.enabled:
                for dependency in job.depends_on:
                    if dependency.date_offset == 0 and dependency.job != name:
                        self._dependency_only.setdefault(dependency.job, []).append(name)

    def _record_config_version(self, *, by: str) -> bool:
        config = self.config
        if config.sha256 in self._configs and list(self._configs)[-1] == config.sha256:
            return False
        data = {
            "sha256": config.sha256,
            "text": config.text,
            "at": self._time().isoformat(),
            "by": by,
        }
        self._configs.pop(config.sha256, None)
        self._configs[config.sha256] = data
        self._records.append(Record(type="config", data=data))
        return True

    def apply(self, new: Config, *, by: str) -> None:
        """Swap in ``new`` (inside the loop): new jobs fire, removed jobs stop, changed jobs
        take effect for new runs; the version is journaled."""
        old = self.config
        self.config = new
        self._slots.reconfigure(new.scheduler.max_running, new.pools)
        # pools, priorities and overlap rules may have changed
        self._slots.refile(self._placement)
        self._index_config()
        now = self._time()
        for name in set(old.jobs) | set(new.jobs):
            before, after = old.jobs.get(name), new.jobs.get(name)
            if after is None:
                self._plan(name, now)  # bumps the version: its heap entry is dropped
                for run in self.book.runs(job=name):
                    if run.state in _EVALUABLE or run.state in (
                        RunState.QUEUED,
                        RunState.HELD,
                        RunState.RETRYING,
                    ):
                        self._move(run, RunState.CANCELLED, "job removed from the config")
                continue
            if before is not None and (
                before.depends_on != after.depends_on or before.calendar != after.calendar
            ):
                self._judge_again(name, before)
            if (
                before is None
                or before.schedule != after.schedule
                or (before.enabled != after.enabled)
            ):
                if after.schedule is not None:
                    # new (or back), rescheduled, disabled or enabled again: no firing of
                    # this schedule before now was missed, so a later restart must not catch
                    # one up (it would be a run for a moment the schedule did not exist)
                    self._watermark(name, now, disabled=not after.enabled)
                self._plan(name, now)
        self._record_config_version(by=by)
        self._publish(now, "config_applied", {"sha256": new.sha256, "by": by})
        self._dispatch_wanted = True

    def _placement(self, run_id: str) -> tuple[int, str | None]:
        """A queued run's priority and pool, as its job now says."""
        run = self.book.find(run_id)
        job = self.config.jobs.get(run.job) if run is not None else None
        return (job.priority, job.pool) if job is not None else (0, None)

    def _judge_again(self, name: str, before: Job) -> None:
        """``name``'s dependencies changed in a reload: its runs not started yet are judged
        again by the new ones (a run waiting for a job that is gone would wait for ever)."""
        for run in self.book.runs(job=name):
            if run.state in _EVALUABLE and not run.forced:
                self._unwatch(run, before)
                self._evaluate(run)

    # -- snapshots -------------------------------------------------------------------------

    def state_view(self) -> Replayed:
        return Replayed(
            book=self.book,
            last_firing=self._last_firing,
            disabled=self._disabled,
            configs=self._configs,
            job_holds=self._job_holds,
            actions=self._actions,
        )

    def _maybe_snapshot(self) -> None:
        if self._snapshotting or self.error is not None:
            return
        if not self._store.wants_snapshot:
            return
        self._snapshotting = True
        self._spawn(self._write_snapshot)

    async def _write_snapshot(self) -> None:
        """Write the whole state as a snapshot, archiving old finished runs.

        The records are built, once no pass is open, and handed to the store in one step, with
        no checkpoint in between: the store rotates its segment at the call, so every change
        committed before is in the snapshot and every later one is in the new segment (a
        change whose commit is still in flight may be in both: records are idempotent upserts).
        """
        try:
            await self.committed()  # never a pass's half-made changes (a big pass yields)
            live, archived, gone = journal_state.snapshot_records(
                self.state_view(),
                now=self._time(),
                history_days=self.config.scheduler.history_days,
                needed=self._still_depended_on(),
            )
            for run in gone:
                self.book.remove(run)
            gone_ids = {run.run_id for run in gone}
            for action_id in [a for a, d in self._actions.items() if d.get("target") in gone_ids]:
                del self._actions[action_id]
            await self._store.write_snapshot(live, archived)
        except StoreError:
            log.exception("snapshot failed")
            if self._store.failed is not None:
                # the store has stopped: wake the loop, whose next pass meets the failed store
                # at its commit and fail-stops (now, not at the next change, which on a quiet
                # schedule may be hours away, the service saying "ready" meanwhile)
                self._post(Dispatch())
        finally:
            self._snapshotting = False

    def _still_depended_on(self) -> set[tuple[str, date]]:
        """The jobs and run dates an unfinished run waits on or is blocked by (the index the
        engine re-evaluates dependents from): their runs must stay in the book."""
        needed: set[tuple[str, date]] = set()
        for key, watchers in self._watching.items():
            for run_id in watchers:
                run = self.book.find(run_id)
                if run is not None and not run.state.finished:
                    needed.add(key)
                    break
        return needed

    # -- actions' bookkeeping (used by pysched.engine.actions) -----------------------------

    def _record_action(self, action: str, target: str, by: str, why: str) -> None:
        self._action_seq += 1
        now = self._time()
        data = {
            "id": f"{now.strftime('%Y%m%dT%H%M%S')}-{self._action_seq}",
            "at": now.isoformat(),
            "by": by,
            "why": why,
            "action": action,
            "target": target,
        }
        self._records.append(Record(type="action", data=data))  # joins _actions at its commit
        self._publish(now, "action", data)

    def actions_for(self, target: str) -> list[Mapping[str, Any]]:
        """Operator actions journaled against a run id or job name, oldest first (an action
        recorded in the open pass joins them at its commit)."""
        return [a for a in self._actions.values() if a.get("target") == target]

    def run_date_for_today(self, job: Job) -> date:
        local_today = self._time().astimezone(job.timezone).date()
        return run_date_for(local_today, job.run_date, job.calendar)

    def _stop_asked(self, run: Run) -> AttemptOutcome | RunState | None:
        """KILLED or CANCELLED when an operator has asked to stop the run's attempt (which is
        still ending), else None (a timeout's kill is not an operator's)."""
        watch = self._watches.get(run.run_id)
        reason = watch.kill_reason if watch is not None else None
        return None if reason is AttemptOutcome.TIMED_OUT else reason

    def _request_kill(self, run: Run, reason: AttemptOutcome | RunState) -> None:
        watch = self._watches.get(run.run_id)
        if watch is None:
            return

        def kill() -> None:
            # only once the request is written: a watcher that gets its handle while the pass
            # is still open must not kill an attempt on a cancel the journal could still lose
            watch.kill_reason = reason
            handle = watch.handle
            if handle is not None:
                self._spawn(handle.kill, self.kill_grace)

        self._effects.append(kill)


_STOPS: dict[str, AttemptOutcome | RunState] = {
    "kill": AttemptOutcome.KILLED,
    "cancel": RunState.CANCELLED,
}
"""The operator actions that stop a running attempt, and the watch's ``kill_reason`` each sets."""


def _stops_journaled(actions: Iterable[Mapping[str, Any]]) -> dict[str, tuple[str, datetime]]:
    """Per run id, the last kill or cancel asked for it (the action and when), from the
    journaled actions: after a restart an attempt asked to stop is stopped again."""
    stops: dict[str, tuple[str, datetime]] = {}
    for action in actions:  # oldest first
        kind, target = action.get("action"), action.get("target")
        if kind in _STOPS and isinstance(target, str):
            stops[target] = (str(kind), datetime.fromisoformat(str(action["at"])))
    return stops


_EVALUABLE = (RunState.SCHEDULED, RunState.WAITING, RunState.BLOCKED)
_ACTIVE = (RunState.RUNNING, RunState.RETRYING)


def _overlap_reason(job: str) -> str:
    """Why a queued run waits under ``overlap: queue``. It names the job, not the run it waits
    for: that changes as runs finish, and a backfill of a thousand dates would rewrite (and
    journal) every waiting run's reason each time one finished."""
    return f"waiting for another run of {job} to finish"


def _going(run: Run) -> bool:
    """Whether a run is its job's run "going", for overlap: an attempt running, a backoff
    being waited out, or a retry that came due and waits for its slot (it goes before any newer
    run of the job)."""
    state = run.state
    return state in _ACTIVE or (state is RunState.QUEUED and run.attempts_in_series > 0)


_FIRING_TOLERANCE = timedelta(milliseconds=1)
"""A fake clock built on float seconds may wake a hair before an instant; this much early is
on time."""


def _said(outcome: AttemptOutcome, status: ExitStatus | None) -> str:
    if outcome is AttemptOutcome.TIMED_OUT:
        return "timed out"
    if outcome is AttemptOutcome.START_FAILED:
        return "could not start"
    if outcome is AttemptOutcome.LOST:
        return "was lost"
    if status is not None and status.signal is not None:
        return f"ended by signal {status.signal}"
    if status is not None and status.exit_code is not None:
        return f"exited {status.exit_code}"
    return "failed"


def _restore(mapping: dict[str, Any], key: str, value: Any) -> None:
    if value is None:
        mapping.pop(key, None)
    else:
        mapping[key] = value
