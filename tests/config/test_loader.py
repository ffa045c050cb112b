"""load_config: a checked Config, or every problem at once with its file:line:col."""

from __future__ import annotations

import textwrap
from datetime import date, timedelta
from pathlib import Path

import pytest

from pysched.config import (
    CatchUp,
    Condition,
    ConfigError,
    Criticality,
    Overlap,
    load_config,
    parse_config,
)
from pysched.timing.run_dates import RunDateRule

FILE = Path("pysched.yaml")


def load(text: str, env: dict[str, str] | None = None):
    return parse_config(textwrap.dedent(text), FILE, env or {})


def problems(text: str, env: dict[str, str] | None = None) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        load(text, env)
    return [str(p) for p in caught.value.problems]


def test_minimal_config_gets_defaults() -> None:
    config = load(
        """
        jobs:
          hello:
            schedule: "0 9 * * *"
            command: echo hello
        """
    )
    job = config.jobs["hello"]
    assert job.timezone.key == "UTC"
    assert job.run_date is RunDateRule.SAME_DAY
    assert job.overlap is Overlap.QUEUE
    assert job.retries.count == 0
    assert job.catch_up is CatchUp.LATEST
    assert job.criticality is Criticality.NORMAL
    assert job.enabled
    assert config.scheduler.max_running == 64
    assert config.scheduler.history_days == 90
    assert config.scheduler.max_catch_up == 100
    assert config.scheduler.state_dir == Path.cwd() / "state"
    assert len(config.sha256) == 64


def test_example_loads() -> None:
    config = load_config(Path(__file__).parents[2] / "examples" / "etl.yaml")
    assert list(config.jobs) == ["extract", "transform", "fetch-rates", "load", "cleanup"]
    assert config.jobs["transform"].schedule is None
    assert config.jobs["transform"].pool == "warehouse"
    cleanup = config.jobs["cleanup"]
    assert cleanup.depends_on[0].condition is Condition.FAILURE
    assert cleanup.retries.count == 0
    rates = config.jobs["fetch-rates"]
    assert rates.retries.count == 3
    assert rates.retries.backoff.initial == timedelta(seconds=10)
    assert rates.retries.backoff.jitter == pytest.approx(0.1)
    assert rates.command.argv and rates.command.shell is None
    assert config.scheduler.state_dir == Path(__file__).parents[2] / "examples" / "state"


def test_full_job_keys() -> None:
    config = load(
        """
        scheduler:
          timezone: Europe/London
          catch_up: all
        calendars:
          uk: {country: GB, subdivision: ENG}
          desk:
            based_on: uk
            weekdays: [sun-thu]
            holidays: [2026-12-24, {date: 2026-12-31, name: "New Year's Eve"}]
            workdays: ["2026-12-27"]
        pools: {db: 2}
        jobs:
          up:
            schedule: ["0 2 * * *", "@hourly"]
            command: [prog, "{run_date:%Y%m%d}"]
          down:
            command: "true"
            timezone: America/New_York
            calendar: desk
            run_date: previous_business_day
            depends_on:
              - up
              - {job: up, on: done, date: previous}
              - {job: down, date: -2}
            overlap: skip
            retries: {count: 2, backoff: {initial: 1m, factor: 3, max: 1h, jitter: 0.5}}
            timeout: 1h30m
            pool: db
            priority: 7
            env: {TARGET: "{job}-{run_id}"}
            cwd: /tmp/{job}
            description: d
            owner: o
            tags: [a, b]
            criticality: critical
            catch_up: none
            dst: {gap: skip, repeat: both}
            enabled: false
        """
    )
    down = config.jobs["down"]
    assert down.timezone.key == "America/New_York"
    assert down.calendar is config.calendars["desk"]
    assert [(d.job, d.condition, d.date_offset) for d in down.depends_on] == [
        ("up", Condition.SUCCESS, 0),
        ("up", Condition.DONE, -1),
        ("down", Condition.SUCCESS, -2),
    ]
    assert down.overlap is Overlap.SKIP
    assert down.retries.backoff.factor == 3
    assert down.timeout == timedelta(hours=1, minutes=30)
    assert down.priority == 7
    assert set(down.env) == {"TARGET"}
    assert down.tags == ("a", "b")
    assert down.catch_up is CatchUp.NONE
    assert down.dst.gap.value == "skip" and down.dst.repeat.value == "both"
    assert not down.enabled
    assert down.schedule is None
    assert config.jobs["up"].catch_up is CatchUp.ALL
    assert config.jobs["up"].schedule is not None
    assert len(config.jobs["up"].schedule.crons) == 2
    desk = config.calendars["desk"]
    assert not desk.is_business_day(date(2026, 12, 24))
    assert desk.holiday_name(date(2026, 12, 31)) == "New Year's Eve"
    assert desk.is_business_day(date(2026, 12, 27))  # a Sunday, but a listed workday


