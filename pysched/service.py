"""``pysched serve``: the engine, the journal, the local launcher and the HTTP API in one trio
process.

What it does, in order: open the journal (taking the state dir's lock), load the API tokens
(creating the first admin token when there is no tokens file), replay and start the engine,
bind the listen address and serve the API, then say where it listens and how the CLI finds a
token. Signals:

- SIGTERM / SIGINT: a graceful stop. Firing and starting stop first (``stop_starting``), then
  event streams end (the app's ``stopping`` event is set *before* hypercorn's shutdown trigger,
  else an open stream would hold the shutdown for the whole grace period), requests in flight
  finish, and the engine stops; running attempts stay with their minders (the next start
  adopts them) and the journal finishes its last commit. Exit 0. A second SIGTERM / SIGINT
  meanwhile (Ctrl-C twice) ends the requests' grace at once; the rest is the same.
- SIGHUP: reload the config (``pysched.reload``): all of it or none of it.

If the journal fails, the engine fail-stops and ``serve`` exits 1 with the cause; so it does
when the state dir is locked by another scheduler or the address cannot be bound.
"""

from __future__ import annotations

import logging
import signal
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Protocol

import trio

from pysched.config.model import Config, Listen
from pysched.engine import Engine, open_engine
from pysched.engine.events import Event
from pysched.errors import TokenFileError, leaves
from pysched.gc_pause import freeze_startup_heap, tune_for_service
from pysched.launch.base import Launcher
from pysched.reload import Reloader
from pysched.server_file import current_path, remove_current, write_current
from pysched.store import Store
from pysched.systemd import SystemdNotifier, run_watchdog
from pysched.timing.clock import Clock, RealClock
from pysched.tokens import Tokens, first_admin_token

if TYPE_CHECKING:
    from pysched.web.event_stream import Stopping

log = logging.getLogger("pysched.service")

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)
RELOAD_SIGNALS = (signal.SIGHUP,)
SHUTDOWN_GRACE = 10.0
"""The most a stop waits for the web server to finish: hypercorn itself gives requests in
flight ``GRACEFUL_SECONDS`` (5 s) of it, and closes idle connections at once."""
FAILED_GRACE = 2.0
"""After a fail-stop, the most the web server is given to answer the requests in flight (503s,
quickly) before the service exits."""


class Notifier(Protocol):
    """Who hears about the service's life (systemd's notify socket, in production)."""

    def ready(self, status: str | None = None) -> object: ...

    def reloading(self, status: str | None = None) -> object: ...

    def stopping(self, status: str | None = None) -> object: ...


class _Silent:
    def ready(self, status: str | None = None) -> None:
        pass

    def reloading(self, status: str | None = None) -> None:
        pass

    def stopping(self, status: str | None = None) -> None:
        pass


@dataclass(frozen=True, slots=True, kw_only=True)
class ServeResult:
    """How ``serve`` ended: ``code`` is the process exit code, ``reason`` says why."""

    code: int
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Serving:
    """What ``serve`` hands its starter once it is up."""

    engine: Engine
    urls: list[str] = field(default_factory=list[str])
    """The URLs the API answers on (empty when served without HTTP)."""
    reloader: Reloader | None = None


