"""Durations as operators write them: ``30s``, ``5m``, ``1h30m``, ``2d``, ``1d12h``.

A duration is one or more ``<whole number><unit>`` parts with units ``d`` (days), ``h`` (hours),
``m`` (minutes) and ``s`` (seconds), largest unit first, each unit at most once. A bare number
is refused rather than guessed at (seconds? minutes?). ``0s`` is allowed; callers that need a
positive duration check that themselves.
"""

from __future__ import annotations

import re
from datetime import timedelta

from pysched.errors import DurationError

_UNITS = {"d": 86_400, "h": 3_600, "m": 60, "s": 1}
_PART = re.compile(r"(\d+)([dhms])")
_WHOLE = re.compile(r"(?:\d+[dhms])+")


def parse_duration(text: str) -> timedelta:
    """Return the ``timedelta`` that ``text`` spells, or raise ``DurationError`` saying why."""
    cleaned = text.strip().lower()
    if not cleaned:
        raise DurationError("empty duration — write it like 30s, 5m, 1h30m or 2d")
    if not _WHOLE.fullmatch(cleaned):
        hint = f"{cleaned}s" if cleaned.isdigit() else "30s, 5m, 1h30m or 2d"
        raise DurationError(f"bad duration {text!r} — write it like {hint}")
    seconds = 0
    order = "dhms"
    last = -1
    for match in _PART.finditer(cleaned):
        number, unit = match.groups()
        position = order.index(unit)
        if position <= last:
            raise DurationError(
                f"bad duration {text!r}: units must each appear once, largest first (like 1h30m)"
            )
        last = position
        seconds += int(number) * _UNITS[unit]
    if seconds > 3650 * 86_400:
        raise DurationError(f"duration {text!r} is longer than ten years")
    return timedelta(seconds=seconds)


def format_duration(delta: timedelta) -> str:
    """Write ``delta`` the way ``parse_duration`` reads it (``90 s`` -> ``1m30s``)."""
    total = int(delta.total_seconds())
    if total == 0:
        return "0s"
    sign = "-" if total < 0 else ""
    total = abs(total)
    parts: list[str] = []
    for unit, size in _UNITS.items():
        count, total = divmod(total, size)
        if count:
            parts.append(f"{count}{unit}")
    return sign + "".join(parts)
