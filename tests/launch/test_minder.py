"""The minder on its own: ``python -I -S minder.py -`` as the launcher runs it without a host,
and the native minder (``minder.c``, built once for the run) with the job laid out as the host
lays it out, in both its builds: freestanding (what x86-64 machines get) and with the C
library (what others get). The tests of what a minder does run against all three
(``kind``)."""

from __future__ import annotations

import functools
import json
import marshal
import os
import signal
import stat
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import pytest

from pysched.launch import host, minder
from pysched.launch.native_minder import (
    BUILDS,
    LIBRARY_BUILDS,
    NativeMinder,
    cache_dir_for,
    find_compiler,
    native_minder,
)

SECRET = "s3cret-value-9f2c"


NATIVE_KINDS = {"native": BUILDS, "native-libc": LIBRARY_BUILDS}
"""The native minder's builds under test: as built here (freestanding on x86-64), and with
the C library."""


@functools.cache
def built_once(kind: str = "native") -> NativeMinder | None:
    """The suite's native minder of ``kind``, found (or built) and checked once for the run."""
    return native_minder(cache_dir_for(), NATIVE_KINDS[kind])


def require_native_minder(kind: str = "native") -> None:
    """Skip the test where the native minder cannot be built here (no compiler, no C library
    headers), saying why; with ``PYSCHED_REQUIRE_NATIVE_MINDER=1`` (CI), fail instead."""
    if built_once(kind) is not None:
        return
    why = "no C compiler" if find_compiler() is None else "its build failed (see the log)"
    if os.environ.get("PYSCHED_REQUIRE_NATIVE_MINDER") == "1":
        pytest.fail(f"the native minder cannot be built here: {why}")
    pytest.skip(f"the native minder cannot be built here: {why}")


@pytest.fixture(scope="session")
def native_program() -> Path:
    require_native_minder()
    built = built_once()
    assert built is not None
    return built.path


def spawn_native(job: dict[str, object], kind: str = "native") -> int:
    """Start the native minder for ``job`` as the host does; wait for it; its exit status."""
    built = built_once(kind)
    assert built is not None
    request = host.native_job(job)
    assert request is not None
    fd = host.open_native(str(built.path), built.device, built.inode)
    assert fd is not None
    try:
        pid = host._spawn_native(fd, request)
    finally:
        os.close(fd)
    return os.waitpid(pid, 0)[1]


@pytest.fixture(params=["python", *NATIVE_KINDS])
def kind(request: pytest.FixtureRequest) -> str:
    if request.param in NATIVE_KINDS:
        require_native_minder(request.param)
    return request.param


def job_for(tmp_path: Path, argv: list[str], **extra: object) -> dict[str, object]:
    folder = tmp_path / "logs" / "job" / "2026-10-19"  # the minder creates it
    stem = "job.2026-10-19.1.1"
    job: dict[str, object] = {
        "argv": argv,
        "env": {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "TOKEN": SECRET},
        "cwd": None,
        "stdout": str(folder / f"{stem}.out"),
        "stderr": str(folder / f"{stem}.err"),
        "started": str(folder / f"{stem}.spawned"),  # the launcher points it at the marker
        "note": str(folder / f"{stem}.note.json"),
    }
    job.update(extra)
    return job


def minder_argv(kind: str = "python") -> list[str]:
    if kind in NATIVE_KINDS:
        built = built_once(kind)
        assert built is not None
        return [str(built.path)]
    return [sys.executable, "-I", "-S", str(Path(minder.__file__)), "-"]


def encoded(job: dict[str, object], kind: str = "python") -> bytes:
    if kind in NATIVE_KINDS:
        request = host.native_job(job)
        assert request is not None, "the host would fork a Python minder for this job"
        return request
    return marshal.dumps(job)


def run_minder(job: dict[str, object], kind: str = "python") -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        minder_argv(kind), input=encoded(job, kind), capture_output=True, timeout=10
    )


