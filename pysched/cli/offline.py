"""Commands that need only a config file, no running server: validate, forecast, calendar, cron.

They are how an operator checks a change before deploying it: is the file right, what will run
on a given day, which days does a calendar close, when does an expression fire.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Annotated, Any
from zoneinfo import ZoneInfo

import typer

from pysched.cli.arguments import config_argument, parse_date, parse_instant, parse_zone
from pysched.cli.job_commands import remote_forecast
from pysched.cli.output import error_exit, fail, print_json, print_table, problem_json
from pysched.config import Config
from pysched.config.hints import did_you_mean
from pysched.engine.forecast import FORECAST_DAYS_MAX, forecast
from pysched.errors import ConfigError, CronError
from pysched.timing.calendar import DEFAULT_CALENDAR, Calendar
from pysched.timing.cron import Cron

ConfigArg = Annotated[Path, config_argument("The YAML config file.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]


def _load(path: Path, as_json: bool, *, summary: bool = False) -> Config:
    """The config at ``path``; its problems are exit 1, with ``--json`` as ``{"ok": false,
    "problems"}`` (and with ``summary``, the rest of ``validate``'s keys, unknown: null)."""
    from pysched.config import load_config  # here: the YAML parser is slow to import

    try:
        return load_config(path)
    except ConfigError as exc:
        if as_json:
            document: dict[str, Any] = {
                "ok": False,
                "problems": [problem_json(p) for p in exc.problems],
            }
            if summary:
                document |= {"warnings": [], "jobs": None, "calendars": None, "pools": None}
            print_json(document)
            raise typer.Exit(1) from None
        raise fail(str(exc)) from None


def _local(instant: datetime) -> str:
    return instant.strftime("%Y-%m-%d %H:%M %Z (%z)")


def _utc(instant: datetime) -> str:
    return instant.astimezone(UTC).strftime("%Y-%m-%d %H:%MZ")


def validate(
    config: ConfigArg,
    as_json: JsonOpt = False,
    after: Annotated[
        str | None,
        typer.Option("--after", help="Show next firings after this ISO instant (default: now)."),
    ] = None,
) -> None:
    """Check a config: print every problem (exit 1), or a summary with each job's next firing."""
    loaded = _load(config, as_json, summary=True)
    start = (
        parse_instant(after, "--after", loaded.scheduler.timezone)
        if after is not None
        else datetime.now(UTC)
    )
    jobs: list[dict[str, Any]] = []
    for name, job in loaded.jobs.items():
        firing = job.schedule.next_firing(start) if job.schedule else None
        jobs.append(
            {
                "name": name,
                "enabled": job.enabled,
                "schedule": [str(c) for c in job.schedule.crons] if job.schedule else [],
                "timezone": job.timezone.key,
                "next_firing": firing.at.isoformat() if firing else None,
                "next_run_date": firing.run_date.isoformat() if firing else None,
                "depends_on": [d.job for d in job.depends_on],
            }
        )
    if as_json:
        print_json(
            {
                "ok": True,
                "problems": [],
                "warnings": [problem_json(w) for w in loaded.warnings],
                "jobs": jobs,
                "calendars": list(loaded.calendars),
                "pools": dict(loaded.pools),
            }
        )
        return
    for warning in loaded.warnings:
        typer.echo(f"warning: {warning}", err=True)
    count = len(loaded.jobs)
    typer.echo(
        f"{config}: OK — {count} job{'s' if count != 1 else ''}, "
        f"{len(loaded.calendars)} calendar(s), {len(loaded.pools)} pool(s)"
    )
    rows: list[list[str]] = []
    for entry, job in zip(jobs, loaded.jobs.values(), strict=True):
        if not job.enabled:
            when, utc, run_date = "disabled", "", ""
        elif entry["next_firing"]:
            at = datetime.fromisoformat(entry["next_firing"]).astimezone(job.timezone)
            when, utc, run_date = _local(at), _utc(at), entry["next_run_date"]
        elif job.schedule is None:
            when, utc, run_date = "after " + ", ".join(entry["depends_on"]), "", ""
        else:
            when, utc, run_date = "no firing within 3 years", "", ""
        rows.append([entry["name"], when, utc, run_date])
    print_table(["JOB", "NEXT FIRING (job's zone)", "UTC", "RUN DATE"], rows)


OFFLINE_DAYS_MAX = 2 * 366
"""The longest window ``forecast CONFIG`` works out, in days."""


def _window(
    on: str | None, start: str | None, end: str | None, today: date, *, remote: bool
) -> tuple[date, date]:
    if on is not None and (start is not None or end is not None):
        raise typer.BadParameter("give either --date or --from/--to, not both", param_hint="--date")
    if on is not None:
        day = parse_date(on, "--date")
        return day, day
    first = parse_date(start, "--from") if start is not None else today
    last = parse_date(end, "--to") if end is not None else first
    _check_order(first, last, given_from=start is not None)
    if remote and (last - first).days >= FORECAST_DAYS_MAX:
        raise typer.BadParameter(
            f"the server forecasts at most {FORECAST_DAYS_MAX} days; give the config file "
            "(forecast CONFIG) for a window of up to two years",
            param_hint="--to",
        )
    if (last - first).days > OFFLINE_DAYS_MAX:
        raise typer.BadParameter("a window is at most two years", param_hint="--to")
    return first, last


def _check_order(first: date, last: date, *, given_from: bool) -> None:
    """``--to`` must not come before the start: the one given, or the default (today)."""
    if last < first:
        start = f"--from {first}" if given_from else f"the default start (today, {first})"
        raise typer.BadParameter(f"--to {last} is before {start}", param_hint="--to")


def forecast_command(
    ctx: typer.Context,
    config: Annotated[
        Path | None,
        config_argument("The YAML config file; without it, the running server is asked."),
    ] = None,
    on: Annotated[str | None, typer.Option("--date", help="One day, YYYY-MM-DD.")] = None,
    start: Annotated[str | None, typer.Option("--from", help="First day of a window.")] = None,
    end: Annotated[str | None, typer.Option("--to", help="Last day of a window.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Every run a config would create in a window of days (default: today).

    Given a CONFIG it works offline, from the file; without one it asks the running server,
    whose config is the one in force."""
    if config is None:
        first, last = _window(on, start, end, datetime.now().astimezone().date(), remote=True)
        remote_forecast(ctx, first, last, as_json=as_json)
        return
    loaded = _load(config, as_json)
    today = datetime.now(loaded.scheduler.timezone).date()
    first, last = _window(on, start, end, today, remote=False)
    runs = forecast(loaded, first, last)
    if as_json:
        print_json([run.to_json() for run in runs])
        return
    rows = [
        [
            _local(run.fires_at),
            _utc(run.fires_at),
            run.job,
            run.run_date.isoformat(),
            run.trigger if run.upstream is None else f"after {run.upstream}",
        ]
        for run in runs
    ]
    print_table(["FIRES (job's zone)", "UTC", "JOB", "RUN DATE", "TRIGGER"], rows)
    typer.echo(f"{len(runs)} run(s) from {first} to {last}")


def calendar_command(
    config: ConfigArg,
    name: Annotated[str, typer.Argument(help="The calendar's name in the config.", metavar="NAME")],
    start: Annotated[str | None, typer.Option("--from", help="First day (default today).")] = None,
    end: Annotated[str | None, typer.Option("--to", help="Last day (default +30 days).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """List a calendar's business days and holidays (with the holiday's name)."""
    loaded = _load(config, as_json)
    calendar: Calendar | None = loaded.calendars.get(name)
    if calendar is None and name == DEFAULT_CALENDAR.name:
        calendar = DEFAULT_CALENDAR
    if calendar is None:
        known = ", ".join(loaded.calendars) or "none"
        hint = did_you_mean(name, loaded.calendars)
        raise error_exit(
            f"unknown calendar {name!r}{' — ' + hint if hint else ''} (calendars in {config}: "
            f"{known})",
            as_json=as_json,
            code="not_found",
            field="NAME",
        )
    first = parse_date(start, "--from") if start is not None else datetime.now(UTC).date()
    last = parse_date(end, "--to") if end is not None else first + timedelta(days=30)
    _check_order(first, last, given_from=start is not None)
    if (last - first).days > 366 * 10:
        raise typer.BadParameter("a window is at most ten years", param_hint="--to")
    days: list[dict[str, Any]] = []
    day = first
    while day <= last:
        days.append(
            {
                "date": day.isoformat(),
                "weekday": day.strftime("%a"),
                "business_day": calendar.is_business_day(day),
                "holiday": calendar.holiday_name(day),
            }
        )
        day += timedelta(days=1)
    if as_json:
        print_json(
            {
                "calendar": name,
                "from": first.isoformat(),
                "to": last.isoformat(),
                "business_days": [d["date"] for d in days if d["business_day"]],
                "holidays": [
                    {"date": d["date"], "name": d["holiday"]} for d in days if d["holiday"]
                ],
                "days": days,
            }
        )
        return
    rows = [
        [
            d["date"],
            d["weekday"],
            "business day" if d["business_day"] else "closed",
            d["holiday"] or "",
        ]
        for d in days
    ]
    print_table(["DATE", "DAY", "STATUS", "HOLIDAY"], rows)
    open_days = sum(1 for d in days if d["business_day"])
    typer.echo(f"{open_days} business day(s) of {len(days)} in calendar {name!r}")


def cron_next(
    expression: Annotated[str, typer.Argument(help="A cron expression, quoted.", metavar="EXPR")],
    tz: Annotated[str, typer.Option("--tz", help="IANA time zone.")] = "UTC",
    after: Annotated[
        str | None, typer.Option("--after", help="ISO instant to start after (default now).")
    ] = None,
    count: Annotated[int, typer.Option("--count", min=1, max=1000, help="How many firings.")] = 5,
    as_json: JsonOpt = False,
) -> None:
    """The next firings of a cron expression in a time zone (DST rule applied)."""
    zone: ZoneInfo = parse_zone(tz, "--tz")
    start = parse_instant(after, "--after", zone) if after is not None else datetime.now(UTC)
    try:
        cron = Cron.parse(expression)
        firings: list[datetime] = []
        for at in cron.iter_after(start, zone):
            firings.append(at)
            if len(firings) >= count:
                break
    except CronError as exc:
        if as_json:
            print_json({"ok": False, "error": str(exc), "field": exc.field, "token": exc.token})
            raise typer.Exit(1) from None
        raise fail(f"error: {exc}") from None
    if as_json:
        print_json(
            [
                {"fires_at": at.isoformat(), "fires_at_utc": at.astimezone(UTC).isoformat()}
                for at in firings
            ]
        )
        return
    for at in firings:
        typer.echo(f"{at.isoformat()}  ({_utc(at)})")
