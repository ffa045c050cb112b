"""Cron expressions: parsing, errors, day rules, extensions, and the search against a reference."""

from __future__ import annotations

import itertools
from datetime import UTC, date, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from pysched.errors import CronError, PyschedError
from pysched.timing.cron import HORIZON_YEARS, Cron, DstGap, DstPolicy, DstRepeat
from tests.timing.cron_reference import RefCron, reference_firings, reference_first_date

UTC_ZONE = ZoneInfo("UTC")
NEW_YORK = ZoneInfo("America/New_York")


def firings(text: str, after: str, count: int, tz: ZoneInfo = UTC_ZONE) -> list[str]:
    instant = datetime.fromisoformat(after)
    return [str(t) for t in itertools.islice(Cron.parse(text).iter_after(instant, tz), count)]


# --- parsing -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("* * * * *", ["00:01", "00:02", "00:03"], id="every_minute"),
        pytest.param("5 * * * *", ["00:05", "01:05"], id="one_value"),
        pytest.param("5,10 * * * *", ["00:05", "00:10", "01:05"], id="list"),
        pytest.param("58-59 * * * *", ["00:58", "00:59", "01:58"], id="range"),
        pytest.param("*/20 * * * *", ["00:20", "00:40", "01:00"], id="step"),
        pytest.param("10-50/20 * * * *", ["00:10", "00:30", "00:50", "01:10"], id="range_step"),
        pytest.param("0 */6 * * *", ["06:00", "12:00", "18:00"], id="hour_step"),
        pytest.param("0 9-17/4 * * *", ["09:00", "13:00", "17:00"], id="hour_range_step"),
        pytest.param("0,*/30 * * * *", ["00:30", "01:00"], id="star_in_list"),
        pytest.param("0 0 * * *", ["00:00", "00:00"], id="daily"),
    ],
)
def test_minute_and_hour_syntax(text: str, expected: list[str]) -> None:
    got = firings(text, "2026-01-01 00:00+00:00", len(expected))
    assert [g[11:16] for g in got] == expected


def test_text_round_trips_and_equality() -> None:
    cron = Cron.parse("  0  9\t* *   MON-FRI ")
    assert str(cron) == "  0  9\t* *   MON-FRI "
    assert cron == Cron.parse("  0  9\t* *   MON-FRI ")
    assert hash(cron) == hash(Cron(text="  0  9\t* *   MON-FRI "))
    assert cron != Cron.parse("0 9 * * MON-FRI")
    assert repr(cron) == "Cron(text='  0  9\\t* *   MON-FRI ')"
    assert {cron, Cron.parse("  0  9\t* *   MON-FRI ")} == {cron}


@pytest.mark.parametrize(
    ("text", "same_as"),
    [
        pytest.param("0 0 1 jan *", "0 0 1 1 *", id="month_name_lower"),
        pytest.param("0 0 1 Jan-Mar *", "0 0 1 1-3 *", id="month_name_range"),
        pytest.param("0 0 * * mon-FRI", "0 0 * * 1-5", id="weekday_range_mixed_case"),
        pytest.param("0 0 * * sun", "0 0 * * 0", id="sunday_name"),
        pytest.param("0 0 * * 7", "0 0 * * 0", id="sunday_as_7"),
        pytest.param("0 0 * * 5-7", "0 0 * * 0,5,6", id="range_to_7"),
        pytest.param("0 0 * * 0-7", "0 0 * * *", id="whole_week"),
        pytest.param("@yearly", "0 0 1 1 *", id="yearly"),
        pytest.param("@ANNUALLY", "0 0 1 1 *", id="annually_upper"),
        pytest.param("@monthly", "0 0 1 * *", id="monthly"),
        pytest.param("@Weekly", "0 0 * * 0", id="weekly"),
        pytest.param("@daily", "0 0 * * *", id="daily"),
        pytest.param(" @midnight ", "0 0 * * *", id="midnight_padded"),
        pytest.param("@hourly", "0 * * * *", id="hourly"),
    ],
)
def test_equivalent_spellings(text: str, same_as: str) -> None:
    start = datetime(2026, 1, 1, tzinfo=UTC)
    mine = list(itertools.islice(Cron.parse(text).iter_after(start, NEW_YORK), 12))
    theirs = list(itertools.islice(Cron.parse(same_as).iter_after(start, NEW_YORK), 12))
    assert mine == theirs


