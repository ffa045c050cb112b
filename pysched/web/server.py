"""Serving the app with hypercorn, inside the service's nursery.

``serve_http`` binds the listen address (``scheduler.listen``, or ``--listen``), with TLS when
``scheduler.tls`` is set, reports the bound URLs through ``task_status`` (port 0 picks a free
port, which tests use), and serves until ``shutdown`` is set. Event streams watch the app's own
stopping event, which the service sets *before* this one, so an open stream never holds the
shutdown for hypercorn's whole grace period.
"""

from __future__ import annotations

import logging
from typing import Any

import trio
from hypercorn.config import Config as HypercornConfig
from hypercorn.trio import serve  # pyright: ignore[reportUnknownVariableType]
from quart_trio import QuartTrio

from pysched.config.model import Listen, Tls

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
    await serve(
        _WholeLastSend(app),  # pyright: ignore[reportArgumentType]
        config,
        shutdown_trigger=shutdown.wait,  # pyright: ignore[reportArgumentType]
        task_status=task_status,
    )
