"""Output: text from the server is shown escaped to people and exact in JSON, and the CLI's own
errors have the server's error shape under --json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pysched.cli.output import clean, json_text
from tests.cli.cli_fake_api import FakeApi, cli, error, run_json

ROOT = Path(__file__).parents[2]
EXAMPLE = str(ROOT / "examples" / "etl.yaml")

FORGED = "l1\n2026-12-01 08:00:00,000 INFO forged\x1b[31mred"
OSC = "x\x1b]0;pwned\x07"
RUN_ID = "load.2026-10-16.1"


def _hostile_run() -> dict[str, object]:
    attempt = {**run_json()["attempts"][0], "message": "bad\tthing\r\x9bX"}
    return run_json(
        RUN_ID,
        state="held",
        reason=f"held by ann: {FORGED}",
        attempts=[attempt],
        events=[
            {
                "id": 7,
                "at": "2026-10-19T01:00:00+00:00",
                "kind": "action",
                "data": {"action": "hold", "target": RUN_ID, "by": "ann", "why": OSC},
            }
        ],
        actions=[{"at": "2026-10-19T01:00:00+00:00", "action": "hold", "by": "ann", "why": FORGED}],
    )


def _assert_no_raw_controls(text: str) -> None:
    for line in text.splitlines():
        assert line.isprintable(), repr(line)
    assert not any(line.startswith("2026-12-01 08:00:00,000 INFO") for line in text.splitlines())


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        pytest.param("a\nb", "a\\nb", id="newline"),
        pytest.param("a\tb", "a\\tb", id="tab"),
        pytest.param("\x1b[31mred", "\\x1b[31mred", id="csi"),
        pytest.param(OSC, "x\\x1b]0;pwned\\x07", id="osc"),
        pytest.param("\x7f\x9b", "\\x7f\\x9b", id="del_and_c1"),
        pytest.param("déjà vu — ok", "déjà vu — ok", id="printable_unicode_kept"),
    ],
)
def test_clean_escapes_every_control_character(raw: str, shown: str) -> None:
    assert clean(raw) == shown


def test_json_text_reads_back_exactly_with_no_raw_control() -> None:
    value = {"why": FORGED + OSC + "\x7f\x9b\u2028"}
    text = json_text(value)
    assert json.loads(text) == value
    assert all(line.isprintable() for line in text.splitlines())


def test_show_escapes_what_others_wrote(api: FakeApi) -> None:
    api.on("GET", f"/api/v1/runs/{RUN_ID}", _hostile_run())
    result = cli("show", RUN_ID)
    assert result.exit_code == 0, result.output
    _assert_no_raw_controls(result.stdout)
    assert "held by ann: l1\\n2026-12-01 08:00:00,000 INFO forged\\x1b[31mred" in result.stdout
    assert "bad\\tthing\\r\\x9bX" in result.stdout
    assert "hold load.2026-10-16.1 by ann — x\\x1b]0;pwned\\x07" in result.stdout


def test_status_and_actions_escape_and_json_stays_exact(api: FakeApi) -> None:
    run = _hostile_run()
    api.on("GET", "/api/v1/runs", {"runs": [run], "count": 1})
    api.on("POST", f"/api/v1/runs/{RUN_ID}/hold", run)
    status = cli("status")
    assert status.exit_code == 0, status.output
    _assert_no_raw_controls(status.stdout)
    assert len(status.stdout.splitlines()) == 3  # header, the run, the counts
    held = cli("hold", RUN_ID, "--why", FORGED)
    _assert_no_raw_controls(held.stdout)
    assert api.body()["why"] == FORGED  # sent as given: only its display is escaped
    as_json = cli("status", "--json")
    assert json.loads(as_json.stdout)["runs"][0]["reason"] == f"held by ann: {FORGED}"


def test_server_error_messages_are_escaped(api: FakeApi) -> None:
    api.on("POST", f"/api/v1/runs/{RUN_ID}/release", lambda r: error(409, "conflict", FORGED))
    result = cli("release", RUN_ID)
    assert result.exit_code == 1
    assert result.stderr.strip().splitlines() == [f"error: {clean(FORGED)}"]


def test_log_body_stays_raw(api: FakeApi) -> None:
    api.on("GET", f"/api/v1/runs/{RUN_ID}", run_json(RUN_ID))
    body = "col1\tcol2\n\x1b[32mgreen\x1b[0m\n"
    api.on(
        "GET",
        f"/api/v1/runs/{RUN_ID}/attempts/1/log",
        {"data": body, "offset": 0, "next_offset": len(body), "size": len(body), "complete": True},
    )
    result = cli("log", RUN_ID)
    assert result.exit_code == 0, result.output
    assert result.stdout == body


def test_log_without_an_attempt_gives_an_error_document_with_json(api: FakeApi) -> None:
    api.on("GET", f"/api/v1/runs/{RUN_ID}", run_json(RUN_ID, state="waiting", attempts=[]))
    result = cli("log", RUN_ID, "--json")
    assert result.exit_code == 1
    error_doc = json.loads(result.stdout)["error"]
    assert {"status", "code", "message", "field", "state"} <= set(error_doc)
    assert error_doc["state"] == "waiting"
    assert "has no attempt with a log yet" in error_doc["message"]
    assert result.stderr.startswith("error: run load.2026-10-16.1 (waiting)")


def test_unknown_calendar_says_error_and_gives_a_document_with_json() -> None:
    result = cli("calendar", EXAMPLE, "nosuch", "--json")
    assert result.exit_code == 1
    assert json.loads(result.stdout)["error"]["message"].startswith("unknown calendar 'nosuch'")
    assert result.stderr.startswith("error: unknown calendar 'nosuch'")
    plain = cli("calendar", EXAMPLE, "nosuch")
    assert plain.stdout == ""
    assert plain.stderr.startswith("error: unknown calendar")


def test_unreachable_server_gives_an_error_document_with_json(api: FakeApi) -> None:
    api.refuse = True
    result = cli("--url", "http://127.0.0.1:9", "jobs", "--json")
    assert result.exit_code == 3
    assert json.loads(result.stdout)["error"]["code"] == "unreachable"
    assert result.stderr.startswith("error: cannot reach")


def test_a_usage_mistake_gives_an_error_document_with_json(api: FakeApi) -> None:
    result = cli("status", "--json", "--date", "16/10/2026")
    assert result.exit_code == 2
    document = json.loads(result.stdout)["error"]
    assert (document["code"], document["field"]) == ("usage", "--date")
    assert cli("status", "--date", "").stdout == ""  # without --json: stderr only


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (("--url", "ftp://x", "status", "--json"), "--url"),  # refused by the global callback
        (("--url", "", "status", "--json"), "--url"),  # refused while the globals are parsed
        (("--json", "status"), "--json"),  # --json before the command: still a document
        (("status", "--json", "--bogus"), "--bogus"),  # the command's own mistake: once
        (("cron", "next", "0 2 * * *", "--after", "x", "--json"), "--after"),  # a subgroup's
    ],
)
def test_every_usage_mistake_gives_one_error_document_with_json(
    api: FakeApi, args: tuple[str, ...], field: str
) -> None:
    result = cli(*args)
    assert result.exit_code == 2, result.output
    document = json.loads(result.stdout)["error"]  # exactly one JSON document on stdout
    assert (document["code"], document["field"]) == ("usage", field)
    assert api.requests == []


def test_the_error_document_carries_the_hint_that_stderr_shows(api: FakeApi) -> None:
    result = cli("status", "--json", "--url", "http://x")
    assert result.exit_code == 2
    document = json.loads(result.stdout)["error"]
    assert document["field"] == "--url"
    assert "hint: --url is a global option: write it before the command" in document["message"]


def test_no_error_document_when_json_is_only_another_options_value(api: FakeApi) -> None:
    """``--why --json``: the reason is the text "--json", and no JSON was asked for."""
    result = cli(
        "backfill", "load", "--from", "2026-10-10", "--to", "2026-10-01", "--why", "--json"
    )
    assert result.exit_code == 2
    assert result.stdout == ""
    assert "is before --from" in result.stderr
