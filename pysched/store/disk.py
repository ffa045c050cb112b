"""The store's few system calls, and the lock that makes one pysched the owner of a state dir.

``Disk`` gathers every call that changes a journal file after open, so a test can swap in one
that fails a write with ENOSPC, fails an fsync with EIO, or stops between two snapshot steps as
a crash would (``Disk.step``). ``StateLock`` is an exclusive ``flock`` on the state dir and
on ``state_dir/lock``.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path

from pysched.errors import StoreError
from pysched.store.layout import LOCK, STATE_FILE_MODE

# fdatasync flushes the data and the metadata needed to read it back (the file's size), which is
# all an append needs; it skips the timestamps fsync would also write.
_datasync = getattr(os, "fdatasync", os.fsync)


class Disk:
    """Writes and syncs for the store; replace it on a store (``store._disk``) to inject faults.

    Methods run in a worker thread when the store syncs, in the loop thread otherwise.
    """

    def write(self, fd: int, data: bytes) -> None:
        """Write all of ``data`` (a short write is continued, never left half done)."""
        written = os.write(fd, data)
        if written == len(data):
            return
        view = memoryview(data)[written:]
        while view:
            view = view[os.write(fd, view) :]

    def sync(self, fd: int) -> None:
        """Make what was written to ``fd`` durable (fdatasync where there is one)."""
        _datasync(fd)

    def sync_dir(self, path: Path) -> None:
        """Make the dir's entries (a new file, a rename, a removal) durable."""
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def step(self, name: str) -> None:
        """Called after each step of a snapshot (``rotated``, ``archived``, ``written``,
        ``renamed``, ``dir_synced``, ``segment_deleted``); does nothing. A test raises here to
        leave the files as a crash at that point would."""


class StateLock:
    """Exclusive ``flock`` locks on the state dir itself and on ``state_dir/lock``, which holds
    the owner's pid.

    ``flock`` locks belong to an open file, so a second ``acquire`` fails even in the same
    process, and the kernel drops the lock when the owner dies: a crash never leaves it stale.
    The dir's own lock is the one that matters: the lock file can be deleted (and a new one
    locked by a second scheduler) while its owner runs, the dir cannot while it holds the
    journal. The file's lock stays for older versions, which take only that one.
    """

    def __init__(self, dir_fd: int, fd: int) -> None:
        self._fds: tuple[int, int] | None = (dir_fd, fd)

    @classmethod
    def acquire(cls, state_dir: Path) -> StateLock:
        """Take the lock at once or raise ``StoreError`` naming the holder's pid."""
        path = state_dir / LOCK
        dir_fd = os.open(state_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        fd: int | None = None
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, STATE_FILE_MODE)
            for each in (dir_fd, fd):
                try:
                    fcntl.flock(each, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
                    raise StoreError(
                        f"state dir {state_dir} is in use by another pysched (pid {holder})"
                    ) from None
        except BaseException:
            for each in (fd, dir_fd):
                if each is not None:
                    os.close(each)
            raise
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        return cls(dir_fd, fd)

    def release(self) -> None:
        """Drop the lock; idempotent. The pid stays in the file (it names the last owner)."""
        fds, self._fds = self._fds, None
        for fd in fds or ():
            with contextlib.suppress(OSError):
                fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)
