"""The minder host: one pre-warmed process forking a minder per attempt, and what happens when
it dies at the worst moment."""

from __future__ import annotations

import json
import os
import signal
import time
from datetime import UTC, date, datetime
from pathlib import Path

import pytest
import trio

from pysched.config import parse_config
from pysched.engine import open_engine
from pysched.launch import host as host_program
from pysched.launch.base import AttemptSpec, ExitStatus
from pysched.launch.host_link import HostGone, MinderHost
from pysched.launch.local import LocalAttempt, LocalLauncher, _Paths
from pysched.store import MemoryStore
from pysched.timing.clock import RealClock


def make_spec(script: str, *, n: int = 1) -> AttemptSpec:
    return AttemptSpec(
        run_id=f"job.2026-10-19.{n}",
        job="job",
        run_date=date(2026, 10, 19),
        attempt=1,
        argv=("/bin/sh", "-c", script),
        scheduled_for=datetime(2026, 10, 19, 9, tzinfo=UTC),
    )


@pytest.fixture
def launcher(tmp_path):
    launcher = LocalLauncher(
        tmp_path / "logs", base_env={"PATH": os.environ["PATH"]}, minder_host=True
    )
    yield launcher
    launcher.close()


def host_of(launcher: LocalLauncher) -> MinderHost:
    assert launcher.minder_host is not None
    return launcher.minder_host


def parent_of(pid: int) -> int:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat[stat.rfind(")") + 2 :].split()[1])


