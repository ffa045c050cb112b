"""Cron across daylight-saving changes: the cronie rule, each override, three hemispheres' worth.

The 2026 transitions used here:

- America/New_York: 2026-03-08 02:00 EST -> 03:00 EDT; 2026-11-01 02:00 EDT -> 01:00 EST
- Europe/London: 2026-03-29 01:00 GMT -> 02:00 BST; 2026-10-25 02:00 BST -> 01:00 GMT
- Australia/Sydney: 2026-04-05 03:00 AEDT -> 02:00 AEST; 2026-10-04 02:00 AEST -> 03:00 AEDT
- Australia/Lord_Howe (half-hour shifts): 2026-04-05 02:00 -> 01:30; 2026-10-04 02:00 -> 02:30

Expected values are ``str()`` of the firings, so the offset (and with it ``fold``) counts.
"""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from pysched.timing.cron import Cron, DstGap, DstPolicy, DstRepeat
from tests.timing.cron_reference import reference_firings

SKIP = DstPolicy(gap=DstGap.SKIP)
SECOND = DstPolicy(repeat=DstRepeat.SECOND)
BOTH = DstPolicy(repeat=DstRepeat.BOTH)


def firings(text: str, zone: str, after: str, count: int, dst: DstPolicy | None) -> list[str]:
    instant = datetime.fromisoformat(after)
    stream = Cron.parse(text).iter_after(instant, ZoneInfo(zone), dst=dst)
    return [str(t) for t in itertools.islice(stream, count)]


