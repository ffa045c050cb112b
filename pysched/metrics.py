"""``/metrics``: the scheduler's vital signs in Prometheus text format 0.0.4.

Prometheus (or anything that speaks its format: VictoriaMetrics, Grafana Agent, Datadog)
scrapes ``/metrics`` every few seconds and keeps the history; alerts and dashboards are built
on it there. This module only counts and renders; the web layer serves ``render()`` with
``CONTENT_TYPE``.

Where the numbers come from:

- runs by state: ``Metrics.run`` counts ``engine.book`` every ``recount_every`` seconds (5 s by
  default), a few thousand runs between checkpoints. A full pass over 100 000 runs costs tens
  of milliseconds of Python, which done inside a scrape would stall the loop that this very
  page reports on; counting from events instead would drift when snapshots archive old runs.
  So the figure may be a few seconds old, which is well inside any scrape interval;
- attempts started and ended: counted by ``Metrics.run`` from the engine's event stream, which
  carries only committed changes (so a count never includes an attempt the journal lost);
- loop lateness: ``Metrics.run`` sleeps ``probe_every`` on the real trio loop and measures how
  late it wakes, which is how long the loop was busy or blocked by someone else. This is
  deliberately not the engine's ``Clock``: the question is whether the process is keeping up,
  not what time the schedule thinks it is;
- the journal, the slots, the config and the engine's health: read from the engine at render.

The event stream is a bounded ring; if the counting task ever falls behind it (it should not:
it does nothing but count), the events it missed are counted in
``pysched_metrics_events_missed_total`` so an undercount is visible rather than silent.
"""

from __future__ import annotations

import math
from collections import Counter, deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from operator import attrgetter

import trio

from pysched.engine import AttemptOutcome, Engine, RunState
from pysched.engine.events import RESET

__all__ = ["CONTENT_TYPE", "Metrics"]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
"""The Content-Type ``/metrics`` answers with."""

QUANTILES = (0.5, 0.9, 0.99)
RUN_CHUNK = 5_000
"""Runs counted between checkpoints (well under a millisecond's work)."""

_state_value = attrgetter("state._value_")
"""A run's state as its string; ``_value_`` is a plain attribute, ``.value`` a slower property."""


@dataclass(slots=True, kw_only=True)
class _Family:
    """One metric family as it is written: HELP, TYPE, then its samples."""

    name: str
    type: str
    help: str
    samples: list[tuple[str, Mapping[str, str], float]] = field(default_factory=lambda: [])

    def add(self, value: float, suffix: str = "", **labels: str) -> None:
        self.samples.append((self.name + suffix, labels, value))


