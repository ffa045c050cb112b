"""``pysched token create | list | revoke``: who may use the API.

``token create NAME --role ROLE`` prints the new token alone on stdout, so
``TOKEN=$(pysched token create ci --role operator)`` captures it; the server keeps only its
hash, so this is the one time it is shown (a note on stderr says so).

When the server cannot be reached but the config is known (``-c``), ``create`` writes the
token's hash straight into the config's tokens file, so an operator can prepare a token before
the first start or while the server is down; a running server reads the file again on reload or
restart. If there is no tokens file yet, it is first created as ``serve`` would (with the local
``admin`` token in ``scheduler.admin_token_path``), so the first start still finds its admin
token.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from pysched.cli.client import (
    Client,
    ClientError,
    ServerUnreachable,
    api_path,
    ask,
    find_target,
    report,
)
from pysched.cli.output import clean, error_exit, print_json, print_table
from pysched.cli.run_display import local_time
from pysched.config import Config
from pysched.errors import TokenFileError
from pysched.tokens import Role, check_name, first_admin_token, load_tokens, parse_role, save_tokens

JsonOpt = Annotated[bool, typer.Option("--json", help="Print the server's JSON.")]
NameArg = Annotated[
    str, typer.Argument(help="The token's name (in the audit trail).", metavar="NAME")
]
SHOWN_ONCE = "note: this token is shown only once — store it now; the server keeps only its hash"


def create(
    ctx: typer.Context,
    name: NameArg,
    role: Annotated[
        str, typer.Option("--role", help="viewer (reads), operator (acts), admin (all).")
    ] = "viewer",
    as_json: JsonOpt = False,
) -> None:
    """Create a token and print it, once; without a server, write it to the config's tokens
    file."""
    try:
        check_name(name)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="NAME") from None
    try:
        chosen = parse_role(role)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--role") from None
    target = find_target(ctx, as_json=as_json)
    try:
        client = Client(target)
        try:
            answer: dict[str, Any] = client.post(
                "/api/v1/tokens", {"name": name, "role": chosen.value}
            )
        finally:
            client.close()
    except ServerUnreachable as exc:
        if target.config is None:
            raise report(exc, as_json=as_json) from None
        answer = _create_in_file(target.config, name, chosen, as_json=as_json)
        typer.echo(
            f"note: {exc}, so the token was written to {target.config.scheduler.tokens_path}; "
            "a running server picks it up on reload or restart",
            err=True,
        )
    except ClientError as exc:
        raise report(exc, as_json=as_json) from None
    if as_json:
        print_json(answer)
    else:
        typer.echo(clean(answer.get("token", "")))
    typer.echo(SHOWN_ONCE, err=True)


def _create_in_file(config: Config, name: str, role: Role, *, as_json: bool) -> dict[str, Any]:
    settings = config.scheduler
    try:
        if load_tokens(settings.tokens_path) is None:
            first_admin_token(settings.tokens_path, settings.admin_token_path)
            typer.echo(
                f"note: created {settings.tokens_path} with the local admin token in "
                f"{settings.admin_token_path}",
                err=True,
            )
        tokens = load_tokens(settings.tokens_path)
        assert tokens is not None
        tokens, secret = tokens.with_new(name, role)
        save_tokens(settings.tokens_path, tokens)
    except (TokenFileError, ValueError, OSError) as exc:
        raise error_exit(str(exc), as_json=as_json) from None
    entry = tokens.get(name)
    assert entry is not None
    return {**entry.public(), "token": secret}


def list_tokens(ctx: typer.Context, as_json: JsonOpt = False) -> None:
    """The tokens the server accepts: name, role and when each was created (never a secret)."""
    answer = ask(ctx, as_json, "GET", "/api/v1/tokens")
    if answer is None:
        return
    listed: list[dict[str, Any]] = answer.get("tokens") or []
    rows = [
        [str(t.get("name", "")), str(t.get("role", "")), local_time(t.get("created"))]
        for t in listed
    ]
    print_table(["NAME", "ROLE", "CREATED"], rows)


def revoke(ctx: typer.Context, name: NameArg, as_json: JsonOpt = False) -> None:
    """Revoke a token: the server refuses it from now on."""
    answer = ask(ctx, as_json, "DELETE", api_path("/api/v1/tokens", name))
    if answer is None:
        return
    typer.echo(f"revoked: {clean(answer.get('revoked', name))}")
