"""/metrics: the right numbers after runs succeed and fail, in strictly valid Prometheus text."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest
import trio
import trio.testing

from pysched import metrics
from pysched.engine import AttemptOutcome, Engine, RunState
from pysched.metrics import CONTENT_TYPE, Metrics
from tests.engine.harness import Harness, config_from

CONFIG = """
pools:
  warehouse: 2
jobs:
  ok: {schedule: "0 9 * * *", command: x, pool: warehouse}
  bad: {schedule: "0 9 * * *", command: x}
  flaky:
    schedule: "0 9 * * *"
    command: x
    retries: {count: 1, backoff: {initial: 30s}}
  slow: {schedule: "0 9 * * *", command: x, pool: warehouse}
"""

# -- a tiny, strict parser for the text format -----------------------------------------------

NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
LABEL = r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"'
SAMPLE = re.compile(rf"({NAME})(?:\{{((?:{LABEL})(?:,{LABEL})*)?\}})? (\S+)")
SUFFIXES = {
    "counter": ("",),
    "gauge": ("",),
    "untyped": ("",),
    "summary": ("", "_sum", "_count"),
    "histogram": ("_bucket", "_sum", "_count"),
}


@dataclass(frozen=True)
class Sample:
    name: str
    labels: Mapping[str, str]
    value: float


def unescape(value: str) -> str:
    return re.sub(r"\\(.)", lambda m: {"n": "\n"}.get(m.group(1), m.group(1)), value)


def parse(text: str) -> tuple[dict[str, str], list[Sample]]:
    """Families (name -> type) and samples; fails on anything the format does not allow."""
    assert text.endswith("\n"), "the exposition must end with a newline"
    helps: set[str] = set()
    types: dict[str, str] = {}
    samples: list[Sample] = []
    series: set[tuple[str, tuple[tuple[str, str], ...]]] = set()
    current: str | None = None
    for number, line in enumerate(text[:-1].split("\n"), start=1):
        where = f"line {number}: {line!r}"
        if line.startswith("# HELP "):
            name = line.split(" ", 3)[2]
            assert re.fullmatch(NAME, name), where
            assert name not in helps and name not in types, f"HELP after its family: {where}"
            helps.add(name)
            current = name
            continue
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ")
            assert name == current and name in helps, f"TYPE without its HELP first: {where}"
            assert kind in SUFFIXES, where
            assert name not in types, where
            types[name] = kind
            continue
        assert not line.startswith("#") and line, where
        match = SAMPLE.fullmatch(line)
        assert match, where
        name, labels_text, value_text = match.group(1), match.group(2), match.groups()[-1]
        assert current is not None and current in types, f"sample before HELP/TYPE: {where}"
        assert name in {current + s for s in SUFFIXES[types[current]]}, where
        labels = {key: unescape(value) for key, value in re.findall(LABEL, labels_text or "")}
        assert labels_text is None or len(labels) == labels_text.count('="'), where
        if types[current] == "summary" and name == current:
            assert "quantile" in labels, where
        value = float(value_text)  # accepts NaN, +Inf, -Inf as the format does
        key = (name, tuple(sorted(labels.items())))
        assert key not in series, f"duplicate series: {where}"
        series.add(key)
        samples.append(Sample(name, labels, value))
    assert helps == set(types), "a HELP without a TYPE"
    return types, samples


def value(samples: list[Sample], name: str, **labels: str) -> float:
    [found] = [s.value for s in samples if s.name == name and dict(s.labels) == labels]
    return found


def by_label(samples: list[Sample], name: str, label: str) -> dict[str, float]:
    return {s.labels[label]: s.value for s in samples if s.name == name}


# -- the tests --------------------------------------------------------------------------------


def test_public_names() -> None:
    assert metrics.__all__ == ["CONTENT_TYPE", "Metrics"]
    assert CONTENT_TYPE == "text/plain; version=0.0.4; charset=utf-8"


async def started(nursery: trio.Nursery, engine: Engine, **kw: float) -> Metrics:
    found = Metrics(engine, **kw)  # type: ignore[arg-type]
    await nursery.start(found.run)
    return found


# an engine alone numbers events from 1; `pysched serve` from the clock, in microseconds
FIRST_IDS = pytest.mark.parametrize("first_id", [1, 1_796_085_971_114_662])


@FIRST_IDS
async def test_counts_after_runs_succeed_and_fail(
    first_id: int, autojump_clock: trio.testing.MockClock
) -> None:
    h = Harness(
        config_from(CONFIG),
        outcomes={"bad": [1], "flaky": [1, 0]},
        durations={"slow": timedelta(hours=5)},
        first_event_id=first_id,
    )
    async with h.engine() as engine, trio.open_nursery() as nursery:
        found = await started(nursery, engine, probe_every=60, recount_every=60)
        await h.advance(engine, hours=10)
        types, samples = parse(found.render())

        assert value(samples, "pysched_up") == 1
        assert value(samples, "pysched_engine_failed") == 0
        assert value(samples, "pysched_config_info", sha256=engine.config.sha256) == 1

        runs = by_label(samples, "pysched_runs", "state")
        assert list(runs) == [state.value for state in RunState]  # every state, zeros included
        assert {k: v for k, v in runs.items() if v} == {"succeeded": 2, "failed": 1, "running": 1}

        assert value(samples, "pysched_attempts_started_total") == 5  # ok, bad, flaky x2, slow
        ended = by_label(samples, "pysched_attempts_ended_total", "outcome")
        assert list(ended) == [outcome.value for outcome in AttemptOutcome]
        assert {k: v for k, v in ended.items() if v} == {"succeeded": 2, "failed": 2}
        assert value(samples, "pysched_attempts_failed_total") == 2
        published = engine.events.last_id - first_id + 1
        assert value(samples, "pysched_events_published_total") == published
        assert value(samples, "pysched_metrics_events_missed_total") == 0

        stats = engine.store_stats
        assert value(samples, "pysched_journal_commits_total") == stats.commits > 0
        assert value(samples, "pysched_journal_records_total") == stats.records > 0
        assert value(samples, "pysched_journal_fsyncs_total") == stats.fsyncs
        assert value(samples, "pysched_journal_commit_seconds_count") == stats.commit_count
        assert value(samples, "pysched_journal_commit_seconds_sum") == pytest.approx(
            stats.commit_seconds
        )
        assert value(samples, "pysched_journal_batch_records_max") == stats.max_batch > 0
        assert value(samples, "pysched_journal_batch_records_last") == stats.last_batch
        assert value(samples, "pysched_journal_records_per_fsync") == stats.records_per_fsync
        assert types["pysched_journal_commit_seconds"] == "summary"

        assert value(samples, "pysched_running") == 1  # slow
        assert value(samples, "pysched_max_running") == engine.slot_use().max_running
        assert value(samples, "pysched_queued") == 0
        assert value(samples, "pysched_pool_in_use", pool="warehouse") == 1
        assert value(samples, "pysched_pool_size", pool="warehouse") == 2

        assert types["pysched_attempts_started_total"] == "counter"
        assert types["pysched_runs"] == "gauge"

        await h.advance(engine, hours=5)  # slow ends at 14:00
        _, samples = parse(found.render())
        assert value(samples, "pysched_running") == 0
        assert value(samples, "pysched_pool_in_use", pool="warehouse") == 0
        assert value(samples, "pysched_attempts_ended_total", outcome="succeeded") == 3
        nursery.cancel_scope.cancel()


async def test_render_before_run_and_a_failed_engine(
    autojump_clock: trio.testing.MockClock,
) -> None:
    h = Harness(config_from(CONFIG))
    async with h.engine() as engine:
        found = Metrics(engine)
        _, samples = parse(found.render())
        assert value(samples, "pysched_attempts_started_total") == 0
        assert math.isnan(value(samples, "pysched_loop_lateness_seconds", quantile="0.5"))
        assert value(samples, "pysched_loop_lateness_seconds_count") == 0

        h.store.inject_failure(OSError(28, "No space left on device"))
        await h.advance(engine, hours=10)
        assert engine.error is not None
        _, samples = parse(found.render())
        assert value(samples, "pysched_engine_failed") == 1
        assert value(samples, "pysched_up") == 1


async def test_loop_lateness(autojump_clock: trio.testing.MockClock) -> None:
    h = Harness(config_from(CONFIG))
    async with h.engine() as engine, trio.open_nursery() as nursery:
        found = await started(nursery, engine, probe_every=0.05, window=100)
        await trio.sleep(1.01)  # 20 probes, all on time
        autojump_clock.jump(2)  # the loop is blocked for 2 s: the pending probe wakes late
        await trio.sleep(1)
        _, samples = parse(found.render())
        worst = value(samples, "pysched_loop_lateness_max_seconds")
        assert 1.9 < worst <= 2.0
        assert value(samples, "pysched_loop_lateness_seconds", quantile="0.5") < 1e-9
        assert value(samples, "pysched_loop_lateness_seconds", quantile="0.99") == worst
        assert value(samples, "pysched_loop_lateness_seconds_sum") == pytest.approx(worst)
        count = value(samples, "pysched_loop_lateness_seconds_count")
        assert 35 <= count <= 45

        await trio.sleep(10)  # the window (100 probes, 5 s) forgets the stall; the sum does not
        _, samples = parse(found.render())
        assert value(samples, "pysched_loop_lateness_max_seconds") < 1e-9
        assert value(samples, "pysched_loop_lateness_seconds_sum") == pytest.approx(worst)
        nursery.cancel_scope.cancel()


@FIRST_IDS
async def test_missed_events_are_counted(
    first_id: int, autojump_clock: trio.testing.MockClock
) -> None:
    h = Harness(config_from(CONFIG), first_event_id=first_id)
    async with h.engine() as engine, trio.open_nursery() as nursery:
        found = await started(nursery, engine, probe_every=60)
        at = datetime(2026, 10, 19, tzinfo=UTC)
        data = {"run_id": "x", "attempt": 1}
        for _ in range(3):
            engine.events.publish(at, "attempt_started", data)
        await engine.settle()
        seen = engine.events.last_id
        for _ in range(10_010):  # more than the ring holds, before the counter can read any
            engine.events.publish(at, "attempt_started", data)
        await engine.settle()
        _, samples = parse(found.render())
        assert value(samples, "pysched_attempts_started_total") == 3
        assert value(samples, "pysched_metrics_events_missed_total") == engine.events.last_id - seen
        nursery.cancel_scope.cancel()


def test_label_values_are_escaped() -> None:
    family = metrics._Family(name="pysched_pool_size", type="gauge", help='a "help"\\ text\n')
    family.add(2, pool='we"ird\\pool\nname')
    family.add(1.5, pool="plain")
    text = metrics._exposition([family])
    assert text == (
        '# HELP pysched_pool_size a "help"\\\\ text\\n\n'
        "# TYPE pysched_pool_size gauge\n"
        'pysched_pool_size{pool="we\\"ird\\\\pool\\nname"} 2\n'
        'pysched_pool_size{pool="plain"} 1.5\n'
    )
    _, samples = parse(text)
    assert [s.labels["pool"] for s in samples] == ['we"ird\\pool\nname', "plain"]


@pytest.mark.parametrize(
    ("number", "text"),
    [
        (3, "3"),
        (2.0, "2"),
        (0.25, "0.25"),
        (math.nan, "NaN"),
        (math.inf, "+Inf"),
        (-math.inf, "-Inf"),
        (1e-7, "1e-07"),
    ],
    ids=["int", "whole_float", "fraction", "nan", "inf", "minus_inf", "tiny"],
)
def test_numbers(number: float, text: str) -> None:
    assert metrics._number(number) == text


async def test_runs_are_recounted_in_chunks(
    autojump_clock: trio.testing.MockClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(metrics, "RUN_CHUNK", 2)
    h = Harness(config_from(CONFIG), durations={"slow": timedelta(hours=5)})
    async with h.engine() as engine, trio.open_nursery() as nursery:
        await h.advance(engine, hours=9, minutes=30)
        found = await started(nursery, engine, probe_every=60, recount_every=10)
        counts = {
            k: v
            for k, v in by_label(parse(found.render())[1], "pysched_runs", "state").items()
            if v
        }
        assert counts == {"succeeded": 3, "running": 1}
        await h.advance(engine, hours=5)  # slow ends
        counts = {
            k: v
            for k, v in by_label(parse(found.render())[1], "pysched_runs", "state").items()
            if v
        }
        assert counts == {"succeeded": 4}
        nursery.cancel_scope.cancel()
