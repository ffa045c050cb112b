"""How runs read to a person: local times, short durations, the state in colour.

The API speaks ISO instants in UTC (or with an offset) and seconds as floats; an operator at a
terminal wants "02:00:03 in my zone" and "12s / typ 10s". These functions take the API's JSON
views (``run`` and ``attempt`` of the contract) and return text, nothing else. Every value
taken from the JSON is ``clean``: others wrote reasons, ``why`` texts and messages.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pysched.cli.output import clean, style
from pysched.engine.runs import FINISHED as _FINISHED

STATE_COLOURS: dict[str, str] = {
    "succeeded": "green",
    "failed": "red",
    "lost": "red",
    "running": "cyan",
    "retrying": "yellow",
    "held": "magenta",
    "blocked": "magenta",
}
"""States a person must notice get a colour; the quiet ones (scheduled, waiting, queued,
skipped, cancelled) stay plain."""

FINISHED = frozenset(state.value for state in _FINISHED)
"""Run states that stay until an operator acts, by their API names."""

SLOW_FACTOR = 1.5
"""A run taking this many times its typical duration shows the ratio, so it stands out."""


def local_time(iso: str | None) -> str:
    """An API instant in this machine's zone, to the second; empty for None."""
    if not iso:
        return ""
    try:
        instant = datetime.fromisoformat(iso)
    except (ValueError, TypeError):
        return clean(iso)
    return instant.astimezone().strftime("%Y-%m-%d %H:%M:%S")


def human_duration(seconds: float | None) -> str:
    """``850ms``, ``12s``, ``3m04s``, ``1h02m``, ``2d03h``; empty for None."""
    if seconds is None:
        return ""
    if seconds < 1:
        return f"{round(seconds * 1000)}ms"
    whole = round(seconds)
    if whole < 60:
        return f"{whole}s"
    minutes, secs = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return f"{hours}h{minutes:02d}m"
    days, hours = divmod(hours, 24)
    return f"{days}d{hours:02d}h"


def duration_cell(run: dict[str, Any]) -> str:
    """``12s / typ 10s``, with the ratio when the run is slow (``45s / typ 10s (4.5x)``)."""
    took: float | None = run.get("duration_s")
    typical: float | None = run.get("typical_duration_s")
    if took is None:
        return ""
    text = human_duration(took)
    if typical is None:
        return text
    text += f" / typ {human_duration(typical)}"
    if typical > 0 and took >= SLOW_FACTOR * typical:
        text += f" ({took / typical:.1f}x)"
    return text


def paint_state(state: str, padded: str | None = None) -> str:
    """``padded`` (default ``state``, ``clean``) in the state's colour, when colour is on."""
    return style(padded if padded is not None else clean(state), STATE_COLOURS.get(state))


def run_line(run: dict[str, Any]) -> str:
    """One line for a run an action returned: its id and state (and why, if there is one)."""
    line = f"{clean(run.get('run_id', '?'))}  {paint_state(str(run.get('state', '?')))}"
    reason = run.get("reason")
    return f"{line}  {clean(reason)}" if reason else line


def seconds_between(start: str | None, end: str | None) -> float | None:
    """Seconds from one API instant to another; None unless both are there and readable."""
    if not start or not end:
        return None
    try:
        return (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds()
    except (ValueError, TypeError):
        return None


def data_summary(data: Any) -> str:
    """The scalar fields of an event's ``data`` as ``key=value`` pairs, for one line."""
    if not isinstance(data, dict):
        return clean(data)
    fields: dict[str, Any] = data  # pyright: ignore[reportUnknownVariableType]
    return " ".join(
        f"{clean(key)}={clean(value)}"
        for key, value in fields.items()
        if isinstance(value, str | int | float | bool) and value != ""
    )


def event_line(event: dict[str, Any]) -> str:
    """One line for an API event (``{"id", "at", "kind", "data"}``): time, kind, then what
    happened in words — ``extract.2026-10-16.1  running (was queued)``, ``attempt 2 failed
    (exit 1)``, ``hold load.2026-10-16.1 by ann — vendor late``."""
    kind = clean(event.get("kind") or "")
    raw: Any = event.get("data")
    data: dict[str, Any] = dict(raw) if isinstance(raw, dict) else {}  # pyright: ignore[reportUnknownArgumentType]
    run_id = clean(data.pop("run_id", "") or "")
    if run_id:
        data.pop("job", None)  # the run id names it
    words: list[str] = []
    if kind == "action":
        why = clean(data.pop("why", ""))
        words.append(
            f"{clean(data.pop('action', '?'))} {clean(data.pop('target', ''))} by "
            f"{clean(data.pop('by', '?'))}" + (f" — {why}" if why else "")
        )
        data.pop("id", None)
        data.pop("at", None)
    elif kind in ("attempt_started", "attempt_ended") and run_id:
        data.pop("state", None)
        data.pop("reason", None)
        number = clean(data.pop("attempt", "?"))
        if kind == "attempt_started":
            words.append(f"{run_id}  attempt {number} started")
        else:
            outcome = str(data.pop("outcome", "") or "ended")
            exit_code = data.pop("exit_code", None)
            ended = f"{run_id}  attempt {number} {paint_state(outcome)}"
            words.append(ended + (f" (exit {clean(exit_code)})" if exit_code is not None else ""))
    elif run_id:
        state = str(data.pop("state", "") or "")
        before = clean(data.pop("before", None))
        line = f"{run_id}  {paint_state(state)}" + (f" (was {before})" if before else "")
        reason = clean(data.pop("reason", ""))
        words.append(line + (f"  {reason}" if reason else ""))
    rest = data_summary(data) if isinstance(raw, dict) else data_summary(raw)
    if rest:
        words.append(rest)
    return "  ".join([local_time(event.get("at")), f"{kind:<15}", *words]).rstrip()
