"""``pysched watch``: one line per event, reconnecting with Last-Event-ID, a note on reset."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest

from pysched.cli import watch_command
from pysched.cli.sse import ServerEvent, read_events
from tests.cli.cli_fake_api import FakeApi, cli

pytestmark = pytest.mark.usefixtures("api")


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    slept: list[float] = []
    monkeypatch.setattr(watch_command, "sleep", slept.append)
    return slept


def sse(number: int, kind: str, **data: object) -> bytes:
    event = {"id": number, "at": "2026-10-19T01:00:00+00:00", "kind": kind, "data": data}
    return f"id: {number}\nevent: {kind}\ndata: {json.dumps(event)}\n\n".encode()


class Stream(httpx.SyncByteStream):
    """Sends ``parts``, then ends cleanly or, with ``drop``, as a lost connection."""

    def __init__(self, parts: list[bytes], *, drop: bool) -> None:
        self.parts = parts
        self.drop = drop

    def __iter__(self) -> Iterator[bytes]:
        yield from self.parts
        if self.drop:
            raise httpx.ReadError("connection reset by peer")


def test_read_events_parses_the_format() -> None:
    lines = [
        ": keepalive",
        "id: 4",
        "event: run_changed",
        'data: {"a":',
        "data: 1}",
        "",
        "data: no id",
        "",
        "id: 5",
        "data: cut off",
    ]
    assert list(read_events(lines)) == [
        None,
        ServerEvent(id="4", event="run_changed", data='{"a":\n1}'),
        ServerEvent(id=None, event="message", data="no id"),
    ]


def test_watch_reconnects_with_last_event_id_then_gives_up(
    api: FakeApi, sleeps: list[float]
) -> None:
    connections: list[httpx.Request] = []

    def events(request: httpx.Request) -> httpx.Response:
        connections.append(request)
        if len(connections) == 1:
            parts = [
                sse(
                    1,
                    "run_created",
                    run_id="extract.2026-10-16.1",
                    job="extract",
                    state="scheduled",
                    reason="",
                    trigger="manual",
                    upstream=None,
                ),
                sse(
                    2,
                    "run_changed",
                    run_id="extract.2026-10-16.1",
                    job="extract",
                    state="running",
                    reason="",
                    before="queued",
                ),
            ]
            return httpx.Response(200, stream=Stream(parts, drop=True))
        if len(connections) == 2:
            parts = [
                b": keepalive\n\n",
                sse(
                    3,
                    "attempt_ended",
                    run_id="extract.2026-10-16.1",
                    job="extract",
                    state="running",
                    reason="",
                    attempt=1,
                    outcome="succeeded",
                    exit_code=0,
                ),
                b'id: 10\nevent: reset\ndata: {"id": 10, "kind": "reset", "data": {}}\n\n',
                sse(11, "config_applied", sha256="ab12", by="admin"),
            ]
            return httpx.Response(200, stream=Stream(parts, drop=False))
        raise httpx.ConnectError("[Errno 111] Connection refused", request=request)

    api.on("GET", "/api/v1/events", events)
    result = cli("watch")
    assert result.exit_code == 3, result.output
    lines = result.stdout.splitlines()
    assert lines[0].split() == [
        "2026-10-19",
        "01:00:00",
        "run_created",
        "extract.2026-10-16.1",
        "scheduled",
        "trigger=manual",
    ]
    assert lines[1].split()[2:] == [
        "run_changed",
        "extract.2026-10-16.1",
        "running",
        "(was",
        "queued)",
    ]
    assert lines[2].split()[2:] == [
        "attempt_ended",
        "extract.2026-10-16.1",
        "attempt",
        "1",
        "succeeded",
        "(exit",
        "0)",
    ]
    assert lines[3].strip() == "reset"
    assert lines[4].split()[2:] == ["config_applied", "sha256=ab12", "by=admin"]
    assert "Last-Event-ID" not in connections[0].headers
    assert connections[1].headers["Last-Event-ID"] == "2"
    assert connections[2].headers["Last-Event-ID"] == "11"
    assert "some were missed" in result.stderr
    assert "reconnecting in 0.5s" in result.stderr
    assert sleeps == [0.5, 0.5, 1.0, 2.0, 4.0, 8.0]
    assert "error: cannot reach the pysched server" in result.stderr
    assert "gave up after 5 tries" in result.stderr


def test_watch_json_lines(api: FakeApi, sleeps: list[float], monkeypatch) -> None:
    def interrupt(seconds: float) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(watch_command, "sleep", interrupt)
    parts = [sse(1, "run_created", run_id="a.2026-10-16.1", state="scheduled")]
    api.on("GET", "/api/v1/events", lambda r: httpx.Response(200, stream=Stream(parts, drop=True)))
    result = cli("watch", "--json")
    assert result.exit_code == 0  # Ctrl-C while waiting to reconnect
    assert json.loads(result.stdout.splitlines()[0])["data"]["run_id"] == "a.2026-10-16.1"


def test_watch_first_connection_refused_exit_3_at_once(api: FakeApi, sleeps: list[float]) -> None:
    api.refuse = True
    result = cli("watch")
    assert result.exit_code == 3
    assert sleeps == []


def test_watch_unauthorized_exit_1(api: FakeApi, sleeps: list[float]) -> None:
    api.on(
        "GET",
        "/api/v1/events",
        lambda r: httpx.Response(
            401, json={"error": {"status": 401, "code": "unauthorized", "message": "bad token"}}
        ),
    )
    result = cli("watch")
    assert result.exit_code == 1
    assert "error: bad token" in result.stderr
    assert "hint:" in result.stderr


def test_watch_says_when_the_server_restarted(
    api: FakeApi, sleeps: list[float], monkeypatch
) -> None:
    def interrupt(seconds: float) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(watch_command, "sleep", interrupt)
    parts = [
        b'id: 9\nevent: reset\ndata: {"id": 9, "kind": "reset", "data": {"restarted": true}}\n\n',
        sse(10, "run_changed", run_id="a.2026-10-16.1", job="a", state="lost", reason=""),
    ]
    api.on("GET", "/api/v1/events", lambda r: httpx.Response(200, stream=Stream(parts, drop=True)))
    result = cli("watch")
    assert "the server restarted; what it has done since it started follows" in result.stderr
    assert "a.2026-10-16.1" in result.stdout.splitlines()[-1]


def test_watch_job_shows_only_that_jobs_events(
    api: FakeApi, sleeps: list[float], monkeypatch
) -> None:
    """Its runs and attempts, and actions on it or its runs; not another job whose name it
    begins with, a token of the same name, or a reload. A reset's note still comes."""

    def interrupt(seconds: float) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(watch_command, "sleep", interrupt)
    parts = [
        sse(1, "run_created", run_id="extract.2026-10-16.1", job="extract", state="scheduled"),
        sse(2, "run_created", run_id="extract-eu.2026-10-16.1", job="extract-eu", state="queued"),
        sse(3, "attempt_started", run_id="extract.2026-10-16.1", job="extract", attempt=1),
        sse(4, "action", action="hold", target="extract.2026-10-16.1", by="ann", why=""),
        sse(5, "action", action="hold_job", target="extract", by="ann", why="vendor late"),
        sse(6, "action", action="hold_job", target="extract-eu", by="ann", why=""),
        sse(7, "action", action="token_create", target="extract", by="root", why="role viewer"),
        sse(8, "config_applied", sha256="ab12", by="admin"),
        b'id: 9\nevent: reset\ndata: {"id": 9, "kind": "reset", "data": {}}\n\n',
        sse(10, "action", action="reload_failed", target="config", by="admin", why="2 problems"),
    ]
    api.on("GET", "/api/v1/events", lambda r: httpx.Response(200, stream=Stream(parts, drop=True)))
    api.on("GET", "/api/v1/jobs/extract", {"name": "extract"})
    result = cli("watch", "--job", "extract", "--json")
    assert result.exit_code == 0, result.output
    shown = [json.loads(line)["id"] for line in result.stdout.splitlines()]
    assert shown == [1, 3, 4, 5, 9]  # a reset always: the job's events may be among the missed
    as_config = cli("watch", "--job", "config", "--json")  # a job may be named config
    assert [json.loads(line)["id"] for line in as_config.stdout.splitlines()] == [9]
    assert "some were missed" in result.stderr
    assert "no job named" not in result.stderr
    unknown = cli("watch", "--job", "extrct")
    assert "note: the server has no job named 'extrct' (yet)" in unknown.stderr
    assert unknown.stdout.split() == ["reset"]
    text = cli("watch", "--job", "extract")
    assert [line.split()[2] for line in text.stdout.splitlines()[:-1]] == [
        "run_created",
        "attempt_started",
        "action",
        "action",
    ]
    assert text.stdout.splitlines()[-1].strip() == "reset"
