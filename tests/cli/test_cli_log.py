"""``pysched log``: chunks joined untouched, the latest attempt by default, --follow as it grows."""

from __future__ import annotations

import json

import httpx
import pytest

from pysched.cli import log_command
from tests.cli.cli_fake_api import FakeApi, cli, run_json

RUN_ID = "fetch-rates.2026-10-16.1"
RUN_PATH = f"/api/v1/runs/{RUN_ID}"


pytestmark = pytest.mark.usefixtures("api")


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    slept: list[float] = []
    monkeypatch.setattr(log_command, "sleep", slept.append)
    return slept


def attempt(number: int, *, ended: bool = True, has_log: bool = True) -> dict[str, object]:
    return {
        "number": number,
        "started_at": "2026-10-19T01:00:01+00:00",
        "ended_at": "2026-10-19T01:00:02+00:00" if ended else None,
        "exit_code": 0 if ended else None,
        "signal": None,
        "outcome": "succeeded" if ended else None,
        "message": "",
        "has_log": has_log,
    }


def chunk(number: int, text: str, offset: int, limit: int, *, ended: bool, stream: str = "stdout"):
    data = text[offset : offset + limit]
    next_offset = offset + len(data)
    return httpx.Response(
        200,
        json={
            "run_id": RUN_ID,
            "attempt": number,
            "stream": stream,
            "offset": offset,
            "next_offset": next_offset,
            "size": len(text),
            "data": data,
            "complete": ended and next_offset == len(text),
        },
    )


class Growing:
    """A run whose attempts' logs grow by one line per request; attempt 1 fails, 2 succeeds."""

    def __init__(self, attempts: int = 2) -> None:
        self.lines = {n: [f"attempt {n} line {i}\n" for i in range(1, 4)] for n in range(1, 3)}
        self.shown = {n: "" for n in range(1, attempts + 1)}
        self.ended: set[int] = set()
        self.attempts = attempts
        self.current = 1

    def run(self, request: httpx.Request) -> httpx.Response:
        finished = self.current == self.attempts and self.current in self.ended
        numbers = range(1, self.current + 1)
        state = (
            "succeeded" if finished else ("retrying" if self.current in self.ended else "running")
        )
        return httpx.Response(
            200,
            json=run_json(
                RUN_ID,
                state=state,
                attempts=[attempt(n, ended=n in self.ended) for n in numbers],
            ),
        )

    def log(self, request: httpx.Request) -> httpx.Response:
        number = int(request.url.path.split("/")[-2])
        offset = int(request.url.params["offset"])
        pending = self.lines[number]
        if pending:
            self.shown[number] += pending.pop(0)
        elif number not in self.ended:
            self.ended.add(number)
            if number < self.attempts:
                self.current = number + 1
        return chunk(number, self.shown[number], offset, 65536, ended=number in self.ended)


def serve_growing(api: FakeApi, growing: Growing) -> None:
    api.on("GET", RUN_PATH, growing.run)
    for n in (1, 2):
        api.on("GET", f"{RUN_PATH}/attempts/{n}/log", growing.log)


def test_log_joins_chunks_of_the_latest_attempt(api: FakeApi) -> None:
    text = "x" * 100 + "\nend\n"
    api.on("GET", RUN_PATH, run_json(RUN_ID, attempts=[attempt(1), attempt(2)]))
    api.on(
        "GET",
        f"{RUN_PATH}/attempts/2/log",
        lambda r: chunk(2, text, int(r.url.params["offset"]), 40, ended=True),
    )
    result = cli("log", RUN_ID)
    assert result.exit_code == 0, result.output
    assert result.stdout == text
    offsets = [r.url.params.get("offset") for r in api.requests if r.url.path.endswith("/log")]
    assert offsets == ["0", "40", "80"]


def test_log_attempt_and_stderr_and_json(api: FakeApi) -> None:
    api.on(
        "GET",
        f"{RUN_PATH}/attempts/1/log",
        lambda r: chunk(1, "boom\n", int(r.url.params["offset"]), 3, ended=True, stream="stderr"),
    )
    result = cli("log", RUN_ID, "--attempt", "1", "--stderr")
    assert result.exit_code == 0, result.output
    assert result.stdout == "boom\n"
    assert api.last.url.params["stream"] == "stderr"
    assert not any(r.url.path == RUN_PATH for r in api.requests)  # no need to ask the run
    document = json.loads(cli("log", RUN_ID, "--attempt", "1", "--stderr", "--json").stdout)
    assert (document["data"], document["offset"], document["complete"]) == ("boom\n", 0, True)


def test_log_of_a_run_without_attempts_exit_1(api: FakeApi) -> None:
    api.on("GET", RUN_PATH, run_json(RUN_ID, state="waiting", attempts=[]))
    result = cli("log", RUN_ID)
    assert result.exit_code == 1
    assert "has no attempt with a log yet" in result.stderr


def test_log_of_a_command_that_could_not_start_says_why(api: FakeApi) -> None:
    failed = {
        **attempt(1),
        "outcome": "start_failed",
        "exit_code": None,
        "has_log": False,
        "message": "cannot start 'bin/nope': No such file or directory (bin/nope)",
    }
    api.on("GET", RUN_PATH, run_json(RUN_ID, state="failed", attempts=[failed]))
    result = cli("log", RUN_ID)
    assert result.exit_code == 1
    said = " ".join(result.stderr.split())
    assert f"run {RUN_ID} (failed) has no log: attempt 1 could not start: cannot start" in said
    assert "yet" not in said


