"""The minder: runs ONE attempt's command, outlives the scheduler, and writes how it ended.

Standard library only, and nothing of the ``pysched`` package: the local launcher runs this file
by path as ``python -I -S minder.py -`` (isolated, no ``site``), which starts in a few
milliseconds instead of the tens a full interpreter with site-packages takes.

The job arrives on standard input when the argument is ``-`` (what the launcher does, so secrets
in ``env`` appear neither in ``/proc/<pid>/cmdline`` nor on disk), encoded with ``marshal`` (a
JSON object is accepted there too), or as a JSON object in the argument itself::

    {"argv": [...], "env": {...}, "cwd": "..." | null,
     "stdout": ".../<run_id>.<n>.out", "stderr": ".../<run_id>.<n>.err",
     "started": ".../<run_id>.<n>.spawned", "note": ".../<run_id>.<n>.note.json",
     "redact": [[text, shown], ...]}

``redact`` (optional) pairs texts of the job that hold a secret (its program, its folder) with
the form to write instead: a note saying why the command could not start shows that form.

``env`` is the command's FULL environment. The minder

1. starts the command in its own session and process group (its pgid is its pid), standard
   output and error appended to the two files (parent folders created); if it cannot start it
   (no such program, no permission, bad cwd) the note says so (``exit_code`` null, ``error``);
2. writes what it started into the ``started`` file, in one ``write`` (no temporary file and
   no fsync: the launcher points it at the attempt's ``.spawned`` marker, which already exists,
   so the attempt costs no extra file; it matters only while this minder lives, and a crash of
   the machine ends the minder too)::

       {"version": 1, "minder_pid": 41, "minder_start": 1234, "pid": 42, "pgid": 42,
        "pid_start": 1235, "boot_id": "...", "started_at": "2026-10-19T09:03:00.123456+00:00"}

   (``*_start`` are ``/proc/<pid>/stat`` field 22, the start time in clock ticks since boot,
   and ``boot_id`` says which boot, so a restarted scheduler can tell this minder from a
   process that reused its pid, in this boot or a later one). A reader that finds the file
   empty or cut short (it ends before the object's closing brace) reads "not written yet";
3. waits for the command, then writes the note atomically (temp file, fsync, rename, fsync of
   the folder)::

       {"version": 1, "exit_code": 3 | null, "signal": 15 | null, "error": null | "...",
        "pid": 42, "minder_pid": 41, "started_at": "...", "ended_at": "..."}

   and exits 0.

It ignores SIGHUP and SIGINT (a closing terminal must not end the attempt) with no-op handlers
rather than SIG_IGN, so the command does not inherit them ignored; SIGTERM is forwarded to the
command's process group (the launcher normally signals the group itself). Env values are never
written anywhere by the minder: not in the note, the marker, or its own output.

Start-up is most of a short attempt's cost, so the minder imports only modules built into the
interpreter or already loaded when it starts (``os``, ``sys``, ``time``, ``_signal``, ``errno``,
``marshal``): no ``json``, ``subprocess``, ``datetime`` or ``contextlib``. It forks and execs the
command itself (an exec failure comes back through a close-on-exec pipe, as in ``subprocess``)
and writes its two small JSON files with a writer of its own, byte for byte what
``json.dumps(..., separators=(",", ":"))`` writes.
"""

import errno
import marshal
import os
import sys
import time

# ``signal`` imports ``enum`` (milliseconds); ``_signal``, built in and already loaded, has all
# the minder needs. pathlib and typing likewise cost milliseconds of start-up that every attempt
# would pay: the minder uses os.path, and imports typing only for the type checker.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import signal as _signal
    from types import FrameType
    from typing import Any
else:
    import _signal

NOTE_VERSION = 1


