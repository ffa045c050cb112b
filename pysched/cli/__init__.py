"""The ``pysched`` command line (typer).

The CLI is thin: it parses arguments, calls the public API, and formats what comes back, as
tables for people or ``--json`` for scripts. Exit codes: 0 done, 1 refused or failed (a config
with problems, a bad expression), 2 usage (a bad argument), 3 the server cannot be reached.
"""

from __future__ import annotations

from pysched.cli.app import app


def main() -> None:
    """Entry point of the ``pysched`` console script and ``python -m pysched``."""
    app()


__all__ = ["app", "main"]