def test_is_fixed_time() -> None:
    assert Cron.parse("30 2 * * *").is_fixed_time
    assert Cron.parse("0,30 1-3 * * *").is_fixed_time
    assert Cron.parse("@daily").is_fixed_time
    assert not Cron.parse("@hourly").is_fixed_time
    assert not Cron.parse("30 * * * *").is_fixed_time
    assert not Cron.parse("*/15 2 * * *").is_fixed_time


# --- errors ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "field", "token", "message"),
    [
        pytest.param("60 * * * *", "minute", "60", "minute: 60 is out of range 0-59", id="minute"),
        pytest.param("0 24 * * *", "hour", "24", "out of range 0-23", id="hour"),
        pytest.param(
            "0 0 32 * *",
            "day-of-month",
            "32",
            "day-of-month: 32 is out of range 1-31 in '0 0 32 * *'",
            id="day_of_month",
        ),
        pytest.param("0 0 0 * *", "day-of-month", "0", "out of range 1-31", id="dom_zero"),
        pytest.param("0 0 * 13 *", "month", "13", "out of range 1-12", id="month"),
        pytest.param("0 0 * * 8", "day-of-week", "8", "out of range 0-7", id="day_of_week"),
        pytest.param("99999999 * * * *", "minute", "99999999", "out of range", id="huge"),
        pytest.param("*/0 * * * *", "minute", "*/0", "at least 1", id="step_zero"),
        pytest.param("*/61 * * * *", "minute", "*/61", "more than the whole", id="step_huge"),
        pytest.param("*/x * * * *", "minute", "*/x", "step 'x' is not a number", id="step_junk"),
        pytest.param("5/10 * * * *", "minute", "5/10", "write 5-59/10", id="bare_step"),
        pytest.param("0 0 * * 5-1", "day-of-week", "5-1", "is reversed", id="reversed"),
        pytest.param("0 0 * * FRI-SUN", "day-of-week", "FRI-SUN", "write FRI-7", id="rev_sun"),
        pytest.param("1- * * * *", "minute", "1-", "missing a number", id="half_range"),
        pytest.param("1,,2 * * * *", "minute", "1,,2", "empty item", id="empty_item"),
        pytest.param("0 0 * FOO *", "month", "FOO", "unknown name 'FOO'", id="unknown_month"),
        pytest.param("0 0 * * JAN", "day-of-week", "JAN", "names are SUN-SAT", id="wrong_names"),
        pytest.param("MON * * * *", "minute", "MON", "'MON' is not a number", id="name_minute"),
        pytest.param("0 0 ? * *", "day-of-month", "?", "Quartz", id="quartz"),
        pytest.param("1x * * * *", "minute", "1x", "not a number", id="junk"),
        pytest.param("0 0 L-2 * *", "day-of-month", "L-2", "stand alone", id="L_range"),
        pytest.param("0 0 * * MON#6", "day-of-week", "MON#6", "1-5", id="nth_six"),
        pytest.param("0 0 * * MON#0", "day-of-week", "MON#0", "1-5", id="nth_zero"),
        pytest.param("0 0 * * L", "day-of-week", "L", "needs a weekday", id="bare_L_dow"),
        pytest.param("0 0 * * XYZL", "day-of-week", "XYZ", "unknown name", id="bad_last_dow"),
        pytest.param("1 2 3", None, "1 2 3", "expected 5 fields", id="too_few"),
        pytest.param("1 2 3 4 5 6", None, "1 2 3 4 5 6", "found 6", id="too_many"),
        pytest.param("", None, "", "empty", id="empty"),
        pytest.param(" \t ", None, " \t ", "empty", id="blank"),
        pytest.param("@reboot", None, "@reboot", "unknown alias", id="reboot"),
        pytest.param("@daily 5", None, "@daily 5", "stands alone", id="alias_plus"),
        pytest.param(
            "0 0 30 2 *",
            "day-of-month",
            "30",
            "can never fire: February has no 30th",
            id="never_feb_30",
        ),
        pytest.param(
            "0 0 31 4,6,9,11 *",
            "day-of-month",
            "31",
            "April, June, September and November have no 31st",
            id="never_31st",
        ),
        pytest.param(
            "0 0 30 2 */2",
            "day-of-month",
            "30",
            "February has no 30th",
            id="never_feb_30_and_mode",
        ),
        pytest.param(
            "0 0 */31 2 MON#2",
            "day-of-month",
            "*/31",
            "no day in February matches both",
            id="never_generic",
        ),
    ],
)
def test_errors(text: str, field: str | None, token: str, message: str) -> None:
    with pytest.raises(CronError) as caught:
        Cron.parse(text)
    assert caught.value.field == field
    assert caught.value.token == token
    assert message in str(caught.value)
    assert isinstance(caught.value, ValueError)
    assert isinstance(caught.value, PyschedError)


