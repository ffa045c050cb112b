"""Argument values: dates are read exactly as ``YYYY-MM-DD``, by the parser the API uses too."""

from __future__ import annotations

import re
from datetime import date
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pysched.timing.run_dates import parse_iso_date
from tests.cli.cli_fake_api import FakeApi, cli

ROOT = Path(__file__).parents[2]
EXAMPLE = str(ROOT / "examples" / "etl.yaml")
WRITTEN = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")

# forms Python 3.11's date.fromisoformat reads, and the documentation refuses
NOT_YYYY_MM_DD = ["20261016", "2026-W42-5", "2026W425", "2026-289", "2026-10-16T00", "2026-1-16"]


@given(st.dates())
def test_every_date_written_yyyy_mm_dd_reads_back(day: date) -> None:
    assert parse_iso_date(day.isoformat()) == day


@given(st.dates(min_value=date(1000, 1, 1)))
def test_the_basic_and_week_forms_of_a_date_are_refused(day: date) -> None:
    year, week, weekday = day.isocalendar()
    for text in (day.strftime("%Y%m%d"), f"{year}-W{week:02}-{weekday}", f"{year}W{week:02}"):
        with pytest.raises(ValueError, match="YYYY-MM-DD"):
            parse_iso_date(text)


@given(st.text(alphabet="0123456789-W:T +", max_size=14) | st.text(max_size=14))
def test_only_yyyy_mm_dd_is_read(text: str) -> None:
    try:
        day = parse_iso_date(text)
    except ValueError:
        assert not WRITTEN.fullmatch(text) or not _valid(text)
    else:
        assert WRITTEN.fullmatch(text)
        assert day.isoformat() == text


def _valid(text: str) -> bool:
    try:
        date.fromisoformat(text)
    except ValueError:
        return False
    return True


@pytest.mark.parametrize("text", NOT_YYYY_MM_DD)
def test_the_other_iso_forms_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match="YYYY-MM-DD"):
        parse_iso_date(text)


COMMANDS = [
    pytest.param(("status", "--date"), id="status_date"),
    pytest.param(("trigger", "extract", "--run-date"), id="trigger_run_date"),
    pytest.param(("backfill", "extract", "--to", "2026-10-16", "--from"), id="backfill_from"),
    pytest.param(("backfill", "extract", "--from", "2026-10-16", "--to"), id="backfill_to"),
    pytest.param(("forecast", "--date"), id="forecast_date"),
    pytest.param(("forecast", EXAMPLE, "--date"), id="offline_forecast_date"),
    pytest.param(("forecast", EXAMPLE, "--to", "2026-10-16", "--from"), id="offline_from"),
]


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("text", NOT_YYYY_MM_DD[:2])
def test_a_date_option_refuses_the_other_forms_with_exit_2(
    api: FakeApi, command: tuple[str, ...], text: str
) -> None:
    result = cli(*command, text)
    assert result.exit_code == 2, result.output
    assert command[-1] in result.output
    assert "YYYY-MM-DD" in result.output
    assert api.requests == []


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("text", ["9999-12-31", "0001-01-01", " 2026-10-16"])
def test_a_date_option_refuses_far_years_and_spaces_with_exit_2(
    api: FakeApi, command: tuple[str, ...], text: str
) -> None:
    """The API's range (1900..9000): near year 1 or 9999 the date arithmetic would overflow."""
    result = cli(*command, text)
    assert result.exit_code == 2, result.output
    assert command[-1] in result.output
    assert ("outside the years 1900..9000" if text[0] != " " else "YYYY-MM-DD") in result.output
    assert "Traceback" not in result.output
    assert api.requests == []


def test_an_instant_option_refuses_far_years_with_exit_2(api: FakeApi) -> None:
    result = cli("cron", "next", "0 0 * * *", "--after", "0001-01-01T00:00:00+05:00")
    assert result.exit_code == 2, result.output
    assert "outside the years 1900..9000" in result.output
