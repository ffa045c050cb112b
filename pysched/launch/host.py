"""The minder host: one small, long-lived process that forks a minder for each attempt.

Starting a fresh interpreter for every minder costs about 20 ms of CPU; forking a process that
has already started, with the minder's code loaded, costs about one. The local launcher starts
this host as the engine opens (``prepare``), or else at the first attempt, as ``python -I -S``
(standard library only, nothing of the ``pysched`` package, like the minder itself) in its own
session, with a pipe on each of standard input and output, and asks it for minders.

The conversation, all of it binary and ordered:

- the host first writes ``b"ready <pid> native\\n"`` when it makes native minders, else
  ``b"ready <pid> forked\\n"`` (the native minder it was given is not the file there now);
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
3. makes the minder, one of two ways:

   - **native**, when the host was started with the path, device and inode of a built
     ``minder.c`` (see ``pysched.launch.native_minder``) and the file there is still that one
     (``open_native``: the host keeps it open and runs it from that descriptor):
     ``posix_spawn`` of that program (a ``vfork``, so it costs the host almost nothing), in a
     process group of its own, every signal at its default, ``/dev/null`` on its standard
     output and error, no environment, and the job, as ``native_job`` lays it out, written
     into a pipe on its standard input;
   - **forked**, otherwise, for a job ``native_job`` does not lay out (one ``minder.py`` would
     refuse), or when ``posix_spawn`` fails:
     the child makes itself a process group of its own (``setpgid``), puts ``/dev/null`` on
     its standard streams (so it holds none of the host's pipes), restores ``SIGCHLD`` and
     runs exactly what a minder started by path runs (``minder.serve``), then ``_exit``\\ s.

   Either way a signal to the host's group or the scheduler's never reaches the minder, and it
   outlives both. It stays in the host's session (which has no terminal, so no hangup can come
   through it) rather than starting one of its own: where the kernel groups processes by
   session for CPU fairness (``sched_autogroup``, on by default in most distributions), all the
   minders then count as one with their host, and a burst of two hundred starting at once
   cannot crowd the scheduler's own loop off the CPU. The command still gets a session of its
   own.

``SIGCHLD`` is ignored in the host, so the kernel reaps its minders as they end: no zombies and
no reaping loop. A minder is not the scheduler's child either way; the launcher waits for it
with a pidfd and reads how it ended from its note. The host ignores SIGHUP and SIGINT, and
exits when its standard input ends (the launcher closed it, or the scheduler died).
"""

import gc
import marshal
import os
import stat  # (loaded by os already: costs the host nothing)
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


NATIVE_MAGIC = "pysched-minder 1"
"""The first field of a native minder's job, and what ``minder.c --check`` prints."""
NATIVE_MAX_ITEMS = 1_000_000
"""The most arguments, variables or ``PATH`` entries ``minder.c`` reads in a list."""


def _escaped(text: str) -> str:
    """``text`` as JSON writes it, without the quotes: how the native minder gets every text it
    may put in a note, so its notes hold what ``minder.py``'s would."""
    return minder._json_str(text)[1:-1]  # pyright: ignore[reportPrivateUsage]


def native_job(job: "dict[str, Any]") -> "bytes | None":
    """``job`` laid out for the native minder (see ``minder.c``): NUL-terminated fields.

    None for a job that ``minder.py`` would refuse or treat in a way of its own (a NUL byte or
    an unencodable character in a text, a bad variable name, no command at all): the host forks
    a Python minder for it, so its note is ``minder.py``'s by construction."""
    try:
        argv = [str(a) for a in job["argv"]]
        env = {str(k): str(v) for k, v in job["env"].items()}
        cwd = job.get("cwd")
        paths = [str(job[key]) for key in ("note", "started", "stdout", "stderr")]
        shown = {str(text): str(form) for text, form in job.get("redact") or ()}
        if not argv or not argv[0] or any(not key or "=" in key for key in env):
            return None
        if max(len(argv), len(env)) > NATIVE_MAX_ITEMS:
            return None
        program = argv[0]
        shown_program = shown.get(program, program)
        executables = minder._executables(program, env)  # pyright: ignore[reportPrivateUsage]
        if len(executables) > NATIVE_MAX_ITEMS:
            return None
        fields = [
            NATIVE_MAGIC,
            *paths,
            "0" if cwd is None else "1",
            "" if cwd is None else str(cwd),
            _escaped(f"cannot start {shown_program!r}: "),
            _escaped(shown_program),
            _escaped(shown.get(str(cwd), str(cwd))),
            _escaped(shown.get(paths[2], paths[2])),
            _escaped(shown.get(paths[3], paths[3])),
            str(len(argv)),
            *argv,
            str(len(executables)),
            *executables,
            str(len(env)),
            *(f"{key}={value}" for key, value in env.items()),
        ]
        encoded = [os.fsencode(text) for text in fields]
    except (KeyError, TypeError, AttributeError, ValueError):  # UnicodeEncodeError too
        return None
    if any(b"\0" in field for field in encoded):
        return None
    return b"".join(field + b"\0" for field in encoded)


