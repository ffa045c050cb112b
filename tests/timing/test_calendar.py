"""Business calendars: checked day by day against the ``holidays`` package, then the rules
pysched adds on top (explicit holidays, workdays, based_on, weekdays) and the searches."""

from __future__ import annotations

import copy
import dataclasses
import functools
import pickle
from datetime import date, datetime, timedelta

import holidays
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pysched.timing.calendar as calendar_module
from pysched.errors import CalendarError, PyschedError
from pysched.timing.calendar import (
    DEFAULT_CALENDAR,
    MONDAY_TO_FRIDAY,
    SEARCH_LIMIT_DAYS,
    Calendar,
    parse_weekdays,
)


def d(text: str) -> date:
    return date.fromisoformat(text)


def every_day(start: date, end: date) -> list[date]:
    return [start + timedelta(days=i) for i in range((end - start).days + 1)]


@functools.cache
def england() -> Calendar:
    return Calendar.create("uk", country="GB", subdivision="ENG")


def test_public_names() -> None:
    assert set(calendar_module.__all__) == {
        "DEFAULT_CALENDAR",
        "MONDAY_TO_FRIDAY",
        "SEARCH_LIMIT_DAYS",
        "Calendar",
        "parse_weekdays",
    }


# --- against the holidays package -------------------------------------------------------------


@pytest.mark.parametrize(
    ("country", "subdivision"),
    [("GB", "ENG"), ("US", None), ("DE", "BY")],
    ids=["gb_england", "us_federal", "de_bavaria"],
)
def test_agrees_with_holidays_package_every_day_2020_2030(
    country: str, subdivision: str | None
) -> None:
    calendar = Calendar.create("c", country=country, subdivision=subdivision)
    language = getattr(holidays, country).default_language
    expected = holidays.country_holidays(
        country, subdiv=subdivision, years=range(2019, 2032), language=language
    )
    for day in every_day(d("2020-01-01"), d("2030-12-31")):
        assert calendar.is_business_day(day) == (day.weekday() < 5 and day not in expected), day
        assert calendar.holiday_name(day) == expected.get(day), day


def test_uk_2026_facts_pinned_and_checked_against_package() -> None:
    facts = {
        d("2026-04-03"): "Good Friday",
        d("2026-04-06"): "Easter Monday",
        d("2026-08-31"): "Late Summer Bank Holiday",
        d("2026-12-25"): "Christmas Day",
        d("2026-12-26"): "Boxing Day",  # a Saturday
        d("2026-12-28"): "Boxing Day (observed)",
    }
    package = holidays.country_holidays("GB", subdiv="ENG", years=2026, language="en_GB")
    for day, name in facts.items():
        assert package.get(day) == name
        assert england().holiday_name(day) == name
        assert not england().is_business_day(day)
    assert d("2026-12-26").weekday() == 5
    assert england().is_business_day(d("2026-12-29"))
    assert england().closed_days(d("2026-01-01"), d("2026-12-31")) == [
        (d("2026-01-01"), "New Year's Day"),
        (d("2026-04-03"), "Good Friday"),
        (d("2026-04-06"), "Easter Monday"),
        (d("2026-05-04"), "May Day"),
        (d("2026-05-25"), "Spring Bank Holiday"),
        (d("2026-08-31"), "Late Summer Bank Holiday"),
        (d("2026-12-25"), "Christmas Day"),
        (d("2026-12-26"), "Boxing Day"),
        (d("2026-12-28"), "Boxing Day (observed)"),
    ]


