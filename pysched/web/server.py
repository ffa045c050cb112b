"""Serving the app with hypercorn, inside the service's nursery.

``serve_http`` binds the listen address (``scheduler.listen``, or ``--listen``), with TLS when
``scheduler.tls`` is set, reports the bound URLs through ``task_status`` (port 0 picks a free
port, which tests use), and serves until ``shutdown`` is set. Event streams watch the app's own
stopping event, which the service sets *before* this one, so an open stream never holds the
shutdown for hypercorn's whole grace period.
"""

from __future__ import annotations

import logging

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
        app,  # pyright: ignore[reportArgumentType]
        config,
        shutdown_trigger=shutdown.wait,  # pyright: ignore[reportArgumentType]
        task_status=task_status,
    )
