"""Every endpoint in one table: method, path, the role it needs, its handler, and what the
OpenAPI document says of it. The app registers exactly these routes and the OpenAPI document
is built from the same table, so the two cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from quart import Response

from pysched.engine.runs import RunState
from pysched.tokens import NAME_PATTERN, Role
from pysched.web import action_handlers as acts
from pysched.web import admin_handlers as admin
from pysched.web import read_handlers as read
from pysched.web import service_handlers as service
from pysched.web.context import Call
from pysched.web.event_stream import EVENT_ID_MAX
from pysched.web.inputs import MAX_TEXT

Handler = Callable[[Call], Awaitable[tuple[int, Any] | Response]]
"""A status and a JSON body, or a ready ``Response`` (the service's own endpoints)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Param:
    name: str
    description: str
    schema: str = "string"
    """A JSON Schema type name, or ``date`` for a YYYY-MM-DD string."""
    required: bool = False
    """A query parameter the request must give (body fields say so in ``Route.required``)."""
    rules: Mapping[str, Any] = field(default_factory=dict[str, Any])
    """More JSON Schema keywords for the value (``enum``, ``minimum``, ...): what the handler
    refuses, said in the document, so a client generated from it sends what is accepted."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Route:
    method: str
    path: str
    """In Quart's form: ``/api/v1/runs/<run_id>``."""
    role: Role | None
    """None: no token needed (health probes, the OpenAPI document)."""
    summary: str
    handler: Handler
    query: tuple[Param, ...] = ()
    headers: tuple[Param, ...] = ()
    """Request headers the handler reads (beyond ``Authorization``)."""
    body: tuple[Param, ...] = ()
    required: tuple[str, ...] = ()
    """Body fields that must be present."""
    success: int = 200
    result: str = "object"
    """The name of the response's schema in the OpenAPI components, or a content kind."""
    errors: tuple[int, ...] = ()
    """The handler's own refusals. The OpenAPI document adds those every route of a kind can
    give: 401/403/503 with a role, 400/413 with a body (and 422 with body fields), 400 for a
    query value that cannot be read and 422 for a date outside the years the API accepts."""
    tag: str = "runs"
    waits_for_commit: bool = True
    """A GET first waits until no engine pass is open (``EngineCore.committed``), so its
    handler reads only what the journal holds (invariant 1). False for a handler that reads
    nothing a pass changes before its commit (runs' journal records, journaled actions, the
    event log, nothing of the engine at all): it answers during a pass, with the state before
    it, instead of waiting for the pass's commit (up to about 15 ms while a burst starts)."""

    @property
    def openapi_path(self) -> str:
        return self.path.replace("<", "{").replace(">", "}")


_TEXT = {"maxLength": MAX_TEXT}
_WHY = Param(name="why", description="Why, for the audit trail.", rules=_TEXT)
_DATE = "date"
_FILTER = {"minLength": 1}  # an empty query value is refused, not read as "no filter"
_VERSION = {"pattern": "^[0-9a-fA-F]{6,}$"}
_EVENT_ID = {"minimum": 0, "maximum": EVENT_ID_MAX}

ROUTES: tuple[Route, ...] = (
    Route(method="GET", path="/healthz", role=None, handler=service.healthz,
          summary="Liveness: the process answers.", result="Health", tag="service",
          waits_for_commit=False),
    Route(method="GET", path="/readyz", role=None, handler=service.readyz,
          summary="Readiness: the engine runs.", result="Health", errors=(503,), tag="service",
          waits_for_commit=False),
    Route(method="GET", path="/metrics", role=Role.VIEWER, handler=service.metrics,
          summary="Prometheus metrics (text format 0.0.4).", result="text", tag="service"),
    Route(method="GET", path="/api/v1/openapi.json", role=None, handler=service.openapi,
          summary="This document.", result="object", tag="service", waits_for_commit=False),
    Route(method="GET", path="/api/v1/jobs", role=Role.VIEWER, handler=read.list_jobs,
          summary="Every job: definition, next three firings, five latest runs.",
          result="JobList", tag="jobs"),
    Route(method="GET", path="/api/v1/jobs/<job>", role=Role.VIEWER, handler=read.one_job,
          summary="One job: definition, next ten firings, twenty latest runs.",
          result="Job", errors=(404,), tag="jobs"),
    Route(method="POST", path="/api/v1/jobs/<job>/trigger", role=Role.OPERATOR,
          handler=acts.trigger, summary="A new run of the job (dependencies apply).",
          body=(Param(name="run_date", description="Default: today's run date.", schema=_DATE),
                _WHY),
          success=201, result="Run", errors=(400, 404, 422), tag="jobs"),
    Route(method="POST", path="/api/v1/jobs/<job>/hold", role=Role.OPERATOR,
          handler=acts.hold_job, summary="Hold the job: its new runs are created held.",
          body=(_WHY,), result="JobHold", errors=(404, 409, 422), tag="jobs"),
    Route(method="POST", path="/api/v1/jobs/<job>/release", role=Role.OPERATOR,
          handler=acts.release_job, summary="Release a held job and the runs it held.",
          body=(_WHY,), result="JobHold", errors=(404, 409, 422), tag="jobs"),
    Route(method="POST", path="/api/v1/jobs/<job>/backfill", role=Role.OPERATOR,
          handler=acts.backfill, summary="A run for each business day from..to.",
          body=(Param(name="from", description="First run date.", schema=_DATE),
                Param(name="to", description="Last run date.", schema=_DATE), _WHY),
          required=("from", "to"), success=201, result="RunList", errors=(400, 404, 422),
          tag="jobs"),
    Route(method="GET", path="/api/v1/runs", role=Role.VIEWER, handler=read.list_runs,
          summary="Runs, in creation order, filtered by run date, job and state.",
          query=(Param(name="date", description="Run date.", schema=_DATE),
                 Param(name="job", description="Job name.", rules=_FILTER),
                 Param(name="state", description="Run state.",
                       rules={"enum": [state.value for state in RunState]}),
                 Param(name="limit", description="At most this many, the newest (1000).",
                       schema="integer",
                       rules={"minimum": 1, "maximum": read.RUNS_LIMIT_MAX})),
          result="RunList", errors=(400,), waits_for_commit=False),
    Route(method="GET", path="/api/v1/runs/<run_id>", role=Role.VIEWER, handler=read.one_run,
          summary="One run with its attempts, recent events and actions.", result="RunDetail",
          errors=(404,), waits_for_commit=False),
    Route(method="GET", path="/api/v1/runs/<run_id>/attempts/<attempt>/log", role=Role.VIEWER,
          handler=read.attempt_log, summary="A slice of an attempt's stdout or stderr.",
          query=(Param(name="stream", description="stdout (default) or stderr.",
                       rules={"enum": ["stdout", "stderr"]}),
                 Param(name="offset", description="Byte offset to read from.", schema="integer",
                       rules={"minimum": 0, "maximum": read.LOG_OFFSET_MAX}),
                 Param(name="limit", description="At most this many bytes (65536).",
                       schema="integer", rules={"minimum": 1, "maximum": read.LOG_LIMIT_MAX})),
          result="LogSlice", errors=(400, 404)),
    *(
        Route(method="POST", path=f"/api/v1/runs/<run_id>/{action}", role=Role.OPERATOR,
              handler=acts.run_action_handler(action), summary=f"{action} the run.",
              body=(_WHY,), result="Run", errors=(404, 409, 422))
        for action in acts.RUN_ACTIONS
    ),
    Route(method="GET", path="/api/v1/forecast", role=Role.VIEWER, handler=read.forecast_window,
          summary="Every run the config would create on a day or in a window (give date, or "
                  "from and to, not both).",
          query=(Param(name="date", description="One day.", schema=_DATE),
                 Param(name="from", description="First day.", schema=_DATE),
                 Param(name="to", description="Last day.", schema=_DATE)),
          result="Forecast", errors=(400, 422), tag="jobs"),
    Route(method="GET", path="/api/v1/events", role=Role.VIEWER, handler=service.events,
          summary="Server-sent events: every committed change, numbered.",
          query=(Param(name="last_event_id", description="Resume after this id.",
                       schema="integer", rules=_EVENT_ID),),
          headers=(Param(name="Last-Event-ID", description="Resume after this id (what an "
                         "EventSource sends when it reconnects); wins over last_event_id.",
                         schema="integer", rules=_EVENT_ID),),
          result="event-stream", errors=(400,), tag="events"),
    Route(method="POST", path="/api/v1/reload", role=Role.ADMIN, handler=admin.reload,
          summary="Re-read the config file; apply it whole or not at all.", result="Reload",
          errors=(422,), tag="admin"),
    Route(method="GET", path="/api/v1/config/pending", role=Role.ADMIN,
          handler=admin.pending_config,
          summary="What a reload would do now (its checks, and the diff from the version in "
                  "force to the file), doing none of it.",
          result="Pending", tag="admin"),
    Route(method="GET", path="/api/v1/config/versions", role=Role.ADMIN,
          handler=admin.config_versions, summary="Every config version journaled.",
          result="VersionList", tag="admin"),
    Route(method="GET", path="/api/v1/config/versions/<sha>", role=Role.ADMIN,
          handler=admin.config_version, summary="One config version with its text.",
          result="Version", errors=(400, 404), tag="admin"),
    Route(method="GET", path="/api/v1/config/diff", role=Role.ADMIN, handler=admin.config_diff,
          summary="A unified diff between two config versions.",
          query=(Param(name="from", description="Older version (sha256 prefix).",
                       required=True, rules=_VERSION),
                 Param(name="to", description="Newer version (sha256 prefix).",
                       required=True, rules=_VERSION)),
          result="Diff", errors=(400, 404), tag="admin"),
    Route(method="GET", path="/api/v1/tokens", role=Role.ADMIN, handler=admin.list_tokens,
          summary="The tokens (names and roles, never secrets).", result="TokenList",
          tag="admin"),
    Route(method="POST", path="/api/v1/tokens", role=Role.ADMIN, handler=admin.create_token,
          summary="A new token; its secret is in this answer only.",
          body=(Param(name="name", description="Who holds it (audit trail).",
                      rules={"pattern": f"^{NAME_PATTERN.pattern}$"}),
                Param(name="role", description="viewer, operator or admin (default viewer).",
                      rules={"enum": [role.value for role in Role]})),
          required=("name",), success=201, result="NewToken", errors=(409, 422), tag="admin"),
    Route(method="DELETE", path="/api/v1/tokens/<name>", role=Role.ADMIN,
          handler=admin.revoke_token,
          summary="Revoke a token (a body, if any, must be {}); never the last admin token (409).",
          result="object", errors=(404, 409, 422), tag="admin"),
)  # fmt: skip