CASES = [
    # --- America/New_York ---------------------------------------------------------------------
    pytest.param(
        "America/New_York",
        "30 2 * * *",
        "2026-03-08 00:00-05:00",
        None,
        ["2026-03-08 03:00:00-04:00", "2026-03-09 02:30:00-04:00"],
        id="ny_spring_gap_fixed_time",
    ),
    pytest.param(
        "America/New_York",
        "0,30 2 * * *",
        "2026-03-08 00:00-05:00",
        None,
        ["2026-03-08 03:00:00-04:00", "2026-03-09 02:00:00-04:00"],
        id="ny_spring_gap_several_matches_one_firing",
    ),
    pytest.param(
        "America/New_York",
        "0 2,3 * * *",
        "2026-03-08 00:00-05:00",
        None,
        ["2026-03-08 03:00:00-04:00", "2026-03-09 02:00:00-04:00", "2026-03-09 03:00:00-04:00"],
        id="ny_spring_gap_coalesces_with_jump_instant",
    ),
    pytest.param(
        "America/New_York",
        "30 2 * * *",
        "2026-03-08 00:00-05:00",
        SKIP,
        ["2026-03-09 02:30:00-04:00"],
        id="ny_spring_gap_skip",
    ),
    pytest.param(
        "America/New_York",
        "*/30 * * * *",
        "2026-03-08 01:00-05:00",
        None,
        ["2026-03-08 01:30:00-05:00", "2026-03-08 03:00:00-04:00", "2026-03-08 03:30:00-04:00"],
        id="ny_spring_gap_wildcard",
    ),
    pytest.param(
        "America/New_York",
        "30 * * * *",
        "2026-03-08 01:00-05:00",
        DstPolicy(gap=DstGap.JUMP),
        ["2026-03-08 01:30:00-05:00", "2026-03-08 03:30:00-04:00"],
        id="ny_spring_gap_hourly_ignores_policy",
    ),
    pytest.param(
        "America/New_York",
        "30 1 * * *",
        "2026-11-01 00:00-04:00",
        None,
        ["2026-11-01 01:30:00-04:00", "2026-11-02 01:30:00-05:00"],
        id="ny_fall_repeat_fixed_time",
    ),
    pytest.param(
        "America/New_York",
        "30 1 * * *",
        "2026-11-01 00:00-04:00",
        SECOND,
        ["2026-11-01 01:30:00-05:00", "2026-11-02 01:30:00-05:00"],
        id="ny_fall_repeat_second",
    ),
    pytest.param(
        "America/New_York",
        "30 1 * * *",
        "2026-11-01 00:00-04:00",
        BOTH,
        ["2026-11-01 01:30:00-04:00", "2026-11-01 01:30:00-05:00", "2026-11-02 01:30:00-05:00"],
        id="ny_fall_repeat_both",
    ),
    pytest.param(
        "America/New_York",
        "*/30 * * * *",
        "2026-11-01 00:45-04:00",
        None,
        [
            "2026-11-01 01:00:00-04:00",
            "2026-11-01 01:30:00-04:00",
            "2026-11-01 01:00:00-05:00",
            "2026-11-01 01:30:00-05:00",
            "2026-11-01 02:00:00-05:00",
        ],
        id="ny_fall_repeat_wildcard",
    ),
    pytest.param(
        "America/New_York",
        "0 * * * *",
        "2026-11-01 00:30-04:00",
        DstPolicy(repeat=DstRepeat.FIRST),
        ["2026-11-01 01:00:00-04:00", "2026-11-01 01:00:00-05:00", "2026-11-01 02:00:00-05:00"],
        id="ny_fall_repeat_hourly_ignores_policy",
    ),
    pytest.param(
        "America/New_York",
        "*/15 * * * *",
        "2026-11-01 01:40-04:00",
        None,
        ["2026-11-01 01:45:00-04:00", "2026-11-01 01:00:00-05:00", "2026-11-01 01:15:00-05:00"],
        id="ny_fall_wildcard_from_inside_first_pass",
    ),
    pytest.param(
        "America/New_York",
        "30 1 * * *",
        "2026-11-01 01:10-05:00",
        None,
        ["2026-11-02 01:30:00-05:00"],
        id="ny_fall_fixed_time_from_inside_second_pass",
    ),
    pytest.param(
        "America/New_York",
        "30 1 * * *",
        "2026-11-01 01:10-05:00",
        SECOND,
        ["2026-11-01 01:30:00-05:00", "2026-11-02 01:30:00-05:00"],
        id="ny_fall_second_from_inside_second_pass",
    ),
    pytest.param(
        "America/New_York",
        "30 1 * * *",
        "2026-11-01 01:40-04:00",
        BOTH,
        ["2026-11-01 01:30:00-05:00", "2026-11-02 01:30:00-05:00"],
        id="ny_fall_both_from_inside_first_pass",
    ),
    # --- Europe/London ------------------------------------------------------------------------
    pytest.param(
        "Europe/London",
        "30 1 * * *",
        "2026-03-29 00:00+00:00",
        None,
        ["2026-03-29 02:00:00+01:00", "2026-03-30 01:30:00+01:00"],
        id="london_spring_gap_fixed_time",
    ),
    pytest.param(
        "Europe/London",
        "30 1 * * *",
        "2026-03-29 00:00+00:00",
        SKIP,
        ["2026-03-30 01:30:00+01:00"],
        id="london_spring_gap_skip",
    ),
    pytest.param(
        "Europe/London",
        "*/20 * * * *",
        "2026-03-29 00:30+00:00",
        None,
        ["2026-03-29 00:40:00+00:00", "2026-03-29 02:00:00+01:00", "2026-03-29 02:20:00+01:00"],
        id="london_spring_gap_wildcard",
    ),
    pytest.param(
        "Europe/London",
        "30 1 * * *",
        "2026-10-25 00:00+01:00",
        None,
        ["2026-10-25 01:30:00+01:00", "2026-10-26 01:30:00+00:00"],
        id="london_fall_repeat_fixed_time",
    ),
    pytest.param(
        "Europe/London",
        "30 1 * * *",
        "2026-10-25 00:00+01:00",
        SECOND,
        ["2026-10-25 01:30:00+00:00", "2026-10-26 01:30:00+00:00"],
        id="london_fall_repeat_second",
    ),
    pytest.param(
        "Europe/London",
        "30 1 * * *",
        "2026-10-25 00:00+01:00",
        BOTH,
        ["2026-10-25 01:30:00+01:00", "2026-10-25 01:30:00+00:00", "2026-10-26 01:30:00+00:00"],
        id="london_fall_repeat_both",
    ),
    pytest.param(
        "Europe/London",
        "*/30 * * * *",
        "2026-10-25 00:45+01:00",
        None,
        [
            "2026-10-25 01:00:00+01:00",
            "2026-10-25 01:30:00+01:00",
            "2026-10-25 01:00:00+00:00",
            "2026-10-25 01:30:00+00:00",
            "2026-10-25 02:00:00+00:00",
        ],
        id="london_fall_repeat_wildcard",
    ),
    # --- Australia/Sydney (southern hemisphere: falls back in April) --------------------------
    pytest.param(
        "Australia/Sydney",
        "30 2 * * *",
        "2026-04-05 00:00+11:00",
        None,
        ["2026-04-05 02:30:00+11:00", "2026-04-06 02:30:00+10:00"],
        id="sydney_fall_repeat_fixed_time",
    ),
    pytest.param(
        "Australia/Sydney",
        "30 2 * * *",
        "2026-04-05 00:00+11:00",
        SECOND,
        ["2026-04-05 02:30:00+10:00", "2026-04-06 02:30:00+10:00"],
        id="sydney_fall_repeat_second",
    ),
    pytest.param(
        "Australia/Sydney",
        "30 2 * * *",
        "2026-04-05 00:00+11:00",
        BOTH,
        ["2026-04-05 02:30:00+11:00", "2026-04-05 02:30:00+10:00", "2026-04-06 02:30:00+10:00"],
        id="sydney_fall_repeat_both",
    ),
    pytest.param(
        "Australia/Sydney",
        "0 * * * *",
        "2026-04-05 01:30+11:00",
        None,
        [
            "2026-04-05 02:00:00+11:00",
            "2026-04-05 02:00:00+10:00",
            "2026-04-05 03:00:00+10:00",
        ],
        id="sydney_fall_repeat_hourly",
    ),
    pytest.param(
        "Australia/Sydney",
        "30 2 * * *",
        "2026-10-04 00:00+10:00",
        None,
        ["2026-10-04 03:00:00+11:00", "2026-10-05 02:30:00+11:00"],
        id="sydney_spring_gap_fixed_time",
    ),
    pytest.param(
        "Australia/Sydney",
        "30 2 * * *",
        "2026-10-04 00:00+10:00",
        SKIP,
        ["2026-10-05 02:30:00+11:00"],
        id="sydney_spring_gap_skip",
    ),
    pytest.param(
        "Australia/Sydney",
        "30 * * * *",
        "2026-10-04 01:00+10:00",
        None,
        ["2026-10-04 01:30:00+10:00", "2026-10-04 03:30:00+11:00"],
        id="sydney_spring_gap_hourly",
    ),
    # --- Australia/Lord_Howe (30-minute shifts) -----------------------------------------------
    pytest.param(
        "Australia/Lord_Howe",
        "15 2 * * *",
        "2026-10-04 00:00+10:30",
        None,
        ["2026-10-04 02:30:00+11:00", "2026-10-05 02:15:00+11:00"],
        id="lord_howe_spring_gap_fixed_time",
    ),
    pytest.param(
        "Australia/Lord_Howe",
        "45 1 * * *",
        "2026-04-05 00:00+11:00",
        BOTH,
        ["2026-04-05 01:45:00+11:00", "2026-04-05 01:45:00+10:30", "2026-04-06 01:45:00+10:30"],
        id="lord_howe_fall_repeat_both",
    ),
    pytest.param(
        "Australia/Lord_Howe",
        "*/15 * * * *",
        "2026-04-05 01:20+11:00",
        None,
        [
            "2026-04-05 01:30:00+11:00",
            "2026-04-05 01:45:00+11:00",
            "2026-04-05 01:30:00+10:30",
            "2026-04-05 01:45:00+10:30",
            "2026-04-05 02:00:00+10:30",
        ],
        id="lord_howe_fall_repeat_wildcard",
    ),
]


