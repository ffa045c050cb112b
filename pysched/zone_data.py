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
