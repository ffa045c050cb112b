"""A generated config of many jobs, shared by the config and forecast benchmarks.

Deterministic (seeded): a mix of zones, calendars, schedules, pools, retries and dependency
chains, about what a large site's file looks like.
"""

from __future__ import annotations

import random

ZONES = ["Europe/London", "America/New_York", "Australia/Sydney", "Asia/Tokyo", "UTC"]
# A batch site's mix: mostly nightly and weekday jobs, some several times a day, a few monthly
# and quarterly ones, and a rare 15-minute poller (weights in the second column).
SCHEDULES = [
    ("0 2 * * *", 30),
    ("30 6 * * 1-5", 20),
    ("15 1 * * MON-FRI", 15),
    ("0 */4 * * *", 5),
    ("0 8-18 * * 1-5", 3),
    ("0 23 L * *", 5),
    ("0 9 * * MON#1", 5),
    ("45 18 * * FRIL", 5),
    ("0 0 1 */3 *", 5),
    ("5 4 * * sun", 6),
    ("*/15 * * * *", 1),
]


def generated_config(jobs: int, seed: int = 7) -> str:
    rng = random.Random(seed)
    lines = [
        "scheduler:",
        "  timezone: Europe/London",
        "  max_running: 200",
        "calendars:",
        "  uk: {country: GB, subdivision: ENG}",
        "  us: {country: US}",
        "  desk: {based_on: uk, weekdays: [mon-fri], holidays: [2026-12-24]}",
        "pools:",
        "  db: 4",
        "  warehouse: 1",
        "defaults:",
        "  retries: {count: 2, backoff: {initial: 30s, factor: 2, max: 10m}}",
        "jobs:",
    ]
    for i in range(jobs):
        name = f"job-{i:05d}"
        lines.append(f"  {name}:")
        lines.append(f"    command: echo {name} {{run_date:%Y%m%d}} {{attempt}}")
        if i % 5 == 4:
            lines.append(f"    depends_on: [job-{i - 1:05d}]")
        else:
            (schedule,) = rng.choices([s for s, _ in SCHEDULES], [w for _, w in SCHEDULES])
            lines.append(f'    schedule: "{schedule}"')
            lines.append(f"    timezone: {rng.choice(ZONES)}")
            if i % 3 == 0:
                lines.append(f"    calendar: {rng.choice(['uk', 'us', 'desk'])}")
                lines.append("    run_date: previous_business_day")
            if i % 7 == 0 and i > 0:
                lines.append(f"    depends_on: [{{job: job-{i - 7:05d}, on: done}}]")
        if i % 11 == 0:
            lines.append(f"    pool: {rng.choice(['db', 'warehouse'])}")
        if i % 13 == 0:
            lines.append("    timeout: 1h")
    return "\n".join(lines) + "\n"