class Metrics:
    """Counts what the engine does and renders it for Prometheus.

    ``run()`` is a service to start in the service's nursery next to the engine (it counts
    attempts and probes the loop); ``render()`` may be called at any time from the loop, even
    before ``run()`` starts (the counts are then zero).

    ``probe_every`` is the lateness probe's period; ``window`` how many recent probes the
    quantiles and the maximum are taken over (the default 1200 is one minute at 50 ms);
    ``recount_every`` how often the runs are counted by state.
    """

    def __init__(
        self,
        engine: Engine,
        *,
        probe_every: float = 0.05,
        window: int = 1200,
        recount_every: float = 5.0,
    ) -> None:
        self._engine = engine
        self._probe_every = probe_every
        self._recount_every = recount_every
        self._run_counts: Counter[str] | None = None
        self._recent: deque[float] = deque(maxlen=window)
        self._lateness_sum = 0.0
        self._lateness_count = 0
        self._started = 0
        self._ended: Counter[str] = Counter()
        self._missed = 0

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Count attempt events and probe the loop's lateness until cancelled.

        It reads the event stream from the oldest event still in the ring, so attempts the
        engine started while recovering, before this service began, are counted too.

        **Cancellation:** cancelling it stops the counting; ``render()`` still works with the
        counts so far.
        """
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._count_events)
            nursery.start_soon(self._probe_loop)
            await self._count_runs_once()
            nursery.start_soon(self._count_runs)
            task_status.started()

    async def _count_events(self) -> None:
        seen = self._engine.events.first_id - 1
        async for event in self._engine.events.follow(seen):
            if event.kind == RESET:
                # everything after `seen` up to and including this id left the ring unread
                self._missed += event.id - seen
            elif event.kind == "attempt_started":
                self._started += 1
            elif event.kind == "attempt_ended":
                self._ended[str(event.data.get("outcome"))] += 1
            seen = event.id

    async def _count_runs(self) -> None:
        while True:
            await trio.sleep(self._recount_every)
            await self._count_runs_once()

    async def _count_runs_once(self) -> None:
        runs = list(self._engine.book)  # a C-level copy, so the book may change meanwhile
        counts: Counter[str] = Counter()
        for start in range(0, len(runs), RUN_CHUNK):
            counts.update(map(_state_value, runs[start : start + RUN_CHUNK]))
            await trio.lowlevel.checkpoint()
        self._run_counts = counts

    async def _probe_loop(self) -> None:
        step = self._probe_every
        while True:
            asleep = trio.current_time()
            await trio.sleep(step)
            lateness = max(0.0, trio.current_time() - asleep - step)
            self._recent.append(lateness)
            self._lateness_sum += lateness
            self._lateness_count += 1

    # -- rendering ---------------------------------------------------------------------------

    def render(self) -> str:
        """Every metric in Prometheus text format 0.0.4, ending with a newline."""
        return _exposition(self._families())

    def _families(self) -> list[_Family]:
        engine = self._engine
        families: list[_Family] = []

        def family(name: str, type_: str, help_: str) -> _Family:
            new = _Family(name=f"pysched_{name}", type=type_, help=help_)
            families.append(new)
            return new

        family("up", "gauge", "1 while the scheduler answers.").add(1)
        family(
            "engine_failed",
            "gauge",
            "1 once the engine has fail-stopped (the journal could not write), else 0.",
        ).add(0 if engine.error is None else 1)
        family("config_info", "gauge", "The config in force, by its sha256.").add(
            1, sha256=engine.config.sha256
        )

        by_state = self._run_counts
        if by_state is None:  # before run(): count now, once
            by_state = Counter(map(_state_value, engine.book))
        runs = family("runs", "gauge", "Runs in the book, by state (counted every few seconds).")
        for state in RunState:
            runs.add(by_state.get(state.value, 0), state=state.value)

        family(
            "attempts_started_total", "counter", "Attempts started since the scheduler started."
        ).add(self._started)
        ended = family(
            "attempts_ended_total",
            "counter",
            "Attempts ended since the scheduler started, by outcome.",
        )
        outcomes = [outcome.value for outcome in AttemptOutcome]
        for outcome in [*outcomes, *sorted(set(self._ended) - set(outcomes))]:
            ended.add(self._ended.get(outcome, 0), outcome=outcome)
        family(
            "attempts_failed_total",
            "counter",
            "Attempts that ended other than succeeded (failed, killed, timed out, lost, ...).",
        ).add(sum(n for outcome, n in self._ended.items() if outcome != "succeeded"))
        family(
            "events_published_total",
            "counter",
            "Events the engine has published (committed changes).",
        ).add(engine.events.published)
        family(
            "metrics_events_missed_total",
            "counter",
            "Events the metrics counter fell too far behind to read (attempt counts undercount).",
        ).add(self._missed)

        recent = sorted(self._recent)
        lateness = family(
            "loop_lateness_seconds",
            "summary",
            f"How late a {self._probe_every:g}s sleep on the event loop wakes "
            f"(quantiles over the last {len(recent)} probes).",
        )
        for q in QUANTILES:
            lateness.add(_quantile(recent, q) if recent else math.nan, quantile=_number(q))
        lateness.add(self._lateness_sum, "_sum")
        lateness.add(self._lateness_count, "_count")
        family(
            "loop_lateness_max_seconds", "gauge", "The worst loop lateness over the same probes."
        ).add(recent[-1] if recent else 0.0)

        stats = engine.store_stats
        family("journal_commits_total", "counter", "Journal commits accepted.").add(stats.commits)
        family("journal_records_total", "counter", "Records committed to the journal.").add(
            stats.records
        )
        family("journal_batches_total", "counter", "Journal writes (group-commit batches).").add(
            stats.batches
        )
        family("journal_fsyncs_total", "counter", "Journal fsyncs (0 when fsync is off).").add(
            stats.fsyncs
        )
        family("journal_bytes_total", "counter", "Bytes written to the journal.").add(stats.bytes)
        family("journal_snapshots_total", "counter", "Snapshots written.").add(stats.snapshots)
        commit = family(
            "journal_commit_seconds",
            "summary",
            "Time from a commit's call until its records were on disk.",
        )
        commit.add(stats.commit_seconds, "_sum")
        commit.add(stats.commit_count, "_count")
        family("journal_batch_records_last", "gauge", "Records in the last journal write.").add(
            stats.last_batch
        )
        family("journal_batch_records_max", "gauge", "Most records in one journal write.").add(
            stats.max_batch
        )
        family("journal_records_per_fsync", "gauge", "Mean records each fsync made durable.").add(
            stats.records_per_fsync
        )

        use = engine.slot_use()
        family("running", "gauge", "Attempts running now.").add(use.running)
        family("max_running", "gauge", "The cap on attempts running at once.").add(use.max_running)
        family("queued", "gauge", "Runs ready and waiting for a free slot.").add(use.queued)
        in_use = family("pool_in_use", "gauge", "Slots of each pool in use.")
        size = family("pool_size", "gauge", "Slots in each pool.")
        for pool, (used, slots) in sorted(use.pools.items()):
            in_use.add(used, pool=pool)
            size.add(slots, pool=pool)
        return families


def _quantile(ordered: list[float], q: float) -> float:
    """The nearest-rank quantile of sorted samples (what a window this small deserves)."""
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def _exposition(families: Iterable[_Family]) -> str:
    out: list[str] = []
    for family in families:
        out.append(f"# HELP {family.name} {_escape_help(family.help)}")
        out.append(f"# TYPE {family.name} {family.type}")
        for name, labels, value in family.samples:
            if labels:
                inner = ",".join(f'{key}="{_escape_label(v)}"' for key, v in labels.items())
                out.append(f"{name}{{{inner}}} {_number(value)}")
            else:
                out.append(f"{name} {_number(value)}")
    out.append("")
    return "\n".join(out)


def _escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _escape_label(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _number(value: float) -> str:
    if isinstance(value, int):
        return str(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(value)
