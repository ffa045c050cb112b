"""Jobs, runs, logs, the forecast and the actions, through the Quart test client."""

from __future__ import annotations

from datetime import date, datetime
from pathlib import Path

import pytest

from pysched.launch.log_files import attempt_output
from tests.web.api_harness import open_api

D = "2026-10-16"


async def test_trigger_then_read_the_run_its_events_and_the_list(
    tmp_path: Path, autojump_clock: object
) -> None:
    async with open_api(tmp_path) as api:
        status, run = await api.post(
            "/api/v1/jobs/extract/trigger", {"run_date": D}, role="operator"
        )
        assert status == 201
        assert run["run_id"] == f"extract.{D}.1"
        assert run["trigger"] == "manual"
        await api.advance(minutes=5)

        status, body = await api.get(f"/api/v1/runs?date={D}", role="viewer")
        assert status == 200
        assert [(r["run_id"], r["state"]) for r in body["runs"]] == [
            (f"extract.{D}.1", "succeeded"),
            (f"transform.{D}.1", "succeeded"),
        ]
        assert body["count"] == 2
        first = body["runs"][0]
        assert first["duration_s"] == 60.0
        assert first["attempts"][0]["exit_code"] == 0

        status, detail = await api.get(f"/api/v1/runs/extract.{D}.1", role="viewer")
        kinds = [event["kind"] for event in detail["events"]]
        assert kinds[0] == "run_created"
        assert "attempt_started" in kinds and "attempt_ended" in kinds
        assert detail["events"] == sorted(detail["events"], key=lambda e: e["id"])

        _, by_job = await api.get(f"/api/v1/runs?job=transform&date={D}")
        assert [r["job"] for r in by_job["runs"]] == ["transform"]
        _, by_state = await api.get("/api/v1/runs?state=succeeded&limit=1")
        assert by_state["count"] >= 2 and len(by_state["runs"]) == 1


async def test_jobs_show_next_firings_and_recent_runs(
    tmp_path: Path, autojump_clock: object
) -> None:
    async with open_api(tmp_path) as api:
        await api.advance(hours=3)
        status, body = await api.get("/api/v1/jobs", role="viewer")
        assert status == 200
        jobs = {job["name"]: job for job in body["jobs"]}
        assert jobs["extract"]["next_firings"][0] == "2026-10-20T02:00:00+01:00"
        assert len(jobs["extract"]["next_firings"]) == 3
        assert jobs["transform"]["next_firings"] == []
        assert jobs["transform"]["depends_on"] == ["extract"]
        assert jobs["transform"]["dependencies"] == [
            {"job": "extract", "on": "success", "date_offset": 0}
        ]
        assert [r["run_id"] for r in jobs["extract"]["recent_runs"]] == ["extract.2026-10-19.1"]
        status, one = await api.get("/api/v1/jobs/extract")
        assert status == 200 and len(one["next_firings"]) == 10
        status, missing = await api.get("/api/v1/jobs/nope")
        assert status == 404 and "nope" in missing["error"]["message"]


@pytest.mark.parametrize(
    ("action", "allowed_from", "after"),
    [
        ("hold", "waiting", "held"),
        ("cancel", "waiting", "cancelled"),
        ("mark-success", "waiting", "succeeded"),
        ("force", "waiting", "running"),
    ],
)
async def test_run_actions_return_the_updated_run(
    tmp_path: Path, action: str, allowed_from: str, after: str
) -> None:
    async with open_api(tmp_path) as api:
        await api.engine.trigger("transform", date(2026, 10, 16))  # waits for extract
        await api.settle()
        run_id = f"transform.{D}.1"
        assert api.engine.book.get(run_id).state.value == allowed_from
        status, run = await api.post(f"/api/v1/runs/{run_id}/{action}", {"why": "x"}, "operator")
        assert status == 200, run
        assert run["run_id"] == run_id and run["state"] == after


