"""Building one ``Job`` from its YAML (with ``defaults`` merged in), checking every field.

The loader hands over a job's entries (its own keys, then the defaults it does not override)
and what the rest of the config defines (calendars, pools, job names, the scheduler's zone and
catch-up default). Problems go to the shared ``FieldReader``; a job with any problem yields
``None`` and the loader raises once everything has been read.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TypeVar
from zoneinfo import ZoneInfo

from pysched.config.fields import FieldReader
from pysched.config.hints import did_you_mean
from pysched.config.model import (
    Backoff,
    CatchUp,
    Command,
    Condition,
    Criticality,
    Dependency,
    Job,
    Overlap,
    Retries,
)
from pysched.config.templates import Template
from pysched.config.yaml_tree import Place, YMap, YNode, YScalar
from pysched.errors import CronError, TemplateError
from pysched.timing.calendar import Calendar
from pysched.timing.cron import Cron, DstGap, DstPolicy, DstRepeat
from pysched.timing.run_dates import RunDateRule
from pysched.timing.schedule import Schedule

JOB_KEYS = (
    "command",
    "schedule",
    "timezone",
    "calendar",
    "run_date",
    "depends_on",
    "overlap",
    "retries",
    "timeout",
    "pool",
    "priority",
    "env",
    "cwd",
    "description",
    "owner",
    "tags",
    "criticality",
    "catch_up",
    "dst",
    "enabled",
)
E = TypeVar("E", bound=enum.Enum)
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True, slots=True, kw_only=True)
class JobContext:
    """What a job may refer to, from the rest of the config."""

    calendars: Mapping[str, Calendar]
    broken_calendars: frozenset[str]
    """Calendars defined with a problem (reported where they are defined)."""
    pools: Mapping[str, int]
    job_names: frozenset[str]
    timezone: ZoneInfo
    catch_up: CatchUp


class JobBuilder:
    """Reads one job's entries; ``build`` returns the Job or None if anything was wrong."""

    def __init__(self, reader: FieldReader, context: JobContext) -> None:
        self._r = reader
        self._ctx = context
        self.secret_names: dict[str, Place] = {}
        """Every ``${NAME}`` used, with the first place it was used (checked by the loader)."""
        self.same_date_upstreams: dict[str, list[str]] = {}
        """Each job read (built or not: a job with another mistake still takes part in the
        cycle check) and the other jobs it waits for on the same run date."""

    def build(self, name: str, key: YScalar, entries: Mapping[str, YNode]) -> Job | None:
        r = self._r
        before = r.reports
        where = f"job {name!r}"

        command = self._command(entries.get("command"), key, where)
        zone_node = entries.get("timezone")
        timezone = r.zone(zone_node, f"{where} timezone") if zone_node else self._ctx.timezone
        calendar = self._calendar(entries.get("calendar"))
        dst = self._dst(entries.get("dst"))
        run_date = self._optional_choice(entries, "run_date", RunDateRule, "run_date")
        crons = self._crons(entries.get("schedule"))
        depends_on = self._depends_on(name, entries.get("depends_on"))
        self.same_date_upstreams[name] = [
            d.job for d in depends_on if d.date_offset == 0 and d.job != name
        ]
        if crons == () and not depends_on and "depends_on" not in entries:
            r.report(
                key.place,
                f"{where} has no schedule and no depends_on, so nothing would ever run it",
                "add a schedule (a cron expression) or depends_on",
            )
        if (
            crons == ()
            and depends_on
            and all(d.date_offset != 0 or d.job == name for d in depends_on)
        ):
            r.report(
                key.place,
                f"{where} has no schedule and only cross-date dependencies, "
                "so nothing would create its runs",
                "add a schedule, or a same-date dependency",
            )

        overlap = self._optional_choice(entries, "overlap", Overlap, "overlap")
        retries = self._retries(entries.get("retries"))
        timeout_node = entries.get("timeout")
        timeout = r.duration(timeout_node, "timeout") if timeout_node is not None else None
        pool = self._pool(entries.get("pool"))
        priority_node = entries.get("priority")
        priority = (
            r.integer(priority_node, "priority", minimum=-1000, maximum=1000)
            if priority_node is not None
            else 0
        )
        env = self._env(entries.get("env"))
        cwd_node = entries.get("cwd")
        cwd = self._template(cwd_node, "cwd") if cwd_node is not None else None
        description = self._plain_text(entries.get("description"), "description")
        owner = self._plain_text(entries.get("owner"), "owner")
        tags = self._tags(entries.get("tags"))
        criticality = self._optional_choice(entries, "criticality", Criticality, "criticality")
        catch_up = self._optional_choice(entries, "catch_up", CatchUp, "catch_up")
        enabled_node = entries.get("enabled")
        enabled = r.boolean(enabled_node, "enabled") if enabled_node is not None else True

        if r.reports != before:
            return None
        assert command is not None and timezone is not None and crons is not None
        assert retries is not None and priority is not None and enabled is not None
        schedule = None
        rule = run_date or RunDateRule.SAME_DAY
        if crons:
            schedule = Schedule(
                crons=crons, tz=timezone, calendar=calendar, dst=dst, run_date_rule=rule
            )
        return Job(
            name=name,
            command=command,
            schedule=schedule,
            timezone=timezone,
            calendar=calendar,
            run_date=rule,
            depends_on=depends_on,
            overlap=overlap or Overlap.QUEUE,
            retries=retries,
            timeout=timeout,
            pool=pool,
            priority=priority,
            env=env,
            cwd=cwd,
            description=description,
            owner=owner,
            tags=tags,
            criticality=criticality or Criticality.NORMAL,
            catch_up=catch_up or self._ctx.catch_up,
            dst=dst,
            enabled=enabled,
        )

    # -- fields --------------------------------------------------------------------------------

    def _command(self, node: YNode | None, key: YScalar, where: str) -> Command | None:
        if node is None:
            self._r.report(key.place, f"{where} has no command", "add command: <what to run>")
            return None
        if isinstance(node, YScalar) and isinstance(node.value, str):
            template = self._template(node, "command")
            if template is None:
                return None
            problem = template.shell_problem()
            if problem is not None:
                self._r.report(_place_within(node, problem.offset), f"command: {problem}")
                return None
            return Command(shell=template)
        if isinstance(node, YScalar | YMap):
            self._r.report(
                node.place, "command must be text (run by /bin/sh) or a list (run directly)"
            )
            return None
        if not node.items:
            self._r.report(node.place, "command list must not be empty")
            return None
        argv = [self._template(item, "command item") for item in node.items]
        if any(t is None for t in argv):
            return None
        return Command(argv=tuple(t for t in argv if t is not None))

    def _template(self, node: YNode, what: str) -> Template | None:
        text = self._r.text(node, what, allow_empty=what != "command")
        if text is None:
            return None
        assert isinstance(node, YScalar)
        try:
            template = Template.parse(text)
        except TemplateError as exc:
            self._r.report(_place_within(node, getattr(exc, "offset", None)), f"{what}: {exc}")
            return None
        for secret in sorted(template.secret_names):
            self.secret_names.setdefault(secret, node.place)
        return template

    def _plain_text(self, node: YNode | None, what: str) -> str:
        if node is None:
            return ""
        return self._r.text(node, what, allow_empty=True) or ""

    def _crons(self, node: YNode | None) -> tuple[Cron, ...] | None:
        if node is None:
            return ()
        items = self._r.sequence(node, "schedule", allow_single=True)
        crons: list[Cron] = []
        ok = True
        for item in items:
            text = self._r.text(item, "schedule")
            if text is None:
                ok = False
                continue
            assert isinstance(item, YScalar)
            try:
                crons.append(Cron.parse(text))
            except CronError as exc:
                offset = text.find(exc.token) if exc.token else -1
                self._r.report(_place_within(item, offset if offset >= 0 else None), str(exc))
                ok = False
        if not items and isinstance(node, YScalar):
            return ()
        return tuple(crons) if ok else None

    def _calendar(self, node: YNode | None) -> Calendar | None:
        if node is None:
            return None
        name = self._r.text(node, "calendar")
        if name is None:
            return None
        calendar = self._ctx.calendars.get(name)
        if calendar is None and name not in self._ctx.broken_calendars:
            self._r.report(
                node.place,
                f"unknown calendar {name!r}",
                did_you_mean(name, self._ctx.calendars)
                or "define it under calendars: at the top level",
            )
        return calendar

    def _pool(self, node: YNode | None) -> str | None:
        if node is None:
            return None
        name = self._r.text(node, "pool")
        if name is not None and name not in self._ctx.pools:
            self._r.report(
                node.place,
                f"unknown pool {name!r}",
                did_you_mean(name, self._ctx.pools) or "define it under pools: at the top level",
            )
            return None
        return name

    def _dst(self, node: YNode | None) -> DstPolicy:
        mapping = self._r.mapping(node, "dst")
        if mapping is None:
            return DstPolicy()
        self._r.check_keys(mapping, ("gap", "repeat"), "dst")
        gap_node, repeat_node = mapping.get("gap"), mapping.get("repeat")
        gap = self._r.choice(gap_node, DstGap, "dst.gap") if gap_node else None
        repeat = self._r.choice(repeat_node, DstRepeat, "dst.repeat") if repeat_node else None
        return DstPolicy(gap=gap or DstGap.JUMP, repeat=repeat or DstRepeat.FIRST)

    def _optional_choice(
        self, entries: Mapping[str, YNode], key: str, enum_type: type[E], what: str
    ) -> E | None:
        node = entries.get(key)
        return self._r.choice(node, enum_type, what) if node is not None else None

    def _depends_on(self, name: str, node: YNode | None) -> tuple[Dependency, ...]:
        if node is None:
            return ()
        result: list[Dependency] = []
        for item in self._r.sequence(node, "depends_on", allow_single=True):
            dependency = self._dependency(name, item)
            if dependency is not None:
                result.append(dependency)
        return tuple(result)

    def _dependency(self, name: str, item: YNode) -> Dependency | None:
        r = self._r
        if isinstance(item, YMap):
            r.check_keys(item, ("job", "on", "date"), "a depends_on entry")
            job_node = item.get("job")
            if job_node is None:
                r.report(item.place, "depends_on entry has no job", "add job: <upstream name>")
                return None
            upstream = r.text(job_node, "depends_on job")
            on_node, date_node = item.get("on"), item.get("date")
            condition = r.choice(on_node, Condition, "depends_on on") if on_node else None
            offset = self._date_offset(date_node) if date_node is not None else 0
            if on_node is not None and condition is None:
                return None
        else:
            job_node = item
            upstream = r.text(item, "depends_on entry")
            condition, offset = None, 0
        if upstream is None or offset is None:
            return None
        if upstream not in self._ctx.job_names:
            r.report(
                job_node.place,
                f"job {name!r} depends on unknown job {upstream!r}",
                did_you_mean(upstream, self._ctx.job_names),
            )
            return None
        if upstream == name and offset == 0:
            r.report(
                job_node.place,
                f"job {name!r} depends on itself for the same run date",
                "a job may wait for its own earlier run with date: previous",
            )
            return None
        return Dependency(
            job=upstream, condition=condition or Condition.SUCCESS, date_offset=offset
        )

    def _date_offset(self, node: YNode) -> int | None:
        value = node.value if isinstance(node, YScalar) else None
        if value in ("same", 0):
            return 0
        if value == "previous":
            return -1
        if isinstance(value, str) and re.fullmatch(r"-\d+", value.strip()):
            value = int(value)
        if isinstance(value, int) and not isinstance(value, bool) and -366 <= value < 0:
            return value
        self._r.report(
            node.place,
            "depends_on date must be same, previous or -N (N business days back, N ≤ 366)",
        )
        return None

    def _retries(self, node: YNode | None) -> Retries | None:
        r = self._r
        if node is None:
            return Retries()
        if isinstance(node, YScalar):
            count = r.integer(node, "retries", minimum=0, maximum=100)
            return Retries(count=count) if count is not None else None
        mapping = r.mapping(node, "retries")
        if mapping is None:
            return None
        r.check_keys(mapping, ("count", "backoff"), "retries")
        count_node = mapping.get("count")
        count = r.integer(count_node, "retries.count", minimum=0, maximum=100) if count_node else 0
        backoff = self._backoff(mapping.get("backoff"))
        if count is None or backoff is None:
            return None
        return Retries(count=count, backoff=backoff)

    def _backoff(self, node: YNode | None) -> Backoff | None:
        r = self._r
        mapping = r.mapping(node, "retries.backoff")
        if mapping is None:
            return Backoff() if node is None else None
        r.check_keys(mapping, ("initial", "factor", "max", "jitter"), "retries.backoff")
        default = Backoff()
        nodes = {key: mapping.get(key) for key in ("initial", "max", "factor", "jitter")}
        before = r.reports
        initial = default.initial
        maximum = default.max
        factor = default.factor
        jitter = default.jitter
        if (node := nodes["initial"]) is not None:
            initial = r.duration(node, "backoff.initial") or initial
        if (node := nodes["max"]) is not None:
            maximum = r.duration(node, "backoff.max") or maximum
        if (node := nodes["factor"]) is not None:
            value = r.number(node, "backoff.factor", minimum=1.0, maximum=100.0)
            factor = factor if value is None else value
        if (node := nodes["jitter"]) is not None:
            value = r.number(node, "backoff.jitter", minimum=0.0, maximum=1.0)
            jitter = jitter if value is None else value
        if r.reports != before:
            return None
        if maximum < initial:
            r.report(mapping.place, "backoff.max must not be shorter than backoff.initial")
            return None
        return Backoff(initial=initial, max=maximum, factor=factor, jitter=jitter)

    def _env(self, node: YNode | None) -> dict[str, Template]:
        mapping = self._r.mapping(node, "env")
        if mapping is None:
            return {}
        env: dict[str, Template] = {}
        self._r.check_keys(mapping, mapping.keys(), "env")
        for key, value in mapping.entries:
            name = str(key.value)
            if not _ENV_NAME.fullmatch(name):
                self._r.report(
                    key.place,
                    f"bad environment variable name {name!r}",
                    "use letters, digits and '_', not starting with a digit",
                )
                continue
            if name.startswith("PYSCHED_"):
                self._r.report(key.place, f"env {name!r}: names starting PYSCHED_ are reserved")
                continue
            template = self._template(value, f"env {name}")
            if template is not None:
                env.setdefault(name, template)
        return env

    def _tags(self, node: YNode | None) -> tuple[str, ...]:
        if node is None:
            return ()
        tags: list[str] = []
        for item in self._r.sequence(node, "tags", allow_single=True):
            tag = self._r.text(item, "tag")
            if tag is not None:
                tags.append(tag)
        return tuple(tags)


def _place_within(node: YScalar, offset: int | None) -> Place:
    """The place of character ``offset`` of a one-line scalar (the node's own place otherwise)."""
    if offset is None or offset < 0 or "\n" in node.text[:offset]:
        return node.place
    shift = offset + (1 if node.quoted else 0)
    return Place(file=node.place.file, line=node.place.line, col=node.place.col + shift)