def test_defaults_apply_unless_overridden() -> None:
    config = load(
        """
        defaults:
          timezone: Asia/Tokyo
          retries: 2
          owner: ops
        jobs:
          a: {schedule: "@daily", command: "true"}
          b: {schedule: "@daily", command: "true", owner: me, timezone: UTC}
        """
    )
    assert config.jobs["a"].timezone.key == "Asia/Tokyo"
    assert config.jobs["a"].retries.count == 2
    assert config.jobs["b"].owner == "me"
    assert config.jobs["b"].timezone.key == "UTC"


def test_merge_keys_and_anchors() -> None:
    config = load(
        """
        x-common: &common
          command: echo shared
        jobs:
          a:
            <<: *common
            schedule: "@daily"
        """.replace("x-common: &common", "defaults: &common")
    )
    assert config.jobs["a"].command.display() == "echo shared"


def test_secret_from_env_and_masked_in_display() -> None:
    config = load(
        """
        jobs:
          a: {schedule: "@daily", command: "login --password ${DB_PASSWORD}"}
        """,
        env={"DB_PASSWORD": "hunter2!"},
    )
    assert "hunter2" not in config.jobs["a"].command.display()
    assert "***" in config.jobs["a"].command.display()
    assert "hunter2" not in repr(config.secrets)


def test_secrets_file(tmp_path: Path) -> None:
    (tmp_path / "secrets.env").write_text("TOKEN=abc123\n")
    (tmp_path / "secrets.env").chmod(0o600)
    (tmp_path / "pysched.yaml").write_text(
        textwrap.dedent(
            """
            scheduler: {secrets_file: secrets.env}
            jobs:
              a: {schedule: "@daily", command: "curl -H ${TOKEN}"}
            """
        )
    )
    config = load_config(tmp_path / "pysched.yaml", env={})
    assert config.secrets.get("TOKEN") == "abc123"
    assert config.warnings == ()


def test_secrets_file_readable_by_others_warns(tmp_path: Path) -> None:
    (tmp_path / "secrets.env").write_text("TOKEN=abc123\n")
    (tmp_path / "secrets.env").chmod(0o644)
    (tmp_path / "pysched.yaml").write_text(
        'scheduler: {secrets_file: secrets.env}\njobs:\n  a: {schedule: "@daily", command: x}\n'
    )
    config = load_config(tmp_path / "pysched.yaml", env={})
    assert len(config.warnings) == 1
    assert "readable" in config.warnings[0].message


def test_unreadable_file_is_a_problem(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path / "missing.yaml")
    assert "No such file" in str(caught.value)


# -- every check, with its place ------------------------------------------------------------

