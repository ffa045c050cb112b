"""Serving the app with hypercorn, inside the service's nursery.

``serve_http`` binds the listen address (``scheduler.listen``, or ``--listen``), with TLS when
``scheduler.tls`` is set, reports the bound URLs through ``task_status`` (port 0 picks a free
port, which tests use), and serves until ``shutdown`` is set. Event streams watch the app's own
stopping event, which the service sets *before* this one, so an open stream never holds the
shutdown for hypercorn's whole grace period.
"""

from __future__ import annotations

import logging
from typing import Any, cast

import h11
import hypercorn.protocol
import hypercorn.trio.run
import trio
from hypercorn.config import Config as HypercornConfig
from hypercorn.events import RawData
from hypercorn.protocol.events import StreamClosed
from hypercorn.protocol.h11 import H11Protocol
from hypercorn.trio import serve  # pyright: ignore[reportUnknownVariableType]
from hypercorn.trio.tcp_server import TCPServer
from quart_trio import QuartTrio

from pysched.config.model import Listen, Tls
from pysched.errors import leaves

log = logging.getLogger(__name__)

GRACEFUL_SECONDS = 5.0


def hypercorn_config(listen: Listen, tls: Tls | None) -> HypercornConfig:
    config = HypercornConfig()
    config.bind = [str(listen)]
    config.graceful_timeout = GRACEFUL_SECONDS
    config.accesslog = None
    config.errorlog = logging.getLogger("pysched.web.hypercorn")
    config.keep_alive_timeout = 75
    config.include_server_header = False
    if tls is not None:
        config.certfile = str(tls.cert)
        config.keyfile = str(tls.key)
        # HTTP/1.1 only: hypercorn's HTTP/2 path resets the whole connection (a KeyError inside
        # it) when a body goes over the app's limit, and everything here is built and tested
        # on HTTP/1.1 (keep-alive, event streams, the CLI's httpx client)
        config.alpn_protocols = ["http/1.1"]
    return config


class _Http11Only(H11Protocol):
    """HTTP/1.1 only, without TLS too: an ``Upgrade: h2c`` header is ignored (the request is
    answered in HTTP/1.1, as RFC 9110 allows), and a connection that opens with HTTP/2's
    preface (or any other version) is closed.

    hypercorn switches a cleartext connection to HTTP/2 on either, and its HTTP/2 path fails
    on a refused large body (a ``KeyError`` that used to end the whole server; see
    ``_OneConnection``); everything here is built and tested on HTTP/1.1.
    """

    _head: bytes = b""

    async def _check_protocol(self, event: h11.Request) -> None:
        if event.http_version not in (b"1.1", b"1.0"):
            raise _NotHttp11(event.http_version.decode("ascii", "replace"))

    async def _send_h11_event(self, event: Any) -> None:
        """Send an answer of known length in one write: its head goes with its body.

        hypercorn writes the head, the body and the (empty) end of an answer separately, each
        a locked, shielded ``send_all``, a scheduler round and a system call that runs the
        client's side of loopback TCP. The head of an answer with a ``Content-Length`` is held
        until the body's first bytes; nothing is written for an empty end. A streamed answer
        (the event stream: no length) still sends its head at once.
        """
        try:
            sent = cast("bytes | None", self.connection.send(event))  # None only for a close
        except h11.LocalProtocolError:
            if self.connection.their_state != h11.ERROR:
                raise
            return
        data = sent or b""
        if type(event) is h11.Response and any(
            name == b"content-length" for name, _ in event.headers
        ):
            self._head = data
            return
        if self._head:
            data, self._head = self._head + data, b""
        if data:
            await self.send(RawData(data=data))

    async def stream_send(self, event: Any) -> None:
        if isinstance(event, StreamClosed) and self._head:
            # the app ended its answer before any body: the head still goes, then the close
            head, self._head = self._head, b""
            await self.send(RawData(data=head))
        await super().stream_send(event)


class _NotHttp11(Exception):
    """A request line of another HTTP version: the connection is closed."""


class _OneConnection(TCPServer):
    """One client connection; whatever goes wrong in it ends it, never the server.

    hypercorn runs every connection in the listener's nursery, so an error its protocol code
    lets through (a bug, a client doing something odd) would end ``serve``: it is logged here
    instead, and the connection is closed.
    """

    async def run(self) -> None:
        try:
            await super().run()
        except Exception as exc:
            if all(isinstance(leaf, _NotHttp11) for leaf in leaves(exc)):
                log.info("a client spoke another HTTP than 1.1; its connection was closed")
            else:
                log.exception("a client connection failed and was closed")


def _harden_hypercorn() -> None:
    """Make hypercorn's serving use ``_Http11Only`` and ``_OneConnection`` (hypercorn 0.18,
    pinned in uv.lock: both replace names its modules look up when a connection starts)."""
    hypercorn.protocol.H11Protocol = _Http11Only  # type: ignore[misc]
    hypercorn.trio.run.TCPServer = _OneConnection  # type: ignore[misc]


class _WholeLastSend:
    """The app, with the last message of each HTTP response sent shielded from cancellation.

    quart-trio cancels a request's task as soon as hypercorn reports the response sent, and
    hypercorn reports that from inside that very send, before it has armed the connection's
    keep-alive timer. Cut there, the connection stays open with no timer: it never times out,
    and a stop waits out hypercorn's whole grace period for it (5 s for one idle keep-alive
    client). Shielded, the send finishes its bookkeeping; the bytes themselves were already
    written under hypercorn's own shield.
    """

    def __init__(self, app: QuartTrio) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "websocket":
            # no WebSocket here: refused before the app (whose error pages expect HTTP)
            await receive()  # websocket.connect
            await send({"type": "websocket.close", "code": 1003})  # sent as a 403
            return
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_whole_last(message: Any) -> None:
            if message["type"] == "http.response.body" and not message.get("more_body", False):
                with trio.CancelScope(shield=True):
                    await send(message)
            else:
                await send(message)

        await self.app(scope, receive, send_whole_last)


async def serve_http(
    app: QuartTrio,
    listen: Listen,
    tls: Tls | None,
    *,
    shutdown: trio.Event,
    task_status: trio.TaskStatus[list[str]] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve ``app`` until ``shutdown`` is set; ``task_status.started`` gets the bound URLs.

    Raises ``OSError`` when the address cannot be bound (in use, or not ours).
    """
    config = hypercorn_config(listen, tls)
    _harden_hypercorn()
    await serve(
        _WholeLastSend(app),  # pyright: ignore[reportArgumentType]
        config,
        shutdown_trigger=shutdown.wait,  # pyright: ignore[reportArgumentType]
        task_status=task_status,
    )
