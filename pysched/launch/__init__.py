"""Launchers: how an attempt's command is started, watched and stopped."""

from __future__ import annotations

from pysched.launch.base import AttemptHandle, AttemptSpec, ExitStatus, Launcher

__all__ = ["AttemptHandle", "AttemptSpec", "ExitStatus", "Launcher"]
