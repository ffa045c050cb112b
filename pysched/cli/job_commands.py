"""``pysched jobs`` and the server's side of ``pysched forecast``: what the running config holds.

``jobs`` asks the server rather than reading the YAML because the server's config is the one in
force (the file may have been edited since the last reload) and only the server knows which
jobs are held and how their last runs went.
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Annotated, Any

import typer

from pysched.cli.client import ask, session
from pysched.cli.output import clean, print_json, print_table
from pysched.cli.run_display import local_time, paint_state


def _after(job: dict[str, Any]) -> str:
    """A dependency-only job's SCHEDULE cell: ``after load``, ``after load fails``,
    ``after load (previous day)``; ``manual`` with no dependency."""
    parts: list[str] = []
    names: list[str] = job.get("depends_on") or []
    listed: list[dict[str, Any]] = job.get("dependencies") or [{"job": n} for n in names]
    for dependency in listed:
        text = str(dependency.get("job", ""))
        on = dependency.get("on")
        if on == "failure":
            text += " fails"
        elif on == "done":
            text += " ends"
        offset = dependency.get("date_offset") or 0
        if offset == -1:
            text += " (previous business day)"
        elif offset:
            text += f" ({-int(offset)} business days before)"
        parts.append(text)
    return "after " + ", ".join(parts) if parts else "manual"


def jobs(
    ctx: typer.Context,
    as_json: Annotated[bool, typer.Option("--json", help="Print the server's JSON.")] = False,
) -> None:
    """Every job: its schedule, next firing (local time), last run's state, and whether held."""
    answer = ask(ctx, as_json, "GET", "/api/v1/jobs")
    if answer is None:
        return
    listed: list[dict[str, Any]] = answer.get("jobs") or []
    rows: list[list[str]] = []
    for job in listed:
        firings: list[str] = job.get("next_firings") or []
        schedule = job.get("schedule") or _after(job)
        if not job.get("enabled", True):
            schedule += " (disabled)"
        rows.append(
            [
                str(job.get("name", "")),
                str(schedule),
                local_time(firings[0]) if firings else "",
                _last_state(job),
                "held" if job.get("held") else "",
            ]
        )
    print_table(
        ["NAME", "SCHEDULE", "NEXT", "LAST RUN", "HELD"],
        rows,
        paint=lambda column, cell, padded: paint_state(cell, padded) if column == 3 else padded,
    )


def _last_state(job: dict[str, Any]) -> str:
    """The state of the job's most recently created run (whatever order the list is in)."""
    runs: list[dict[str, Any]] = job.get("recent_runs") or []
    if not runs:
        return ""
    newest = max(runs, key=lambda run: str(run.get("created_at") or ""))
    return str(newest.get("state", ""))


def remote_forecast(ctx: typer.Context, first: date, last: date, *, as_json: bool) -> None:
    """``pysched forecast`` without a CONFIG: the running server's forecast, printed as the
    offline one is (the same table, and with ``--json`` the same list of runs)."""
    params = (
        {"date": first.isoformat()}
        if first == last
        else {"from": first.isoformat(), "to": last.isoformat()}
    )
    with session(ctx, as_json) as api:
        answer: dict[str, Any] = api.get("/api/v1/forecast", params=params)
    runs: list[dict[str, Any]] = answer.get("runs") or []
    shaped = [_shape(run) for run in runs]
    if as_json:
        print_json(shaped)
        return
    rows = [
        [
            _zoned(run["fires_at"]),
            _utc(run["fires_at"]),
            str(run["job"]),
            str(run["run_date"]),
            str(run["trigger"]) if run["upstream"] is None else f"after {run['upstream']}",
        ]
        for run in shaped
    ]
    print_table(["FIRES (job's zone)", "UTC", "JOB", "RUN DATE", "TRIGGER"], rows)
    shown_from, shown_to = answer.get("from", first.isoformat()), answer.get("to", last.isoformat())
    typer.echo(f"{len(runs)} run(s) from {clean(shown_from)} to {clean(shown_to)}")


def _shape(run: dict[str, Any]) -> dict[str, Any]:
    """The offline forecast's JSON shape: the API's fields plus ``fires_at_utc``."""
    fires_at = str(run.get("fires_at", ""))
    try:
        utc: str | None = datetime.fromisoformat(fires_at).astimezone(UTC).isoformat()
    except ValueError:
        utc = None
    return {
        "job": run.get("job"),
        "run_date": run.get("run_date"),
        "fires_at": fires_at,
        "fires_at_utc": utc,
        "trigger": run.get("trigger"),
        "upstream": run.get("upstream"),
    }


def _zoned(iso: str) -> str:
    """The instant as the server wrote it (the job's zone), with its offset: the API gives
    the offset but not the zone's name."""
    try:
        return datetime.fromisoformat(iso).strftime("%Y-%m-%d %H:%M (%z)")
    except ValueError:
        return iso


def _utc(iso: str) -> str:
    try:
        return datetime.fromisoformat(iso).astimezone(UTC).strftime("%Y-%m-%d %H:%MZ")
    except ValueError:
        return ""