def read(job: dict[str, object], key: str) -> dict[str, object]:
    return json.loads(Path(str(job[key])).read_text())


@pytest.mark.parametrize(
    ("script", "code", "sig"),
    [("exit 0", 0, None), ("exit 3", 3, None), ("kill -KILL $$", None, 9)],
    ids=["success", "failure", "signal"],
)
def test_note_records_how_the_command_ended(tmp_path, kind, script, code, sig):
    job = job_for(tmp_path, ["/bin/sh", "-c", script])
    done = run_minder(job, kind)
    assert done.returncode == 0
    assert (done.stdout, done.stderr) == (b"", b"")
    note = read(job, "note")
    assert (note["exit_code"], note["signal"], note["error"]) == (code, sig, None)
    started = read(job, "started")
    assert note["pid"] == started["pid"] == started["pgid"]
    assert note["minder_pid"] == started["minder_pid"]
    assert isinstance(started["minder_start"], int)
    assert isinstance(started["pid_start"], int)
    assert started["boot_id"] == Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    begun = datetime.fromisoformat(str(note["started_at"]))
    ended = datetime.fromisoformat(str(note["ended_at"]))
    assert begun.utcoffset() is not None
    assert begun <= ended
    # Atomic writes leave no temp files behind.
    assert not [p for p in Path(str(job["note"])).parent.iterdir() if p.name.endswith(".tmp")]


def test_output_lands_in_the_files_and_env_and_cwd_reach_the_command(tmp_path, kind):
    work = tmp_path / "work"
    work.mkdir()
    job = job_for(
        tmp_path, ["/bin/sh", "-c", 'echo "out $TOKEN"; pwd; echo oops >&2'], cwd=str(work)
    )
    run_minder(job, kind)
    assert Path(str(job["stdout"])).read_text() == f"out {SECRET}\n{work}\n"
    assert Path(str(job["stderr"])).read_text() == "oops\n"


def test_secrets_never_reach_the_note_the_started_file_or_the_minders_output(tmp_path, kind):
    job = job_for(tmp_path, ["/bin/sh", "-c", "exit 1"])
    done = run_minder(job, kind)
    for key in ("note", "started"):
        assert SECRET not in Path(str(job[key])).read_text()
    assert SECRET.encode() not in done.stdout + done.stderr


@pytest.mark.parametrize("where", ["program", "on-path", "not-executable", "cwd"])
def test_a_command_that_cannot_start_gets_a_note_with_the_error(tmp_path, kind, where):
    plain = tmp_path / "plain.txt"
    plain.write_text("not a program\n")
    missing = tmp_path / "missing"
    job, error = {
        "program": (
            job_for(tmp_path, ["/no/such/program"]),
            "cannot start '/no/such/program': No such file or directory (/no/such/program)",
        ),
        "on-path": (
            job_for(tmp_path, ["no-such-program-x1"]),
            "cannot start 'no-such-program-x1': No such file or directory (no-such-program-x1)",
        ),
        "not-executable": (
            job_for(tmp_path, [str(plain)]),
            f"cannot start {str(plain)!r}: Permission denied ({plain})",
        ),
        "cwd": (
            job_for(tmp_path, ["/bin/true"], cwd=str(missing)),
            f"cannot start '/bin/true': No such file or directory ({missing})",
        ),
    }[where]
    done = run_minder(job, kind)
    assert done.returncode == 0
    note = read(job, "note")
    assert (note["exit_code"], note["signal"], note["error"]) == (None, None, error)
    assert SECRET not in json.dumps(note)
    assert not Path(str(job["started"])).exists()


@pytest.mark.parametrize("where", ["program", "cwd"])
def test_a_secret_in_the_program_or_folder_is_written_as_the_launcher_shows_it(
    tmp_path, kind, where
):
    missing = str(tmp_path / f"missing-\\{SECRET}")  # a backslash: repr() would escape it
    if where == "program":
        job = job_for(tmp_path, [missing], redact=[[missing, missing.replace(SECRET, "***")]])
    else:
        job = job_for(
            tmp_path, ["/bin/true"], cwd=missing, redact=[[missing, missing.replace(SECRET, "***")]]
        )
    run_minder(job, kind)
    error = str(read(job, "note")["error"])
    assert SECRET not in error
    assert f"({missing.replace(SECRET, '***')})" in error


