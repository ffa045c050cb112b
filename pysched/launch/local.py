"""The local launcher: each attempt runs under its own minder process on this machine.

The minder starts the command in its own process group, writes what it started into the
attempt's ``.spawned`` marker, waits, and writes a note saying how it ended (see
``pysched.launch.minder``). Its job (argv, the full env, cwd, file paths) travels
marshal-encoded through a pipe, so secrets never reach a command line or a file. Files of
attempt ``n`` of run ``r`` of job ``j`` for run date ``d``, under ``log_dir``::

    j/d/r.n.out  r.n.err  r.n.note.json  r.n.spawned

The marker exists from just before the minder is spawned ("a minder may exist"); it is empty
until the minder has started the command, then holds the minder's and the command's pids and
start times and the boot's id.

Two ways to make a minder, chosen by ``minder_host``:

- **the minder host** (the default): one long-lived ``python -I -S`` process makes a minder
  per attempt (``pysched.launch.host`` and ``host_link``): it starts the native minder, the
  same minder in C built on first use where a C compiler is found
  (``pysched.launch.native_minder``), or else forks itself with the minder's code loaded,
  about 1 ms each instead of 20 for a fresh interpreter. It touches the ``.spawned`` marker
  before each. If it dies while asked, the attempt's files say whether its minder was made
  (as recovery reads them), and the next start starts a new host;
- **a fresh interpreter per attempt** (``minder_host=False``, or ``PYSCHED_MINDER_HOST=0`` in
  the environment): ``python -I -S -c "import minder..." -`` with the job on standard input,
  spawned by ONE worker thread at a time, which takes every start queued meanwhile.

Either way the loop never waits on ``fork`` or on the disk. The end of a minder is awaited with
a pidfd (``os.pidfd_open`` + ``trio.lowlevel.wait_readable``, which works for processes that
are not our children): no thread per process. Where pidfds are missing, the handle polls every
0.1 s.

A handle's ``info`` is ``{"minder_pid", "minder_start", "boot_id", "note"}``: the minder's pid,
its start time in clock ticks since boot (``/proc/<pid>/stat`` field 22), which boot, and the
note's path. ``recover`` uses them to adopt a minder still running after a restart, read the
note of one that ended, or answer None. A pid and start time from another boot name no live
minder: after a reboot every minder of the last boot is gone, whatever runs under its pid now.
"""

from __future__ import annotations

import contextlib
import json
import logging
import marshal
import os
import signal
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from io import FileIO
from pathlib import Path
from typing import Any

import trio

from pysched.launch import minder
from pysched.launch.base import NOT_STARTED, AttemptSpec, ExitStatus, NotStarted
from pysched.launch.host_link import HostGone, MinderHost
from pysched.launch.native_minder import cache_dir_for, native_minder_wanted

__all__ = ["LocalAttempt", "LocalLauncher"]

log = logging.getLogger(__name__)

MINDER = Path(minder.__file__)
# The minder is imported as a module rather than run as a script: Python caches bytecode for
# modules (``__pycache__``) but compiles a script anew at every start, which cost 6-9 ms of a
# 30 ms start. ``-I -S`` still keeps it isolated from the environment and site packages.
_MINDER_BOOT = (
    f"import sys;sys.path.insert(0,{str(MINDER.parent)!r});import minder;"
    "sys.exit(minder.main(sys.argv[1:]))"
)
_POLL = 0.1  # seconds between looks when pidfds are unavailable
_KILL_POLL = 0.05  # seconds between looks at a process group during a kill's grace
_ORPHAN_POLL = 0.25  # the same once the command has ended and /proc must be read for members
_STARTED_WAIT = 2.0  # how long kill waits for a fresh minder to say what it started
_HOST_TRIES = 3  # hosts tried for one start before giving up (each died before forking)


