"""The local launcher with real minders and real processes, both ways of making a minder:
forked by the minder host (the default) and a fresh interpreter per attempt ("direct")."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest
import trio

from pysched.launch.base import NOT_STARTED, AttemptSpec, ExitStatus
from pysched.launch.local import LocalAttempt, LocalLauncher, _Paths

SECRET = "s3cret-value-71ab"


def make_spec(script: str | None = None, *, n: int = 1, attempt: int = 1, **kw) -> AttemptSpec:
    argv = kw.pop("argv", ("/bin/sh", "-c", script))
    return AttemptSpec(
        run_id=f"job.2026-10-19.{n}",
        job="job",
        run_date=date(2026, 10, 19),
        attempt=attempt,
        argv=argv,
        scheduled_for=datetime(2026, 10, 19, 9, tzinfo=UTC),
        **kw,
    )


@pytest.fixture(params=["host", "direct"])
def launcher(request, tmp_path):
    launcher = LocalLauncher(
        tmp_path / "logs",
        base_env={"PATH": os.environ["PATH"]},
        minder_host=request.param == "host",
    )
    yield launcher
    launcher.close()


@pytest.fixture
def direct(tmp_path):
    return LocalLauncher(
        tmp_path / "logs", base_env={"PATH": os.environ["PATH"]}, minder_host=False
    )


def out_of(launcher: LocalLauncher, spec: AttemptSpec) -> str:
    folder = launcher.log_dir / spec.job / spec.run_date.isoformat()
    return (folder / f"{spec.run_id}.{spec.attempt}.out").read_text()


def out_so_far(launcher: LocalLauncher, spec: AttemptSpec) -> str:
    """The attempt's output so far ("" before the minder has made the file)."""
    try:
        return out_of(launcher, spec)
    except FileNotFoundError:
        return ""


