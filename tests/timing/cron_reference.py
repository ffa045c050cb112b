"""A brute-force cron reference for the tests: obviously correct, deliberately slow.

It shares no code with ``pysched.timing.cron``: it has its own tiny parser (valid input only)
and decides firings by looking at every single minute of real (UTC) time:

- a wildcard job fires at every real minute whose local wall time matches;
- a fixed-time job fires at a matching wall time that happens once, and for a wall time that
  happens twice at the first occurrence (or the second, or both, by the repeat policy);
- at the instant a clock jumps forward, a fixed-time job with gap policy "jump" fires once if
  any skipped wall time matches (and that instant is one firing even if it matches itself too).

The minute-by-minute scan assumes zone transitions fall on whole UTC minutes, true of every zone
the tests use.
"""

from __future__ import annotations

import calendar
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta, tzinfo

MINUTE = timedelta(minutes=1)
_MONTHS = ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC")
_DAYS = ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")
_ALIASES = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}


def _number(text: str, names: tuple[str, ...], base: int) -> int:
    if text.upper() in names:
        return names.index(text.upper()) + base
    return int(text)


def _values(text: str, low: int, high: int, names: tuple[str, ...] = (), base: int = 0) -> set[int]:
    """The plain values of a field: '*', 'a', 'a-b', each optionally '/step'."""
    result: set[int] = set()
    for item in text.split(","):
        part, _, step = item.partition("/")
        if part == "*":
            first, last = low, high
        elif "-" in part:
            a, b = part.split("-")
            first, last = _number(a, names, base), _number(b, names, base)
        else:
            first = last = _number(part, names, base)
        result.update(range(first, last + 1, int(step) if step else 1))
    return result


@dataclass
class RefCron:
    """A cron expression, parsed the simple way."""

    minutes: set[int]
    hours: set[int]
    days: set[int]
    last_day: bool
    months: set[int]
    weekdays: set[int]
    nth: set[tuple[int, int]]
    last_weekdays: set[int]
    dom_star: bool
    dow_star: bool
    fixed_time: bool

    @classmethod
    def parse(cls, text: str) -> RefCron:
        text = _ALIASES.get(text.strip().lower(), text)
        minute, hour, dom, month, dow = text.split()
        days: set[int] = set()
        last_day = False
        for item in dom.split(","):
            if item.upper() == "L":
                last_day = True
            else:
                days |= _values(item, 1, 31)
        weekdays: set[int] = set()
        nth: set[tuple[int, int]] = set()
        last_weekdays: set[int] = set()
        for item in dow.split(","):
            if "#" in item:
                day, n = item.split("#")
                nth.add((_number(day, _DAYS, 0) % 7, int(n)))
            elif item.upper().endswith("L"):
                last_weekdays.add(_number(item[:-1], _DAYS, 0) % 7)
            else:
                weekdays |= {v % 7 for v in _values(item, 0, 7, _DAYS, 0)}
        return cls(
            minutes=_values(minute, 0, 59),
            hours=_values(hour, 0, 23),
            days=days,
            last_day=last_day,
            months=_values(month, 1, 12, _MONTHS, 1),
            weekdays=weekdays,
            nth=nth,
            last_weekdays=last_weekdays,
            dom_star=dom.startswith("*"),
            dow_star=dow.startswith("*"),
            fixed_time=not (minute.startswith("*") or hour.startswith("*")),
        )

    def day_matches(self, d: date) -> bool:
        """The month and day fields, by the Vixie rule, for one date."""
        if d.month not in self.months:
            return False
        length = calendar.monthrange(d.year, d.month)[1]
        weekday = (d.weekday() + 1) % 7  # cron counts from Sunday
        dom_ok = d.day in self.days or (self.last_day and d.day == length)
        dow_ok = (
            weekday in self.weekdays
            or (weekday, (d.day - 1) // 7 + 1) in self.nth
            or (weekday in self.last_weekdays and d.day + 7 > length)
        )
        if self.dom_star or self.dow_star:
            return dom_ok and dow_ok
        return dom_ok or dow_ok

    def wall_matches(self, wall: datetime) -> bool:
        return wall.minute in self.minutes and wall.hour in self.hours and self.day_matches(wall)


def reference_firings(
    text: str,
    start: datetime,
    end: datetime,
    tz: tzinfo,
    *,
    gap: str = "jump",
    repeat: str = "first",
) -> list[str]:
    """``str()`` of every firing in ``(start, end]``, by scanning every UTC minute.

    ``gap`` ("jump"/"skip") and ``repeat`` ("first"/"second"/"both") apply to fixed-time jobs.
    """
    cron = RefCron.parse(text)
    u = start.astimezone(UTC).replace(second=0, microsecond=0) + MINUTE
    end = end.astimezone(UTC)
    previous = (u - MINUTE).astimezone(tz)
    firings: list[str] = []
    while u <= end:
        local = u.astimezone(tz)
        wall = local.replace(tzinfo=None)
        fires = False
        if not cron.fixed_time:
            fires = cron.wall_matches(wall)
        else:
            if cron.wall_matches(wall):
                twice = local.replace(fold=1 - local.fold).utcoffset() != local.utcoffset()
                if not twice:
                    fires = True
                elif local.fold == 0:
                    fires = repeat in ("first", "both")
                else:
                    fires = repeat in ("second", "both")
            jumped = local.utcoffset() > previous.utcoffset()  # type: ignore[operator]
            if gap == "jump" and jumped:
                skipped = previous.replace(tzinfo=None) + MINUTE
                while skipped < wall:
                    fires = fires or cron.wall_matches(skipped)
                    skipped += MINUTE
        if fires:
            firings.append(str(local))
        previous = local
        u += MINUTE
    return firings


def reference_first_date(text: str, after: date, years: int) -> date | None:
    """The first date after ``after`` the day fields allow, looking ``years`` years ahead."""
    cron = RefCron.parse(text)
    d = after + timedelta(days=1)
    stop = after + timedelta(days=366 * years)
    while d <= stop:
        if cron.day_matches(d):
            return d
        d += timedelta(days=1)
    return None
