"""The offline commands as a user runs them: output, --json and exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pysched.cli import app

ROOT = Path(__file__).parents[2]
EXAMPLE = str(ROOT / "examples" / "etl.yaml")
runner = CliRunner()


def run(*args: str):
    return runner.invoke(app, list(args))


def test_validate_ok_summary() -> None:
    result = run("validate", EXAMPLE, "--after", "2026-10-17T12:00+01:00")
    assert result.exit_code == 0, result.output
    assert "OK — 5 jobs" in result.output
    extract = next(line for line in result.output.splitlines() if line.startswith("extract"))
    assert "2026-10-19 02:00 BST (+0100)" in extract
    assert "2026-10-19 01:00Z" in extract
    assert "2026-10-16" in extract
    transform = next(line for line in result.output.splitlines() if line.startswith("transform"))
    assert "after extract" in transform


def test_validate_json() -> None:
    result = run("validate", EXAMPLE, "--json", "--after", "2026-10-17T12:00+01:00")
    assert result.exit_code == 0
    data = json.loads(result.output)
    assert data["ok"] is True
    jobs = {job["name"]: job for job in data["jobs"]}
    assert jobs["extract"]["next_firing"] == "2026-10-19T02:00:00+01:00"
    assert jobs["extract"]["next_run_date"] == "2026-10-16"
    assert jobs["transform"]["next_firing"] is None
    assert data["pools"] == {"warehouse": 1}


def test_validate_problems_exit_1(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("jobs:\n  extract:\n    comand: x\n    schedule: '0 2 32 * *'\n")
    result = run("validate", str(bad))
    assert result.exit_code == 1
    assert f"{bad}:3:5: unknown key 'comand' in job 'extract'" in result.output
    assert "did you mean 'command'?" in result.output
    assert f"{bad}:4:" in result.output

    result = run("validate", str(bad), "--json")
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    assert data["ok"] is False
    assert {"file", "line", "col", "message", "hint"} <= set(data["problems"][0])
    # every key validation.md names, as for a good config; what is unknown is null
    assert set(data) == {"ok", "problems", "warnings", "jobs", "calendars", "pools"}
    assert (data["jobs"], data["calendars"], data["pools"]) == (None, None, None)


@pytest.mark.parametrize("command", ["validate", "forecast", "serve"])
def test_a_missing_config_file_is_a_usage_mistake_as_for_dash_c(
    tmp_path: Path, command: str
) -> None:
    missing = str(tmp_path / "nope.yaml")
    result = run(command, missing)
    assert result.exit_code == 2, result.output
    assert "does not exist" in result.output
    assert run("-c", missing, "status").exit_code == 2


def test_forecast_monday_processes_friday() -> None:
    result = run("forecast", EXAMPLE, "--date", "2026-10-19", "--json")
    assert result.exit_code == 0, result.output
    runs = json.loads(result.output)
    assert [(r["job"], r["trigger"], r["upstream"]) for r in runs] == [
        ("extract", "schedule", None),
        ("transform", "dependency", "extract"),
        ("load", "dependency", "transform"),
        ("cleanup", "dependency", "load"),
        ("fetch-rates", "schedule", None),
    ]
    assert {r["run_date"] for r in runs} == {"2026-10-16"}
    assert runs[0]["fires_at"] == "2026-10-19T02:00:00+01:00"
    assert runs[0]["fires_at_utc"] == "2026-10-19T01:00:00+00:00"


def test_forecast_table_and_window() -> None:
    result = run("forecast", EXAMPLE, "--from", "2026-12-24", "--to", "2026-12-29")
    assert result.exit_code == 0, result.output
    lines = [line for line in result.output.splitlines() if "  extract  " in line]
    # Christmas (Fri 25th) and Boxing Day observed (Mon 28th) are closed; the weekend too.
    dates = [line.split()[0] for line in lines]
    assert dates == ["2026-12-24", "2026-12-29"]
    assert "2026-12-24" in lines[1]  # Tuesday 29th processes Thursday 24th


def test_forecast_usage_errors_exit_2() -> None:
    assert run("forecast", EXAMPLE, "--date", "19/10/2026").exit_code == 2
    assert run("forecast", EXAMPLE, "--date", "2026-10-19", "--from", "2026-10-19").exit_code == 2
    assert run("forecast", EXAMPLE, "--from", "2026-10-19", "--to", "2026-10-01").exit_code == 2
    assert run("forecast", EXAMPLE, "--from", "2026-01-01", "--to", "2028-01-04").exit_code == 2
    assert run("forecast", EXAMPLE, "--from", "2026-01-01", "--to", "2027-06-30").exit_code == 0


def test_calendar_lists_holidays_with_names() -> None:
    result = run("calendar", EXAMPLE, "uk", "--from", "2026-12-24", "--to", "2026-12-29", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["business_days"] == ["2026-12-24", "2026-12-29"]
    holidays = {h["date"]: h["name"] for h in data["holidays"]}
    assert holidays["2026-12-25"] == "Christmas Day"
    assert "2026-12-28" in holidays

    table = run("calendar", EXAMPLE, "uk", "--from", "2026-12-24", "--to", "2026-12-29")
    assert table.exit_code == 0
    assert "Christmas Day" in table.output
    assert "2 business day(s) of 6" in table.output


def test_calendar_unknown_name_exit_1() -> None:
    result = run("calendar", EXAMPLE, "ukk")
    assert result.exit_code == 1
    assert "did you mean 'uk'?" in result.output


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            [
                "30 2 * * *",
                "--tz",
                "America/New_York",
                "--after",
                "2026-03-07T12:00",
                "--count",
                "2",
            ],
            ["2026-03-08T03:00:00-04:00", "2026-03-09T02:30:00-04:00"],
        ),
        (
            [
                "0 1 * * *",
                "--tz",
                "America/New_York",
                "--after",
                "2026-10-31T12:00",
                "--count",
                "2",
            ],
            ["2026-11-01T01:00:00-04:00", "2026-11-02T01:00:00-05:00"],
        ),
    ],
    ids=["spring_gap_jumps", "fall_repeat_first"],
)
def test_cron_next(args: list[str], expected: list[str]) -> None:
    result = run("cron", "next", *args, "--json")
    assert result.exit_code == 0, result.output
    assert [f["fires_at"] for f in json.loads(result.output)] == expected


def test_cron_next_bad_expression_exit_1() -> None:
    result = run("cron", "next", "0 0 32 * *")
    assert result.exit_code == 1
    assert "day-of-month" in result.output


def test_cron_next_bad_zone_exit_2() -> None:
    assert run("cron", "next", "@daily", "--tz", "Mars/Base").exit_code == 2


def test_python_dash_m_and_console_script() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "pysched", "--help"], capture_output=True, text=True, check=True
    )
    assert "validate" in out.stdout
