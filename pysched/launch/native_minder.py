"""The native minder: ``minder.c`` built once on this machine, and where to find it.

A minder forked from the Python minder host costs about 5 ms of CPU an attempt (the fork of
an interpreter, its copy-on-write faults, the fork of that again for the command, and the
exit); the same minder in C costs about 0.1 ms built with no C library, 0.5 ms with glibc on
a virtual machine (its start-up asks the CPU what it is, and each question leaves the guest).
When two hundred attempts start at once through the engine on two cores, the machine spends
about half the CPU, and the last command starts after 0.25-0.4 s instead of 0.45-0.65 s (see
the concurrency page).

So, when a C compiler is there (``$CC``, else ``cc``, ``gcc`` or ``clang`` on ``PATH``), the
launcher builds ``minder.c`` into a cache folder the first time it needs it (``BUILDS``, the
first that compiles and passes its check kept: freestanding on x86-64, else with the C
library, statically linked where it allows; about 0.3 s), checks that the result runs here
(``--check``: a folder mounted ``noexec`` fails it), and has the minder host start that program
for every attempt. The file is named after the sources' SHA-256 (with the error texts and the
builds tried), so an upgrade builds anew; builds of other sources unused for a week are
removed.

Where there is no compiler, or the build or its check fails, minders are forked Python
processes as before: the same files, the same notes, the same recovery; only slower. That is
logged once as the launcher starts its host (a failed build is not tried again by the same
process).

- ``PYSCHED_MINDER_NATIVE=0`` in the environment: never build or use the native minder.
- ``PYSCHED_MINDER_CACHE``: the cache folder, over what the launcher was given (``pysched
  serve`` gives ``<state_dir>/minder``; otherwise ``$XDG_CACHE_HOME/pysched``, by default
  ``~/.cache/pysched``).

Trust: the cache folder is resolved (a link is followed once, here, and the real folder used
from then on) and made with mode 0700 when missing; it must belong to this user with no one
else able to write to it, and every folder above it must belong to root or this user and be
writable by no one else (a sticky folder such as ``/tmp`` counts as safe for a folder in it
that belongs to root or this user). A build is opened without following links and used only if
it is a regular file of this user's that no one else may write to, and it passes the check, run
from that open descriptor; the host is given its device and inode, opens it again, runs it from
its own descriptor, and uses it only if it is still that file (it says which in its ``ready``
line). So no one else can get a program of theirs run as the scheduler by swapping the file or
a folder on its path. The compiler is trusted as the jobs' own programs are: ``$CC`` or the
first one on the scheduler's ``PATH``.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import logging
import os
import shlex
import shutil
import signal
import stat
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from pysched.launch.host import NATIVE_MAGIC, owned_privately, private_file
from pysched.launch.minder import make_folders
from pysched.xdg import base_dir

__all__ = [
    "BUILDS",
    "LIBRARY_BUILDS",
    "SOURCE",
    "Build",
    "NativeMinder",
    "cache_dir_for",
    "find_compiler",
    "native_minder",
    "native_minder_wanted",
]

log = logging.getLogger(__name__)

SOURCE = Path(__file__).with_name("minder.c")
SYSTEM_HEADER = Path(__file__).with_name("minder_sys.h")
"""What ``minder.c`` needs of the system, from the C library or, freestanding, from none."""


class Build(NamedTuple):
    """One way to build the minder: its name in the log, and the compiler's flags."""

    name: str
    flags: tuple[str, ...]


FREESTANDING = Build(
    "freestanding",
    (
        "-DPYSCHED_MINDER_FREESTANDING",
        "-ffreestanding",
        "-nostdlib",
        "-static",
        "-fno-pie",
        "-no-pie",
        "-fno-stack-protector",
        "-fno-asynchronous-unwind-tables",
    ),
)
"""With no C library (x86-64 Linux; see ``minder_sys.h``): a start costs about
0.08 ms of CPU instead of 0.54 ms where the CPU's identification leaves a virtual machine."""
STATIC = Build("with the C library, static", ("-static",))
"""With the C library, linked statically (no dynamic loader at each start: 0.2 ms less)."""
DYNAMIC = Build("with the C library, dynamic", ())
BUILDS: tuple[Build, ...] = (FREESTANDING, STATIC, DYNAMIC)
"""The builds tried in turn, the first that compiles and runs here kept."""
LIBRARY_BUILDS: tuple[Build, ...] = (STATIC, DYNAMIC)
"""With the C library only (what machines other than x86-64 get; tests use it)."""
BUILD_TIMEOUT = 60.0
"""Seconds a compiler has to build the minder (it needs well under one; the engine's opening
waits for it, and systemd's start timeout is a few minutes)."""
CHECK_TIMEOUT = 10.0
"""Seconds a built minder has to answer ``--check``."""
OLD_BUILD_DAYS = 7
"""Builds of other sources unused for this many days are removed."""
_PREFIX = "pysched-minder-"
_NO_HARD_LINKS = {errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.ENOSYS, errno.EMLINK}
"""What ``link`` says where the file system has no hard links (or no more for this file)."""


