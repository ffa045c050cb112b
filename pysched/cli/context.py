"""The global options (``--url``, ``--token``, ``-c``), handed to every command.

They are given before the command name (``pysched --url … status``) and parsed once by the
app's callback, which stores a ``Globals`` as ``typer.Context.obj``; click hands a parent's
``obj`` down to every subcommand's context, so ``config versions`` sees it as well as ``status``.
Nothing is resolved here: a command that talks to a server resolves the options itself (see
``pysched.cli.discovery``), so ``validate`` or ``serve`` never read a state file they don't need.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import typer


@dataclass(frozen=True, slots=True, kw_only=True)
class Globals:
    """What the user gave before the command name; None for each option not given."""

    url: str | None = None
    token: str | None = None
    config: Path | None = None


def globals_of(ctx: typer.Context) -> Globals:
    """The ``Globals`` of this invocation (empty ones when a test calls a command directly)."""
    found = ctx.find_object(Globals)
    return found if found is not None else Globals()
