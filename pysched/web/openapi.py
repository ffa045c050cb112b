"""The OpenAPI 3.1 document of the API, built from the route table (``pysched.web.routes``)
so the document and the routes are one list; the component schemas describe the views in
``pysched.web.views``."""

from __future__ import annotations

from typing import Any

from pysched.timing.run_dates import FIRST_YEAR, LAST_YEAR
from pysched.tokens import NAME_PATTERN
from pysched.web.api_errors import CODES
from pysched.web.routes import ROUTES, Param, Route

_STR = {"type": "string"}
_NSTR = {"type": ["string", "null"]}
_TIME = {"type": "string", "format": "date-time"}
_NTIME = {"type": ["string", "null"], "format": "date-time"}
_DATE = {"type": "string", "format": "date"}
_INT = {"type": "integer"}
_NINT = {"type": ["integer", "null"]}
_NNUM = {"type": ["number", "null"]}
_BOOL = {"type": "boolean"}


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _object(properties: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": required if required is not None else list(properties),
    }


def _list_of(key: str, item: str, **more: Any) -> dict[str, Any]:
    return _object({key: {"type": "array", "items": _ref(item)}, **more})


_ATTEMPT = _object(
    {
        "number": _INT,
        "started_at": _TIME,
        "ended_at": _NTIME,
        "exit_code": _NINT,
        "signal": _NINT,
        "outcome": _NSTR,
        "message": _STR,
        "has_log": _BOOL,
    }
)
_RUN = _object(
    {
        "run_id": _STR,
        "job": _STR,
        "run_date": _DATE,
        "n": _INT,
        "state": _STR,
        "reason": _STR,
        "trigger": _STR,
        "upstream": _NSTR,
        "created_at": _TIME,
        "scheduled_for": _TIME,
        "next_try_at": _NTIME,
        "forced": _BOOL,
        "started_at": _NTIME,
        "ended_at": _NTIME,
        "duration_s": _NNUM,
        "typical_duration_s": _NNUM,
        "attempts": {"type": "array", "items": _ref("Attempt")},
    }
)
_EVENT = _object({"id": _INT, "at": _TIME, "kind": _STR, "data": {"type": "object"}})
_ACTION = _object(
    {
        "id": _STR,
        "at": _TIME,
        "by": _STR,
        "why": _STR,
        "action": _STR,
        "target": _STR,
    }
)
_JOB = _object(
    {
        "name": _STR,
        "description": _STR,
        "owner": _STR,
        "schedule": _NSTR,
        "timezone": _STR,
        "calendar": _NSTR,
        "pool": _NSTR,
        "priority": _INT,
        "depends_on": {"type": "array", "items": _STR},
        "dependencies": {
            "type": "array",
            "items": _object(
                {"job": _STR, "on": {"enum": ["success", "failure", "done"]}, "date_offset": _INT}
            ),
        },
        "enabled": _BOOL,
        "held": _BOOL,
        "next_firings": {"type": "array", "items": _TIME},
        "recent_runs": {"type": "array", "items": _ref("Run")},
    }
)

SCHEMAS: dict[str, Any] = {
    "Attempt": _ATTEMPT,
    "Run": _RUN,
    "RunDetail": {
        "allOf": [
            _ref("Run"),
            _object(
                {
                    "events": {"type": "array", "items": _ref("Event")},
                    "actions": {"type": "array", "items": _ref("Action")},
                }
            ),
        ]
    },
    "RunList": _list_of("runs", "Run", count=_INT),
    "Event": _EVENT,
    "Action": _ACTION,
    "Job": _JOB,
    "JobList": _list_of("jobs", "Job"),
    "JobHold": _object(
        {"job": _STR, "held": _BOOL, "released": {"type": "array", "items": _ref("Run")}},
        ["job", "held"],
    ),
    "LogSlice": _object(
        {
            "run_id": _STR,
            "attempt": _INT,
            "stream": _STR,
            "offset": _INT,
            "next_offset": _INT,
            "size": _INT,
            "data": _STR,
            "complete": _BOOL,
        }
    ),
    "Forecast": _object(
        {
            "from": _DATE,
            "to": _DATE,
            "runs": {
                "type": "array",
                "items": _object(
                    {
                        "job": _STR,
                        "run_date": _DATE,
                        "fires_at": _TIME,
                        "fires_at_utc": _TIME,
                        "trigger": _STR,
                        "upstream": _NSTR,
                    }
                ),
            },
        }
    ),
    "Reload": _object(
        {
            "applied": _BOOL,
            "changed": _BOOL,
            "sha256": _STR,
            "warnings": {"type": "array", "items": _STR},
        }
    ),
    "Version": _object(
        {"sha256": _STR, "at": _TIME, "by": _STR, "current": _BOOL, "text": _STR},
        ["sha256", "at", "by", "current"],
    ),
    "VersionList": _list_of("versions", "Version"),
    "Diff": _object({"from": _STR, "to": _STR, "diff": _STR}),
    "Pending": _object(
        {
            "valid": _BOOL,
            "changed": _BOOL,
            "current": _STR,
            "sha256": _STR,
            "diff": _STR,
            "problems": {"type": "array", "items": _STR},
            "warnings": {"type": "array", "items": _STR},
        }
    ),
    "Token": _object({"name": _STR, "role": _STR, "created": _TIME}),
    "TokenList": _list_of("tokens", "Token"),
    "NewToken": _object({"name": _STR, "role": _STR, "created": _TIME, "token": _STR}),
    "Health": _object({"status": _STR, "error": _STR}, ["status"]),
    "Error": _object(
        {
            "error": _object(
                {
                    "status": _INT,
                    "code": _STR,
                    "message": _STR,
                    "field": _NSTR,
                    "state": _NSTR,
                    "problems": {"type": "array", "items": _STR},
                },
                ["status", "code", "message"],
            ),
        }
    ),
}


