"""Time-zone data from the ``tzdata`` package, never the host's files.

Python's ``zoneinfo`` reads the host's tz database first (``/usr/share/zoneinfo``, or
``PYTHONTZPATH``) and falls back to the ``tzdata`` package only where there is none. Then the
same config could fire at different instants on two machines whose systems carry different
versions of the rules (a country that moved its clocks), and the tests would not check the
rules that run. pysched depends on ``tzdata`` (pinned in ``uv.lock``) instead: importing
``pysched`` makes every ``ZoneInfo(name)`` in the process read that package.
"""

from __future__ import annotations

import zoneinfo


def use_packaged_zone_data() -> None:
    """Make ``zoneinfo`` read the ``tzdata`` package only.

    Process-wide, as ``zoneinfo``'s search path is. Zones made before keep the data they were
    read with; from here on a name gives a zone read from the package."""
    zoneinfo.reset_tzpath(to=())
    zoneinfo.ZoneInfo.clear_cache()


HOST_ONLY_NAMES = frozenset({"localtime", "posixrules"})
"""Names in a host's tz database that mean something only there (the machine's own zone)."""


def host_only_hint(name: str) -> str | None:
    """What to write instead of a zone name that only a host's tz database knows, or None.

    Such names used to load where the host had them (before pysched read the package alone),
    so a config that names one gets told why it no longer does."""
    if name in HOST_ONLY_NAMES:
        return (
            f"{name!r} is this machine's own setting, and pysched reads zone data from the "
            "tzdata package so that every machine agrees: name the IANA zone, such as "
            "Europe/London"
        )
    if name.startswith("posix/"):
        return (
            f"write {name.removeprefix('posix/')!r}: pysched reads zone data from the tzdata "
            "package, which has no posix/ copies"
        )
    if name.startswith("right/"):
        return (
            f"write {name.removeprefix('right/')!r}: pysched reads zone data from the tzdata "
            "package, which has no right/ copies (they count leap seconds, which no job's clock "
            "does)"
        )
    return None