def native_minder_wanted() -> bool:
    """Whether the environment allows the native minder (``PYSCHED_MINDER_NATIVE`` not 0)."""
    return os.environ.get("PYSCHED_MINDER_NATIVE", "1").strip() != "0"


def cache_dir_for(given: Path | None = None) -> Path:
    """Where the native minder is kept: ``PYSCHED_MINDER_CACHE``, else ``given``, else the
    user's cache folder."""
    override = os.environ.get("PYSCHED_MINDER_CACHE")
    if override:
        return Path(override)
    if given is not None:
        return Path(given)
    return base_dir("XDG_CACHE_HOME", ".cache") / "pysched"


def find_compiler() -> list[str] | None:
    """The C compiler to build with (``$CC``, split as a shell would, else the first of ``cc``,
    ``gcc`` and ``clang`` on ``PATH``), or None."""
    configured = os.environ.get("CC", "").strip()
    if configured:
        try:
            return shlex.split(configured)
        except ValueError as exc:
            log.warning("$CC cannot be read as a command (%s): not building with it", exc)
            return None
    for name in ("cc", "gcc", "clang"):
        found = shutil.which(name)
        if found is not None:
            return [found]
    return None


@dataclass(frozen=True, slots=True)
class NativeMinder:
    """A built native minder that passed its checks: its path, and the device and inode of the
    file checked there, which the minder host opens and runs from then on (``open_native``)."""

    path: Path
    device: int
    inode: int

    def host_args(self) -> list[str]:
        """What the minder host is started with to use it."""
        return [str(self.path), str(self.device), str(self.inode)]


def _unsafe_above(folder: Path) -> str | None:
    """Why someone else could rename ``folder`` (resolved) away and put one of their own in
    its place, or None: every folder above it must belong to root or this user and be
    writable by no one else, unless it is sticky (``/tmp``) and the folder below it belongs to
    root or this user (as OpenSSH's ``StrictModes`` checks)."""
    me = os.geteuid()
    child = folder
    for above in folder.parents:
        try:
            info, below = above.stat(), child.lstat()
        except OSError as exc:
            return str(exc)
        if info.st_uid not in (0, me):
            return f"{above} belongs to another user"
        open_to_others = info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
        sticky_over_ours = info.st_mode & stat.S_ISVTX and below.st_uid in (0, me)
        if open_to_others and not sticky_over_ours:
            return f"others may write to {above}"
        child = above
    return None