async def test_an_action_the_state_forbids_is_a_409_naming_the_state(tmp_path: Path) -> None:
    async with open_api(tmp_path) as api:
        await api.engine.trigger("transform", date(2026, 10, 16))
        await api.settle()
        status, body = await api.post(f"/api/v1/runs/transform.{D}.1/kill", role="operator")
        assert status == 409
        assert body["error"]["state"] == "waiting"
        assert "waiting" in body["error"]["message"]
        status, body = await api.post(f"/api/v1/runs/transform.{D}.1/rerun", role="operator")
        assert (status, body["error"]["state"]) == (409, "waiting")


async def test_job_hold_release_and_backfill(tmp_path: Path) -> None:
    async with open_api(tmp_path) as api:
        status, body = await api.post("/api/v1/jobs/extract/hold", {}, "operator")
        assert (status, body) == (200, {"job": "extract", "held": True})
        status, body = await api.post("/api/v1/jobs/extract/hold", {}, "operator")
        assert status == 409
        _, jobs = await api.get("/api/v1/jobs")
        assert {j["name"]: j["held"] for j in jobs["jobs"]}["extract"] is True
        status, body = await api.post("/api/v1/jobs/extract/release", {}, "operator")
        assert status == 200 and body["held"] is False
        status, body = await api.post(
            "/api/v1/jobs/extract/backfill", {"from": "2026-10-12", "to": "2026-10-14"}, "operator"
        )
        assert status == 201
        assert [r["run_date"] for r in body["runs"]] == ["2026-10-12", "2026-10-13", "2026-10-14"]
        assert body["count"] == 3  # a RunList, as the OpenAPI document says


async def test_attempt_logs_by_slice(tmp_path: Path, autojump_clock: object) -> None:
    async with open_api(tmp_path) as api:
        await api.engine.trigger("extract", date(2026, 10, 16))
        await api.advance(minutes=2)
        log_dir = api.engine.config.scheduler.log_dir
        out = attempt_output(log_dir, "extract", date(2026, 10, 16), f"extract.{D}.1", 1, "stdout")
        err = attempt_output(log_dir, "extract", date(2026, 10, 16), f"extract.{D}.1", 1, "stderr")
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(b"line one\nline two\n")
        err.write_bytes(b"oops \xff\n")
        base = f"/api/v1/runs/extract.{D}.1/attempts/1/log"
        status, body = await api.get(f"{base}?limit=9", role="viewer")
        assert status == 200
        assert (body["data"], body["next_offset"], body["size"], body["complete"]) == (
            "line one\n",
            9,
            18,
            False,
        )
        _, rest = await api.get(f"{base}?offset=9")
        assert (rest["data"], rest["complete"]) == ("line two\n", True)
        _, stderr = await api.get(f"{base}?stream=stderr")
        assert stderr["data"] == "oops \ufffd\n"
        status, body = await api.get(f"/api/v1/runs/extract.{D}.1/attempts/2/log")
        assert status == 404 and "no attempt 2" in body["error"]["message"]


async def test_forecast_over_the_api(tmp_path: Path) -> None:
    async with open_api(tmp_path) as api:
        status, body = await api.get("/api/v1/forecast?date=2026-10-19", role="viewer")
        assert status == 200
        assert [(r["job"], r["run_date"]) for r in body["runs"]][:2] == [
            ("extract", "2026-10-19"),
            ("transform", "2026-10-19"),
        ]
        status, body = await api.get("/api/v1/forecast?from=2026-10-19&to=2026-10-25")
        assert status == 200 and body["from"] == "2026-10-19" and body["to"] == "2026-10-25"
        assert set(body["runs"][0]) == {
            "job", "run_date", "fires_at", "fires_at_utc", "trigger", "upstream"
        }  # fmt: skip


