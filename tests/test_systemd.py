"""sd_notify over a real unix datagram socket, the watchdog on the autojump clock, the unit file."""

from __future__ import annotations

import logging
import os
import socket
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import trio
import trio.testing

from pysched import systemd
from pysched.systemd import SystemdNotifier, run_watchdog

ROOT = Path(__file__).resolve().parent.parent
UNIT = ROOT / "examples" / "pysched.service"


@pytest.fixture
def socket_dir(tmp_path: Path) -> Iterator[Path]:
    """A folder whose paths fit in sun_path (108 bytes), which a deep tmp_path may not."""
    if len(str(tmp_path)) < 80:
        yield tmp_path
        return
    with tempfile.TemporaryDirectory() as short:
        yield Path(short)


@pytest.fixture
def listener(socket_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[socket.socket]:
    """A bound datagram socket playing systemd, named in $NOTIFY_SOCKET."""
    path = socket_dir / "notify"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(path))
    sock.setblocking(False)
    monkeypatch.setenv("NOTIFY_SOCKET", str(path))
    monkeypatch.delenv("WATCHDOG_USEC", raising=False)
    monkeypatch.delenv("WATCHDOG_PID", raising=False)
    with sock:
        yield sock


def received(sock: socket.socket) -> list[str]:
    """Every datagram waiting on the socket (sends are synchronous, so they are all there)."""
    messages: list[str] = []
    while True:
        try:
            messages.append(sock.recv(4096).decode())
        except BlockingIOError:
            return messages


def test_public_names() -> None:
    assert systemd.__all__ == ["SystemdNotifier", "run_watchdog"]


def test_messages(listener: socket.socket) -> None:
    with SystemdNotifier.from_environ() as notifier:
        assert notifier.enabled
        assert notifier.ready()
        assert notifier.stopping()
        assert notifier.status("serving 5 jobs\n3 running")
        assert notifier.watchdog()
        assert notifier.ready(status="reloaded")
        assert notifier.extend_timeout(90)
    assert received(listener) == [
        "READY=1",
        "STOPPING=1",
        "STATUS=serving 5 jobs 3 running",
        "WATCHDOG=1",
        "READY=1\nSTATUS=reloaded",
        "EXTEND_TIMEOUT_USEC=90000000",
    ]


def test_reloading_carries_the_monotonic_time(listener: socket.socket) -> None:
    with SystemdNotifier.from_environ() as notifier:
        before = time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
        assert notifier.reloading()
        after = time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
    [message] = received(listener)
    first, second = message.split("\n")
    assert first == "RELOADING=1"
    key, value = second.split("=")
    assert key == "MONOTONIC_USEC"
    assert before <= int(value) <= after


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="abstract sockets are Linux's")
def test_abstract_socket(monkeypatch: pytest.MonkeyPatch) -> None:
    name = f"pysched-test-{os.getpid()}-{time.monotonic_ns()}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind("\0" + name)
        sock.setblocking(False)
        monkeypatch.setenv("NOTIFY_SOCKET", "@" + name)
        with SystemdNotifier.from_environ() as notifier:
            assert notifier.ready()
        assert received(sock) == ["READY=1"]


