"""Finding the server and the token: explicit options > config > current.json > default."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from pysched.cli.context import Globals
from pysched.cli.discovery import DEFAULT_URL, UnusableConfig, resolve
from pysched.server_file import current_path, read_current, remove_current, write_current
from tests.cli.cli_fake_api import FakeApi, cli, run_json, write_config

pytestmark = pytest.mark.usefixtures("api")


def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def serve_wrote(tmp_path: Path, url: str, token: str, pid: int | None = None) -> Path:
    """What ``serve`` leaves in current.json, with its admin token file."""
    token_file = tmp_path / "served" / "admin.token"
    token_file.parent.mkdir(parents=True, exist_ok=True)
    token_file.write_text(token + "\n")
    return write_current(
        url=url,
        config=tmp_path / "served" / "pysched.yaml",
        admin_token_path=token_file,
        pid=pid,
    )


def test_nothing_known_uses_the_default_url_and_no_token() -> None:
    target = resolve(Globals())
    assert (target.url, target.token, target.ca, target.config) == (DEFAULT_URL, None, None, None)


def test_current_json_written_private_and_read_back(tmp_path: Path) -> None:
    path = serve_wrote(tmp_path, "http://127.0.0.1:9000", "pysched_served")
    assert path == tmp_path / "xdg-state" / "pysched" / "current.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    data = json.loads(path.read_text())
    assert set(data) == {"url", "config", "admin_token_path", "pid", "start", "ca"}
    assert data["pid"] == os.getpid()
    assert isinstance(data["start"], int)  # the process's start time: a reused pid is not it
    assert Path(data["config"]).is_absolute()
    current = read_current()
    assert current is not None
    assert current.url == "http://127.0.0.1:9000"
    target = resolve(Globals())
    assert (target.url, target.token) == ("http://127.0.0.1:9000", "pysched_served")


def test_current_json_of_a_dead_server_is_ignored(tmp_path: Path) -> None:
    serve_wrote(tmp_path, "http://127.0.0.1:9000", "pysched_served", pid=dead_pid())
    assert read_current() is None
    assert resolve(Globals()).url == DEFAULT_URL


def test_malformed_current_json_is_ignored(tmp_path: Path) -> None:
    path = current_path()
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    assert read_current() is None
    path.write_text(json.dumps({"url": "http://x", "pid": "12"}))
    assert read_current() is None


def test_remove_current_only_removes_its_own(tmp_path: Path) -> None:
    path = serve_wrote(tmp_path, "http://127.0.0.1:9000", "t")
    remove_current(pid=os.getpid() + 1)
    assert path.exists()
    remove_current()
    assert not path.exists()
    remove_current()  # gone already: nothing to do


def live_pids(count: int) -> tuple[list[subprocess.Popen[bytes]], list[int]]:
    """``count`` processes that stay alive until killed: servers' pids for current.json."""
    procs = [subprocess.Popen(["sleep", "60"]) for _ in range(count)]
    return procs, [proc.pid for proc in procs]


def test_two_servers_the_cli_finds_the_other_when_the_newest_goes(tmp_path: Path) -> None:
    procs, (a, b) = live_pids(2)
    try:
        serve_wrote(tmp_path, "http://127.0.0.1:9001", "ta", pid=a)
        path = serve_wrote(tmp_path, "http://127.0.0.1:9002", "tb", pid=b)
        assert [p["pid"] for p in json.loads(path.read_text())["previous"]] == [a]
        assert (current := read_current()) is not None and current.pid == b
        remove_current(pid=b)  # the newest stops cleanly: the earlier one owns the file again
        data = json.loads(path.read_text())
        assert (data["pid"], "previous" in data) == (a, False)
        serve_wrote(tmp_path, "http://127.0.0.1:9002", "tb", pid=b)
        procs[1].kill()
        procs[1].wait()  # the newest dies without cleaning up
        assert (current := read_current()) is not None and current.url == "http://127.0.0.1:9001"
        assert resolve(Globals()).url == "http://127.0.0.1:9001"
        remove_current(pid=a)  # the last one running stops: nothing is left to find
        assert not path.exists()
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


