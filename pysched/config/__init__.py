"""Reading a YAML config into a checked, frozen ``Config``.

``load_config(path)`` returns a ``Config`` or raises ``ConfigError`` carrying every problem,
each with its ``file:line:col``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pysched.config.model import (
    Backoff,
    CatchUp,
    Command,
    Condition,
    Config,
    Criticality,
    Dependency,
    Job,
    Overlap,
    Retries,
    SchedulerSettings,
)
from pysched.errors import ConfigError, Problem

__all__ = [
    "Backoff",
    "CatchUp",
    "Command",
    "Condition",
    "Config",
    "ConfigError",
    "Criticality",
    "Dependency",
    "Job",
    "Overlap",
    "Problem",
    "Retries",
    "SchedulerSettings",
    "load_config",
    "parse_config",
]

if TYPE_CHECKING:
    from pysched.config.loader import load_config, parse_config


def __getattr__(name: str) -> object:
    """The loader, on first use: it brings the YAML parser, which the CLI talking to a server
    never needs (it starts a good part faster without)."""
    if name in ("load_config", "parse_config"):
        from pysched.config import loader

        return getattr(loader, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