async def test_a_forecast_too_big_for_one_answer_is_refused(tmp_path: Path) -> None:
    """A year of a job firing every minute is half a million runs (83 MB, once seconds of
    the loop's time): more than ``FORECAST_RUNS_MAX`` is a 422 that says to ask for less."""
    every_minute = 'jobs:\n  tick: {schedule: "* * * * *", command: "true"}\n'
    async with open_api(tmp_path, every_minute) as api:
        status, body = await api.get("/api/v1/forecast?from=2026-01-01&to=2026-12-31")
        assert (status, body["error"]["field"]) == (422, "to")
        assert "more than 100,000 runs" in body["error"]["message"]
        status, body = await api.get("/api/v1/forecast?from=2026-01-01&to=2026-01-03")
        assert status == 200 and len(body["runs"]) == 3 * 24 * 60


BAD_REQUESTS = [
    ("GET", "/api/v1/runs?date=16/10/2026", None, 400, "date"),
    ("GET", "/api/v1/runs?state=done", None, 400, "state"),
    ("GET", "/api/v1/runs?limit=0", None, 400, "limit"),
    ("GET", "/api/v1/runs?limit=lots", None, 400, "limit"),
    ("GET", "/api/v1/runs/nope.2026-10-16.1", None, 404, None),
    ("GET", f"/api/v1/runs/extract.{D}.1/attempts/x/log", None, 400, "attempt"),
    ("GET", f"/api/v1/runs/extract.{D}.1/attempts/1/log?stream=both", None, 400, "stream"),
    ("GET", f"/api/v1/runs/extract.{D}.1/attempts/1/log?offset=-1", None, 400, "offset"),
    ("GET", "/api/v1/jobs/nope", None, 404, None),
    ("GET", "/api/v1/forecast?date=tomorrow", None, 400, "date"),
    ("GET", "/api/v1/forecast?date=", None, 400, "date"),
    ("GET", "/api/v1/forecast?from=2026-10-19&to=", None, 400, "to"),
    ("GET", f"/api/v1/runs/extract.{D}.1/attempts/1/log?stream=", None, 400, "stream"),
    ("GET", "/api/v1/forecast?from=2026-10-19", None, 400, "to"),
    ("GET", "/api/v1/forecast?from=2026-10-19&to=2026-10-01", None, 422, "to"),
    ("GET", "/api/v1/forecast?from=2026-01-01&to=2027-12-31", None, 422, "to"),
    ("GET", "/api/v1/events?last_event_id=abc", None, 400, "last_event_id"),
    ("POST", "/api/v1/jobs/extract/trigger", b"{not json", 400, "body"),
    ("POST", "/api/v1/jobs/extract/trigger", b"[1, 2]", 400, "body"),
    ("POST", "/api/v1/jobs/extract/trigger", {"run_date": "16-10-2026"}, 422, "run_date"),
    ("POST", "/api/v1/jobs/extract/trigger", {"run_date": 20261016}, 422, "run_date"),
    ("POST", "/api/v1/jobs/extract/trigger", {"rundate": D}, 422, "rundate"),
    ("POST", "/api/v1/jobs/extract/trigger", {"run_date": "1990-01-01"}, 422, "run_date"),
    ("POST", "/api/v1/jobs/extract/backfill", {"from": "1990-01-01", "to": D}, 422, "from"),
    (
        "POST",
        "/api/v1/jobs/extract/backfill",
        {"from": "1990-01-01", "to": "1990-01-05"},
        422,
        "from",
    ),
    ("GET", "/api/v1/runs?date=", None, 400, "date"),
    ("GET", "/api/v1/runs?state=", None, 400, "state"),
    ("GET", "/api/v1/runs?job=", None, 400, "job"),
    ("GET", "/api/v1/runs?limit=", None, 400, "limit"),
    ("GET", "/api/v1/runs?date=2026-10-16&state=", None, 400, "state"),
    *(
        ("GET", f"/api/v1/{where}?date={text}", None, 400, "date")
        for where in ("runs", "forecast")
        for text in ("20261016", "2026-W42-5", "2026-289", "%202026-10-16T00", "%202026-10-16")
    ),
    ("POST", "/api/v1/jobs/extract/trigger", {"run_date": " 2026-10-16 "}, 422, "run_date"),
    ("GET", "/api/v1/forecast?from=20261016&to=2026-10-17", None, 400, "from"),
    ("GET", "/api/v1/forecast?from=2026-10-16&to=2026-W42-6", None, 400, "to"),
    ("POST", "/api/v1/jobs/extract/trigger", {"run_date": "20261016"}, 422, "run_date"),
    ("POST", "/api/v1/jobs/extract/trigger", {"run_date": "2026-W42-5"}, 422, "run_date"),
    ("POST", "/api/v1/jobs/extract/backfill", {"from": "20261012", "to": D}, 422, "from"),
    ("POST", "/api/v1/jobs/extract/backfill", {"from": D, "to": "2026-W42-5"}, 422, "to"),
    ("POST", "/api/v1/jobs/nope/trigger", {}, 404, None),
    ("POST", "/api/v1/jobs/nope/hold", {}, 404, None),
    ("POST", "/api/v1/jobs/extract/release", {}, 409, None),
    ("POST", "/api/v1/jobs/extract/backfill", {"from": "2026-10-12"}, 422, "to"),
    ("POST", "/api/v1/jobs/extract/backfill", {"from": "2026-10-12", "to": "2026-10-1"}, 422, "to"),
    ("POST", "/api/v1/runs/nope.2026-10-16.1/hold", {}, 404, None),
    ("POST", f"/api/v1/runs/extract.{D}.1/hold", {"why": 5}, 422, "why"),
    ("POST", f"/api/v1/runs/extract.{D}.1/hold", {"why": "x" * 2000}, 422, "why"),
    ("POST", f"/api/v1/runs/extract.{D}.1/explode", {}, 404, None),
    ("DELETE", f"/api/v1/runs/extract.{D}.1", None, 405, None),
    ("POST", "/api/v1/tokens", {"name": "bad name!", "role": "viewer"}, 422, "name"),
    ("POST", "/api/v1/tokens", {"name": "ok", "role": "root"}, 422, "role"),
    ("POST", "/api/v1/tokens", {"role": "viewer"}, 422, "name"),
    ("POST", "/api/v1/tokens", {"name": "admin-person"}, 409, None),
    ("DELETE", "/api/v1/tokens/nobody", None, 404, None),
    ("GET", "/api/v1/config/versions/xyz", None, 400, "sha"),
    ("GET", "/api/v1/config/versions/abcdef12", None, 404, None),
    ("GET", "/api/v1/config/diff?from=abcdef", None, 400, "to"),
    ("POST", "/api/v1/reload", {"now": True}, 422, "now"),
    ("GET", f"/api/v1/runs/extract.{D}.1/attempts/²/log", None, 400, "attempt"),
    ("GET", f"/api/v1/runs/extract.{D}.1/attempts/{'9' * 5000}/log", None, 400, "attempt"),
    ("GET", f"/api/v1/events?last_event_id={'9' * 5000}", None, 400, "last_event_id"),
    ("GET", f"/api/v1/runs?limit={'9' * 5000}", None, 400, "limit"),
    ("GET", "/api/v1/forecast?from=0001-01-01&to=0001-12-31", None, 422, "from"),
    ("GET", "/api/v1/runs?date=9999-12-31", None, 422, "date"),
    (
        "POST",
        "/api/v1/jobs/extract/backfill",
        {"from": "9999-12-01", "to": "9999-12-31"},
        422,
        "from",
    ),
    ("POST", "/api/v1/jobs/extract/trigger", {"run_date": "9999-12-31"}, 422, "run_date"),
    ("POST", "/api/v1/tokens", {"name": "ann\n", "role": "viewer"}, 422, "name"),
    # null for a required field is no value (for an optional one it means "left out")
    ("POST", "/api/v1/tokens", {"name": None, "role": "viewer"}, 422, "name"),
    ("POST", "/api/v1/jobs/extract/backfill", {"from": None, "to": D}, 422, "from"),
    ("GET", "/api/v1/events?last_event_id=", None, 400, "last_event_id"),
    ("GET", "/api/v1/config/diff?from=&to=abcdef", None, 400, "from"),
]


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "field"),
    BAD_REQUESTS,
    ids=[f"{m} {p} {s}" for m, p, _, s, _ in BAD_REQUESTS],
)
async def test_bad_input_gets_a_clear_4xx(
    tmp_path: Path, method: str, path: str, body: object, status: int, field: str | None
) -> None:
    async with open_api(tmp_path) as api:
        await api.engine.trigger("extract", date(2026, 10, 16))
        await api.settle()
        client = api.app.test_client()
        headers = api.headers("admin")
        if method == "GET":
            response = await client.get(path, headers=headers)
        elif method == "DELETE":
            response = await client.delete(path, headers=headers)
        elif isinstance(body, bytes):
            response = await client.post(path, data=body, headers=headers)
        else:
            response = await client.post(path, json=body, headers=headers)
        answer = await response.get_json()
        assert response.status_code == status, answer
        error = answer["error"]
        assert error["status"] == status and error["message"]
        if field is not None:
            assert error["field"] == field, error