def test_an_older_server_stopping_leaves_the_newest_and_forgets_itself(tmp_path: Path) -> None:
    procs, (a, b) = live_pids(2)
    try:
        serve_wrote(tmp_path, "http://127.0.0.1:9001", "ta", pid=a)
        path = serve_wrote(tmp_path, "http://127.0.0.1:9002", "tb", pid=b)
        remove_current(pid=a)
        data = json.loads(path.read_text())
        assert (data["pid"], "previous" in data) == (b, False)
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


def test_current_json_remembers_at_most_eight_servers(tmp_path: Path) -> None:
    procs, pids = live_pids(10)
    try:
        for number, pid in enumerate(pids):
            serve_wrote(tmp_path, f"http://127.0.0.1:{9000 + number}", "t", pid=pid)
        data = json.loads(current_path().read_text())
        assert [data["pid"], *(p["pid"] for p in data["previous"])] == pids[::-1][:8]
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


def test_a_pid_reused_by_another_process_is_not_the_server(tmp_path: Path) -> None:
    path = serve_wrote(tmp_path, "http://127.0.0.1:9000", "t")  # this process, its start
    data = json.loads(path.read_text())
    path.write_text(json.dumps({**data, "start": data["start"] + 1}))  # same pid, another life
    assert read_current() is None
    path.write_text(json.dumps({k: v for k, v in data.items() if k != "start"}))  # older file
    assert read_current() is not None


@pytest.mark.parametrize(
    "text",
    [
        json.dumps({"url": "http://x", "pid": 2**40}),
        json.dumps({"url": "http://x", "pid": os.getpid(), "previous": [{"pid": 2**70}, 3, []]}),
        "[" * 100_000 + "]" * 100_000,
    ],
    ids=["huge_pid", "bad_previous", "deep"],
)
def test_a_strange_current_json_neither_breaks_the_cli_nor_a_starting_serve(
    tmp_path: Path, text: str
) -> None:
    path = current_path()
    path.parent.mkdir(parents=True)
    path.write_text(text)
    read_current()  # no error
    serve_wrote(tmp_path, "http://127.0.0.1:9000", "t")
    assert (current := read_current()) is not None and current.pid == os.getpid()