def _alive(pid: int, start: int | None) -> bool:
    """Whether ``pid`` is a live (not zombie) process started at ``start`` clock ticks.

    Reads ``/proc``, which is memory, not disk: fine on the loop.
    """
    found = minder.proc_state(pid)
    if found is None or found[0] in (b"Z", b"X"):
        return False
    return start is None or found[1] == start


def _this_boot(record: Mapping[str, Any]) -> bool:
    """Whether ``record`` (a handle's info, a marker) comes from this boot (or does not say)."""
    said = record.get("boot_id")
    return said is None or said == minder.boot_id()


def _open_pidfd(pid: int) -> FileIO | None:
    """A pidfd for ``pid`` (closed when collected), or None where unsupported or gone."""
    pidfd_open = getattr(os, "pidfd_open", None)
    if pidfd_open is None:
        return None
    try:
        return FileIO(pidfd_open(pid, 0))
    except OSError:
        return None


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None  # pyright: ignore[reportUnknownVariableType]


@dataclass(frozen=True, slots=True)
class _Orphan:
    """A command whose minder ended without a note: it may still run, reparented, with
    nobody to read its exit status."""

    pid: int
    start: int
    pgid: int

    @classmethod
    def of(cls, marker: Mapping[str, Any] | None) -> _Orphan | None:
        """The command a marker names, if the minder got as far as starting it (this boot)."""
        if marker is None or not _this_boot(marker):
            return None
        pid, start, pgid = marker.get("pid"), marker.get("pid_start"), marker.get("pgid")
        if not (isinstance(pid, int) and isinstance(start, int) and isinstance(pgid, int)):
            return None
        return cls(pid, start, pgid)

    def lost(self) -> ExitStatus:
        return ExitStatus(
            lost=True,
            message=(
                f"its minder ended while the command ran (pid {self.pid}); the command was "
                "watched to its end, but how it ended is unknown"
            ),
        )


def _reaped(orphan: _Orphan) -> ExitStatus | None:
    """How an orphaned command ended, when this process has become its parent and reaps it.

    A command whose minder dies is handed to the nearest "subreaper" ancestor, or to PID 1:
    pysched itself when it is a container's first process. Unreaped, it would stay a zombie
    for as long as pysched runs; reaped, its exit status is known after all. Only a zombie
    with the orphan's own start time is reaped, so a reused pid never is. None otherwise
    (the usual case: init reaps it, and how it ended is lost).
    """
    found = minder.proc_state(orphan.pid)
    if found is None or found[0] != b"Z" or found[1] != orphan.start:
        return None
    try:
        pid, status = os.waitpid(orphan.pid, os.WNOHANG)
    except ChildProcessError:
        return None
    if pid != orphan.pid:
        return None
    code = os.waitstatus_to_exitcode(status)
    sig = -code if code < 0 else None
    how = f"killed by signal {sig}" if sig is not None else f"exit with {code}"
    return ExitStatus(
        exit_code=None if sig is not None else code,
        signal=sig,
        message=(
            f"its minder ended while the command ran (pid {orphan.pid}); pysched, now the "
            f"command's parent, saw it {how}"
        ),
    )


def _status_from_note(note: Mapping[str, Any]) -> ExitStatus:
    ended = note.get("ended_at")
    ended_at = datetime.fromisoformat(ended) if isinstance(ended, str) else None
    code, sig, error = note.get("exit_code"), note.get("signal"), note.get("error")
    if error:
        message = str(error)
    elif sig is not None:
        try:
            message = f"killed by {signal.Signals(sig).name}"
        except ValueError:
            message = f"killed by signal {sig}"
    else:
        message = f"exited with {code}"
    return ExitStatus(exit_code=code, signal=sig, ended_at=ended_at, message=message)