async def test_a_log_slice_never_splits_a_character(tmp_path: Path) -> None:
    async with open_api(tmp_path) as api:
        await api.engine.trigger("extract", date(2026, 10, 16))
        await api.settle()
        log_dir = api.engine.config.scheduler.log_dir
        out = attempt_output(log_dir, "extract", date(2026, 10, 16), f"extract.{D}.1", 1, "stdout")
        out.parent.mkdir(parents=True, exist_ok=True)
        text = "£5 → €6 ✓ 𝄞 done\n"
        out.write_bytes(text.encode())
        base = f"/api/v1/runs/extract.{D}.1/attempts/1/log"
        for limit in range(4, 9):
            pieces, offset = [], 0
            while True:
                _, body = await api.get(f"{base}?offset={offset}&limit={limit}")
                assert "\ufffd" not in body["data"]
                pieces.append(body["data"])
                offset = body["next_offset"]
                if offset >= body["size"]:
                    break
            assert "".join(pieces) == text


async def test_a_cached_view_never_outlives_a_change(
    tmp_path: Path, autojump_clock: object
) -> None:
    async with open_api(tmp_path, outcomes={"flaky": [1]}) as api:
        await api.engine.trigger("flaky", date(2026, 10, 16))
        await api.settle()
        path = f"/api/v1/runs/flaky.{D}.1"
        seen = []
        for _ in range(4):
            _, view = await api.get(path)
            again = (await api.get(path))[1]  # served from the cache: the same view
            assert {k: v for k, v in again.items() if k != "duration_s"} == {
                k: v for k, v in view.items() if k != "duration_s"
            }
            seen.append((view["state"], len(view["attempts"]), view["attempts"][-1]["outcome"]))
            await api.advance(seconds=61)
        # running -> retrying (attempt 1 failed) -> running (attempt 2) -> failed
        assert seen[0] == ("running", 1, None)
        assert ("retrying", 1, "failed") in seen
        assert seen[-1] == ("failed", 2, "failed")