CASES = [
    pytest.param(
        "jobs:\n  a: [1\n",
        "pysched.yaml:3:1: YAML syntax",
        id="yaml_syntax",
    ),
    pytest.param(
        "jobs:\n  a: {schedule: '@daily', command: x}\n  a: {schedule: '@daily', command: y}\n",
        "pysched.yaml:3:3: duplicate key 'a' in jobs — first defined at line 2",
        id="duplicate_job",
    ),
    pytest.param(
        "jobs:\n  extract:\n    schedule: '@daily'\n    comand: x\n",
        "pysched.yaml:4:5: unknown key 'comand' in job 'extract' — did you mean 'command'?",
        id="unknown_key_with_hint",
    ),
    pytest.param(
        "jobz: {}\n",
        "pysched.yaml:1:1: unknown key 'jobz' in the config — did you mean 'jobs'?",
        id="unknown_top_key",
    ),
    pytest.param(
        "jobs:\n  extract:\n    schedule: '@daily'\n",
        "pysched.yaml:2:3: job 'extract' has no command",
        id="no_command",
    ),
    pytest.param(
        "jobs:\n  extract:\n    command: x\n",
        "pysched.yaml:2:3: job 'extract' has no schedule and no depends_on",
        id="never_created",
    ),
    pytest.param(
        "jobs:\n  a:\n    command: x\n    schedule: '0 2 32 * *'\n",
        "pysched.yaml:4:20: day-of-month: 32 is out of range 1-31",
        id="bad_cron_points_at_token",
    ),
    pytest.param(
        "jobs:\n  a:\n    command: x\n    schedule: '0 0 30 2 *'\n",
        "pysched.yaml:4:20: can never fire",
        id="cron_never_fires",
    ),
    pytest.param(
        "jobs:\n  a:\n    command: x\n    schedule: '@daily'\n    timezone: Europe/Londn\n",
        "pysched.yaml:5:15: unknown time zone 'Europe/Londn' in job 'a' timezone — did you mean"
        " 'Europe/London'?",
        id="unknown_zone",
    ),
    pytest.param(
        "jobs:\n  a:\n    command: x\n    schedule: '@daily'\n    calendar: ukk\n",
        "pysched.yaml:5:15: unknown calendar 'ukk'",
        id="unknown_calendar",
    ),
    pytest.param(
        "pools: {db: 1}\njobs:\n  a:\n    command: x\n    schedule: '@daily'\n    pool: dbb\n",
        "pysched.yaml:6:11: unknown pool 'dbb' — did you mean 'db'?",
        id="unknown_pool",
    ),
    pytest.param(
        "jobs:\n  a:\n    command: x\n    depends_on: [transfrom]\n  transform:\n"
        "    command: x\n    schedule: '@daily'\n",
        "pysched.yaml:4:18: job 'a' depends on unknown job 'transfrom' — did you mean 'transform'?",
        id="unknown_job",
    ),
    pytest.param(
        "jobs:\n  s:\n    command: x\n    schedule: '@daily'\n  transform:\n    command: x\n"
        "    depends_on: [s, load]\n  load:\n    command: x\n    depends_on: [transform]\n",
        "pysched.yaml:5:3: dependency cycle: transform -> load -> transform",
        id="cycle",
    ),
    pytest.param(
        "jobs:\n  a:\n    command: x\n    schedule: '@daily'\n    depends_on: [a]\n",
        "pysched.yaml:5:18: job 'a' depends on itself for the same run date",
        id="self_dependency",
    ),
    pytest.param(
        "pools:\n  db: 0\njobs:\n  a: {command: x, schedule: '@daily'}\n",
        "pysched.yaml:2:7: pool 'db' slots must be at least 1, not 0",
        id="pool_slots",
    ),
    pytest.param(
        "jobs:\n  a:\n    command: x\n    schedule: '@daily'\n    timeout: 10 minutes\n",
        "pysched.yaml:5:14: timeout: bad duration '10 minutes'",
        id="bad_duration",
    ),
    pytest.param(
        "jobs:\n  a:\n    command: x\n    schedule: '@daily'\n    run_date: previous_businessday\n",
        "pysched.yaml:5:15: run_date must be one of same_day, previous_day, previous_business_day,"
        " next_business_day, not 'previous_businessday' — did you mean 'previous_business_day'?",
        id="bad_run_date",
    ),
    pytest.param(
        "jobs:\n  a:\n    command: echo {rundate}\n    schedule: '@daily'\n",
        "pysched.yaml:3:19: command: ",
        id="unknown_placeholder",
    ),
    pytest.param(
        "jobs:\n  a:\n    command: echo ${NOPE}\n    schedule: '@daily'\n",
        "pysched.yaml:3:14: ${NOPE} has no value — set NOPE in the environment",
        id="secret_without_value",
    ),
    pytest.param(
        "jobs:\n  bad.name:\n    command: x\n    schedule: '@daily'\n",
        "pysched.yaml:2:3: bad job name 'bad.name'",
        id="bad_job_name",
    ),
    pytest.param(
        f"jobs:\n  {'j' * 201}:\n    command: x\n    schedule: '@daily'\n",
        f"pysched.yaml:2:3: job name {'j' * 20}… is 201 characters long — use at most 200",
        id="job_name_too_long",
    ),
    pytest.param(
        "jobs:\n  a:\n    command: x\n    schedule: '@daily'\n    retries: many\n",
        "pysched.yaml:5:14: retries must be a whole number, not text",
        id="wrong_type",
    ),
    pytest.param(
        "jobs:\n  a:\n    command: x\n    schedule: '@daily'\n    enabled: yes\n",
        "pysched.yaml:5:14: enabled must be true or false, not text — write true",
        id="yaml12_yes_is_text",
    ),
    pytest.param(
        "calendars:\n  c: {country: XX}\njobs:\n  a: {command: x, schedule: '@daily'}\n",
        "pysched.yaml:2:16: calendar 'c': unknown country 'XX'",
        id="unknown_country",
    ),
    pytest.param(
        "calendars:\n  a: {based_on: b}\n  b: {based_on: a}\n"
        "jobs:\n  j: {command: x, schedule: '@daily'}\n",
        "based_on cycle",
        id="calendar_based_on_cycle",
    ),
    pytest.param(
        "jobs:\n  a:\n    command: x\n    depends_on: [{job: b, date: previous}]\n  b:\n"
        "    command: x\n    schedule: '@daily'\n",
        "pysched.yaml:2:3: job 'a' has no schedule and only cross-date dependencies",
        id="dependency_only_cross_date",
    ),
    pytest.param(
        "jobs:\n  a:\n    command: x\n    schedule: '@daily'\n"
        "    depends_on: [{job: a, date: yesterday}]\n",
        "pysched.yaml:5:33: depends_on date must be same, previous or -N",
        id="bad_dependency_date",
    ),
    pytest.param(
        "defaults:\n  timeout: forever\njobs:\n  a: {command: x, schedule: '@daily'}\n"
        "  b: {command: x, schedule: '@daily'}\n",
        "pysched.yaml:2:12: timeout: bad duration 'forever'",
        id="bad_default_reported_once",
    ),
    pytest.param(
        "scheduler:\n  max_running: 0\njobs:\n  a: {command: x, schedule: '@daily'}\n",
        "pysched.yaml:2:16: scheduler.max_running must be at least 1, not 0",
        id="max_running",
    ),
    pytest.param(
        "jobs:\n  a:\n    command: x\n    schedule: '@daily'\n    retries: {count: 1, backoff: "
        "{initial: 1h, max: 1m}}\n",
        "backoff.max must not be shorter than backoff.initial",
        id="backoff_max_below_initial",
    ),
    pytest.param("", "pysched.yaml:1:1: the config is empty", id="empty_file"),
    pytest.param("- a\n- b\n", "the config must be a mapping, not a list", id="not_a_mapping"),
]


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_each_check_names_its_place(text: str, expected: str) -> None:
    found = problems(text)
    assert any(expected in p for p in found), found


