"""The minder host: one small, long-lived process that forks a minder for each attempt.

Starting a fresh interpreter for every minder costs about 20 ms of CPU; forking a process that
has already started, with the minder's code loaded, costs about one. The local launcher starts
this host as the engine opens (``prepare``), or else at the first attempt, as ``python -I -S``
(standard library only, nothing of the ``pysched`` package, like the minder itself) in its own
session, with a pipe on each of standard input and output, and asks it for minders.

The conversation, all of it binary and ordered:

- the host first writes ``b"ready <pid>\\n"``;
- each request is a 4-byte big-endian length, then ``marshal.dumps((id, job, marker))``:
  ``job`` is exactly what a minder reads (see ``pysched.launch.minder``), ``marker`` the path
  of the attempt's ``.spawned`` file;
- each answer is one line, in the order of the requests: ``b"<id> <pid> <start>\\n"`` once the
  minder is forked (``start`` is its ``/proc`` start time in clock ticks, -1 if it had already
  gone), or ``b"<id> error <message>\\n"`` when no minder was made.

For each request the host

1. creates the attempt's folder and touches the marker: from here on, "a minder may exist";
2. checks that the scheduler that started it is still its parent. If not (it died: this host
   was reparented), it removes the marker again and exits without forking: whoever recovers
   after the crash then finds no marker and starts the attempt itself, once. A request read
   after the scheduler's death is never acted on, so a restarted scheduler and this host never
   both start one attempt;
3. forks. The child makes itself a process group of its own (``setpgid``: a signal to the
   host's group or the scheduler's never reaches it, and it outlives both), puts ``/dev/null``
   on its standard streams (so it holds none of the host's pipes), restores ``SIGCHLD`` and
   runs exactly what a minder started by path runs (``minder.serve``), then ``_exit``\\ s.

   It stays in the host's session (which has no terminal, so no hangup can come through it)
   rather than starting one of its own: where the kernel groups processes by session for CPU
   fairness (``sched_autogroup``, on by default in most distributions), all the minders then
   count as one with their host, and a burst of two hundred starting at once cannot crowd the
   scheduler's own loop off the CPU. The command still gets a session of its own.

``SIGCHLD`` is ignored in the host, so the kernel reaps its minders as they end: no zombies and
no reaping loop. A minder is not the scheduler's child either way; the launcher waits for it
with a pidfd and reads how it ended from its note. The host ignores SIGHUP and SIGINT, and
exits when its standard input ends (the launcher closed it, or the scheduler died).
"""

import gc
import marshal
import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    import signal as _signal
    from types import FrameType
    from typing import Any, NoReturn

    from pysched.launch import minder
else:
    import _signal

    try:
        import minder  # run by the launcher: this folder is on sys.path
    except ImportError:  # imported as part of the package (tests)
        from pysched.launch import minder


class _Orphaned(Exception):
    """The scheduler that started this host has died."""


def _ignore(signum: int, frame: "FrameType | None") -> None:
    """A no-op handler: unlike SIG_IGN it is reset to the default across exec."""


def _read_exactly(fd: int, size: int, buffer: bytearray) -> bytes | None:
    """``size`` bytes from ``fd`` (``buffer`` holds what was read ahead), or None at the end."""
    while len(buffer) < size:
        chunk = os.read(fd, max(65536, size - len(buffer)))
        if not chunk:
            return None
        buffer += chunk
    data = bytes(buffer[:size])
    del buffer[:size]
    return data


def _touch(marker: str) -> None:
    minder.make_folders(os.path.dirname(marker))
    os.close(os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, minder.LOG_FILE_MODE))


def _unlink(marker: str) -> None:
    try:  # noqa: SIM105 (contextlib is not loaded here)
        os.unlink(marker)
    except OSError:
        pass


def _become_minder(job: "dict[str, Any]") -> "NoReturn":
    """In the forked child: run the job as a minder, then leave without returning."""
    code = 1
    try:
        os.setpgid(0, 0)  # its own process group, in the host's session: see the docstring
        _signal.signal(_signal.SIGCHLD, _signal.SIG_DFL)  # the minder waits for its command
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        os.close(null)
        code = minder.serve(job)
    finally:
        os._exit(code)


def spawn(job: "dict[str, Any]", marker: str, parent: int) -> tuple[int, int | None]:
    """Touch ``marker`` and fork a minder for ``job``: its pid and start time.

    Raises ``OSError`` when no minder was made (the marker is removed again), ``_Orphaned``
    when ``parent`` is no longer this process's parent.
    """
    _touch(marker)
    if os.getppid() != parent:
        _unlink(marker)
        raise _Orphaned
    try:
        pid = os.fork()
    except OSError:
        _unlink(marker)
        raise
    if pid == 0:
        _become_minder(job)
    return pid, minder.proc_start_ticks(pid)


def _answer(request_id: int, job: object, marker: object, parent: int) -> bytes:
    if not isinstance(job, dict) or not isinstance(marker, str):
        return b"%d error bad request\n" % request_id
    try:
        pid, start = spawn(job, marker, parent)  # pyright: ignore[reportUnknownArgumentType]
    except OSError as exc:
        # the marker's path and the errno's text, never the job (its env holds secrets)
        message = f"cannot fork a minder: {exc}".replace("\n", " ")
        return b"%d error %s\n" % (request_id, message.encode(errors="replace"))
    return b"%d %d %d\n" % (request_id, pid, -1 if start is None else start)


def serve(requests: int, answers: int, parent: int) -> int:
    """Answer requests from ``requests`` on ``answers`` until the end of input."""
    buffer = bytearray()
    while True:
        head = _read_exactly(requests, 4, buffer)
        if head is None:
            return 0
        body = _read_exactly(requests, int.from_bytes(head, "big"), buffer)
        if body is None:
            return 0
        try:
            request_id, job, marker = marshal.loads(body)
        except (ValueError, EOFError, TypeError):
            return 2  # not our launcher talking: stop rather than guess
        try:
            answer = _answer(request_id, job, marker, parent)
        except _Orphaned:
            return 0
        os.write(answers, answer)


def main() -> int:
    _signal.signal(_signal.SIGHUP, _ignore)
    _signal.signal(_signal.SIGINT, _ignore)
    _signal.signal(_signal.SIGCHLD, _signal.SIG_IGN)  # the kernel reaps our minders
    parent = os.getppid()
    minder.boot_id()  # read once here, so no forked minder reads it again
    gc.freeze()  # what is loaded now stays shared with every fork instead of being copied
    os.write(1, b"ready %d\n" % os.getpid())
    try:
        return serve(0, 1, parent)
    except BrokenPipeError:
        return 0  # the launcher stopped listening


if __name__ == "__main__":
    sys.exit(main())
