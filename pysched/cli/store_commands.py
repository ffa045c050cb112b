"""``pysched store check``: read every journal file of a state dir and say what is wrong.

It takes no lock and changes nothing, so it is safe on the state dir of a running scheduler.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from pysched.cli.arguments import text_problem
from pysched.cli.output import error_exit, print_json


def _state_dir(text: str) -> Path:
    """The state dir as given; an empty one (which a ``Path`` would read as ``.``) or an
    overlong one is a usage mistake, as for every other argument."""
    problem = text_problem(text, optional=False)
    if problem is not None:
        raise typer.BadParameter(problem)
    return Path(text)


StateDirArg = Annotated[
    Path,
    typer.Argument(
        help="The scheduler's state dir (its journal).",
        show_default=False,
        parser=_state_dir,
        metavar="STATE_DIR",
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")]


def _count(number: int, what: str) -> str:
    return f"{number:,} {what}{'' if number == 1 else 's'}"


def check(state_dir: StateDirArg, as_json: JsonOpt = False) -> None:
    """Check a state dir's snapshot, journal segments and archives, line by line.

    Prints each problem as file:line: message and exits 1, or a summary and exits 0. A torn
    last line (a crash mid-write) is a warning: the next start cuts it. Damage in an archive
    file is a problem too, but it does not stop a start: archives are not read then.
    """
    # here: the store brings trio, which the commands that talk to a server never need
    from pysched.store.check import inspect_state_dir
    from pysched.store.layout import segment_name

    try:
        report = inspect_state_dir(state_dir)
    except OSError as exc:  # a name too long, a folder it may not read, ...: as validate says it
        reason = exc.strerror or str(exc)
        raise error_exit(
            f"{state_dir}: cannot read the state dir: {reason}", as_json=as_json
        ) from None
    if as_json:
        print_json(report.to_json())
        raise typer.Exit(0 if report.ok else 1)
    if not state_dir.is_dir():
        typer.echo(f"error: {state_dir}: no such state dir", err=True)
        raise typer.Exit(1)
    for warning in report.warnings:
        typer.echo(f"warning: {warning}", err=True)
    if not report.ok:
        for problem in report.problems:
            typer.echo(problem, err=True)
        count = _count(len(report.problems), "problem")
        if report.refuses_start:
            typer.echo(f"{state_dir}: {count} — pysched would refuse to start")
        else:
            damaged = ", ".join(report.damaged_archives)
            verb = "is" if len(report.damaged_archives) == 1 else "are"
            typer.echo(
                f"{state_dir}: {count} — {damaged} {verb} damaged at the lines above and cannot "
                "be read back; the live state is unaffected and pysched starts"
            )
        raise typer.Exit(1)
    typer.echo(
        f"{state_dir}: OK — {_count(report.records, 'record')} to replay, "
        f"{_count(len(report.segments), 'segment')}, last seq {report.last_seq}"
    )
    if report.snapshot is not None:
        typer.echo(
            f"  snapshot: {_count(report.snapshot_records, 'record')} as of seq "
            f"{report.snapshot.seq}; replay continues from {segment_name(report.snapshot.segment)}"
        )
    else:
        typer.echo("  snapshot: none yet")
    typer.echo(f"  journal: {_count(report.journal_records, 'record')} since the snapshot")
    typer.echo(
        f"  archive: {_count(report.archive_files, 'file')}, "
        f"{_count(report.archive_records, 'record')}"
    )
