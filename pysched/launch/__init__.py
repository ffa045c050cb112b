"""Launchers: how an attempt's command is started, watched and stopped."""

from __future__ import annotations

from pysched.launch.base import (
    NOT_STARTED,
    AttemptHandle,
    AttemptSpec,
    ExitStatus,
    Launcher,
    NotStarted,
)

__all__ = ["NOT_STARTED", "AttemptHandle", "AttemptSpec", "ExitStatus", "Launcher", "NotStarted"]
