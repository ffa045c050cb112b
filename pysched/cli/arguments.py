"""Parsing CLI argument values (dates, instants, zones) with messages that say the fix.

A bad value raises ``typer.BadParameter``, which typer turns into exit code 2 with the
option's name, as for any other usage mistake.

Dates are read by ``pysched.timing.run_dates.parse_iso_date``, as the API reads them, so the
two accept exactly the same dates.
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import typer

from pysched.timing.run_dates import parse_iso_date, year_problem


def parse_date(text: str, option: str) -> date:
    try:
        value = parse_iso_date(text)
    except ValueError:
        raise typer.BadParameter(
            f"{text!r} is not a date — write it as YYYY-MM-DD, like 2026-10-19",
            param_hint=option,
        ) from None
    problem = year_problem(value)
    if problem is not None:
        raise typer.BadParameter(problem, param_hint=option)
    return value


def parse_instant(text: str, option: str, tz: ZoneInfo) -> datetime:
    """An ISO instant; one written without an offset is taken in ``tz``."""
    try:
        value = datetime.fromisoformat(text.strip())
    except ValueError:
        raise typer.BadParameter(
            f"{text!r} is not an ISO date-time — write it like 2026-10-19T02:00 "
            "or 2026-10-19T02:00+01:00",
            param_hint=option,
        ) from None
    problem = year_problem(value.date())
    if problem is not None:
        raise typer.BadParameter(problem, param_hint=option)
    if value.tzinfo is None:
        value = value.replace(tzinfo=tz)
    return value.astimezone(UTC)


def parse_zone(text: str, option: str) -> ZoneInfo:
    try:
        if text.startswith(("/", ".")) or ".." in text:
            raise ZoneInfoNotFoundError(text)
        return ZoneInfo(text)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise typer.BadParameter(
            f"unknown time zone {text!r} — use an IANA name like Europe/London",
            param_hint=option,
        ) from None