@pytest.mark.parametrize(("zone", "text", "after", "dst", "expected"), CASES)
def test_dst_table(
    zone: str, text: str, after: str, dst: DstPolicy | None, expected: list[str]
) -> None:
    assert firings(text, zone, after, len(expected), dst) == expected


def test_jump_instant_is_first_real_wall_time_after_the_gap() -> None:
    tz = ZoneInfo("America/New_York")
    jump = Cron.parse("30 2 * * *").next_after(datetime(2026, 3, 8, tzinfo=UTC), tz)
    assert jump.astimezone(UTC) == datetime(2026, 3, 8, 7, 0, tzinfo=UTC)
    just_before = (jump.astimezone(UTC) - timedelta(seconds=1)).astimezone(tz)
    assert str(just_before) == "2026-03-08 01:59:59-05:00"


def test_repeated_hour_results_are_in_true_order() -> None:
    tz = ZoneInfo("America/New_York")
    start = datetime(2026, 11, 1, 4, 0, tzinfo=UTC)
    got = list(itertools.islice(Cron.parse("* * * * *").iter_after(start, tz), 240))
    stamps = [t.timestamp() for t in got]
    assert stamps == sorted(set(stamps))
    assert stamps == [start.timestamp() + 60 * (i + 1) for i in range(240)]


