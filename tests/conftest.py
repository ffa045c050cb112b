"""Every test (and every process a test starts) keeps its ``current.json`` in a temp folder,
never in the real ``~/.local/state``: a test's ``serve`` must not point a developer's CLI at
itself."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _private_state_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Path:
    home = tmp_path_factory.mktemp("state-home")
    monkeypatch.setenv("XDG_STATE_HOME", str(home))
    return home
