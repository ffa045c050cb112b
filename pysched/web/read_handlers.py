"""Read-only endpoints: jobs, runs, one run with its events, attempt logs, the forecast.

Everything answers from the engine's memory (``engine.book``) on the loop, except the work
that is pure and may be long (next firings of many jobs, a forecast, reading a log file), which
goes to a worker thread, so a big request never holds up the engine.

A read shows only what the journal holds (invariant 1). Most wait until no engine pass is open
(``Route.waits_for_commit``). The run reads do not: a run's journal record (``Run.record``)
stays as it was until its pass commits, and actions and events join at the commit too, so they
answer during a pass with the state before it (while 200 attempts start, passes and their
commits fill most of the first tenth of a second).
"""

from __future__ import annotations

import itertools
import os
from datetime import date, datetime
from pathlib import Path
from typing import Any

import orjson

from pysched.config.model import Config
from pysched.engine.forecast import FORECAST_DAYS_MAX, forecast
from pysched.engine.runs import Run, RunState
from pysched.launch.log_files import Stream, attempt_output
from pysched.web.api_errors import ApiError
from pysched.web.context import Call
from pysched.web.inputs import date_value, int_query, text_query, whole_number
from pysched.web.views import action_view, event_view, job_view

Reply = tuple[int, Any]

RUNS_LIMIT = 1_000
RUNS_LIMIT_MAX = 10_000
LOG_LIMIT = 64 * 1024
LOG_LIMIT_MAX = 1024 * 1024
LOG_OFFSET_MAX = 10**18 - 1
"""The largest offset a request may give: 18 digits, as ``whole_number`` reads."""
_STATES = ", ".join(state.value for state in RunState)


def _next_firings(
    config: Config, names: list[str], now: datetime, count: int
) -> list[list[datetime]]:
    """Each named job's next ``count`` firings (pure: runs in a worker thread)."""
    result: list[list[datetime]] = []
    for name in names:
        schedule = config.jobs[name].schedule
        if schedule is None or not config.jobs[name].enabled:
            result.append([])
            continue
        firings = itertools.islice(schedule.iter_firings(now), count)
        result.append([firing.at for firing in firings])
    return result


async def list_jobs(call: Call) -> Reply:
    engine = call.engine
    config, now = engine.config, engine.clock.now()
    names = list(config.jobs)
    firings = await call.context.offload(_next_firings, config, names, now, 3)
    await engine.committed()  # the await above let the engine run: look again
    held = engine.held_jobs
    jobs = [
        job_view(
            config.jobs[name],
            held=name in held,
            next_firings=next_firings,
            recent=engine.book.runs(job=name)[-5:],
            now=now,
            views=call.views,
        )
        for name, next_firings in zip(names, firings, strict=True)
    ]
    return 200, {"jobs": jobs}


async def one_job(call: Call) -> Reply:
    engine = call.engine
    name = call.args["job"]
    config, now = engine.config, engine.clock.now()
    job = config.jobs.get(name)
    if job is None:
        raise ApiError(404, f"no job {name!r} in the config")
    (firings,) = await call.context.offload(_next_firings, config, [name], now, 10)
    await engine.committed()  # the await above let the engine run: look again
    view = job_view(
        job,
        held=name in engine.held_jobs,
        next_firings=firings,
        recent=engine.book.runs(job=name)[-20:],
        now=now,
        views=call.views,
    )
    return 200, view


def _state_query(text: str | None) -> RunState | None:
    if text is None:
        return None
    try:
        return RunState(text)
    except ValueError:
        raise ApiError(400, f"unknown state {text!r} (states: {_STATES})", field="state") from None


async def list_runs(call: Call) -> Reply:
    engine = call.engine
    query = call.query
    day_text = text_query(query, "date")
    day = date_value(day_text, "date") if day_text is not None else None
    state = _state_query(text_query(query, "state"))
    limit = int_query(query, "limit", RUNS_LIMIT, 1, RUNS_LIMIT_MAX)
    job = text_query(query, "job")
    # no wait for an open pass (``waits_for_commit``): each run as its journal record has it,
    # a run the pass is making not yet
    wanted = state.value if state is not None else None
    runs = [
        run
        for run in engine.book.runs(job=job, run_date=day)
        if engine.journaled(run) and (wanted is None or run.record()["state"] == wanted)
    ]
    count = len(runs)
    now = engine.clock.now()
    views = [call.views.fragment(run, now) for run in runs[-limit:]]
    return 200, {"runs": views, "count": count}


def _run(call: Call) -> Run:
    run_id = call.args["run_id"]
    run = call.engine.book.find(run_id)
    if run is None:
        raise ApiError(404, f"no run {run_id!r} (run ids look like extract.2026-10-16.1)")
    return run


