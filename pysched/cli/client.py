"""Talking to the server's HTTP API, and turning what goes wrong into a message and an exit code.

Every remote command does the same three things: find the server (``discovery.resolve``), make
one or a few requests, and on failure print one clear line to stderr and exit with the code
scripts rely on. ``session`` does the first and the last, so a command's body is only its request
and its formatting::

    with session(ctx, as_json) as api:
        runs = api.get("/api/v1/runs", params={"date": "2026-10-16"})

The errors, under ``pysched.errors.PyschedError``::

    ClientError               talking to the server did not give an answer
     ├── ServerUnreachable     no HTTP answer at all: refused, DNS, TLS, timeout   -> exit 3
     └── ApiError              the server answered with an error document          -> exit 1

The transport is injectable: tests set ``transport_factory`` to return an
``httpx.MockTransport``, so every command runs against an in-memory fake server.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable, Generator, Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import quote

import httpx
import typer

from pysched.cli.arguments import token_problem
from pysched.cli.context import globals_of
from pysched.cli.discovery import Target, UnusableConfig, resolve
from pysched.cli.output import clean, error_exit, fail, print_json
from pysched.errors import PyschedError

TIMEOUT = httpx.Timeout(30.0, connect=5.0)
STREAM_TIMEOUT = httpx.Timeout(connect=5.0, read=45.0, write=30.0, pool=5.0)
"""For the event stream: the server sends a keepalive every 15 s, so 45 s of silence means the
connection is dead and ``watch`` should reconnect."""

TOKEN_HINT = (
    "give a token with --token or PYSCHED_TOKEN, or -c CONFIG to use the local admin token "
    "written by 'pysched serve'"
)


RECONNECT_BACKOFF = (0.5, 1.0, 2.0, 4.0, 8.0)
"""Seconds a following command (``watch``, ``log --follow``) waits before each try to reach the
server again after losing it (a restart takes a few seconds); one try per entry, then exit 3."""


def _no_transport() -> httpx.BaseTransport | None:
    return None


transport_factory: Callable[[], httpx.BaseTransport | None] = _no_transport
"""Returns the transport for the next client (None: httpx's own network transport)."""


class ClientError(PyschedError):
    """Asking the server did not give an answer the command can use."""


class ServerUnreachable(ClientError):
    """No HTTP answer from ``url``; ``reason`` says what happened (refused, timed out, ...)."""

    def __init__(self, url: str, reason: str) -> None:
        super().__init__(f"cannot reach the pysched server at {url} ({reason})")
        self.url = url
        self.reason = reason


class ApiError(ClientError):
    """The server answered with an error document (``{"error": {...}}``)."""

    def __init__(self, status: int, body: dict[str, Any]) -> None:
        error: dict[str, Any] = body.get("error") or {}
        self.status = status
        self.code = str(error.get("code") or "")
        self.message = str(error.get("message") or f"HTTP {status}")
        self.field: str | None = error.get("field")
        self.state: str | None = error.get("state")
        raw: Any = error.get("problems") or []
        self.problems = [str(p) for p in raw]  # pyright: ignore[reportUnknownVariableType]
        self.body = body
        super().__init__(self.message)


def api_path(*parts: str) -> str:
    """An API path with each variable part quoted (job names and run ids are user text)."""
    return "/".join(quote(part, safe="") if i else part for i, part in enumerate(parts))


class Client:
    """A thin synchronous client of ``/api/v1``: JSON in, JSON out, errors as ``ClientError``."""

    def __init__(self, target: Target) -> None:
        self.url = target.url
        headers = {"Accept": "application/json", "User-Agent": "pysched-cli"}
        if target.token:
            headers["Authorization"] = f"Bearer {target.token}"
        verify: ssl.SSLContext | bool = True
        if target.ca is not None:
            try:
                verify = ssl.create_default_context(cafile=str(target.ca))
            except (OSError, ssl.SSLError) as exc:
                raise ServerUnreachable(
                    self.url, f"cannot load the certificate {target.ca}: {exc}"
                ) from None
        self._http = httpx.Client(
            base_url=self.url,
            headers=headers,
            timeout=TIMEOUT,
            verify=verify,
            transport=transport_factory(),
        )

    def close(self) -> None:
        self._http.close()

    def get(self, url: str, params: dict[str, Any] | None = None) -> Any:
        return self.request("GET", url, params=params)

    def post(self, url: str, body: dict[str, Any] | None = None) -> Any:
        return self.request("POST", url, body=body if body is not None else {})

    def delete(self, url: str) -> Any:
        return self.request("DELETE", url)

    def has_job(self, job: str) -> bool:
        """Whether the server knows ``job``; True when it cannot tell (only notes ask this)."""
        try:
            self.get(api_path("/api/v1/jobs", job))
        except ApiError as exc:
            return exc.status != 404
        except ServerUnreachable:
            return True
        return True

    def request(
        self,
        method: str,
        url: str,
        *,
        params: dict[str, Any] | None = None,
        body: dict[str, Any] | None = None,
    ) -> Any:
        """The decoded JSON of a 2xx answer; raises ``ApiError`` or ``ServerUnreachable``."""
        query = {k: v for k, v in (params or {}).items() if v is not None}
        try:
            response = self._http.request(method, url, params=query, json=body)
        except httpx.TransportError as exc:
            raise ServerUnreachable(self.url, describe(exc)) from None
        return self.decode(response)

    def decode(self, response: httpx.Response) -> Any:
        try:
            data: Any = response.json()
        except ValueError:
            data = None
        if response.is_success:
            if data is None:
                raise ApiError(
                    response.status_code,
                    _error_body(
                        response.status_code,
                        f"the server at {self.url} did not answer with JSON — is it a pysched "
                        "server?",
                    ),
                )
            return data
        if isinstance(data, dict):
            document: dict[str, Any] = data  # pyright: ignore[reportUnknownVariableType]
            if isinstance(document.get("error"), dict):
                raise ApiError(response.status_code, document)
        text = response.text.strip().splitlines()
        raise ApiError(
            response.status_code,
            _error_body(
                response.status_code,
                f"HTTP {response.status_code} {response.reason_phrase}"
                + (f": {text[0][:200]}" if text else ""),
            ),
        )

    @contextmanager
    def stream(self, url: str, headers: dict[str, str]) -> Generator[Iterator[str]]:
        """The lines of a streamed GET (the event stream); errors as for ``request``.

        A connection dropped mid-stream raises ``ServerUnreachable`` from the iteration.
        """
        try:
            with self._http.stream("GET", url, headers=headers, timeout=STREAM_TIMEOUT) as answer:
                if not answer.is_success:
                    answer.read()
                    self.decode(answer)
                yield self._lines(answer)
        except httpx.TransportError as exc:
            raise ServerUnreachable(self.url, describe(exc)) from None

    def _lines(self, answer: httpx.Response) -> Iterator[str]:
        try:
            yield from answer.iter_lines()
        except httpx.TransportError as exc:
            raise ServerUnreachable(self.url, describe(exc)) from None


def _error_body(status: int, message: str) -> dict[str, Any]:
    return {
        "error": {"status": status, "code": "", "message": message, "field": None, "state": None}
    }


def describe(exc: httpx.TransportError) -> str:
    """A short reason for a transport failure, for the 'cannot reach' line."""
    if isinstance(exc, httpx.TimeoutException):
        return "timed out"
    text = str(exc).strip()
    return text or type(exc).__name__


def report(exc: ClientError, *, as_json: bool) -> typer.Exit:
    """Print ``exc`` as the user should see it; returns the ``typer.Exit`` to raise.

    With ``--json`` an error document also goes to stdout: the server's own, so a script sees
    the same shape as in the API, or one of that shape when no server answered. The server's
    message and problems are printed ``clean``: another user may have written them.
    """
    if isinstance(exc, ServerUnreachable):
        return error_exit(
            f"{exc} — is 'pysched serve' running? give --url or -c CONFIG",
            as_json=as_json,
            exit_code=3,
            code="unreachable",
        )
    assert isinstance(exc, ApiError)
    if as_json:
        print_json(exc.body)
    lines = [f"error: {clean(exc.message)}"]
    lines += [f"  {clean(problem)}" for problem in exc.problems]
    if exc.status == 401:
        lines.append(f"hint: {TOKEN_HINT}")
    return fail("\n".join(lines))


def find_target(ctx: typer.Context, *, as_json: bool = False) -> Target:
    """The server the global options point at, warnings printed; a config with problems and
    nothing else to go by is exit 1, and so is an admin token file whose token an HTTP header
    cannot carry (one given with ``--token`` was checked as the options were read)."""
    try:
        target = resolve(globals_of(ctx))
    except UnusableConfig as exc:
        raise error_exit(
            exc.headline,
            as_json=as_json,
            code="invalid",
            details=[str(problem) for problem in exc.error.problems],
            hint=exc.hint,
        ) from None
    if target.token is not None:
        problem = token_problem(target.token)
        if problem is not None:
            raise error_exit(
                f"the token found for {target.url} cannot be sent: {problem}; give --token",
                as_json=as_json,
                code="invalid",
            )
    for warning in target.warnings:
        typer.echo(f"warning: {warning}", err=True)
    return target


@contextmanager
def session(ctx: typer.Context, as_json: bool) -> Generator[Client]:
    """A client for the server the global options point at; a ``ClientError`` inside the block
    becomes its message on stderr and exit code 3 (unreachable) or 1 (refused, failed)."""
    target = find_target(ctx, as_json=as_json)
    try:
        client = Client(target)
        try:
            yield client
        finally:
            client.close()
    except ClientError as exc:
        raise report(exc, as_json=as_json) from None


def ask(
    ctx: typer.Context,
    as_json: bool,
    method: str,
    path: str,
    *,
    params: dict[str, Any] | None = None,
    body: dict[str, Any] | None = None,
) -> dict[str, Any] | None:
    """One request to the server the global options point at. With ``--json`` the answer is
    printed as it came and None is returned (the command has nothing left to do); otherwise
    the answer is returned for the command to format."""
    if method == "POST" and body is None:
        body = {}
    with session(ctx, as_json) as api:
        answer: dict[str, Any] = api.request(method, path, params=params, body=body)
    if as_json:
        print_json(answer)
        return None
    return answer
