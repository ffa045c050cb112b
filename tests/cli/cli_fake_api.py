"""An in-memory fake of the pysched HTTP API for CLI tests, on ``httpx.MockTransport``.

Routes are ``(method, path)`` pairs answered with a JSON value, a status, or a function of the
request; every request is recorded. ``install`` points the CLI's client at the fake and isolates
the test from the user's environment (PYSCHED_* variables, a real current.json, the time zone).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import httpx
import pytest
from typer.testing import CliRunner

from pysched.cli import app, client

Handler = Callable[[httpx.Request], httpx.Response]


def run_json(run_id: str = "fetch-rates.2026-10-16.1", **changes: Any) -> dict[str, Any]:
    """A run as the API shows it."""
    job, run_date, n = run_id.rsplit(".", 2)
    run: dict[str, Any] = {
        "run_id": run_id,
        "job": job,
        "run_date": run_date,
        "n": int(n),
        "state": "succeeded",
        "reason": "",
        "trigger": "manual",
        "upstream": None,
        "created_at": "2026-10-19T01:00:00+00:00",
        "scheduled_for": "2026-10-19T01:00:00+00:00",
        "next_try_at": None,
        "forced": False,
        "started_at": "2026-10-19T01:00:01+00:00",
        "ended_at": "2026-10-19T01:00:13+00:00",
        "duration_s": 12.0,
        "typical_duration_s": 10.0,
        "attempts": [
            {
                "number": 1,
                "started_at": "2026-10-19T01:00:01+00:00",
                "ended_at": "2026-10-19T01:00:13+00:00",
                "exit_code": 0,
                "signal": None,
                "outcome": "succeeded",
                "message": "",
                "has_log": True,
            }
        ],
    }
    run.update(changes)
    return run


def error(status: int, code: str, message: str, **extra: Any) -> httpx.Response:
    body = {"status": status, "code": code, "message": message, "field": None, "state": None}
    body.update(extra)
    return httpx.Response(status, json={"error": body})


class FakeApi:
    def __init__(self) -> None:
        self.routes: dict[tuple[str, str], Handler] = {}
        self.requests: list[httpx.Request] = []
        self.refuse = False

    def on(self, method: str, path: str, answer: Any = None, status: int = 200) -> None:
        if callable(answer):
            self.routes[(method, path)] = cast(Handler, answer)
        else:
            self.routes[(method, path)] = lambda _r: httpx.Response(status, json=answer)

    def handle(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        if self.refuse:
            raise httpx.ConnectError("[Errno 111] Connection refused", request=request)
        handler = self.routes.get((request.method, request.url.path))
        if handler is None:
            return error(404, "not_found", f"no route {request.method} {request.url.path}")
        return handler(request)

    def transport(self) -> httpx.BaseTransport:
        return httpx.MockTransport(self.handle)

    @property
    def last(self) -> httpx.Request:
        return self.requests[-1]

    def body(self, index: int = -1) -> Any:
        return json.loads(self.requests[index].content or b"null")


def install(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> FakeApi:
    """A fresh fake the CLI talks to, in an environment of the test's own."""
    for name in ("PYSCHED_URL", "PYSCHED_TOKEN", "PYSCHED_CONFIG", "NO_COLOR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg-state"))
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    fake = FakeApi()
    monkeypatch.setattr(client, "transport_factory", fake.transport)
    return fake


runner = CliRunner()


def cli(*args: str):
    return runner.invoke(app, list(args))


def write_config(folder: Path, listen: str = "127.0.0.1:9911", extra: str = "") -> Path:
    """A small valid config listening on ``listen``, its state dir inside ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "pysched.yaml"
    path.write_text(
        "scheduler:\n"
        "  timezone: Europe/London\n"
        "  state_dir: state\n"
        f"  listen: '{listen}'\n"
        f"{extra}"
        "jobs:\n"
        "  hello:\n"
        "    schedule: '0 2 * * *'\n"
        "    command: echo hello\n"
    )
    return path
