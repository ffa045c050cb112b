"""Reading request input (query values, JSON bodies) with errors that name the field.

A malformed body or a value of the wrong shape is a 400 naming the field; a well-formed value
that is wrong for what it asks (a date range that ends before it starts) is a 422, raised by the
handler that knows why.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date
from typing import Any

import orjson

from pysched.timing.run_dates import parse_iso_date, year_problem
from pysched.web.api_errors import ApiError

MAX_BODY = 64 * 1024
"""Action bodies are tiny; anything bigger is refused before it is parsed."""
MAX_TEXT = 1000
"""The longest text a body field may hold (a reason, a name)."""


def parse_body(raw: bytes) -> dict[str, Any]:
    """The JSON object a request carries; an empty body is ``{}``."""
    if len(raw) > MAX_BODY:
        raise ApiError(413, f"the body is larger than {MAX_BODY} bytes")
    if not raw.strip():
        return {}
    try:
        value: Any = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise ApiError(400, f"the body is not valid JSON: {exc}", field="body") from None
    if not isinstance(value, dict):
        raise ApiError(400, 'the body must be a JSON object, like {"why": "..."}', field="body")
    body: dict[str, Any] = value  # pyright: ignore[reportUnknownVariableType]
    return body


def only_keys(body: Mapping[str, Any], allowed: tuple[str, ...]) -> None:
    for key in body:
        if key not in allowed:
            known = ", ".join(allowed) or "none"
            raise ApiError(422, f"unknown field {key!r} (fields: {known})", field=key)


def text_field(body: Mapping[str, Any], key: str, *, required: bool = False) -> str | None:
    """A string field of a JSON body; None when it is left out or ``null`` (the OpenAPI
    document types optional fields as string or null: clients that send every field, unset
    ones as null, get the defaults). A required field must be a string."""
    value = body.get(key)
    if value is None:
        if required:
            given = " (null is not a value)" if key in body else ""
            raise ApiError(422, f"{key!r} is required{given}", field=key)
        return None
    if not isinstance(value, str):
        raise ApiError(422, f"{key!r} must be a string", field=key)
    if len(value) > MAX_TEXT:
        raise ApiError(422, f"{key!r} is longer than {MAX_TEXT} characters", field=key)
    return value


def date_value(text: str, field: str, *, status: int = 400) -> date:
    try:
        value = parse_iso_date(text)
    except ValueError:
        raise ApiError(
            status,
            f"{field} {text!r} is not a date: write YYYY-MM-DD, like 2026-10-16",
            field=field,
        ) from None
    problem = year_problem(value)
    if problem is not None:
        raise ApiError(422, f"{field} {problem}", field=field)
    return value


def whole_number(text: str, field: str, *, digits: int = 18) -> int:
    """A non-negative whole number written in ASCII digits (no sign, at most ``digits``)."""
    if not (text.isascii() and text.isdigit() and len(text) <= digits):
        raise ApiError(
            400,
            f"{field} {text[:40]!r} is not a count: write it in digits, with no sign, like 20",
            field=field,
        )
    return int(text)


def date_field(body: Mapping[str, Any], key: str, *, required: bool = False) -> date | None:
    text = text_field(body, key, required=required)
    return date_value(text, key, status=422) if text is not None else None


def text_query(args: Mapping[str, str], key: str) -> str | None:
    """A query value, or None when the query does not give it. A value given empty
    (``?state=``) is refused rather than read as absent: it is usually a typo or a script's
    unset variable, and answering as if no filter were asked would hide it."""
    text = args.get(key)
    if text == "":
        raise ApiError(400, f"{key} is empty: give a value, or leave {key} out", field=key)
    return text


def int_query(args: Mapping[str, str], key: str, default: int, low: int, high: int) -> int:
    """A whole number from the query, ``default`` when it is absent; an empty value is a 400
    (it is not a number)."""
    text = args.get(key)
    if text is None:
        return default
    value = whole_number(text, key)
    if not low <= value <= high:
        raise ApiError(400, f"{key} must be from {low} to {high}, not {value}", field=key)
    return value
