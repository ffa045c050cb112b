"""The launcher's side of the minder host: start it, ask it for minders, notice when it dies.

``MinderHost.spawn(job, marker)`` returns the pid and start time of a freshly forked minder (see
``pysched.launch.host`` for the host and its protocol). The host is started by ``prepare`` as
the engine opens (or else on first use), in a worker thread (a ``Popen`` is a fork and an exec:
never on the loop), and again after it died. One that does not say it is ready within
``READY_TIMEOUT`` is killed, and the start that needed it fails.

Nothing here blocks the loop: both pipes are non-blocking and waited on with
``trio.lowlevel.wait_writable`` / ``wait_readable``. Requests and answers are matched by id.
There is no background task (the launcher owns nothing long-lived but the host process):
the callers take turns. Whoever finds the outbox idle writes everything queued meanwhile;
whoever finds nobody reading reads answers for everyone until its own has come, then hands the
reading to another caller still waiting. A burst of 200 starts is therefore a few large writes
and a stream of answers, each caller resuming as soon as its own minder exists.

If the host dies (its answers end), every request still unanswered fails with ``HostGone``:
the host may or may not have forked its minder, and only the attempt's files can tell (the
local launcher looks, as recovery does). The next ``spawn`` starts a new host.

The host ends when its standard input does: ``close()``, the ``MinderHost`` being collected,
or this process dying. A host is tied to the trio run that started it; a later run starts its
own.
"""

from __future__ import annotations

import contextlib
import logging
import marshal
import os
import select
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import trio

from pysched.launch.native_minder import NativeMinder, native_minder

__all__ = ["HostGone", "MinderHost"]

log = logging.getLogger(__name__)

HOST = Path(__file__).with_name("host.py")
# Imported as a module (cached bytecode), with ``-I -S``: isolated from the environment and
# site packages, as the minder it forks must be.
READY_TIMEOUT = 30.0
"""Seconds a starting host has to say it is ready (it needs about 20 ms): a ``python`` that
hangs instead must not hang every start, or the engine's close, with it."""
_HOST_BOOT = f"import sys;sys.path.insert(0,{str(HOST.parent)!r});import host;sys.exit(host.main())"


def _readable_within(fd: int, seconds: float) -> bool:
    """Whether ``fd`` has something to read (or its end) within ``seconds`` of real time.
    Blocks: for a worker thread."""
    readable, _, _ = select.select([fd], [], [], max(seconds, 0.0))
    return bool(readable)


class HostGone(OSError):
    """The minder host ended before answering (its minder may or may not have been forked), or
    before it was ready (nothing was asked of it yet)."""


@dataclass(slots=True, eq=False)
class _Pending:
    """One request waiting for its answer."""

    answer: tuple[int, int | None] | OSError | None = None
    waiting: bool = False
    wake: trio.Event = field(default_factory=trio.Event)


@dataclass(slots=True, eq=False, kw_only=True)
class _Link:
    """One running host and the conversation with it."""

    process: subprocess.Popen[bytes]
    to_host: int
    from_host: int
    token: trio.lowlevel.TrioToken
    outbox: bytearray = field(default_factory=bytearray)
    inbox: bytearray = field(default_factory=bytearray)
    pending: dict[int, _Pending] = field(default_factory=dict[int, _Pending])
    sending: bool = False
    reading: bool = False
    gone: bool = False
    closed: bool = False

    def close(self) -> None:
        """Close both pipes (the host then exits); safe to call twice and from ``__del__``."""
        if self.closed:
            return
        self.closed = True
        for fd in (self.to_host, self.from_host):
            with contextlib.suppress(RuntimeError):  # outside its trio run: nobody waits
                trio.lowlevel.notify_closing(fd)  # wakes a task waiting on it
            with contextlib.suppress(OSError):
                os.close(fd)

    def __del__(self) -> None:
        self.close()


@dataclass(slots=True, eq=False)
class _Opening:
    """A host being started, which other callers wait for."""

    token: trio.lowlevel.TrioToken
    done: trio.Event = field(default_factory=trio.Event)
    error: OSError | None = None


