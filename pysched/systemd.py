"""Telling systemd how the service is doing (``sd_notify``), without a dependency.

Under a ``Type=notify`` unit, systemd waits for ``READY=1`` before it calls the service
started, and a unit with ``WatchdogSec=`` restarts the service when ``WATCHDOG=1`` stops
arriving. The protocol is tiny: one datagram of ``KEY=value`` lines to the unix socket named in
``$NOTIFY_SOCKET``, so pysched speaks it itself instead of pulling in ``sdnotify`` or
``systemd-python`` (the latter needs libsystemd headers to build).

``SystemdNotifier`` sends the messages; ``run_watchdog`` is the service that pings the watchdog
only while the trio loop is on time and the caller says the service is healthy, so a stuck or
fail-stopped scheduler stops pinging and systemd restarts it.

Outside systemd (no ``$NOTIFY_SOCKET``) every method is a no-op, so the service calls them
unconditionally. Sending never raises into the service and never waits: the socket is
non-blocking, and a message the socket cannot take is dropped with one warning in the log.
"""

from __future__ import annotations

import logging
import os
import socket
import time
from collections.abc import Callable, MutableMapping
from types import TracebackType

import trio

__all__ = ["SystemdNotifier", "run_watchdog"]

log = logging.getLogger(__name__)

_ENV_KEYS = ("NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID")


def _always_healthy() -> bool:
    return True


class SystemdNotifier:
    """Sends ``sd_notify`` messages to ``$NOTIFY_SOCKET``; a no-op when there is none.

    Build it with ``from_environ()``. ``address`` is the socket as systemd writes it: a
    filesystem path (``/run/systemd/notify``) or an abstract socket (``@name``, Linux).
    ``watchdog_usec`` is the watchdog interval in microseconds when the watchdog is enabled
    for this process, else None.

    Every method sends one datagram and returns whether it was sent. A failure (the socket is
    gone, its buffer is full) is logged as a warning the first time and at debug level after,
    and never raised: telling systemd is a courtesy that must never take the scheduler down.
    """

    def __init__(self, address: str | None, *, watchdog_usec: int | None = None) -> None:
        self._address = _socket_address(address)
        self._watchdog_usec = watchdog_usec if watchdog_usec and watchdog_usec > 0 else None
        self._socket: socket.socket | None = None
        self._warned = False
        if address and self._address is None:
            log.warning("NOTIFY_SOCKET=%r is not a unix socket address; not notifying", address)

    @classmethod
    def from_environ(
        cls, environ: MutableMapping[str, str] | None = None, *, unset: bool = False
    ) -> SystemdNotifier:
        """A notifier for what systemd put in the environment (default ``os.environ``).

        The watchdog counts as enabled as ``sd_watchdog_enabled(3)`` says: ``WATCHDOG_USEC``
        is a positive integer and ``WATCHDOG_PID``, when set, is this process's pid (so a
        child that inherited the variables does not ping on its parent's behalf).

        ``unset=True`` removes ``NOTIFY_SOCKET``, ``WATCHDOG_USEC`` and ``WATCHDOG_PID`` from
        the environment after reading them, like ``sd_notify(unset_environment=1)``. The
        service wants this: commands inherit the scheduler's environment, and a job should
        neither see nor talk to the scheduler's notify socket.
        """
        env: MutableMapping[str, str] = os.environ if environ is None else environ
        address = env.get("NOTIFY_SOCKET") or None
        watchdog_usec = _watchdog_usec(env.get("WATCHDOG_USEC"), env.get("WATCHDOG_PID"))
        if unset:
            for key in _ENV_KEYS:
                env.pop(key, None)
        return cls(address, watchdog_usec=watchdog_usec)

    # -- what it knows ---------------------------------------------------------------------

    @property
    def enabled(self) -> bool:
        """Whether there is a socket to notify (pysched runs under a ``Type=notify`` unit)."""
        return self._address is not None

    @property
    def watchdog_interval(self) -> float | None:
        """The watchdog interval in seconds (``WatchdogSec=``), or None when not enabled."""
        if self._address is None or self._watchdog_usec is None:
            return None
        return self._watchdog_usec / 1_000_000

    # -- the messages ----------------------------------------------------------------------

    def ready(self, status: str | None = None) -> bool:
        """``READY=1``: start-up (or a reload) is complete; systemd reports the unit active.

        Send it once the engine has replayed, recovered and the API is listening, and again
        after each reload.
        """
        return self.send("READY=1", status=status)

    def reloading(self, status: str | None = None) -> bool:
        """``RELOADING=1`` with ``MONOTONIC_USEC``: a reload has begun; follow with ``ready()``.

        systemd 253 and later (``Type=notify-reload``) want the ``CLOCK_MONOTONIC`` time in
        microseconds in the same message, so they can tell this reload from an older one.
        """
        usec = time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
        return self.send("RELOADING=1", f"MONOTONIC_USEC={usec}", status=status)

    def stopping(self, status: str | None = None) -> bool:
        """``STOPPING=1``: a graceful stop has begun (SIGTERM), so systemd shows "deactivating"."""
        return self.send("STOPPING=1", status=status)

    def status(self, text: str) -> bool:
        """``STATUS=...``: one line shown by ``systemctl status`` (newlines become spaces)."""
        return self.send(status=text)

    def watchdog(self) -> bool:
        """``WATCHDOG=1``: the service is alive. ``run_watchdog`` decides when to send it."""
        return self.send("WATCHDOG=1")

    def extend_timeout(self, seconds: float) -> bool:
        """``EXTEND_TIMEOUT_USEC``: ask for more time to start or stop (a long journal replay)."""
        return self.send(f"EXTEND_TIMEOUT_USEC={max(0, round(seconds * 1_000_000))}")

    def send(self, *assignments: str, status: str | None = None) -> bool:
        """Send ``KEY=value`` lines (plus ``STATUS=`` when given) as one datagram.

        Returns False, without raising, when not under systemd or when the send failed.
        """
        if self._address is None:
            return False
        lines = list(assignments)
        if status is not None:
            lines.append("STATUS=" + " ".join(status.splitlines()))
        if not lines:
            return False
        message = "\n".join(lines).encode()
        try:
            if self._socket is None:
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
                sock.setblocking(False)
                self._socket = sock
            self._socket.sendto(message, self._address)
        except OSError as error:
            # BlockingIOError: systemd has not drained the socket; anything else: it is gone.
            # Either way the message is dropped: waiting would stall the loop for a courtesy.
            level = logging.DEBUG if self._warned else logging.WARNING
            self._warned = True
            log.log(level, "could not notify systemd (%s): %s", lines[0], error)
            return False
        return True

    # -- lifetime --------------------------------------------------------------------------

    def close(self) -> None:
        """Close the socket (sending again reopens it)."""
        if self._socket is not None:
            self._socket.close()
            self._socket = None

    def __enter__(self) -> SystemdNotifier:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def _socket_address(address: str | None) -> str | None:
    """The address to ``sendto``: a path as is, ``@name`` as the abstract ``\\0name``."""
    if not address:
        return None
    if address.startswith("@"):
        return "\0" + address[1:]
    if address.startswith("/"):
        return address
    return None  # e.g. vsock:..., which systemd uses for VMs; not pysched's business


