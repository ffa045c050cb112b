"""Benchmark: how fast ``Cron.next_after`` answers, over a mixed set of 1,000 expressions.

Run it with ``python tests/bench/bench_cron.py`` (or ``uv run python ...``). It builds the same
expressions every time (fixed seed): common ones, steps, lists, names, the ``L``/``#``/``L``
extensions and rare ones such as ``0 0 29 2 MON`` and ``0 0 * 2 MON#5``, each in one of several
zones (with and without daylight saving), and asks each for its next firing from a spread of
instants, a good share of them close to a daylight-saving change. Every call is timed on its
own.

It prints a few human lines and then, as its last line, a JSON object of named figures:
``calls_per_s`` (calls divided by the time spent inside them), ``p50_call_us``, ``p99_call_ms``,
``max_call_ms``, ``parse_per_s`` (uncached parses per second) and the counts. The goals are at
least 20,000 calls/s and no single call over 5 ms.
"""

from __future__ import annotations

import gc
import json
import random
import statistics
import sys
import time
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from pysched.timing import cron as cron_module
from pysched.timing.cron import Cron, DstGap, DstPolicy, DstRepeat

SEED = 20261019
EXPRESSION_COUNT = 1_000
CALLS_PER_EXPRESSION = 25
ZONES = [
    "UTC",
    "Europe/London",
    "America/New_York",
    "Australia/Sydney",
    "Australia/Lord_Howe",
    "Asia/Kolkata",
    "America/Sao_Paulo",
    "Asia/Tokyo",
]
COMMON = [
    "* * * * *",
    "*/5 * * * *",
    "*/15 * * * *",
    "0 * * * *",
    "30 * * * *",
    "0 0 * * *",
    "30 2 * * *",
    "0 9 * * MON-FRI",
    "15 14 1 * *",
    "0 22 * * 1-5",
    "23 0-20/2 * * *",
    "5 4 * * sun",
    "0 0,12 1 */2 *",
    "0 6 L * *",
    "0 18 * * FRIL",
    "0 8 * * MON#1",
    "0 0 1,15 * MON",
    "@hourly",
    "@daily",
    "@weekly",
    "@monthly",
    "@yearly",
]
RARE = [
    "0 0 29 2 MON",
    "0 0 29 2 *",
    "0 0 * 2 MON#5",
    "0 0 29 2 */7",
    "0 0 31 * *",
    "0 0 L 2 *",
    "59 23 31 12 *",
    "0 0 30 */2 *",
]
MONTHS = ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"]
DAYS = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"]


def _item(rng: random.Random, low: int, high: int, names: list[str] | None = None) -> str:
    def value(v: int) -> str:
        if names and rng.random() < 0.4:
            return names[(v - low) % len(names)]
        return str(v)

    kind = rng.random()
    if kind < 0.25:
        return f"*/{rng.randint(2, max(2, (high - low + 1) // 2))}"
    if kind < 0.55:
        return value(rng.randint(low, high))
    a = rng.randint(low, high)
    b = rng.randint(a, high)
    if kind < 0.8:
        return f"{value(a)}-{value(b)}"
    return f"{value(a)}-{value(b)}/{rng.randint(1, max(1, b - a))}"


def _field(rng: random.Random, low: int, high: int, names: list[str] | None = None) -> str:
    if rng.random() < 0.35:
        return "*"
    return ",".join(_item(rng, low, high, names) for _ in range(rng.choice([1, 1, 1, 2, 3])))


def _generated(rng: random.Random) -> str:
    dom = _field(rng, 1, 28)
    dow = _field(rng, 0, 6, DAYS)
    extension = rng.random()
    if extension < 0.1:
        dom = "L" if rng.random() < 0.5 else f"1,L,{rng.randint(10, 20)}"
    elif extension < 0.2:
        dow = f"{rng.choice(DAYS)}#{rng.randint(1, 5)}"
    elif extension < 0.3:
        dow = f"{rng.choice(['5L', 'FRIL', 'monl', '0L'])}"
    month = _field(rng, 1, 12, MONTHS) if rng.random() < 0.3 else "*"
    return f"{_field(rng, 0, 59)} {_field(rng, 0, 23)} {dom} {month} {dow}"


def build_expressions(rng: random.Random) -> list[str]:
    texts = list(COMMON) + list(RARE)
    while len(texts) < EXPRESSION_COUNT:
        text = _generated(rng)
        try:
            Cron.parse(text)
        except ValueError:
            continue  # a generated combination that can never fire
        texts.append(text)
    return texts


def _dst_moments(zone: ZoneInfo) -> list[datetime]:
    """Instants of the zone's offset changes in 2026, found hour by hour."""
    found: list[datetime] = []
    u = datetime(2026, 1, 1, tzinfo=UTC)
    while u.year == 2026:
        step = u + timedelta(hours=1)
        if u.astimezone(zone).utcoffset() != step.astimezone(zone).utcoffset():
            found.append(step)
        u = step
    return found


def main() -> None:
    rng = random.Random(SEED)
    texts = build_expressions(rng)
    cron_module._compile.cache_clear()  # time real parsing, not the parse cache
    started = time.perf_counter()
    crons = [Cron.parse(text) for text in texts]
    parse_seconds = time.perf_counter() - started

    zones = {name: ZoneInfo(name) for name in ZONES}
    moments = {name: _dst_moments(zone) for name, zone in zones.items()}
    policies = [None, None, None, DstPolicy(gap=DstGap.SKIP), DstPolicy(repeat=DstRepeat.BOTH)]
    plan: list[tuple[Cron, ZoneInfo, datetime, DstPolicy | None]] = []
    for cron in crons:
        name = rng.choice(ZONES)
        for _ in range(CALLS_PER_EXPRESSION):
            if moments[name] and rng.random() < 0.3:
                base = rng.choice(moments[name])
                instant = base + timedelta(seconds=rng.randint(-3 * 3600, 3 * 3600))
            else:
                instant = datetime(2020, 1, 1, tzinfo=UTC) + timedelta(
                    seconds=rng.randint(0, 15 * 365 * 86400)
                )
            plan.append((cron, zones[name], instant, rng.choice(policies)))

    for cron, zone, instant, policy in plan[:2000]:  # warm up
        cron.next_after(instant, zone, dst=policy)
    gc.collect()
    timings: list[int] = []
    clock = time.perf_counter_ns
    for cron, zone, instant, policy in plan:
        t0 = clock()
        cron.next_after(instant, zone, dst=policy)
        timings.append(clock() - t0)

    total_s = sum(timings) / 1e9
    ordered = sorted(timings)
    p99 = ordered[int(len(ordered) * 0.99)]
    slowest = max(range(len(timings)), key=timings.__getitem__)
    cron, zone, instant, policy = plan[slowest]
    figures = {
        "expressions": len(crons),
        "calls": len(timings),
        "calls_per_s": round(len(timings) / total_s),
        "p50_call_us": round(statistics.median(timings) / 1e3, 1),
        "p99_call_ms": round(p99 / 1e6, 4),
        "max_call_ms": round(ordered[-1] / 1e6, 4),
        "parse_per_s": round(len(crons) / parse_seconds),
    }
    print(f"python {sys.version.split()[0]}, {len(crons)} expressions, {len(timings)} calls")
    print(f"next_after: {figures['calls_per_s']:,} calls/s, median {figures['p50_call_us']} us")
    print(f"p99 {figures['p99_call_ms']} ms, max {figures['max_call_ms']} ms")
    print(f"slowest call: '{cron}' in {zone.key} after {instant.isoformat()} (dst={policy})")
    print(f"parse: {figures['parse_per_s']:,} expressions/s")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