class MinderHost:
    """A lazily started minder host; see the module docstring.

    ``python`` runs the host (and so every minder it forks). ``native_cache``: where the
    native minder is built and kept (``pysched.launch.native_minder``), or None to fork every
    minder from the host.
    """

    def __init__(self, python: str = sys.executable, *, native_cache: Path | None = None) -> None:
        self.python = python
        self.native_cache = native_cache
        self.native: NativeMinder | None = None
        """The native minder the running host starts, if it does."""
        self._link: _Link | None = None
        self._opening: _Opening | None = None
        self._next_id = 0

    @property
    def pid(self) -> int | None:
        """The running host's pid, if one runs (for tests and diagnosis)."""
        link = self._link
        return None if link is None or link.gone else link.process.pid

    def close(self) -> None:
        """Let the host go: it exits once it has read what was sent. Minders run on."""
        link, self._link = self._link, None
        if link is not None:
            self._lose(link)
            link.close()

    async def prepare(self) -> None:
        """Start the host now, in this trio run, rather than at the first ``spawn`` (about
        20 ms: an interpreter and the minder's code). A host that cannot start is logged, and
        the first ``spawn`` tries again and reports it."""
        try:
            await self._current()
        except OSError as exc:
            log.warning("the minder host could not start yet: %s", exc)

    async def spawn(self, job: dict[str, Any], marker: Path) -> tuple[int, int | None]:
        """Have the host touch ``marker`` and fork a minder for ``job``: its pid and its start
        time in clock ticks (None when it had already ended).

        Raises ``HostGone`` if the host died before answering, ``OSError`` if no host could be
        started or the host could not fork (then no minder exists and the marker is gone).

        **Cancellation:** callers shield it: once the request is written, a minder may be made,
        and its answer must reach someone.
        """
        link = await self._current()
        self._next_id += 1
        request_id = self._next_id
        pending = _Pending()
        link.pending[request_id] = pending
        # marshal, not JSON: the host and minder read it without importing json
        body = marshal.dumps((request_id, job, str(marker)))
        link.outbox += len(body).to_bytes(4, "big") + body
        if not link.sending:
            await self._flush(link)
        await self._await_answer(link, pending)
        answer = pending.answer
        if answer is None:
            raise HostGone("the minder host ended before answering")
        if isinstance(answer, OSError):
            raise answer
        return answer

    # -- the conversation -------------------------------------------------------------------

    async def _flush(self, link: _Link) -> None:
        """Write the outbox, and whatever is added to it meanwhile, to the host."""
        link.sending = True
        try:
            while link.outbox and not link.gone:
                data = memoryview(bytes(link.outbox))
                link.outbox.clear()
                while data:
                    try:
                        written = os.write(link.to_host, data)
                    except BlockingIOError:
                        await trio.lowlevel.wait_writable(link.to_host)
                        continue
                    data = data[written:]
        except (OSError, trio.ClosedResourceError):
            self._lose(link)
        finally:
            link.sending = False

    async def _await_answer(self, link: _Link, pending: _Pending) -> None:
        """Return once ``pending`` is answered or the host is gone, reading if nobody is."""
        while pending.answer is None and not link.gone:
            if link.reading:
                pending.waiting = True
                pending.wake = trio.Event()
                await pending.wake.wait()
                pending.waiting = False
                continue
            link.reading = True
            try:
                while pending.answer is None and not link.gone:
                    data = await self._read(link)
                    if not data:
                        self._lose(link)
                        break
                    link.inbox += data
                    self._deliver(link)
            finally:
                link.reading = False
                # hand the reading on to a caller still waiting for its answer
                for other in link.pending.values():
                    if other.waiting:
                        other.wake.set()
                        break
        if link.gone and not link.closed and link is not self._link:
            await self._reap(link)

    async def _read(self, link: _Link) -> bytes:
        while True:
            try:
                return os.read(link.from_host, 65536)
            except BlockingIOError:
                try:
                    await trio.lowlevel.wait_readable(link.from_host)
                except trio.ClosedResourceError:
                    return b""
            except OSError:
                return b""

    def _deliver(self, link: _Link) -> None:
        """Hand every complete answer line in the inbox to its request."""
        while (end := link.inbox.find(b"\n")) >= 0:
            line = bytes(link.inbox[:end])
            del link.inbox[: end + 1]
            head, _, rest = line.partition(b" ")
            pending = link.pending.pop(int(head), None)
            if pending is None:
                log.warning("the minder host answered an unknown request: %r", line[:80])
                continue
            if rest.startswith(b"error "):
                pending.answer = OSError(rest.removeprefix(b"error ").decode(errors="replace"))
            else:
                pid, start = (int(part) for part in rest.split())
                pending.answer = (pid, None if start < 0 else start)
            pending.wake.set()

    def _lose(self, link: _Link) -> None:
        """The host is gone (or let go): fail every unanswered request."""
        if link.gone:
            return
        link.gone = True
        if self._link is link:
            self._link = None
        for pending in link.pending.values():
            pending.wake.set()
        link.pending.clear()

    async def _reap(self, link: _Link) -> None:
        link.close()
        if link.process.poll() is None:
            # its standard output has ended, so it is exiting: a moment in a worker thread
            await trio.to_thread.run_sync(link.process.wait)
        log.warning(
            "the minder host (pid %d) ended with %s", link.process.pid, link.process.returncode
        )

    # -- starting the host ------------------------------------------------------------------

    async def _current(self) -> _Link:
        """The running host of this trio run, started if need be."""
        token = trio.lowlevel.current_trio_token()
        while True:
            link = self._link
            if link is not None and link.token is token and not link.gone:
                return link
            opening = self._opening
            if opening is not None and opening.token is token:
                await opening.done.wait()
                if opening.error is not None:
                    raise opening.error
                continue
            if link is not None:  # left over from an earlier trio run
                self.close()
            opening = self._opening = _Opening(token)
            try:
                self._link = await self._open(token)
            except OSError as exc:
                opening.error = exc
                raise
            finally:
                self._opening = None
                opening.done.set()

    async def _open(self, token: trio.lowlevel.TrioToken) -> _Link:
        process, to_host, from_host = await trio.to_thread.run_sync(self._popen)
        link = _Link(process=process, to_host=to_host, from_host=from_host, token=token)
        try:
            return await self._until_ready(link)
        except BaseException:
            # cancelled (the engine closing) or failed before the host was ready: nothing was
            # asked of it, so it goes (never left running with nobody to talk to it)
            link.gone = True
            link.close()
            if process.poll() is None:
                process.kill()
            raise

    async def _until_ready(self, link: _Link) -> _Link:
        process, to_host, from_host = link.process, link.to_host, link.from_host
        os.set_blocking(to_host, False)
        os.set_blocking(from_host, False)
        # real time, not trio's: under a test's virtual clock that jumps while nothing is
        # ready, a trio deadline would pass before the host had a real chance to start
        deadline = time.monotonic() + READY_TIMEOUT
        while b"\n" not in link.inbox:
            if not await trio.to_thread.run_sync(
                _readable_within, from_host, deadline - time.monotonic(), abandon_on_cancel=True
            ):  # an interpreter that hangs (not a Python, say)
                link.gone = True
                process.kill()
                await self._reap(link)
                raise OSError(
                    f"the minder host ({self.python}) did not say it was ready within "
                    f"{READY_TIMEOUT:g} s"
                )
            data = await self._read(link)
            if not data:
                link.gone = True
                await self._reap(link)
                # HostGone: nothing was asked of it yet, so a new host may be tried at once
                raise HostGone(
                    f"the minder host did not start ({self.python} exited with "
                    f"{link.process.returncode})"
                )
            link.inbox += data
        end = link.inbox.find(b"\n")
        if not link.inbox.startswith(b"ready "):
            link.gone = True
            link.close()
            raise OSError(f"the minder host said {bytes(link.inbox[:end])[:80]!r}, not ready")
        kind = bytes(link.inbox[:end]).split()[2:3]
        del link.inbox[: end + 1]
        if self.native is not None and kind != [b"native"]:
            log.warning(
                "minders are forked Python processes: the minder host could not open the "
                "native minder %s as it was checked (replaced or changed meanwhile)",
                self.native.path,
            )
            self.native = None
        log.info(
            "minder host started (pid %d): %s",
            process.pid,
            "forked Python minders"
            if self.native is None
            else f"native minders ({self.native.path})",
        )
        return link

    def _popen(self) -> tuple[subprocess.Popen[bytes], int, int]:
        """Runs in a worker thread: find (or build) the native minder, and start the host with
        a pipe each way."""
        self.native = None if self.native_cache is None else native_minder(self.native_cache)
        native = [] if self.native is None else self.native.host_args()
        requests_read, requests_write = os.pipe()
        answers_read, answers_write = os.pipe()
        try:
            process = subprocess.Popen(
                [self.python, "-I", "-S", "-c", _HOST_BOOT, *native],
                stdin=requests_read,
                stdout=answers_write,
                stderr=subprocess.DEVNULL,
                start_new_session=True,  # no terminal signal or group kill of ours reaches it
            )
        except BaseException:
            os.close(requests_write)
            os.close(answers_read)
            raise
        finally:
            os.close(requests_read)
            os.close(answers_write)
        return process, requests_write, answers_read