# --- every transition, every policy, against the brute-force reference --------------------------

ZONES = ["Europe/London", "America/New_York", "Australia/Sydney", "Australia/Lord_Howe"]
TRANSITION_DAYS = {
    "Europe/London": ["2026-03-29", "2026-10-25"],
    "America/New_York": ["2026-03-08", "2026-11-01"],
    "Australia/Sydney": ["2026-04-05", "2026-10-04"],
    "Australia/Lord_Howe": ["2026-04-05", "2026-10-04"],
}
EXPRESSIONS = [
    "* * * * *",
    "*/7 * * * *",
    "0 * * * *",
    "30 * * * *",
    "0,30 1-3 * * *",
    "15 2 * * *",
    "45 1 * * *",
    "0 3 * * *",
    "*/20 0-4 * * *",
    "59 1 * * SUN",
]
POLICIES = [
    ("jump", "first"),
    ("skip", "first"),
    ("jump", "second"),
    ("jump", "both"),
    ("skip", "both"),
]


@pytest.mark.parametrize("policy", POLICIES, ids=["-".join(p) for p in POLICIES])
@pytest.mark.parametrize("text", EXPRESSIONS)
@pytest.mark.parametrize(
    ("zone", "day"),
    [(zone, day) for zone in ZONES for day in TRANSITION_DAYS[zone]],
    ids=[f"{zone.split('/')[1]}-{day}" for zone in ZONES for day in TRANSITION_DAYS[zone]],
)
def test_transition_day_matches_reference(
    zone: str, day: str, text: str, policy: tuple[str, str]
) -> None:
    tz = ZoneInfo(zone)
    # in UTC: aware datetimes sharing a ZoneInfo compare by wall time, ignoring fold
    start = datetime.fromisoformat(day).replace(tzinfo=tz).astimezone(UTC) - timedelta(minutes=1)
    end = start + timedelta(hours=6)
    gap, repeat = policy
    dst = DstPolicy(gap=DstGap(gap), repeat=DstRepeat(repeat))
    expected = reference_firings(text, start, end, tz, gap=gap, repeat=repeat)
    got = [
        str(t)
        for t in itertools.takewhile(
            lambda t: t <= end, Cron.parse(text).iter_after(start, tz, dst=dst)
        )
    ]
    assert got == expected
    # and starting from every firing (and just before it) gives the next one
    instants = [datetime.fromisoformat(s) for s in expected]
    cron = Cron.parse(text)
    for this, following in itertools.pairwise(instants):
        assert str(cron.next_after(this, tz, dst=dst)) == str(following)
        nudged = this - timedelta(seconds=1)
        assert str(cron.next_after(nudged, tz, dst=dst)) == str(this)
