"""A real ``serve``: hypercorn on a free loopback port, httpx as the client, real commands,
signals for reload and stop, and systemd's notify messages on a real datagram socket."""

from __future__ import annotations

import errno
import os
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import textwrap
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import orjson
import pytest
import trio

from pysched.config import load_config
from pysched.config.model import Listen
from pysched.engine import RunState
from pysched.launch.local import LocalLauncher
from pysched.service import Serving, serve
from pysched.store.disk import Disk
from pysched.systemd import SystemdNotifier

CONFIG = """
scheduler: {state_dir: state, log_dir: logs}
jobs:
  hello:
    schedule: "0 3 1 1 *"
    command: echo "hello {run_date}"
"""
STOP, RELOAD = signal.SIGUSR1, signal.SIGUSR2


@asynccontextmanager
async def live(
    tmp_path: Path,
    notifier: SystemdNotifier | None = None,
    *,
    text: str = CONFIG,
    verify: ssl.SSLContext | bool = True,
    stopped: trio.Event | None = None,
) -> AsyncIterator[tuple[Serving, httpx.AsyncClient, trio.Nursery]]:
    """A live ``serve`` and an admin's client; ``stopped`` (if given) is set when serve
    returns, so a test can time a stop while its connections are still open."""
    path = tmp_path / "pysched.yaml"
    path.write_text(textwrap.dedent(text))
    config = load_config(path)
    async with trio.open_nursery() as nursery:

        async def serving_until_stopped(task_status: trio.TaskStatus[Serving]) -> None:
            await serve(
                config,
                launcher_factory=lambda c: LocalLauncher(c.scheduler.log_dir),
                listen=Listen.parse("127.0.0.1:0"),
                notifier=notifier,
                stop_signals=(STOP,),
                reload_signals=(RELOAD,),
                task_status=task_status,
            )
            if stopped is not None:
                stopped.set()

        serving: Serving = await nursery.start(serving_until_stopped)
        token = (tmp_path / "state" / "admin.token").read_text().strip()
        async with httpx.AsyncClient(
            base_url=serving.urls[0],
            headers={"Authorization": f"Bearer {token}"},
            timeout=10,
            verify=verify,
        ) as client:
            yield serving, client, nursery


async def read_events(response: httpx.Response, count: int) -> list[dict]:
    events: list[dict] = []
    async for line in response.aiter_lines():
        if line.startswith("data: "):
            events.append(orjson.loads(line[6:]))
            if len(events) == count:
                break
    return events


async def test_the_api_over_http_with_an_event_stream_and_a_quick_stop(tmp_path: Path) -> None:
    async with live(tmp_path) as (serving, client, _nursery):
        assert serving.urls[0].startswith("http://127.0.0.1:")
        assert (await client.get("/readyz")).json() == {"status": "ready"}
        assert oct((tmp_path / "state" / "admin.token").stat().st_mode & 0o777) == "0o600"
        assert "admin.token" not in (tmp_path / "state" / "tokens.json").read_text()

        async with client.stream("GET", "/api/v1/events") as stream:
            answer = await client.post(
                "/api/v1/jobs/hello/trigger", json={"run_date": "2026-10-16"}
            )
            assert answer.status_code == 201
            with trio.fail_after(10):
                events = await read_events(stream, 4)
        assert [e["kind"] for e in events][:2] == ["run_created", "run_changed"]
        ids = [e["id"] for e in events]
        assert ids == sorted(ids)

        with trio.fail_after(10):
            while serving.engine.book.get("hello.2026-10-16.1").state is not RunState.SUCCEEDED:
                await trio.sleep(0.05)
        log = await client.get("/api/v1/runs/hello.2026-10-16.1/attempts/1/log")
        assert log.json()["data"] == "hello 2026-10-16\n"

        # reconnecting with Last-Event-ID gets what came after it
        async with client.stream(
            "GET", "/api/v1/events", headers={"Last-Event-ID": str(ids[1])}
        ) as stream:
            with trio.fail_after(10):
                resumed = await read_events(stream, 2)
        assert [e["id"] for e in resumed] == [ids[1] + 1, ids[1] + 2]

        metrics = await client.get("/metrics")
        assert metrics.status_code == 200
        assert 'pysched_runs{state="succeeded"}' in metrics.text
        assert (
            await client.get("/metrics", headers={"Authorization": "Bearer x"})
        ).status_code == 401

        # a stop with a stream still open ends at once, not after hypercorn's grace period
        async with client.stream("GET", "/api/v1/events") as stream:
            started = trio.current_time()
            os.kill(os.getpid(), STOP)
            with trio.fail_after(3):
                async for _ in stream.aiter_lines():
                    pass
    assert trio.current_time() - started < 3


