"""The ``pysched`` command's entry point (the console script and ``python -m pysched``).

It imports the CLI inside ``main`` so that Ctrl-C is handled however early it comes: loading
the CLI takes a second or more, and an interrupt meanwhile must end the command as it does once
a command runs, not with a traceback of the imports it cut short.
"""

from __future__ import annotations


def main() -> None:
    """Run the ``pysched`` command line. Ctrl-C ends it with exit 130, as a shell reports an
    interrupted command: typer does so once a command runs, and this does so while the CLI
    loads or builds its commands. (``watch`` and ``log`` end with 0 on Ctrl-C, and ``serve``
    takes SIGINT as a graceful stop.)"""
    try:
        from pysched.cli import main as run_cli

        run_cli()
    except KeyboardInterrupt:
        raise SystemExit(130) from None
