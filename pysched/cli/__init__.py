"""The ``pysched`` command line (typer).

The CLI is thin: it parses arguments, calls the public API, and formats what comes back, as
tables for people or ``--json`` for scripts. Exit codes: 0 done, 1 refused or failed (a config
with problems, a bad expression), 2 usage (a bad argument), 3 the server cannot be reached,
130 interrupted (Ctrl-C). The console script enters through ``pysched.entry``, which loads
this package inside its Ctrl-C handler.
"""

from __future__ import annotations

from pysched.cli.app import app


def main() -> None:
    """Run the typer app (``pysched.entry.main`` calls this)."""
    app()


__all__ = ["app", "main"]
