"""The native minder: ``minder.c`` built once on this machine, and where to find it.

A minder forked from the Python minder host costs about 5 ms of CPU an attempt (the fork of
an interpreter, its copy-on-write faults, the fork of that again for the command, and the
exit); the same minder in C costs a few hundred microseconds. When two hundred attempts start
at once, that is the difference between the last command starting after about 0.5 s and after
about 0.15 s on two cores (see the concurrency page).

So, when a C compiler is there (``$CC``, else ``cc``, ``gcc`` or ``clang`` on ``PATH``), the
launcher builds ``minder.c`` (C library only, about 0.3 s) into a cache folder the first time
it needs it, checks that the result runs here (``--check``: a folder mounted ``noexec`` fails
it), and has the minder host start that program for every attempt. The file is named after the
source's SHA-256, so an upgrade builds anew, and older builds are removed.

Where there is no compiler, or the build or its check fails, minders are forked Python
processes as before: the same files, the same notes, the same recovery; only slower. That is
logged once as the launcher starts its host.

- ``PYSCHED_MINDER_NATIVE=0`` in the environment: never build or use the native minder.
- ``PYSCHED_MINDER_CACHE``: the cache folder, over what the launcher was given (``pysched
  serve`` gives ``<state_dir>/minder``; otherwise ``$XDG_CACHE_HOME/pysched``, by default
  ``~/.cache/pysched``).

The cache folder is made owner-only (0700). A built minder found there is used only if it and
its folder belong to this user and no one else may write to them, and it passes the check;
anything else is built again.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import shlex
import shutil
import stat
import subprocess
import time
from pathlib import Path

from pysched.launch.host import NATIVE_MAGIC

__all__ = ["SOURCE", "cache_dir_for", "find_compiler", "native_minder", "native_minder_wanted"]

log = logging.getLogger(__name__)

SOURCE = Path(__file__).with_name("minder.c")
BUILD_TIMEOUT = 300.0
"""Seconds a compiler has to build the minder (it needs well under one)."""
CHECK_TIMEOUT = 10.0
"""Seconds a built minder has to answer ``--check``."""
_PREFIX = "pysched-minder-"


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
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "pysched"


def find_compiler() -> list[str] | None:
    """The C compiler to build with (``$CC``, split as a shell would, else the first of ``cc``,
    ``gcc`` and ``clang`` on ``PATH``), or None."""
    configured = os.environ.get("CC", "").strip()
    if configured:
        return shlex.split(configured)
    for name in ("cc", "gcc", "clang"):
        found = shutil.which(name)
        if found is not None:
            return [found]
    return None


def _ours_and_private(path: Path) -> bool:
    """Whether ``path`` belongs to this user and no one else may write to it."""
    try:
        info = path.stat()
    except OSError:
        return False
    return info.st_uid == os.geteuid() and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def _runs(program: Path) -> str | None:
    """None if ``program --check`` answers as a native minder of this version, else why not."""
    try:
        done = subprocess.run(
            [str(program), "--check"],
            capture_output=True,
            timeout=CHECK_TIMEOUT,
            check=False,
            env={},
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return str(exc)
    if done.returncode != 0 or done.stdout.strip() != NATIVE_MAGIC.encode():
        return f"--check exited with {done.returncode} and printed {done.stdout[:80]!r}"
    return None


def _usable(program: Path) -> bool:
    return (
        program.is_file()
        and _ours_and_private(program)
        and _ours_and_private(program.parent)
        and _runs(program) is None
    )


def _build(compiler: list[str], folder: Path, target: Path) -> str | None:
    """Build ``SOURCE`` into ``target``; None when done, else why not."""
    tmp = folder / f".{target.name}.{os.getpid()}.tmp"
    env = dict(os.environ, TMPDIR=str(folder), LC_ALL="C")  # /tmp may be read-only (systemd)
    try:
        done = subprocess.run(
            [*compiler, "-O2", "-pipe", "-o", str(tmp), str(SOURCE)],
            capture_output=True,
            timeout=BUILD_TIMEOUT,
            check=False,
            env=env,
            cwd=folder,
        )
        if done.returncode != 0:
            lines = done.stderr.decode(errors="replace").strip().splitlines()
            return f"{shlex.join(compiler)} exited with {done.returncode}: " + " / ".join(lines[:3])
        tmp.chmod(0o700)
        why = _runs(tmp)
        if why is not None:
            return f"the built minder does not run here ({why})"
        tmp.replace(target)
    except (OSError, subprocess.SubprocessError) as exc:
        return str(exc)
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()
    return None


def _remove_older_builds(folder: Path, keep: Path) -> None:
    """Remove builds of earlier sources (a running minder keeps its program while it runs)."""
    with contextlib.suppress(OSError):
        for path in folder.iterdir():
            if path.name.startswith(_PREFIX) and path != keep:
                with contextlib.suppress(OSError):
                    path.unlink()


def native_minder(cache_dir: Path) -> Path | None:
    """The native minder built from this version's ``minder.c`` in ``cache_dir``, built now if
    need be; None (and logged) when it cannot be built or run here.

    Blocks (a compiler may run for a second): for a worker thread."""
    try:
        source = SOURCE.read_bytes()
    except OSError as exc:
        log.warning("minders are forked Python processes: cannot read %s (%s)", SOURCE, exc)
        return None
    folder = Path(os.path.abspath(cache_dir))
    target = folder / f"{_PREFIX}{hashlib.sha256(source).hexdigest()[:16]}"
    if _usable(target):
        return target
    compiler = find_compiler()
    if compiler is None:
        log.info(
            "minders are forked Python processes: no C compiler (cc, gcc, clang or $CC) to "
            "build the native minder; install one for cheaper starts"
        )
        return None
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        log.warning("minders are forked Python processes: cannot make %s (%s)", folder, exc)
        return None
    if not _ours_and_private(folder):
        log.warning(
            "minders are forked Python processes: %s is not this user's alone (others may "
            "write to it); make it so, or set PYSCHED_MINDER_CACHE to another folder",
            folder,
        )
        return None
    began = time.monotonic()
    why = _build(compiler, folder, target)
    if why is not None:
        log.warning("minders are forked Python processes: cannot build %s: %s", SOURCE.name, why)
        return None
    log.info("built the native minder %s in %.2f s", target, time.monotonic() - began)
    _remove_older_builds(folder, target)
    return target
