"""Zone data comes from the tzdata package, whatever the host's tz database says."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pysched.config import load_config
from pysched.errors import ConfigError

PROBE = """
import sys
from datetime import datetime
from zoneinfo import ZoneInfo
if sys.argv[1] == "pysched":
    import pysched
print(datetime(2026, 7, 1, 12, tzinfo=ZoneInfo("Europe/London")).utcoffset())
"""


@pytest.fixture
def lying_host_zones(tmp_path: Path) -> dict[str, str]:
    """A host tz database whose Europe/London is Tokyo's rules (UTC+9 all year)."""
    import tzdata  # the package pysched reads: copy its Tokyo file under London's name

    source = Path(tzdata.__file__).parent / "zoneinfo" / "Asia" / "Tokyo"
    (tmp_path / "Europe").mkdir()
    (tmp_path / "Europe" / "London").write_bytes(source.read_bytes())
    return {**os.environ, "PYTHONTZPATH": str(tmp_path)}


def offset_seen(env: dict[str, str], importing: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, importing], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_a_host_tz_database_does_not_change_pysched_zones(lying_host_zones):
    assert offset_seen(lying_host_zones, "plain") == "9:00:00"  # the lie is really there
    assert offset_seen(lying_host_zones, "pysched") == "1:00:00"  # British Summer Time


def test_importing_pysched_leaves_zoneinfo_no_host_folder():
    import zoneinfo

    import pysched  # noqa: F401  (the import is what sets the search path)

    assert zoneinfo.TZPATH == ()


@pytest.mark.parametrize(
    ("name", "hint"),
    [
        ("localtime", "'localtime' is this machine's own setting"),
        ("posixrules", "'posixrules' is this machine's own setting"),
        ("posix/Europe/London", "write 'Europe/London'"),
        ("right/UTC", "write 'UTC'"),
    ],
)
def test_a_zone_only_the_host_knows_is_refused_saying_what_to_write(tmp_path, name, hint):
    """Such names loaded where the host's database had them, before zone data came from the
    tzdata package alone: a config that names one is told why it no longer loads."""
    path = tmp_path / "pysched.yaml"
    path.write_text(
        f'jobs:\n  a:\n    schedule: "0 1 * * *"\n    timezone: {name}\n    command: "true"\n'
    )
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    (problem,) = caught.value.problems
    assert f"unknown time zone {name!r}" in problem.message
    assert problem.hint is not None and problem.hint.startswith(hint)
