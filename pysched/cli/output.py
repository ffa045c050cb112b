"""How the CLI prints: aligned tables for people, JSON for scripts, problems to stderr."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any

import typer

from pysched.errors import Problem


def print_json(value: Any) -> None:
    typer.echo(json.dumps(value, indent=2, ensure_ascii=False))


def print_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    """Columns padded to their widest cell; the last column is not padded."""
    widths = [len(h) for h in headers]
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))

    def line(cells: Sequence[str]) -> str:
        padded = [c.ljust(widths[i]) for i, c in enumerate(cells[:-1])]
        return "  ".join([*padded, cells[-1]]).rstrip()

    typer.echo(line(headers))
    for row in rows:
        typer.echo(line(row))


def problem_json(problem: Problem) -> dict[str, Any]:
    return {
        "file": problem.file,
        "line": problem.line,
        "col": problem.col,
        "message": problem.message,
        "hint": problem.hint,
    }


def fail(message: str, code: int = 1) -> typer.Exit:
    """Print ``message`` to stderr and return the ``typer.Exit`` to raise."""
    typer.echo(message, err=True)
    sys.stderr.flush()
    return typer.Exit(code)
