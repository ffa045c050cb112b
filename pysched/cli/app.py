"""The typer application: the global options and every command, registered in one place.

Every command and group is built with ``pysched.cli.usage``'s classes, which apply the rules
all of them share (no empty or overlong text, hints for misplaced options, ...)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

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
from pysched.cli.arguments import parse_url, token_problem
from pysched.cli.context import Globals
from pysched.cli.usage import Command, Group

app = typer.Typer(
    name="pysched",
    help="pysched: a workload scheduler — cron in every time zone, business calendars, "
    "dependencies, retries and pools.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    cls=Group,
)
cron_app = typer.Typer(help="Work with cron expressions.", no_args_is_help=True, cls=Group)
store_app = typer.Typer(
    help="Work with the journal in a state dir.", no_args_is_help=True, cls=Group
)
config_app = typer.Typer(
    help="The config versions the server has applied.", no_args_is_help=True, cls=Group
)
token_app = typer.Typer(help="Create, list and revoke API tokens.", no_args_is_help=True, cls=Group)


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
    config_text: Annotated[
        str | None,
        typer.Option(
            "-c",
            "--config",
            envvar="PYSCHED_CONFIG",
            help="The config: where the server listens and where its admin token is.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """pysched: a workload scheduler — cron in every time zone, business calendars,
    dependencies, retries and pools."""
    if url is not None:
        url = parse_url(url, "--url")
    if token is not None:
        problem = token_problem(token)
        if problem is not None:
            raise typer.BadParameter(problem, param_hint="--token / PYSCHED_TOKEN")
    config = _config_file(config_text) if config_text is not None else None
    ctx.obj = Globals(url=url, token=token, config=config)


def _config_file(text: str) -> Path:
    """``-c`` / ``PYSCHED_CONFIG``: an existing file. Checked here rather than by click, whose
    check read an empty value as the current folder and called it a directory; an empty value
    is refused before this by ``usage.check_text_values``, as for every option."""
    hint = "-c / --config / PYSCHED_CONFIG"
    path = Path(text)
    if path.is_dir():
        message = f"{text!r} is a folder: give the config file in it"
        raise typer.BadParameter(message, param_hint=hint)
    if not path.exists():
        raise typer.BadParameter(f"Path {text!r} does not exist.", param_hint=hint)
    if not os.access(path, os.R_OK):
        raise typer.BadParameter(f"{text!r} is not readable by this user", param_hint=hint)
    return path


def _add(group: typer.Typer, name: str, command: Callable[..., Any]) -> None:
    group.command(name, cls=Command)(command)


_add(app, "serve", serve_command.serve_command)
_add(app, "validate", offline.validate)
_add(app, "forecast", offline.forecast_command)
_add(app, "calendar", offline.calendar_command)
_add(cron_app, "next", offline.cron_next)
app.add_typer(cron_app, name="cron")
_add(store_app, "check", store_commands.check)
app.add_typer(store_app, name="store")

_add(app, "trigger", action_commands.trigger)
_add(app, "status", run_views.status)
_add(app, "show", run_views.show)
_add(app, "log", log_command.log)
for _action in action_commands.RUN_ACTIONS:
    _add(app, _action, action_commands.run_action(_action))
_add(app, "hold-job", action_commands.hold_job)
_add(app, "release-job", action_commands.release_job)
_add(app, "backfill", action_commands.backfill)
_add(app, "jobs", job_commands.jobs)
_add(app, "watch", watch_command.watch)
_add(app, "reload", config_commands.reload)
_add(config_app, "versions", config_commands.versions)
_add(config_app, "show", config_commands.show)
_add(config_app, "diff", config_commands.diff)
app.add_typer(config_app, name="config")
_add(token_app, "create", token_commands.create)
_add(token_app, "list", token_commands.list_tokens)
_add(token_app, "revoke", token_commands.revoke)
app.add_typer(token_app, name="token")
