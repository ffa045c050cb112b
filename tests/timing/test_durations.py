import contextlib
from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pysched.errors import DurationError
from pysched.timing.durations import format_duration, parse_duration


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("30s", timedelta(seconds=30)),
        ("5m", timedelta(minutes=5)),
        ("1h30m", timedelta(hours=1, minutes=30)),
        ("2d", timedelta(days=2)),
        ("1d2h3m4s", timedelta(days=1, hours=2, minutes=3, seconds=4)),
        (" 10M ", timedelta(minutes=10)),
        ("0s", timedelta(0)),
    ],
)
def test_parses(text: str, expected: timedelta) -> None:
    assert parse_duration(text) == expected


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("", "empty"),
        ("30", "30s"),
        ("1.5h", "bad duration"),
        ("30m1h", "largest first"),
        ("1h1h", "largest first"),
        ("-5m", "bad duration"),
        ("5 m", "bad duration"),
        ("99999d", "ten years"),
        ("5w", "bad duration"),
    ],
)
def test_refuses(text: str, fragment: str) -> None:
    with pytest.raises(DurationError, match=fragment):
        parse_duration(text)


@given(st.integers(min_value=0, max_value=3650 * 86_400))
def test_format_round_trips(seconds: int) -> None:
    delta = timedelta(seconds=seconds)
    assert parse_duration(format_duration(delta)) == delta


@given(st.text(max_size=12))
def test_never_another_exception(text: str) -> None:
    with contextlib.suppress(DurationError):
        parse_duration(text)