def wait_for(path: Path, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path.name} never appeared"
        time.sleep(0.01)


def test_sigterm_is_forwarded_and_sighup_sigint_are_ignored(tmp_path, kind):
    job = job_for(tmp_path, ["/bin/sh", "-c", "sleep 0.3; exec sleep 30"])
    proc = subprocess.Popen(minder_argv(kind), stdin=subprocess.PIPE, start_new_session=True)
    assert proc.stdin is not None
    proc.stdin.write(encoded(job, kind))
    proc.stdin.close()
    wait_for(Path(str(job["started"])))
    proc.send_signal(signal.SIGHUP)
    proc.send_signal(signal.SIGINT)
    time.sleep(0.05)
    assert proc.poll() is None  # still minding
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=5) == 0
    note = read(job, "note")
    assert note["signal"] == signal.SIGTERM


def test_the_job_may_also_be_the_argument_itself(tmp_path):
    job = job_for(tmp_path, ["/bin/sh", "-c", "exit 4"])
    argv = [*minder_argv()[:-1], json.dumps(job)]
    assert subprocess.run(argv, timeout=10).returncode == 0
    assert read(job, "note")["exit_code"] == 4


def test_start_up_is_quick(tmp_path, kind):
    """Measures a whole minder run of ``/bin/true`` (spawn, start-up, two atomic writes).

    Figure on the development box (2 slow vCPUs, ``python -I -S -c pass`` ~13-17 ms): about
    28-38 ms median (55-80 ms when the minder imported json, subprocess and datetime); the rest
    is compiling the script, fork/exec and two fsynced writes. Asserted only loosely: CI is
    noisy.
    """
    times = []
    for i in range(5):
        job = job_for(tmp_path / str(i), ["/bin/true"])
        begun = time.perf_counter()
        run_minder(job, kind)
        times.append(time.perf_counter() - begun)
    assert sorted(times)[2] < 0.5


def test_the_minder_imports_nothing_costly(tmp_path):
    job = job_for(tmp_path, ["/bin/true"])
    argv = [sys.executable, "-I", "-S", "-X", "importtime", *minder_argv()[3:]]
    done = subprocess.run(argv, input=marshal.dumps(job), capture_output=True, timeout=10)
    assert done.returncode == 0
    imported = {line.split("|")[-1].strip() for line in done.stderr.decode().splitlines()}
    assert not imported & {"json", "re", "subprocess", "datetime", "contextlib", "signal", "enum"}


def test_a_json_job_on_stdin_is_still_accepted(tmp_path):
    job = job_for(tmp_path, ["/bin/sh", "-c", "exit 5"])
    done = subprocess.run(minder_argv(), input=json.dumps(job).encode(), timeout=10)
    assert done.returncode == 0
    assert read(job, "note")["exit_code"] == 5


