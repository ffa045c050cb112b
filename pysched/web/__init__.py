"""The web layer: the JSON API (``/api/v1``), its tokens and roles, the server-sent event stream,
health probes and metrics, served by hypercorn in the service's nursery.

It talks to the engine only through the engine's public methods and its event stream.
"""

from __future__ import annotations

from pysched.web.app import create_app
from pysched.web.auth import TokenBook
from pysched.web.context import WebContext
from pysched.web.server import serve_http

__all__ = ["TokenBook", "WebContext", "create_app", "serve_http"]
