"""The five fields of a cron expression: parsing each one, and deciding which days match.

A cron expression is five fields (see :mod:`pysched.timing.cron` for the expression as a whole).
This module knows what one field may contain and turns its text into values, and it joins the two
day fields into one rule for "does this day of this month match?".

Field grammar (every field is a comma-separated list of items)::

    item   := '*' ['/' step]            every value, or every step-th from the low end
            | value '-' value ['/' step]  an inclusive range, optionally stepped
            | value                     one value
    value  := digits | name             names only in month (JAN-DEC) and day-of-week (SUN-SAT),
                                        in any letter case
    extensions (not in POSIX or Vixie cron):
      day-of-month: 'L'                 the last day of the month
      day-of-week:  value '#' n         the n-th such weekday of the month, n in 1-5 (MON#1)
                    value 'L'           the last such weekday of the month (FRIL, 5L)

Day-of-week counts 0-7 with both 0 and 7 meaning Sunday. A bare ``a/n`` is rejected rather than
read as ``a-<high>/n`` (cronie's reading) or ``a`` (some others'), because the two readings differ
and a schedule must never mean something its author did not intend; the error says what to write.
A step larger than the whole field (``*/90`` in minutes) is rejected too: it selects only the first
value, which is never what its author meant (cron cannot say "every 90 minutes").

**The Vixie rule.** A field counts as *restricted* unless its text starts with ``*``. When both day
fields are restricted, a day matches if *either* matches (``0 0 1,15 * MON`` fires on the 1st, the
15th and every Monday); otherwise a day must match both. Because the test is on the text, ``*/2``
in day-of-month counts as unrestricted, so ``0 0 */2 * MON`` means "odd-numbered days that are
Mondays", not "odd days or Mondays" — cron's own quirk, kept for compatibility. The extensions
``L``, ``#`` and ``L`` never start with ``*`` and so always count as restricted.

Every error is a :class:`~pysched.errors.CronError` whose ``field`` names the field and whose
``token`` is the smallest piece of text at fault.
"""

from __future__ import annotations

from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from pysched.errors import CronError

__all__ = [
    "DAY_OF_MONTH",
    "DAY_OF_WEEK",
    "FIELD_ORDER",
    "HOUR",
    "MINUTE",
    "MONTH",
    "CronFields",
    "DayOfMonthField",
    "DayOfWeekField",
    "FieldSpec",
    "ValueField",
    "compile_fields",
    "month_length",
    "parse_day_of_month",
    "parse_day_of_week",
    "parse_value_field",
]

MONTH_NAMES = ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC")
WEEKDAY_NAMES = ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")
_MONTH_TITLES = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
# The month lengths a month can have, over all years: February has 28 or 29 days.
_POSSIBLE_LENGTHS = (
    (31,),
    (28, 29),
    (31,),
    (30,),
    (31,),
    (30,),
    (31,),
    (31,),
    (30,),
    (31,),
    (30,),
    (31,),
)
# Longer numbers are out of range for every field; checking length first keeps int() cheap and
# away from Python's limit on converting very long digit strings.
_MAX_DIGITS = 4


@dataclass(frozen=True, slots=True, kw_only=True)
class FieldSpec:
    """What one field may hold: its name (as used in errors), its bounds and its names.

    ``names[i]`` stands for the value ``low + i`` for months (``JAN`` is 1) and ``i`` for
    weekdays (``SUN`` is 0); ``name_base`` says which.
    """

    name: str
    low: int
    high: int
    names: tuple[str, ...] = ()
    name_base: int = 0

    def describe_names(self) -> str:
        """``JAN-DEC`` style summary of the names, for error messages."""
        return f"{self.names[0]}-{self.names[-1]}" if self.names else ""


MINUTE = FieldSpec(name="minute", low=0, high=59)
HOUR = FieldSpec(name="hour", low=0, high=23)
DAY_OF_MONTH = FieldSpec(name="day-of-month", low=1, high=31)
MONTH = FieldSpec(name="month", low=1, high=12, names=MONTH_NAMES, name_base=1)
DAY_OF_WEEK = FieldSpec(name="day-of-week", low=0, high=7, names=WEEKDAY_NAMES, name_base=0)
FIELD_ORDER = (MINUTE, HOUR, DAY_OF_MONTH, MONTH, DAY_OF_WEEK)