async def test_an_answer_of_known_length_goes_out_in_one_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """hypercorn wrote each answer's head, body and empty end apart: three locked sends, each a
    scheduler round and a system call. An answer with a length now goes in one; a streamed one
    (events: no length) still sends its head at once, before anything happens."""
    writes: list[bytes] = []
    send_all = trio.SocketStream.send_all

    async def recording(self: trio.SocketStream, data: bytes | bytearray | memoryview) -> None:
        writes.append(bytes(data))
        await send_all(self, data)

    monkeypatch.setattr(trio.SocketStream, "send_all", recording)
    async with live(tmp_path) as (_serving, client, nursery):
        writes.clear()
        assert (await client.get("/healthz")).json() == {"status": "ok"}
        answers = [w for w in writes if w.startswith(b"HTTP/1.1 ")]
        assert len(answers) == 1
        assert answers[0].endswith(b'\r\n\r\n{"status":"ok"}')
        assert b"" not in writes
        writes.clear()
        async with client.stream("GET", "/api/v1/events") as stream:
            assert stream.headers["content-type"].startswith("text/event-stream")
            (head,) = [w for w in writes if w.startswith(b"HTTP/1.1 ")]
            assert head.endswith(b"\r\n\r\n")  # the head alone, nothing held back
        nursery.cancel_scope.cancel()


class _FullDisk(Disk):
    def write(self, fd: int, data: bytes) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")


async def test_the_request_whose_commit_fails_is_answered_503(tmp_path: Path) -> None:
    # the journal fails under a trigger: the engine fail-stops and serve exits, but the
    # request that met the failure still gets its answer before the server goes
    stopped = trio.Event()
    async with live(tmp_path, stopped=stopped) as (serving, client, _):
        serving.engine._store._disk = _FullDisk()  # pyright: ignore[reportPrivateUsage, reportAttributeAccessIssue]
        response = await client.post("/api/v1/jobs/hello/trigger", json={})
        assert response.status_code == 503
        assert response.json()["error"]["code"] == "unavailable"
        with trio.fail_after(10):
            await stopped.wait()
    assert serving.engine.error is not None


async def test_an_idle_keep_alive_connection_does_not_hold_a_stop(tmp_path: Path) -> None:
    stopped = trio.Event()
    async with live(tmp_path, stopped=stopped) as (_serving, client, _nursery):
        assert (await client.get("/readyz")).status_code == 200  # the connection stays open
        asked = trio.current_time()
        os.kill(os.getpid(), STOP)
        with trio.fail_after(10):
            await stopped.wait()
        assert trio.current_time() - asked < 2  # hypercorn's grace is 5 s


async def test_a_second_stop_signal_ends_the_grace_at_once(tmp_path: Path) -> None:
    stopped = trio.Event()
    async with live(tmp_path, stopped=stopped) as (serving, client, _nursery):
        # a request in flight: its body is still on the way, so the stop waits its grace for it
        host, port = serving.urls[0].removeprefix("http://").rsplit(":", 1)
        token = client.headers["Authorization"]
        half = (
            f"POST /api/v1/reload HTTP/1.1\r\nHost: x\r\nAuthorization: {token}\r\n"
            "Content-Type: application/json\r\nContent-Length: 40\r\n\r\n{"
        ).encode()
        async with await trio.open_tcp_stream(host, int(port)) as stream:
            await stream.send_all(half)
            os.kill(os.getpid(), STOP)
            with trio.move_on_after(1):
                await stopped.wait()
            assert not stopped.is_set()  # waiting for the request in flight
            again = trio.current_time()
            os.kill(os.getpid(), STOP)  # Ctrl-C twice
            with trio.fail_after(10):
                await stopped.wait()
            assert trio.current_time() - again < 2


