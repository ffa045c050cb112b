"""``pysched reload`` and ``pysched config versions | show | diff``: the config the server runs.

The server keeps every config it has applied, by SHA-256, with who applied it and when. These
commands ask it to re-read its file (all or nothing: a file with problems changes nothing and
every problem is printed), list the versions, and show or compare them.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from pysched.cli.client import api_path, ask, session
from pysched.cli.output import clean, print_json, print_table
from pysched.cli.run_display import local_time
from pysched.config.model import version_prefix_problem

JsonOpt = Annotated[bool, typer.Option("--json", help="Print the server's JSON.")]


def _version(text: str) -> str:
    """A config version's name as given, or a usage error (exit 2) when it cannot be one."""
    problem = version_prefix_problem(text)
    if problem is not None:
        raise typer.BadParameter(problem)
    return text


ShaArg = Annotated[
    str,
    typer.Argument(
        help="A version's SHA-256, or a unique prefix of 6+.",
        show_default=False,
        callback=_version,
        metavar="SHA",
    ),
]


def reload(
    ctx: typer.Context,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run",
            help="Only say what a reload would do: its problems or warnings, and the diff from "
            "the config in force to the file. Nothing is applied.",
        ),
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Make the server re-read its config file (a file with problems changes nothing)."""
    if dry_run:
        _preview(ctx, as_json)
        return
    answer = ask(ctx, as_json, "POST", "/api/v1/reload")
    if answer is None:
        return
    warnings: list[str] = answer.get("warnings") or []
    for warning in warnings:
        typer.echo(f"warning: {clean(warning)}", err=True)
    sha = clean(str(answer.get("sha256", ""))[:12])
    typer.echo(f"reloaded: {sha} ({'changed' if answer.get('changed') else 'unchanged'})")


def _preview(ctx: typer.Context, as_json: bool) -> None:
    """``reload --dry-run``: the diff on stdout, problems and warnings on stderr; exit 1 when
    a reload would be refused."""
    with session(ctx, as_json) as api:
        answer: dict[str, Any] = api.get("/api/v1/config/pending")
    valid = bool(answer.get("valid"))
    if as_json:
        print_json(answer)
    else:
        problems: list[Any] = answer.get("problems") or []
        warnings: list[Any] = answer.get("warnings") or []
        for problem in problems:
            typer.echo(f"problem: {clean(str(problem))}", err=True)
        for warning in warnings:
            typer.echo(f"warning: {clean(str(warning))}", err=True)
        text = str(answer.get("diff", ""))
        if text:
            typer.echo(text, nl=not text.endswith("\n"), color=True)
        current = clean(str(answer.get("current", ""))[:12])
        if not valid:
            typer.echo(f"a reload would be refused; config {current} would stay", err=True)
        elif answer.get("changed"):
            sha = clean(str(answer.get("sha256", ""))[:12])
            what = sha if sha != current else f"{sha} again, with new secret values"
            typer.echo(f"a reload would apply {what} (in force: {current})", err=True)
        else:
            typer.echo(f"a reload would change nothing (in force: {current})", err=True)
    if not valid:
        raise typer.Exit(1)


def versions(ctx: typer.Context, as_json: JsonOpt = False) -> None:
    """The config versions the server has applied, oldest first; * marks the one in force."""
    answer = ask(ctx, as_json, "GET", "/api/v1/config/versions")
    if answer is None:
        return
    listed: list[dict[str, Any]] = answer.get("versions") or []
    rows = [
        [
            "*" if version.get("current") else "",
            str(version.get("sha256", ""))[:12],
            local_time(version.get("at")),
            str(version.get("by") or ""),
        ]
        for version in listed
    ]
    print_table(["", "SHA256", "APPLIED", "BY"], rows)


def show(ctx: typer.Context, sha: ShaArg, as_json: JsonOpt = False) -> None:
    """Print one config version's text, as it was applied (a document: printed as it is)."""
    answer = ask(ctx, as_json, "GET", api_path("/api/v1/config/versions", sha))
    if answer is None:
        return
    typer.echo(str(answer.get("text", "")), nl=False, color=True)


def diff(
    ctx: typer.Context,
    old: Annotated[
        str,
        typer.Argument(
            help="The older version (SHA-256 or prefix).", callback=_version, metavar="A"
        ),
    ],
    new: Annotated[
        str,
        typer.Argument(
            help="The newer version (SHA-256 or prefix).", callback=_version, metavar="B"
        ),
    ],
    as_json: JsonOpt = False,
) -> None:
    """The unified diff between two config versions."""
    answer = ask(ctx, as_json, "GET", "/api/v1/config/diff", params={"from": old, "to": new})
    if answer is None:
        return
    text = str(answer.get("diff", ""))
    if not text:
        typer.echo(f"no difference between {old} and {new}", err=True)
        return
    typer.echo(text, nl=not text.endswith("\n"), color=True)