def test_an_unreadable_job_is_refused(tmp_path, kind):
    bad = [b"", b"not a job", marshal.dumps(["a list"])]
    if kind in NATIVE_KINDS:  # cut short, or with a field too many
        whole = encoded(job_for(tmp_path, ["/bin/true"]), kind)
        bad += [whole[:-1], whole[: len(whole) // 2], whole + b"x\0"]
    for data in bad:
        done = subprocess.run(minder_argv(kind), input=data, capture_output=True, timeout=10)
        assert done.returncode == 2
        assert done.stderr.startswith(b"minder: cannot read the job")


@pytest.mark.parametrize(
    "value",
    [
        None,
        0,
        -3,
        12345678901234,
        "plain",
        'q"uote\\back',
        "tab\tnl\nff\f\x00\x1f\x7f",
        "é€😀\udcff",
    ],
)
def test_the_json_writer_writes_what_json_dumps_writes(value):
    payload = {"version": 1, "value": value, 'key "x"': "y"}
    assert minder._dumps(payload) == json.dumps(payload, separators=(",", ":"))


def test_timestamps_are_what_datetime_isoformat_writes():
    stamp = minder._now()
    parsed = datetime.fromisoformat(stamp)
    assert parsed.utcoffset() is not None and not parsed.utcoffset()
    assert parsed.isoformat() == stamp
    assert abs(parsed.timestamp() - time.time()) < 5


def test_the_command_does_not_inherit_ignored_signals_or_stray_fds(tmp_path, kind):
    script = "grep -E '^Sig(Ign|Blk)' /proc/self/status; ls /proc/self/fd"
    job = job_for(tmp_path, ["/bin/sh", "-c", script])
    if kind in NATIVE_KINDS:  # as the host starts it: posix_spawn leaves the C library's 32
        # and 33 ignored in the minder, which must not pass them on
        assert spawn_native(job, kind) == 0
        ignored = 0
    else:
        run_minder(job)
        # The Python minder resets every signal Python knows; the C library's own two (32
        # and 33) it cannot reach, and they stay as this process has them (ignored when it
        # was itself started with posix_spawn, as some launchers do)
        ignored = _ignored_signals() & (3 << 31)
    lines = Path(str(job["stdout"])).read_text().split()
    assert lines[:4] == ["SigBlk:", "0000000000000000", "SigIgn:", f"{ignored:016x}"]
    assert sorted(lines[4:]) == ["0", "1", "2", "3"]  # 3 is ls's own listing of the folder


def test_the_command_does_not_inherit_what_the_minders_parent_ignored_or_blocked(tmp_path, kind):
    """A scheduler started under ``nohup`` (SIGHUP ignored) or with signals blocked passes
    neither on to the commands."""
    script = "grep -E '^Sig(Ign|Blk)' /proc/self/status"
    job = job_for(tmp_path, ["/bin/sh", "-c", script])

    def ignore_and_block() -> None:
        signal.signal(signal.SIGUSR1, signal.SIG_IGN)
        signal.signal(signal.SIGQUIT, signal.SIG_IGN)
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR2})

    done = subprocess.run(
        minder_argv(kind),
        input=encoded(job, kind),
        preexec_fn=ignore_and_block,
        capture_output=True,
        timeout=10,
    )
    assert done.returncode == 0
    status = dict(zip(*[iter(Path(str(job["stdout"])).read_text().split())] * 2, strict=True))
    ignored = int(status["SigIgn:"], 16)
    assert int(status["SigBlk:"], 16) == 0
    assert ignored & ~(3 << 31) == 0  # at most the C library's two, for the Python minder
    if kind in NATIVE_KINDS:
        assert ignored == 0


def _ignored_signals() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("SigIgn:"):
            return int(line.split()[1], 16)
    raise AssertionError("no SigIgn in /proc/self/status")


def test_make_folders_gives_every_new_folder_the_log_mode(tmp_path):
    previous = os.umask(0o022)
    try:
        existing = tmp_path / "kept"
        existing.mkdir(0o755)
        minder.make_folders(str(existing / "a" / "b"))
        minder.make_folders(str(existing / "a" / "b"))  # there already: nothing to do
    finally:
        os.umask(previous)
    modes = {
        p.name: stat.S_IMODE(p.stat().st_mode)
        for p in (existing, existing / "a", existing / "a" / "b")
    }
    assert modes == {"kept": 0o755, "a": 0o750, "b": 0o750}  # an existing folder is left as it is


def test_make_folders_refuses_a_file_in_the_way(tmp_path):
    (tmp_path / "f").write_text("")
    with pytest.raises(OSError):
        minder.make_folders(str(tmp_path / "f"))
    with pytest.raises(OSError):
        minder.make_folders(str(tmp_path / "f" / "sub"))