async def test_durations_grow_while_running_and_stay_once_finished(
    tmp_path: Path, autojump_clock: object
) -> None:
    async with open_api(tmp_path) as api:
        await api.post("/api/v1/jobs/extract/trigger", {"run_date": D}, role="operator")
        durations = []
        for _ in range(2):
            await api.advance(seconds=20)
            _, run = await api.get(f"/api/v1/runs/extract.{D}.1")
            assert run["state"] == "running"
            durations.append(run["duration_s"])
        assert durations[1] == pytest.approx(durations[0] + 20)
        for _ in range(2):  # read once it ended, then again an hour later: the same 60 s
            await api.advance(minutes=30)
            _, body = await api.get(f"/api/v1/runs?job=extract&date={D}")
            assert body["runs"][0]["state"] == "succeeded"
            assert body["runs"][0]["duration_s"] == 60.0


async def test_a_retrying_run_is_timed_up_to_now(tmp_path: Path, autojump_clock: object) -> None:
    """Between attempts the run is still going: its duration grows, as the docs say, instead of
    showing the failed attempt's end (``6ms / typ 10s`` while it waited to try again)."""
    async with open_api(tmp_path, outcomes={"flaky": [1, 0]}) as api:
        await api.engine.trigger("flaky", date(2026, 10, 16))
        path = f"/api/v1/runs/flaky.{D}.1"
        await api.advance(seconds=70)  # attempt 1 ran 60 s and failed; the retry is 1 min off
        _, run = await api.get(path)
        assert run["state"] == "retrying"
        assert run["duration_s"] == pytest.approx(70, abs=1)
        await api.advance(seconds=20)
        assert (await api.get(path))[1]["duration_s"] == pytest.approx(90, abs=1)
        await api.advance(minutes=5)
        _, run = await api.get(path)
        assert (run["state"], run["duration_s"]) == ("succeeded", 180.0)