def proc_stat(pid: int | str) -> "list[bytes] | None":
    """``/proc/<pid>/stat`` from field 3 on (``[0]`` is field 3, the state letter; ``[2]``
    field 5, the process group; ``[19]`` field 22, the start time), or None when there is no
    such process."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: split after the last ')'.
    return data[data.rfind(b")") + 2 :].split()


def proc_state(pid: int | str) -> "tuple[bytes, int] | None":
    """The state letter of ``pid`` (``R``, ``S``, ``Z``, ...) and its start time in clock ticks
    (``/proc/<pid>/stat`` fields 3 and 22), or None when there is no such process."""
    fields = proc_stat(pid)
    try:
        return (fields[0], int(fields[19])) if fields is not None else None
    except (IndexError, ValueError):
        return None


def proc_start_ticks(pid: int | str) -> "int | None":
    """The start time of ``pid`` in clock ticks, or None."""
    found = proc_state(pid)
    return found[1] if found is not None else None


_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b"}
_ESCAPES["\f"] = "\\f"


def _json_str(text: str) -> str:
    """``text`` as a JSON string, escaped as ``json.dumps`` does (``ensure_ascii``)."""
    if text.isascii() and text.isprintable() and '"' not in text and "\\" not in text:
        return f'"{text}"'
    parts = ['"']
    for ch in text:
        if " " <= ch <= "~":
            parts.append(_ESCAPES.get(ch, ch))
        elif ch in _ESCAPES:
            parts.append(_ESCAPES[ch])
        else:
            n = ord(ch)
            if n > 0xFFFF:  # a surrogate pair, as json writes it
                n -= 0x10000
                parts.append(f"\\u{0xD800 | (n >> 10):04x}\\u{0xDC00 | (n & 0x3FF):04x}")
            else:
                parts.append(f"\\u{n:04x}")
    parts.append('"')
    return "".join(parts)


_BOOT_ID: "list[str | None]" = []


def boot_id() -> "str | None":
    """This boot's id (``/proc/sys/kernel/random/boot_id``), read once; None where there is none.

    Process start times count clock ticks from boot: a pid and a start time name one process
    only within one boot."""
    if not _BOOT_ID:
        try:
            with open("/proc/sys/kernel/random/boot_id", "rb") as f:
                _BOOT_ID.append(f.read().decode("ascii", "replace").strip() or None)
        except OSError:
            _BOOT_ID.append(None)
    return _BOOT_ID[0]


def _json_value(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return _json_str(value)
    raise TypeError(f"cannot write {type(value).__name__} as JSON")


def _dumps(payload: "dict[str, Any]") -> str:
    """Like ``json.dumps(payload, separators=(",", ":"))`` for a flat object of int/str/None."""
    items = [f"{_json_str(key)}:{_json_value(value)}" for key, value in payload.items()]
    return "{" + ",".join(items) + "}"


LOG_FILE_MODE = 0o640
"""Mode of every file in the log dir (output, notes, markers): a job's output may hold
anything, so other users of the machine may not read it; the scheduler's group may."""
LOG_DIR_MODE = 0o750
"""Mode of the folders made in the log dir (the umask may narrow both)."""
DEFAULTABLE_SIGNALS = sorted(_signal.valid_signals() - {_signal.SIGKILL, _signal.SIGSTOP})
"""Every signal that can be set back to its default (not glibc's own 32 and 33, which Python
does not count as valid)."""
_APPEND = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC
"""How the minder opens the command's output files."""


def make_folders(path: str, mode: int = LOG_DIR_MODE) -> None:
    """Make the folder ``path`` and every missing folder above it, each with ``mode``.

    ``os.makedirs`` gives its mode to the last folder only: ``log_dir`` and the job's folder
    would get the umask's default (0755 under the usual 022), so every user could list the
    jobs and their runs."""
    path = path or "."
    try:
        os.mkdir(path, mode)
    except FileExistsError:
        if not os.path.isdir(path):
            raise
    except FileNotFoundError:
        parent = os.path.dirname(path.rstrip(os.sep))
        if not parent or parent == path:
            raise
        make_folders(parent, mode)
        try:
            os.mkdir(path, mode)
        except FileExistsError:  # made meanwhile by another minder
            if not os.path.isdir(path):
                raise


