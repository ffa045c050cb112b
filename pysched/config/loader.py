"""``load_config``: a YAML file in, a checked frozen ``Config`` out, or every problem at once.

The loader reads in passes so that one mistake does not hide the next: the YAML tree first
(syntax, duplicate keys), then each top-level section on its own (scheduler, calendars, pools),
then every job against what those define, then checks across jobs (``${NAME}`` values,
dependency cycles). All problems go into one ``ConfigError``; nothing is half-loaded.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
from collections.abc import Mapping
from datetime import date
from pathlib import Path
from zoneinfo import ZoneInfo

from pysched.config.fields import FieldReader
from pysched.config.graph import find_cycles
from pysched.config.hints import did_you_mean
from pysched.config.jobs import JOB_KEYS, JobBuilder, JobContext
from pysched.config.model import CatchUp, Config, Job, Listen, SchedulerSettings, Tls
from pysched.config.secrets import Secrets, load_secrets_file
from pysched.config.yaml_tree import Place, YMap, YNode, YScalar, kind_of, read_yaml
from pysched.errors import CalendarError, ConfigError, Problem
from pysched.gc_pause import collection_paused
from pysched.timing.calendar import Calendar, parse_weekdays
from pysched.timing.run_dates import parse_iso_date

TOP_KEYS = ("scheduler", "calendars", "pools", "defaults", "jobs")
_DATE_SHAPE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
SCHEDULER_KEYS = (
    "state_dir",
    "log_dir",
    "timezone",
    "max_running",
    "secrets_file",
    "catch_up",
    "max_catch_up",
    "history_days",
    "listen",
    "tls",
    "tokens_file",
)
TLS_KEYS = ("cert", "key")
DEFAULT_LISTEN = "127.0.0.1:8080"
CALENDAR_KEYS = ("weekdays", "holidays", "country", "subdivision", "workdays", "based_on")


def load_config(path: str | os.PathLike[str], env: Mapping[str, str] | None = None) -> Config:
    """Read and check the config at ``path``; raise ``ConfigError`` listing every problem.

    ``env`` is where ``${NAME}`` values come from besides the secrets file (default: this
    process's environment). Relative paths in the config resolve against the file's folder.
    """
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ConfigError([Problem(file=str(file), line=0, col=0, message=reason)]) from None
    return parse_config(text, file, env)


def parse_config(text: str, path: Path | str, env: Mapping[str, str] | None = None) -> Config:
    """Check config ``text`` as if read from ``path`` (which anchors relative paths)."""
    with collection_paused():
        return _parse_config(text, Path(path), env)


def _parse_config(text: str, path: Path, env: Mapping[str, str] | None) -> Config:
    reader = FieldReader()
    name = str(path)
    root, yaml_problems = read_yaml(text, name)
    reader.problems.extend(yaml_problems)
    if root is None:
        if not yaml_problems:
            reader.report(Place(file=name, line=1, col=1), "the config is empty", "add jobs:")
        raise ConfigError(reader.problems)
    top = reader.mapping(root, "the config")
    if top is None:
        raise ConfigError(reader.problems)
    reader.check_keys(top, TOP_KEYS, "the config")

    base = path.parent.absolute()
    scheduler_node = top.get("scheduler")
    scheduler = _scheduler(reader, scheduler_node, base)
    calendars, broken_calendars = _calendars(reader, top.get("calendars"))
    pools = _pools(reader, top.get("pools"))
    jobs_node = top.get("jobs")
    if jobs_node is None:
        reader.report(top.place, "the config has no jobs:", "add a jobs: section")
    jobs, builder = _jobs(
        reader, jobs_node, top.get("defaults"), calendars, broken_calendars, pools, scheduler
    )
    secrets, secrets_warnings = _secrets(
        reader, scheduler_node, scheduler, env, frozenset(builder.secret_names)
    )

    for secret, place in builder.secret_names.items():
        if secret not in secrets:
            where = "the environment"
            if scheduler is not None and scheduler.secrets_file is not None:
                where += f" or {scheduler.secrets_file.name}"
            reader.report(place, f"${{{secret}}} has no value", f"set {secret} in {where}")

    if reader.problems or scheduler is None:
        raise ConfigError(reader.problems)
    return Config(
        path=path,
        text=text,
        sha256=hashlib.sha256(text.encode()).hexdigest(),
        scheduler=scheduler,
        calendars=calendars,
        pools=pools,
        jobs=jobs,
        secrets=secrets,
        warnings=tuple(secrets_warnings),
    )


def _scheduler(reader: FieldReader, node: YNode | None, base: Path) -> SchedulerSettings | None:
    mapping = reader.mapping(node, "scheduler") if node is not None else YMap(entries=(), place=_NO)
    if mapping is None:
        return None
    reader.check_keys(mapping, SCHEDULER_KEYS, "scheduler")
    before = reader.reports

    def path_of(key: str, default: str | None) -> Path | None:
        value = mapping.get(key)
        if value is None:
            return base / default if default is not None else None
        if not (isinstance(value, YScalar) and isinstance(value.value, str)):
            reader.report(value.place, f"scheduler.{key} must be a path, not {kind_of(value)}")
            return None
        text = reader.text(value, f"scheduler.{key}")
        return (base / Path(text).expanduser()) if text is not None else None

    def int_of(key: str, default: int, minimum: int) -> int | None:
        value = mapping.get(key)
        if value is None:
            return default
        return reader.integer(value, f"scheduler.{key}", minimum=minimum)

    zone_node = mapping.get("timezone")
    timezone = reader.zone(zone_node, "scheduler.timezone") if zone_node else ZoneInfo("UTC")
    catch_node = mapping.get("catch_up")
    catch_up = reader.choice(catch_node, CatchUp, "scheduler.catch_up") if catch_node else None
    state_dir = path_of("state_dir", "state")
    log_dir = path_of("log_dir", "logs")
    secrets_file = path_of("secrets_file", None)
    max_running = int_of("max_running", 64, 1)
    max_catch_up = int_of("max_catch_up", 100, 0)
    history_days = int_of("history_days", 90, 1)
    tokens_file = path_of("tokens_file", None)
    listen = _listen(reader, mapping.get("listen"))
    tls = _tls(reader, mapping.get("tls"), base)
    if reader.reports != before:
        return None
    assert state_dir and log_dir and timezone and max_running and history_days
    assert max_catch_up is not None
    return SchedulerSettings(
        state_dir=state_dir,
        log_dir=log_dir,
        timezone=timezone,
        max_running=max_running,
        secrets_file=secrets_file,
        catch_up=catch_up or CatchUp.LATEST,
        max_catch_up=max_catch_up,
        history_days=history_days,
        listen=listen or Listen.parse(DEFAULT_LISTEN),
        tls=tls,
        tokens_file=tokens_file,
    )


def _listen(reader: FieldReader, node: YNode | None) -> Listen | None:
    if node is None:
        return None
    text = reader.text(node, "scheduler.listen")
    if text is None:
        return None
    try:
        return Listen.parse(text)
    except ValueError as exc:
        reader.report(
            node.place,
            f"scheduler.listen {text!r}: {exc}",
            "write HOST:PORT, e.g. 127.0.0.1:8080 (0.0.0.0:8080 to listen on every address)",
        )
        return None


def _tls(reader: FieldReader, node: YNode | None, base: Path) -> Tls | None:
    if node is None:
        return None
    mapping = reader.mapping(node, "scheduler.tls")
    if mapping is None:
        return None
    reader.check_keys(mapping, TLS_KEYS, "scheduler.tls")
    paths: dict[str, Path] = {}
    for key in TLS_KEYS:
        value = mapping.get(key)
        if value is None:
            reader.report(
                mapping.place,
                f"scheduler.tls needs {key}",
                "give both cert and key: paths to PEM files, relative to this file",
            )
            continue
        text = reader.text(value, f"scheduler.tls.{key}")
        if text is not None:
            paths[key] = base / Path(text).expanduser()
    if len(paths) != len(TLS_KEYS):
        return None
    return Tls(cert=paths["cert"], key=paths["key"])


_NO = Place(file="", line=0, col=0)


def _calendars(
    reader: FieldReader, node: YNode | None
) -> tuple[dict[str, Calendar], frozenset[str]]:
    """The calendars that build, and the names of those defined with a problem (each problem
    reported, every one of them: a bad ``based_on`` does not hide the rest)."""
    mapping = reader.mapping(node, "calendars")
    if mapping is None:
        return {}, frozenset()
    reader.check_keys(mapping, [str(k.value) for k, _ in mapping.entries], "calendars")
    specs: dict[str, tuple[YScalar, YMap]] = {}
    for key, value in mapping.entries:
        name = reader.name(key, "calendar")
        body = reader.mapping(value, f"calendar {key.value!r}")
        if name is not None and body is not None and name not in specs:
            reader.check_keys(body, CALENDAR_KEYS, f"calendar {name!r}")
            specs[name] = (key, body)
    built: dict[str, Calendar] = {}
    failed: set[str] = set()

    def build(name: str, chain: tuple[str, ...]) -> Calendar | None:
        if name in built:
            return built[name]
        if name in failed:
            return None
        key, body = specs[name]
        parent: Calendar | None = None
        parent_node = body.get("based_on")
        if parent_node is not None:
            parent_name = reader.text(parent_node, "based_on")
            if parent_name is None:
                return check_alone(name)
            if parent_name in chain or parent_name == name:
                cycle = " -> ".join([*chain, name, parent_name])
                reader.report(parent_node.place, f"calendar based_on cycle: {cycle}")
                return check_alone(name)
            if parent_name not in specs:
                reader.report(
                    parent_node.place,
                    f"calendar {name!r} is based on unknown calendar {parent_name!r}",
                    did_you_mean(parent_name, specs),
                )
                return check_alone(name)
            parent = build(parent_name, (*chain, name))
            if parent is None:
                return check_alone(name)
        calendar = _calendar(reader, name, key, body, parent)
        if calendar is None:
            failed.add(name)
        else:
            built[name] = calendar
        return calendar

    def check_alone(name: str) -> None:
        """Its parent cannot be had: report its own entries' problems anyway, then fail."""
        failed.add(name)
        key, body = specs[name]
        _calendar(reader, name, key, body, None)

    for name in specs:
        build(name, ())
    return {name: built[name] for name in specs if name in built}, frozenset(failed)


def _calendar(
    reader: FieldReader, name: str, key: YScalar, body: YMap, parent: Calendar | None
) -> Calendar | None:
    before = reader.reports
    weekdays: frozenset[int] | None = None
    weekdays_node = body.get("weekdays")
    if weekdays_node is not None:
        items: list[str | int] = []
        for item in reader.sequence(weekdays_node, "weekdays", allow_single=True):
            value = item.value if isinstance(item, YScalar) else None
            if isinstance(value, str | int) and not isinstance(value, bool):
                items.append(value)
            else:
                reader.report(item.place, "a weekday must be a name like mon or a range mon-fri")
        try:
            weekdays = parse_weekdays(items)
        except CalendarError as exc:
            reader.report(weekdays_node.place, f"calendar {name!r} weekdays: {exc}")
    holidays = _dates(reader, body.get("holidays"), "holidays", named=True)
    workdays = _dates(reader, body.get("workdays"), "workdays", named=False)
    country_node, subdivision_node = body.get("country"), body.get("subdivision")
    country = reader.text(country_node, "country") if country_node is not None else None
    subdivision = (
        reader.text(subdivision_node, "subdivision") if subdivision_node is not None else None
    )
    if subdivision_node is not None and country_node is None:
        reader.report(subdivision_node.place, "subdivision needs a country")
    if reader.reports != before:
        return None
    try:
        return Calendar.create(
            name,
            weekdays=weekdays,
            holidays=holidays,
            country=country,
            subdivision=subdivision,
            workdays=[d for d, _ in workdays],
            based_on=parent,
        )
    except CalendarError as exc:
        place = (country_node or key).place if "country" in str(exc).lower() else key.place
        if subdivision_node is not None and "subdivision" in str(exc).lower():
            place = subdivision_node.place
        reader.report(place, f"calendar {name!r}: {exc}")
        return None


def _dates(
    reader: FieldReader, node: YNode | None, what: str, *, named: bool
) -> list[tuple[date, str]]:
    if node is None:
        return []
    result: list[tuple[date, str]] = []
    for item in reader.sequence(node, what, allow_single=True):
        label = "holiday"
        target: YNode = item
        if named and isinstance(item, YMap):
            reader.check_keys(item, ("date", "name"), f"a {what} entry")
            date_node, name_node = item.get("date"), item.get("name")
            if date_node is None:
                reader.report(item.place, f"a {what} entry needs a date")
                continue
            target = date_node
            if name_node is not None:
                label = reader.text(name_node, "holiday name") or label
        value = target.value if isinstance(target, YScalar) else None
        if isinstance(value, str):
            with contextlib.suppress(ValueError):
                value = parse_iso_date(value.strip())
        if not isinstance(value, date):
            form = "a date like 2026-12-25" + (" or {date: ..., name: ...}" if named else "")
            text = target.text if isinstance(target, YScalar) else ""
            if _DATE_SHAPE.fullmatch(text.strip()):  # the right shape, but no such day
                reader.report(target.place, f"{text.strip()} is not a day of the calendar")
            else:
                reader.report(target.place, f"each of {what} must be {form}")
            continue
        result.append((value, label))
    return result


def _pools(reader: FieldReader, node: YNode | None) -> dict[str, int]:
    mapping = reader.mapping(node, "pools")
    if mapping is None:
        return {}
    reader.check_keys(mapping, [str(k.value) for k, _ in mapping.entries], "pools")
    pools: dict[str, int] = {}
    for key, value in mapping.entries:
        name = reader.name(key, "pool")
        slots = reader.integer(value, f"pool {key.value!r} slots", minimum=1)
        if name is not None and slots is not None:
            pools.setdefault(name, slots)
    return pools


def _secrets(
    reader: FieldReader,
    node: YNode | None,
    scheduler: SchedulerSettings | None,
    env: Mapping[str, str] | None,
    referenced: frozenset[str],
) -> tuple[Secrets, list[Problem]]:
    environ = os.environ if env is None else env
    file_values: Mapping[str, str] = {}
    warnings: list[Problem] = []
    if scheduler is not None and scheduler.secrets_file is not None:
        place = _NO
        if isinstance(node, YMap) and (file_node := node.get("secrets_file")) is not None:
            place = file_node.place
        loaded = load_secrets_file(scheduler.secrets_file)
        file_values = loaded.values
        for problem in loaded.problems:
            if problem.line == 0:
                # the file as a whole (missing, unreadable): the fix is at the config's key
                reader.report(place, problem.message, problem.hint)
            else:
                reader.problems.append(problem)
        warnings.extend(place.problem(warning) for warning in loaded.warnings)
    return Secrets(file_values, environ, referenced=referenced), warnings


def _jobs(
    reader: FieldReader,
    node: YNode | None,
    defaults_node: YNode | None,
    calendars: Mapping[str, Calendar],
    broken_calendars: frozenset[str],
    pools: Mapping[str, int],
    scheduler: SchedulerSettings | None,
) -> tuple[dict[str, Job], JobBuilder]:
    defaults = reader.mapping(defaults_node, "defaults")
    if defaults is not None:
        reader.check_keys(defaults, JOB_KEYS, "defaults")
    default_entries = {str(k.value): v for k, v in (defaults.entries if defaults else ())}
    mapping = reader.mapping(node, "jobs")
    entries = mapping.entries if mapping is not None else ()
    names = frozenset(str(k.value) for k, _ in entries)
    context = JobContext(
        calendars=calendars,
        broken_calendars=broken_calendars,
        pools=pools,
        job_names=names,
        timezone=scheduler.timezone if scheduler else ZoneInfo("UTC"),
        catch_up=scheduler.catch_up if scheduler else CatchUp.LATEST,
    )
    builder = JobBuilder(reader, context)
    jobs: dict[str, Job] = {}
    keys: dict[str, YScalar] = {}
    if mapping is not None:
        reader.check_keys(mapping, names, "jobs")
        if not entries:
            reader.report(mapping.place, "jobs: is empty", "add at least one job")
    for key, value in entries:
        name = reader.name(key, "job")
        body = reader.mapping(value, f"job {key.value!r}")
        if name is None or body is None or name in keys:
            continue
        keys[name] = key
        reader.check_keys(body, JOB_KEYS, f"job {name!r}")
        merged = dict(default_entries)
        merged.update({str(k.value): v for k, v in reversed(body.entries)})
        job = builder.build(name, key, merged)
        if job is not None:
            jobs[name] = job

    for cycle in find_cycles(builder.same_date_upstreams):
        reader.report(
            keys[cycle[0]].place,
            f"dependency cycle: {' -> '.join(cycle)}",
            "a job cannot wait, even indirectly, for itself on the same run date",
        )
    return jobs, builder