@pytest.mark.parametrize(
    "text",
    [
        "0 0 29 2 *",
        "0 0 L 2 *",
        "0 0 30 2 MON",
        "0 0 31 4 1,*",
        "0 0 * 2 MON#5",
        "0 0 29 2 */7",
    ],
)
def test_rare_but_possible_expressions_parse(text: str) -> None:
    Cron.parse(text)


def test_leap_day_fires_in_leap_years() -> None:
    assert firings("0 0 29 2 *", "2026-01-01 00:00+00:00", 3) == [
        "2028-02-29 00:00:00+00:00",
        "2032-02-29 00:00:00+00:00",
        "2036-02-29 00:00:00+00:00",
    ]
    # 2100 is not a leap year
    assert firings("0 0 29 2 *", "2096-03-01 00:00+00:00", 1) == ["2104-02-29 00:00:00+00:00"]


def test_rarest_expression_waits_forty_years() -> None:
    # a 29 February that is a Monday: the 5th Monday of February
    assert firings("0 0 * 2 MON#5", "2072-03-01 00:00+00:00", 1) == ["2112-02-29 00:00:00+00:00"]


# --- day rules ---------------------------------------------------------------------------------


def test_vixie_or_when_both_day_fields_restricted() -> None:
    # the 13th, or any Friday
    cron = Cron.parse("0 0 13 * FRI")
    assert [d.day for d in _days(cron, date(2026, 3, 1), date(2026, 3, 31))] == [6, 13, 20, 27]
    assert [d.day for d in _days(cron, date(2026, 2, 1), date(2026, 2, 28))] == [6, 13, 20, 27]
    assert [d.day for d in _days(cron, date(2026, 4, 1), date(2026, 4, 30))] == [3, 10, 13, 17, 24]


def test_vixie_and_when_a_day_field_starts_with_star() -> None:
    # '*/2' counts as unrestricted, so this is "odd days that are Mondays"
    cron = Cron.parse("0 0 */2 * MON")
    assert [d.day for d in _days(cron, date(2026, 3, 1), date(2026, 3, 31))] == [9, 23]
    # and the other way round: the 1st to 7th that are Sundays? no — dow '*/7' is Sunday only
    cron = Cron.parse("0 0 1-7 * */7")
    assert [d.day for d in _days(cron, date(2026, 3, 1), date(2026, 3, 31))] == [1]


def test_only_day_of_week_restricted() -> None:
    cron = Cron.parse("0 9 * * MON-FRI")
    assert len(_days(cron, date(2026, 3, 1), date(2026, 3, 31))) == 22


