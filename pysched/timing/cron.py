"""Cron expressions: when a schedule fires, in a time zone, across daylight-saving changes.

A :class:`Cron` is parsed once (``Cron.parse("30 2 * * MON-FRI")``) and then asked for firings:
``next_after(instant, tz)`` gives the first firing strictly after an aware instant, as an aware
datetime in ``tz``; ``iter_after`` yields them one after another. The syntax of the five fields,
the Vixie day rule and the ``L``/``#``/``L`` extensions are described in
:mod:`pysched.timing.cron_fields`; this module adds the aliases (``@daily`` ...), the search and
the daylight-saving rule.

**The daylight-saving rule** (cronie's). A job is *fixed-time* when neither its minute nor its
hour field text starts with ``*`` (``30 2 * * *``), and *wildcard* otherwise (``*/15 * * * *``,
``30 * * * *``).

- A fixed-time job whose wall time is skipped (spring forward) fires once, at the instant the
  clock jumps: New York's ``30 2 * * *`` fires at 03:00 EDT on 2026-03-08. Several matches in one
  gap (``0,30 2 * * *``), and a normal match exactly at the jump, make one firing.
- A fixed-time job whose wall time happens twice (fall back) fires once, at the first occurrence.
- A wildcard job follows real elapsed time: nothing for skipped wall times, and a firing at each
  real occurrence of a repeated wall time, in true order (01:45 EDT, then 01:00 EST, ...).
- :class:`DstPolicy` overrides the rule for fixed-time jobs only: ``gap=SKIP`` drops firings in a
  gap; ``repeat=SECOND`` fires at the second occurrence only, ``repeat=BOTH`` at both. Wildcard
  jobs ignore the policy: firing on every real minute that matches is already exact for them.

Gaps and repeats are read from the zone itself (a wall time is in a gap when its two folds give
a later offset for fold=1, and repeated when fold=1 gives an earlier one), so any zone works,
including 30-minute shifts (Australia/Lord_Howe) and the southern hemisphere.

**How the search works.** Candidate wall times are walked in order by a field-increment search
that skips whole months, days and hours that cannot match. Each candidate maps to zero, one or two
real instants by the rule above. The walk starts just after the instant's own wall time — or at
the start of a repeated hour when the instant lies in its first pass, since those wall times come
round again — and stops at the first candidate that no later candidate can beat: once outside a
repeated interval, wall order and real order agree. It assumes a zone changes its offset at most
once within a few hours, which holds for every zone in use today.

**Every search is bounded.** ``parse`` rejects expressions that can never fire, and the walk gives
up after :data:`HORIZON_YEARS` years of calendar with :class:`~pysched.errors.CronError`. The
horizon is one full Gregorian cycle (after 400 years the calendar repeats exactly, weekdays
included), so an expression that ``parse`` accepts always fires within it, however rare
(``0 0 * 2 MON#5``, a 29 February that is a Monday, waits up to 40 years); a search that
reaches it could never succeed.
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

from pysched.errors import CronError
from pysched.timing.cron_fields import CronFields, compile_fields

__all__ = ["HORIZON_YEARS", "Cron", "DstGap", "DstPolicy", "DstRepeat"]

HORIZON_YEARS = 400
"""How many years of calendar a search looks at before giving up (one Gregorian cycle)."""

_ALIASES = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
_FIELD_NAMES = "minute hour day-of-month month day-of-week"


class DstGap(enum.Enum):
    """What a fixed-time job does when its wall time is skipped (spring forward)."""

    JUMP = "jump"
    """Fire once, at the instant the clock jumps (the default)."""
    SKIP = "skip"
    """Do not fire for the skipped wall time."""


class DstRepeat(enum.Enum):
    """What a fixed-time job does when its wall time happens twice (fall back)."""

    FIRST = "first"
    """Fire at the first occurrence only (the default)."""
    SECOND = "second"
    """Fire at the second occurrence only."""
    BOTH = "both"
    """Fire at both occurrences."""


@dataclass(frozen=True, slots=True, kw_only=True)
class DstPolicy:
    """How a fixed-time job treats daylight-saving gaps and repeats; wildcard jobs ignore it."""

    gap: DstGap = DstGap.JUMP
    repeat: DstRepeat = DstRepeat.FIRST


_DEFAULT_POLICY = DstPolicy()


@dataclass(frozen=True, slots=True, kw_only=True)
class Cron:
    """A parsed cron expression. Equal, and hashed, by its text; ``str()`` gives the text back.

    Build one with :meth:`parse` (or ``Cron(text=...)``, which is the same): a bad expression,
    or one that can never fire, raises :class:`~pysched.errors.CronError` there and then.
    """

    text: str
    _fields: CronFields = field(init=False, repr=False, compare=False)
    _fixed_time: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        fields = _compile(self.text)
        object.__setattr__(self, "_fields", fields)
        fixed = not (fields.minute.text.startswith("*") or fields.hour.text.startswith("*"))
        object.__setattr__(self, "_fixed_time", fixed)

    @classmethod
    def parse(cls, text: str) -> Cron:
        """Parse ``text``: five fields or an alias (``@yearly @annually @monthly @weekly
        @daily @midnight @hourly``, any case).

        Raises :class:`~pysched.errors.CronError` whose ``field`` and ``token`` name the
        mistake (``field`` is None for mistakes of the whole text: empty, wrong number of
        fields, unknown alias), or that says why the expression can never fire.
        """
        return cls(text=text)

    def __str__(self) -> str:
        return self.text

    @property
    def is_fixed_time(self) -> bool:
        """True when neither the minute nor the hour field text starts with ``*``.

        Fixed-time jobs get the daylight-saving rule for fixed times (and honour a
        :class:`DstPolicy`); the others follow real elapsed time.
        """
        return self._fixed_time

    def matches_date(self, d: date) -> bool:
        """Whether the month and day fields allow the local date ``d`` (times are not looked at).

        Useful for forecasts and calendars: "does this job run at all on that day?".
        """
        fields = self._fields
        if d.month not in fields.month.values:
            return False
        first_weekday = (d.replace(day=1).weekday() + 1) % 7
        return fields.day_table(d.year, d.month, first_weekday)[d.day] == d.day

    def next_after(
        self, instant: datetime, tz: ZoneInfo, *, dst: DstPolicy | None = None
    ) -> datetime:
        """The first firing strictly after ``instant``, as an aware datetime in ``tz``.

        ``instant`` must be aware (any zone); a naive one raises :class:`ValueError`. The result
        carries the right ``fold``, so its offset is right even in a repeated hour. ``dst``
        overrides the daylight-saving rule for fixed-time jobs (see the module docstring) and is
        ignored for wildcard ones.

        Raises :class:`~pysched.errors.CronError` when no firing lies within
        :data:`HORIZON_YEARS` years, or before the end of the year 9999.
        """
        if instant.utcoffset() is None:
            raise ValueError(f"instant must be timezone-aware, got naive {instant.isoformat()}")
        policy = (dst or _DEFAULT_POLICY) if self._fixed_time else None
        try:
            found = _search(self._fields, instant, tz, policy)
        except OverflowError:
            raise CronError(
                f"no firing of '{self.text}' after {instant.isoformat()}: the search ran past "
                "the years 1-9999 that dates can have"
            ) from None
        if found is None:
            raise CronError(
                f"no firing of '{self.text}' within {HORIZON_YEARS} years after "
                f"{instant.isoformat()} (nor before the end of year 9999)"
            )
        return found

    def iter_after(
        self, instant: datetime, tz: ZoneInfo, *, dst: DstPolicy | None = None
    ) -> Iterator[datetime]:
        """Yield every firing after ``instant``, in real-time order, lazily and forever.

        Each firing is strictly later than the one before (no duplicates, even across a
        daylight-saving change). Arguments and errors are those of :meth:`next_after`; an error
        surfaces from the ``next()`` that meets it.
        """
        current = instant
        while True:
            current = self.next_after(current, tz, dst=dst)
            yield current


@functools.lru_cache(maxsize=1024)
def _compile(text: str) -> CronFields:
    """Parse ``text``; cached, since a config often repeats expressions and fields are frozen."""
    stripped = text.strip()
    if not stripped:
        raise CronError("empty cron expression", token=text)
    if stripped.startswith("@"):
        alias = _ALIASES.get(stripped.lower())
        if alias is None:
            known = ", ".join(_ALIASES)
            if len(stripped.split()) > 1:
                message = f"an alias stands alone, found '{stripped}'"
            else:
                message = f"unknown alias '{stripped}' (known: {known})"
            raise CronError(message, token=stripped)
        return compile_fields(alias.split(), expression=text)
    texts = stripped.split()
    if len(texts) != 5:
        raise CronError(
            f"expected 5 fields ({_FIELD_NAMES}), found {len(texts)} in '{text}'", token=text
        )
    return compile_fields(texts, expression=text)


_EPOCH_ORDINAL = date(1970, 1, 1).toordinal()
_DAY = 86400
# Month lengths outside February, indexed by month (index 0 unused).
_LENGTHS = (0, 31, 0, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)

_Wall = tuple[int, int, int, int, int]
"""A wall time as (year, month, day, hour, minute); minute may be 60, meaning the next hour."""


def _seconds(offset: timedelta | None) -> int:
    return 0 if offset is None else offset.days * _DAY + offset.seconds


def _next_wall(fields: CronFields, start: _Wall, last_year: int) -> tuple[_Wall, int] | None:
    """The first matching wall time at or after ``start``, with its "wall seconds" (seconds
    since 1970-01-01 00:00 read as if the wall clock were UTC), or None when there is none up to
    the end of ``last_year``.

    Each step moves one field to its next allowed value and resets the finer ones, so the loop
    runs a handful of times per call, not once per minute. A month's matching days come from the
    table for its length and the weekday of its first day (``ordinal % 7`` counts from Sunday,
    as cron does).
    """
    year, month, day, hour, minute = start
    next_month, next_hour, next_minute = fields.next_month, fields.next_hour, fields.next_minute
    day_tables = fields.day_tables
    while year <= last_year:
        allowed_month = next_month[month]
        if allowed_month == 0:
            year, month, day, hour, minute = year + 1, 1, 1, 0, 0
            continue
        if allowed_month != month:
            month, day, hour, minute = allowed_month, 1, 0, 0
        first = date(year, month, 1).toordinal()
        if month == 2:
            leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
            length = 29 if leap else 28
        else:
            length = _LENGTHS[month]
        allowed_day = day_tables[first % 7 * 4 + length - 28][day]
        if allowed_day == 0:
            month, day, hour, minute = month + 1, 1, 0, 0
            continue
        if allowed_day != day:
            day, hour, minute = allowed_day, 0, 0
        allowed_hour = next_hour[hour]
        if allowed_hour < 0:
            day, hour, minute = day + 1, 0, 0
            continue
        if allowed_hour != hour:
            hour, minute = allowed_hour, 0
        allowed_minute = next_minute[minute]
        if allowed_minute < 0:
            hour, minute = hour + 1, 0
            continue
        wall = (year, month, day, hour, allowed_minute)
        return wall, (first + day - 1 - _EPOCH_ORDINAL) * _DAY + hour * 3600 + allowed_minute * 60
    return None


def _offset_change(tz: ZoneInfo, low: int, high: int, target: int) -> int:
    """The first epoch second in ``(low, high]`` at which ``tz`` has offset ``target``, given
    that it has another offset at ``low`` and ``target`` at ``high`` (one change between).

    A binary search to the second, because zone data is whole seconds.
    """
    while high - low > 1:
        mid = (low + high) // 2
        if _seconds(tz.utcoffset(datetime.fromtimestamp(mid, tz))) == target:
            high = mid
        else:
            low = mid
    return high


def _search(
    fields: CronFields, instant: datetime, tz: ZoneInfo, policy: DstPolicy | None
) -> datetime | None:
    """The first firing strictly after ``instant``, or None within the horizon.

    ``policy`` is None for a wildcard job (every real occurrence fires, gaps never do).
    Instants are compared as integer seconds since the epoch: a whole-second firing ``c`` is
    after ``instant`` exactly when ``c`` is after ``floor(instant)``. (Aware datetimes sharing a
    tzinfo compare by wall time and ignore ``fold``, which would be wrong in a repeated hour.)
    """
    if instant.tzinfo is tz:
        # ``astimezone`` returns ``instant`` unchanged when it already carries ``tz``, even if it
        # names a wall time that never happened; going through UTC normalises it.
        instant = instant.astimezone(UTC)
    local = instant.astimezone(tz)
    offset = _seconds(tz.utcoffset(local))
    year, month, day, hour, minute = local.year, local.month, local.day, local.hour, local.minute
    forward_wall = (local.toordinal() - _EPOCH_ORDINAL) * _DAY + hour * 3600 + minute * 60 + 60
    after = forward_wall - 60 + local.second - offset
    forward: _Wall = (year, month, day, hour, minute + 1)
    position = forward
    if not local.fold and (policy is None or policy.repeat is not DstRepeat.FIRST):
        twin = datetime(year, month, day, hour, minute, 0, 0, tz, fold=1)
        second_offset = _seconds(tz.utcoffset(twin))
        if offset > second_offset:
            # ``instant`` is in the first pass of a repeated interval: the wall times just
            # before it come round again (second occurrences), so walk from its start.
            change = _offset_change(tz, after, after + offset - second_offset, second_offset)
            back = datetime.fromtimestamp(change, tz)
            position = (back.year, back.month, back.day, back.hour, back.minute)
    last_year = min(year + HORIZON_YEARS, 9999)

    best: int | None = None  # epoch seconds of the best firing so far
    best_local: datetime | None = None
    while (found := _next_wall(fields, position, last_year)) is not None:
        (year, month, day, hour, minute), wall = found
        first = datetime(year, month, day, hour, minute, 0, 0, tz)
        second = datetime(year, month, day, hour, minute, 0, 0, tz, fold=1)
        offset, second_offset = _seconds(tz.utcoffset(first)), _seconds(tz.utcoffset(second))
        at = wall - offset
        if offset == second_offset:
            if at > after and (best is None or at < best):
                best, best_local = at, first
        elif offset > second_offset:  # a repeated wall time
            repeat = DstRepeat.BOTH if policy is None else policy.repeat
            if repeat is not DstRepeat.SECOND and at > after and (best is None or at < best):
                best, best_local = at, first
            again = wall - second_offset
            if repeat is not DstRepeat.FIRST and again > after and (best is None or again < best):
                best, best_local = again, second
        elif policy is not None and policy.gap is DstGap.JUMP:  # a skipped wall time
            # The gap's wall times lie between the move's instant plus the old offset and
            # the instant plus the new one, so the move is within this window.
            jump_at = _offset_change(tz, wall - second_offset, wall - offset, second_offset)
            jump = datetime.fromtimestamp(jump_at, tz)
            if jump_at > after and (best is None or jump_at < best):
                best, best_local = jump_at, jump
        if best is not None and (
            offset <= second_offset or at >= best or (at <= after and wall >= forward_wall)
        ):
            # Outside a repeated interval wall order is real order, so nothing later can be
            # earlier. Inside one, later candidates cannot win once their first occurrence is
            # later than the best, nor when ``instant`` is in the second pass (every first
            # occurrence in the interval is then already past).
            return best_local
        if best is not None and wall < forward_wall:
            # Walking the second pass from its start: the first match found there is the
            # earliest second occurrence, so skip ahead to the wall times after ``instant``.
            position = forward
        else:
            position = (year, month, day, hour, minute + 1)
    return best_local
