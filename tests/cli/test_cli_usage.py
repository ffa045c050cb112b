"""Usage mistakes, for every command at once: exit 2 with a message that names the argument and
says the fix, never a traceback, never a request sent."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pysched.cli.arguments import MAX_TEXT
from pysched.server_file import write_current
from tests.cli.cli_fake_api import FakeApi, cli, run_json

pytestmark = pytest.mark.usefixtures("api")

ROOT = Path(__file__).parents[2]
EXAMPLE = str(ROOT / "examples" / "etl.yaml")
HUGE = "j" * 70_000

EMPTY = [
    pytest.param(("status", "--date", ""), "--date", id="status_date"),
    pytest.param(("status", "--state", ""), "--state", id="status_state"),
    pytest.param(("status", "--job", ""), "--job", id="status_job"),
    pytest.param(("trigger", "extract", "--run-date", ""), "--run-date", id="trigger_run_date"),
    pytest.param(("trigger", ""), "JOB", id="trigger_job"),
    pytest.param(("show", ""), "RUN_ID", id="show"),
    pytest.param(("hold", ""), "RUN_ID", id="hold"),
    pytest.param(("release-job", ""), "JOB", id="release_job"),
    pytest.param(("log", ""), "RUN_ID", id="log"),
    pytest.param(("cron", "next", "0 2 * * *", "--after", ""), "--after", id="cron_after"),
    pytest.param(("calendar", EXAMPLE, "uk", "--from", ""), "--from", id="calendar_from"),
    pytest.param(("store", "check", ""), "STATE_DIR", id="store_check"),
    pytest.param(("--token", "", "status"), "--token", id="token"),
    pytest.param(("--url", "", "status"), "--url", id="url"),
    pytest.param(("-c", "", "status"), "--config", id="config"),
]


@pytest.mark.parametrize(("args", "name"), EMPTY)
def test_an_empty_value_is_a_usage_mistake(api: FakeApi, args: tuple[str, ...], name: str) -> None:
    result = cli(*args)
    assert result.exit_code == 2, result.output
    assert name in result.stderr
    assert "empty" in result.stderr
    assert api.requests == []


@pytest.mark.parametrize(
    ("args", "name"),
    [
        (("status", "--state", "failed", "--state", "lost"), "--state"),
        (("status", "--date", "2026-10-16", "--job", "a", "--date", "2026-10-17"), "--date"),
        (("trigger", "extract", "--run-date", "2026-10-16", "--run-date", "2026-10-17"),
         "--run-date"),
        (("--url", "http://127.0.0.1:1", "--url", "http://127.0.0.1:2", "status"), "--url"),
        (("status", "--state=failed", "--state", "lost"), "--state"),
    ],
)  # fmt: skip
def test_an_option_given_twice_is_a_usage_mistake(
    api: FakeApi, args: tuple[str, ...], name: str
) -> None:
    """click keeps the last and drops the other without a word: ``--state failed --state
    lost`` listed no failed run, and the night looked clean."""
    result = cli(*args)
    assert result.exit_code == 2, result.output
    said = " ".join(result.stderr.replace("│", " ").split())
    assert name in said and "given 2 times" in said and "give it once" in said
    assert api.requests == []


def test_a_flag_given_twice_is_harmless(api: FakeApi) -> None:
    result = cli("cron", "next", "0 2 * * *", "--json", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)


@pytest.mark.parametrize(
    "args",
    [("show", "a/b.2026-10-16.1"), ("trigger", "etl/extract"), ("log", "../x"), ("hold-job", "a/")],
)
def test_a_slash_in_a_job_name_or_run_id_is_a_usage_mistake(
    api: FakeApi, args: tuple[str, ...]
) -> None:
    """Neither ever holds one; sent, it made another path and the server said "no such
    endpoint"."""
    result = cli(*args)
    assert result.exit_code == 2, result.output
    assert "never holds '/'" in " ".join(result.stderr.replace("│", " ").split())
    assert api.requests == []