@pytest.mark.parametrize(
    ("text", "month", "days"),
    [
        pytest.param("0 0 L * *", (2026, 2), [28], id="last_day_feb"),
        pytest.param("0 0 L * *", (2028, 2), [29], id="last_day_leap_feb"),
        pytest.param("0 0 L * *", (2026, 4), [30], id="last_day_april"),
        pytest.param("0 0 1,L * *", (2026, 3), [1, 31], id="last_in_list"),
        pytest.param("0 0 15,l * *", (2026, 6), [15, 30], id="lowercase_l"),
        pytest.param("0 0 * * MON#1", (2026, 6), [1], id="first_monday"),
        pytest.param("0 0 * * 1#1", (2026, 3), [2], id="first_monday_number"),
        pytest.param("0 0 * * FRI#3", (2026, 3), [20], id="third_friday"),
        pytest.param("0 0 * * SUN#5,7#1", (2026, 3), [1, 29], id="sunday_first_and_fifth"),
        pytest.param("0 0 * * MON#5", (2026, 6), [29], id="fifth_monday_exists"),
        pytest.param("0 0 * * MON#5", (2026, 2), [], id="fifth_monday_missing"),
        pytest.param("0 0 * * FRIL", (2026, 3), [27], id="last_friday"),
        pytest.param("0 0 * * 5L", (2026, 7), [31], id="last_friday_number"),
        pytest.param("0 0 * * 0L,satl", (2026, 2), [22, 28], id="last_sunday_and_saturday"),
        pytest.param("0 0 * * 7L", (2026, 5), [31], id="last_sunday_as_7"),
        pytest.param("0 0 L * FRI#1", (2026, 5), [1, 31], id="extensions_or"),
        pytest.param("0 0 * 3 MON-FRI", (2026, 2), [], id="month_excluded"),
    ],
)
def test_extensions_against_hand_computed_dates(
    text: str, month: tuple[int, int], days: list[int]
) -> None:
    year, m = month
    first = date(year, m, 1)
    last = (first + timedelta(days=32)).replace(day=1) - timedelta(days=1)
    cron = Cron.parse(text)
    assert [d.day for d in _days(cron, first, last)] == days
    # and next_after agrees with matches_date
    start = datetime(year, m, 1, tzinfo=UTC) - timedelta(minutes=1)
    got = [
        t.day
        for t in itertools.takewhile(
            lambda t: t.month == m and t.year == year, cron.iter_after(start, UTC_ZONE)
        )
    ]
    assert got == days


def _days(cron: Cron, first: date, last: date) -> list[date]:
    return [
        first + timedelta(days=i)
        for i in range((last - first).days + 1)
        if cron.matches_date(first + timedelta(days=i))
    ]


# --- next_after basics -------------------------------------------------------------------------


def test_next_after_is_strictly_after() -> None:
    cron = Cron.parse("0 12 * * *")
    noon = datetime(2026, 5, 4, 12, tzinfo=UTC)
    assert str(cron.next_after(noon, UTC_ZONE)) == "2026-05-05 12:00:00+00:00"
    just_before = noon - timedelta(microseconds=1)
    assert cron.next_after(just_before, UTC_ZONE) == noon


def test_next_after_accepts_any_aware_instant_and_answers_in_tz() -> None:
    cron = Cron.parse("0 9 * * *")
    tokyo_instant = datetime(2026, 5, 4, 23, 0, tzinfo=timezone(timedelta(hours=9)))
    result = cron.next_after(tokyo_instant, NEW_YORK)
    assert str(result) == "2026-05-05 09:00:00-04:00"
    assert result.tzinfo is NEW_YORK


def test_naive_instant_is_rejected() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        Cron.parse("* * * * *").next_after(datetime(2026, 1, 1), UTC_ZONE)


def test_search_is_bounded_at_the_end_of_time() -> None:
    cron = Cron.parse("0 0 29 2 *")
    with pytest.raises(CronError, match="no firing"):
        cron.next_after(datetime(9997, 1, 1, tzinfo=UTC), UTC_ZONE)
    with pytest.raises(CronError, match="no firing"):
        Cron.parse("* * * * *").next_after(datetime.max.replace(tzinfo=UTC), UTC_ZONE)
    assert HORIZON_YEARS == 400


