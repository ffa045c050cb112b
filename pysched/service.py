"""``pysched serve``: the engine, the journal and the local launcher in one trio process.

It runs until SIGTERM or SIGINT, then stops gracefully: it stops firing and starting, leaves
running attempts to their minders (the next start adopts them), lets the journal finish its
last commit, and exits 0. If the journal fails, the engine fail-stops and ``serve`` exits 1
with the cause. One line per event goes to stderr.

The HTTP API joins this nursery with the service issue; agents after that.
"""

from __future__ import annotations

import logging
import signal
from collections.abc import Callable
from dataclasses import dataclass

import trio

from pysched.config.model import Config
from pysched.engine import Engine, open_engine
from pysched.engine.events import Event
from pysched.launch.base import Launcher
from pysched.store import Store
from pysched.timing.clock import Clock, RealClock

log = logging.getLogger("pysched.service")


@dataclass(frozen=True, slots=True, kw_only=True)
class ServeResult:
    """How ``serve`` ended: ``code`` is the process exit code, ``reason`` says why."""

    code: int
    reason: str


async def serve(
    config: Config,
    *,
    launcher_factory: Callable[[Config], Launcher],
    clock: Clock | None = None,
    sync: bool = True,
    stop_signals: tuple[int, ...] = (signal.SIGTERM, signal.SIGINT),
    task_status: trio.TaskStatus[Engine] = trio.TASK_STATUS_IGNORED,
) -> ServeResult:
    """Run the engine over the config's state dir until a stop signal or a fail-stop.

    ``task_status.started`` receives the engine once it has replayed, recovered and started.
    ``sync=False`` skips fsync (tests under an autojump clock, where fsync threads would let
    virtual time race ahead).

    **Cancellation:** cancelling ``serve`` is a graceful stop like SIGTERM: attempts keep
    running under their minders; the journal's in-flight commit completes first.
    """
    state_dir = config.scheduler.state_dir
    store = await trio.to_thread.run_sync(lambda: Store.open(state_dir, sync=sync))
    launcher = launcher_factory(config)
    with trio.open_signal_receiver(*stop_signals) as signals:
        async with open_engine(
            config, store, clock=clock or RealClock(), launcher=launcher
        ) as engine:
            log.info(
                "serving %d jobs; state in %s, logs in %s",
                len(config.jobs),
                state_dir,
                config.scheduler.log_dir,
            )
            result = ServeResult(code=0, reason="stopped")
            async with trio.open_nursery() as nursery:
                nursery.start_soon(_log_events, engine)
                task_status.started(engine)

                async def on_failure() -> None:
                    nonlocal result
                    error = await engine.wait_failed()
                    result = ServeResult(code=1, reason=f"the journal failed: {error}")
                    nursery.cancel_scope.cancel()

                nursery.start_soon(on_failure)
                async for signum in signals:
                    name = signal.Signals(signum).name
                    log.info("%s: stopping (running attempts stay with their minders)", name)
                    result = ServeResult(code=0, reason=f"stopped by {name}")
                    break
                nursery.cancel_scope.cancel()
    log.info("%s", result.reason)
    return result


async def _log_events(engine: Engine) -> None:
    async for event in engine.events.follow():
        log.info("%s", describe(event))


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
    return f"{event.kind} {dict(data)}"


def configure_logging(level: int = logging.INFO) -> None:
    """Human lines on stderr: time, level, message."""
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