def _runs(fd: int) -> str | None:
    """None if the program open as ``fd`` answers ``--check`` as a native minder of this
    version, else why not. Run from the descriptor: the file checked is the file run."""
    try:
        done = subprocess.run(
            [f"/proc/self/fd/{fd}", "--check"],
            capture_output=True,
            timeout=CHECK_TIMEOUT,
            check=False,
            env={},
            pass_fds=(fd,),
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return str(exc)
    if done.returncode != 0 or done.stdout.strip() != NATIVE_MAGIC.encode():
        return f"--check exited with {done.returncode} and printed {done.stdout[:80]!r}"
    return None


def _verified(program: Path, *, fresh: bool = False) -> NativeMinder | str:
    """``program`` as a ``NativeMinder`` if it is a regular file (not a link), this user's
    alone, and passes the check; else why not. ``fresh``: just built, so first made 0700
    (through the open file, never a link). Its times are set to now: in use, so not an older
    build to remove."""
    try:
        fd = os.open(program, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        return str(exc)
    try:
        info = os.fstat(fd)
        if fresh and stat.S_ISREG(info.st_mode) and info.st_uid == os.geteuid():
            os.fchmod(fd, 0o700)
            info = os.fstat(fd)
        if not private_file(info):
            return "not a regular file of this user's alone"
        why = _runs(fd)
        if why is not None:
            return why
        with contextlib.suppress(OSError):  # a read-only folder: the build still serves
            os.utime(fd)
        return NativeMinder(program, info.st_dev, info.st_ino)
    finally:
        os.close(fd)


def _compile(command: list[str], folder: Path) -> tuple[int, bytes]:
    """Run the compiler in a session of its own (so a timeout ends its helpers too: ``cc1``,
    ``as``, ``ld``), in ``folder`` with its temporary files there too; its exit code and
    standard error."""
    env = dict(os.environ, TMPDIR=str(folder), LC_ALL="C")  # /tmp may be read-only (systemd)
    with subprocess.Popen(
        command,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
        cwd=folder,
        start_new_session=True,
    ) as process:
        try:
            _, err = process.communicate(timeout=BUILD_TIMEOUT)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(OSError):
                os.killpg(process.pid, signal.SIGKILL)
            # a helper that left the session may hold the pipe open: do not wait for it
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.communicate(timeout=5)
            return -1, f"no result within {BUILD_TIMEOUT:g} s".encode()
    return process.returncode, err


def error_texts_header() -> str:
    """``pysched_errors.h`` for a freestanding build: the text of each error number as
    Python's ``os.strerror`` gives it, escaped as Python's ``json`` escapes it (the minder
    puts it into a note as it is: so its notes say what minder.py's say, in any language), as
    the C initializer ``PYSCHED_ERROR_TEXTS``."""
    texts: list[str] = []
    for number in range(256):
        escaped = json.dumps(os.strerror(number))[1:-1]  # ASCII: non-ASCII as \\uXXXX
        texts.append('"' + escaped.replace("\\", "\\\\").replace('"', '\\"') + '"')
    return f"#define PYSCHED_ERROR_TEXTS {{{', '.join(texts)}}}\n"


def _build(
    compiler: list[str], folder: Path, target: Path, builds: tuple[Build, ...], errors: str
) -> NativeMinder | str:
    """Build ``SOURCE`` into ``target`` with the first of ``builds`` that compiles and runs
    here; the result, or why there is none. A build another process finished meanwhile is
    taken as it is: a host may already run it (by device and inode). ``errors`` is the
    ``pysched_errors.h`` a freestanding build includes."""
    try:
        fd, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=folder)
    except OSError as exc:
        return str(exc)
    os.close(fd)
    tmp = Path(name)
    try:
        with tempfile.TemporaryDirectory(prefix=f".{target.name}.", dir=folder) as headers:
            (Path(headers) / "pysched_errors.h").write_text(errors)
            found: NativeMinder | str = "no build was tried"
            failures: list[str] = []
            kept = ""
            for name, flags in builds:
                command = [*compiler, "-O2", "-pipe", *flags, f"-I{headers}", "-o", str(tmp)]
                code, err = _compile([*command, str(SOURCE)], folder)
                if code != 0:
                    lines = err.decode(errors="replace").strip().splitlines()
                    failures.append(
                        f"{name}: {shlex.join(compiler)} exited with {code}: "
                        + " / ".join(lines[:3])
                    )
                    continue
                found = _verified(tmp, fresh=True)
                if isinstance(found, NativeMinder):
                    kept = name
                    break
                failures.append(f"{name}: the built minder does not run here ({found})")
        if not isinstance(found, NativeMinder):
            return "; ".join(failures) or found
        try:
            os.link(tmp, target)  # the same file: its device and inode stay
        except FileExistsError:
            there = _verified(target)
            if isinstance(there, NativeMinder):
                return there  # built meanwhile by another process
            tmp.replace(target)  # what is there is not a minder we would run
        except OSError as exc:
            if exc.errno not in _NO_HARD_LINKS:
                raise
            tmp.replace(target)  # a file system without hard links: rename it in place
        log.info("built the native minder %s (%s)", target, kept)
        return NativeMinder(target, found.device, found.inode)
    except (OSError, subprocess.SubprocessError) as exc:
        return str(exc)
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()


def _remove_older_builds(folder: Path, keep: Path) -> None:
    """Remove builds of earlier sources not used for ``OLD_BUILD_DAYS`` (another version of
    pysched may share the folder; a minder still running keeps its program while it runs), and
    temporary files as old."""
    cutoff = time.time() - OLD_BUILD_DAYS * 86400
    with contextlib.suppress(OSError):
        for path in folder.iterdir():
            # builds, and temporary files a killed build left (a build under way is young)
            if not path.name.startswith((_PREFIX, f".{_PREFIX}")) or path == keep:
                continue
            with contextlib.suppress(OSError):
                info = path.lstat()
                if info.st_mtime >= cutoff:
                    continue
                if stat.S_ISDIR(info.st_mode):  # a killed build's folder of headers
                    shutil.rmtree(path)
                else:
                    path.unlink()


class _Unavailable(Exception):
    """Why the native minder cannot be used here; ``quiet`` (no compiler: nothing is wrong,
    only slower) is logged at INFO, the rest at WARNING."""

    def __init__(self, why: str, *, quiet: bool = False) -> None:
        super().__init__(why)
        self.quiet = quiet


_NO_COMPILER = (
    "no C compiler (cc, gcc, clang or $CC) to build the native minder; install one for cheaper "
    "starts"
)
_FAILED: set[tuple[Path, tuple[Build, ...]]] = set()
"""Folders where the native minder could not be had in this process: a host that restarts
does not try (nor log) again."""
_BUILDING = threading.Lock()
"""One build at a time in this process (two hosts starting together)."""


def native_minder(cache_dir: Path, builds: tuple[Build, ...] = BUILDS) -> NativeMinder | None:
    """The native minder built from this version's ``minder.c`` in ``cache_dir`` (the first of
    ``builds`` that compiles and runs here), built now if need be; None (and logged, once)
    when it cannot be had here. Never raises: nothing about it may stop an attempt from
    starting.

    Blocks (a compiler may run for a second or two): for a worker thread."""
    folder = Path(os.path.realpath(cache_dir))  # checked and used as what it really is
    with _BUILDING:
        if (folder, builds) in _FAILED:
            return None
        try:
            return _found_or_built(folder, builds)
        except Exception as exc:  # _Unavailable, or anything unforeseen
            _FAILED.add((folder, builds))
            quiet = isinstance(exc, _Unavailable) and exc.quiet
            log.log(
                logging.INFO if quiet else logging.WARNING,
                "minders are forked Python processes: %s",
                exc if isinstance(exc, _Unavailable) else f"the native minder in {folder}: {exc}",
            )
            return None


def build_name(builds: tuple[Build, ...], errors: str) -> str:
    """The file name of a build: from the sources, the error texts (``errors``) and the
    builds tried, so an upgrade (or another Python, with other texts) builds anew."""
    digest = hashlib.sha256()
    for path in (SOURCE, SYSTEM_HEADER):
        try:
            digest.update(path.read_bytes())
        except OSError as exc:
            raise _Unavailable(f"cannot read {path} ({exc})") from None
    digest.update(errors.encode())
    digest.update(repr([flags for _, flags in builds]).encode())
    return f"{_PREFIX}{digest.hexdigest()[:16]}"


def _found_or_built(folder: Path, builds: tuple[Build, ...]) -> NativeMinder:
    """The checked native minder in ``folder``, built if need be; raises ``_Unavailable``."""
    errors = error_texts_header()
    target = folder / build_name(builds, errors)
    compiler = find_compiler()
    if compiler is None and not target.exists():
        raise _Unavailable(_NO_COMPILER, quiet=True)
    try:
        # each missing folder 0700: with the umask's mode, those above would be group-writable
        # under umask 002, which the check below refuses
        make_folders(str(folder), 0o700)
        info = folder.stat()
    except OSError as exc:
        raise _Unavailable(f"cannot make {folder} ({exc})") from None
    unsafe = _unsafe_above(folder)  # once it exists: a folder made meanwhile by another
    if unsafe is not None:  # user in /tmp is caught here
        raise _Unavailable(
            f"{folder} is not safe for the native minder ({unsafe}: others could put a "
            "program of theirs in its place); set PYSCHED_MINDER_CACHE to a folder only this "
            "user and root can change"
        )
    if not owned_privately(info):
        raise _Unavailable(
            f"{folder} is not this user's alone (others may write to it); make it so, or set "
            "PYSCHED_MINDER_CACHE to another folder"
        )
    found = _verified(target)
    if isinstance(found, NativeMinder):
        return found
    if compiler is None:
        raise _Unavailable(f"{_NO_COMPILER} ({target}: {found})", quiet=True)
    began = time.monotonic()
    built = _build(compiler, folder, target, builds, errors)
    if isinstance(built, str):
        raise _Unavailable(f"cannot build {SOURCE.name}: {built}")
    log.info("the native minder's build took %.2f s", time.monotonic() - began)
    _remove_older_builds(folder, target)
    return built