@dataclass(frozen=True, slots=True, kw_only=True)
class ValueField:
    """A parsed minute, hour or month field: the text and the values it allows."""

    text: str
    values: frozenset[int]

    @property
    def restricted(self) -> bool:
        """False when the text starts with ``*`` (the Vixie test, see the module docstring)."""
        return not self.text.startswith("*")


@dataclass(frozen=True, slots=True, kw_only=True)
class DayOfMonthField:
    """A parsed day-of-month field: plain days (1-31) and whether ``L`` (last day) is listed."""

    text: str
    days: frozenset[int]
    last: bool = False

    @property
    def restricted(self) -> bool:
        """False when the text starts with ``*`` (the Vixie test, see the module docstring)."""
        return not self.text.startswith("*")


@dataclass(frozen=True, slots=True, kw_only=True)
class DayOfWeekField:
    """A parsed day-of-week field, weekdays counted 0-6 from Sunday (7 is folded into 0).

    ``weekdays`` match every such weekday; ``nth`` holds ``(weekday, n)`` pairs from ``DOW#n``;
    ``last`` holds weekdays from ``DOWL`` (the last such weekday of the month).
    """

    text: str
    weekdays: frozenset[int]
    nth: frozenset[tuple[int, int]] = frozenset()
    last: frozenset[int] = frozenset()

    @property
    def restricted(self) -> bool:
        """False when the text starts with ``*`` (the Vixie test, see the module docstring)."""
        return not self.text.startswith("*")


def _fail(spec: FieldSpec, detail: str, token: str, expression: str) -> CronError:
    return CronError(f"{spec.name}: {detail} in '{expression}'", field=spec.name, token=token)


def _parse_value(spec: FieldSpec, token: str, expression: str) -> int:
    """One number or name, checked against the field's bounds."""
    if token.isascii() and token.isdigit():
        if len(token.lstrip("0")) > _MAX_DIGITS or not spec.low <= int(token) <= spec.high:
            detail = f"{token} is out of range {spec.low}-{spec.high}"
            raise _fail(spec, detail, token, expression)
        return int(token)
    if spec.names and token.isascii() and token.isalpha():
        upper = token.upper()
        if upper in spec.names:
            return spec.names.index(upper) + spec.name_base
        detail = f"unknown name '{token}' (names are {spec.describe_names()})"
        raise _fail(spec, detail, token, expression)
    if token == "?":
        raise _fail(spec, "'?' is Quartz syntax, not cron; write '*'", token, expression)
    if not token:
        raise _fail(spec, "a number is missing", token, expression)
    raise _fail(spec, f"'{token}' is not a number", token, expression)


def _parse_step(spec: FieldSpec, item: str, step_text: str, expression: str) -> int:
    if not (step_text.isascii() and step_text.isdigit()):
        raise _fail(spec, f"step '{step_text}' is not a number", item, expression)
    span = spec.high - spec.low + 1
    step = int(step_text) if len(step_text.lstrip("0")) <= _MAX_DIGITS else span + 1
    if step < 1:
        detail = f"'{item}' has step {step_text}; a step must be at least 1"
        raise _fail(spec, detail, item, expression)
    if step > span:
        detail = (
            f"'{item}' steps by {step_text}, more than the whole range {spec.low}-{spec.high} "
            "(it would select only the first value)"
        )
        raise _fail(spec, detail, item, expression)
    return step


def _parse_plain_item(spec: FieldSpec, item: str, expression: str) -> range:
    """``*``, ``*/n``, ``a``, ``a-b`` or ``a-b/n`` as a range of values."""
    base, slash, step_text = item.partition("/")
    step = _parse_step(spec, item, step_text, expression) if slash else 1
    if base == "*":
        return range(spec.low, spec.high + 1, step)
    low_text, dash, high_text = base.partition("-")
    if not low_text or (dash and not high_text):
        raise _fail(spec, f"'{item}' is missing a number", item, expression)
    low = _parse_value(spec, low_text, expression)
    if not dash:
        if slash:
            detail = (
                f"'{item}' steps from a single value; write {low_text}-{spec.high}/{step_text} "
                f"for every {step_text} from {low_text}"
            )
            raise _fail(spec, detail, item, expression)
        return range(low, low + 1)
    high = _parse_value(spec, high_text, expression)
    if low > high:
        hint = "ranges do not wrap around, so list the two parts instead"
        if spec is DAY_OF_WEEK and high == 0:
            hint = f"Sunday is also 7, so write {low_text}-7"
        detail = f"range '{base}' is reversed ({low} is after {high}); {hint}"
        raise _fail(spec, detail, item, expression)
    return range(low, high + 1, step)


