"""The typer application: every command registered in one place."""

from __future__ import annotations

import typer

from pysched.cli import offline, serve_command, store_commands

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

app.command("serve")(serve_command.serve_command)
app.command("validate")(offline.validate)
app.command("forecast")(offline.forecast_command)
app.command("calendar")(offline.calendar_command)
cron_app.command("next")(offline.cron_next)
app.add_typer(cron_app, name="cron")
store_app.command("check")(store_commands.check)
app.add_typer(store_app, name="store")
