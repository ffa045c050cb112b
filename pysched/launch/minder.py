"""The minder: runs ONE attempt's command, outlives the scheduler, and writes how it ended.

Standard library only, and nothing of the ``pysched`` package: the local launcher runs this file
by path as ``python -I -S minder.py -`` (isolated, no ``site``), which starts in a few
milliseconds instead of the tens a full interpreter with site-packages takes.

The job arrives as one JSON object, on standard input when the argument is ``-`` (what the
launcher does, so secrets in ``env`` appear neither in ``/proc/<pid>/cmdline`` nor on disk) or
as the argument itself::

    {"argv": [...], "env": {...}, "cwd": "..." | null,
     "stdout": ".../<run_id>.<n>.out", "stderr": ".../<run_id>.<n>.err",
     "started": ".../<run_id>.<n>.started.json", "note": ".../<run_id>.<n>.note.json"}

``env`` is the command's FULL environment. The minder

1. starts the command in its own session and process group (its pgid is its pid), standard
   output and error appended to the two files (parent folders created); if it cannot start it
   (no such program, no permission, bad cwd) the note says so (``exit_code`` null, ``error``);
2. writes the ``started`` file atomically::

       {"version": 1, "minder_pid": 41, "minder_start": 1234, "pid": 42, "pgid": 42,
        "pid_start": 1235, "started_at": "2026-10-19T09:03:00.123456+00:00"}

   (``*_start`` are ``/proc/<pid>/stat`` field 22, the start time in clock ticks, so a restarted
   scheduler can tell this minder from a process that reused its pid);
3. waits for the command, then writes the note atomically (temp file, fsync, rename, fsync of
   the folder)::

       {"version": 1, "exit_code": 3 | null, "signal": 15 | null, "error": null | "...",
        "pid": 42, "minder_pid": 41, "started_at": "...", "ended_at": "..."}

   and exits 0.

It ignores SIGHUP and SIGINT (a closing terminal must not end the attempt) with no-op handlers
rather than SIG_IGN, so the command does not inherit them ignored; SIGTERM is forwarded to the
command's process group (the launcher normally signals the group itself). Env values are never
written anywhere by the minder: not in the note, the started file, or its own output.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from datetime import UTC, datetime

# pathlib and typing cost milliseconds of start-up that every attempt would pay: the minder
# uses os.path, and imports typing only for the type checker.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import FrameType
    from typing import Any

NOTE_VERSION = 1


def proc_start_ticks(pid: int | str) -> int | None:
    """The start time of ``pid`` in clock ticks (``/proc/<pid>/stat`` field 22), or None."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: split after the last ')'.
    fields = data[data.rfind(b")") + 2 :].split()
    try:
        return int(fields[19])  # fields[0] is field 3 (state); field 22 is fields[19]
    except (IndexError, ValueError):
        return None


def write_atomically(path: str, payload: dict[str, Any]) -> None:
    """Write ``payload`` as JSON to ``path`` so a reader sees all of it or nothing."""
    folder_path, name = os.path.split(path)
    os.makedirs(folder_path or ".", exist_ok=True)
    tmp = os.path.join(folder_path, f".{name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as f:
        f.write(json.dumps(payload, separators=(",", ":")).encode())
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    folder = os.open(folder_path or ".", os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(folder)
    finally:
        os.close(folder)


def _now() -> str:
    return datetime.now(UTC).isoformat()


def _read_job(args: list[str]) -> dict[str, Any]:
    if len(args) != 1:
        raise ValueError("usage: minder.py -|JSON")
    text = sys.stdin.buffer.read().decode() if args[0] == "-" else args[0]
    job = json.loads(text)
    if not isinstance(job, dict):
        raise TypeError("the job must be a JSON object")
    return job  # pyright: ignore[reportUnknownVariableType]


def run(job: dict[str, Any]) -> int:
    """Run the job to its end; return the minder's exit status (0 once the note is written)."""
    argv = [str(a) for a in job["argv"]]
    env = {str(k): str(v) for k, v in job["env"].items()}
    cwd = job.get("cwd")
    note, started = str(job["note"]), str(job["started"])
    out, err = str(job["stdout"]), str(job["stderr"])
    for folder in {os.path.dirname(p) for p in (out, err, note, started)}:
        os.makedirs(folder or ".", exist_ok=True)

    child: subprocess.Popen[bytes] | None = None
    term_requested = False

    def on_term(signum: int, frame: FrameType | None) -> None:
        nonlocal term_requested
        term_requested = True
        if child is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child.pid, signal.SIGTERM)

    signal.signal(signal.SIGTERM, on_term)

    started_at = _now()
    try:
        with open(out, "ab") as out_f, open(err, "ab") as err_f:
            child = subprocess.Popen(
                argv,
                env=env,
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=out_f,
                stderr=err_f,
                start_new_session=True,
            )
    except OSError as exc:
        # Name the program (or folder), never the environment.
        what = exc.filename if exc.filename is not None else argv[0] if argv else ""
        error = f"cannot start {argv[0] if argv else ''!r}: {exc.strerror or exc} ({what})"
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
    if term_requested:  # SIGTERM came before Popen returned
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, signal.SIGTERM)

    try:
        write_atomically(
            started,
            {
                "version": NOTE_VERSION,
                "minder_pid": os.getpid(),
                "minder_start": proc_start_ticks("self"),
                "pid": child.pid,
                "pgid": child.pid,
                "pid_start": proc_start_ticks(child.pid),
                "started_at": started_at,
            },
        )
    except OSError as exc:  # the command runs regardless: still wait and write the note
        sys.stderr.write(f"minder: cannot write the started file: {exc}\n")
    code = child.wait()
    ended_at = _now()
    write_atomically(
        note,
        {
            "version": NOTE_VERSION,
            "exit_code": code if code >= 0 else None,
            "signal": -code if code < 0 else None,
            "error": None,
            "pid": child.pid,
            "minder_pid": os.getpid(),
            "started_at": started_at,
            "ended_at": ended_at,
        },
    )
    return 0


def _ignore(signum: int, frame: FrameType | None) -> None:
    """A no-op handler: unlike SIG_IGN it is reset to the default across exec."""


def main(args: list[str]) -> int:
    signal.signal(signal.SIGHUP, _ignore)
    signal.signal(signal.SIGINT, _ignore)
    try:
        job = _read_job(args)
    except (ValueError, TypeError, OSError) as exc:
        sys.stderr.write(f"minder: cannot read the job: {type(exc).__name__}\n")
        return 2
    try:
        return run(job)
    except Exception as exc:
        # Report the failure without echoing the job (its env holds secrets).
        message = f"minder failed: {type(exc).__name__}: {exc}"
        sys.stderr.write(f"{message}\n")
        note = job.get("note")
        if isinstance(note, str):
            with contextlib.suppress(OSError):
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
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
