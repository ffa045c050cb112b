"""Reading a YAML config into a checked, frozen ``Config``.

``load_config(path)`` returns a ``Config`` or raises ``ConfigError`` carrying every problem,
each with its ``file:line:col``.
"""

from __future__ import annotations

from pysched.config.loader import load_config, parse_config
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
