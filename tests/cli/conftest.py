"""The fake API the client commands' tests talk to (see ``cli_fake_api``)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.cli_fake_api import FakeApi, install


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[FakeApi]:
    """A fresh fake server, in an environment of the test's own (TZ=UTC, no PYSCHED_*)."""
    fake = install(monkeypatch, tmp_path)
    yield fake
    monkeypatch.undo()
    time.tzset()