def _split_items(spec: FieldSpec, text: str, expression: str) -> list[str]:
    items = text.split(",")
    if any(not item for item in items):
        raise _fail(spec, f"empty item in list '{text}'", text, expression)
    return items


def parse_value_field(spec: FieldSpec, text: str, *, expression: str) -> ValueField:
    """Parse a minute, hour or month field; ``expression`` is quoted in error messages.

    Raises :class:`~pysched.errors.CronError` naming ``spec.name`` and the offending token.
    """
    values: set[int] = set()
    for item in _split_items(spec, text, expression):
        values.update(_parse_plain_item(spec, item, expression))
    return ValueField(text=text, values=frozenset(values))


def parse_day_of_month(text: str, *, expression: str) -> DayOfMonthField:
    """Parse a day-of-month field, accepting the ``L`` extension as a list item."""
    spec = DAY_OF_MONTH
    days: set[int] = set()
    last = False
    for item in _split_items(spec, text, expression):
        if item.upper() == "L":
            last = True
        elif "L" in item.upper() and item.isascii():
            detail = f"'{item}': L (the last day of the month) must stand alone as a list item"
            raise _fail(spec, detail, item, expression)
        else:
            days.update(_parse_plain_item(spec, item, expression))
    return DayOfMonthField(text=text, days=frozenset(days), last=last)


def _is_last_weekday(item: str) -> bool:
    """``5L`` or ``FRIL``; a three-letter word such as ``JUL`` is a (wrong) name instead."""
    return len(item) >= 2 and item[-1] in "Ll" and not (item.isalpha() and len(item) <= 3)


def parse_day_of_week(text: str, *, expression: str) -> DayOfWeekField:
    """Parse a day-of-week field, accepting the ``DOW#n`` and ``DOWL`` extensions as list items."""
    spec = DAY_OF_WEEK
    weekdays: set[int] = set()
    nth: set[tuple[int, int]] = set()
    last: set[int] = set()
    for item in _split_items(spec, text, expression):
        if "#" in item:
            day_text, _, n_text = item.partition("#")
            if not day_text:
                raise _fail(spec, f"'{item}' is missing a weekday before '#'", item, expression)
            day = _parse_value(spec, day_text, expression) % 7
            if n_text not in {"1", "2", "3", "4", "5"}:
                detail = f"'{item}': the n in DOW#n must be 1-5 (MON#1 is the first Monday)"
                raise _fail(spec, detail, item, expression)
            nth.add((day, int(n_text)))
        elif _is_last_weekday(item):
            last.add(_parse_value(spec, item[:-1], expression) % 7)
        elif item.upper() == "L":
            detail = "'L' needs a weekday before it (5L or FRIL is the last Friday of the month)"
            raise _fail(spec, detail, item, expression)
        else:
            weekdays.update(value % 7 for value in _parse_plain_item(spec, item, expression))
    return DayOfWeekField(
        text=text, weekdays=frozenset(weekdays), nth=frozenset(nth), last=frozenset(last)
    )


def month_length(year: int, month: int) -> int:
    """The number of days in ``month`` of ``year`` (Gregorian)."""
    if month == 2:
        leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
        return 29 if leap else 28
    return 30 if month in (4, 6, 9, 11) else 31


def _next_table(allowed: AbstractSet[int], size: int, none: int) -> tuple[int, ...]:
    """``table[i]`` is the smallest allowed value >= i, or ``none``; ``i`` runs over 0..size."""
    table: list[int] = []
    upcoming = none
    for i in range(size, -1, -1):
        if i in allowed:
            upcoming = i
        table.append(upcoming)
    table.reverse()
    return tuple(table)


@dataclass(frozen=True, slots=True, kw_only=True)
class CronFields:
    """The five parsed fields plus lookup tables that make searching fast.

    The tables answer "the smallest allowed value at or after ``i``" in one index:
    ``next_minute`` (0..60, -1 when none), ``next_hour`` (0..24, -1), ``next_month`` (0..13, 0).
    Which days of a month match depends only on the weekday of its first day (0 = Sunday) and
    its length, so ``day_tables[first_weekday * 4 + length - 28]`` gives, for 0..32, the smallest
    matching day at or after ``i`` (0 when none) — 28 tables cover every month there will ever be.
    """

    minute: ValueField
    hour: ValueField
    day_of_month: DayOfMonthField
    month: ValueField
    day_of_week: DayOfWeekField
    next_minute: tuple[int, ...]
    next_hour: tuple[int, ...]
    next_month: tuple[int, ...]
    day_tables: tuple[tuple[int, ...], ...]

    def day_table(self, year: int, month: int, first_weekday: int) -> tuple[int, ...]:
        """The next-matching-day table for ``month`` of ``year`` starting on ``first_weekday``."""
        return self.day_tables[first_weekday * 4 + month_length(year, month) - 28]