def test_public_holidays_load_lazily_per_year_then_never_touch_the_package(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calendar = Calendar.create("fr", country="FR")
    assert not calendar.is_business_day(d("2026-07-14"))  # loads 2026

    def boom(*args: object, **kwargs: object) -> None:
        raise AssertionError("the holidays package was asked again")

    monkeypatch.setattr(holidays, "country_holidays", boom)
    assert len(calendar.business_days(d("2026-01-01"), d("2026-12-31"))) > 240
    with pytest.raises(AssertionError, match="asked again"):
        calendar.is_business_day(d("2097-07-14"))  # a year nobody has asked about


def test_holidays_package_objects_never_leak() -> None:
    calendar = Calendar.create("x", holidays={d("2026-06-01"): "Founders"}, country="GB")
    with pytest.raises(TypeError):
        calendar.holidays[d("2026-06-02")] = "sneaky"  # type: ignore[index]
    assert calendar.holiday_name(d("2026-06-02")) is None


def test_country_and_subdivision_spellings_are_normalised() -> None:
    assert Calendar.create("a", country="gb", subdivision="eng").regions == (("GB", "ENG"),)
    assert Calendar.create("b", country="UK", subdivision="England").regions == (("GB", "ENG"),)
    assert Calendar.create("c", country="USA").regions == (("US", None),)
    assert Calendar.create("d", country="de", subdivision="bayern").regions == (("DE", "BY"),)


# --- errors -----------------------------------------------------------------------------------


def test_calendar_error_is_a_pysched_error_and_a_value_error() -> None:
    with pytest.raises(CalendarError) as caught:
        Calendar.create("x", country="XX")
    assert isinstance(caught.value, PyschedError)
    assert isinstance(caught.value, ValueError)


def test_unknown_country_names_it_and_suggests() -> None:
    with pytest.raises(CalendarError, match=r"unknown country 'XX'.*GB, US or DE"):
        Calendar.create("x", country="XX")
    with pytest.raises(CalendarError, match=r"'Germany' \(did you mean DE\?\)"):
        Calendar.create("x", country="Germany")


def test_unknown_subdivision_lists_the_valid_ones() -> None:
    with pytest.raises(CalendarError) as caught:
        Calendar.create("x", country="GB", subdivision="London")
    message = str(caught.value)
    assert "GB has no subdivision 'London'" in message
    for code in ("ENG (England)", "NIR (Northern Ireland)", "SCT (Scotland)", "WLS (Wales)"):
        assert code in message
    with pytest.raises(CalendarError, match=r"did you mean ENG\?"):
        Calendar.create("x", country="GB", subdivision="ENGL")


def test_subdivision_of_a_country_without_any() -> None:
    with pytest.raises(CalendarError, match="AQ has no subdivisions"):
        Calendar.create("x", country="AQ", subdivision="North")


def test_subdivision_needs_country() -> None:
    with pytest.raises(CalendarError, match="needs a country"):
        Calendar.create("x", subdivision="ENG")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"holidays": [d("2026-01-02")], "workdays": [d("2026-01-02")]}, "both as a holiday"),
        ({"holidays": [(d("2026-01-02"), "A"), (d("2026-01-02"), "B")]}, "listed twice"),
        ({"holidays": [datetime(2026, 1, 2)]}, "is not a date"),
        ({"holidays": ["2026-01-02"]}, "is not a date"),
        ({"holidays": [(d("2026-01-02"), "")]}, "non-empty text name"),
        ({"holidays": [(d("2026-01-02"), "A", "B")]}, "neither a date nor a"),
        ({"holidays": d("2026-01-02")}, "must be a list"),
        ({"workdays": [None]}, "is not a date"),
        ({"weekdays": []}, "could never have a business day"),
        ({"weekdays": ["someday"]}, "unknown weekday"),
    ],
    ids=[
        "holiday_and_workday",
        "conflicting_names",
        "datetime_holiday",
        "string_holiday",
        "blank_name",
        "triple",
        "lone_date",
        "none_workday",
        "no_business_days",
        "bad_weekday",
    ],
)
def test_create_rejects(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(CalendarError, match=message):
        Calendar.create("x", **kwargs)  # type: ignore[arg-type]


def test_direct_construction_is_checked_too() -> None:
    with pytest.raises(CalendarError, match="0-6"):
        Calendar(name="x", weekdays=frozenset({7}))
    with pytest.raises(CalendarError, match="name"):
        Calendar(name=" ")
    with pytest.raises(CalendarError, match="unknown country"):
        Calendar(name="x", regions=(("ZZ", None),))


def test_datetimes_are_refused() -> None:
    with pytest.raises(TypeError, match=r"\.date\(\)"):
        DEFAULT_CALENDAR.is_business_day(datetime(2026, 10, 19, 2, 0))
    with pytest.raises(TypeError):
        DEFAULT_CALENDAR.next_business_day(datetime(2026, 10, 19, 2, 0))
    with pytest.raises(TypeError):
        DEFAULT_CALENDAR.business_days(datetime(2026, 10, 19), d("2026-10-20"))


# --- explicit holidays, workdays, precedence -------------------------------------------------


def test_default_calendar() -> None:
    assert DEFAULT_CALENDAR.name == "default"
    assert DEFAULT_CALENDAR.weekdays == MONDAY_TO_FRIDAY
    assert DEFAULT_CALENDAR.regions == ()
    assert not DEFAULT_CALENDAR.holidays
    assert DEFAULT_CALENDAR.business_days(d("2026-12-21"), d("2027-01-03")) == [
        d("2026-12-21"),
        d("2026-12-22"),
        d("2026-12-23"),
        d("2026-12-24"),
        d("2026-12-25"),
        d("2026-12-28"),
        d("2026-12-29"),
        d("2026-12-30"),
        d("2026-12-31"),
        d("2027-01-01"),
    ]


def test_explicit_holidays_in_every_accepted_form() -> None:
    as_dates = Calendar.create("a", holidays=[d("2026-12-24"), d("2026-12-31")])
    as_pairs = Calendar.create(
        "a", holidays=[(d("2026-12-24"), "holiday"), (d("2026-12-31"), "holiday")]
    )
    as_mapping = Calendar.create(
        "a", holidays={d("2026-12-24"): "holiday", d("2026-12-31"): "holiday"}
    )
    assert as_dates == as_pairs == as_mapping
    assert as_dates.holiday_name(d("2026-12-24")) == "holiday"
    # a date given twice is fine when the names agree (a bare date is named "holiday")
    twice = Calendar.create("b", holidays=[(d("2026-12-24"), "Eve"), (d("2026-12-24"), " Eve ")])
    assert twice.holiday_name(d("2026-12-24")) == "Eve"
    assert Calendar.create("c", holidays=[d("2026-12-24"), d("2026-12-24")]) == Calendar(
        name="c", holidays={d("2026-12-24"): "holiday"}
    )
    with pytest.raises(CalendarError, match="listed twice"):
        Calendar.create("b", holidays=[(d("2026-12-24"), "Christmas Eve"), d("2026-12-24")])


def test_explicit_holidays_close_business_days_only() -> None:
    calendar = Calendar.create("a", holidays={d("2026-12-24"): "Christmas Eve"})
    assert not calendar.is_business_day(d("2026-12-24"))
    assert calendar.is_business_day(d("2026-12-23"))
    assert calendar.closed_days(d("2026-12-01"), d("2026-12-31")) == [
        (d("2026-12-24"), "Christmas Eve")
    ]


def test_the_caller_keeps_no_handle_on_the_holidays() -> None:
    source = {d("2026-12-24"): "Christmas Eve"}
    calendar = Calendar.create("a", holidays=source)
    source[d("2026-12-23")] = "added later"
    assert calendar.is_business_day(d("2026-12-23"))


def test_workday_beats_weekend_public_holiday_and_explicit_holiday_from_a_parent() -> None:
    saturday, observed = d("2026-12-19"), d("2026-12-28")
    parent = Calendar.create("uk", country="GB", subdivision="ENG", holidays=[d("2026-12-24")])
    child = Calendar.create(
        "uk-ops", based_on=parent, workdays=[saturday, observed, d("2026-12-24")]
    )
    for day in (saturday, observed, d("2026-12-24")):
        assert child.is_business_day(day)
        assert not parent.is_business_day(day)
    # the holiday is still reported by name, but it no longer closes the calendar
    assert child.holiday_name(observed) == "Boxing Day (observed)"
    closed = [day for day, _ in child.closed_days(d("2026-12-01"), d("2026-12-31"))]
    assert closed == [d("2026-12-25"), d("2026-12-26")]


def test_child_holiday_beats_parent_workday() -> None:
    saturday = d("2026-12-19")
    parent = Calendar.create("p", workdays=[saturday, d("2026-12-21")])
    child = Calendar.create("c", based_on=parent, holidays=[(d("2026-12-21"), "Shutdown")])
    assert parent.is_business_day(d("2026-12-21"))
    assert not child.is_business_day(d("2026-12-21"))
    assert child.is_business_day(saturday)  # the rest of the parent's workdays stay
    assert child.workdays == frozenset({saturday})
    assert child.holiday_name(d("2026-12-21")) == "Shutdown"


def test_based_on_inherits_weekdays_and_unions_the_rest() -> None:
    parent = Calendar.create(
        "gulf", weekdays=["sun-thu"], holidays=[(d("2026-03-01"), "Parent day")]
    )
    child = Calendar.create("gulf-uk", based_on=parent, country="GB", subdivision="ENG")
    assert child.weekdays == frozenset({6, 0, 1, 2, 3})
    assert child.regions == (("GB", "ENG"),)
    assert child.holiday_name(d("2026-03-01")) == "Parent day"
    assert not child.is_business_day(d("2026-04-06"))  # Easter Monday from the child's region
    assert child.is_business_day(d("2026-04-05"))  # a Sunday, business day in this week
    own_week = Calendar.create("weekdays-only", based_on=parent, weekdays=range(5))
    assert own_week.weekdays == MONDAY_TO_FRIDAY


def test_child_holiday_name_wins_and_regions_do_not_repeat() -> None:
    parent = Calendar.create("p", country="GB", subdivision="ENG", holidays=[d("2026-06-01")])
    child = Calendar.create(
        "c",
        based_on=parent,
        country="gb",
        subdivision="ENG",
        holidays=[(d("2026-06-01"), "Founders' day")],
    )
    assert child.regions == (("GB", "ENG"),)
    assert child.holiday_name(d("2026-06-01")) == "Founders' day"


def test_two_regions_close_on_either_and_join_names() -> None:
    uk = Calendar.create("uk", country="GB", subdivision="ENG")
    both = Calendar.create("uk-us", based_on=uk, country="US")
    assert both.regions == (("GB", "ENG"), ("US", None))
    assert not both.is_business_day(d("2026-08-31"))  # UK only
    assert not both.is_business_day(d("2026-11-26"))  # US Thanksgiving only
    assert both.holiday_name(d("2026-12-25")) == "Christmas Day"  # same name once
    assert both.holiday_name(d("2026-01-01")) == "New Year's Day"
    assert both.holiday_name(d("2026-08-31")) == "Late Summer Bank Holiday"


def test_explicit_name_is_reported_before_the_public_one() -> None:
    calendar = Calendar.create(
        "uk", country="GB", subdivision="ENG", holidays=[(d("2026-12-25"), "Xmas")]
    )
    assert calendar.holiday_name(d("2026-12-25")) == "Xmas"


def test_sunday_to_thursday_week() -> None:
    calendar = Calendar.create("gulf", weekdays="sun-thu")
    thursday, friday, saturday, sunday = (d(f"2026-10-{n}") for n in (15, 16, 17, 18))
    assert [calendar.is_business_day(x) for x in (thursday, friday, saturday, sunday)] == [
        True,
        False,
        False,
        True,
    ]
    assert calendar.next_business_day(thursday) == sunday
    assert calendar.previous_business_day(sunday) == thursday
    assert calendar.shift(thursday, 1) == sunday


def test_equality_hash_and_pickle_ignore_the_cache() -> None:
    a = Calendar.create("uk", country="GB", subdivision="ENG", holidays=[d("2026-06-01")])
    b = Calendar.create(
        "uk", country="UK", subdivision="england", holidays={d("2026-06-01"): "holiday"}
    )
    a.is_business_day(d("2026-06-01"))
    assert a == b
    assert hash(a) == hash(b)
    assert len({a, b}) == 1
    assert pickle.loads(pickle.dumps(a)) == a
    assert copy.deepcopy(a) == a
    assert a.holidays == {d("2026-06-01"): "holiday"}
    assert "_years" not in repr(a)


def test_replace_starts_a_fresh_cache() -> None:
    week = Calendar.create("w")
    assert not week.is_business_day(d("2026-10-17"))  # fills 2026 for Mon-Fri
    weekend = dataclasses.replace(week, weekdays=frozenset({5, 6}))
    assert weekend.is_business_day(d("2026-10-17"))
    assert not weekend.is_business_day(d("2026-10-19"))


def test_names_are_in_the_country_language_not_the_locale() -> None:
    bavaria = Calendar.create("by", country="DE", subdivision="BY")
    assert bavaria.holiday_name(d("2026-04-03")) == "Karfreitag"
    assert bavaria.holiday_name(d("2026-06-04")) == "Fronleichnam"  # Bavaria only
    assert Calendar.create("be", country="DE", subdivision="BE").is_business_day(d("2026-06-04"))


# --- searches -----------------------------------------------------------------------------------


def test_previous_and_next_are_strict_and_cross_year_ends() -> None:
    uk = england()
    assert uk.next_business_day(d("2026-12-24")) == d("2026-12-29")
    assert uk.previous_business_day(d("2026-12-29")) == d("2026-12-24")
    # 2027-01-01 is a Friday and New Year's Day
    assert uk.previous_business_day(d("2027-01-04")) == d("2026-12-31")
    assert uk.next_business_day(d("2026-12-31")) == d("2027-01-04")
    # strictly: a business day is not its own neighbour
    assert uk.next_business_day(d("2026-10-19")) == d("2026-10-20")
    assert uk.previous_business_day(d("2026-10-19")) == d("2026-10-16")


def test_shift() -> None:
    uk = england()
    saturday = d("2026-10-17")
    assert uk.shift(d("2026-10-19"), 0) == d("2026-10-19")
    assert uk.shift(saturday, 0) == d("2026-10-19")  # rolls forward
    assert uk.shift(saturday, 1) == d("2026-10-19")
    assert uk.shift(saturday, -1) == d("2026-10-16")
    assert uk.shift(d("2026-12-24"), 2) == d("2026-12-30")
    assert uk.shift(d("2026-12-24"), 4) == d("2027-01-04")
    assert uk.shift(d("2027-01-04"), -4) == d("2026-12-24")
    assert uk.shift(d("2026-04-02"), 1) == d("2026-04-07")  # over Easter


def test_business_days_inclusive_and_across_year_end() -> None:
    assert england().business_days(d("2026-12-24"), d("2027-01-05")) == [
        d("2026-12-24"),
        d("2026-12-29"),
        d("2026-12-30"),
        d("2026-12-31"),
        d("2027-01-04"),
        d("2027-01-05"),
    ]
    assert england().business_days(d("2026-12-25"), d("2026-12-28")) == []
    assert england().business_days(d("2026-12-30"), d("2026-12-29")) == []
    assert england().closed_days(d("2026-12-30"), d("2026-12-29")) == []


def test_a_calendar_without_business_days_raises_instead_of_spinning() -> None:
    only = d("2026-10-19")
    calendar = Calendar.create("one-day", weekdays=[], workdays=[only])
    assert calendar.next_business_day(d("2026-10-01")) == only
    assert calendar.previous_business_day(d("2026-11-01")) == only
    with pytest.raises(CalendarError, match=f"no business day within {SEARCH_LIMIT_DAYS} days"):
        calendar.next_business_day(only)
    with pytest.raises(CalendarError, match="'one-day'"):
        calendar.previous_business_day(only)
    with pytest.raises(CalendarError):
        calendar.shift(d("2030-01-01"), 0)
    with pytest.raises(CalendarError):
        calendar.shift(only, 1)


def test_every_weekday_a_holiday_raises_too() -> None:
    mondays = [d("2026-01-05") + timedelta(weeks=w) for w in range(SEARCH_LIMIT_DAYS // 7 + 2)]
    calendar = Calendar.create("mondays", weekdays=["mon"], holidays=mondays)
    with pytest.raises(CalendarError):
        calendar.next_business_day(d("2026-01-01"))


def test_searches_stop_at_the_ends_of_time() -> None:
    with pytest.raises(CalendarError, match="represent"):
        DEFAULT_CALENDAR.next_business_day(date.max)
    with pytest.raises(CalendarError, match="represent"):
        DEFAULT_CALENDAR.previous_business_day(date.min)
    assert DEFAULT_CALENDAR.next_business_day(date.min) == date(1, 1, 2)


# --- weekdays -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("items", "expected"),
    [
        (["mon", "tue", "wed", "thu", "fri"], {0, 1, 2, 3, 4}),
        (["mon-fri"], {0, 1, 2, 3, 4}),
        (["Monday-Friday"], {0, 1, 2, 3, 4}),
        (["MON-FRI", "sat"], {0, 1, 2, 3, 4, 5}),
        (["sun-thu"], {6, 0, 1, 2, 3}),
        (["fri-mon"], {4, 5, 6, 0}),
        (["tues", "Thurs", "wednesday"], {1, 2, 3}),
        ([0, 6], {0, 6}),
        (["0-4"], {0, 1, 2, 3, 4}),
        ("mon-wed, fri", {0, 1, 2, 4}),
        (["sat - sun"], {5, 6}),
        (["wed-wed"], {2}),
        (["mon", "mon-tue", 1], {0, 1}),
        ([], set()),
    ],
    ids=[
        "names",
        "range",
        "full_range",
        "upper_and_extra",
        "sun_thu_wraps",
        "fri_mon_wraps",
        "long_spellings",
        "ints",
        "digit_range",
        "comma_string",
        "spaced_range",
        "one_day_range",
        "repeats",
        "empty",
    ],
)
def test_parse_weekdays(items: list[str | int] | str, expected: set[int]) -> None:
    assert parse_weekdays(items) == frozenset(expected)


@pytest.mark.parametrize(
    "items",
    [["mo"], ["funday"], [7], [-1], ["mon-"], ["mon,,fri"], [True], [1.5], ["8"], ["mon-xyz"]],
    ids=[
        "too_short",
        "not_a_day",
        "int_7",
        "int_negative",
        "open_range",
        "empty_item",
        "bool",
        "float",
        "digit_8",
        "bad_range_end",
    ],
)
def test_parse_weekdays_rejects(items: list[object]) -> None:
    with pytest.raises(CalendarError, match="Monday=0"):
        parse_weekdays(items)  # type: ignore[arg-type]


# --- properties -----------------------------------------------------------------------------

dates = st.dates(min_value=date(2000, 1, 1), max_value=date(2060, 12, 31))


@settings(deadline=None)
@given(day=dates)
def test_neighbours_are_the_nearest_business_days(day: date) -> None:
    uk = england()
    before, after = uk.previous_business_day(day), uk.next_business_day(day)
    assert before < day < after
    assert uk.is_business_day(before)
    assert uk.is_business_day(after)
    assert not any(uk.is_business_day(x) for x in every_day(before, after)[1:-1] if x != day)


@settings(deadline=None)
@given(day=dates, n=st.integers(min_value=-400, max_value=400))
def test_shift_there_and_back(day: date, n: int) -> None:
    uk = england()
    business = uk.shift(day, 0)
    assert uk.is_business_day(business)
    assert business >= day
    there = uk.shift(business, n)
    assert uk.is_business_day(there)
    assert uk.shift(there, -n) == business
    assert (there > business) == (n > 0)


@settings(deadline=None)
@given(start=dates, length=st.integers(min_value=0, max_value=60))
def test_business_days_skip_none(start: date, length: int) -> None:
    uk = england()
    end = start + timedelta(days=length)
    found = uk.business_days(start, end)
    assert all(uk.is_business_day(x) for x in found)
    walk: list[date] = []
    current = uk.shift(start, 0)
    while current <= end:
        walk.append(current)
        current = uk.next_business_day(current)
    assert found == walk


@settings(deadline=None)
@given(day=dates, holiday=st.booleans(), workday=st.booleans())
def test_precedence_as_documented(day: date, holiday: bool, workday: bool) -> None:
    parent = Calendar.create("p", holidays=[day] if holiday else [])
    calendar = Calendar.create("c", based_on=parent, workdays=[day] if workday else [])
    expected = workday or (not holiday and day.weekday() < 5)
    assert calendar.is_business_day(day) == expected
