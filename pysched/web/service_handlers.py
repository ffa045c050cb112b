"""The service's own endpoints: health probes, the OpenAPI document, metrics and the event
stream. They answer with a ready ``Response`` (their own shapes and content types) where the
API's handlers answer with a status and a JSON body."""

from __future__ import annotations

import functools
from typing import Any

import orjson
from quart import Response

from pysched.metrics import CONTENT_TYPE
from pysched.tokens import Role
from pysched.web.api_errors import ApiError
from pysched.web.auth import still_in_force
from pysched.web.context import Call
from pysched.web.event_stream import event_frames, resume_point
from pysched.web.inputs import text_query

JSON = "application/json"


def json_response(status: int, body: Any) -> Response:
    return Response(orjson.dumps(body, default=str), status=status, mimetype=JSON)


async def healthz(call: Call) -> Response:
    return json_response(200, {"status": "ok"})


async def readyz(call: Call) -> Response:
    if call.engine.error is not None:
        # no details without a token: the cause (with its file names) is in the log
        return json_response(
            503, {"status": "failed", "error": "the engine has stopped; see its log"}
        )
    if call.context.stopping.is_set():
        return json_response(503, {"status": "stopping", "error": "shutting down"})
    return json_response(200, {"status": "ready"})


@functools.cache
def _document() -> dict[str, Any]:
    from pysched.web.openapi import openapi_document  # it reads the route table, which names us

    return openapi_document()


async def openapi(call: Call) -> Response:
    return json_response(200, _document())


async def metrics(call: Call) -> Response:
    source = call.context.metrics
    if source is None:
        raise ApiError(404, "metrics are not enabled on this server")
    response = Response(source.render())
    response.headers["Content-Type"] = CONTENT_TYPE
    return response


async def events(call: Call) -> Response:
    context = call.context
    after = resume_point(call.headers.get("last-event-id"), text_query(call.query, "last_event_id"))
    frames = event_frames(
        call.engine.events,
        after,
        stopping=context.stopping,
        keepalive_seconds=context.keepalive_seconds,
        encoded=context.encoded,
        turns=context.stream_turns,
        allowed=(
            still_in_force(context.tokens, call.caller, Role.VIEWER)
            if call.caller is not None
            else None
        ),
    )
    response = Response(frames, mimetype="text/event-stream")
    response.headers["Cache-Control"] = "no-cache"
    response.headers["X-Accel-Buffering"] = "no"
    response.timeout = None
    return response