def test_policy_is_accepted_for_wildcard_jobs_and_ignored() -> None:
    cron = Cron.parse("*/30 * * * *")
    start = datetime(2026, 3, 8, 6, 0, tzinfo=UTC)
    plain = list(itertools.islice(cron.iter_after(start, NEW_YORK), 4))
    policy = DstPolicy(gap=DstGap.SKIP, repeat=DstRepeat.BOTH)
    assert list(itertools.islice(cron.iter_after(start, NEW_YORK, dst=policy), 4)) == plain


def test_matches_date_uses_local_calendar_only() -> None:
    cron = Cron.parse("30 23 L 2 *")
    assert cron.matches_date(date(2028, 2, 29))
    assert not cron.matches_date(date(2028, 2, 28))
    assert cron.matches_date(date(2026, 2, 28))
    assert not cron.matches_date(date(2026, 3, 31))


# --- properties against the brute-force reference -----------------------------------------------

ZONES = [
    ZoneInfo(name)
    for name in (
        "UTC",
        "Europe/London",
        "America/New_York",
        "Australia/Sydney",
        "Australia/Lord_Howe",
        "Asia/Kolkata",
    )
]
_MONTH_NAMES = ["jan", "FEB", "Mar", "apr", "MAY", "jun", "JUL", "aug", "Sep", "oct", "NOV", "dec"]
_DAY_NAMES = ["sun", "MON", "Tue", "wed", "THU", "fri", "SAT"]


def _plain_items(low: int, high: int, names: list[str] | None = None) -> st.SearchStrategy[str]:
    span = high - low + 1

    def value(v: int) -> str:
        return names[v - low] if names and v - low < len(names) and v % 3 == 0 else str(v)

    ranges = st.tuples(st.integers(low, high), st.integers(0, high - low)).map(
        lambda t: (t[0], min(high, t[0] + t[1]))
    )
    return st.one_of(
        st.just("*"),
        st.integers(1, span).map(lambda n: f"*/{n}"),
        st.integers(low, high).map(value),
        ranges.map(lambda r: f"{value(r[0])}-{value(r[1])}"),
        st.tuples(ranges, st.integers(1, span)).map(
            lambda t: f"{value(t[0][0])}-{value(t[0][1])}/{t[1]}"
        ),
    )


def _field(item: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.lists(item, min_size=1, max_size=3).map(",".join)


_dom_item = st.one_of(_plain_items(1, 31), st.just("L"))
_dow_item = st.one_of(
    _plain_items(0, 7, _DAY_NAMES),
    st.tuples(st.sampled_from(["1", "MON", "fri", "0", "7", "SAT"]), st.integers(1, 5)).map(
        lambda t: f"{t[0]}#{t[1]}"
    ),
    st.sampled_from(["5L", "FRIL", "0l", "monL"]),
)
EXPRESSIONS = st.tuples(
    _field(_plain_items(0, 59)),
    _field(_plain_items(0, 23)),
    st.one_of(st.just("*"), _field(_dom_item)),
    st.one_of(st.just("*"), _field(_plain_items(1, 12, _MONTH_NAMES))),
    st.one_of(st.just("*"), _field(_dow_item)),
    st.sampled_from([" ", "  ", "\t"]),
).map(lambda t: t[5].join(t[:5]))


def _transitions(tz: ZoneInfo, year: int) -> list[datetime]:
    """UTC instants at which ``tz`` changes offset during ``year`` (found hour by hour)."""
    found: list[datetime] = []
    u = datetime(year, 1, 1, tzinfo=UTC)
    while u.year == year:
        if u.astimezone(tz).utcoffset() != (u + timedelta(hours=1)).astimezone(tz).utcoffset():
            found.append(u + timedelta(hours=1))
        u += timedelta(hours=1)
    return found


_TRANSITIONS = {tz.key: _transitions(tz, 2026) + _transitions(tz, 2031) for tz in ZONES}


@st.composite
def instants(draw: st.DrawFn, tz: ZoneInfo) -> datetime:
    """Mostly near a DST transition of ``tz`` (where the bugs live), sometimes anywhere."""
    near = _TRANSITIONS[tz.key]
    if near and draw(st.booleans()):
        base = draw(st.sampled_from(near))
        return base + timedelta(seconds=draw(st.integers(-26 * 3600, 3 * 3600)))
    return datetime(2000, 1, 1, tzinfo=UTC) + timedelta(
        seconds=draw(st.integers(0, 40 * 365 * 86400))
    )


def _parse_or_check_never(text: str) -> Cron:
    try:
        return Cron.parse(text)
    except CronError as error:
        assert "can never fire" in str(error)
        assert reference_first_date(text, date(2000, 1, 1), 60) is None
        assume(False)
        raise


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    text=EXPRESSIONS,
    tz=st.sampled_from(ZONES),
    data=st.data(),
    policy=st.sampled_from([(g, r) for g in ("jump", "skip") for r in ("first", "second", "both")]),
)
def test_firings_match_reference(
    text: str, tz: ZoneInfo, data: st.DataObject, policy: tuple[str, str]
) -> None:
    cron = _parse_or_check_never(text)
    start = data.draw(instants(tz))
    end = start + timedelta(hours=28)
    gap, repeat = policy
    dst = DstPolicy(gap=DstGap(gap), repeat=DstRepeat(repeat))
    expected = reference_firings(text, start, end, tz, gap=gap, repeat=repeat)
    got: list[str] = []
    for firing in cron.iter_after(start, tz, dst=dst):
        if firing > end:
            break
        got.append(str(firing))
    assert got == expected