def test_a_config_that_is_a_folder_says_so(api: FakeApi, tmp_path: Path) -> None:
    result = cli("-c", str(tmp_path), "status")
    assert result.exit_code == 2, result.output
    words = " ".join(result.stderr.replace("│", " ").split())  # unwrapped from the error box
    assert "is a folder: give the config file in it" in words
    assert api.requests == []


def test_an_unreadable_config_says_so(
    api: FakeApi, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "pysched.yaml"
    config.write_text("jobs: {}\n")
    real_access = os.access
    monkeypatch.setattr(
        os, "access", lambda path, mode: str(path) != str(config) and real_access(path, mode)
    )  # root may read anything: act as a user who may not
    result = cli("-c", str(config), "status")
    assert result.exit_code == 2, result.output
    assert "is not readable by this user" in " ".join(result.stderr.replace("│", " ").split())
    assert api.requests == []


def test_an_empty_why_is_the_same_as_none(api: FakeApi) -> None:
    """``--why "$REASON"`` with the variable unset records no reason, as leaving it out does:
    unlike an empty run id or date, it cannot make the command act on something else."""
    api.on("POST", "/api/v1/runs/x.2026-10-16.1/hold", {"run_id": "x.2026-10-16.1"})
    result = cli("hold", "x.2026-10-16.1", "--why", "")
    assert result.exit_code == 0, result.output
    assert api.body() == {}
    assert cli("hold", "x.2026-10-16.1", "--why", "w" * 70_000).exit_code == 2  # still bounded


TOO_LONG = [
    pytest.param(("show", HUGE), id="show"),
    pytest.param(("log", HUGE), id="log"),
    pytest.param(("hold-job", HUGE), id="hold_job"),
    pytest.param(("config", "show", "a" * 70_000), id="config_show"),
    pytest.param(("status", "--job", HUGE), id="status_job"),
]


@pytest.mark.parametrize("args", TOO_LONG)
def test_an_overlong_value_is_a_usage_mistake(api: FakeApi, args: tuple[str, ...]) -> None:
    result = cli(*args)
    assert result.exit_code == 2, result.output
    assert "too long" in result.stderr
    assert f"at most {MAX_TEXT:,}" in result.stderr
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert api.requests == []


def test_a_job_name_at_the_limit_is_still_asked_for(api: FakeApi) -> None:
    name = "j" * MAX_TEXT
    api.on("POST", f"/api/v1/jobs/{name}/hold", {"job": name})
    result = cli("hold-job", name)
    assert result.exit_code == 0, result.output


BAD_TOKENS = [
    pytest.param("pysched_ü", "ASCII", id="not_ascii"),
    pytest.param("tökén", "ASCII", id="not_ascii_env"),
    pytest.param("a\nb", "control", id="newline"),
    pytest.param("a b", "spaces", id="space"),
    pytest.param("a\x7fb", "control", id="del"),
    pytest.param("p" * 2000, "51", id="too_long"),
]


@pytest.mark.parametrize(("token", "said"), BAD_TOKENS)
@pytest.mark.parametrize("how", ["option", "environment"])
def test_a_token_an_http_header_cannot_carry_is_a_usage_mistake(
    api: FakeApi, monkeypatch: pytest.MonkeyPatch, token: str, said: str, how: str
) -> None:
    if how == "option":
        result = cli("--token", token, "jobs")
    else:
        monkeypatch.setenv("PYSCHED_TOKEN", token)
        result = cli("status")
    assert result.exit_code == 2, result.output
    assert "--token" in result.stderr and "PYSCHED_TOKEN" in result.stderr
    assert said in result.stderr
    assert token not in result.output
    assert api.requests == []


def test_a_bad_admin_token_file_is_refused_without_showing_it(api: FakeApi, tmp_path: Path) -> None:
    token_file = tmp_path / "admin.token"
    token_file.write_text("pysched_ü\n", encoding="utf-8")
    write_current(
        url="http://127.0.0.1:8080", config=tmp_path / "pysched.yaml", admin_token_path=token_file
    )
    result = cli("status")
    assert result.exit_code == 1, result.output
    assert "ASCII" in result.stderr and "--token" in result.stderr
    assert "pysched_ü" not in result.output
    assert api.requests == []


def test_a_url_port_out_of_range_is_a_usage_mistake(api: FakeApi) -> None:
    result = cli("--url", "http://127.0.0.1:99999", "status")
    assert result.exit_code == 2, result.output
    assert "--url" in result.stderr and "65535" in result.stderr
    assert api.requests == []


@pytest.mark.parametrize(
    "url",
    ["http://127.0.0.1:8080/api/v1", "http://127.0.0.1:8080/api/v1/", "http://127.0.0.1:8080/"],
)
def test_the_api_url_serve_prints_is_taken_as_the_server(api: FakeApi, url: str) -> None:
    api.on("GET", "/api/v1/runs", {"runs": [run_json()], "count": 1})
    result = cli("--url", url, "status")
    assert result.exit_code == 0, result.output
    assert str(api.last.url) == "http://127.0.0.1:8080/api/v1/runs"


def test_an_attempt_number_too_large_says_so(api: FakeApi) -> None:
    result = cli("log", "x.2026-10-16.1", "--attempt", "99999999999999999999")
    assert result.exit_code == 2, result.output
    assert "--attempt" in result.stderr and "too large" in result.stderr
    assert api.requests == []


def test_to_before_the_default_start_says_the_default() -> None:
    result = cli("forecast", EXAMPLE, "--to", "2000-01-03")
    assert result.exit_code == 2, result.output
    assert "before the default start (today," in result.stderr
    assert "--from" not in result.stderr
    given = cli("forecast", EXAMPLE, "--from", "2000-01-04", "--to", "2000-01-03")
    assert "before --from 2000-01-04" in given.stderr


@pytest.mark.parametrize(
    ("args", "option"),
    [
        pytest.param(("status", "--url", "http://x"), "--url", id="url"),
        pytest.param(("status", "-c", "x.yaml"), "-c", id="config"),
        pytest.param(("status", "--token", "t"), "--token", id="token"),
        pytest.param(("cron", "next", "0 2 * * *", "--url", "http://x"), "--url", id="nested"),
    ],
)
def test_a_global_option_after_the_command_hints_where_it_goes(
    args: tuple[str, ...], option: str
) -> None:
    result = cli(*args)
    assert result.exit_code == 2, result.output
    assert f"{option} is a global option: write it before the command" in result.stderr
    assert result.stderr.count("hint:") == 1


def test_json_before_the_command_hints_where_it_goes() -> None:
    result = cli("--json", "status")
    assert result.exit_code == 2, result.output
    assert "write it after the command" in result.stderr
    assert "pysched status --json" in result.stderr
    assert "Possible options" not in result.stderr


@pytest.mark.parametrize(
    "args",
    [("status",), ("log",), ("watch",), ("validate",), ("store", "check"), ()],
    ids=lambda args: "_".join(args) or "app",
)
def test_help_shows_no_value_after_a_flag(args: tuple[str, ...]) -> None:
    result = cli(*args, "--help")
    assert result.exit_code == 0, result.output
    assert "<bool>" not in result.output
    assert "--help" in result.output


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (("store", "check", "", "--json"), "state_dir"),
        (("validate", "--json"), "config"),
        (("calendar", EXAMPLE, "--json"), "name"),
        (("config", "diff", "abcdef", "--json"), "new"),
        (("cron", "next", "--json"), "expression"),
        (("token", "create", "bad name!", "--json"), "name"),
        (("token", "create", "ok", "--role", "bogus", "--json"), "--role"),
        (("-c", "/no/such/pysched.yaml", "status", "--json"), "--config"),
        (("status", "--state", "bogus", "--json"), "--state"),
    ],
    ids=lambda value: "_".join(value) if isinstance(value, tuple) else value,
)
def test_the_json_error_names_the_field_as_documented(args: tuple[str, ...], field: str) -> None:
    """An argument by its parameter's name in lower case, an option by its long flag: the
    same whether the help writes it CONFIG or typer raised it (docs/cli.md)."""
    result = cli(*args)
    assert result.exit_code == 2, result.output
    assert json.loads(result.stdout)["error"]["field"] == field
