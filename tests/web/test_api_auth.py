"""Every endpoint × every caller: no token, an unknown token, and each role."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio

from pysched.tokens import Role
from pysched.web.routes import ROUTES, Route
from tests.web.api_harness import Api, open_api

ARGS = {
    "job": "extract",
    "run_id": "extract.2026-10-16.1",
    "attempt": "1",
    "sha": "000000",
    "name": "nobody",
}


def concrete(route: Route) -> str:
    path = route.path
    for key, value in ARGS.items():
        path = path.replace(f"<{key}>", value)
    return path


async def call(api: Api, route: Route, headers: dict[str, str]) -> int:
    client = api.app.test_client()
    path = concrete(route)
    if route.method == "GET":
        response = await client.get(path, headers=headers)
    elif route.method == "POST":
        response = await client.post(path, headers=headers, json={})
    else:
        response = await client.delete(path, headers=headers)
    return response.status_code


CALLERS = ["none", "unknown", "viewer", "operator", "admin"]


@pytest.mark.parametrize("route", ROUTES, ids=lambda r: f"{r.method} {r.path}")
async def test_each_role_on_each_endpoint(tmp_path: Path, route: Route) -> None:
    async with open_api(tmp_path) as api:
        await api.engine.trigger("extract", __import__("datetime").date(2026, 10, 16))
        await api.settle()
        api.context.stopping.set()  # event streams end at once instead of streaming forever
        for caller in CALLERS:
            if caller == "none":
                headers: dict[str, str] = {}
            elif caller == "unknown":
                headers = {"Authorization": "Bearer pysched_not-a-real-token"}
            else:
                headers = api.headers(caller)
            status = await call(api, route, headers)
            if route.role is None:
                assert status not in (401, 403), (caller, status)
            elif caller in ("none", "unknown"):
                assert status == 401, (caller, status)
            elif not Role(caller).allows(route.role):
                assert status == 403, (caller, status)
            else:
                assert status not in (401, 403, 500), (caller, status)


async def test_a_401_says_how_to_authenticate(tmp_path: Path) -> None:
    async with open_api(tmp_path) as api:
        response = await api.app.test_client().get("/api/v1/runs")
        assert response.status_code == 401
        assert response.headers["WWW-Authenticate"].startswith("Bearer")
        body = await response.get_json()
        assert body["error"]["code"] == "unauthorized"
        assert "Authorization: Bearer" in body["error"]["message"]
        for header in ("Basic abc", "Bearer", "Bearer  "):
            response = await api.app.test_client().get(
                "/api/v1/runs", headers={"Authorization": header}
            )
            assert response.status_code == 401


async def test_a_403_names_the_role_needed(tmp_path: Path) -> None:
    async with open_api(tmp_path) as api:
        status, body = await api.post("/api/v1/reload", role="operator")
        assert status == 403
        assert "needs admin" in body["error"]["message"]
        assert "operator-person" in body["error"]["message"]


async def test_actions_are_audited_with_the_token_name(tmp_path: Path) -> None:
    async with open_api(tmp_path) as api:
        status, run = await api.post(
            "/api/v1/jobs/extract/trigger",
            {"run_date": "2026-10-16", "why": "rerun after the outage"},
            role="operator",
        )
        assert status == 201
        status, detail = await api.get(f"/api/v1/runs/{run['run_id']}", role="viewer")
        assert status == 200
        (action,) = detail["actions"]
        assert action["by"] == "operator-person"
        assert action["action"] == "trigger"
        assert action["why"] == "rerun after the outage"


async def test_creating_and_revoking_a_token_is_audited(tmp_path: Path) -> None:
    """An admin minting another admin token leaves a trace: the journal's action records and
    the event stream (whence the log line) name who did it."""
    async with open_api(tmp_path) as api:
        status, _ = await api.post("/api/v1/tokens", {"name": "vic", "role": "admin"})
        assert status == 201
        status, _ = await api.delete("/api/v1/tokens/vic")
        assert status == 200
        events = api.engine.events.since(0)
        assert events is not None
        said = [
            (e.data["action"], e.data["target"], e.data["by"], e.data["why"])
            for e in events
            if e.kind == "action"
        ]
        assert said == [
            ("token_create", "vic", "admin-person", "role admin"),
            ("token_revoke", "vic", "admin-person", ""),
        ]
        journaled = [r.data["action"] for r in api.harness.store.records() if r.type == "action"]
        assert journaled == ["token_create", "token_revoke"]
        # an empty role is a mistake, not "the least power"
        status, body = await api.post("/api/v1/tokens", {"name": "r1", "role": ""})
        assert (status, body["error"]["field"]) == (422, "role")


async def test_the_last_admin_token_cannot_be_revoked(tmp_path: Path) -> None:
    """Revoking it would leave nobody able to manage tokens or reload through the API: 409,
    naming the way out, and the token goes on working. With a second admin, it may go."""
    async with open_api(tmp_path) as api:
        assert (await api.post("/api/v1/tokens", {"name": "ops", "role": "operator"}))[0] == 201
        status, body = await api.delete("/api/v1/tokens/admin-person")
        assert status == 409
        assert "last admin token" in body["error"]["message"]
        assert "--role admin" in body["error"]["message"]
        status, listed = await api.get("/api/v1/tokens")
        assert status == 200  # the admin token still works
        assert {t["name"] for t in listed["tokens"]} >= {"admin-person", "ops"}
        status, _ = await api.post("/api/v1/tokens", {"name": "second", "role": "admin"})
        assert status == 201
        status, _ = await api.delete("/api/v1/tokens/admin-person")
        assert status == 200
        said = [e.data["action"] for e in api.engine.events.since(0) or () if e.kind == "action"]
        assert said == ["token_create", "token_create", "token_revoke"]  # the refusal: no action


async def test_a_body_too_slow_to_arrive_is_a_408_once(tmp_path: Path) -> None:
    """Quart gives up on a body after BODY_TIMEOUT: the answer is the documented error shape
    (code ``timeout``), with Connection: close, and comes after one timeout, not two."""
    async with open_api(tmp_path) as api:
        api.app.config["BODY_TIMEOUT"] = 0.2
        client = api.app.test_client()
        headers = {**api.headers("operator"), "Content-Length": "20"}
        with trio.fail_after(5):
            started = trio.current_time()
            async with client.request(
                "/api/v1/jobs/extract/hold", method="POST", headers=headers
            ) as connection:
                await connection.send(b'{"why"')
                response = await connection.as_response()
            took = trio.current_time() - started
        assert response.status_code == 408
        body = await response.get_json()
        assert body["error"]["code"] == "timeout"
        assert "did not arrive within 0.2 seconds" in body["error"]["message"]
        assert response.headers["Connection"] == "close"
        assert took < 0.4


async def test_a_405_says_which_methods_the_path_takes(tmp_path: Path) -> None:
    async with open_api(tmp_path) as api:
        response = await api.app.test_client().delete(
            "/api/v1/runs/x.2026-10-16.1", headers=api.headers("admin")
        )
        assert response.status_code == 405
        assert response.headers["Allow"] == "GET, HEAD"
