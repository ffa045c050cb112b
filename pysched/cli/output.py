"""How the CLI prints: aligned tables for people, JSON for scripts, problems to stderr.

Colour is a light touch (a run's state in a table) and only when stdout is a terminal and
``NO_COLOR`` is unset (https://no-color.org), so pipes, files and scripts get plain text.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

import typer

from pysched.errors import Problem


def print_json(value: Any) -> None:
    typer.echo(json.dumps(value, indent=2, ensure_ascii=False))


def colour_enabled() -> bool:
    """Whether to colour stdout: a terminal, and ``NO_COLOR`` unset or empty."""
    return not os.environ.get("NO_COLOR") and sys.stdout.isatty()


def style(text: str, colour: str | None) -> str:
    """``text`` in a typer/click colour name (``"green"``), when colour is enabled."""
    if colour is None or not colour_enabled():
        return text
    return typer.style(text, fg=colour)


def print_table(
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    *,
    paint: Callable[[int, str, str], str] | None = None,
) -> None:
    """Columns padded to their widest cell; the last column is not padded.

    ``paint(column, cell, padded)`` may wrap a body cell in colour: it is given the padded
    text so the escape codes do not upset the alignment.
    """
    widths = [len(h) for h in headers]
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))

    def line(cells: Sequence[str], painted: bool) -> str:
        padded = [c.ljust(widths[i]) for i, c in enumerate(cells[:-1])]
        padded.append(cells[-1])
        if painted and paint is not None:
            pairs = enumerate(zip(cells, padded, strict=True))
            padded = [paint(i, cell, text) for i, (cell, text) in pairs]
        return "  ".join(padded).rstrip()

    typer.echo(line(headers, painted=False))
    for row in rows:
        typer.echo(line(row, painted=True))


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