def owned_privately(info: os.stat_result) -> bool:
    """Whether a file or folder belongs to this user and no one else may write to it."""
    return info.st_uid == os.geteuid() and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def private_file(info: os.stat_result) -> bool:
    """Whether it is a regular file, this user's, that no one else may write to: the only kind
    of native minder that is run."""
    return stat.S_ISREG(info.st_mode) and owned_privately(info)


def open_native(path: str, device: int, inode: int) -> "int | None":
    """Open the native minder the launcher built and checked (``path``, whose file must still
    be that device and inode, this user's and writable by no one else); its descriptor, or
    None when it is not that file any more. The host starts minders from this descriptor
    (``/proc/self/fd/N``), so the file checked is the file run, whatever becomes of the path."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    info = os.fstat(fd)
    if (info.st_dev, info.st_ino) != (device, inode) or not private_file(info):
        os.close(fd)
        return None
    return fd


def _spawn_native(program: int, request: bytes) -> int:
    """Start the native minder open as descriptor ``program`` and hand it ``request`` (a
    ``native_job``); its pid. Raises ``OSError`` only when no minder was started."""
    read_end, write_end = os.pipe()
    path = f"/proc/self/fd/{program}"  # an ELF program runs from a close-on-exec descriptor
    try:
        pid = os.posix_spawn(
            path,
            ["pysched-minder"],  # what ps shows
            {},
            file_actions=[
                (os.POSIX_SPAWN_DUP2, read_end, 0),
                (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
                (os.POSIX_SPAWN_DUP2, 1, 2),
            ],
            setpgroup=0,
            setsigmask=(),
            setsigdef=minder.DEFAULTABLE_SIGNALS,  # 32 and 33 stay ignored: the minder resets them
        )
    except BaseException:
        os.close(write_end)
        raise
    finally:
        os.close(read_end)
    try:
        view = memoryview(request)
        while view:  # blocks only while the minder reads a job larger than the pipe holds
            view = view[os.write(write_end, view) :]
    except OSError:
        pass  # it died at once, or has a job cut short, which it refuses: no note either way
    finally:
        os.close(write_end)
    return pid


def spawn(
    job: "dict[str, Any]", marker: str, parent: int, native: "int | None" = None
) -> tuple[int, int | None]:
    """Touch ``marker`` and make a minder for ``job`` (``native``: the descriptor of the
    native minder, else a fork, as for a job the native minder is not given): its pid and
    start time.

    Raises ``OSError`` when no minder was made (the marker is removed again), ``_Orphaned``
    when ``parent`` is no longer this process's parent.
    """
    request = native_job(job) if native is not None else None
    _touch(marker)
    if os.getppid() != parent:
        _unlink(marker)
        raise _Orphaned
    try:
        pid = None
        if native is not None and request is not None:
            try:  # noqa: SIM105 (contextlib is not loaded here)
                pid = _spawn_native(native, request)
            except OSError:  # it cannot be started (no memory, say): fork a minder instead
                pass
        if pid is None:
            pid = os.fork()
    except BaseException:
        _unlink(marker)
        raise
    if pid == 0:
        _become_minder(job)
    return pid, minder.proc_start_ticks(pid)


def _answer(
    request_id: int, job: object, marker: object, parent: int, native: "int | None"
) -> bytes:
    if not isinstance(job, dict) or not isinstance(marker, str):
        return b"%d error bad request\n" % request_id
    try:
        pid, start = spawn(job, marker, parent, native)  # pyright: ignore[reportUnknownArgumentType]
    except OSError as exc:
        # the marker's path and the errno's text, never the job (its env holds secrets)
        message = f"cannot make a minder: {exc}".replace("\n", " ")
        return b"%d error %s\n" % (request_id, message.encode(errors="replace"))
    return b"%d %d %d\n" % (request_id, pid, -1 if start is None else start)


def serve(requests: int, answers: int, parent: int, native: "int | None" = None) -> int:
    """Answer requests from ``requests`` on ``answers`` until the end of input; ``native`` is
    the native minder's descriptor, if minders are made with it."""
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
            answer = _answer(request_id, job, marker, parent, native)
        except _Orphaned:
            return 0
        os.write(answers, answer)


def main(args: "list[str] | None" = None) -> int:
    """``args`` (default: the command line's): nothing, or the native minder's path, device
    and inode (see ``open_native``); forked Python minders if it is not that file."""
    args = sys.argv[1:] if args is None else args
    native = None
    if len(args) == 3 and args[1].isdigit() and args[2].isdigit():
        native = open_native(args[0], int(args[1]), int(args[2]))
    _signal.pthread_sigmask(_signal.SIG_SETMASK, ())  # none blocked, in the minders either
    _signal.signal(_signal.SIGHUP, _ignore)
    _signal.signal(_signal.SIGINT, _ignore)
    _signal.signal(_signal.SIGCHLD, _signal.SIG_IGN)  # the kernel reaps our minders
    parent = os.getppid()
    minder.boot_id()  # read once here, so no forked minder reads it again
    gc.freeze()  # what is loaded now stays shared with every fork instead of being copied
    os.write(1, b"ready %d %s\n" % (os.getpid(), b"forked" if native is None else b"native"))
    try:
        return serve(0, 1, parent, native)
    except BrokenPipeError:
        return 0  # the launcher stopped listening


if __name__ == "__main__":
    sys.exit(main())
