"""Fixtures for the store tests: ``kind`` runs a test against every store implementation."""

from __future__ import annotations

from pathlib import Path

import pytest
from store_harness import KINDS, Kind


@pytest.fixture(params=KINDS)
def kind(request: pytest.FixtureRequest, tmp_path: Path) -> Kind:
    return Kind(request.param, tmp_path)
