"""The user's base folders, as the XDG Base Directory spec places them."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path


def base_dir(variable: str, default: str, env: Mapping[str, str] | None = None) -> Path:
    """``$variable`` when it is an absolute path (the spec says to ignore a relative one), else
    ``default`` under the home folder (``XDG_CACHE_HOME``, ``.cache``, say)."""
    env = os.environ if env is None else env
    value = env.get(variable, "")
    if value and Path(value).is_absolute():
        return Path(value)
    home = env.get("HOME")
    return (Path(home) if home else Path.home()) / default
