"""Business calendars: which days are business days, and stepping from one to the next.

A :class:`Calendar` answers one question fast — *is this date a business day?* — and builds
the rest on it: the business day before or after a date, *n* business days away, the business
days in a window, and the holidays that close it. Calendars are frozen values; the only state
they carry is a private per-year cache, so the same calendar may be shared freely (between
threads too: filling the cache twice gives the same answer twice).

A date ``d`` is a business day of a calendar when, in this order:

1. ``d`` is one of its ``workdays`` → business day, whatever else is true of ``d``;
2. ``d`` is one of its explicit ``holidays`` → closed;
3. ``d`` is a public holiday of one of its ``regions`` → closed;
4. otherwise → business day exactly when ``d.weekday()`` is one of its ``weekdays``.

Public holidays come from the `holidays <https://pypi.org/project/holidays/>`_ package, with its
observed (substitute) days — GB's "Boxing Day (observed)" is a holiday because the package says
so — and only its default (public) category. They are loaded one year at a time on first use
and kept as plain frozen sets, so after the first question about a year every answer is a
dictionary and a set lookup. The package's own objects are mutable; none ever leaves this module.
Names are taken in each country's own default language (``en_GB`` for GB, ``de`` for DE), never
from the process locale, so the same config names the same holidays on every machine. Years the
package does not cover for a country simply have no public holidays.

Every search for a business day gives up after :data:`SEARCH_LIMIT_DAYS` days with
:class:`~pysched.errors.CalendarError`, so a calendar that (say) closes every day can never spin
a loop.
"""

from __future__ import annotations

import difflib
import functools
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import MAXYEAR, MINYEAR, date, datetime
from typing import TYPE_CHECKING, Final, cast

from pysched.errors import CalendarError

if TYPE_CHECKING:
    from holidays.holiday_base import HolidayBase

__all__ = [
    "DEFAULT_CALENDAR",
    "MONDAY_TO_FRIDAY",
    "SEARCH_LIMIT_DAYS",
    "Calendar",
    "parse_weekdays",
]

SEARCH_LIMIT_DAYS: Final = 3660
"""How far (in calendar days) a search for one business day looks before giving up: ten years."""

MONDAY_TO_FRIDAY: Final = frozenset(range(5))
"""The default business weekdays, Monday (0) to Friday (4)."""

_DAY_NAMES: Final = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_WEEKDAY_HINT: Final = (
    "write a day name (mon..sun, or in full), a range such as mon-fri, "
    "or a number 0-6 with Monday=0"
)
_UNNAMED: Final = "holiday"
_MIN_ORDINAL: Final = date.min.toordinal()
_MAX_ORDINAL: Final = date.max.toordinal()


def parse_weekdays(items: Iterable[str | int] | str) -> frozenset[int]:
    """Read business weekdays written the way people write them; Monday is 0, Sunday is 6.

    Each item is a number ``0``..``6`` (Monday=0, as :meth:`datetime.date.weekday` counts — not
    cron's Sunday=0), a day name in any case, either in full (``Tuesday``) or shortened to at
    least three letters (``tue``, ``tues``, ``thurs``), or a range of either (``mon-fri``,
    ``0-4``). A range runs forward and wraps past Sunday, so ``fri-mon`` is Friday, Saturday,
    Sunday and Monday, and ``sun-thu`` is the Sunday-to-Thursday week. A string may hold several
    items separated by commas (``"mon-wed, fri"``), and a lone string is read as one item list.
    Repeats are harmless. An empty list gives an empty set (the caller decides whether that is
    allowed; :meth:`Calendar.create` allows it only alongside explicit ``workdays``).

    Raises:
        CalendarError: an item is not one of the above; the message quotes it and says what
            would be understood.
    """
    raw_items = cast("Iterable[object]", [items] if isinstance(items, str) else items)
    days: set[int] = set()
    for raw in raw_items:
        if isinstance(raw, bool) or not isinstance(raw, int | str):
            raise CalendarError(
                f"weekday {raw!r} is neither a day name nor a number; {_WEEKDAY_HINT}"
            )
        if isinstance(raw, int):
            days.add(_day_number(raw, raw))
            continue
        for part in raw.split(","):
            token = part.strip()
            if not token:
                raise CalendarError(f"empty weekday in {raw!r}; {_WEEKDAY_HINT}")
            first, dash, last = token.partition("-")
            if not dash:
                days.add(_day_number(token, token))
                continue
            start = _day_number(first.strip(), token)
            stop = _day_number(last.strip(), token)
            days.update((start + i) % 7 for i in range((stop - start) % 7 + 1))
    return frozenset(days)


