"""What the web layer works with: the engine, the tokens, the reloader, the metrics, and the
event that says the service is stopping (server-sent event streams end on it)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

import trio

from pysched.engine import Engine
from pysched.reload import Reloader
from pysched.tokens import TokenEntry
from pysched.web.auth import TokenBook
from pysched.web.event_stream import EncodedEvents, Stopping, Turns
from pysched.web.views import RunViews, TypicalDurations

T = TypeVar("T")


async def in_worker_thread(fn: Callable[..., T], *args: Any) -> T:
    """Run ``fn(*args)`` in a worker thread (the default way slow pure work leaves the loop)."""
    return await trio.to_thread.run_sync(fn, *args)


class Offload(Protocol):
    """How a handler runs pure, possibly slow work off the loop (a worker thread in the
    service; inline in fake-clock tests, where a thread would let virtual time race ahead)."""

    def __call__(self, fn: Callable[..., T], *args: Any) -> Awaitable[T]: ...


class MetricsSource(Protocol):
    def render(self) -> str: ...


@dataclass(kw_only=True)
class WebContext:
    engine: Engine
    tokens: TokenBook
    reloader: Reloader | None = None
    metrics: MetricsSource | None = None
    stopping: Stopping = field(default_factory=Stopping)
    """Set first thing on a graceful stop: event streams end at once instead of holding the
    server's shutdown for its whole grace period."""
    keepalive_seconds: float = 15.0
    encoded: EncodedEvents = field(default_factory=EncodedEvents)
    """Each event's SSE bytes, encoded once for every stream."""
    stream_turns: Turns = field(default_factory=Turns)
    """Event streams write a few at a time, so a burst never holds the loop for long."""
    offload: Offload = in_worker_thread
    _views: RunViews | None = field(default=None, init=False, repr=False)

    @property
    def views(self) -> RunViews:
        """Run views and typical job durations, shared by every request."""
        if self._views is None:
            typical = TypicalDurations(self.engine.book)
            self._views = RunViews(typical)
        return self._views


@dataclass(frozen=True, slots=True, kw_only=True)
class Call:
    """One request as a handler sees it: already authenticated, body already parsed."""

    context: WebContext
    args: Mapping[str, str]
    """Path parameters."""
    query: Mapping[str, str]
    body: Mapping[str, Any]
    caller: TokenEntry | None
    headers: Mapping[str, str]
    """Request headers, names in lower case."""

    @property
    def engine(self) -> Engine:
        return self.context.engine

    @property
    def views(self) -> RunViews:
        return self.context.views

    @property
    def who(self) -> str:
        """The caller's token name, written into the audit trail."""
        return self.caller.name if self.caller is not None else ""