async def test_revoking_a_token_ends_the_event_streams_it_opened(tmp_path: Path) -> None:
    async with live(tmp_path) as (serving, client, nursery):
        made = await client.post("/api/v1/tokens", json={"name": "screen", "role": "viewer"})
        viewer = {"Authorization": f"Bearer {made.json()['token']}"}
        async with (
            httpx.AsyncClient(base_url=serving.urls[0], headers=viewer) as other,
            other.stream("GET", "/api/v1/events") as stream,
        ):
            assert stream.status_code == 200
            assert (await client.delete("/api/v1/tokens/screen")).status_code in (200, 204)
            await client.post("/api/v1/jobs/hello/trigger", json={"run_date": "2026-10-16"})
            with trio.fail_after(5):
                frames = [line async for line in stream.aiter_lines() if line.startswith("id:")]
            assert frames == []  # nothing after the revoke: the stream ended at the next event
            assert (await other.get("/api/v1/runs")).status_code == 401
        nursery.cancel_scope.cancel()


async def test_reload_on_the_signal_and_over_the_api(tmp_path: Path) -> None:
    async with live(tmp_path) as (serving, client, nursery):
        engine = serving.engine
        path = tmp_path / "pysched.yaml"
        first = engine.config.sha256
        path.write_text(
            path.read_text() + '  bye:\n    schedule: "0 4 1 1 *"\n    command: echo bye\n'
        )
        os.kill(os.getpid(), RELOAD)
        with trio.fail_after(10):
            while "bye" not in engine.config.jobs:
                await trio.sleep(0.05)
        second = engine.config.sha256

        path.write_text(path.read_text() + "  broken: {command: 5, scedule: x}\n")
        answer = await client.post("/api/v1/reload")
        assert answer.status_code == 422
        problems = answer.json()["error"]["problems"]
        assert any("scedule" in p for p in problems)
        assert engine.config.sha256 == second  # nothing half-applied

        os.kill(os.getpid(), RELOAD)  # the same bad file on the signal: refused, recorded
        with trio.fail_after(10):
            while len([e for e in engine.events.recent() if e.kind == "reload_failed"]) < 2:
                await trio.sleep(0.05)
        assert engine.config.sha256 == second

        versions = (await client.get("/api/v1/config/versions")).json()["versions"]
        assert [v["sha256"] for v in versions] == [first, second]
        assert versions[-1]["current"] is True
        diff = (await client.get(f"/api/v1/config/diff?from={first[:8]}&to={second[:8]}")).json()
        assert "+  bye:" in diff["diff"]
        nursery.cancel_scope.cancel()


async def test_systemd_hears_ready_reloading_and_stopping(tmp_path: Path) -> None:
    with tempfile.TemporaryDirectory() as short:  # sun_path is short; tmp_path may be deep
        address = str(Path(short) / "notify")
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        listener.bind(address)
        listener.setblocking(False)
        messages: list[str] = []

        def drain() -> None:
            while True:
                try:
                    messages.append(listener.recv(4096).decode())
                except BlockingIOError:
                    return

        try:
            async with live(tmp_path, SystemdNotifier(address)) as (serving, _client, _nursery):
                drain()
                # STATUS= is the line `systemctl status` shows
                assert messages == [f"READY=1\nSTATUS=serving 1 job on {serving.urls[0]}"]
                os.kill(os.getpid(), RELOAD)
                with trio.fail_after(10):
                    while len(messages) < 3:
                        await trio.sleep(0.05)
                        drain()
                assert messages[1].startswith("RELOADING=1\nMONOTONIC_USEC=")
                assert messages[1].endswith("\nSTATUS=reloading " + str(tmp_path / "pysched.yaml"))
                sha = serving.engine.config.sha256[:12]
                assert messages[2] == f"READY=1\nSTATUS=config {sha} unchanged"
                os.kill(os.getpid(), STOP)
            drain()
            assert (
                messages[-1]
                == "STOPPING=1\nSTATUS=stopping; running attempts stay with their minders"
            )
        finally:
            listener.close()


