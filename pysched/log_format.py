"""Log lines for people or for machines: ``--log-format human`` (the default) or ``json``.

A person at a terminal reads ``2026-10-19 02:00:00,003 INFO extract.2026-10-16.1 running``.
journald, Loki, Elasticsearch and friends would rather not parse that: with ``json`` each
record is one JSON object on one line, so a multi-line traceback stays inside its record and
fields need no regular expressions::

    {"time":"2026-10-19T02:00:00.003Z","level":"INFO","logger":"pysched.service",
     "message":"extract.2026-10-16.1 running","event":{"kind":"run_changed",...}}

Keys: ``time`` (ISO 8601, UTC, milliseconds), ``level``, ``logger``, ``message`` (the
%-arguments applied), ``exc`` (the formatted traceback) when the record carries exception
info, ``stack`` when it carries ``stack_info``, and ``event`` when the caller passed structured
data as ``log.info(..., extra={"event": {...}})``. Anything ``event`` holds that JSON cannot
represent is written as its ``str()``, so a log call never fails for its extras.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Literal, TextIO

import orjson

__all__ = ["HUMAN_FORMAT", "JsonFormatter", "LogFormat", "configure_logging"]

LogFormat = Literal["human", "json"]

HUMAN_FORMAT = "%(asctime)s %(levelname)s %(message)s"
"""Time, level, message: what ``pysched serve`` has always written."""


class _HumanFormatter(logging.Formatter):
    """``HUMAN_FORMAT``, one line per record: control characters in the message (a newline, a
    carriage return, an escape sequence in an operator's ``why``, say) are written as escapes
    (``\\n``, ``\\r``, ``\\x1b``), so no text given to pysched can forge a log line or
    repaint a terminal. A traceback still follows its record on the lines after it."""

    def __init__(self) -> None:
        super().__init__(HUMAN_FORMAT)

    def formatMessage(self, record: logging.LogRecord) -> str:
        return one_line(super().formatMessage(record))


def one_line(text: str) -> str:
    """``text`` with each control character (C0 with newline and tab, DEL, C1, the Unicode
    line and paragraph separators) written as an escape (``\\n``, ``\\x1b``): fit for one line
    of a log or a terminal, whoever wrote it."""
    return text if text.isprintable() else text.translate(_ESCAPES)


class _Escapes(dict[int, str]):
    """``str.translate`` table: each control character (C0, DEL, C1) as an escape."""

    def __missing__(self, code: int) -> str | int:
        char = chr(code)
        if code < 0x20 or 0x7F <= code < 0xA0 or char in "\u2028\u2029":
            escaped = repr(char)[1:-1]
            self[code] = escaped
            return escaped
        raise LookupError(code)  # left as it is


_ESCAPES = _Escapes()


class JsonFormatter(logging.Formatter):
    """Formats each record as one line of JSON (see the module docstring for the keys)."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": _iso_utc(record.created),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info:
            line["exc"] = self.formatException(record.exc_info)
        elif record.exc_text:
            line["exc"] = record.exc_text
        if record.stack_info:
            line["stack"] = self.formatStack(record.stack_info)
        event: object = record.__dict__.get("event")
        if isinstance(event, Mapping):
            line["event"] = event
        try:
            data = orjson.dumps(line, default=str, option=orjson.OPT_NON_STR_KEYS)
        except TypeError:
            # orjson refuses some values even with default= (ints past 64 bits, deep
            # nesting); the line must still be written, so the event goes as its repr
            line["event"] = repr(line.get("event"))
            data = orjson.dumps(line, default=str)
        return data.decode()


def _iso_utc(created: float) -> str:
    stamp = datetime.fromtimestamp(created, UTC).isoformat(timespec="milliseconds")
    return stamp.removesuffix("+00:00") + "Z"


def configure_logging(
    level: int = logging.INFO, *, fmt: LogFormat = "human", stream: TextIO | None = None
) -> None:
    """Send every log record at ``level`` and above to ``stream`` (default stderr) as ``fmt``.

    It replaces the root logger's handlers, so calling it again (tests, a second ``serve`` in
    one process) switches format rather than writing each line twice. An unknown ``fmt``
    raises ``ValueError`` (the CLI offers only the two choices).
    """
    if fmt not in ("human", "json"):
        raise ValueError(f"unknown log format {fmt!r}: use 'human' or 'json'")
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    if fmt == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(_HumanFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