def gone(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat[stat.rfind(")") + 2 :].split()[0] in ("Z", "X")


async def eventually(check, timeout: float = 5.0) -> None:
    with trio.fail_after(timeout):
        while not check():
            await trio.sleep(0.01)


async def test_one_host_forks_every_minder(launcher):
    handles, hosts = [], set()
    for n in range(3):
        handle = await launcher.start(make_spec("sleep 1", n=n))
        hosts.add(host_of(launcher).pid)
        assert parent_of(handle.info["minder_pid"]) in hosts
        handles.append(handle)
    for handle in handles:
        assert (await handle.wait()).exit_code == 0
    assert len(hosts) == 1 and None not in hosts


async def test_ended_minders_leave_no_zombie(launcher):
    handle = await launcher.start(make_spec("exit 0"))
    assert (await handle.wait()).exit_code == 0
    await eventually(lambda: not Path(f"/proc/{handle.info['minder_pid']}").exists())


async def test_a_minder_outlives_its_host_and_a_new_host_takes_over(launcher):
    handle = await launcher.start(make_spec("sleep 0.5; exit 3"))
    old = host_of(launcher).pid
    assert old is not None
    os.kill(old, signal.SIGKILL)
    with trio.fail_after(10):
        assert (await handle.wait()).exit_code == 3
        again = await launcher.start(make_spec("exit 0", n=2))
        assert (await again.wait()).exit_code == 0
    assert host_of(launcher).pid not in (None, old)


async def test_the_host_ends_when_the_launcher_lets_it_go(launcher):
    await (await launcher.start(make_spec("exit 0"))).wait()
    pid = host_of(launcher).pid
    assert pid is not None
    launcher.close()
    await eventually(lambda: gone(pid))


async def test_a_host_that_cannot_start_fails_the_start(tmp_path):
    launcher = LocalLauncher(tmp_path / "logs", python="/no/such/python", minder_host=True)
    with pytest.raises(OSError):
        await launcher.start(make_spec("exit 0"))
    assert not _Paths.of(launcher.log_dir, make_spec("exit 0")).spawned.exists()


async def test_prepare_starts_the_host_before_any_attempt(launcher):
    assert host_of(launcher).pid is None  # started lazily...
    await launcher.prepare()
    pid = host_of(launcher).pid
    assert pid is not None and not gone(pid)  # ...or as the engine opens
    handle = await launcher.start(make_spec("sleep 0.5"))
    assert parent_of(handle.info["minder_pid"]) == pid  # the same host forks the minder
    assert (await handle.wait()).exit_code == 0


async def test_a_minder_has_its_own_group_in_the_hosts_session_and_its_command_a_session(
    launcher,
):
    """A signal to the host's group never reaches a minder; the kernel's per-session CPU
    fairness (autogroup) counts the minders as one with their host; the command is a session
    of its own, as the issue asks."""
    spec = make_spec("sleep 0.5")
    handle = await launcher.start(spec)
    minder_pid = handle.info["minder_pid"]
    marker = _Paths.of(launcher.log_dir, spec).spawned
    await eventually(lambda: marker.exists() and marker.stat().st_size > 0)
    command = json.loads(marker.read_text())["pid"]
    host = host_of(launcher).pid
    assert (os.getpgid(minder_pid), os.getsid(minder_pid)) == (minder_pid, host)
    assert (os.getpgid(command), os.getsid(command)) == (command, command)
    assert (await handle.wait()).exit_code == 0


async def test_prepare_with_a_host_that_cannot_start_only_logs(tmp_path, caplog):
    launcher = LocalLauncher(tmp_path / "logs", python="/no/such/python", minder_host=True)
    await launcher.prepare()  # never raises: the first start reports it
    assert "the minder host could not start yet" in caplog.text
    with pytest.raises(OSError):
        await launcher.start(make_spec("exit 0"))


async def test_a_host_killed_while_starting_is_replaced(launcher, monkeypatch, tmp_path):
    # killed before it said "ready" (nothing asked of it yet): a new host is started at once,
    # and the attempt starts, rather than failing as "could not start"
    from pysched.launch import host_link

    flag = tmp_path / "killed-once"
    boot = (
        f"import os,pathlib,signal;f=pathlib.Path({str(flag)!r})\n"
        "if not f.exists(): f.touch(); os.kill(os.getpid(), signal.SIGKILL)\n"
        + host_link._HOST_BOOT
    )
    monkeypatch.setattr(host_link, "_HOST_BOOT", boot)
    handle = await launcher.start(make_spec("echo once"))
    assert flag.exists()
    assert (await handle.wait()).exit_code == 0


async def test_host_gone_before_forking_is_asked_again(launcher, monkeypatch):
    # The host died before it touched the marker: nothing exists, so a new host is asked.
    real = MinderHost.spawn
    calls: list[int] = []

    async def dies_once(self, job, marker):
        calls.append(1)
        if len(calls) == 1:
            raise HostGone("the minder host ended before answering")
        return await real(self, job, marker)

    monkeypatch.setattr(MinderHost, "spawn", dies_once)
    handle = await launcher.start(make_spec("echo once"))
    assert (await handle.wait()).exit_code == 0
    assert len(calls) == 2
    folder = launcher.log_dir / "job" / "2026-10-19"
    assert (folder / "job.2026-10-19.1.1.out").read_text() == "once\n"


async def test_host_gone_after_forking_adopts_the_minder(launcher, monkeypatch):
    # The host forked the minder, then died before answering: the minder is found by its
    # started file and adopted, never started a second time.
    real = MinderHost.spawn

    async def forks_then_dies(self, job, marker):
        await real(self, job, marker)
        raise HostGone("the minder host ended before answering")

    monkeypatch.setattr(MinderHost, "spawn", forks_then_dies)
    handle = await launcher.start(make_spec("sleep 0.2; echo once; exit 6"))
    assert isinstance(handle, LocalAttempt)
    with trio.fail_after(10):
        assert (await handle.wait()).exit_code == 6
    folder = launcher.log_dir / "job" / "2026-10-19"
    assert (folder / "job.2026-10-19.1.1.out").read_text() == "once\n"


async def test_host_gone_after_the_marker_but_before_the_fork_fails_the_start(
    launcher, monkeypatch
):
    async def marks_then_dies(self, job, marker):
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.touch()
        raise HostGone("the minder host ended before answering")

    monkeypatch.setattr(MinderHost, "spawn", marks_then_dies)
    spec = make_spec("echo never")
    with trio.fail_after(10):
        status = await (await launcher.start(spec)).wait()
    assert (status.exit_code, status.signal) == (None, None)  # the engine: start_failed
    assert "host" in status.message
    assert not (launcher.log_dir / "job" / "2026-10-19" / "job.2026-10-19.1.1.out").exists()


async def test_killing_the_host_mid_burst_starts_nothing_twice(launcher):
    statuses: dict[int, ExitStatus] = {}

    async def one(n: int) -> None:
        try:
            handle = await launcher.start(make_spec(f"echo {n}", n=n))
        except OSError as exc:
            statuses[n] = ExitStatus(message=str(exc))
            return
        statuses[n] = await handle.wait()

    async def killer() -> None:
        await eventually(lambda: host_of(launcher).pid is not None)
        folder = launcher.log_dir / "job" / "2026-10-19"
        await eventually(
            lambda: folder.exists() and any(p.stat().st_size for p in folder.glob("*.spawned"))
        )
        pid = host_of(launcher).pid
        if pid is not None:
            os.kill(pid, signal.SIGKILL)

    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(killer)
            for n in range(40):
                nursery.start_soon(one, n)
    assert sorted(statuses) == list(range(40))
    folder = launcher.log_dir / "job" / "2026-10-19"
    for n, status in statuses.items():
        out = folder / f"job.2026-10-19.{n}.1.out"
        if status.exit_code == 0:
            assert out.read_text() == f"{n}\n"  # ran exactly once
        else:
            assert (status.exit_code, status.signal) == (None, None)
            assert not out.exists() or out.read_text() == ""


def test_an_orphaned_host_forks_nothing_and_takes_its_marker_back(tmp_path):
    marker = tmp_path / "job" / "x.spawned"
    job = {"argv": ["/bin/true"], "env": {}, "cwd": None}  # never used: no fork happens
    with pytest.raises(host_program._Orphaned):
        host_program.spawn(job, str(marker), parent=-1)  # not our parent: the scheduler died
    assert not marker.exists()


def test_the_host_answers_in_order_and_exits_at_the_end_of_its_input(tmp_path):
    # The protocol, driven by hand: two requests, two answers, then EOF ends the host.
    import marshal
    import subprocess
    import sys

    from pysched.launch.host_link import _HOST_BOOT

    process = subprocess.Popen(
        [sys.executable, "-I", "-S", "-c", _HOST_BOOT],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        start_new_session=True,
    )
    assert process.stdin is not None and process.stdout is not None
    assert process.stdout.readline().startswith(b"ready ")
    folder = tmp_path / "logs"
    for request_id in (7, 8):
        stem = folder / f"a{request_id}"
        job = {
            "argv": ["/bin/true"],
            "env": {},
            "cwd": None,
            "stdout": f"{stem}.out",
            "stderr": f"{stem}.err",
            "started": f"{stem}.started.json",
            "note": f"{stem}.note.json",
        }
        body = marshal.dumps((request_id, job, f"{stem}.spawned"))
        process.stdin.write(len(body).to_bytes(4, "big") + body)
    process.stdin.flush()
    answers = [process.stdout.readline().split() for _ in range(2)]
    assert [int(a[0]) for a in answers] == [7, 8]
    assert all(int(a[1]) > 0 for a in answers)
    process.stdin.close()
    assert process.wait(timeout=10) == 0
    deadline = time.monotonic() + 5
    while not (folder / "a8.note.json").exists():
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert (folder / "a7.spawned").exists()


def _hanging_python(tmp_path: Path) -> str:
    """A "python" that never says it is ready (an embedding binary, say)."""
    script = tmp_path / "python"
    script.write_text("#!/bin/sh\nexec sleep 60\n")
    script.chmod(0o755)
    return str(script)


async def test_a_host_that_never_says_ready_is_killed_after_the_timeout(tmp_path, monkeypatch):
    monkeypatch.setattr("pysched.launch.host_link.READY_TIMEOUT", 0.3)
    launcher = LocalLauncher(tmp_path / "logs", python=_hanging_python(tmp_path), minder_host=True)
    with (
        trio.fail_after(10),
        pytest.raises(OSError, match=r"did not say it was ready within 0\.3 s"),
    ):
        await launcher.start(make_spec("exit 0"))
    assert host_of(launcher).pid is None


async def test_an_engine_closes_at_once_while_its_host_hangs_starting(tmp_path):
    """prepare runs as the engine opens; a host that hangs must not hold the engine's close."""
    text = 'jobs:\n  a: {schedule: "0 1 1 1 *", command: x}\n'
    config = parse_config(text, tmp_path / "c.yaml", {})
    launcher = LocalLauncher(tmp_path / "logs", python=_hanging_python(tmp_path), minder_host=True)
    started = time.monotonic()
    with trio.fail_after(10):
        async with open_engine(config, MemoryStore(), clock=RealClock(), launcher=launcher):
            await trio.sleep(0.2)
    assert time.monotonic() - started < 5
