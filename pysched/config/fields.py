"""Typed reading of YAML nodes, collecting every problem instead of stopping at the first.

Each reader takes a located node and returns the value in the type asked for, or ``None`` after
recording a ``Problem`` at the node's place. The loader calls them for every field of every
section, then raises one ``ConfigError`` carrying all the problems it found, so an operator fixes
a config in one pass rather than one error at a time.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable
from datetime import timedelta
from typing import TypeVar
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from pysched.config.hints import did_you_mean
from pysched.config.yaml_tree import Place, YMap, YNode, YScalar, YSeq, kind_of
from pysched.errors import DurationError, Problem
from pysched.timing.durations import parse_duration
from pysched.zone_data import host_only_hint

E = TypeVar("E", bound=enum.Enum)

NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")
"""Names of jobs, pools and calendars: they form run ids ``<job>.<run_date>.<n>``."""
MAX_NAME = 200
"""Characters in a job, pool or calendar name."""


class FieldReader:
    """Reads nodes into values, noting each problem once (defaults are read for every job)."""

    def __init__(self) -> None:
        self.problems: list[Problem] = []
        self.reports = 0
        """How many times ``report`` was called, repeats included: compare before and after
        reading something to learn whether it had a problem, even one already noted."""
        self._seen: set[tuple[str, int, int, str]] = set()
        self._zones: frozenset[str] | None = None

    def report(self, place: Place, message: str, hint: str | None = None) -> None:
        self.reports += 1
        key = (place.file, place.line, place.col, message)
        if key not in self._seen:
            self._seen.add(key)
            self.problems.append(place.problem(message, hint))

    # -- shapes ------------------------------------------------------------------------------

    def mapping(self, node: YNode | None, what: str) -> YMap | None:
        if node is None:
            return None
        if isinstance(node, YMap):
            return node
        if isinstance(node, YScalar) and node.value is None:
            return YMap(entries=(), place=node.place)
        self.report(node.place, f"{what} must be a mapping, not {kind_of(node)}")
        return None

    def sequence(self, node: YNode, what: str, *, allow_single: bool = False) -> list[YNode]:
        """A list's items; with ``allow_single`` a lone scalar counts as a list of one."""
        if isinstance(node, YSeq):
            return list(node.items)
        if allow_single and isinstance(node, YScalar) and node.value is not None:
            return [node]
        self.report(node.place, f"{what} must be a list, not {kind_of(node)}")
        return []

    def check_keys(self, node: YMap, allowed: Iterable[str], where: str) -> None:
        """Report unknown keys (with the closest known one) and duplicated keys."""
        known = allowed if isinstance(allowed, frozenset | set) else frozenset(allowed)
        seen: dict[str, Place] = {}
        for key, _ in node.entries:
            name = str(key.value)
            if name in seen:
                first = seen[name]
                self.report(
                    key.place,
                    f"duplicate key {name!r} in {where}",
                    f"first defined at line {first.line}; remove one of them",
                )
                continue
            seen[name] = key.place
            if name not in known:
                self.report(
                    key.place, f"unknown key {name!r} in {where}", did_you_mean(name, known)
                )

    # -- scalars -----------------------------------------------------------------------------

    def text(self, node: YNode, what: str, *, allow_empty: bool = False) -> str | None:
        if isinstance(node, YScalar) and node.value is not None:
            value = node.value
            if isinstance(value, str):
                if not value.strip() and not allow_empty:
                    self.report(node.place, f"{what} must not be empty")
                    return None
                return value
            if isinstance(value, bool | int | float):
                # a bare number or word where text is expected: use the text as written
                return node.text
            return node.text
        self.report(node.place, f"{what} must be text, not {kind_of(node)}")
        return None

    def integer(
        self, node: YNode, what: str, *, minimum: int | None = None, maximum: int | None = None
    ) -> int | None:
        value = node.value if isinstance(node, YScalar) else None
        if isinstance(value, bool) or not isinstance(value, int):
            self.report(node.place, f"{what} must be a whole number, not {kind_of(node)}")
            return None
        if minimum is not None and value < minimum:
            self.report(node.place, f"{what} must be at least {minimum}, not {value}")
            return None
        if maximum is not None and value > maximum:
            self.report(node.place, f"{what} must be at most {maximum}, not {value}")
            return None
        return value

    def number(
        self, node: YNode, what: str, *, minimum: float, maximum: float | None = None
    ) -> float | None:
        value = node.value if isinstance(node, YScalar) else None
        if isinstance(value, bool) or not isinstance(value, int | float) or value != value:  # noqa: PLR0124 (NaN)
            self.report(node.place, f"{what} must be a number, not {kind_of(node)}")
            return None
        if value < minimum or (maximum is not None and value > maximum):
            upper = f" and at most {maximum:g}" if maximum is not None else ""
            self.report(node.place, f"{what} must be at least {minimum:g}{upper}, not {value:g}")
            return None
        return float(value)

    def boolean(self, node: YNode, what: str) -> bool | None:
        value = node.value if isinstance(node, YScalar) else None
        if isinstance(value, bool):
            return value
        hint = None
        if isinstance(value, str) and value.lower() in ("yes", "no", "on", "off"):
            hint = f"write {'true' if value.lower() in ('yes', 'on') else 'false'}"
        self.report(node.place, f"{what} must be true or false, not {kind_of(node)}", hint)
        return None

    def duration(self, node: YNode, what: str, *, positive: bool = True) -> timedelta | None:
        value = node.value if isinstance(node, YScalar) else None
        if isinstance(value, bool) or not isinstance(value, str | int):
            self.report(node.place, f"{what} must be a duration like 30s, 5m or 1h30m")
            return None
        try:
            delta = parse_duration(str(value))
        except DurationError as exc:
            self.report(node.place, f"{what}: {exc}")
            return None
        if positive and delta <= timedelta(0):
            self.report(node.place, f"{what} must be longer than 0s")
            return None
        return delta

    def choice(self, node: YNode, enum_type: type[E], what: str) -> E | None:
        options = [str(member.value) for member in enum_type]
        value = node.value if isinstance(node, YScalar) else None
        if isinstance(value, str):
            for member in enum_type:
                if member.value == value.lower():
                    return member
        written = node.text if isinstance(node, YScalar) else kind_of(node)
        self.report(
            node.place,
            f"{what} must be one of {', '.join(options)}, not {written!r}",
            did_you_mean(str(written), options),
        )
        return None

    def zone(self, node: YNode, what: str) -> ZoneInfo | None:
        name = self.text(node, what)
        if name is None:
            return None
        try:
            if name.startswith(("/", ".")) or ".." in name:
                raise ZoneInfoNotFoundError(name)
            return ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError, OSError):
            if self._zones is None:
                self._zones = frozenset(available_timezones())
            hint = (
                host_only_hint(name)
                or did_you_mean(name, self._zones)
                or "use an IANA name like Europe/London"
            )
            self.report(node.place, f"unknown time zone {name!r} in {what}", hint)
            return None

    def name(self, node: YScalar, what: str) -> str | None:
        name = str(node.value) if node.value is not None else ""
        if not NAME_PATTERN.fullmatch(name):
            self.report(
                node.place,
                f"bad {what} name {name!r}",
                "use letters, digits, '_' and '-', starting with a letter or digit",
            )
            return None
        if len(name) > MAX_NAME:
            self.report(
                node.place,
                f"{what} name {name[:20]}… is {len(name)} characters long",
                f"use at most {MAX_NAME} (a job's name is part of its log files' names, which "
                "the file system limits to 255 bytes)",
            )
            return None
        return name
