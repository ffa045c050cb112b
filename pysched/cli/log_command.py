"""``pysched log RUN_ID``: an attempt's output, as the job wrote it, and ``--follow`` to tail it.

The API serves a log in chunks (``offset`` → ``next_offset``); this command asks for chunk after
chunk and writes each one's text to stdout untouched, so ``pysched log … > out.txt`` gives the
file the job wrote: the log is the command's own output, so unlike the server's fields (see
``pysched.cli.output.clean``) its control characters are left as they are. Without
``--attempt`` it shows the run's latest attempt.

``--follow`` polls every half second from where the last chunk ended. It stops when the attempt
has ended and its log is read to the end (``complete``) and the run is finished; while the run
goes on (a retry after a failed attempt) it moves on to the next attempt, with a note on stderr.
Given ``--attempt N`` it stops at the end of that attempt. Ctrl-C stops it with exit 0. A
server that goes away meanwhile (a restart) is tried again, as ``watch`` does, before exit 3.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Annotated, Any

import typer

from pysched.cli.arguments import RunIdArg, check_count
from pysched.cli.client import (
    RECONNECT_BACKOFF,
    ApiError,
    Client,
    ServerUnreachable,
    api_path,
    session,
)
from pysched.cli.output import clean, error_exit, json_text, print_json
from pysched.cli.run_display import FINISHED

POLL_SECONDS = 0.5
CHUNK = 65536

sleep: Callable[[float], None] = time.sleep
"""How ``--follow`` waits between polls (tests replace it)."""


def log(
    ctx: typer.Context,
    run_id: RunIdArg,
    attempt: Annotated[
        int | None,
        typer.Option("--attempt", min=1, help="Which attempt (default: the latest)."),
    ] = None,
    stderr: Annotated[bool, typer.Option("--stderr", help="The attempt's stderr.")] = False,
    follow: Annotated[
        bool, typer.Option("--follow", "-f", help="Keep printing as the log grows.")
    ] = False,
    as_json: Annotated[
        bool,
        typer.Option("--json", help="The server's JSON: one document, or one line per chunk."),
    ] = False,
) -> None:
    """Print an attempt's stdout (or --stderr) as the job wrote it; --follow to keep tailing."""
    stream = "stderr" if stderr else "stdout"
    check_count(attempt, "--attempt")
    try:
        with session(ctx, as_json) as api:
            tail = _Tail(api, run_id, stream, as_json=as_json, following=follow)
            number = attempt if attempt is not None else tail.latest()
            if number is None:
                return
            tail.read(number, fixed=attempt is not None)
    except KeyboardInterrupt:
        raise typer.Exit(0) from None


class _Tail:
    """Reads one run's log, chunk by chunk, and writes it out."""

    def __init__(
        self, api: Client, run_id: str, stream: str, *, as_json: bool, following: bool
    ) -> None:
        self._api = api
        self._following = following
        self._run_id = run_id
        self._stream = stream
        self._as_json = as_json

    def _run(self) -> dict[str, Any]:
        return self._get(api_path("/api/v1/runs", self._run_id))

    def _get(self, path: str, params: dict[str, Any] | None = None) -> Any:
        """``api.get``; while following, a server that went away (a restart) is tried again a
        few times, waiting longer each time, before giving up as ``watch`` does (exit 3)."""
        failures = 0
        while True:
            try:
                return self._api.get(path, params=params)
            except ServerUnreachable as exc:
                if not self._following:
                    raise
                reason = exc.reason
            except ApiError as exc:
                if not self._following or exc.status != 503:  # 503: stopping or starting
                    raise
                reason = exc.message
            if failures == len(RECONNECT_BACKOFF):
                raise ServerUnreachable(
                    self._api.url, f"{reason}; gave up after {failures} tries"
                ) from None
            delay = RECONNECT_BACKOFF[failures]
            failures += 1
            typer.echo(
                f"note: lost the server ({clean(reason)}); trying again in {delay:g}s", err=True
            )
            sleep(delay)

    def latest(self) -> int | None:
        """The latest attempt with a log; while following, polls until there is one (None if the
        run finishes first)."""
        while True:
            run = self._run()
            number = _latest_logged(run)
            if number is not None:
                return number
            state = str(run.get("state", ""))
            if not self._following:
                raise error_exit(
                    f"run {self._run_id} ({state}) {_why_no_log(run)}",
                    as_json=self._as_json,
                    code="not_found",
                    state=state,
                )
            if state in FINISHED:
                typer.echo(
                    f"note: run {clean(self._run_id)} is {clean(state)} with no attempt to show",
                    err=True,
                )
                return None
            sleep(POLL_SECONDS)

    def read(self, number: int, *, fixed: bool) -> None:
        offset = 0
        chunks: list[dict[str, Any]] = []
        while True:
            chunk: dict[str, Any] = self._get(
                api_path("/api/v1/runs", self._run_id, "attempts", str(number), "log"),
                params={"stream": self._stream, "offset": offset, "limit": CHUNK},
            )
            self._emit(chunk, chunks=chunks)
            offset = int(chunk.get("next_offset", offset))
            if offset < int(chunk.get("size", 0)):
                continue  # more is there already: no need to wait
            if not self._following:
                break
            if chunk.get("complete"):
                if fixed:
                    return
                run = self._run()
                newer = _latest_logged(run)
                if newer is not None and newer > number:
                    typer.echo(f"--- attempt {newer} ---", err=True)
                    number, offset = newer, 0
                    continue
                if str(run.get("state", "")) in FINISHED:
                    return
            sleep(POLL_SECONDS)
        if self._as_json and chunks:
            first, last = chunks[0], chunks[-1]
            print_json(
                {
                    **last,
                    "offset": first.get("offset", 0),
                    "data": "".join(str(c.get("data", "")) for c in chunks),
                }
            )

    def _emit(self, chunk: dict[str, Any], *, chunks: list[dict[str, Any]]) -> None:
        if self._as_json:
            if self._following:
                # a poll that found nothing new prints nothing (twice a second, for hours);
                # the chunk that says the attempt is complete is always printed
                if chunk.get("data") or chunk.get("complete"):
                    typer.echo(json_text(chunk, indent=None))
            else:
                chunks.append(chunk)
            return
        data = str(chunk.get("data", ""))
        if data:
            typer.echo(data, nl=False, color=True)  # else click strips ANSI codes off a terminal


def _why_no_log(run: dict[str, Any]) -> str:
    """Why a run has no attempt with a log, for ``run X (state) ...``."""
    attempts: list[dict[str, Any]] = run.get("attempts") or []
    state = str(run.get("state", ""))
    if attempts:
        last = attempts[-1]
        said = str(last.get("message") or "").strip()
        if last.get("outcome") == "start_failed":
            return f"has no log: attempt {last.get('number')} could not start" + (
                f": {said}" if said else ""
            )
        return f"has no log for attempt {last.get('number')}" + (f": {said}" if said else "")
    if state in FINISHED:
        reason = str(run.get("reason") or "").strip()
        return "never ran, so it has no log" + (f" ({reason})" if reason else "")
    return "has no attempt with a log yet"


def _latest_logged(run: dict[str, Any]) -> int | None:
    attempts: list[dict[str, Any]] = run.get("attempts") or []
    numbers = [int(a["number"]) for a in attempts if "number" in a and a.get("has_log", True)]
    return max(numbers) if numbers else None