def test_servers_starting_together_are_all_listed(tmp_path: Path) -> None:
    """Each read and rewrite of the list holds a lock: none overwrites another's entry."""
    procs, pids = live_pids(6)
    try:
        threads = [
            threading.Thread(
                target=serve_wrote, args=(tmp_path, f"http://127.0.0.1:{9100 + i}", "t", pid)
            )
            for i, pid in enumerate(pids)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        data = json.loads(current_path().read_text())
        listed = {data["pid"], *(p["pid"] for p in data.get("previous", []))}
        assert listed == set(pids)
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


def test_current_path_follows_xdg_and_ignores_a_relative_one(tmp_path: Path) -> None:
    assert current_path({"XDG_STATE_HOME": str(tmp_path)}) == tmp_path / "pysched/current.json"
    home = tmp_path / "home"
    assert current_path({"XDG_STATE_HOME": "rel/state", "HOME": str(home)}) == (
        home / ".local/state/pysched/current.json"
    )


def test_config_beats_current_json(tmp_path: Path) -> None:
    serve_wrote(tmp_path, "http://127.0.0.1:9000", "pysched_served")
    config = write_config(tmp_path / "other", listen="127.0.0.1:9911")
    token_file = tmp_path / "other" / "state" / "admin.token"
    token_file.parent.mkdir(parents=True)
    token_file.write_text("pysched_from_config\n")
    target = resolve(Globals(config=config))
    assert (target.url, target.token) == ("http://127.0.0.1:9911", "pysched_from_config")
    assert target.config is not None


def test_config_without_its_token_file_does_not_borrow_another_servers_token(
    tmp_path: Path,
) -> None:
    serve_wrote(tmp_path, "http://127.0.0.1:9000", "pysched_served")
    config = write_config(tmp_path / "other", listen="127.0.0.1:9911")
    target = resolve(Globals(config=config))
    assert (target.url, target.token) == ("http://127.0.0.1:9911", None)


def test_explicit_options_beat_everything(tmp_path: Path) -> None:
    serve_wrote(tmp_path, "http://127.0.0.1:9000", "pysched_served")
    config = write_config(tmp_path / "other")
    target = resolve(Globals(url="http://example.test:1/", token="pysched_mine", config=config))
    assert (target.url, target.token) == ("http://example.test:1", "pysched_mine")


def test_the_local_admin_token_only_goes_to_its_own_server(tmp_path: Path) -> None:
    serve_wrote(tmp_path, "http://127.0.0.1:9000", "pysched_served")
    assert resolve(Globals(url="http://elsewhere.test:9000")).token is None
    assert resolve(Globals(url="http://127.0.0.1:9000")).token == "pysched_served"


def test_wildcard_listen_is_reached_on_loopback(tmp_path: Path) -> None:
    config = write_config(tmp_path / "c", listen="0.0.0.0:9912")
    assert resolve(Globals(config=config)).url == "http://127.0.0.1:9912"


def test_tls_config_trusts_its_certificate(tmp_path: Path) -> None:
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "cert.pem").write_text("x")
    (tmp_path / "c" / "key.pem").write_text("x")
    config = write_config(tmp_path / "c", extra="  tls:\n    cert: cert.pem\n    key: key.pem\n")
    target = resolve(Globals(config=config))
    assert target.url == "https://127.0.0.1:9911"
    assert target.ca is not None and target.ca.name == "cert.pem"


def test_config_with_problems_is_an_error_unless_something_else_says_where(
    tmp_path: Path,
) -> None:
    serve_wrote(tmp_path, "http://127.0.0.1:9000", "pysched_served")  # another config's serve
    bad = tmp_path / "bad.yaml"
    bad.write_text("jobs:\n  x:\n    comand: y\n")
    with pytest.raises(UnusableConfig):
        resolve(Globals(config=bad))
    result = cli("-c", str(bad), "status")
    assert result.exit_code == 1
    assert f"{bad}:3:5: unknown key 'comand'" in result.stderr
    assert "give --url" in result.stderr

    with_url = resolve(Globals(config=bad, url="http://127.0.0.1:9001", token="t"))
    assert (with_url.url, with_url.token, with_url.config) == ("http://127.0.0.1:9001", "t", None)
    assert "problem" in with_url.warnings[0]

    # mid-edit before a reload: the config's own running serve still says where it is
    token_file = tmp_path / "own.token"
    token_file.write_text("pysched_own\n")
    write_current(url="http://127.0.0.1:9002", config=bad, admin_token_path=token_file)
    target = resolve(Globals(config=bad))
    assert (target.url, target.token) == ("http://127.0.0.1:9002", "pysched_own")
    assert "running serve" in target.warnings[0]


