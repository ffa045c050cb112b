"""Where an attempt's output lives under ``log_dir``: one rule, shared by the local launcher
(which writes there) and the API (which reads there).

Attempt ``n`` of run ``r`` of job ``j`` for run date ``d``::

    log_dir/j/d/r.n.out   (stdout)
    log_dir/j/d/r.n.err   (stderr)
"""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Literal

Stream = Literal["stdout", "stderr"]
SUFFIXES: dict[Stream, str] = {"stdout": ".out", "stderr": ".err"}


def attempt_folder(log_dir: Path, job: str, run_date: date) -> Path:
    return log_dir / job / run_date.isoformat()


def attempt_output(
    log_dir: Path, job: str, run_date: date, run_id: str, attempt: int, stream: Stream
) -> Path:
    """The file holding ``stream`` of attempt ``attempt`` of run ``run_id``."""
    return attempt_folder(log_dir, job, run_date) / f"{run_id}.{attempt}{SUFFIXES[stream]}"