async def test_options_is_not_answered_without_a_token(tmp_path: Path) -> None:
    async with open_api(tmp_path) as api:
        client = api.app.test_client()
        for path in ("/api/v1/tokens", "/api/v1/runs", "/healthz"):
            response = await client.options(path)
            assert response.status_code == 405, path
            assert (await response.get_json())["error"]["status"] == 405


async def test_a_rerun_is_timed_from_its_own_start_not_the_first_series(
    tmp_path: Path, autojump_clock: object
) -> None:
    """An hour between a failure and the operator's rerun is not the job's running time, in
    the run's duration or in the job's typical one."""
    async with open_api(tmp_path, outcomes={"flaky": [1, 1, 0]}) as api:
        await api.engine.trigger("flaky", date(2026, 10, 16))
        await api.advance(minutes=5)
        path = f"/api/v1/runs/flaky.{D}.1"
        assert (await api.get(path))[1]["state"] == "failed"
        await api.advance(hours=1)
        await api.post(f"{path}/rerun", {}, role="operator")
        await api.advance(minutes=5)
        _, run = await api.get(path)
        assert run["state"] == "succeeded"
        assert run["duration_s"] == 60.0
        assert run["typical_duration_s"] == 60.0


async def test_null_for_an_optional_field_means_left_out(tmp_path: Path) -> None:
    async with open_api(tmp_path) as api:
        status, run = await api.post(
            "/api/v1/jobs/extract/trigger", {"run_date": None, "why": None}, role="operator"
        )
        assert status == 201, run
        status, made = await api.post("/api/v1/tokens", {"name": "screen", "role": None})
        assert (status, made["role"]) == (201, "viewer")


async def test_a_run_finished_without_an_attempt_has_an_end(tmp_path: Path) -> None:
    """``ended_at`` is set once a run is finished, attempts or not (a cancel while held)."""
    async with open_api(tmp_path) as api:
        await api.post("/api/v1/jobs/extract/hold", {}, "operator")
        status, run = await api.post(
            "/api/v1/jobs/extract/trigger", {"run_date": "2026-10-16"}, "operator"
        )
        assert status == 201 and run["ended_at"] is None
        status, run = await api.post(f"/api/v1/runs/{run['run_id']}/cancel", {}, "operator")
        assert status == 200
        assert (run["state"], run["attempts"]) == ("cancelled", [])
        ended = datetime.fromisoformat(run["ended_at"])
        assert abs((api.engine.clock.now() - ended).total_seconds()) < 5
        # and it is journaled: the same after a restart
        records = [
            r.data
            for r in api.harness.store.records()
            if r.type == "run" and r.data["id"] == run["run_id"]
        ]
        assert records[-1]["ended"] == run["ended_at"]