async def test_tls_when_a_certificate_is_configured(tmp_path: Path) -> None:
    if shutil.which("openssl") is None:
        pytest.skip("openssl is needed to make a test certificate")
    key, cert = str(tmp_path / "key.pem"), str(tmp_path / "cert.pem")
    made = subprocess.run(
        [
            *("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"),
            *("-keyout", key, "-out", cert, "-subj", "/CN=127.0.0.1"),
            *("-addext", "subjectAltName=IP:127.0.0.1"),
        ],
        capture_output=True,
        check=False,
    )
    if made.returncode != 0:
        pytest.skip(f"openssl could not make a certificate: {made.stderr[-200:]!r}")
    text = CONFIG.replace(
        "scheduler: {state_dir: state, log_dir: logs}",
        "scheduler: {state_dir: state, log_dir: logs, tls: {cert: cert.pem, key: key.pem}}",
    )
    trusted = ssl.create_default_context(cafile=cert)
    async with live(tmp_path, text=text, verify=trusted) as (serving, client, nursery):
        assert serving.urls[0].startswith("https://127.0.0.1:")
        assert (await client.get("/healthz")).json() == {"status": "ok"}
        plain = serving.urls[0].replace("https://", "http://")
        async with httpx.AsyncClient() as insecure:
            with pytest.raises(httpx.HTTPError):
                await insecure.get(plain + "/healthz")
        nursery.cancel_scope.cancel()


async def test_a_port_in_use_is_a_clear_exit_1(tmp_path: Path) -> None:
    path = tmp_path / "pysched.yaml"
    path.write_text(textwrap.dedent(CONFIG))
    config = load_config(path)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = await serve(
            config,
            launcher_factory=lambda c: LocalLauncher(c.scheduler.log_dir),
            listen=Listen.parse(f"127.0.0.1:{port}"),
            stop_signals=(STOP,),
            reload_signals=(RELOAD,),
        )
    assert result.code == 1
    assert f"cannot listen on 127.0.0.1:{port}" in result.reason
    assert "change scheduler.listen or --listen" in result.reason
    assert not (Path(os.environ["XDG_STATE_HOME"]) / "pysched" / "current.json").exists()


async def _answer(stream: trio.SocketStream, buffer: bytearray) -> bytes:
    """The status line of the next answer on ``stream`` (its body read and dropped)."""
    while b"\r\n\r\n" not in buffer:
        data = await stream.receive_some(4096)
        assert data, "the server closed the connection"
        buffer += data
    head, _, _ = bytes(buffer).partition(b"\r\n\r\n")
    del buffer[: len(head) + 4]
    lines = head.split(b"\r\n")
    length = next(int(line[15:]) for line in lines if line.lower().startswith(b"content-length:"))
    while len(buffer) < length:
        data = await stream.receive_some(4096)
        assert data, "the server closed the connection"
        buffer += data
    del buffer[:length]
    return lines[0]


REFUSED = [
    pytest.param("POST", "/api/v1/jobs/hello/hold", "bad", id="401_bad_token"),
    pytest.param("POST", "/api/v1/tokens", "viewer", id="403_wrong_role"),
    pytest.param("POST", "/api/v1/nope", "admin", id="404_no_endpoint"),
    pytest.param("PUT", "/api/v1/jobs", "admin", id="405_wrong_method"),
    pytest.param("POST", "/api/v1/jobs/hello/hold", "admin", id="422_read_body"),
]