@dataclass(slots=True, kw_only=True)
class _Paths:
    out: Path
    err: Path
    note: Path

    @property
    def spawned(self) -> Path:
        """The marker: there from just before the minder is spawned; then what it started."""
        return self.note.with_name(self.note.name.removesuffix(".note.json") + ".spawned")

    @classmethod
    def of(cls, log_dir: Path, spec: AttemptSpec) -> _Paths:
        folder = log_dir / spec.job / spec.run_date.isoformat()
        stem = f"{spec.run_id}.{spec.attempt}"
        return cls(
            out=folder / f"{stem}.out",
            err=folder / f"{stem}.err",
            note=folder / f"{stem}.note.json",
        )

    @classmethod
    def beside(cls, note: Path) -> _Paths:
        stem = note.name.removesuffix(".note.json")
        folder = note.parent
        return cls(
            out=folder / f"{stem}.out",
            err=folder / f"{stem}.err",
            note=note,
        )


class LocalAttempt:
    """One attempt under its minder. One task at a time may ``wait``.

    **Cancellation:** cancelling ``wait`` stops watching only; the minder and its command run
    on, and a later ``wait`` (or ``recover`` after a restart) picks up where this one left.
    """

    def __init__(
        self,
        *,
        paths: _Paths,
        pid: int,
        start: int | None,
        popen: subprocess.Popen[bytes] | None,
        pidfd: FileIO | None,
    ) -> None:
        self._paths = paths
        self._pid = pid
        self._start = start
        self._popen = popen  # set when the minder is our own child: it reaps it
        self._pidfd = pidfd
        self._status: ExitStatus | None = None
        self._orphan: _Orphan | None = None
        """Set once the minder has ended without a note while its command may run on: then
        ``wait`` and ``kill`` deal with the command itself."""

    @classmethod
    def watching(cls, paths: _Paths, pid: int, start: int | None) -> LocalAttempt:
        """A handle on a fresh minder that is not our child (forked by the minder host)."""
        pidfd = _open_pidfd(pid) if start is not None else None
        # Check with the pidfd held: if the minder has already ended, its pid may be reused.
        if pidfd is not None and not _alive(pid, start):
            pidfd.close()
            pidfd = None
        return cls(paths=paths, pid=pid, start=start, popen=None, pidfd=pidfd)

    @classmethod
    def ended(cls, paths: _Paths, status: ExitStatus) -> LocalAttempt:
        """A handle on an attempt already over (``wait`` answers ``status`` at once)."""
        attempt = cls(paths=paths, pid=0, start=None, popen=None, pidfd=None)
        attempt._status = status
        return attempt

    @classmethod
    def orphaned(cls, paths: _Paths, orphan: _Orphan) -> LocalAttempt:
        """A handle on a command whose minder is gone (found so by ``recover``)."""
        attempt = cls(paths=paths, pid=0, start=None, popen=None, pidfd=None)
        attempt._watch_orphan(orphan)
        return attempt

    def _watch_orphan(self, orphan: _Orphan) -> None:
        """Watch the command from now on; once (``wait`` and ``kill`` may both find it)."""
        if self._orphan is not None:
            return
        self._orphan = orphan
        self._pidfd = _open_pidfd(orphan.pid)
        if self._pidfd is not None and not _alive(orphan.pid, orphan.start):
            self._pidfd.close()  # already over (its pid may be reused): nothing to wait for
            self._pidfd = None
        log.warning(
            "the minder of %s ended without a note while its command (pid %d) ran; "
            "watching the command to its end",
            self._paths.note.name.removesuffix(".note.json"),
            orphan.pid,
        )

    @property
    def info(self) -> Mapping[str, Any]:
        return {
            "minder_pid": self._pid,
            "minder_start": self._start,
            "boot_id": minder.boot_id(),
            "note": str(self._paths.note),
        }

    def _ended(self) -> bool:
        """Whether what this handle watches has ended: the minder, or its orphaned command."""
        if self._orphan is not None:
            return not _alive(self._orphan.pid, self._orphan.start)
        if self._popen is not None:
            return self._popen.poll() is not None
        if self._start is None:
            return True  # forked, but gone before its start time could be read
        return not _alive(self._pid, self._start)

    async def wait(self) -> ExitStatus:
        """Wait for the minder to end, then report the note it wrote.

        A minder that ended without a note after starting its command (killed, say) leaves
        the command running on its own: then this waits for the command itself, so a retry
        never runs beside it, and reports it ``lost`` (nobody can read its exit status), unless
        this process has become the command's parent and reaps it (``_reaped``).
        """
        if self._status is not None:
            await trio.lowlevel.checkpoint()
            return self._status
        if self._orphan is None:
            await self._until_ended()
            # Past this point the minder has ended: finish without giving cancellation a say.
            found: ExitStatus | _Orphan | None = None
            with trio.CancelScope(shield=True):
                found = await trio.to_thread.run_sync(self._finish)
            assert found is not None
            if isinstance(found, ExitStatus):
                self._status = found
                return found
            self._watch_orphan(found)
        await self._until_ended()
        assert self._orphan is not None
        self._status = _reaped(self._orphan) or self._orphan.lost()
        return self._status

    async def _until_ended(self) -> None:
        """Wait until what this handle watches has ended (``_ended``)."""
        pidfd = self._pidfd
        if pidfd is not None:
            await trio.lowlevel.wait_readable(pidfd.fileno())
            if self._pidfd is pidfd:  # (a kill may have put the orphan's in its place)
                self._pidfd = None
            trio.lowlevel.notify_closing(pidfd.fileno())
            pidfd.close()
        else:
            while not self._ended():
                await trio.sleep(_POLL)

    def _finish(self) -> ExitStatus | _Orphan:
        """Reap the minder (if ours) and read its note; with no note, the command it had
        started, if it got that far. Runs in a worker thread."""
        if self._popen is not None:
            self._popen.wait()
        else:
            # An adopted minder may still be our child (adopted by the process that spawned it).
            with contextlib.suppress(ChildProcessError):
                os.waitpid(self._pid, os.WNOHANG)
        note = _read_json(self._paths.note)
        if note is not None:
            return _status_from_note(note)
        orphan = _Orphan.of(_read_json(self._paths.spawned))  # the note is missing: see above
        return orphan or ExitStatus(message="the minder ended without writing a note")

    def _orphan_left(self) -> _Orphan | None:
        """The command an ended minder left running without a note (or left ended, unread);
        None when it wrote its note or never started it. Reads files: use a worker thread."""
        if self._popen is not None:
            self._popen.poll()  # reap it, if it is our child (a kill may come before ``wait``)
        if self._paths.note.exists():
            return None
        return _Orphan.of(_read_json(self._paths.spawned))

    async def _pgid(self) -> int | None:
        """The command's process group, from the marker; waits a little for a fresh minder."""
        with trio.move_on_after(_STARTED_WAIT):
            while True:
                started = await trio.to_thread.run_sync(_read_json, self._paths.spawned)
                if started is not None and isinstance(started.get("pgid"), int):
                    return int(started["pgid"])
                if self._ended():
                    return None
                await trio.sleep(0.01)
        return None

    async def _group_to_signal(self) -> int | None:
        """The command's process group while it runs: under its minder (from the marker), or
        on its own once the minder has ended without a note; None when there is none."""
        if self._orphan is None and not self._ended():
            pgid = await self._pgid()
            if pgid is not None and not self._ended():
                return pgid
        if self._orphan is None:  # the minder has ended (maybe just now)
            found = await trio.to_thread.run_sync(self._orphan_left)
            if found is None or self._status is not None:
                return None
            self._watch_orphan(found)
        assert self._orphan is not None
        return None if self._ended() else self._orphan.pgid

    async def kill(self, grace: timedelta) -> None:
        """SIGTERM the command's process group; SIGKILL what is left of the group after
        ``grace``.

        Returns once the whole group is gone or SIGKILL is sent; starts nothing that outlives
        it. The command itself may end at once and its children live on (``sh -c script``:
        the shell dies of SIGTERM, a script that ignores it carries on): the attempt has ended
        then, but the grace runs on for the group, and SIGKILL reaches what is left.
        """
        if self._status is not None:
            await trio.lowlevel.checkpoint()
            return
        pgid = await self._group_to_signal()
        if pgid is None:
            return  # the command never started, or the attempt is over: nothing to signal
        if not _signal_group(pgid, signal.SIGTERM):
            return
        # The grace ends early once no live process is left in the group. While the command
        # runs, the group is alive; once it has ended, /proc says whether any member is left
        # (zombies waiting for a slow PID 1 to reap them, in a container, do not count).
        with trio.move_on_after(max(grace.total_seconds(), 0)):
            while True:
                if not self._ended():
                    if not _signal_group(pgid, 0):
                        return
                    await trio.sleep(_KILL_POLL)
                elif not await trio.to_thread.run_sync(_group_alive, pgid):  # reads all of /proc
                    return
                else:
                    await trio.sleep(_ORPHAN_POLL)
        _signal_group(pgid, signal.SIGKILL)


