"""Commands that change things: trigger, backfill, the run actions, holding and releasing jobs.

Each sends one request and prints what came of it, one line per run (its id and state), so the
operator sees at once whether ``rerun`` left the run ``queued`` or the server refused. ``--why``
goes with every one of them into the audit trail next to the token's name.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

import typer

from pysched.cli.arguments import JobArg, RunIdArg, parse_date
from pysched.cli.client import api_path, ask, session
from pysched.cli.output import clean, print_json
from pysched.cli.run_display import run_line

JsonOpt = Annotated[bool, typer.Option("--json", help="Print the server's JSON.")]
WhyOpt = Annotated[
    str | None, typer.Option("--why", help="Why, for the audit trail.", show_default=False)
]

RUN_ACTIONS: dict[str, str] = {
    "hold": "Hold a run: nothing moves it until it is released.",
    "release": "Release a held run: it is judged again as if just created.",
    "cancel": "Cancel an unfinished run (a running attempt is killed first).",
    "kill": "Kill a running run's attempt; the run fails and is not retried.",
    "rerun": "Run a finished run again, with its full retry count.",
    "force": "Queue a run now, ignoring its dependencies, overlap and retry wait.",
    "mark-success": "Mark a run succeeded, so its dependents may go.",
}
"""The actions of ``POST /api/v1/runs/{run_id}/{action}``, each a command of its own."""


def _body(why: str | None, **fields: Any) -> dict[str, Any]:
    body = {key: value for key, value in fields.items() if value is not None}
    if why:
        body["why"] = why
    return body


def trigger(
    ctx: typer.Context,
    job: JobArg,
    run_date: Annotated[
        str | None,
        typer.Option("--run-date", help="The run date (default: the job's rule for today)."),
    ] = None,
    why: WhyOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Create a run of a job now (a manual trigger) and print it."""
    day = parse_date(run_date, "--run-date").isoformat() if run_date is not None else None
    with session(ctx, as_json) as api:
        run: dict[str, Any] = api.post(
            api_path("/api/v1/jobs", job, "trigger"), _body(why, run_date=day)
        )
    if as_json:
        print_json(run)
        return
    typer.echo(run_line(run))


def backfill(
    ctx: typer.Context,
    job: JobArg,
    start: Annotated[str, typer.Option("--from", help="First run date, YYYY-MM-DD.")],
    end: Annotated[str, typer.Option("--to", help="Last run date, YYYY-MM-DD.")],
    why: WhyOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Create a run of a job for each business day of a window (by the job's calendar)."""
    first, last = parse_date(start, "--from"), parse_date(end, "--to")
    if last < first:
        raise typer.BadParameter(f"--to {last} is before --from {first}", param_hint="--to")
    body = _body(why, **{"from": first.isoformat(), "to": last.isoformat()})
    answer = ask(ctx, as_json, "POST", api_path("/api/v1/jobs", job, "backfill"), body=body)
    if answer is None:
        return
    runs: list[dict[str, Any]] = answer.get("runs") or []
    for run in runs:
        typer.echo(run_line(run))
    if not runs:
        typer.echo(
            f"0 runs created: no day from {first} to {last} is a business day of {clean(job)}'s "
            "calendar (see pysched calendar CONFIG NAME)"
        )
        return
    typer.echo(f"{len(runs)} run{'s' if len(runs) != 1 else ''} created")


def hold_job(ctx: typer.Context, job: JobArg, why: WhyOpt = None, as_json: JsonOpt = False) -> None:
    """Hold a job: its new runs are created held, until the job is released."""
    answer = ask(ctx, as_json, "POST", api_path("/api/v1/jobs", job, "hold"), body=_body(why))
    if answer is None:
        return
    typer.echo(f"job {clean(answer.get('job', job))} held")


def release_job(
    ctx: typer.Context, job: JobArg, why: WhyOpt = None, as_json: JsonOpt = False
) -> None:
    """Release a held job, and the runs it held."""
    answer = ask(ctx, as_json, "POST", api_path("/api/v1/jobs", job, "release"), body=_body(why))
    if answer is None:
        return
    typer.echo(f"job {clean(answer.get('job', job))} released")
    released: list[dict[str, Any]] = answer.get("released") or []
    for run in released:
        typer.echo(run_line(run))


def run_action(action: str) -> Callable[..., None]:
    """The command for one run action: ``pysched <action> RUN_ID [--why TEXT] [--json]``."""

    def command(
        ctx: typer.Context, run_id: RunIdArg, why: WhyOpt = None, as_json: JsonOpt = False
    ) -> None:
        with session(ctx, as_json) as api:
            run: dict[str, Any] = api.post(api_path("/api/v1/runs", run_id, action), _body(why))
        if as_json:
            print_json(run)
            return
        typer.echo(run_line(run))

    command.__doc__ = RUN_ACTIONS[action]
    command.__name__ = action.replace("-", "_")
    return command