@pytest.mark.parametrize(("method", "path", "who"), REFUSED)
async def test_a_refused_request_with_a_body_leaves_the_connection_usable(
    tmp_path: Path, method: str, path: str, who: str
) -> None:
    async with live(tmp_path) as (serving, client, nursery):
        if who == "viewer":
            made = await client.post("/api/v1/tokens", json={"name": "v", "role": "viewer"})
            who = made.json()["token"]
        elif who == "admin":
            who = client.headers["Authorization"].removeprefix("Bearer ")
        host, port = serving.urls[0].removeprefix("http://").rsplit(":", 1)
        body = b'{"name": "x"}'
        head = (
            f"{method} {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {who}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        ).encode()
        for split in (False, True):
            stream = await trio.open_tcp_stream(host, int(port))
            async with stream:
                buffer = bytearray()
                with trio.fail_after(5):
                    if split:  # the body in a packet of its own, after the answer was made
                        await stream.send_all(head)
                        await trio.sleep(0.05)
                        await stream.send_all(body)
                    else:
                        await stream.send_all(head + body)
                    first = await _answer(stream, buffer)
                    await stream.send_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
                    second = await _answer(stream, buffer)
            assert first.split()[1] != b"200", first
            assert second == b"HTTP/1.1 200 ", (split, first, second)

        # one shared client, as a program would keep it
        async with httpx.AsyncClient(base_url=serving.urls[0], timeout=5) as shared:
            for _ in range(5):
                refused = await shared.request(
                    method, path, headers={"Authorization": f"Bearer {who}"}, json={"name": "x"}
                )
                assert refused.status_code >= 400
                assert (await shared.get("/healthz")).status_code == 200
        nursery.cancel_scope.cancel()


async def test_a_body_too_large_to_read_is_answered_with_connection_close(tmp_path: Path) -> None:
    async with live(tmp_path) as (_serving, client, nursery):
        with trio.fail_after(10):
            for token in ("bad", client.headers["Authorization"].removeprefix("Bearer ")):
                refused = await client.post(
                    "/api/v1/jobs/hello/hold",
                    content=b"x" * (2 * 1024 * 1024),
                    headers={"Authorization": f"Bearer {token}"},
                )
                assert refused.status_code in (401, 413)
                assert refused.headers["Connection"] == "close"
                assert (await client.get("/healthz")).status_code == 200
        nursery.cancel_scope.cancel()


async def test_http_2_and_websocket_are_refused_and_the_server_goes_on(tmp_path: Path) -> None:
    """HTTP/1.1 only, in the clear too: hypercorn's HTTP/2 used to end the whole server on a
    refused large body (a KeyError in one connection)."""
    async with live(tmp_path) as (serving, client, nursery):
        host, port = serving.urls[0].removeprefix("http://").rsplit(":", 1)

        async def exchange(data: bytes) -> bytes:
            received = bytearray()
            async with await trio.open_tcp_stream(host, int(port)) as stream:
                with trio.fail_after(5):
                    try:
                        await stream.send_all(data)
                    except trio.BrokenResourceError:
                        return b""  # closed while the client was still sending
                    while chunk := await stream.receive_some(4096):
                        received += chunk
                        if b"\r\n\r\n" in received:
                            break
            return bytes(received)

        # HTTP/2 with prior knowledge: the connection is closed, nothing is answered
        preface = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00" * 64 + b"x" * 2_000_000
        assert await exchange(preface) == b""
        # an h2c upgrade is ignored: answered in HTTP/1.1
        upgrade = b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, HTTP2-Settings\r\n"
        upgrade += b"Upgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n"
        assert (await exchange(upgrade)).startswith(b"HTTP/1.1 200 ")
        # a WebSocket: refused (403), no traceback
        websocket = b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\n"
        websocket += b"Upgrade: websocket\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
        websocket += b"Sec-WebSocket-Version: 13\r\n\r\n"
        assert (await exchange(websocket)).startswith(b"HTTP/1.1 403 ")
        # a doubled slash is no route: 404 in JSON, not a redirect to the caller's Host
        doubled = await client.get("/api/v1//runs", headers={"Host": "elsewhere.example"})
        assert doubled.status_code == 404
        assert doubled.json()["error"]["code"] == "not_found"
        assert (await client.get("/healthz")).status_code == 200
        nursery.cancel_scope.cancel()


def test_tls_offers_http_1_1_only(tmp_path: Path) -> None:
    """hypercorn's HTTP/2 resets a connection on an over-long body: TLS offers HTTP/1.1."""
    from pysched.config.model import Listen, Tls
    from pysched.web.server import hypercorn_config

    tls = Tls(cert=tmp_path / "cert.pem", key=tmp_path / "key.pem")
    assert hypercorn_config(Listen.parse("127.0.0.1:0"), tls).alpn_protocols == ["http/1.1"]
