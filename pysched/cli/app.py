"""The typer application: the global options and every command, registered in one place."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import httpx
import typer

from pysched.cli import (
    action_commands,
    config_commands,
    job_commands,
    log_command,
    offline,
    run_views,
    serve_command,
    store_commands,
    token_commands,
    watch_command,
)
from pysched.cli.context import Globals

app = typer.Typer(
    name="pysched",
    help="pysched: a workload scheduler — cron in every time zone, business calendars, "
    "dependencies, retries and pools.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
cron_app = typer.Typer(help="Work with cron expressions.", no_args_is_help=True)
store_app = typer.Typer(help="Work with the journal in a state dir.", no_args_is_help=True)
config_app = typer.Typer(help="The config versions the server has applied.", no_args_is_help=True)
token_app = typer.Typer(help="Create, list and revoke API tokens.", no_args_is_help=True)


@app.callback()
def global_options(
    ctx: typer.Context,
    url: Annotated[
        str | None,
        typer.Option(
            "--url",
            envvar="PYSCHED_URL",
            help="The server's base URL (default: from the config, the running serve, or "
            "http://127.0.0.1:8080).",
            show_default=False,
        ),
    ] = None,
    token: Annotated[
        str | None,
        typer.Option(
            "--token",
            envvar="PYSCHED_TOKEN",
            help="The API token (default: the local admin token of the config or the "
            "running serve).",
            show_default=False,
        ),
    ] = None,
    config: Annotated[
        Path | None,
        typer.Option(
            "-c",
            "--config",
            envvar="PYSCHED_CONFIG",
            exists=True,
            dir_okay=False,
            help="The config: where the server listens and where its admin token is.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """pysched: a workload scheduler — cron in every time zone, business calendars,
    dependencies, retries and pools."""
    if url is not None:
        check_url(url)
    ctx.obj = Globals(url=url, token=token, config=config)


def check_url(url: str) -> None:
    """``--url`` must be an http(s) URL with a host; anything else is a usage mistake."""
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL as exc:
        raise typer.BadParameter(f"{url!r} is not a URL: {exc}", param_hint="--url") from None
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise typer.BadParameter(
            f"{url!r}: give an http:// or https:// URL with a host, like http://127.0.0.1:8080",
            param_hint="--url",
        )


app.command("serve")(serve_command.serve_command)
app.command("validate")(offline.validate)
app.command("forecast")(offline.forecast_command)
app.command("calendar")(offline.calendar_command)
cron_app.command("next")(offline.cron_next)
app.add_typer(cron_app, name="cron")
store_app.command("check")(store_commands.check)
app.add_typer(store_app, name="store")

app.command("trigger")(action_commands.trigger)
app.command("status")(run_views.status)
app.command("show")(run_views.show)
app.command("log")(log_command.log)
for _action in action_commands.RUN_ACTIONS:
    app.command(_action)(action_commands.run_action(_action))
app.command("hold-job")(action_commands.hold_job)
app.command("release-job")(action_commands.release_job)
app.command("backfill")(action_commands.backfill)
app.command("jobs")(job_commands.jobs)
app.command("watch")(watch_command.watch)
app.command("reload")(config_commands.reload)
config_app.command("versions")(config_commands.versions)
config_app.command("show")(config_commands.show)
config_app.command("diff")(config_commands.diff)
app.add_typer(config_app, name="config")
token_app.command("create")(token_commands.create)
token_app.command("list")(token_commands.list_tokens)
token_app.command("revoke")(token_commands.revoke)
app.add_typer(token_app, name="token")
