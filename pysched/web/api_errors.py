"""The API's errors: one exception carrying the HTTP status and a JSON body that names the
field or the state at fault, so every refusal says what to fix.

::

    ApiError
     ├── 400 bad_request   malformed JSON, or a query value that cannot be read (``field``)
     ├── 401 unauthorized  no token, or one we do not know
     ├── 403 forbidden     the token's role may not do this (names the role needed)
     ├── 404 not_found     no such run, job, attempt, log or config version
     ├── 409 conflict      the run's state forbids the action (``state``)
     ├── 422 invalid       a well-formed body with a wrong value (``field``; ``problems``)
     └── 503 unavailable   the engine has stopped (fail-stop or shutting down)

Handlers raise these; anything else that escapes is logged and answered as a 500 without
details, but no bad input may reach that path.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    408: "timeout",
    409: "conflict",
    413: "too_large",
    422: "invalid",
    500: "internal",
    503: "unavailable",
}


class ApiError(Exception):
    def __init__(
        self,
        status: int,
        message: str,
        *,
        field: str | None = None,
        state: str | None = None,
        problems: Sequence[str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.field = field
        self.state = state
        self.problems = list(problems) if problems is not None else None

    def body(self) -> dict[str, Any]:
        error: dict[str, Any] = {
            "status": self.status,
            "code": CODES.get(self.status, "error"),
            "message": self.message,
            "field": self.field,
            "state": self.state,
        }
        if self.problems is not None:
            error["problems"] = self.problems
        return {"error": error}