def test_default_problem_reported_once() -> None:
    found = problems(
        "defaults:\n  timeout: forever\njobs:\n  a: {command: x, schedule: '@daily'}\n"
        "  b: {command: x, schedule: '@daily'}\n"
    )
    assert len([p for p in found if "forever" in p]) == 1


def test_every_problem_reported_at_once() -> None:
    found = problems(
        """
        pools: {db: 0}
        jobs:
          a:
            comand: x
            schedule: "99 * * * *"
            timezone: Mars/Olympus
          b:
            command: echo {bogus}
            depends_on: [nobody]
        """
    )
    assert len(found) >= 6, found
    joined = "\n".join(found)
    for fragment in ("slots", "comand", "minute", "Mars/Olympus", "bogus", "nobody"):
        assert fragment in joined


def test_a_cycle_through_a_job_with_another_mistake_is_reported_with_it() -> None:
    """Found by an operator: the cycle only showed once the unknown pool was fixed."""
    found = problems(
        """
        jobs:
          a:
            schedule: "0 2 * * *"
            command: echo ${NOPE_NOT_SET}
            depends_on: [b]
          b:
            depends_on: [a]
            command: echo b
            pool: nosuchpool
        """
    )
    joined = "\n".join(found)
    for fragment in ("unknown pool 'nosuchpool'", "dependency cycle: a -> b -> a", "NOPE_NOT_SET"):
        assert fragment in joined, found


def test_a_calendar_with_a_mistake_is_not_called_unknown_and_hides_nothing() -> None:
    """A calendar with one bad entry used to be dropped, so each job using it was told the
    calendar was unknown (it is defined); and a bad based_on stopped the checks of the rest."""
    found = problems(
        "calendars:\n"
        "  uk: {country: GB, holidays: [2026-02-30]}\n"
        "  base: {based_on: nope, weekdays: [7]}\n"
        "jobs:\n  j: {command: x, schedule: '@daily', calendar: uk}\n"
    )
    assert found == [
        "pysched.yaml:2:32: 2026-02-30 is not a day of the calendar",
        "pysched.yaml:3:20: calendar 'base' is based on unknown calendar 'nope'",
        "pysched.yaml:3:36: calendar 'base' weekdays: weekday 7 is out of range; write a day "
        "name (mon..sun, or in full), a range such as mon-fri, or a number 0-6 with Monday=0",
    ]


def test_a_zone_in_the_wrong_case_gets_its_right_spelling() -> None:
    found = problems("scheduler: {timezone: utc}\njobs:\n  a: {command: x, schedule: '@daily'}\n")
    assert found == [
        "pysched.yaml:1:23: unknown time zone 'utc' in scheduler.timezone — did you mean 'UTC'?"
    ]
