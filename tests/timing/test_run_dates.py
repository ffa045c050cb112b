"""Run-date rules: the business day a run is *for*, from the local date it fires on."""

from __future__ import annotations

import functools
from datetime import date, datetime

import pytest

import pysched.timing.run_dates as run_dates_module
from pysched.errors import CalendarError
from pysched.timing.calendar import DEFAULT_CALENDAR, Calendar
from pysched.timing.run_dates import RunDateRule, run_date_for


def d(text: str) -> date:
    return date.fromisoformat(text)


@functools.cache
def england() -> Calendar:
    return Calendar.create("uk", country="GB", subdivision="ENG")


def test_public_names() -> None:
    assert set(run_dates_module.__all__) == {"RunDateRule", "parse_iso_date", "run_date_for"}


def test_rule_spellings_are_the_config_values() -> None:
    assert {rule.value for rule in RunDateRule} == {
        "same_day",
        "previous_day",
        "previous_business_day",
        "next_business_day",
    }
    assert RunDateRule("previous_business_day") is RunDateRule.PREVIOUS_BUSINESS_DAY


@pytest.mark.parametrize(
    ("fires_on", "rule", "calendar", "run_date"),
    [
        # Monday 02:00 batch does Friday's business
        ("2026-10-19", RunDateRule.PREVIOUS_BUSINESS_DAY, None, "2026-10-16"),
        ("2026-10-20", RunDateRule.PREVIOUS_BUSINESS_DAY, None, "2026-10-19"),
        ("2026-10-18", RunDateRule.PREVIOUS_BUSINESS_DAY, None, "2026-10-16"),
        # Tuesday after Easter Monday: Monday and Good Friday are both closed in England
        ("2026-04-07", RunDateRule.PREVIOUS_BUSINESS_DAY, "uk", "2026-04-02"),
        ("2026-04-07", RunDateRule.PREVIOUS_BUSINESS_DAY, None, "2026-04-06"),
        ("2026-12-29", RunDateRule.PREVIOUS_BUSINESS_DAY, "uk", "2026-12-24"),
        ("2027-01-04", RunDateRule.PREVIOUS_BUSINESS_DAY, "uk", "2026-12-31"),
        # previous_day ignores the calendar
        ("2026-10-19", RunDateRule.PREVIOUS_DAY, None, "2026-10-18"),
        ("2026-04-07", RunDateRule.PREVIOUS_DAY, "uk", "2026-04-06"),
        ("2027-01-01", RunDateRule.PREVIOUS_DAY, None, "2026-12-31"),
        # same_day is the firing day, business day or not
        ("2026-10-17", RunDateRule.SAME_DAY, None, "2026-10-17"),
        ("2026-12-25", RunDateRule.SAME_DAY, "uk", "2026-12-25"),
        # next_business_day: Friday evening prepares Monday
        ("2026-10-16", RunDateRule.NEXT_BUSINESS_DAY, None, "2026-10-19"),
        ("2026-10-17", RunDateRule.NEXT_BUSINESS_DAY, None, "2026-10-19"),
        ("2026-10-19", RunDateRule.NEXT_BUSINESS_DAY, None, "2026-10-20"),
        ("2026-12-24", RunDateRule.NEXT_BUSINESS_DAY, "uk", "2026-12-29"),
        ("2026-04-02", RunDateRule.NEXT_BUSINESS_DAY, "uk", "2026-04-07"),
    ],
    ids=[
        "monday_for_friday",
        "tuesday_for_monday",
        "sunday_for_friday",
        "after_easter_uk",
        "after_easter_default",
        "after_christmas_uk",
        "after_new_year_uk",
        "previous_day_monday",
        "previous_day_ignores_calendar",
        "previous_day_over_year_end",
        "same_day_saturday",
        "same_day_holiday",
        "next_friday_to_monday",
        "next_saturday_to_monday",
        "next_is_strict",
        "next_over_christmas_uk",
        "next_over_easter_uk",
    ],
)
def test_run_date_for(
    fires_on: str, rule: RunDateRule, calendar: str | None, run_date: str
) -> None:
    cal = england() if calendar == "uk" else None
    assert run_date_for(d(fires_on), rule, cal) == d(run_date)


def test_friday_holiday_makes_monday_run_for_thursday() -> None:
    calendar = Calendar.create("bank", holidays=[(d("2026-10-16"), "Bank closure")])
    monday = d("2026-10-19")
    assert run_date_for(monday, RunDateRule.PREVIOUS_BUSINESS_DAY, calendar) == d("2026-10-15")


def test_no_calendar_means_the_default_calendar() -> None:
    for rule in RunDateRule:
        for day in (d("2026-10-17"), d("2026-10-19"), d("2026-12-25")):
            assert run_date_for(day, rule) == run_date_for(day, rule, DEFAULT_CALENDAR)


def test_every_rule_gives_a_date() -> None:
    for rule in RunDateRule:
        assert isinstance(run_date_for(d("2026-10-19"), rule, england()), date)


def test_errors() -> None:
    with pytest.raises(TypeError, match=r"\.date\(\)"):
        run_date_for(datetime(2026, 10, 19, 2, 0), RunDateRule.SAME_DAY)
    with pytest.raises(CalendarError):
        run_date_for(date.min, RunDateRule.PREVIOUS_DAY)
    lonely = Calendar.create("lonely", weekdays=[], workdays=[d("2026-10-19")])
    with pytest.raises(CalendarError, match="no business day"):
        run_date_for(d("2026-10-19"), RunDateRule.PREVIOUS_BUSINESS_DAY, lonely)