def test_log_of_a_run_that_never_ran_says_so(api: FakeApi) -> None:
    api.on(
        "GET",
        RUN_PATH,
        run_json(RUN_ID, state="skipped", attempts=[], reason="extract.2026-10-16.1 was skipped"),
    )
    result = cli("log", RUN_ID)
    assert result.exit_code == 1
    said = " ".join(result.stderr.split())
    assert "never ran, so it has no log (extract.2026-10-16.1 was skipped)" in said


def test_log_404_exit_1(api: FakeApi) -> None:
    result = cli("log", RUN_ID, "--attempt", "9")
    assert result.exit_code == 1
    assert result.stderr.startswith("error: no route")


def test_follow_prints_as_it_grows_and_moves_to_the_retry(
    api: FakeApi, sleeps: list[float]
) -> None:
    growing = Growing()
    serve_growing(api, growing)
    result = cli("log", RUN_ID, "--follow")
    assert result.exit_code == 0, result.output
    expected = "".join(f"attempt {n} line {i}\n" for n in (1, 2) for i in range(1, 4))
    assert result.stdout == expected
    assert "--- attempt 2 ---" in result.stderr
    assert sleeps and set(sleeps) == {0.5}
    log_requests = [r for r in api.requests if r.url.path.endswith("/log")]
    # each poll goes on from where the last one ended
    assert [r.url.params["offset"] for r in log_requests[:4]] == ["0", "17", "34", "51"]


def test_follow_json_prints_nothing_for_a_poll_that_found_nothing(
    api: FakeApi, sleeps: list[float]
) -> None:
    """An idle job's follower printed a line with ``"data": ""`` twice a second."""
    polls = iter(
        [
            chunk(1, "one\n", 0, 100, ended=False),  # the attempt is still running
            chunk(1, "one\n", 4, 100, ended=False),  # nothing new
            chunk(1, "one\n", 4, 100, ended=False),  # nothing new
            chunk(1, "one\n", 4, 100, ended=True),  # ended, nothing new: complete
        ]
    )
    api.on("GET", RUN_PATH, run_json(RUN_ID, attempts=[attempt(1)]))
    api.on("GET", f"{RUN_PATH}/attempts/1/log", lambda _r: next(polls))
    result = cli("log", RUN_ID, "--follow", "--attempt", "1", "--json")
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(line["data"], line["complete"]) for line in lines] == [("one\n", False), ("", True)]
    assert len(sleeps) == 3


def test_follow_rides_out_a_server_restart(api: FakeApi, sleeps: list[float]) -> None:
    """``watch`` reconnected after a restart; ``log --follow`` exited 3 at once."""

    def refused(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("[Errno 111] Connection refused", request=request)

    polls = iter(
        [
            lambda _r: chunk(1, "one\ntwo\n", 0, 4, ended=False),
            refused,
            refused,
            lambda _r: chunk(1, "one\ntwo\n", 4, 100, ended=True),
        ]
    )
    api.on("GET", RUN_PATH, run_json(RUN_ID, attempts=[attempt(1)]))
    api.on("GET", f"{RUN_PATH}/attempts/1/log", lambda r: next(polls)(r))
    result = cli("log", RUN_ID, "--follow", "--attempt", "1")
    assert result.exit_code == 0, result.output
    assert result.stdout == "one\ntwo\n"
    assert result.stderr.count("note: lost the server") == 2
    assert sleeps == [0.5, 1.0]  # the first two waits to reconnect


def test_follow_gives_up_on_a_server_that_stays_away(api: FakeApi, sleeps: list[float]) -> None:
    api.refuse = True  # from the first request on: the run is asked for first
    result = cli("log", RUN_ID, "--follow")
    assert result.exit_code == 3, result.output
    assert "gave up after 5 tries" in " ".join(result.stderr.split())
    assert sleeps == [0.5, 1.0, 2.0, 4.0, 8.0]


def test_without_follow_an_unreachable_server_is_exit_3_at_once(api: FakeApi) -> None:
    api.refuse = True
    result = cli("log", RUN_ID)
    assert result.exit_code == 3
    assert "lost the server" not in result.stderr


def test_follow_a_given_attempt_stops_at_its_end(api: FakeApi, sleeps: list[float]) -> None:
    growing = Growing()
    serve_growing(api, growing)
    result = cli("log", RUN_ID, "--follow", "--attempt", "1", "--json")
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert "".join(line["data"] for line in lines) == "".join(
        f"attempt 1 line {i}\n" for i in range(1, 4)
    )
    assert lines[-1]["complete"] is True


def test_follow_ctrl_c_exits_0(api: FakeApi, monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupt(seconds: float) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(log_command, "sleep", interrupt)
    api.on("GET", RUN_PATH, run_json(RUN_ID, state="running", attempts=[attempt(1, ended=False)]))
    api.on(
        "GET",
        f"{RUN_PATH}/attempts/1/log",
        lambda r: chunk(1, "so far\n", int(r.url.params["offset"]), 100, ended=False),
    )
    result = cli("log", RUN_ID, "-f")
    assert result.exit_code == 0
    assert result.stdout == "so far\n"


def test_follow_waits_for_the_first_attempt(api: FakeApi, sleeps: list[float]) -> None:
    states = iter(["queued"])

    def run(request: httpx.Request) -> httpx.Response:
        state = next(states, "succeeded")
        attempts = [] if state == "queued" else [attempt(1)]
        return httpx.Response(200, json=run_json(RUN_ID, state=state, attempts=attempts))

    api.on("GET", RUN_PATH, run)
    api.on(
        "GET",
        f"{RUN_PATH}/attempts/1/log",
        lambda r: chunk(1, "done\n", int(r.url.params["offset"]), 100, ended=True),
    )
    result = cli("log", RUN_ID, "--follow")
    assert result.exit_code == 0, result.output
    assert result.stdout == "done\n"
