"""How the CLI prints: aligned tables for people, JSON for scripts, problems to stderr.

Colour is a light touch (a run's state in a table) and only when stdout is a terminal and
``NO_COLOR`` is unset (https://no-color.org), so pipes, files and scripts get plain text.

Text that comes from the server was often written by someone else (an operator's ``--why``, a
run's reason, an attempt's message, a job's name), so for people it goes through ``clean``:
every control character is shown as an escape (``\\n``, ``\\x1b``), as the server's own log
does, so a field stays on its one line and no text can forge a line or repaint the terminal.
JSON escapes them itself (``print_json`` also escapes DEL and the C1 controls, which JSON would
let through). A log body (``pysched log``) and a config version's text are documents, printed
as they are.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

import typer

from pysched.errors import Problem
from pysched.log_format import one_line

# DEL, the C1 controls and the Unicode line and paragraph separators: JSON lets them through
# a string unescaped; written as \uXXXX they read back the same and cannot reach a terminal.
_JSON_ESCAPES = {code: f"\\u{code:04x}" for code in (*range(0x7F, 0xA0), 0x2028, 0x2029)}


def clean(value: object) -> str:
    """``value`` (None: empty) as text fit for one line on a terminal: each control character
    (C0 with newline and tab, DEL, C1) written as an escape, as the server's log writes them."""
    return one_line("" if value is None else str(value))


def json_text(value: Any, *, indent: int | None = 2) -> str:
    """``value`` as JSON (one line when ``indent`` is None), no control character left raw."""
    return json.dumps(value, indent=indent, ensure_ascii=False).translate(_JSON_ESCAPES)


def print_json(value: Any) -> None:
    typer.echo(json_text(value))


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
    """Columns padded to their widest cell; the last column is not padded. Each cell is
    ``clean``: its text may come from the server.

    ``paint(column, cell, padded)`` may wrap a body cell in colour: it is given the padded
    text so the escape codes do not upset the alignment.
    """
    rows = [[clean(cell) for cell in row] for row in rows]
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


def error_document(
    message: str,
    *,
    code: str,
    field: str | None = None,
    state: str | None = None,
    problems: Sequence[str] | None = None,
) -> dict[str, Any]:
    """An error the CLI found itself, in the shape of the server's error document
    (``pysched.web.api_errors``: ``{"error": {"status", "code", "message", "field",
    "state"}}``, ``problems`` when there are some), so a script reads both alike. ``status``
    is None: no HTTP answer said it."""
    error: dict[str, Any] = {
        "status": None,
        "code": code,
        "message": message,
        "field": field,
        "state": state,
    }
    if problems is not None:
        error["problems"] = list(problems)
    return {"error": error}


def error_exit(
    message: str,
    *,
    as_json: bool,
    exit_code: int = 1,
    code: str = "error",
    field: str | None = None,
    state: str | None = None,
    details: Sequence[str] = (),
    hint: str | None = None,
) -> typer.Exit:
    """``error: <message>`` on stderr, each of ``details`` on a line of its own after it, then
    ``hint: <hint>``, and with ``--json`` the error document on stdout too; returns the
    ``typer.Exit`` to raise.

    ``message`` and ``details`` are printed ``clean``; the JSON carries them as they are.
    """
    if as_json:
        document = error_document(
            message, code=code, field=field, state=state, problems=details or None
        )
        print_json(document)
    lines = [f"error: {clean(message)}", *(f"  {clean(detail)}" for detail in details)]
    if hint is not None:
        lines.append(f"hint: {hint}")
    return fail("\n".join(lines), exit_code)
