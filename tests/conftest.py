"""Every test (and every process a test starts) keeps its ``current.json`` in a temp folder,
never in the real ``~/.local/state``: a test's ``serve`` must not point a developer's CLI at
itself. The native minder is built once for the whole run, in a temp folder too (not in each
test's state dir: a build takes a third of a second)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(autouse=True, scope="session")
def _shared_minder_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    cache = tmp_path_factory.mktemp("minder-cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PYSCHED_MINDER_CACHE", str(cache))
        yield cache


@pytest.fixture(autouse=True)
def _private_state_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Path:
    home = tmp_path_factory.mktemp("state-home")
    monkeypatch.setenv("XDG_STATE_HOME", str(home))
    return home