def _day_number(word: str | int, item: str | int) -> int:
    """One weekday (a number or a name) as 0..6; ``item`` is what to quote if it is wrong."""
    if isinstance(word, int):
        if 0 <= word <= 6:
            return word
        raise CalendarError(f"weekday {item!r} is out of range; {_WEEKDAY_HINT}")
    text = word.lower()
    if text.isascii() and text.isdigit():
        return _day_number(int(text), item)
    if len(text) >= 3:
        for number, day_name in enumerate(_DAY_NAMES):
            if day_name.startswith(text):
                return number
    raise CalendarError(f"unknown weekday {item!r}; {_WEEKDAY_HINT}")


@dataclass(frozen=True, slots=True)
class _Year:
    """What a calendar knows about one year, computed once: its business days and public
    holidays (by the calendar's regions; explicit holidays live on the calendar itself)."""

    business: frozenset[date]
    public: Mapping[date, str]


class _FrozenNames(Mapping[date, str]):
    """A read-only ``{date: name}``: hashable, picklable, and private to this module (the
    ``holidays`` field's type is plain ``Mapping``), so nobody can add a holiday behind a
    calendar's back."""

    __slots__ = ("_data", "_hash")

    def __init__(self, data: Mapping[date, str] | None = None) -> None:
        self._data: dict[date, str] = dict(data or {})
        self._hash = hash(frozenset(self._data.items()))

    def __getitem__(self, key: date) -> str:
        return self._data[key]

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def __iter__(self) -> Iterator[date]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, _FrozenNames):
            return self._hash == other._hash and self._data == other._data
        if isinstance(other, Mapping):
            return self._data == dict(cast("Mapping[object, object]", other))
        return NotImplemented

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        return repr(self._data)

    def __reduce__(self) -> tuple[type[_FrozenNames], tuple[dict[date, str]]]:
        return (_FrozenNames, (self._data,))


def _new_year_cache() -> dict[int, _Year]:
    return {}