# Bits 1, 8, 15, 22, 29: one weekday's days in a month that starts on that weekday.
_EVERY_SEVENTH = sum(1 << day for day in range(1, 32, 7))


def _day_mask(dom: DayOfMonthField, dow: DayOfWeekField, first_weekday: int, length: int) -> int:
    """Bit ``d`` set when day ``d`` matches in a month of ``length`` days starting on
    ``first_weekday`` (0 = Sunday), by the Vixie rule."""
    in_month = (1 << (length + 1)) - 2  # bits 1..length
    dom_mask = 0
    for day in dom.days:
        dom_mask |= 1 << day
    if dom.last:
        dom_mask |= 1 << length
    dow_mask = 0
    for weekday in dow.weekdays:
        dow_mask |= _EVERY_SEVENTH << (weekday - first_weekday) % 7
    for weekday, n in dow.nth:
        dow_mask |= 1 << (1 + (weekday - first_weekday) % 7 + 7 * (n - 1))
    last_weekday = (first_weekday + length - 1) % 7
    for weekday in dow.last:
        dow_mask |= 1 << (length - (last_weekday - weekday) % 7)
    if dom.restricted and dow.restricted:
        return (dom_mask | dow_mask) & in_month
    return dom_mask & dow_mask & in_month


def _ordinal(n: int) -> str:
    suffix = "th" if 11 <= n % 100 <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _join(words: list[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def _never_fires(
    dom: DayOfMonthField, dow: DayOfWeekField, months: list[int], expression: str
) -> CronError:
    """The error for an expression whose day fields match no day of any of its months."""
    names = [_MONTH_TITLES[m - 1] for m in months]
    longest = max(max(_POSSIBLE_LENGTHS[m - 1]) for m in months)
    if dom.restricted and not dom.last and dom.days and min(dom.days) > longest:
        verb = "has" if len(names) == 1 else "have"
        reason = f"{_join(names)} {verb} no {_ordinal(min(dom.days))}"
    else:
        reason = (
            f"no day in {_join(names)} matches both day-of-month '{dom.text}' "
            f"and day-of-week '{dow.text}'"
        )
    return CronError(
        f"can never fire: {reason} in '{expression}'", field=DAY_OF_MONTH.name, token=dom.text
    )


def compile_fields(texts: list[str], *, expression: str) -> CronFields:
    """Parse the five field texts (in cron order) and build the search tables.

    Raises :class:`~pysched.errors.CronError` for any bad field, and for an expression that can
    never fire (its day fields match no day of any month it allows, in any year): the check
    tries every month it allows at every length and every starting weekday, which together are
    every month the Gregorian calendar will ever have.
    """
    minute = parse_value_field(MINUTE, texts[0], expression=expression)
    hour = parse_value_field(HOUR, texts[1], expression=expression)
    dom = parse_day_of_month(texts[2], expression=expression)
    month = parse_value_field(MONTH, texts[3], expression=expression)
    dow = parse_day_of_week(texts[4], expression=expression)

    masks = [
        _day_mask(dom, dow, first_weekday, length)
        for first_weekday in range(7)
        for length in range(28, 32)
    ]
    months = sorted(month.values)
    if not any(
        masks[first_weekday * 4 + length - 28]
        for m in months
        for length in _POSSIBLE_LENGTHS[m - 1]
        for first_weekday in range(7)
    ):
        raise _never_fires(dom, dow, months, expression)
    # Many of the 28 masks are equal (a day-of-month-only rule depends on the length alone).
    tables: dict[int, tuple[int, ...]] = {}
    for mask in masks:
        if mask not in tables:
            tables[mask] = _next_table({d for d in range(1, 32) if mask >> d & 1}, 32, 0)
    day_tables = tuple(tables[mask] for mask in masks)
    return CronFields(
        minute=minute,
        hour=hour,
        day_of_month=dom,
        month=month,
        day_of_week=dow,
        next_minute=_next_table(minute.values, 60, -1),
        next_hour=_next_table(hour.values, 24, -1),
        next_month=_next_table(month.values, 13, 0),
        day_tables=day_tables,
    )