def test_no_notify_socket_is_a_no_op(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NOTIFY_SOCKET", raising=False)
    monkeypatch.setenv("WATCHDOG_USEC", "30000000")
    notifier = SystemdNotifier.from_environ()
    assert not notifier.enabled
    assert notifier.watchdog_interval is None
    assert not notifier.ready()
    assert not notifier.watchdog()


def test_unsupported_address_is_a_no_op(caplog: pytest.LogCaptureFixture) -> None:
    notifier = SystemdNotifier("vsock:2:1234")
    assert not notifier.enabled
    assert not notifier.ready()
    assert "not a unix socket address" in caplog.text


def test_a_vanished_socket_warns_once_and_never_raises(
    socket_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    notifier = SystemdNotifier(str(socket_dir / "gone"))
    with caplog.at_level(logging.DEBUG, logger="pysched.systemd"):
        assert not notifier.ready()
        assert not notifier.watchdog()
    notifier.close()
    levels = [r.levelno for r in caplog.records if r.name == "pysched.systemd"]
    assert levels == [logging.WARNING, logging.DEBUG]
    assert "READY=1" in caplog.records[0].getMessage()


@pytest.mark.parametrize(
    ("usec", "pid", "interval"),
    [
        ("30000000", None, 30.0),
        ("30000000", "self", 30.0),
        ("30000000", "other", None),
        ("0", None, None),
        ("-5", None, None),
        ("soon", None, None),
        (None, None, None),
    ],
    ids=["usec", "our_pid", "other_pid", "zero", "negative", "garbage", "unset"],
)
def test_watchdog_enabled(usec: str | None, pid: str | None, interval: float | None) -> None:
    env = {"NOTIFY_SOCKET": "/run/systemd/notify"}
    if usec is not None:
        env["WATCHDOG_USEC"] = usec
    if pid is not None:
        env["WATCHDOG_PID"] = str(os.getpid() if pid == "self" else os.getpid() + 1)
    assert SystemdNotifier.from_environ(env).watchdog_interval == interval


def test_unset_removes_the_variables() -> None:
    env = {
        "NOTIFY_SOCKET": "/run/systemd/notify",
        "WATCHDOG_USEC": "30000000",
        "WATCHDOG_PID": str(os.getpid()),
        "PATH": "/usr/bin",
    }
    notifier = SystemdNotifier.from_environ(env, unset=True)
    assert notifier.watchdog_interval == 30.0
    assert env == {"PATH": "/usr/bin"}


# -- the watchdog -------------------------------------------------------------------------


async def recv_at(sock: trio.socket.SocketType) -> tuple[float, str]:
    message = await sock.recv(4096)
    return trio.current_time(), message.decode()


@pytest.fixture
async def trio_listener(
    socket_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[trio.socket.SocketType]:
    path = socket_dir / "notify"
    sock = trio.socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    await sock.bind(str(path))
    monkeypatch.setenv("NOTIFY_SOCKET", str(path))
    monkeypatch.setenv("WATCHDOG_USEC", "10000000")  # 10 s: pings every 5 s
    monkeypatch.delenv("WATCHDOG_PID", raising=False)
    with sock:
        yield sock


async def test_watchdog_pings_while_healthy(
    trio_listener: trio.socket.SocketType, autojump_clock: trio.testing.MockClock
) -> None:
    healthy = True
    notifier = SystemdNotifier.from_environ()
    async with trio.open_nursery() as nursery:
        start = trio.current_time()
        await nursery.start(
            lambda task_status: run_watchdog(
                notifier, healthy=lambda: healthy, task_status=task_status
            )
        )
        pings = [await recv_at(trio_listener) for _ in range(4)]
        assert [(round(at - start, 3), m) for at, m in pings] == [
            (0, "WATCHDOG=1"),  # at once, so a slow start-up does not eat into the first interval
            (5, "WATCHDOG=1"),
            (10, "WATCHDOG=1"),
            (15, "WATCHDOG=1"),
        ]

        healthy = False
        with trio.move_on_after(62):  # off the 5 s beat, so no tie with a decision
            await trio_listener.recv(4096)
            pytest.fail("pinged while unhealthy")

        healthy = True
        at, message = await recv_at(trio_listener)
        assert message == "WATCHDOG=1"
        assert at - start == pytest.approx(80)
        nursery.cancel_scope.cancel()
    notifier.close()


async def test_watchdog_skips_a_ping_when_the_loop_stalls(
    trio_listener: trio.socket.SocketType,
    autojump_clock: trio.testing.MockClock,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="pysched.systemd")
    notifier = SystemdNotifier.from_environ()
    async with trio.open_nursery() as nursery:
        start = trio.current_time()
        await nursery.start(run_watchdog, notifier)
        assert (await recv_at(trio_listener))[1] == "WATCHDOG=1"  # t=0
        await trio.sleep(1.5)
        # the loop is blocked for 4 s: the watchdog's tick due at t=2 wakes at t=5.5, 3.5 s
        # late (more than a quarter of WatchdogSec), so the ping due at t=5 is skipped and the
        # next comes on the first tick after t=10
        autojump_clock.jump(4)
        at, _ = await recv_at(trio_listener)
        assert at - start == pytest.approx(10.5)
        nursery.cancel_scope.cancel()
    notifier.close()
    assert "not pinging, the loop was 3.500s late" in caplog.text
    assert "healthy again" in caplog.text


async def test_watchdog_not_enabled_returns_at_once(
    listener: socket.socket, autojump_clock: trio.testing.MockClock
) -> None:
    notifier = SystemdNotifier.from_environ()
    start = trio.current_time()
    async with trio.open_nursery() as nursery:
        await nursery.start(run_watchdog, notifier)
    assert trio.current_time() == start
    assert received(listener) == []


# -- the unit file ------------------------------------------------------------------------


def parse_unit(text: str) -> dict[str, dict[str, list[str]]]:
    """A systemd unit file: sections of keys, each with every value given (keys may repeat)."""
    sections: dict[str, dict[str, list[str]]] = {}
    current: dict[str, list[str]] | None = None
    pending = ""
    for raw in text.splitlines():
        line = pending + raw.strip()
        pending = ""
        if not line or line.startswith(("#", ";")):
            continue
        if line.endswith("\\"):
            pending = line[:-1] + " "
            continue
        if line.startswith("["):
            assert line.endswith("]"), line
            current = sections.setdefault(line[1:-1], {})
            continue
        assert current is not None, f"{line!r} outside a section"
        key, sep, value = line.partition("=")
        assert sep, f"not key=value: {line!r}"
        current.setdefault(key.strip(), []).append(value.strip())
    return sections


def test_unit_file() -> None:
    unit = parse_unit(UNIT.read_text())
    assert set(unit) == {"Unit", "Service", "Install"}
    service = {key: values[-1] for key, values in unit["Service"].items()}
    expected = {
        "Type": "notify",
        "NotifyAccess": "main",
        "ExecReload": "/bin/kill -HUP $MAINPID",
        "WatchdogSec": "30",
        "Restart": "on-failure",
        "KillMode": "process",
        "User": "pysched",
        "Group": "pysched",
        "NoNewPrivileges": "yes",
        "ProtectSystem": "strict",
        "ProtectHome": "read-only",
        "PrivateTmp": "no",
    }
    assert {key: service.get(key) for key in expected} == expected
    command = service["ExecStart"].split()
    assert command[0].endswith("/bin/pysched")
    assert command[1] == "serve"
    assert command[-1] == "/etc/pysched/pysched.yaml"
    assert "--log-format" in command
    assert "TimeoutStopSec" in service
    assert set(service["ReadWritePaths"].split()) == {"/var/lib/pysched", "/var/log/pysched"}
    assert unit["Install"]["WantedBy"] == ["multi-user.target"]
