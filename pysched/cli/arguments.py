"""Parsing CLI argument values (dates, instants, zones) with messages that say the fix.

A bad value raises ``typer.BadParameter``, which typer turns into exit code 2 with the
option's name, as for any other usage mistake.

Dates are read by ``pysched.timing.run_dates.parse_iso_date``, as the API reads them, so the
two accept exactly the same dates.

Every text value is also held to ``text_problem`` (by ``pysched.cli.usage.Command``, for every
command at once): not empty, and at most ``MAX_TEXT`` characters.
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Annotated, Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import httpx
import typer

from pysched.timing.run_dates import parse_iso_date, year_problem
from pysched.zone_data import host_only_hint

MAX_TEXT = 4096
"""The most characters an argument or option may have. Most go into a URL (a job's name, a run
id, a filter), which httpx caps at 64 KiB and the server at 16 KiB for the whole request head
(hypercorn's ``h11_max_incomplete_size``). Names in a config are at most 200 characters
(``pysched.config.fields.MAX_NAME``); 4,096 passes any of them, and refuses a pasted file or
a runaway ``$(...)`` with a message instead of a traceback."""

MAX_TOKEN = 1024
"""The longest token sent. The server's tokens are 51 characters (``pysched_`` and 43
url-safe ones, see ``pysched.tokens``); a longer one can only be a mistake, which the server
would answer with a bare ``HTTP 431``."""

MAX_COUNT = 10**18 - 1
"""The largest count the API reads (at most 18 digits, ``pysched.web.inputs.whole_number``)."""

API_PREFIX = "/api/v1"


def text_problem(text: str, *, optional: bool) -> str | None:
    """Why ``text``, given explicitly, cannot be used: empty (usually a script's unset
    variable: taking it as "not given" would act on every run, or on the default), or too
    long. ``optional``: the value is an option's, which may be left out for its default."""
    if not text:
        if optional:
            return "the value is empty — leave the option out for its default"
        return "the value is empty — give one"
    if len(text) > MAX_TEXT:
        return f"{len(text):,} characters is too long (at most {MAX_TEXT:,})"
    return None


# the metavars as the docs write them (typer's own reads ``{run_id}``)
JobArg = Annotated[str, typer.Argument(help="The job's name.", show_default=False, metavar="JOB")]
RunIdArg = Annotated[
    str,
    typer.Argument(
        help="A run id, like fetch-rates.2026-10-16.1.", show_default=False, metavar="RUN_ID"
    ),
]


def config_argument(help: str) -> Any:
    """A CONFIG argument: an existing file (one that does not exist is a usage mistake, exit
    2, as it is for ``-c``). ``help`` says what leaving it out means, where it may be."""
    return typer.Argument(
        help=help, show_default=False, exists=True, dir_okay=False, metavar="CONFIG"
    )


def name_problem(text: str) -> str | None:
    """Why ``text`` cannot be a job name or a run id: a ``/``, which neither ever holds (the
    server would read it as another path, and answer "no such endpoint")."""
    if "/" in text:
        return (
            "a job name or run id never holds '/' (job names are letters, digits, '-' and '_'; "
            "run ids look like fetch-rates.2026-10-16.1)"
        )
    return None


def token_problem(token: str) -> str | None:
    """Why ``token`` cannot be sent as ``Authorization: Bearer <token>``, never quoting it:
    a token is ASCII letters, digits and punctuation, which is all an HTTP header carries."""
    if not token.isascii():
        return "a token is ASCII, and this one has a character that is not"
    if any(not "!" <= char <= "~" for char in token):
        return (
            "a token has no spaces or control characters (an HTTP header cannot carry them), "
            "and this one has one"
        )
    if len(token) > MAX_TOKEN:
        return (
            f"this one has {len(token):,} characters: pysched's tokens have 51, and at most "
            f"{MAX_TOKEN:,} are sent"
        )
    return None


def parse_url(text: str, option: str) -> str:
    """``--url``: an http(s) URL with a host and a port in range, without a trailing ``/``
    or ``/api/v1`` (``serve`` prints its API's URL with it, and people copy that)."""
    try:
        parsed = httpx.URL(text)
    except httpx.InvalidURL as exc:
        raise typer.BadParameter(f"{text!r} is not a URL: {exc}", param_hint=option) from None
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise typer.BadParameter(
            f"{text!r}: give an http:// or https:// URL with a host, like http://127.0.0.1:8080",
            param_hint=option,
        )
    if parsed.port is not None and not 1 <= parsed.port <= 65535:
        raise typer.BadParameter(
            f"{text!r}: port {parsed.port} is not a number from 1 to 65535", param_hint=option
        )
    return text.rstrip("/").removesuffix(API_PREFIX)


def check_count(value: int | None, option: str) -> int | None:
    """A count (``--attempt``) the API can read: one over ``MAX_COUNT`` is a usage mistake
    that says so, rather than the server's 'not a count'."""
    if value is not None and value > MAX_COUNT:
        raise typer.BadParameter(f"{value} is too large (at most {MAX_COUNT})", param_hint=option)
    return value


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
        hint = host_only_hint(text) or "use an IANA name like Europe/London"
        raise typer.BadParameter(
            f"unknown time zone {text!r} — {hint}", param_hint=option
        ) from None