def _group_alive(pgid: int) -> bool:
    """Whether process group ``pgid`` has a live (not zombie) member, from ``/proc`` (every
    process's stat file: run it in a worker thread)."""
    if not _signal_group(pgid, 0):
        return False
    try:
        names = os.listdir("/proc")
    except OSError:
        return True  # no /proc: the group answers, so take it as alive
    wanted = b"%d" % pgid
    for name in names:
        fields = minder.proc_stat(name) if name.isdigit() else None
        if fields and len(fields) > 2 and fields[2] == wanted and fields[0] not in (b"Z", b"X"):
            return True
    return False


def _signal_group(pgid: int, sig: int) -> bool:
    """Send ``sig`` to group ``pgid``; False when no process of it is left."""
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return False
    except PermissionError:
        log.warning("no permission to signal process group %d", pgid)
        return False
    return True


@dataclass(slots=True, kw_only=True)
class _Spawn:
    """One queued minder start and, once the worker thread is done, its outcome."""

    job: bytes
    marker: Path
    """Written just before the minder is spawned: without it, recovery knows the attempt never
    began."""
    result: tuple[subprocess.Popen[bytes], FileIO | None, int | None] | None = None
    error: OSError | None = None
    done: trio.Event = field(default_factory=trio.Event)


class LocalLauncher:
    """Runs attempts as local processes, each under a minder; see the module docstring.

    ``log_dir`` holds every attempt's output, marker and note. ``python`` runs the
    minder (or its host). ``base_env`` (default: this process's environment) is what each
    command's environment starts from; ``spec.env`` is laid over it. ``minder_host`` picks
    how minders are made (see the module docstring); by default the host, unless the
    environment says ``PYSCHED_MINDER_HOST=0``. With the host, ``native_minder`` says whether
    it starts the native minder when one can be built (default: unless the environment says
    ``PYSCHED_MINDER_NATIVE=0``), kept in ``cache_dir`` (see
    ``pysched.launch.native_minder.cache_dir_for``).

    With the host, the launcher owns one process: it ends with ``close()``, when the launcher
    is collected, or when this process ends. Running minders are never affected.
    """

    def __init__(
        self,
        log_dir: Path,
        *,
        python: str = sys.executable,
        base_env: Mapping[str, str] | None = None,
        minder_host: bool | None = None,
        native_minder: bool | None = None,
        cache_dir: Path | None = None,
    ) -> None:
        # absolute once (``..`` kept, as the kernel reads it, and as the API reads the logs): a
        # minder host keeps the working folder it was started in
        self.log_dir = Path(log_dir).absolute()
        self.python = python
        self.base_env = dict(base_env) if base_env is not None else None
        if minder_host is None:
            minder_host = os.environ.get("PYSCHED_MINDER_HOST", "1") != "0"
        if native_minder is None:
            native_minder = native_minder_wanted()
        native_cache = cache_dir_for(cache_dir) if native_minder else None
        self._host = MinderHost(python, native_cache=native_cache) if minder_host else None
        self._queue: list[_Spawn] = []
        self._draining = False

    @property
    def minder_host(self) -> MinderHost | None:
        """The minder host, when minders are forked by one."""
        return self._host

    def close(self) -> None:
        """Let the minder host (if any) go. Running minders and their commands run on."""
        if self._host is not None:
            self._host.close()

    async def prepare(self) -> None:
        """Start the minder host (when minders are made by one), so the first attempt does not
        wait for it. Never raises: a host that cannot start is logged, and tried again by the
        first ``start``."""
        if self._host is not None:
            # not shielded: cancelled half-way (the engine closing), the host is let go and
            # the next start makes another
            await self._host.prepare()
        else:
            await trio.lowlevel.checkpoint()

    async def start(self, spec: AttemptSpec) -> LocalAttempt:
        """Spawn the attempt's minder; return once the minder process exists.

        The command's own start is the minder's business: if it cannot start (no such
        program), ``wait`` reports it with ``exit_code`` None and the reason as ``message``.
        Raises ``OSError`` when the minder itself cannot be spawned.

        **Cancellation:** not cancellable once asked for (the spawn is a few milliseconds): a
        minder that may exist is always handed back, never left without an owner.
        """
        paths = _Paths.of(self.log_dir, spec)
        marker = paths.spawned
        env = dict(os.environ if self.base_env is None else self.base_env)
        env.update(spec.env)
        job: dict[str, Any] = {
            "argv": list(spec.argv),
            "env": env,
            "cwd": str(spec.cwd) if spec.cwd is not None else None,
            "stdout": str(paths.out),
            "stderr": str(paths.err),
            "started": str(marker),  # the minder fills in the marker
            "note": str(paths.note),
            "redact": [[text, shown] for text, shown in spec.redact.items()],
        }
        if self._host is not None:
            with trio.CancelScope(shield=True):
                return await self._start_hosted(self._host, spec, paths, job)
        # marshal, not JSON: the minder reads it without importing json (start-up time).
        request = _Spawn(job=marshal.dumps(job), marker=marker)
        self._queue.append(request)
        with trio.CancelScope(shield=True):
            if self._draining:
                await request.done.wait()
            else:
                await self._drain()
        if request.error is not None:
            raise request.error
        if request.result is None:
            raise OSError(f"could not spawn the minder for {spec.run_id}")
        popen, pidfd, start = request.result
        return LocalAttempt(paths=paths, pid=popen.pid, start=start, popen=popen, pidfd=pidfd)

    async def _start_hosted(
        self, host: MinderHost, spec: AttemptSpec, paths: _Paths, job: dict[str, Any]
    ) -> LocalAttempt:
        """Have the minder host fork the minder; if the host dies meanwhile, find out from the
        attempt's files whether it did, as recovery would."""
        gone: HostGone | None = None
        for _ in range(_HOST_TRIES):
            try:
                pid, start = await host.spawn(job, paths.spawned)
            except HostGone as exc:
                gone = exc
                found = await self.recover(spec, {})
                if isinstance(found, NotStarted):
                    continue  # no marker: it never got that far; ask a new host
                if isinstance(found, LocalAttempt):
                    return found
                if found is None:  # a marker and nothing else, after recovery's grace
                    found = ExitStatus(message="the minder host died while starting the minder")
                return LocalAttempt.ended(paths, found)
            return LocalAttempt.watching(paths, pid, start)
        raise OSError(f"the minder host kept dying while starting {spec.run_id} (last: {gone})")

    async def _drain(self) -> None:
        """Spawn queued minders in one worker thread at a time until the queue is empty."""
        self._draining = True
        try:
            while self._queue:
                batch, self._queue = self._queue, []
                try:
                    await trio.to_thread.run_sync(self._spawn_all, batch)
                finally:
                    for request in batch:
                        request.done.set()
        finally:
            self._draining = False

    def _spawn_all(self, batch: list[_Spawn]) -> None:
        """Runs in a worker thread: spawn each minder and hand it its job."""
        for request in batch:
            try:
                minder.make_folders(str(request.marker.parent))
                request.marker.touch(minder.LOG_FILE_MODE)
                request.result = self._spawn_one(request.job)
            except OSError as exc:
                request.error = exc

    def _spawn_one(self, job: bytes) -> tuple[subprocess.Popen[bytes], FileIO | None, int | None]:
        popen = subprocess.Popen(
            [self.python, "-I", "-S", "-c", _MINDER_BOOT, "-"],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # no terminal signal or group kill of ours reaches it
        )
        assert popen.stdin is not None
        try:
            popen.stdin.write(job)
            popen.stdin.close()
        except BrokenPipeError:
            pass  # the minder died at once; wait() reports the missing note
        return popen, _open_pidfd(popen.pid), minder.proc_start_ticks(popen.pid)

    async def recover(
        self, spec: AttemptSpec, info: Mapping[str, Any]
    ) -> LocalAttempt | ExitStatus | NotStarted | None:
        """After a restart: the note's status if the attempt ended, a handle adopting its
        still-running minder, ``NOT_STARTED`` if no minder was ever spawned for it, or None if
        it vanished.

        A minder is adopted only if a live process has its pid AND its start time, so a pid
        reused by another process is never mistaken for it.
        """
        derived = _Paths.of(self.log_dir, spec)
        note_path = info.get("note")
        paths = _Paths.beside(Path(note_path)) if isinstance(note_path, str) else derived
        note = await trio.to_thread.run_sync(_read_json, paths.note)
        if note is not None:
            return _status_from_note(note)
        candidates: list[tuple[_Paths, Any, Any]] = []
        if _this_boot(info):
            candidates.append((paths, info.get("minder_pid"), info.get("minder_start")))
        started = await trio.to_thread.run_sync(_read_json, derived.spawned)
        if started is not None and _this_boot(started):
            candidates.append((derived, started.get("minder_pid"), started.get("minder_start")))
        for where, pid, start in candidates:
            if not isinstance(pid, int) or not isinstance(start, int):
                continue
            handle = self._adopt(where, pid, start)
            if handle is not None:
                return handle
        # It may have ended between the first look and now.
        note = await trio.to_thread.run_sync(_read_json, paths.note)
        if note is not None:
            return _status_from_note(note)
        if not await trio.to_thread.run_sync(derived.spawned.exists):
            return NOT_STARTED  # nothing was ever spawned: safe to start it, once
        orphan = _Orphan.of(started)
        if orphan is not None and _alive(orphan.pid, orphan.start):
            return LocalAttempt.orphaned(derived, orphan)  # its minder died under it
        if started is None:
            # spawned, but its minder has not said what it started: it may still be starting
            # up (a restart can be quick); give it a moment before calling it lost
            for _ in range(40):
                await trio.sleep(0.05)
                again = await trio.to_thread.run_sync(_read_json, derived.spawned)
                if again is not None:
                    return await self.recover(spec, info)
            if not await trio.to_thread.run_sync(derived.spawned.exists):
                # a minder host removes the marker again when it decides not to fork (its
                # scheduler died): nothing was spawned after all
                return NOT_STARTED
        return None

    def _adopt(self, paths: _Paths, pid: int, start: int) -> LocalAttempt | None:
        if not _alive(pid, start):
            return None
        pidfd = _open_pidfd(pid)
        # Check again with the pidfd held: now the pid cannot be recycled under us.
        if pidfd is not None and not _alive(pid, start):
            pidfd.close()
            return None
        return LocalAttempt(paths=paths, pid=pid, start=start, popen=None, pidfd=pidfd)