def _watchdog_usec(usec: str | None, pid: str | None) -> int | None:
    try:
        interval = int(usec or "")
    except ValueError:
        return None
    if interval <= 0:
        return None
    if pid:
        try:
            if int(pid) != os.getpid():
                return None
        except ValueError:
            return None
    return interval


async def run_watchdog(
    notifier: SystemdNotifier,
    *,
    healthy: Callable[[], bool] = _always_healthy,
    ping_every: float | None = None,
    max_lateness: float | None = None,
    tick: float | None = None,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Ping ``WATCHDOG=1`` while the loop is on time and ``healthy()``; runs until cancelled.

    When the watchdog is not enabled (no ``WatchdogSec=``, or not under systemd) this reports
    started and returns at once, so the service can start it unconditionally.

    Every ``tick`` (default a quarter of the ping period, at most 1 s) it sleeps and measures
    how late trio woke it: that lateness is how long the loop was busy or blocked. Every
    ``ping_every`` seconds (default half ``WatchdogSec``, as ``sd_watchdog_enabled(3)``
    advises) it pings if the worst lateness since the last decision is at most
    ``max_lateness`` (default a quarter of ``WatchdogSec``) and ``healthy()`` is true
    (the service passes e.g. ``lambda: engine.error is None``). Otherwise it skips the ping and
    logs why, once per bad spell.

    A loop blocked outright never gets here at all, so systemd restarts it after
    ``WatchdogSec``. A loop that runs but keeps stalling, or an engine that has fail-stopped
    without exiting, misses its pings the same way. One skipped ping at the default cadence
    leaves about a whole interval without a ping, so a single stall longer than
    ``max_lateness`` is, by design, usually enough for a restart: attempts outlive the
    scheduler under their minders and the next start adopts them.

    **Cancellation:** cancelling it just stops the pings; nothing is left behind.
    """
    interval = notifier.watchdog_interval
    if interval is None:
        task_status.started()
        return
    period = ping_every if ping_every is not None else interval / 2
    threshold = max_lateness if max_lateness is not None else interval / 4
    step = tick if tick is not None else min(1.0, period / 4)
    log.info(
        "systemd watchdog: %gs; pinging every %gs while the loop is within %gs",
        interval,
        period,
        threshold,
    )
    notifier.watchdog()
    task_status.started()
    next_ping = trio.current_time() + period
    worst = 0.0
    failing = False
    while True:
        asleep = trio.current_time()
        await trio.sleep(step)
        now = trio.current_time()
        worst = max(worst, now - asleep - step)
        if now < next_ping:
            continue
        why: str | None = None
        if worst > threshold:
            why = f"the loop was {worst:.3f}s late"
        elif not healthy():
            why = "the service reports it is not healthy"
        if why is None:
            notifier.watchdog()
            if failing:
                log.info("systemd watchdog: healthy again, pinging")
            failing = False
        elif not failing:
            log.warning("systemd watchdog: not pinging, %s", why)
            failing = True
        worst = 0.0
        next_ping += period
        if next_ping <= now:  # after a long stall: a full period from now, not a burst
            next_ping = now + period
