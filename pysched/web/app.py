"""The Quart-Trio application: the route table wired to handlers, with authentication, body
parsing and one error shape for every refusal.

Every request goes through ``_dispatch``: check the token against the route's role, parse the
body, call the handler, and turn what it raises into the JSON error the contract promises
(``ApiError`` as given; the engine's ``ActionError`` as 409 naming the state, or 422;
``UnknownRunError`` as 404; ``EngineStopped`` as 503). Anything else is a bug: it is logged and
answered with a bare 500 that reveals nothing.

Every answer, refusals included, waits until the request's body has been read (``_read_body``):
a 401 is decided before the body is looked at, and when an HTTP/1.1 answer ends before its
request's body has arrived, hypercorn neither reads the next request on that keep-alive
connection nor manages to close it (the close is lost to the app's own cancellation): the
connection hangs. A body that cannot be read (over ``MAX_CONTENT_LENGTH``, or slower than
``BODY_TIMEOUT``) is answered with ``Connection: close``, so the client does not reuse it.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from quart import Response, g, request
from quart_trio import QuartTrio
from werkzeug.exceptions import (
    HTTPException,
    MethodNotAllowed,
    RequestEntityTooLarge,
    RequestTimeout,
)

from pysched.errors import ActionError, EngineStopped, TokenFileError, UnknownRunError
from pysched.web.api_errors import ApiError
from pysched.web.auth import authorize
from pysched.web.context import Call, WebContext
from pysched.web.inputs import parse_body
from pysched.web.routes import ROUTES, Route
from pysched.web.service_handlers import json_response

log = logging.getLogger(__name__)


def error_response(error: ApiError) -> Response:
    response = json_response(error.status, error.body())
    if error.status == 401:
        response.headers["WWW-Authenticate"] = 'Bearer realm="pysched"'
    return response


async def _read_body() -> bool:
    """Read what is left of the request's body; False when it cannot be read.

    Quart buffers the body as it arrives whether or not a view asks for it, and stops at
    ``MAX_CONTENT_LENGTH`` and after ``BODY_TIMEOUT``, so this costs no more than a view that
    reads its body."""
    try:
        await request.get_data(cache=False, as_text=False)
    except (RequestEntityTooLarge, RequestTimeout):
        return False
    return True


def create_app(context: WebContext) -> QuartTrio:
    """The app serving ``context``'s engine. Start it with ``pysched.web.server.serve_http``
    (or use ``app.test_client()`` in tests)."""
    app = QuartTrio("pysched")
    app.config["RESPONSE_TIMEOUT"] = None  # event streams stay open for hours
    app.config["MAX_CONTENT_LENGTH"] = 1024 * 1024
    app.config["JSON_SORT_KEYS"] = False
    # "/api/v1//runs" is no route: a 404 in JSON, not a redirect (in HTML, to the Host header)
    app.url_map.merge_slashes = False

    def view(route: Route) -> Callable[..., Awaitable[Response]]:
        async def dispatch(**args: str) -> Response:
            try:
                caller = None
                if route.role is not None:
                    caller = authorize(
                        request.headers.get("Authorization"), context.tokens.tokens, route.role
                    )
                body: dict[str, Any] = {}
                if route.method in ("POST", "PUT", "DELETE"):
                    raw = await request.get_data(cache=False, as_text=False)
                    body = parse_body(raw if isinstance(raw, bytes) else raw.encode())
                call = Call(
                    context=context,
                    args=args,
                    query=request.args.to_dict(),
                    body=body,
                    caller=caller,
                    headers={key.lower(): value for key, value in request.headers.items()},
                )
                if route.method == "GET" and route.waits_for_commit:
                    # a read shows only what the journal holds (invariant 1)
                    await context.engine.committed()
                answer = await route.handler(call)
                if isinstance(answer, Response):
                    return answer
                status, result = answer
                return json_response(status, result)
            except ApiError as exc:
                return error_response(exc)
            except ActionError as exc:
                status = 409 if exc.state is not None else 422
                return error_response(ApiError(status, str(exc), state=exc.state))
            except UnknownRunError as exc:
                return error_response(ApiError(404, str(exc)))
            except EngineStopped as exc:
                return error_response(ApiError(503, f"the engine has stopped: {exc}"))
            except TokenFileError as exc:
                log.warning("tokens file: %s", exc)
                message = "the tokens file cannot be read or written (the server's log says why)"
                return error_response(ApiError(503, message))
            except HTTPException:
                raise
            except Exception:
                log.exception("%s %s failed", route.method, request.path)
                return error_response(ApiError(500, "internal error (logged on the server)"))

        dispatch.__name__ = f"{route.method.lower()}_{route.path}"
        return dispatch

    for route in ROUTES:
        app.add_url_rule(
            route.path,
            endpoint=f"{route.method} {route.path}",
            view_func=view(route),
            methods=[route.method],
            # no automatic OPTIONS answer: it would be the one route answering without a
            # token (and in HTML); OPTIONS gets the 405 of any method a path does not take
            provide_automatic_options=False,
        )

    @app.errorhandler(HTTPException)
    async def http_error(exc: HTTPException) -> Response:  # pyright: ignore[reportUnusedFunction]
        status = exc.code or 500
        message = {
            404: f"no such endpoint: {request.method} {request.path} (see /api/v1/openapi.json)",
            405: f"{request.method} is not allowed on {request.path}",
            408: f"the body did not arrive within {app.config['BODY_TIMEOUT']} seconds",
            413: "the body is too large",
        }.get(status, exc.description or exc.name)
        if status in (408, 413):
            g.body_unread = True  # ``finish_request`` must not wait for it a second time
        response = error_response(ApiError(status, message))
        if isinstance(exc, MethodNotAllowed) and exc.valid_methods:
            response.headers["Allow"] = ", ".join(sorted(exc.valid_methods))
        return response

    @app.after_request
    async def finish_request(response: Response) -> Response:  # pyright: ignore[reportUnusedFunction]
        http1 = request.http_version in ("1.0", "1.1")
        headers = request.headers
        if http1 and "Content-Length" not in headers and "Transfer-Encoding" not in headers:
            return response  # an HTTP/1 request without these has no body (most GETs)
        if (g.get("body_unread") or not await _read_body()) and http1:
            # HTTP/2 forbids the header, and an unread body there holds up only its stream
            response.headers["Connection"] = "close"
        return response

    return app
