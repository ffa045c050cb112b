"""Log lines: human by default, one JSON object per line with --log-format json."""

from __future__ import annotations

import io
import json
import logging
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from pysched import log_format
from pysched.log_format import configure_logging


@pytest.fixture(autouse=True)
def restore_root_logger() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


def lines(stream: io.StringIO) -> list[str]:
    return stream.getvalue().splitlines()


def test_public_names() -> None:
    assert log_format.__all__ == ["HUMAN_FORMAT", "JsonFormatter", "LogFormat", "configure_logging"]


def test_human_lines_are_unchanged() -> None:
    stream = io.StringIO()
    configure_logging(stream=stream)
    logging.getLogger("pysched.service").info("serving %d jobs", 5)
    logging.getLogger("pysched.engine").debug("not shown at INFO")
    [line] = lines(stream)
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} INFO serving 5 jobs", line), line


def test_human_is_the_default_and_goes_to_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging()
    logging.getLogger("x").warning("careful")
    assert capsys.readouterr().err.endswith(" WARNING careful\n")


def test_json_lines() -> None:
    stream = io.StringIO()
    configure_logging(logging.DEBUG, fmt="json", stream=stream)
    before = datetime.now(UTC)
    log = logging.getLogger("pysched.service")
    log.info("serving %d jobs", 5)
    log.debug("a second line\nwith a newline")
    after = datetime.now(UTC)
    first, second = (json.loads(line) for line in lines(stream))
    assert first.keys() == {"time", "level", "logger", "message"}
    assert (first["level"], first["logger"], first["message"]) == (
        "INFO",
        "pysched.service",
        "serving 5 jobs",
    )
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", first["time"])
    at = datetime.fromisoformat(first["time"])
    assert before - timedelta(milliseconds=1) <= at <= after
    assert second["message"] == "a second line\nwith a newline"


def test_json_carries_the_exception() -> None:
    stream = io.StringIO()
    configure_logging(fmt="json", stream=stream)
    try:
        raise OSError(28, "No space left on device")
    except OSError:
        logging.getLogger("pysched.store").exception("the journal failed")
    [line] = lines(stream)
    record = json.loads(line)
    assert record["message"] == "the journal failed"
    assert record["level"] == "ERROR"
    assert record["exc"].startswith("Traceback (most recent call last):")
    assert record["exc"].endswith("OSError: [Errno 28] No space left on device")


def test_json_carries_structured_events() -> None:
    stream = io.StringIO()
    configure_logging(fmt="json", stream=stream)
    log = logging.getLogger("pysched.service")
    at = datetime(2026, 10, 19, 2, tzinfo=UTC)
    log.info("extract running", extra={"event": {"kind": "run_changed", "at": at, "n": 1}})
    log.info("odd", extra={"event": {"set": {1}, 2: "int key"}})
    log.info("not a mapping", extra={"event": "ignored"})
    first, second, third = (json.loads(line) for line in lines(stream))
    assert first["event"] == {"kind": "run_changed", "at": "2026-10-19T02:00:00+00:00", "n": 1}
    assert second["event"] == {"set": "{1}", "2": "int key"}
    assert "event" not in third


def test_json_survives_what_json_cannot_hold() -> None:
    stream = io.StringIO()
    configure_logging(fmt="json", stream=stream)
    logging.getLogger("x").info("big", extra={"event": {"n": 2**70}})
    [line] = lines(stream)
    assert json.loads(line)["event"] == repr({"n": 2**70})


def test_unknown_format_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown log format 'xml'"):
        configure_logging(fmt="xml")  # type: ignore[arg-type]


def test_configuring_again_replaces_the_handler() -> None:
    first, second = io.StringIO(), io.StringIO()
    configure_logging(stream=first)
    configure_logging(fmt="json", stream=second)
    logging.getLogger("x").info("once")
    assert lines(first) == []
    assert len(lines(second)) == 1


def test_a_human_line_escapes_control_characters_so_nothing_forges_a_line() -> None:
    """An operator's ``why`` (or any text given to pysched) with a newline, a carriage return
    or an escape sequence must not start a second, fake log line or repaint a terminal."""
    stream = io.StringIO()
    configure_logging(stream=stream)
    why = "late\n2026-12-01 05:20:00,000 WARNING token admin revoked\r\x1b[2J café"
    logging.getLogger("pysched.service").info("hold: %s", why)
    lines = stream.getvalue().splitlines()
    assert len(lines) == 1
    assert lines[0].endswith(
        "INFO hold: late\\n2026-12-01 05:20:00,000 WARNING token admin revoked\\r\\x1b[2J café"
    )