def write_atomically(path: str, payload: "dict[str, Any]") -> None:
    """Write ``payload`` as JSON to ``path`` so a reader sees all of it or nothing."""
    folder_path, name = os.path.split(path)
    make_folders(folder_path)
    tmp = os.path.join(folder_path, f".{name}.{os.getpid()}.tmp")
    data = memoryview(_dumps(payload).encode())
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, LOG_FILE_MODE)
    try:
        while data:
            data = data[os.write(fd, data) :]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    folder = os.open(folder_path or ".", os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(folder)
    finally:
        os.close(folder)


def write_in_place(path: str, payload: "dict[str, Any]") -> None:
    """Write ``payload`` as JSON into ``path`` (created if missing) with one ``write``.

    No temporary file, no fsync: for a record that matters only while its writer lives. A
    reader may find the file empty or cut short, never a whole object that was not written:
    the object's only closing brace is its last byte."""
    data = _dumps(payload).encode()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, LOG_FILE_MODE)
    try:
        os.write(fd, data)
        os.ftruncate(fd, len(data))
    finally:
        os.close(fd)


def _now() -> str:
    """Now in UTC as ``datetime.now(UTC).isoformat()`` writes it (microseconds, floored)."""
    seconds, micros = divmod(time.time_ns() // 1000, 1_000_000)
    t = time.gmtime(seconds)
    stamp = (
        f"{t.tm_year:04d}-{t.tm_mon:02d}-{t.tm_mday:02d}"
        f"T{t.tm_hour:02d}:{t.tm_min:02d}:{t.tm_sec:02d}"
    )
    return f"{stamp}.{micros:06d}+00:00" if micros else f"{stamp}+00:00"


def _read_job(args: list[str]) -> "dict[str, Any]":
    if len(args) != 1:
        raise ValueError("usage: minder.py -|JSON")
    if args[0] == "-":
        data = sys.stdin.buffer.read()
        try:
            job = marshal.loads(data)
        except (ValueError, EOFError, TypeError):
            if not data.lstrip()[:1] == b"{":
                raise
            job = _loads_json(data.decode())  # a JSON object on stdin is accepted too
    else:
        job = _loads_json(args[0])
    if not isinstance(job, dict):
        raise TypeError("the job must be a JSON object")
    return job  # pyright: ignore[reportUnknownVariableType]


def _loads_json(text: str) -> object:
    import json  # only here: the launcher sends marshal, and json costs ~15 ms to import

    return json.loads(text)


def _executables(program: str, env: dict[str, str]) -> list[str]:
    """Where to look for ``program``: itself if it names a folder, else each ``PATH`` entry."""
    if os.path.dirname(program):
        return [program]
    path = env.get("PATH")
    if path is None:
        path = os.defpath
    return [os.path.join(folder, program) for folder in path.split(os.pathsep)]


def _check_exec_args(argv: list[str], env: dict[str, str]) -> None:
    """Raise, before forking, the ``ValueError`` that ``subprocess.Popen`` would."""
    for key, value in env.items():
        if "=" in key:
            raise ValueError("illegal environment variable name")
        if "\0" in key or "\0" in value:
            raise ValueError("embedded null byte")
    for arg in argv:
        if "\0" in arg:
            raise ValueError("embedded null byte")


def _child(
    argv: list[str],
    executables: list[str],
    env: dict[str, str],
    cwd: str | None,
    out_fd: int,
    err_fd: int,
    report: int,
) -> None:
    """In the forked child: become the command, or report why not on ``report`` and exit 127."""
    step = b"exec"
    try:
        # every signal back to its default, so the command inherits none ignored (nohup's
        # SIGHUP, the scheduler's own SIGPIPE) or blocked; the C library's own two (32 and
        # 33) are out of Python's reach: the native minder resets those too
        for signum in DEFAULTABLE_SIGNALS:
            _signal.signal(signum, _signal.SIG_DFL)
        _signal.pthread_sigmask(_signal.SIG_SETMASK, ())
        step = b"noexec"
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(out_fd, 1)
        os.dup2(err_fd, 2)
        for name in os.listdir("/proc/self/fd"):  # close_fds, as subprocess does
            fd = int(name)
            if fd > 2 and fd != report:
                try:  # noqa: SIM105 (contextlib costs milliseconds to import)
                    os.close(fd)
                except OSError:
                    pass
        # last of all (the work above counts as the minder's, under the kernel's per-session
        # CPU fairness): a session of its own, which is also its own process group
        os.setsid()
        if cwd is not None:
            step = b"chdir"
            os.chdir(cwd)
        step = b"exec"
        saved = last = 0
        for executable in executables:
            try:
                os.execve(executable, argv, env)
            except OSError as exc:
                if exc.errno not in (errno.ENOENT, errno.ENOTDIR) and not saved:
                    saved = exc.errno or 0
                last = exc.errno or 0
        os.write(report, b"%d:%s" % (saved or last, step))
    except OSError as exc:
        os.write(report, b"%d:%s" % (exc.errno or 0, step))
    except BaseException:  # never return into the minder's own code
        os.write(report, b"0:noexec")
    finally:
        os._exit(127)


def _start(argv: list[str], env: dict[str, str], cwd: str | None, out_fd: int, err_fd: int) -> int:
    """Fork and exec the command in a new session; return its pid once it has exec'd.

    Not ``posix_spawn``, though it is cheaper: glibc's leaves the command with two signals
    (its internal 32 and 33) ignored.

    Raises ``OSError`` (errno, message, and the program or ``cwd`` as filename) as
    ``subprocess.Popen`` does when the command cannot start.
    """
    program = argv[0]
    _check_exec_args(argv, env)
    executables = _executables(program, env)
    read_end, write_end = os.pipe()  # both close-on-exec
    try:
        pid = os.fork()
        if pid == 0:
            os.close(read_end)
            _child(argv, executables, env, cwd, out_fd, err_fd, write_end)
        os.close(write_end)
        chunks: list[bytes] = []
        while chunk := os.read(read_end, 64):  # EOF: the exec closed the pipe
            chunks.append(chunk)
    finally:
        os.close(read_end)
    if not chunks:
        return pid
    _wait(pid)  # reap the child that could not exec
    code, _, step = b"".join(chunks).partition(b":")
    errno_num = int(code)
    message = os.strerror(errno_num) if errno_num else ""
    if step == b"chdir":
        raise OSError(errno_num, message, cwd)
    if step == b"noexec":
        raise OSError(errno_num, message)
    raise OSError(errno_num, message, program)


def _wait(pid: int) -> int:
    """Wait for ``pid`` to end: its exit code, or minus the signal that ended it."""
    while True:
        try:
            _, status = os.waitpid(pid, 0)
        except InterruptedError:
            continue
        if os.WIFSIGNALED(status):
            return -os.WTERMSIG(status)
        if os.WIFEXITED(status):
            return os.WEXITSTATUS(status)


def _kill_group(pid: int) -> None:
    try:  # noqa: SIM105
        os.killpg(pid, _signal.SIGTERM)
    except ProcessLookupError:
        pass


def run(job: "dict[str, Any]") -> int:
    """Run the job to its end; return the minder's exit status (0 once the note is written)."""
    argv = [str(a) for a in job["argv"]]
    env = {str(k): str(v) for k, v in job["env"].items()}
    cwd = job.get("cwd")
    note, started = str(job["note"]), str(job["started"])
    out, err = str(job["stdout"]), str(job["stderr"])
    for folder in {os.path.dirname(p) for p in (out, err, note, started)}:
        make_folders(folder)

    child: int | None = None
    term_requested = False

    def on_term(signum: int, frame: "FrameType | None") -> None:
        nonlocal term_requested
        term_requested = True
        if child is not None:
            _kill_group(child)

    _signal.signal(_signal.SIGTERM, on_term)

    started_at = _now()
    try:
        out_fd = os.open(out, _APPEND, LOG_FILE_MODE)
        try:
            err_fd = os.open(err, _APPEND, LOG_FILE_MODE)
            try:
                child = _start(argv, env, cwd, out_fd, err_fd)
            finally:
                os.close(err_fd)
        finally:
            os.close(out_fd)
    except OSError as exc:
        # Name the program (or folder), never the environment, and never a secret in them:
        # the shown forms go in before formatting (``!r`` would escape a raw one past a replace)
        shown = {str(text): str(form) for text, form in job.get("redact") or ()}
        program = argv[0] if argv else ""
        what = exc.filename if exc.filename is not None else program
        program, what = shown.get(program, program), shown.get(str(what), str(what))
        error = f"cannot start {program!r}: {exc.strerror or exc} ({what})"
        write_atomically(
            note,
            {
                "version": NOTE_VERSION,
                "exit_code": None,
                "signal": None,
                "error": error,
                "pid": None,
                "minder_pid": os.getpid(),
                "started_at": started_at,
                "ended_at": _now(),
            },
        )
        return 0
    if term_requested:  # SIGTERM came before the command had started
        _kill_group(child)

    try:
        write_in_place(
            started,
            {
                "version": NOTE_VERSION,
                "minder_pid": os.getpid(),
                "minder_start": proc_start_ticks("self"),
                "pid": child,
                "pgid": child,
                "pid_start": proc_start_ticks(child),
                "boot_id": boot_id(),
                "started_at": started_at,
            },
        )
    except OSError as exc:  # the command runs regardless: still wait and write the note
        sys.stderr.write(f"minder: cannot write what it started: {exc}\n")
    code = _wait(child)
    ended_at = _now()
    write_atomically(
        note,
        {
            "version": NOTE_VERSION,
            "exit_code": code if code >= 0 else None,
            "signal": -code if code < 0 else None,
            "error": None,
            "pid": child,
            "minder_pid": os.getpid(),
            "started_at": started_at,
            "ended_at": ended_at,
        },
    )
    return 0


def _ignore(signum: int, frame: "FrameType | None") -> None:
    """A no-op handler: unlike SIG_IGN it is reset to the default across exec."""


def main(args: list[str]) -> int:
    _signal.pthread_sigmask(_signal.SIG_SETMASK, ())  # none blocked: SIGTERM must reach us
    _signal.signal(_signal.SIGHUP, _ignore)
    _signal.signal(_signal.SIGINT, _ignore)
    try:
        job = _read_job(args)
    except (ValueError, TypeError, EOFError, OSError) as exc:
        sys.stderr.write(f"minder: cannot read the job: {type(exc).__name__}\n")
        return 2
    return serve(job)


def serve(job: "dict[str, Any]") -> int:
    """Run the job and write its note, or a note saying why the minder itself failed.

    What ``main`` does once it has the job; the minder host's forked children call it directly.
    """
    try:
        return run(job)
    except Exception as exc:
        # Report the failure without echoing the job (its env holds secrets).
        message = f"minder failed: {type(exc).__name__}: {exc}"
        sys.stderr.write(f"{message}\n")
        note = job.get("note")
        if isinstance(note, str):
            try:  # noqa: SIM105
                write_atomically(
                    note,
                    {
                        "version": NOTE_VERSION,
                        "exit_code": None,
                        "signal": None,
                        "error": message,
                        "pid": None,
                        "minder_pid": os.getpid(),
                        "started_at": None,
                        "ended_at": _now(),
                    },
                )
            except OSError:
                pass
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