async def serve(
    config: Config,
    *,
    launcher_factory: Callable[[Config], Launcher],
    clock: Clock | None = None,
    sync: bool = True,
    http: bool = True,
    listen: Listen | None = None,
    notifier: Notifier | None = None,
    announce: bool = True,
    stop_signals: tuple[int, ...] = STOP_SIGNALS,
    reload_signals: tuple[int, ...] = RELOAD_SIGNALS,
    task_status: trio.TaskStatus[Serving] = trio.TASK_STATUS_IGNORED,
) -> ServeResult:
    """Run the scheduler over the config's state dir until a stop signal or a fail-stop.

    ``task_status.started`` receives a ``Serving`` once the engine has replayed, recovered and
    started and the API listens. ``sync=False`` skips fsync (tests under an autojump clock,
    where fsync threads would let virtual time race ahead). ``http=False`` runs without the
    API; ``listen`` overrides ``scheduler.listen`` (port 0 picks a free port). ``announce``
    writes ``current.json`` (``pysched.server_file``) so the CLI on this machine finds the
    server with no options; it is removed at a clean stop.

    **Cancellation:** cancelling ``serve`` is a graceful stop like SIGTERM, without waiting for
    requests in flight: attempts keep running under their minders; the journal's in-flight
    commit completes first.
    """
    notifier = notifier or _Silent()
    tune_for_service()
    settings = config.scheduler
    clock = clock or RealClock()
    store = await trio.to_thread.run_sync(lambda: Store.open(settings.state_dir, sync=sync))
    launcher = launcher_factory(config)
    with trio.open_signal_receiver(*stop_signals, *reload_signals) as signals:
        async with open_engine(
            config,
            store,
            clock=clock,
            launcher=launcher,
            # ids grow across restarts: they start from the clock, in microseconds
            first_event_id=int(clock.now().timestamp() * 1_000_000),
        ) as engine:
            log.info(
                "serving %d jobs; state in %s, logs in %s",
                len(config.jobs),
                settings.state_dir,
                settings.log_dir,
            )
            result = ServeResult(code=0, reason="stopped")
            web: _Web | None = None
            try:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(_log_events, engine)
                    if http:
                        try:
                            web = await _Web.start(
                                nursery, engine, config, listen, notifier, announce
                            )
                        except (OSError, TokenFileError) as exc:
                            nursery.cancel_scope.cancel()
                            return _refused(exc, listen or settings.listen)
                    reloader = (
                        web.reloader
                        if web is not None
                        else Reloader(engine, config.path, watcher=notifier)
                    )
                    freeze_startup_heap()
                    task_status.started(
                        Serving(engine=engine, urls=web.urls if web else [], reloader=reloader)
                    )
                    where = f" on {', '.join(web.urls)}" if web is not None else ""
                    count = len(config.jobs)
                    jobs = f"{count} job{'s' if count != 1 else ''}"
                    notifier.ready(status=f"serving {jobs}{where}")
                    if isinstance(notifier, SystemdNotifier):
                        healthy = lambda: engine.error is None  # noqa: E731
                        nursery.start_soon(partial(run_watchdog, notifier, healthy=healthy))

                    async def on_failure() -> None:
                        nonlocal result
                        error = await engine.wait_failed()
                        result = ServeResult(code=1, reason=f"the journal failed: {error}")
                        if web is not None:
                            # the requests in flight (the one whose change failed among them)
                            # get their answer, 503 by now, before the server goes
                            with trio.move_on_after(FAILED_GRACE):
                                await web.stop()
                        nursery.cancel_scope.cancel()

                    nursery.start_soon(on_failure)
                    async for signum in signals:
                        name = signal.Signals(signum).name
                        if signum in reload_signals:
                            log.info("%s: reloading %s", name, config.path)
                            nursery.start_soon(_reload, reloader, name)
                            continue
                        log.info("%s: stopping (running attempts stay with their minders)", name)
                        if engine.error is None:  # a fail-stop in its grace stays a failure
                            result = ServeResult(code=0, reason=f"stopped by {name}")
                        break
                    reloader.stop()  # no reload from here on (nor a READY=1 after STOPPING=1)
                    notifier.stopping(status="stopping; running attempts stay with their minders")
                    engine.stop_starting()  # at once: the web's stop may take its grace
                    if web is not None:
                        with trio.CancelScope() as grace:
                            nursery.start_soon(_cut_short, signals, reload_signals, grace)
                            await web.stop()
                    nursery.cancel_scope.cancel()
            finally:
                if web is not None:  # whatever the exit: no CLI is sent to a gone server
                    await web.forget()
    log.info("%s", result.reason)
    return result


def _only_os_error(group: BaseExceptionGroup[BaseException]) -> OSError | None:
    """The first ``OSError`` of a group whose every leaf is one, else None."""
    found = leaves(group)
    errors = [leaf for leaf in found if isinstance(leaf, OSError)]
    return errors[0] if errors and len(errors) == len(found) else None


def _refused(exc: BaseException, listen: Listen) -> ServeResult:
    if isinstance(exc, OSError) and exc.filename:
        reason = f"cannot read {exc.filename}: {exc.strerror or exc} (check scheduler.tls)"
    elif isinstance(exc, OSError):
        reason = f"cannot listen on {listen}: {exc.strerror or exc}"
        reason += " — is another pysched (or program) using it? change scheduler.listen or --listen"
    else:
        reason = str(exc)
    log.error("%s", reason)
    return ServeResult(code=1, reason=reason)


async def _cut_short(
    signals: AsyncIterator[int], reload_signals: tuple[int, ...], grace: trio.CancelScope
) -> None:
    """During a graceful stop: a second stop signal (Ctrl-C twice) ends the requests' grace at
    once. Reload signals are not acted on any more."""
    async for signum in signals:
        name = signal.Signals(signum).name
        if signum in reload_signals:
            log.info("%s: not reloading, pysched is stopping", name)
            continue
        log.info("%s again: stopping now, without waiting for requests in flight", name)
        grace.cancel()
        return


async def _reload(reloader: Reloader, by: str) -> None:
    try:
        await reloader.reload(by=by)
    except Exception:
        log.exception("reload on %s failed", by)