def _same_shape(note: dict[str, object]) -> dict[str, object]:
    """A note with what differs from run to run (pids, instants) reduced to its type."""
    varying = {"pid", "minder_pid", "started_at", "ended_at"}
    return {k: (type(v).__name__ if k in varying else v) for k, v in note.items()}


@pytest.mark.parametrize(
    "case",
    ["exit-3", "signal", "missing-program", "missing-folder", "secret-program", "non-ascii"],
)
def test_every_minder_writes_the_same_note(tmp_path, native_program, case):
    secret_program = str(tmp_path / f"bin-{SECRET}-é")
    argv, extra = {
        "exit-3": (["/bin/sh", "-c", "exit 3"], {}),
        "signal": (["/bin/sh", "-c", "kill -TERM $$"], {}),
        "missing-program": (["no-such-program-x2"], {}),
        "missing-folder": (["/bin/true"], {"cwd": str(tmp_path / "gone ' \" \\ ü")}),
        "secret-program": (
            [secret_program],
            {"redact": [[secret_program, secret_program.replace(SECRET, "***")]]},
        ),
        "non-ascii": (["/bin/sh", "-c", "echo ü€😀; exit 7"], {}),
    }[case]
    notes, outputs = [], []
    for kind in ("python", *NATIVE_KINDS):
        if kind in NATIVE_KINDS:
            require_native_minder(kind)
        job = job_for(tmp_path / kind, argv, **extra)
        run_minder(job, kind)
        text = Path(str(job["note"])).read_text()
        assert SECRET not in text
        notes.append(json.loads(text))
        out = Path(str(job["stdout"]))
        outputs.append(out.read_bytes() if out.exists() else None)
    python_note = notes[0]
    for native_note, output in zip(notes[1:], outputs[1:], strict=True):
        assert list(native_note) == list(python_note)  # the same keys in the same order
        assert _same_shape(native_note) == _same_shape(python_note)
        assert output == outputs[0]


@pytest.mark.parametrize(
    ("argv", "extra"),
    [
        (["/bin/echo", "a\0b"], {}),
        (["/bin/true"], {"env": {"A": "x\0y"}}),
        (["/bin/true"], {"env": {"A=B": "x"}}),
        (["/bin/true"], {"env": {"": "x"}}),
        (["/bin/true"], {"cwd": "/tmp/a\0b"}),
        (["/bin/echo", "lone \ud800 surrogate"], {}),
        (["/bin/true"], {"env": {"A": "\udfff"}}),
        ([], {}),
    ],
    ids=[
        "nul-argument",
        "nul-env",
        "equals-name",
        "empty-name",
        "nul-cwd",
        "surrogate",
        "surrogate-env",
        "no-command",
    ],
)
def test_a_job_the_python_minder_treats_its_own_way_is_not_given_to_the_native_one(
    tmp_path, argv, extra
):
    """The host forks a Python minder for it instead, so its note is that minder's."""
    assert host.native_job(job_for(tmp_path, argv, **extra)) is None


@pytest.mark.parametrize("build", list(NATIVE_KINDS))
def test_the_native_minder_takes_a_job_larger_than_a_pipe_holds(tmp_path, build):
    require_native_minder(build)
    big = {f"VAR_{i}": "x" * 1000 for i in range(300)}  # 300 KB of environment
    job = job_for(tmp_path, ["/bin/sh", "-c", 'echo "${#VAR_299}"'])
    job["env"] = {**job["env"], **big}  # type: ignore[dict-item]
    assert spawn_native(job, build) == 0
    assert read(job, "note")["exit_code"] == 0
    assert Path(str(job["stdout"])).read_text() == "1000\n"


def test_the_native_minder_answers_its_check_and_refuses_arguments(native_program):
    check = subprocess.run([native_program, "--check"], capture_output=True, timeout=10)
    assert (check.returncode, check.stdout) == (0, b"pysched-minder 1\n")
    other = subprocess.run([native_program, "--what"], capture_output=True, timeout=10)
    assert other.returncode == 2
    assert other.stderr.startswith(b"usage:")
