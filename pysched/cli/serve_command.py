"""``pysched serve CONFIG``: run the scheduler and its HTTP API in the foreground."""

from __future__ import annotations

import enum
from pathlib import Path
from typing import Annotated

import typer

from pysched.cli.arguments import config_argument
from pysched.cli.context import globals_of
from pysched.cli.output import fail
from pysched.config.model import Listen
from pysched.errors import ConfigError, StoreError, TokenFileError


class LogFormat(enum.Enum):
    HUMAN = "human"
    JSON = "json"


def serve_command(
    ctx: typer.Context,
    config: Annotated[
        Path | None,
        config_argument("The YAML config file (default: the global -c / PYSCHED_CONFIG)."),
    ] = None,
    listen: Annotated[
        str | None,
        typer.Option(
            "--listen",
            help="HOST:PORT to serve the API on (default: scheduler.listen, else "
            "127.0.0.1:8080; port 0 picks a free one).",
        ),
    ] = None,
    log_format: Annotated[
        LogFormat,
        typer.Option("--log-format", help="human lines, or one JSON object per line."),
    ] = LogFormat.HUMAN,
) -> None:
    """Run the scheduler until SIGTERM or SIGINT; SIGHUP reloads the config.

    A stop leaves running attempts to their minders: the next start adopts them."""
    import trio

    from pysched.config import load_config
    from pysched.launch.local import LocalLauncher
    from pysched.log_format import configure_logging
    from pysched.service import serve
    from pysched.systemd import SystemdNotifier

    address: Listen | None = None
    if listen is not None:
        try:
            address = Listen.parse(listen)
        except ValueError as exc:
            raise typer.BadParameter(
                f"{listen!r}: {exc} — write HOST:PORT, like 127.0.0.1:8080", param_hint="--listen"
            ) from None
    config = config or globals_of(ctx).config
    if config is None:
        raise typer.BadParameter(
            "give the config file: pysched serve CONFIG (or -c CONFIG / PYSCHED_CONFIG)",
            param_hint="CONFIG",
        )
    try:
        loaded = load_config(config)
    except ConfigError as exc:
        raise fail(str(exc)) from None
    for warning in loaded.warnings:
        typer.echo(f"warning: {warning}", err=True)
    configure_logging(fmt=log_format.value)
    notifier = SystemdNotifier.from_environ(unset=True)  # jobs must not inherit it
    try:
        with notifier:
            result = trio.run(
                lambda: serve(
                    loaded,
                    launcher_factory=lambda c: LocalLauncher(
                        c.scheduler.log_dir, cache_dir=c.scheduler.minder_dir
                    ),
                    listen=address,
                    notifier=notifier,
                )
            )
    except (StoreError, TokenFileError) as exc:
        raise fail(f"error: {exc}") from None
    if result.code != 0:
        raise fail(f"error: {result.reason}", result.code)