def minder_alive(info) -> bool:
    try:
        os.kill(info["minder_pid"], 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{info['minder_pid']}/stat").read_text()
    return stat[stat.rfind(")") + 2 :].split()[0] != "Z"


@pytest.mark.parametrize(
    ("script", "code", "sig"),
    [("exit 0", 0, None), ("exit 3", 3, None), ("kill -TERM $$", None, 15)],
    ids=["success", "failure", "signal"],
)
async def test_start_and_wait(launcher, script, code, sig):
    handle = await launcher.start(make_spec(script))
    assert set(handle.info) == {"minder_pid", "minder_start", "boot_id", "note"}
    assert handle.info["boot_id"] == Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    status = await handle.wait()
    assert (status.exit_code, status.signal) == (code, sig)
    assert status.succeeded == (code == 0)
    assert status.ended_at is not None
    assert status.message
    assert await handle.wait() == status  # a second wait answers at once


async def test_env_and_cwd_reach_the_command(launcher, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    spec = make_spec(
        'echo "$PYSCHED_RUN_ID $TOKEN"; pwd',
        env={"PYSCHED_RUN_ID": "job.2026-10-19.1", "TOKEN": SECRET},
        cwd=work,
    )
    status = await (await launcher.start(spec)).wait()
    assert status.exit_code == 0
    assert out_of(launcher, spec) == f"job.2026-10-19.1 {SECRET}\n{work}\n"
    folder = launcher.log_dir / "job" / "2026-10-19"
    for name in ("job.2026-10-19.1.1.note.json", "job.2026-10-19.1.1.spawned"):
        assert SECRET not in (folder / name).read_text()


async def test_log_files_are_not_for_other_users(launcher):
    """A job's output may hold anything: its files are 0640 and every folder the launcher
    makes 0750 (with the usual umask 022; ``log_dir`` and the job's folder too, so other users
    cannot list the jobs and their runs), never readable by every user of the machine."""
    previous = os.umask(0o022)
    try:
        spec = make_spec("echo out; echo err >&2")
        assert (await (await launcher.start(spec)).wait()).exit_code == 0
    finally:
        os.umask(previous)
    folder = launcher.log_dir / "job" / "2026-10-19"
    for made in (launcher.log_dir, folder.parent, folder):
        assert stat.S_IMODE(made.stat().st_mode) == 0o750, made
    files = sorted(folder.iterdir())
    assert {path.name.split(".", 4)[-1] for path in files} >= {"out", "err", "note.json", "spawned"}
    assert {path.name: stat.S_IMODE(path.stat().st_mode) for path in files} == {
        path.name: 0o640 for path in files
    }


async def test_secrets_stay_off_the_minders_command_line(launcher):
    handle = await launcher.start(make_spec("sleep 0.2", env={"TOKEN": SECRET}))
    cmdline = Path(f"/proc/{handle.info['minder_pid']}/cmdline").read_bytes()
    assert SECRET.encode() not in cmdline
    assert (await handle.wait()).exit_code == 0


async def test_a_missing_program_ends_with_a_message(launcher):
    status = await (await launcher.start(make_spec(argv=("/no/such/program",)))).wait()
    assert (status.exit_code, status.signal) == (None, None)
    assert not status.succeeded
    assert "cannot start" in status.message


async def test_the_command_inherits_no_ignored_signal_no_stray_fd_and_no_input(launcher):
    """Both ways of making a minder hand the command the same clean process: no signal
    ignored or blocked, no descriptor but its three standard ones, /dev/null to read."""
    script = "grep -E '^Sig(Ign|Blk)' /proc/self/status; ls /proc/self/fd; cat; echo end"
    spec = make_spec(script)
    assert (await (await launcher.start(spec)).wait()).exit_code == 0
    lines = out_of(launcher, spec).split()
    assert lines[:4] == ["SigBlk:", "0000000000000000", "SigIgn:", "0000000000000000"]
    assert sorted(lines[4:-1]) == ["0", "1", "2", "3"]  # 3 is ls's own listing of the folder
    assert lines[-1] == "end"  # `cat` read the end of /dev/null at once


async def test_a_program_is_looked_up_on_the_jobs_path(launcher, tmp_path):
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "hello-tool").write_text("#!/bin/sh\necho hello from $0\n")
    (tools / "hello-tool").chmod(0o755)
    spec = make_spec(argv=("hello-tool",), env={"PATH": f"{tools}:/usr/bin:/bin"})
    assert (await (await launcher.start(spec)).wait()).exit_code == 0
    assert out_of(launcher, spec) == f"hello from {tools / 'hello-tool'}\n"


async def test_a_missing_folder_ends_with_a_message_naming_it(launcher, tmp_path):
    spec = make_spec("true", cwd=tmp_path / "no-such-folder")
    status = await (await launcher.start(spec)).wait()
    assert (status.exit_code, status.signal) == (None, None)
    assert "cannot start" in status.message
    assert "no-such-folder" in status.message
    assert "No such file or directory" in status.message


async def test_kill_sends_sigterm_to_the_group(launcher):
    handle = await launcher.start(make_spec("sleep 30"))
    with trio.fail_after(5):
        await handle.kill(timedelta(seconds=5))
        status = await handle.wait()
    assert status.signal == signal.SIGTERM


async def test_kill_escalates_to_sigkill_after_the_grace(launcher):
    spec = make_spec("trap '' TERM; echo ready; sleep 30")
    handle = await launcher.start(spec)
    with trio.fail_after(5):  # the kill must come after the trap, or SIGTERM does it
        while "ready" not in await trio.to_thread.run_sync(out_so_far, launcher, spec):
            await trio.sleep(0.01)
    begun = trio.current_time()
    with trio.fail_after(5):
        await handle.kill(timedelta(seconds=0.3))
        status = await handle.wait()
    assert status.signal == signal.SIGKILL
    assert trio.current_time() - begun >= 0.3


async def test_kill_reaches_children_that_outlive_the_command(launcher, tmp_path):
    """``sh -c script``: the shell dies of SIGTERM at once, the script it started ignores it
    and carries on. The attempt has ended; the grace goes on for the group, then SIGKILL."""
    script = tmp_path / "stubborn.sh"
    ready = tmp_path / "ready"
    script.write_text(f"trap '' TERM\ntouch {ready}\nwhile :; do sleep 0.05; done\n")
    handle = await launcher.start(make_spec(f"/bin/sh {script}; echo after"))
    marker = launcher.log_dir / "job" / "2026-10-19" / "job.2026-10-19.1.1.spawned"
    with trio.fail_after(5):
        # the script ignores SIGTERM only once its trap is set (a loaded machine may take
        # a while to get there; a SIGTERM before that would rightly end it at once)
        while not marker.stat().st_size or not ready.exists():
            await trio.sleep(0.01)
    pgid = json.loads(marker.read_text())["pgid"]
    begun = trio.current_time()
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(handle.kill, timedelta(seconds=0.5))
            status = await handle.wait()
            assert status.signal == signal.SIGTERM  # the shell, at once
            assert trio.current_time() - begun < 0.5
        # the kill returned: SIGKILL has gone to what was left, after the grace
    assert trio.current_time() - begun >= 0.5
    with trio.fail_after(5):
        while True:
            try:
                os.killpg(pgid, 0)
            except ProcessLookupError:
                break
            await trio.sleep(0.05)


async def test_kill_after_the_end_does_nothing(launcher):
    handle = await launcher.start(make_spec("exit 0"))
    status = await handle.wait()
    await handle.kill(timedelta(seconds=1))
    assert await handle.wait() == status


async def run_burst(launcher, count: int) -> dict[int, ExitStatus]:
    """``count`` attempts (``echo n``) started at once; how each ended."""
    results: dict[int, ExitStatus] = {}

    async def one(n: int) -> None:
        handle = await launcher.start(make_spec(f"echo {n}", n=n))
        results[n] = await handle.wait()

    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            for n in range(count):
                nursery.start_soon(one, n)
    return results


async def test_fifty_concurrent_starts_all_succeed(launcher):
    results = await run_burst(launcher, 50)
    assert sorted(results) == list(range(50))
    assert all(status.exit_code == 0 for status in results.values())
    assert out_of(launcher, make_spec("", n=17)) == "17\n"


async def test_direct_spawns_of_a_burst_share_worker_threads(direct, monkeypatch):
    launcher = direct
    batches: list[int] = []
    spawn_all = launcher._spawn_all

    def counting(batch):
        batches.append(len(batch))
        spawn_all(batch)

    monkeypatch.setattr(launcher, "_spawn_all", counting)
    results = await run_burst(launcher, 50)
    assert sorted(results) == list(range(50))
    assert all(status.exit_code == 0 for status in results.values())
    assert sum(batches) == 50
    assert len(batches) < 50  # bursts share worker threads
    assert out_of(launcher, make_spec("", n=17)) == "17\n"


async def test_cancelled_wait_leaves_it_running_and_recover_adopts_it(launcher, tmp_path):
    spec = make_spec("sleep 0.5; exit 7")
    handle = await launcher.start(spec)
    with trio.move_on_after(0.05):
        await handle.wait()
    assert minder_alive(handle.info)
    # A new launcher, as after a restart.
    found = await LocalLauncher(tmp_path / "logs").recover(spec, dict(handle.info))
    assert isinstance(found, LocalAttempt)
    with trio.fail_after(5):
        status = await found.wait()
    assert status.exit_code == 7
    assert status.ended_at is not None


async def test_recover_adopts_from_the_marker_when_info_is_missing(launcher, tmp_path):
    spec = make_spec("sleep 0.3; exit 2")
    handle = await launcher.start(spec)
    marker = launcher.log_dir / "job" / "2026-10-19" / "job.2026-10-19.1.1.spawned"
    with trio.fail_after(5):
        while not marker.stat().st_size:  # the minder has not said what it started yet
            await trio.sleep(0.01)
    found = await LocalLauncher(tmp_path / "logs").recover(spec, {})
    assert isinstance(found, LocalAttempt)
    assert found.info["minder_pid"] == handle.info["minder_pid"]
    with trio.fail_after(5):
        assert (await found.wait()).exit_code == 2


async def test_recover_after_the_end_reads_the_note(launcher, tmp_path):
    spec = make_spec("exit 5")
    handle = await launcher.start(spec)
    ended = await handle.wait()
    again = LocalLauncher(tmp_path / "logs")
    for info in (dict(handle.info), {}):
        found = await again.recover(spec, info)
        assert isinstance(found, ExitStatus)
        assert (found.exit_code, found.ended_at) == (5, ended.ended_at)


async def test_recover_with_nothing_spawned_is_not_started(launcher):
    assert await launcher.recover(make_spec("exit 0"), {}) is NOT_STARTED


async def test_recover_spawned_but_gone_is_none(launcher):
    spec = make_spec("exit 0")
    marker = _Paths.of(launcher.log_dir, spec).spawned
    marker.parent.mkdir(parents=True)
    marker.touch()  # a minder was spawned, and said nothing, left no note: it vanished
    with trio.fail_after(10):
        assert await launcher.recover(spec, {}) is None


async def test_a_reused_pid_is_not_taken_for_the_minder(launcher, tmp_path):
    # A live process (this one) whose start time does not match the minder's.
    me = Path("/proc/self/stat").read_text()
    start = int(me[me.rfind(")") + 2 :].split()[19])
    info = {
        "minder_pid": os.getpid(),
        "minder_start": start + 1,
        "note": str(tmp_path / "x.note.json"),
    }
    spec = make_spec("exit 0")
    marker = _Paths.of(launcher.log_dir, spec).spawned
    marker.parent.mkdir(parents=True)
    marker.touch()
    with trio.fail_after(10):
        assert await launcher.recover(spec, info) is None


async def test_a_minder_of_another_boot_is_not_taken_for_a_live_one(launcher, tmp_path):
    # This process, with its real pid and start time: only the boot differs. After a reboot
    # pids and start times (ticks since boot) come round again, so they must not count.
    me = Path("/proc/self/stat").read_text()
    start = int(me[me.rfind(")") + 2 :].split()[19])
    mine = {"minder_pid": os.getpid(), "minder_start": start}
    spec = make_spec("exit 0")
    marker = _Paths.of(launcher.log_dir, spec).spawned
    marker.parent.mkdir(parents=True)
    marker.write_text(json.dumps({**mine, "pid": os.getpid(), "pgid": os.getpid(), "boot_id": "x"}))
    with trio.fail_after(10):
        assert await launcher.recover(spec, {**mine, "boot_id": "an-earlier-boot"}) is None
        assert isinstance(await launcher.recover(spec, mine), LocalAttempt)  # as said: adopted
        marker.write_text(json.dumps({**mine, "pid": os.getpid(), "pgid": os.getpid()}))
        assert isinstance(await launcher.recover(spec, {}), LocalAttempt)


# -- a minder that dies under its command -------------------------------------------------


async def _kill_minder_once_started(launcher: LocalLauncher, spec: AttemptSpec) -> dict:
    """SIGKILL the attempt's minder once it has said what it started; the marker's content."""
    marker = _Paths.of(launcher.log_dir, spec).spawned
    with trio.fail_after(5):
        while not marker.exists() or not marker.stat().st_size:
            await trio.sleep(0.01)
    started = json.loads(marker.read_text())
    os.kill(started["minder_pid"], signal.SIGKILL)
    return started


def _pid_alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat[stat.rfind(")") + 2 :].split()[0] not in ("Z", "X")


async def test_a_command_outliving_its_minder_is_waited_for_and_lost(launcher, tmp_path):
    done = tmp_path / "done"
    spec = make_spec(f"sleep 1; echo ok > {done}")
    handle = await launcher.start(spec)
    started = await _kill_minder_once_started(launcher, spec)
    with trio.fail_after(10):
        status = await handle.wait()
    # not "could not start", and not over before the command is: a retry never runs beside it
    assert done.exists()
    assert status.lost and (status.exit_code, status.signal) == (None, None)
    assert f"pid {started['pid']}" in status.message and "unknown" in status.message


async def test_a_kill_reaches_a_command_whose_minder_died(launcher):
    spec = make_spec("sleep 30")
    handle = await launcher.start(spec)
    started = await _kill_minder_once_started(launcher, spec)
    with trio.fail_after(10):
        await handle.kill(timedelta(seconds=2))
        status = await handle.wait()
    assert status.lost
    assert not _pid_alive(started["pid"])


async def test_recover_watches_a_command_whose_minder_died(launcher, tmp_path):
    done = tmp_path / "done"
    spec = make_spec(f"sleep 1; echo ok > {done}")
    handle = await launcher.start(spec)
    with trio.move_on_after(0.05):
        await handle.wait()  # the scheduler stops watching (it is being restarted)
    await _kill_minder_once_started(launcher, spec)
    found = await LocalLauncher(tmp_path / "logs").recover(spec, dict(handle.info))
    assert isinstance(found, LocalAttempt)  # not None ("vanished"): it still runs
    with trio.fail_after(10):
        status = await found.wait()
    assert done.exists() and status.lost


_AS_SUBREAPER = """
import ctypes, json, os, signal, sys
from datetime import UTC, date, datetime
from pathlib import Path

import trio

from pysched.launch.base import AttemptSpec
from pysched.launch.local import LocalLauncher, _Paths

# PR_SET_CHILD_SUBREAPER: orphans below this process come to it, as to a container's PID 1
assert ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0) == 0


async def main() -> None:
    logs, way = Path(sys.argv[1]), sys.argv[2]
    launcher = LocalLauncher(logs, base_env={"PATH": os.environ["PATH"]}, minder_host=way == "host")
    spec = AttemptSpec(
        run_id="job.2026-10-19.1", job="job", run_date=date(2026, 10, 19), attempt=1,
        argv=("/bin/sh", "-c", "sleep 0.5; exit 3"),
        scheduled_for=datetime(2026, 10, 19, 9, tzinfo=UTC),
    )
    handle = await launcher.start(spec)
    marker = _Paths.of(logs, spec).spawned
    while not marker.exists() or not marker.stat().st_size:
        await trio.sleep(0.01)
    started = json.loads(marker.read_text())
    os.kill(started["minder_pid"], signal.SIGKILL)
    status = await handle.wait()
    launcher.close()
    print(json.dumps({
        "exit_code": status.exit_code, "signal": status.signal, "lost": status.lost,
        "message": status.message, "left": Path(f"/proc/{started['pid']}").exists(),
    }))


trio.run(main)
"""


@pytest.mark.parametrize("way", ["host", "direct"])
def test_pysched_as_the_orphans_parent_reaps_it_and_knows_how_it_ended(tmp_path, way):
    """In a container pysched is often PID 1, and an orphaned command (its minder killed) is
    handed to it: pysched reaps it, so no zombie is left, and reports its real exit code
    rather than ``lost``. A subreaper stands in for PID 1 here."""
    done = subprocess.run(
        [sys.executable, "-c", _AS_SUBREAPER, str(tmp_path / "logs"), way],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert (found["exit_code"], found["signal"], found["lost"]) == (3, None, False)
    assert "saw it exit with 3" in found["message"]
    assert not found["left"]  # reaped: no zombie