@settings(max_examples=100, deadline=None)
@given(text=EXPRESSIONS, day=st.dates(date(2000, 1, 1), date(2060, 12, 31)))
def test_days_match_reference(text: str, day: date) -> None:
    cron = _parse_or_check_never(text)
    reference = RefCron.parse(text)
    assert cron.matches_date(day) == reference.day_matches(day)
    # the first firing after that day lands on the reference's first matching day, at the
    # earliest allowed hour and minute
    first = reference_first_date(text, day, 45)
    assert first is not None
    start = datetime(day.year, day.month, day.day, 23, 59, tzinfo=UTC)
    got = cron.next_after(start, UTC_ZONE)
    assert got.date() == first
    assert (got.hour, got.minute) == (min(reference.hours), min(reference.minutes))


@settings(max_examples=60, deadline=None)
@given(text=EXPRESSIONS, tz=st.sampled_from(ZONES), data=st.data())
def test_iter_after_strictly_increasing_and_real(
    text: str, tz: ZoneInfo, data: st.DataObject
) -> None:
    cron = _parse_or_check_never(text)
    start = data.draw(instants(tz))
    previous = start
    for firing in itertools.islice(cron.iter_after(start, tz), 30):
        assert firing.tzinfo is tz
        assert firing.timestamp() > previous.timestamp()
        # a real, normalised wall time: converting through UTC gives it back, fold and all
        assert str(firing.astimezone(UTC).astimezone(tz)) == str(firing)
        previous = firing


_JUNK_ALPHABET = "0123456789*/,-#LlWw?@ \tMONFRIjanSUNDEC"


@settings(max_examples=300, deadline=None)
@given(text=st.one_of(st.text(_JUNK_ALPHABET, max_size=30), st.text(max_size=30)))
def test_junk_gives_cron_or_cron_error(text: str) -> None:
    try:
        cron = Cron.parse(text)
    except CronError:
        return
    assert str(cron) == text
    cron.next_after(datetime(2026, 1, 1, tzinfo=UTC), NEW_YORK)


@settings(max_examples=150, deadline=None)
@given(fields=st.lists(st.text("0123456789*/,-#L", min_size=1, max_size=6), min_size=5, max_size=5))
def test_field_shaped_junk_gives_cron_or_cron_error(fields: list[str]) -> None:
    text = " ".join(fields)
    try:
        Cron.parse(text)
    except CronError as error:
        assert error.field in {"minute", "hour", "day-of-month", "month", "day-of-week"}
        assert error.token
