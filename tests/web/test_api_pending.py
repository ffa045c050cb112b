"""``GET /api/v1/config/pending``: what a reload would do, with nothing done."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.web import api_harness
from tests.web.api_harness import open_api

CONFIG = textwrap.dedent(api_harness.CONFIG)


def config_file(tmp_path: Path) -> Path:
    path = tmp_path / "pysched.yaml"
    path.write_text(CONFIG)
    return path


async def test_an_unchanged_file_would_change_nothing(tmp_path: Path) -> None:
    path = config_file(tmp_path)
    async with open_api(tmp_path, config_file=path) as api:
        status, body = await api.get("/api/v1/config/pending")
        assert status == 200
        assert body["valid"] is True and body["changed"] is False
        assert body["sha256"] == body["current"] == api.engine.config.sha256
        assert (body["diff"], body["problems"], body["warnings"]) == ("", [], [])


async def test_an_edited_file_shows_its_diff_and_nothing_is_applied(tmp_path: Path) -> None:
    path = config_file(tmp_path)
    async with open_api(tmp_path, config_file=path) as api:
        before = api.engine.config.sha256
        records = len(list(api.harness.store.records()))
        path.write_text(CONFIG + "  load:\n    depends_on: [extract]\n    command: echo load\n")
        status, body = await api.get("/api/v1/config/pending")
        assert status == 200
        assert body["valid"] is True and body["changed"] is True
        assert body["current"] == before != body["sha256"]
        assert f"--- config@{before[:12]}" in body["diff"]
        assert "+  load:\n" in body["diff"]
        await api.settle()
        assert api.engine.config.sha256 == before  # nothing applied
        assert "load" not in api.engine.config.jobs
        assert len(list(api.harness.store.records())) == records  # nothing journaled
        status, _ = await api.post("/api/v1/reload")  # the reload then does what it said
        assert status == 200
        assert api.engine.config.sha256 == body["sha256"]


async def test_a_broken_file_lists_its_problems_and_records_no_failed_reload(
    tmp_path: Path,
) -> None:
    path = config_file(tmp_path)
    async with open_api(tmp_path, config_file=path) as api:
        path.write_text(CONFIG + "  load:\n    depends_on: [nope]\n    command: echo load\n")
        status, body = await api.get("/api/v1/config/pending")
        assert status == 200
        assert body["valid"] is False and body["changed"] is False
        assert any("nope" in problem for problem in body["problems"])
        assert "+  load:" in body["diff"]  # what the file says, even though it is refused
        await api.settle()
        events = api.engine.events.since(0) or []
        assert not [e for e in events if e.kind == "reload_failed"]


async def test_a_setting_only_a_restart_can_change_is_a_problem(tmp_path: Path) -> None:
    path = config_file(tmp_path)
    async with open_api(tmp_path, config_file=path) as api:
        path.write_text(CONFIG.replace("state_dir: state", "state_dir: elsewhere"))
        _, body = await api.get("/api/v1/config/pending")
        assert body["valid"] is False
        assert any("scheduler.state_dir cannot change" in p for p in body["problems"])
        assert body["sha256"] == body["current"] == api.engine.config.sha256  # as a reload's
        assert "+  state_dir: elsewhere" in body["diff"]


async def test_a_broken_tokens_file_is_a_problem_and_the_tokens_stay(tmp_path: Path) -> None:
    path = config_file(tmp_path)
    async with open_api(tmp_path, config_file=path) as api:
        good = api.tokens_path.read_text()
        api.tokens_path.write_text("{not json")
        _, body = await api.get("/api/v1/config/pending")
        assert body["valid"] is False
        assert any(str(api.tokens_path) in p for p in body["problems"])
        api.tokens_path.write_text(good)
        status, _ = await api.get("/api/v1/config/pending")
        assert status == 200  # the admin token still works: nothing was reloaded


async def test_a_server_without_a_config_file_says_so(tmp_path: Path) -> None:
    async with open_api(tmp_path) as api:
        status, body = await api.get("/api/v1/config/pending")
        assert status == 503
        assert "cannot reload" in body["error"]["message"]
