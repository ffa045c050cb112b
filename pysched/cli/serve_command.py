"""``pysched serve CONFIG``: run the scheduler in the foreground."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import trio
import typer

from pysched.cli.output import fail
from pysched.config import ConfigError, load_config
from pysched.errors import StoreError


def serve_command(
    config: Annotated[Path, typer.Argument(help="The YAML config file.", show_default=False)],
) -> None:
    """Run the scheduler until SIGTERM or SIGINT (running attempts stay with their minders)."""
    from pysched.launch.local import LocalLauncher
    from pysched.service import configure_logging, serve

    try:
        loaded = load_config(config)
    except ConfigError as exc:
        raise fail(str(exc)) from None
    for warning in loaded.warnings:
        typer.echo(f"warning: {warning}", err=True)
    configure_logging()
    try:
        result = trio.run(
            lambda: serve(loaded, launcher_factory=lambda c: LocalLauncher(c.scheduler.log_dir))
        )
    except StoreError as exc:
        raise fail(f"error: {exc}") from None
    if result.code != 0:
        raise fail(f"error: {result.reason}", result.code)
