"""The remote commands against a fake server: requests sent, tables, --json, exit codes."""

from __future__ import annotations

import json

import httpx
import pytest

from tests.cli.cli_fake_api import FakeApi, cli, error, run_json

pytestmark = pytest.mark.usefixtures("api")


RUNS = [
    run_json("extract.2026-10-16.1", duration_s=12.0, typical_duration_s=10.0),
    run_json(
        "fetch-rates.2026-10-16.1",
        state="running",
        duration_s=45.0,
        typical_duration_s=10.0,
        ended_at=None,
        attempts=[
            {**run_json()["attempts"][0], "outcome": "failed", "exit_code": 1},
            {
                "number": 2,
                "started_at": "2026-10-19T01:00:40+00:00",
                "ended_at": None,
                "exit_code": None,
                "signal": None,
                "outcome": None,
                "message": "",
                "has_log": True,
            },
        ],
    ),
    run_json(
        "load.2026-10-16.1",
        state="waiting",
        reason="waiting for fetch-rates",
        started_at=None,
        ended_at=None,
        duration_s=None,
        typical_duration_s=None,
        attempts=[],
    ),
]


def test_status_table_reads_at_a_glance(api: FakeApi) -> None:
    api.on("GET", "/api/v1/runs", {"runs": RUNS, "count": 3})
    result = cli("status", "--date", "2026-10-16")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["RUN", "STATE", "ATTEMPTS", "STARTED", "DURATION", "REASON"]
    extract, fetch, load = lines[1:4]
    assert extract.split()[:3] == ["extract.2026-10-16.1", "succeeded", "1"]
    assert "2026-10-19 01:00:01" in extract
    assert "12s / typ 10s" in extract
    assert "(1.2x)" not in extract
    assert fetch.split()[:3] == ["fetch-rates.2026-10-16.1", "running", "2"]
    assert "45s / typ 10s (4.5x)" in fetch
    assert load.split()[:3] == ["load.2026-10-16.1", "waiting", "0"]
    assert load.endswith("waiting for fetch-rates")
    assert lines[4] == "3 runs: 1 waiting, 1 running, 1 succeeded"
    assert "\x1b[" not in result.stdout  # no colour off a terminal
    assert api.last.url.params["date"] == "2026-10-16"


def test_status_says_when_the_list_is_cut_short(api: FakeApi) -> None:
    """The server sends the newest ``limit`` (1,000 by default) and counts them all: a table of
    2 runs out of 5 must not read as if there were 2."""
    api.on("GET", "/api/v1/runs", {"runs": RUNS[:2], "count": 5})
    result = cli("status", "--limit", "2")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[-1] == (
        "the newest 2 runs of 5 (raise --limit to see more, up to 10000): 1 running, 1 succeeded"
    )


def test_status_of_a_job_the_server_does_not_have_says_so(api: FakeApi) -> None:
    api.on("GET", "/api/v1/runs", {"runs": [], "count": 0})
    result = cli("status", "--job", "extrct")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[-1] == "0 runs"
    assert "note: the server has no job named 'extrct'" in result.stderr
    api.on("GET", "/api/v1/jobs/extract", {"name": "extract"})
    assert "note" not in cli("status", "--job", "extract").stderr  # a job with no runs yet