_DATE_IN = {
    **_DATE,
    # YYYY-MM-DD in ASCII digits, of a year from FIRST_YEAR to LAST_YEAR (1900..9000)
    "pattern": "^(19[0-9]{2}|[2-8][0-9]{3}|9000)-[0-9]{2}-[0-9]{2}$",
}
"""A date a client sends: the years the API accepts (``run_dates.year_problem``)."""
assert (FIRST_YEAR, LAST_YEAR) == (1900, 9000), "update _DATE_IN's pattern"

_PATH_RULES: dict[str, dict[str, Any]] = {
    "job": {"pattern": "^[^/]+$"},
    "run_id": {"pattern": "^[^/]+$"},
    "attempt": {"pattern": "^[0-9]{1,6}$"},
    "sha": {"pattern": "^[0-9a-fA-F]{6,}$"},
    "name": {"pattern": f"^{NAME_PATTERN.pattern}$"},
}
"""What each path parameter must look like (the handlers refuse anything else)."""


def _schema(param: Param, *, nullable: bool = False) -> dict[str, Any]:
    """A parameter's schema; an optional body field may also be null (the same as left out)."""
    schema: dict[str, Any] = dict(_DATE_IN) if param.schema == "date" else {"type": param.schema}
    schema.update(param.rules)
    if nullable:
        schema["type"] = [schema["type"], "null"]
        if "enum" in schema:
            schema["enum"] = [*schema["enum"], None]
    return schema


def _content(result: str) -> dict[str, Any]:
    if result == "text":
        return {"text/plain": {"schema": _STR}}
    if result == "event-stream":
        return {"text/event-stream": {"schema": _STR}}
    if result == "object":
        return {"application/json": {"schema": {"type": "object"}}}
    return {"application/json": {"schema": _ref(result)}}


def openapi_document() -> dict[str, Any]:
    paths: dict[str, dict[str, Any]] = {}
    for route in ROUTES:
        parameters: list[dict[str, Any]] = [
            {"name": name, "in": "path", "required": True, "schema": {**_STR, **_PATH_RULES[name]}}
            for name in _path_names(route.path)
        ]
        parameters += [
            {
                "name": p.name,
                "in": place,
                "description": p.description,
                "required": p.required,
                "schema": _schema(p),
            }
            for place, params in (("query", route.query), ("header", route.headers))
            for p in params
        ]
        operation: dict[str, Any] = {
            "summary": route.summary,
            "operationId": f"{route.method.lower()}{route.openapi_path.replace('/', '_')}",
            "tags": [route.tag],
            "parameters": parameters,
            "responses": {
                str(route.success): {"description": "done", "content": _content(route.result)}
            },
        }
        if route.role is None:
            operation["security"] = []
        else:
            operation["x-pysched-role"] = route.role.value
            for status in (401, 403, 503):
                operation["responses"][str(status)] = _error(status)
        for status in sorted({*route.errors, *_input_errors(route)}):
            operation["responses"][str(status)] = _error(status)
        if route.body:
            properties = {
                p.name: {
                    **_schema(p, nullable=p.name not in route.required),
                    "description": p.description,
                }
                for p in route.body
            }
            operation["requestBody"] = {
                "required": bool(route.required),
                "content": {
                    "application/json": {
                        "schema": {
                            "type": "object",
                            "properties": properties,
                            "required": list(route.required),
                            "additionalProperties": False,
                        }
                    }
                },
            }
        paths.setdefault(route.openapi_path, {})[route.method.lower()] = operation
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "pysched",
            "version": "1",
            "description": "The pysched scheduler's JSON API. Send 'Authorization: Bearer "
            "<token>'; roles: viewer (read), operator (actions), admin (reload, config, tokens).",
        },
        "servers": [{"url": "/"}],
        "security": [{"bearer": []}],
        "paths": paths,
        "components": {
            "schemas": SCHEMAS,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
    }


def _input_errors(route: Route) -> set[int]:
    """What reading the request can refuse, whatever the handler: a body that is not a JSON
    object (400), too large (413) or too slow to arrive (408), a body field that is wrong (422); a
    query or header value
    that cannot be read (400), or a date outside the years the API accepts (422)."""
    statuses: set[int] = set()
    if route.method in ("POST", "PUT", "DELETE"):
        statuses |= {400, 408, 413}
    if route.body:
        statuses.add(422)
    params = (*route.query, *route.headers)
    if params:
        statuses.add(400)
    if any(p.schema == "date" for p in (*params, *route.body)):
        statuses.add(422)
    return statuses


def _error(status: int) -> dict[str, Any]:
    return {
        "description": CODES.get(status, "error"),
        "content": {"application/json": {"schema": _ref("Error")}},
    }


def _path_names(path: str) -> list[str]:
    names: list[str] = []
    for part in path.split("/"):
        if part.startswith("<") and part.endswith(">"):
            names.append(part[1:-1].split(":")[-1])
    return names
