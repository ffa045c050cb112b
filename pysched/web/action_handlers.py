"""Operator actions over HTTP: each one checks its body, calls the engine's public action with
the caller's token name for the audit trail, and returns what changed, already durable.

The engine decides whether the run's state allows the action (``ActionError`` becomes a 409
naming the state); these handlers only read and check the request.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator
from contextlib import contextmanager
from typing import Any

import orjson
import trio

from pysched.engine import Engine
from pysched.engine.runs import Run
from pysched.errors import ActionError
from pysched.web.api_errors import ApiError
from pysched.web.context import Call
from pysched.web.inputs import date_field, only_keys, text_field

Reply = tuple[int, Any]

RUN_ACTIONS = ("hold", "release", "cancel", "kill", "rerun", "force", "mark-success")
"""The actions on one run, as they appear in the URL (``/api/v1/runs/<id>/<action>``)."""

RunAction = Callable[..., Awaitable[Run]]


def _run_action(engine: Engine, action: str) -> RunAction:
    actions: dict[str, RunAction] = {
        "hold": engine.hold,
        "release": engine.release,
        "cancel": engine.cancel,
        "kill": engine.kill,
        "rerun": engine.rerun,
        "force": engine.force,
        "mark-success": engine.mark_success,
    }
    return actions[action]


VIEW_SLICE = 100
"""Run views built between two checkpoints when an action answers with many runs."""


async def _views(call: Call, runs: list[Run]) -> list[orjson.Fragment]:
    """The runs as they stand, durable: a thousand released runs are shown a hundred at a
    time, each slice read once no change is waiting for its commit."""
    engine = call.engine
    views: list[orjson.Fragment] = []
    for start in range(0, len(runs), VIEW_SLICE):
        if start:
            await trio.lowlevel.checkpoint()
        await engine.committed()
        now = engine.clock.now()
        for run in runs[start : start + VIEW_SLICE]:
            # the book's copy: after a failed commit the engine puts fresh copies there, and
            # the object the action returned may still carry the changes that were lost
            shown = engine.book.find(run.run_id) or run
            views.append(call.views.fragment(shown, now))
    return views


def _known_job(call: Call) -> str:
    name = call.args["job"]
    if name not in call.engine.config.jobs:
        raise ApiError(404, f"no job {name!r} in the config")
    return name


@contextmanager
def _dates_refused_as(field: str) -> Generator[None]:
    """The engine refuses the dates it will not make runs for (older than
    ``scheduler.history_days``, a backfill over its limit) with an ``ActionError`` that names
    no state; over HTTP that 422 names the body field that carried the date."""
    try:
        yield
    except ActionError as exc:
        if exc.state is not None:
            raise
        raise ApiError(422, str(exc), field=field) from None


def run_action_handler(action: str) -> Callable[[Call], Awaitable[Reply]]:
    async def handle(call: Call) -> Reply:
        only_keys(call.body, ("why",))
        why = text_field(call.body, "why") or ""
        run_id = call.args["run_id"]
        if run_id not in call.engine.book:
            raise ApiError(404, f"no run {run_id!r} (run ids look like extract.2026-10-16.1)")
        run = await _run_action(call.engine, action)(run_id, by=call.who, why=why)
        return 200, (await _views(call, [run]))[0]

    handle.__name__ = f"run_{action.replace('-', '_')}"
    return handle


async def trigger(call: Call) -> Reply:
    only_keys(call.body, ("run_date", "why"))
    job = _known_job(call)
    run_date = date_field(call.body, "run_date")
    why = text_field(call.body, "why") or ""
    with _dates_refused_as("run_date"):
        run = await call.engine.trigger(job, run_date, by=call.who, why=why)
    return 201, (await _views(call, [run]))[0]


async def hold_job(call: Call) -> Reply:
    only_keys(call.body, ("why",))
    job = _known_job(call)
    await call.engine.hold_job(job, by=call.who, why=text_field(call.body, "why") or "")
    return 200, {"job": job, "held": True}


async def release_job(call: Call) -> Reply:
    only_keys(call.body, ("why",))
    job = _known_job(call)
    runs = await call.engine.release_job(job, by=call.who, why=text_field(call.body, "why") or "")
    return 200, {"job": job, "held": False, "released": await _views(call, runs)}


async def backfill(call: Call) -> Reply:
    only_keys(call.body, ("from", "to", "why"))
    job = _known_job(call)
    start = date_field(call.body, "from", required=True)
    end = date_field(call.body, "to", required=True)
    assert start is not None and end is not None
    if end < start:
        raise ApiError(422, f"to ({end}) is before from ({start})", field="to")
    why = text_field(call.body, "why") or ""
    with _dates_refused_as("from"):  # from <= to here, so from is the first too old
        runs = await call.engine.backfill(job, start, end, by=call.who, why=why)
    views = await _views(call, runs)
    return 201, {"runs": views, "count": len(views)}
