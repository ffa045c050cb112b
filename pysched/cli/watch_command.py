"""``pysched watch``: the server's events as they happen, one line each.

It follows ``GET /api/v1/events`` (server-sent events). When the connection drops (the server
restarts, a proxy times out), it reconnects with ``Last-Event-ID`` set to the last event it
printed, so nothing is missed and nothing repeats; if the server no longer holds events that far
back it sends ``reset`` and a note says some were missed. A first connection that fails exits 3
at once; after a drop it tries ``len(RECONNECT_BACKOFF)`` times, waiting longer each time, then
exits 3. Ctrl-C stops it with exit 0. ``--job J`` shows only J's events (``is_about_job``),
filtered here: the stream itself is the server's whole stream.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Annotated, Any

import typer

from pysched.cli.client import RECONNECT_BACKOFF, ApiError, Client, ServerUnreachable, session
from pysched.cli.output import clean, json_text
from pysched.cli.run_display import event_line
from pysched.cli.sse import ServerEvent, read_events

sleep: Callable[[float], None] = time.sleep
"""How ``watch`` waits before reconnecting (tests replace it)."""


def watch(
    ctx: typer.Context,
    job: Annotated[
        str | None,
        typer.Option(
            "--job",
            help="Only this job's events: its runs and attempts, and actions on it or its runs.",
        ),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print each event as one line of JSON.")
    ] = False,
) -> None:
    """Print the server's events as they happen (runs, attempts, actions, reloads)."""
    try:
        with session(ctx, as_json) as api:
            if job is not None and not api.has_job(job):
                typer.echo(
                    f"note: the server has no job named {clean(job)!r} (yet); "
                    "watching for its events anyway",
                    err=True,
                )
            _Watch(api, as_json=as_json, job=job).run()
    except KeyboardInterrupt:
        raise typer.Exit(0) from None


def is_about_job(event: dict[str, Any], job: str) -> bool:
    """Whether ``event`` concerns ``job``: one of its runs or attempts (the event names the
    job), or an operator's action on the job or on one of its runs (a run id starts with its
    job's name and a dot; job names hold no dot). Tokens and reloads concern no job (a refused
    reload is an action on ``config``, which may also be a job's name)."""
    raw: Any = event.get("data")
    data: dict[str, Any] = raw if isinstance(raw, dict) else {}  # pyright: ignore[reportUnknownVariableType]
    if event.get("kind") == "action":
        action, target = str(data.get("action", "")), str(data.get("target", ""))
        if action.startswith("token_") or action == "reload_failed":
            return False
        return target.split(".", 1)[0] == job
    return data.get("job") == job


class _Watch:
    def __init__(self, api: Client, *, as_json: bool, job: str | None = None) -> None:
        self._api = api
        self._as_json = as_json
        self._job = job
        self._last_id: str | None = None

    def run(self) -> None:
        """Follow the stream until Ctrl-C; raises ``ServerUnreachable`` when it gives up."""
        failures = 0
        connected = False
        while True:
            headers = {"Accept": "text/event-stream", "Cache-Control": "no-cache"}
            if self._last_id is not None:
                headers["Last-Event-ID"] = self._last_id
            try:
                with self._api.stream("/api/v1/events", headers) as lines:
                    connected = True
                    for item in read_events(lines):
                        failures = 0
                        if item is not None:
                            self._show(item)
                reason = "the server closed the stream"
            except ServerUnreachable as exc:
                if not connected:
                    raise
                reason = exc.reason
            except ApiError as exc:
                if exc.status != 503 or not connected:
                    raise
                reason = exc.message
            failures += 1
            if failures > len(RECONNECT_BACKOFF):
                raise ServerUnreachable(
                    self._api.url, f"{reason}; gave up after {failures - 1} tries"
                )
            delay = RECONNECT_BACKOFF[failures - 1]
            typer.echo(
                f"note: event stream lost ({clean(reason)}); reconnecting in {delay:g}s", err=True
            )
            sleep(delay)

    def _show(self, item: ServerEvent) -> None:
        try:
            parsed: Any = json.loads(item.data) if item.data else {}
        except ValueError:
            parsed = None
        if isinstance(parsed, dict):
            event: dict[str, Any] = parsed  # pyright: ignore[reportUnknownVariableType]
        else:
            event = {"id": item.id, "kind": item.event, "data": item.data}
        if item.id is not None:
            self._last_id = item.id
        kind = str(event.get("kind") or item.event)
        if kind == "reset" or item.event == "reset":
            self._last_id = item.id
            data = event.get("data")
            if isinstance(data, dict) and data.get("restarted"):  # pyright: ignore[reportUnknownMemberType]
                typer.echo(
                    "note: the server restarted; what it has done since it started follows "
                    "(events of its last life may be missing — 'pysched status' shows where "
                    "things stand)",
                    err=True,
                )
            else:
                typer.echo(
                    "note: the server no longer holds every event since the last one shown; "
                    "some were missed — 'pysched status' shows where things stand",
                    err=True,
                )
        about = {**event, "kind": kind}
        if self._job is not None and kind != "reset" and not is_about_job(about, self._job):
            return  # a reset always passes: the job's own events may be among those missed
        if self._as_json:
            typer.echo(json_text(event, indent=None))
            return
        typer.echo(event_line(about))