class _Web:
    """The HTTP side of the service: tokens, the app, hypercorn, and its orderly stop."""

    def __init__(self, urls: list[str], reloader: Reloader, stopping: Stopping) -> None:
        self.urls = urls
        self.reloader = reloader
        self._stopping = stopping
        self._shutdown = trio.Event()
        self._done = trio.Event()
        self.announced = False

    @classmethod
    async def start(
        cls,
        nursery: trio.Nursery,
        engine: Engine,
        config: Config,
        listen: Listen | None,
        notifier: Notifier,
        announce: bool,
    ) -> _Web:
        from pysched.metrics import Metrics
        from pysched.web import TokenBook, WebContext, create_app, serve_http

        settings = config.scheduler
        tokens_path, admin_path = settings.tokens_path, settings.admin_token_path

        def load() -> tuple[bool, Tokens]:
            created = not tokens_path.exists()
            return created, first_admin_token(tokens_path, admin_path)

        try:
            created, tokens = await trio.to_thread.run_sync(load)
        except OSError as exc:
            raise TokenFileError(f"cannot set up the API tokens in {tokens_path}: {exc}") from exc
        book = TokenBook(tokens_path, tokens)
        reloader = Reloader(engine, config.path, tokens=book, watcher=notifier)
        metrics = Metrics(engine)
        await nursery.start(metrics.run)
        context = WebContext(engine=engine, tokens=book, reloader=reloader, metrics=metrics)
        app = create_app(context)
        web = cls([], reloader, context.stopping)

        async def run_server(task_status: trio.TaskStatus[list[str]]) -> None:
            try:
                await serve_http(
                    app,
                    listen or settings.listen,
                    settings.tls,
                    shutdown=web._shutdown,
                    task_status=task_status,
                )
            except BaseExceptionGroup as group:
                # hypercorn binds inside nurseries of its own: a port in use, or a missing
                # certificate, arrives wrapped; unwrap it so serve can say what it was
                failure = _only_os_error(group)
                if failure is None:
                    raise
                raise failure from None
            finally:
                web._done.set()

        web.urls = await nursery.start(run_server)
        for url in web.urls:
            log.info("listening on %s (API at %s/api/v1)", url, url)
        if announce:
            try:
                note = await trio.to_thread.run_sync(
                    partial(
                        write_current,
                        url=web.urls[0],
                        config=config.path,
                        admin_token_path=admin_path,
                        ca=settings.tls.cert if settings.tls else None,
                    )
                )
            except OSError as exc:  # a convenience for the CLI, never a reason to stop
                log.warning("cannot write the note the CLI finds servers by: %s", exc)
            else:
                web.announced = True
                log.info("the CLI on this machine finds this server through %s", note)
        if created:
            log.info(
                "created the first admin token in %s (readable only by you); the CLI on this "
                "machine finds it with -c %s, or give --token / PYSCHED_TOKEN",
                admin_path,
                config.path.absolute(),  # the hint must work from any folder
            )
        else:
            log.info(
                "tokens from %s; the CLI on this machine uses the admin token in %s with -c "
                "CONFIG, or give --token / PYSCHED_TOKEN (pysched token create NAME --role ROLE)",
                tokens_path,
                admin_path,
            )
        return web

    async def stop(self) -> None:
        """End event streams, then let hypercorn finish requests in flight."""
        self._stopping.set()
        self._shutdown.set()
        with trio.move_on_after(SHUTDOWN_GRACE):
            await self._done.wait()
        await self.forget()

    async def forget(self) -> None:
        """Remove ``current.json`` (once), so no CLI is sent to a server that has gone."""
        if self.announced:
            self.announced = False
            with trio.CancelScope(shield=True):
                try:
                    await trio.to_thread.run_sync(remove_current)
                except OSError as exc:  # a full disk, say: never a reason to fail the stop
                    log.warning("could not update %s: %s", current_path(), exc)


async def _log_events(engine: Engine) -> None:
    """One log line per event; a checkpoint every few lines, so a burst of a thousand events
    (one release of a held job) is written in short steps, not one long one."""
    written = 0
    async for event in engine.events.follow():
        log.info("%s", describe(event))
        written += 1
        if written % 32 == 0:
            await trio.lowlevel.checkpoint()


def describe(event: Event) -> str:
    """One human line for an event (never a secret: events carry no commands or env)."""
    data = event.data
    if event.kind in ("run_created", "run_changed"):
        reason = f" — {data['reason']}" if data.get("reason") else ""
        return f"{data['run_id']} {data['state']}{reason}"
    if event.kind == "attempt_started":
        return f"{data['run_id']} attempt {data['attempt']} started"
    if event.kind == "attempt_ended":
        code = data.get("exit_code")
        return f"{data['run_id']} attempt {data['attempt']} {data['outcome']}" + (
            f" (exit {code})" if code is not None else ""
        )
    if event.kind == "firing_skipped":
        return f"{data['job']} firing at {data['at']} skipped: {data['reason']}"
    if event.kind == "action":
        who = f" by {data['by']}" if data.get("by") else ""
        return f"{data['action']} {data['target']}{who}"
    if event.kind == "config_applied":
        who = f" by {data['by']}" if data.get("by") else ""
        return f"config {str(data.get('sha256', ''))[:12]} applied{who}"
    if event.kind == "reload_failed":
        return f"reload refused ({len(data.get('problems', []))} problem(s)); the config stays"
    return f"{event.kind} {dict(data)}"


def configure_logging(level: int = logging.INFO) -> None:
    """Human lines on stderr: time, level, message."""
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
