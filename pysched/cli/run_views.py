"""``pysched status`` and ``pysched show``: what runs exist and how each is doing.

``status`` is the glance: a row per run with its state, attempts, start, and its duration next
to the job's typical one, then one line of counts by state. ``show`` is the close look at one
run: its fields, every attempt, and the recent events and operator actions on it.
"""

from __future__ import annotations

from collections import Counter
from typing import Annotated, Any

import typer

from pysched.cli.arguments import RunIdArg, parse_date
from pysched.cli.client import api_path, session
from pysched.cli.output import clean, print_json, print_table
from pysched.cli.run_display import (
    duration_cell,
    event_line,
    human_duration,
    local_time,
    paint_state,
    seconds_between,
)
from pysched.config.hints import did_you_mean
from pysched.engine.runs import RunState

JsonOpt = Annotated[bool, typer.Option("--json", help="Print the server's JSON.")]
STATES = [state.value for state in RunState]


def parse_state(text: str) -> str:
    """A run state's API name; anything else is a usage mistake (exit 2) naming the choices."""
    if text in STATES:
        return text
    hint = did_you_mean(text, STATES)
    raise typer.BadParameter(
        f"unknown state {text!r}{' — ' + hint if hint else ''} (states: {', '.join(STATES)})",
        param_hint="--state",
    )


def status(
    ctx: typer.Context,
    on: Annotated[str | None, typer.Option("--date", help="Only runs for this run date.")] = None,
    job: Annotated[str | None, typer.Option("--job", help="Only this job's runs.")] = None,
    state: Annotated[str | None, typer.Option("--state", help="Only runs in this state.")] = None,
    limit: Annotated[
        int | None,
        typer.Option("--limit", min=1, max=10000, help="At most this many, the newest."),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """A row per run (oldest first): state, attempts, start, duration against the typical."""
    params: dict[str, Any] = {
        "date": parse_date(on, "--date").isoformat() if on is not None else None,
        "job": job,
        "state": parse_state(state) if state is not None else None,
        "limit": limit,
    }
    with session(ctx, as_json) as api:
        answer: dict[str, Any] = api.get("/api/v1/runs", params=params)
        if as_json:
            print_json(answer)
            return
        runs: list[dict[str, Any]] = answer.get("runs") or []
        total = answer.get("count")
        print_status(runs, total if isinstance(total, int) else len(runs))
        if not runs and job is not None and not api.has_job(job):
            typer.echo(f"note: the server has no job named {clean(job)!r}", err=True)


def print_status(runs: list[dict[str, Any]], total: int) -> None:
    """The table, and a last line counting the runs by state; when the server sent only the
    newest ``len(runs)`` of ``total`` (``--limit``, or its default of 1,000), it says so."""
    rows = [
        [
            str(run.get("run_id", "")),
            str(run.get("state", "")),
            str(len(run.get("attempts") or [])),
            local_time(run.get("started_at")),
            duration_cell(run),
            str(run.get("reason") or ""),
        ]
        for run in runs
    ]
    print_table(
        ["RUN", "STATE", "ATTEMPTS", "STARTED", "DURATION", "REASON"],
        rows,
        paint=lambda column, cell, padded: paint_state(cell, padded) if column == 1 else padded,
    )
    counts = Counter(str(run.get("state", "")) for run in runs)
    order = [s for s in STATES if s in counts] + sorted(set(counts) - set(STATES))
    summary = ", ".join(f"{counts[s]} {s}" for s in order)
    shown = f"{len(runs)} run{'s' if len(runs) != 1 else ''}"
    if total > len(runs):
        shown = f"the newest {shown} of {total} (raise --limit to see more, up to 10000)"
    typer.echo(shown + (f": {summary}" if runs else ""))


def show(ctx: typer.Context, run_id: RunIdArg, as_json: JsonOpt = False) -> None:
    """One run in full: its fields, its attempts, recent events and operator actions."""
    with session(ctx, as_json) as api:
        run: dict[str, Any] = api.get(api_path("/api/v1/runs", run_id))
    if as_json:
        print_json(run)
        return
    fields = [
        ("run", run.get("run_id")),
        ("job", run.get("job")),
        ("run date", run.get("run_date")),
        ("state", paint_state(str(run.get("state", "")))),
        ("reason", run.get("reason")),
        ("trigger", run.get("trigger")),
        ("upstream", run.get("upstream")),
        ("forced", "yes" if run.get("forced") else None),
        ("created", local_time(run.get("created_at"))),
        ("scheduled for", local_time(run.get("scheduled_for"))),
        ("next try", local_time(run.get("next_try_at"))),
        ("started", local_time(run.get("started_at"))),
        ("ended", local_time(run.get("ended_at"))),
        ("duration", duration_cell(run)),
    ]
    for name, value in fields:
        if value:
            # the state is painted already (and paint_state cleans it), the rest is raw
            text = value if name == "state" else clean(value)
            typer.echo(f"{name + ':':<15}{text}")
    attempts: list[dict[str, Any]] = run.get("attempts") or []
    typer.echo("")
    if attempts:
        print_table(
            ["ATTEMPT", "STARTED", "ENDED", "TOOK", "EXIT", "OUTCOME", "MESSAGE"],
            [_attempt_row(a) for a in attempts],
        )
    else:
        typer.echo("no attempts yet")
    events: list[dict[str, Any]] = run.get("events") or []
    if events:
        typer.echo("\nrecent events:")
        for event in events:
            typer.echo(f"  {event_line(event)}")
    actions: list[dict[str, Any]] = run.get("actions") or []
    if actions:
        typer.echo("\noperator actions:")
        for action in actions:
            why = f" — {clean(action['why'])}" if action.get("why") else ""
            typer.echo(
                f"  {local_time(action.get('at'))}  {clean(action.get('action', ''))} by "
                f"{clean(action.get('by', '?'))}{why}"
            )


def _attempt_row(attempt: dict[str, Any]) -> list[str]:
    started, ended = attempt.get("started_at"), attempt.get("ended_at")
    exit_code = attempt.get("exit_code")
    signal = attempt.get("signal")
    code = f"signal {signal}" if signal is not None else ("" if exit_code is None else exit_code)
    return [
        str(attempt.get("number", "")),
        local_time(started),
        local_time(ended),
        human_duration(seconds_between(started, ended)),
        str(code),
        str(attempt.get("outcome") or ("running" if not ended else "")),
        str(attempt.get("message") or ""),
    ]