@dataclass(frozen=True, slots=True, kw_only=True)
class Calendar:
    """A business calendar: weekly business weekdays, minus holidays, plus explicit workdays.

    Build one with :meth:`create`, which takes the forms people write and merges a
    ``based_on`` parent. Direct construction takes the fields as they are stored and checks
    them the same way (so every ``Calendar`` is valid), but does no merging.

    Fields:
        name: what configs and the CLI call the calendar.
        weekdays: the business weekdays, ``0`` (Monday) to ``6`` (Sunday).
        holidays: explicit holiday dates and their names; a read-only mapping.
        regions: ``(country, subdivision)`` pairs whose public holidays close the calendar,
            each spelled as the ``holidays`` package spells it (``("GB", "ENG")``, ``("US",
            None)``), in the order first given, without repeats.
        workdays: dates that are business days whatever the other rules say.

    The precedence of these rules is in the module docstring: workdays beat holidays, which
    beat weekdays. Calendars are hashable and picklable; two are equal when their fields are
    equal (``holidays`` compares equal to a plain dict with the same items), and the private
    per-year cache never counts.

    Raises (on construction):
        CalendarError: a field is malformed, a region is unknown, or the calendar has neither
            weekdays nor workdays (it could never have a business day).
    """

    name: str
    weekdays: frozenset[int] = MONDAY_TO_FRIDAY
    holidays: Mapping[date, str] = field(default_factory=_FrozenNames)
    regions: tuple[tuple[str, str | None], ...] = ()
    workdays: frozenset[date] = frozenset()
    _years: dict[int, _Year] = field(
        default_factory=_new_year_cache, init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        raw_name = cast("object", self.name)
        if not isinstance(raw_name, str) or not raw_name.strip():
            raise CalendarError(f"a calendar name must be non-empty text, not {raw_name!r}")
        weekdays = frozenset(cast("Iterable[object]", self.weekdays))
        for day in weekdays:
            if isinstance(day, bool) or not isinstance(day, int) or not 0 <= day <= 6:
                raise CalendarError(f"weekday {day!r} is not a number 0-6 (Monday=0)")
        holidays = _holiday_mapping(self.holidays)
        workdays = _date_set(self.workdays, "workday")
        if not weekdays and not workdays:
            raise CalendarError(
                "the calendar has no business weekdays and no workdays, "
                "so it could never have a business day"
            )
        regions: list[tuple[str, str | None]] = []
        for country, subdivision in self.regions:
            region = _resolve_region(country, subdivision)
            if region not in regions:
                regions.append(region)
        object.__setattr__(self, "weekdays", cast("frozenset[int]", weekdays))
        object.__setattr__(self, "holidays", _FrozenNames(holidays))
        object.__setattr__(self, "workdays", workdays)
        object.__setattr__(self, "regions", tuple(regions))

    @classmethod
    def create(
        cls,
        name: str,
        *,
        weekdays: Iterable[int | str] | str | None = None,
        holidays: Mapping[date, str] | Iterable[date | tuple[date, str]] = (),
        country: str | None = None,
        subdivision: str | None = None,
        workdays: Iterable[date] = (),
        based_on: Calendar | None = None,
    ) -> Calendar:
        """Build a calendar from the forms a config or a person writes.

        Args:
            name: the calendar's name.
            weekdays: business weekdays, anything :func:`parse_weekdays` reads (``range(5)``,
                ``["sun-thu"]``, ``"mon,wed,fri"``). ``None`` means the parent's weekdays with
                ``based_on``, else Monday to Friday. An empty list is allowed only with
                ``workdays`` (a calendar that is nothing but a list of dates).
            holidays: explicit holidays, as a mapping ``{date: name}``, or an iterable whose
                items are a ``date`` (named ``"holiday"``) or a ``(date, name)`` pair. The same
                date twice is fine if the names agree and an error if they differ.
            country: a country code the ``holidays`` package knows (``GB``, ``US``, ``DE``;
                any case; its aliases such as ``UK`` and three-letter codes are read as the
                two-letter code). Its public holidays close the calendar.
            subdivision: the country's subdivision (``ENG``, ``NY``, ``BY``; any case, or the
                package's full name such as ``England``). Needs ``country``.
            workdays: dates that are business days even if they fall on a weekend or holiday.
            based_on: a parent calendar. The result keeps the parent's weekdays unless
                ``weekdays`` is given, and the union of the parent's and its own holidays,
                regions and workdays — except that a date this call lists as a holiday is
                taken out of the parent's workdays (the child's word is the newer one). Own
                holiday names win over the parent's for the same date.

        Raises:
            CalendarError: an unreadable weekday, holiday or workday; a date listed here both
                as a holiday and as a workday; a subdivision without a country; an unknown
                country or subdivision (the message suggests or lists the valid ones); or no
                weekdays and no workdays at all.
        """
        own_weekdays = None if weekdays is None else parse_weekdays(weekdays)
        own_holidays = _holiday_mapping(holidays)
        own_workdays = _date_set(workdays, "workday")
        if clash := sorted(own_holidays.keys() & own_workdays):
            listed = ", ".join(d.isoformat() for d in clash)
            raise CalendarError(f"{listed} listed both as a holiday and as a workday; keep one")
        if subdivision is not None and country is None:
            raise CalendarError(f"subdivision {subdivision!r} needs a country as well")
        own_regions = () if country is None else ((country, subdivision),)
        if based_on is None:
            return cls(
                name=name,
                weekdays=MONDAY_TO_FRIDAY if own_weekdays is None else own_weekdays,
                holidays=own_holidays,
                regions=own_regions,
                workdays=own_workdays,
            )
        return cls(
            name=name,
            weekdays=based_on.weekdays if own_weekdays is None else own_weekdays,
            holidays={**based_on.holidays, **own_holidays},
            regions=(*based_on.regions, *own_regions),
            workdays=(based_on.workdays - own_holidays.keys()) | own_workdays,
        )

    def is_business_day(self, d: date) -> bool:
        """Whether ``d`` is a business day (see the precedence in the module docstring).

        This is the hot path of forecasts: after the first call for a year it is a dictionary
        lookup and a set lookup.

        Raises:
            TypeError: ``d`` is a ``datetime`` (take its ``.date()`` in the zone you mean).
        """
        if isinstance(d, datetime):
            raise TypeError(_DATETIME_MESSAGE)
        year = self._years.get(d.year)
        if year is None:
            year = self._load_year(d.year)
        return d in year.business

    def next_business_day(self, d: date) -> date:
        """The first business day strictly after ``d``, whether or not ``d`` is one.

        Raises:
            CalendarError: none within :data:`SEARCH_LIMIT_DAYS` days (or before ``date.max``).
        """
        return self._search(d, 1)

    def previous_business_day(self, d: date) -> date:
        """The last business day strictly before ``d``, whether or not ``d`` is one.

        Raises:
            CalendarError: none within :data:`SEARCH_LIMIT_DAYS` days (or after ``date.min``).
        """
        return self._search(d, -1)

    def shift(self, d: date, n: int) -> date:
        """The date ``n`` business days after ``d`` (before it when ``n`` is negative).

        ``n > 0`` steps :meth:`next_business_day` ``n`` times and ``n < 0`` steps
        :meth:`previous_business_day` ``-n`` times, so ``d`` itself never counts:
        ``shift(saturday, 1)`` is Monday and ``shift(saturday, -1)`` is Friday (on Mon-Fri
        without holidays). ``n == 0`` rolls forward: ``d`` if it is a business day, else the
        next one — "the business day of ``d``" in the *following* convention. For a business
        day ``d``, ``shift(shift(d, n), -n) == d``.

        Raises:
            CalendarError: some step finds no business day within :data:`SEARCH_LIMIT_DAYS`.
        """
        if n == 0:
            return d if self.is_business_day(d) else self.next_business_day(d)
        step = 1 if n > 0 else -1
        for _ in range(abs(n)):
            d = self._search(d, step)
        return d

    def business_days(self, start: date, end: date) -> list[date]:
        """Every business day from ``start`` to ``end``, both included, in order.

        ``end`` before ``start`` gives an empty list, as an empty ``range`` does.
        """
        return [d for d in _dates(start, end) if self.is_business_day(d)]

    def holiday_name(self, d: date) -> str | None:
        """The name of the holiday on ``d``: the explicit one if any, else the public one(s)
        of the calendar's regions (several joined with ``"; "``), else ``None``.

        This reports the holiday even when a workday keeps the calendar open on ``d``; ask
        :meth:`is_business_day` whether the calendar works that day.
        """
        if isinstance(d, datetime):
            raise TypeError(_DATETIME_MESSAGE)
        if d in self.holidays:
            return self.holidays[d]
        year = self._years.get(d.year)
        if year is None:
            year = self._load_year(d.year)
        return year.public.get(d)

    def closed_days(self, start: date, end: date) -> list[tuple[date, str]]:
        """The holidays that close the calendar from ``start`` to ``end`` (both included), with
        their names, in date order.

        A holiday that a workday overrides is left out (the calendar is open). Days closed only
        because they are not business weekdays (weekends) are left out too, but a holiday that
        falls on a weekend is listed: GB's Saturday Boxing Day and its Monday substitute both
        appear. ``end`` before ``start`` gives an empty list.
        """
        closed: list[tuple[date, str]] = []
        for d in _dates(start, end):
            if not self.is_business_day(d) and (name := self.holiday_name(d)) is not None:
                closed.append((d, name))
        return closed

    def _search(self, d: date, step: int) -> date:
        """The nearest business day strictly after (step 1) or before (step -1) ``d``."""
        if isinstance(d, datetime):
            raise TypeError(_DATETIME_MESSAGE)
        direction = "after" if step > 0 else "before"
        origin = d.toordinal()
        for offset in range(1, SEARCH_LIMIT_DAYS + 1):
            ordinal = origin + step * offset
            if not _MIN_ORDINAL <= ordinal <= _MAX_ORDINAL:
                raise CalendarError(
                    f"calendar {self.name!r}: no business day {direction} {d} "
                    "within the dates Python can represent"
                )
            candidate = date.fromordinal(ordinal)
            if self.is_business_day(candidate):
                return candidate
        raise CalendarError(
            f"calendar {self.name!r}: no business day within {SEARCH_LIMIT_DAYS} days "
            f"{direction} {d}; check its weekdays, holidays and workdays"
        )

    def _load_year(self, year: int) -> _Year:
        """Work out one year and keep it; racing threads compute the same value."""
        public = _regions_year(self.regions, year)
        business = frozenset(
            d
            for d in _dates(date(year, 1, 1), date(year, 12, 31))
            if d in self.workdays
            or (d not in self.holidays and d not in public and d.weekday() in self.weekdays)
        )
        loaded = _Year(business=business, public=public)
        self._years[year] = loaded
        return loaded


_DATETIME_MESSAGE: Final = (
    "calendars work on dates, not datetimes; take .date() in the time zone you mean"
)


def _dates(start: date, end: date) -> Iterable[date]:
    """Every date from ``start`` to ``end`` inclusive (none if ``end < start``)."""
    if isinstance(start, datetime) or isinstance(end, datetime):
        raise TypeError(_DATETIME_MESSAGE)
    return map(date.fromordinal, range(start.toordinal(), end.toordinal() + 1))


def _check_date(value: object, what: str) -> date:
    if isinstance(value, datetime) or not isinstance(value, date):
        raise CalendarError(f"{what} {value!r} is not a date")
    return value


def _date_set(values: Iterable[date], what: str) -> frozenset[date]:
    if isinstance(values, str | date):
        raise CalendarError(f"{what}s must be a list of dates")
    return frozenset(_check_date(v, what) for v in cast("Iterable[object]", values))


def _holiday_mapping(
    holidays: Mapping[date, str] | Iterable[date | tuple[date, str]],
) -> dict[date, str]:
    """Explicit holidays in any accepted form, checked, as a new ``{date: name}`` dict."""
    if isinstance(holidays, str | date):
        raise CalendarError("holidays must be a list of dates")
    pairs: Iterable[object]
    if isinstance(holidays, Mapping):
        pairs = cast("Mapping[object, object]", holidays).items()
    else:
        pairs = cast("Iterable[object]", holidays)
    result: dict[date, str] = {}
    for item in pairs:
        raw_day: object
        raw_name: object
        if isinstance(item, tuple):
            parts = cast("tuple[object, ...]", item)
            if len(parts) != 2:
                raise CalendarError(f"holiday {item!r} is neither a date nor a (date, name) pair")
            raw_day, raw_name = parts
        else:
            raw_day, raw_name = item, _UNNAMED
        day = _check_date(raw_day, "holiday")
        if not isinstance(raw_name, str) or not raw_name.strip():
            raise CalendarError(
                f"the holiday on {day} needs a non-empty text name, not {raw_name!r}"
            )
        holiday = raw_name.strip()
        if result.get(day, holiday) != holiday:
            raise CalendarError(f"{day} is listed twice, as {result[day]!r} and as {holiday!r}")
        result[day] = holiday
    return result


def _resolve_region(country: object, subdivision: object) -> tuple[str, str | None]:
    """A ``(country, subdivision)`` as the ``holidays`` package spells it, or CalendarError."""
    if not isinstance(country, str) or not country.strip():
        raise CalendarError(f"country {country!r} is not a country code")
    codes, names = _country_index()
    code = codes.get(country.strip().upper())
    if code is None:
        wanted = country.strip().lower().replace("_", " ")
        guesses = [names[n] for n in difflib.get_close_matches(wanted, names, n=3, cutoff=0.75)]
        guesses += [codes[c] for c in difflib.get_close_matches(country.upper(), codes, n=3)]
        guesses = list(dict.fromkeys(guesses))
        hint = f" (did you mean {' or '.join(guesses)}?)" if guesses else ""
        raise CalendarError(
            f"unknown country {country!r}{hint}; use a two-letter "
            "ISO 3166-1 code that the holidays package supports, such as GB, US or DE"
        )
    if subdivision is None:
        return code, None
    entity = _entity(code)
    if not isinstance(subdivision, str) or not subdivision.strip():
        raise CalendarError(f"subdivision {subdivision!r} is not a subdivision code")
    known = {s.lower(): s for s in entity.subdivisions}
    known.update((alias.lower(), s) for alias, s in entity.subdivisions_aliases.items())
    found = known.get(subdivision.strip().lower())
    if found is not None:
        return code, found
    if not entity.subdivisions:
        raise CalendarError(
            f"country {code} has no subdivisions in the holidays "
            f"package, so subdivision {subdivision!r} cannot be used; leave it out"
        )
    full_names = {s: a for a, s in entity.subdivisions_aliases.items()}
    listed = ", ".join(
        f"{s} ({full_names[s]})" if s in full_names else s for s in entity.subdivisions
    )
    close = difflib.get_close_matches(subdivision.strip().lower(), known, n=1)
    hint = f" (did you mean {known[close[0]]}?)" if close else ""
    raise CalendarError(
        f"country {code} has no subdivision {subdivision!r}{hint}; choose one of {listed}"
    )


@functools.cache
def _country_index() -> tuple[dict[str, str], dict[str, str]]:
    """Every code the ``holidays`` package accepts (upper case), and every country's name in
    lower case (for suggestions), each mapped to its two-letter code. Read from the package's
    registry so that no country module is imported just to check a code."""
    from holidays.registry import COUNTRIES

    codes: dict[str, str] = {}
    names: dict[str, str] = {}
    for module, (class_name, *entity_codes) in COUNTRIES.items():
        alpha2 = entity_codes[0]
        codes.update((code.upper(), alpha2) for code in entity_codes if 2 <= len(code) <= 3)
        names[module.replace("_", " ")] = alpha2
        names[class_name.lower()] = alpha2
    return codes, names


def _entity(code: str) -> type[HolidayBase]:
    """The ``holidays`` package's class for a two-letter country code (already checked)."""
    import holidays as holidays_lib

    return cast("type[HolidayBase]", getattr(holidays_lib, code).get_entity())


def _regions_year(regions: tuple[tuple[str, str | None], ...], year: int) -> Mapping[date, str]:
    """The public holidays of all ``regions`` that fall in ``year``, names joined by "; "."""
    if not regions:
        return _NO_HOLIDAYS
    if len(regions) == 1:
        return _region_year(*regions[0], year)
    merged: dict[date, list[str]] = {}
    for country, subdivision in regions:
        for day, name in _region_year(country, subdivision, year).items():
            names = merged.setdefault(day, [])
            names.extend(n for n in name.split("; ") if n not in names)
    return _FrozenNames({day: "; ".join(names) for day, names in merged.items()})


@functools.lru_cache(maxsize=4096)
def _region_year(country: str, subdivision: str | None, year: int) -> Mapping[date, str]:
    """One region's public holidays that fall in ``year``, frozen, shared by every calendar.

    A substitute day can fall in a different year from the holiday it stands for (New Year's
    Day on a Saturday is observed on Friday 31 December in the US), and nothing promises which
    year's generation the package files it under, so the neighbouring years are generated too
    and only the dates that fall in ``year`` are kept.
    """
    import holidays as holidays_lib

    language = _entity(country).default_language
    years = [y for y in (year - 1, year, year + 1) if MINYEAR <= y <= MAXYEAR]
    generated = holidays_lib.country_holidays(
        country, subdiv=subdivision, years=years, expand=False, language=language
    )
    return _FrozenNames({d: n for d, n in generated.items() if d.year == year})


_NO_HOLIDAYS: Final = _FrozenNames()

DEFAULT_CALENDAR: Final = Calendar(name="default")
"""The calendar used when none is named: Monday to Friday, no holidays."""