def test_env_vars_reach_the_request(
    api: FakeApi, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    api.on("GET", "/api/v1/runs", {"runs": [run_json()], "count": 1})
    monkeypatch.setenv("PYSCHED_URL", "http://env.test:7000")
    monkeypatch.setenv("PYSCHED_TOKEN", "pysched_env")
    result = cli("status")
    assert result.exit_code == 0, result.output
    assert str(api.last.url).startswith("http://env.test:7000/api/v1/runs")
    assert api.last.headers["Authorization"] == "Bearer pysched_env"


def test_option_beats_env_and_config_from_env(
    api: FakeApi, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    api.on("GET", "/api/v1/runs", {"runs": [], "count": 0})
    config = write_config(tmp_path / "c", listen="127.0.0.1:9913")
    (tmp_path / "c" / "state").mkdir()
    (tmp_path / "c" / "state" / "admin.token").write_text("pysched_admin\n")
    monkeypatch.setenv("PYSCHED_CONFIG", str(config))
    assert cli("status").exit_code == 0
    assert api.last.url.host == "127.0.0.1" and api.last.url.port == 9913
    assert api.last.headers["Authorization"] == "Bearer pysched_admin"
    assert cli("--token", "pysched_x", "status").exit_code == 0
    assert api.last.headers["Authorization"] == "Bearer pysched_x"


def test_no_options_at_all_finds_the_running_serve(api: FakeApi, tmp_path: Path) -> None:
    """The README tour: a second terminal, no options, while serve runs."""
    api.on("GET", "/api/v1/runs", {"runs": [], "count": 0})
    serve_wrote(tmp_path, "http://127.0.0.1:8089", "pysched_served")
    assert cli("status", "--date", "2026-10-16").exit_code == 0
    assert api.last.url.port == 8089
    assert api.last.url.params["date"] == "2026-10-16"
    assert api.last.headers["Authorization"] == "Bearer pysched_served"


def test_missing_config_file_is_a_usage_error(tmp_path: Path) -> None:
    assert cli("-c", str(tmp_path / "nope.yaml"), "status").exit_code == 2


def test_the_running_serve_of_the_same_config_gives_its_real_url(tmp_path: Path) -> None:
    """``serve --listen`` may move the server off ``scheduler.listen``; current.json knows."""
    config = write_config(tmp_path / "site", listen="127.0.0.1:9911")
    token_file = tmp_path / "site" / "state" / "admin.token"
    token_file.parent.mkdir(parents=True)
    token_file.write_text("pysched_site\n")
    write_current(url="http://127.0.0.1:43210", config=config, admin_token_path=token_file)
    target = resolve(Globals(config=config))
    assert (target.url, target.token) == ("http://127.0.0.1:43210", "pysched_site")


def test_with_c_the_server_running_that_config_counts_even_if_not_the_newest(
    tmp_path: Path,
) -> None:
    config = write_config(tmp_path / "site", listen="127.0.0.1:9911")
    token_file = tmp_path / "site" / "state" / "admin.token"
    token_file.parent.mkdir(parents=True)
    token_file.write_text("pysched_site\n")
    procs, (site, other) = live_pids(2)
    try:
        write_current(
            url="http://127.0.0.1:43210", config=config, admin_token_path=token_file, pid=site
        )
        serve_wrote(tmp_path, "http://127.0.0.1:9002", "pysched_other", pid=other)  # newer
        target = resolve(Globals(config=config))
        assert (target.url, target.token) == ("http://127.0.0.1:43210", "pysched_site")
        assert resolve(Globals()).url == "http://127.0.0.1:9002"  # without -c: the newest
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


def test_a_configs_admin_token_never_goes_to_another_url(tmp_path: Path) -> None:
    config = write_config(tmp_path / "dev", listen="127.0.0.1:9911")
    token_file = tmp_path / "dev" / "state" / "admin.token"
    token_file.parent.mkdir(parents=True, exist_ok=True)
    token_file.write_text("pysched_dev_admin\n")
    assert resolve(Globals(config=config)).token == "pysched_dev_admin"
    elsewhere = resolve(Globals(config=config, url="https://prod.example.test"))
    assert (elsewhere.url, elsewhere.token) == ("https://prod.example.test", None)


@pytest.mark.parametrize("url", ["http://[::1", "ftp://x", "127.0.0.1:8080", "http://"])
def test_a_bad_url_is_a_usage_mistake(url: str) -> None:
    result = cli("--url", url, "status")
    assert result.exit_code == 2
    assert "--url" in result.output