async def one_run(call: Call) -> Reply:
    engine = call.engine
    # no wait for an open pass (``waits_for_commit``): the run as its journal record has it,
    # with its journaled actions and published events; a run the pass is making once written
    run = _run(call)
    if not engine.journaled(run):
        await engine.committed()
        run = _run(call)  # gone if its pass was not written
    events = [event_view(event) for event in engine.events.for_run(run.run_id)]
    actions = [action_view(action) for action in engine.actions_for(run.run_id)]
    view = call.views.encoded(run, engine.clock.now())[:-1]  # the run's view, still open
    tail = b',"events":%s,"actions":%s}' % (
        orjson.dumps(events, default=str),
        orjson.dumps(actions, default=str),
    )
    return 200, orjson.Fragment(view + tail)


def _read_slice(path: Path, offset: int, limit: int) -> tuple[bytes, int] | None:
    """``limit`` bytes of ``path`` from ``offset``, and the file's size; None if missing.

    A slice that stops inside a UTF-8 character is cut back to the character's start (the
    next slice begins there), so a reader paging through a log with a limit of 4 bytes or more
    never sees a character split.
    """
    try:
        with path.open("rb") as file:
            size = os.fstat(file.fileno()).st_size
            file.seek(min(offset, size))
            data = file.read(limit)
    except FileNotFoundError:
        return None
    if min(offset, size) + len(data) < size:
        whole = _whole_characters(data)
        if whole:  # a limit shorter than one character still makes progress
            data = data[:whole]
    return data, size


def _whole_characters(data: bytes) -> int:
    """The length of ``data`` without a UTF-8 character cut off at its end."""
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if byte & 0xC0 != 0x80:  # not a continuation byte: a character starts here
            needed = 2 if byte & 0xE0 == 0xC0 else 3 if byte & 0xF0 == 0xE0 else 4
            if byte < 0x80 or back >= needed:
                return len(data)
            return len(data) - back
    return len(data)


async def attempt_log(call: Call) -> Reply:
    engine = call.engine
    run = _run(call)
    text = call.args["attempt"]
    number = whole_number(text, "attempt", digits=6)
    attempt = next((a for a in run.attempts if a.number == number), None)
    if attempt is None:
        made = len(run.attempts)
        raise ApiError(404, f"run {run.run_id} has no attempt {number} ({made} made so far)")
    stream_text = text_query(call.query, "stream") or "stdout"
    if stream_text not in ("stdout", "stderr"):
        raise ApiError(400, f"stream must be stdout or stderr, not {stream_text!r}", field="stream")
    stream: Stream = "stdout" if stream_text == "stdout" else "stderr"
    offset = int_query(call.query, "offset", 0, 0, LOG_OFFSET_MAX)
    limit = int_query(call.query, "limit", LOG_LIMIT, 1, LOG_LIMIT_MAX)
    path = attempt_output(
        engine.config.scheduler.log_dir, run.job, run.run_date, run.run_id, number, stream
    )
    found = await call.context.offload(_read_slice, path, offset, limit)
    if found is None:
        raise ApiError(
            404, f"attempt {number} of {run.run_id} has no {stream} file (it never started?)"
        )
    data, size = found
    next_offset = min(offset, size) + len(data)
    ended = attempt.outcome is not None
    return 200, {
        "run_id": run.run_id,
        "attempt": number,
        "stream": stream,
        "offset": offset,
        "next_offset": next_offset,
        "size": size,
        "data": data.decode("utf-8", "replace"),
        "complete": ended and next_offset >= size,
    }


async def forecast_window(call: Call) -> Reply:
    engine = call.engine
    query = call.query
    config = engine.config
    day, start, end = (text_query(query, key) for key in ("date", "from", "to"))
    if day is not None:
        if start is not None or end is not None:
            raise ApiError(400, "give date, or from and to, not both", field="date")
        first = last = date_value(day, "date")
    elif start is not None or end is not None:
        if start is None or end is None:
            raise ApiError(400, "give both from and to", field="from" if start is None else "to")
        first = date_value(start, "from")
        last = date_value(end, "to")
        if last < first:
            raise ApiError(422, f"to ({last}) is before from ({first})", field="to")
        if (last - first).days >= FORECAST_DAYS_MAX:
            raise ApiError(422, f"a forecast covers at most {FORECAST_DAYS_MAX} days", field="to")
    else:
        first = last = engine.clock.now().astimezone(config.scheduler.timezone).date()
    encoded = await call.context.offload(_forecast_json, config, first, last)
    if encoded is None:
        raise ApiError(
            422,
            f"the forecast from {first} to {last} has more than {FORECAST_RUNS_MAX:,} runs, "
            "more than one answer carries: ask for fewer days",
            field="to" if day is None else "date",
        )
    return 200, {"from": first.isoformat(), "to": last.isoformat(), "runs": encoded}


FORECAST_RUNS_MAX = 100_000
"""The most runs one forecast answer carries (about 16 MB of JSON)."""


def _forecast_json(config: Config, first: date, last: date) -> orjson.Fragment | None:
    """In a worker thread: the window's runs as JSON, or None when there are too many. The
    views and their encoding are built here too: a year of a job firing every minute is half a
    million runs, seconds of work that must not hold the loop."""
    runs = forecast(config, first, last, limit=FORECAST_RUNS_MAX)
    if len(runs) > FORECAST_RUNS_MAX:
        return None
    return orjson.Fragment(orjson.dumps([run.to_json() for run in runs]))
