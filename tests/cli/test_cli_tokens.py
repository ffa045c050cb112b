"""``pysched token``: shown once on stdout; written to the tokens file when no server answers."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from pysched.tokens import Role, load_tokens, read_admin_token
from tests.cli.cli_fake_api import FakeApi, cli, write_config

pytestmark = pytest.mark.usefixtures("api")


CREATED = {
    "name": "ci",
    "role": "operator",
    "created": "2026-10-19T10:00:00+00:00",
    "token": "pysched_secret",
}


def test_create_prints_the_token_alone(api: FakeApi) -> None:
    api.on("POST", "/api/v1/tokens", CREATED, status=201)
    result = cli("token", "create", "ci", "--role", "operator")
    assert result.exit_code == 0, result.output
    assert result.stdout == "pysched_secret\n"
    assert "shown only once" in result.stderr
    assert api.body() == {"name": "ci", "role": "operator"}
    assert json.loads(cli("token", "create", "ci", "--json").stdout) == CREATED
    assert api.body() == {"name": "ci", "role": "viewer"}


def test_create_usage_errors_exit_2(api: FakeApi) -> None:
    bad_role = cli("token", "create", "ci", "--role", "root")
    assert bad_role.exit_code == 2
    assert "unknown role 'root'" in bad_role.output
    assert cli("token", "create", "bad name!").exit_code == 2
    assert api.requests == []


def test_create_without_server_or_config_exit_3(api: FakeApi) -> None:
    api.refuse = True
    result = cli("token", "create", "ci")
    assert result.exit_code == 3
    assert result.stdout == ""


def test_create_offline_writes_only_a_hash_to_the_tokens_file(api: FakeApi, tmp_path: Path) -> None:
    api.refuse = True
    config = write_config(tmp_path / "site")
    state = tmp_path / "site" / "state"
    result = cli("-c", str(config), "token", "create", "ci", "--role", "operator")
    assert result.exit_code == 0, result.output
    secret = result.stdout.strip()
    assert secret.startswith("pysched_")
    assert "picks it up on reload or restart" in result.stderr
    tokens_file = state / "tokens.json"
    assert stat.S_IMODE(tokens_file.stat().st_mode) == 0o600
    assert secret not in tokens_file.read_text()
    tokens = load_tokens(tokens_file)
    assert tokens is not None
    entry = tokens.check(secret)
    assert entry is not None and (entry.name, entry.role) == ("ci", Role.OPERATOR)
    # no tokens file before: it was made as serve makes it, with the local admin token
    admin = read_admin_token(state / "admin.token")
    assert admin is not None and tokens.check(admin) is not None
    assert stat.S_IMODE((state / "admin.token").stat().st_mode) == 0o600

    again = cli("-c", str(config), "token", "create", "ci")
    assert again.exit_code == 1
    assert "exists already" in again.stderr
    assert [e.name for e in load_tokens(tokens_file).entries] == ["admin", "ci"]  # type: ignore[union-attr]


def test_list_and_revoke(api: FakeApi) -> None:
    api.on(
        "GET",
        "/api/v1/tokens",
        {
            "tokens": [
                {"name": "admin", "role": "admin", "created": "2026-10-18T10:00:00+00:00"},
                {"name": "ci", "role": "operator", "created": "2026-10-19T10:00:00+00:00"},
            ]
        },
    )
    listed = cli("token", "list")
    assert listed.exit_code == 0, listed.output
    assert listed.stdout.splitlines()[2].split() == ["ci", "operator", "2026-10-19", "10:00:00"]
    api.on("DELETE", "/api/v1/tokens/ci", {"revoked": "ci"})
    assert cli("token", "revoke", "ci").stdout == "revoked: ci\n"
    assert api.last.method == "DELETE"