def test_status_filters_and_json(api: FakeApi) -> None:
    answer = {"runs": RUNS[:1], "count": 1}
    api.on("GET", "/api/v1/runs", answer)
    result = cli("status", "--job", "extract", "--state", "succeeded", "--limit", "5", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == answer
    params = api.last.url.params
    assert (params["job"], params["state"], params["limit"]) == ("extract", "succeeded", "5")
    assert "date" not in params


def test_status_usage_errors_exit_2(api: FakeApi) -> None:
    bad_date = cli("status", "--date", "16/10/2026")
    assert bad_date.exit_code == 2
    assert "YYYY-MM-DD" in bad_date.output
    bad_state = cli("status", "--state", "runing")
    assert bad_state.exit_code == 2
    assert "did you mean 'running'?" in bad_state.output
    assert api.requests == []


def test_unreachable_server_exit_3_names_the_url(api: FakeApi) -> None:
    api.refuse = True
    result = cli("--url", "http://127.0.0.1:9", "status")
    assert result.exit_code == 3
    assert result.stdout == ""
    assert "error: cannot reach the pysched server at http://127.0.0.1:9" in result.stderr
    assert "Connection refused" in result.stderr
    assert "is 'pysched serve' running?" in result.stderr


def test_timeout_is_unreachable_too(api: FakeApi) -> None:
    def slow(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("timed out", request=request)

    api.on("GET", "/api/v1/jobs", slow)
    result = cli("jobs")
    assert result.exit_code == 3
    assert "(timed out)" in result.stderr


def test_401_hints_how_to_give_a_token(api: FakeApi) -> None:
    api.on("GET", "/api/v1/runs", lambda r: error(401, "unauthorized", "no token given"))
    result = cli("status")
    assert result.exit_code == 1
    assert "error: no token given" in result.stderr
    assert "--token" in result.stderr and "PYSCHED_TOKEN" in result.stderr
    assert "-c CONFIG" in result.stderr


def test_409_refusal_exit_1_and_json_error_document(api: FakeApi) -> None:
    api.on(
        "POST",
        "/api/v1/runs/load.2026-10-16.1/release",
        lambda r: error(
            409, "conflict", "cannot release load.2026-10-16.1: it is waiting", state="waiting"
        ),
    )
    result = cli("release", "load.2026-10-16.1")
    assert result.exit_code == 1
    assert result.stderr.strip() == "error: cannot release load.2026-10-16.1: it is waiting"
    as_json = cli("release", "load.2026-10-16.1", "--json")
    assert as_json.exit_code == 1
    assert json.loads(as_json.stdout)["error"]["state"] == "waiting"


def test_non_json_answer_is_explained(api: FakeApi) -> None:
    api.on("GET", "/api/v1/runs", lambda r: httpx.Response(200, text="<html>hi</html>"))
    result = cli("status")
    assert result.exit_code == 1
    assert "did not answer with JSON" in result.stderr
    api.on("GET", "/api/v1/jobs", lambda r: httpx.Response(502, text="Bad Gateway"))
    result = cli("jobs")
    assert result.exit_code == 1
    assert "HTTP 502" in result.stderr


def test_trigger_prints_the_run_and_sends_run_date_and_why(api: FakeApi) -> None:
    created = run_json("extract.2026-10-16.1", state="queued", attempts=[])
    api.on("POST", "/api/v1/jobs/extract/trigger", created, status=201)
    result = cli("trigger", "extract", "--run-date", "2026-10-16", "--why", "vendor late")
    assert result.exit_code == 0, result.output
    assert result.stdout == "extract.2026-10-16.1  queued\n"
    assert api.body() == {"run_date": "2026-10-16", "why": "vendor late"}
    assert cli("trigger", "extract").exit_code == 0
    assert api.body() == {}
    assert json.loads(cli("trigger", "extract", "--json").stdout) == created
    assert cli("trigger", "extract", "--run-date", "tomorrow").exit_code == 2


def test_unknown_job_404_exit_1(api: FakeApi) -> None:
    api.on(
        "POST", "/api/v1/jobs/extrct/trigger", lambda r: error(404, "not_found", "no job 'extrct'")
    )
    result = cli("trigger", "extrct")
    assert result.exit_code == 1
    assert "error: no job 'extrct'" in result.stderr


@pytest.mark.parametrize(
    "action", ["hold", "release", "cancel", "kill", "rerun", "force", "mark-success"]
)
def test_every_run_action(api: FakeApi, action: str) -> None:
    run = run_json("load.2026-10-16.1", state="held", reason="held by admin: vendor")
    api.on("POST", f"/api/v1/runs/load.2026-10-16.1/{action}", run)
    result = cli(action, "load.2026-10-16.1", "--why", "vendor")
    assert result.exit_code == 0, result.output
    assert result.stdout == "load.2026-10-16.1  held  held by admin: vendor\n"
    assert api.body() == {"why": "vendor"}


def test_hold_and_release_job(api: FakeApi) -> None:
    api.on("POST", "/api/v1/jobs/load/hold", {"job": "load", "held": True})
    api.on(
        "POST",
        "/api/v1/jobs/load/release",
        {"job": "load", "held": False, "released": [run_json("load.2026-10-16.1", state="queued")]},
    )
    assert cli("hold-job", "load").stdout == "job load held\n"
    released = cli("release-job", "load", "--why", "vendor back")
    assert released.stdout == "job load released\nload.2026-10-16.1  queued\n"
    assert api.body() == {"why": "vendor back"}


def test_a_backfill_that_creates_nothing_says_why(api: FakeApi) -> None:
    api.on("POST", "/api/v1/jobs/extract/backfill", {"runs": []}, status=201)
    result = cli("backfill", "extract", "--from", "2026-10-10", "--to", "2026-10-11")
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == (
        "0 runs created: no day from 2026-10-10 to 2026-10-11 is a business day of extract's "
        "calendar (see pysched calendar CONFIG NAME)"
    )


def test_backfill(api: FakeApi) -> None:
    runs = [run_json(f"extract.2026-10-{d}.1", state="scheduled") for d in (15, 16)]
    api.on("POST", "/api/v1/jobs/extract/backfill", {"runs": runs}, status=201)
    result = cli("backfill", "extract", "--from", "2026-10-15", "--to", "2026-10-16")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[-1] == "2 runs created"
    assert api.body() == {"from": "2026-10-15", "to": "2026-10-16"}
    assert cli("backfill", "extract", "--from", "2026-10-16", "--to", "2026-10-15").exit_code == 2
    assert cli("backfill", "extract", "--from", "2026-10-16").exit_code == 2


def test_show_a_run(api: FakeApi) -> None:
    run = {
        **RUNS[1],
        "events": [
            {
                "id": 7,
                "at": "2026-10-19T01:00:13+00:00",
                "kind": "attempt_ended",
                "data": {
                    "run_id": "fetch-rates.2026-10-16.1",
                    "job": "fetch-rates",
                    "state": "running",
                    "reason": "",
                    "attempt": 1,
                    "outcome": "failed",
                    "exit_code": 1,
                },
            }
        ],
        "actions": [
            {
                "id": 1,
                "at": "2026-10-19T01:05:00+00:00",
                "by": "ann",
                "why": "flaky",
                "action": "force",
                "target": "fetch-rates.2026-10-16.1",
            }
        ],
    }
    api.on("GET", "/api/v1/runs/fetch-rates.2026-10-16.1", run)
    result = cli("show", "fetch-rates.2026-10-16.1")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "state:         running" in out
    assert "duration:      45s / typ 10s (4.5x)" in out
    attempt_lines = [line for line in out.splitlines() if line.startswith(("1 ", "2 "))]
    assert "12s" in attempt_lines[0] and "failed" in attempt_lines[0]
    assert attempt_lines[1].split()[-1] == "running"
    assert "fetch-rates.2026-10-16.1  attempt 1 failed (exit 1)" in out
    assert "force by ann — flaky" in out
    assert json.loads(cli("show", "fetch-rates.2026-10-16.1", "--json").stdout) == run


def test_jobs_table(api: FakeApi) -> None:
    jobs = {
        "jobs": [
            {
                "name": "extract",
                "schedule": "0 2 * * *",
                "timezone": "Europe/London",
                "depends_on": [],
                "enabled": True,
                "held": False,
                "next_firings": ["2026-10-20T01:00:00+00:00"],
                "recent_runs": [
                    run_json(
                        "extract.2026-10-15.1",
                        state="failed",
                        created_at="2026-10-16T01:00:00+00:00",
                    ),
                    run_json("extract.2026-10-16.1"),
                ],
            },
            {
                "name": "load",
                "schedule": None,
                "timezone": "Europe/London",
                "depends_on": ["transform", "fetch-rates"],
                "enabled": True,
                "held": True,
                "next_firings": [],
                "recent_runs": [],
            },
        ]
    }
    api.on("GET", "/api/v1/jobs", jobs)
    result = cli("jobs")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["NAME", "SCHEDULE", "NEXT", "LAST", "RUN", "HELD"]
    assert "2026-10-20 01:00:00" in lines[1]
    assert "succeeded" in lines[1]
    assert "after transform, fetch-rates" in lines[2]
    assert lines[2].endswith("held")


def test_jobs_table_says_what_a_dependency_waits_for(api: FakeApi) -> None:
    """``cleanup`` ran only when ``load`` failed, but the table said ``after load``."""
    cleanup = {
        "name": "cleanup",
        "schedule": None,
        "depends_on": ["load", "extract"],
        "dependencies": [
            {"job": "load", "on": "failure", "date_offset": 0},
            {"job": "extract", "on": "done", "date_offset": -1},
        ],
        "next_firings": [],
        "recent_runs": [],
    }
    api.on("GET", "/api/v1/jobs", {"jobs": [cleanup]})
    result = cli("jobs")
    assert result.exit_code == 0, result.output
    assert "after load fails, extract ends (previous business day)" in result.stdout


def test_a_remote_forecast_window_is_held_to_the_servers_limit(api: FakeApi) -> None:
    """The server answers at most 366 days (a 422, exit 1, the operator found it out only after
    asking); offline, with the config file, two years go."""
    result = cli("forecast", "--from", "2026-01-01", "--to", "2027-01-02")  # 367 days
    assert result.exit_code == 2, result.output
    said = " ".join(result.stderr.replace("│", " ").split())
    assert "the server forecasts at most 366 days" in said and "forecast CONFIG" in said
    assert api.requests == []
    api.on("GET", "/api/v1/forecast", {"from": "2026-01-01", "to": "2027-01-01", "runs": []})
    assert cli("forecast", "--from", "2026-01-01", "--to", "2027-01-01").exit_code == 0


def test_remote_forecast_has_the_offline_shape(api: FakeApi) -> None:
    api.on(
        "GET",
        "/api/v1/forecast",
        {
            "from": "2026-10-19",
            "to": "2026-10-19",
            "runs": [
                {
                    "job": "extract",
                    "run_date": "2026-10-16",
                    "fires_at": "2026-10-19T02:00:00+01:00",
                    "trigger": "schedule",
                    "upstream": None,
                },
                {
                    "job": "transform",
                    "run_date": "2026-10-16",
                    "fires_at": "2026-10-19T02:00:00+01:00",
                    "trigger": "dependency",
                    "upstream": "extract",
                },
            ],
        },
    )
    result = cli("forecast", "--date", "2026-10-19", "--json")
    assert result.exit_code == 0, result.output
    runs = json.loads(result.stdout)
    assert runs[0] == {
        "job": "extract",
        "run_date": "2026-10-16",
        "fires_at": "2026-10-19T02:00:00+01:00",
        "fires_at_utc": "2026-10-19T01:00:00+00:00",
        "trigger": "schedule",
        "upstream": None,
    }
    assert api.last.url.params["date"] == "2026-10-19"
    table = cli("forecast", "--from", "2026-10-19", "--to", "2026-10-20")
    assert "after extract" in table.stdout
    assert "2026-10-19 01:00Z" in table.stdout
    assert (api.last.url.params["from"], api.last.url.params["to"]) == ("2026-10-19", "2026-10-20")
    assert cli("forecast", "--date", "nope").exit_code == 2


def test_reload_changed_and_problems(api: FakeApi) -> None:
    api.on(
        "POST",
        "/api/v1/reload",
        {"applied": True, "changed": True, "sha256": "ab" * 32, "warnings": ["job x has no owner"]},
    )
    result = cli("reload")
    assert result.exit_code == 0
    assert result.stdout == f"reloaded: {'ab' * 6} (changed)\n"
    assert "warning: job x has no owner" in result.stderr
    api.on(
        "POST",
        "/api/v1/reload",
        lambda r: error(
            422,
            "invalid",
            "the config has 2 problems",
            problems=[
                "etl.yaml:3:5: unknown key 'comand' — did you mean 'command'?",
                "etl.yaml:9:1: bad cron",
            ],
        ),
    )
    refused = cli("reload")
    assert refused.exit_code == 1
    lines = refused.stderr.splitlines()
    assert lines[0] == "error: the config has 2 problems"
    assert lines[1].strip().startswith("etl.yaml:3:5: unknown key")
    assert lines[2].strip() == "etl.yaml:9:1: bad cron"


def test_reload_dry_run_shows_the_diff_and_applies_nothing(api: FakeApi) -> None:
    def must_not_reload(request: object) -> object:
        raise AssertionError("a dry run must not reload")

    api.on("POST", "/api/v1/reload", must_not_reload)
    diff = "--- config@aaaaaaaaaaaa\n+++ config@bbbbbbbbbbbb\n@@ -1 +1,2 @@\n jobs:\n+  load:\n"
    pending = {
        "valid": True,
        "changed": True,
        "current": "a" * 64,
        "sha256": "b" * 64,
        "diff": diff,
        "problems": [],
        "warnings": ["scheduler.listen changed: it takes effect at the next start"],
    }
    api.on("GET", "/api/v1/config/pending", pending)
    result = cli("reload", "--dry-run")
    assert result.exit_code == 0, result.output
    assert result.stdout == diff
    assert "warning: scheduler.listen changed" in result.stderr
    assert f"a reload would apply {'b' * 12} (in force: {'a' * 12})" in result.stderr
    api.on(
        "GET",
        "/api/v1/config/pending",
        {**pending, "changed": False, "sha256": "a" * 64, "diff": "", "warnings": []},
    )
    same = cli("reload", "--dry-run")
    assert (same.exit_code, same.stdout) == (0, "")
    assert "a reload would change nothing" in same.stderr
    refused = {**pending, "valid": False, "changed": False, "problems": ["etl.yaml:9:1: bad cron"]}
    api.on("GET", "/api/v1/config/pending", refused)
    bad = cli("reload", "--dry-run")
    assert bad.exit_code == 1
    assert "problem: etl.yaml:9:1: bad cron" in bad.stderr
    assert "a reload would be refused" in bad.stderr
    as_json = cli("reload", "--dry-run", "--json")
    assert as_json.exit_code == 1
    assert json.loads(as_json.stdout)["problems"] == ["etl.yaml:9:1: bad cron"]


def test_config_versions_show_and_diff(api: FakeApi) -> None:
    api.on(
        "GET",
        "/api/v1/config/versions",
        {
            "versions": [
                {
                    "sha256": "a" * 64,
                    "at": "2026-10-18T10:00:00+00:00",
                    "by": "serve",
                    "current": False,
                },
                {
                    "sha256": "b" * 64,
                    "at": "2026-10-19T10:00:00+00:00",
                    "by": "admin",
                    "current": True,
                },
            ]
        },
    )
    versions = cli("config", "versions")
    assert versions.exit_code == 0, versions.output
    assert versions.stdout.splitlines()[2].split()[:2] == ["*", "b" * 12]
    api.on(
        "GET",
        "/api/v1/config/diff",
        {"from": "a" * 64, "to": "b" * 64, "diff": "--- a\n+++ b\n-x\n+y\n"},
    )
    diff = cli("config", "diff", "aaaaaa", "bbbbbb")
    assert diff.stdout == "--- a\n+++ b\n-x\n+y\n"
    assert (api.last.url.params["from"], api.last.url.params["to"]) == ("aaaaaa", "bbbbbb")
    api.on("GET", "/api/v1/config/versions/bbbbbb", {"sha256": "b" * 64, "text": "jobs: {}\n"})
    assert cli("config", "show", "bbbbbb").stdout == "jobs: {}\n"
    asked = len(api.requests)
    for args in (("diff", "ab1f2", "bbbbbb"), ("diff", "aaaaaa", "zzzzzz"), ("show", "xyz")):
        bad = cli("config", *args)
        assert bad.exit_code == 2, args  # a usage mistake, caught before asking the server
        assert "is not a config" in bad.output
    assert len(api.requests) == asked


def test_403_names_the_role(api: FakeApi) -> None:
    api.on(
        "POST",
        "/api/v1/reload",
        lambda r: error(403, "forbidden", "reload needs the admin role; token 'ci' is operator"),
    )
    result = cli("--token", "pysched_ci", "reload")
    assert result.exit_code == 1
    assert "needs the admin role" in result.stderr


def test_colour_only_on_a_terminal_without_no_color(monkeypatch: pytest.MonkeyPatch) -> None:
    import io
    import sys

    from pysched.cli.run_display import paint_state

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(sys, "stdout", Terminal())
    painted = paint_state("failed")
    assert painted != "failed" and "failed" in painted and "\x1b[" in painted
    assert paint_state("waiting") == "waiting"  # the quiet states stay plain
    monkeypatch.setenv("NO_COLOR", "1")
    assert paint_state("failed") == "failed"
