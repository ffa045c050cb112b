"""Finding the server and the token, so ``pysched status`` works with no options at all.

An operator who has just typed ``pysched serve examples/etl.yaml`` in one terminal expects
``pysched status`` in another to simply work. For that, ``serve`` writes a small file when it
starts and removes it when it stops cleanly: ``$XDG_STATE_HOME/pysched/current.json`` (by
default ``~/.local/state/pysched/current.json``), owner-only, saying where it listens, which
config it runs and where its local admin token is::

    {"url": "http://127.0.0.1:8080", "config": "/abs/etl.yaml",
     "admin_token_path": "/abs/state/admin.token", "pid": 4242, "ca": null}

A file whose ``pid`` is no longer alive is ignored (a ``serve`` killed with SIGKILL leaves it).
When several servers run, the last one started owns the file and lists the others
(``previous``): without ``-c`` the newest still running counts, with ``-c`` the one running
that config.

Each of the URL, the token and the TLS trust is taken from the first source that has it:

1. the explicit options or their variables: ``--url``/``PYSCHED_URL``, ``--token``/
   ``PYSCHED_TOKEN``;
2. the config given with ``-c``/``--config``/``PYSCHED_CONFIG``: ``scheduler.url``, the admin
   token file ``scheduler.admin_token_path``, the certificate of ``scheduler.tls``;
3. ``current.json`` — but its admin token and certificate only ever go to the URL it names, so
   ``--url https://elsewhere`` never sends the local admin token elsewhere; and given ``-c``,
   only the ``current.json`` of a serve running that same file counts;
4. the default URL, ``http://127.0.0.1:8080``, with no token.

When ``current.json`` belongs to a server running the very config given with ``-c``, its URL
wins over ``scheduler.url``: it is where that server really listens (``serve --listen`` may
have moved it). A server listening on every address (``0.0.0.0:8080``) is reached on the
loopback (``127.0.0.1:8080``).

A config given with ``-c`` that has problems (perhaps the operator is mid-edit and about to
``pysched reload``) is skipped with a warning when ``--url`` or the config's own running serve
(its ``current.json``) says where the server is; otherwise it is an error (``UnusableConfig``)
that lists the problems, rather than a guess that might reach some other server.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pysched.cli.context import Globals
from pysched.errors import ConfigError, PyschedError
from pysched.server_file import Current, read_running
from pysched.tokens import read_admin_token

if TYPE_CHECKING:
    from pysched.config import Config

DEFAULT_URL = "http://127.0.0.1:8080"


class UnusableConfig(PyschedError):
    """The config given with ``-c`` has problems and nothing else says where its server is."""

    hint = "fix it ('pysched validate'), or give --url (and --token) to reach the server"

    def __init__(self, path: Path, error: ConfigError) -> None:
        self.headline = f"{path} cannot be used to find the server: {str(error).splitlines()[0]}"
        super().__init__(f"{path} cannot be used to find the server: {error}\nhint: {self.hint}")
        self.path = path
        self.error = error


@dataclass(frozen=True, slots=True, kw_only=True)
class Target:
    """The server a command talks to, and how: resolved from the sources above."""

    url: str
    token: str | None
    ca: Path | None
    """A certificate to trust (a self-signed ``scheduler.tls`` cert); None: the system's CAs."""
    config: Config | None
    """The config given with ``-c`` when it loaded, for commands with an offline fallback."""
    warnings: tuple[str, ...] = ()


def resolve(options: Globals, env: Mapping[str, str] | None = None) -> Target:
    """The target for ``options``, by the precedence in this module's docstring."""
    warnings: list[str] = []
    config: Config | None = None
    running = read_running(env)
    current = running[0] if running else None
    if options.config is not None:
        # the server running this very config, if one is (not necessarily the newest):
        # another server's address and token are not this config's
        current = next((c for c in running if _same_file(options.config, c)), None)
        from pysched.config import load_config  # here: the YAML parser is slow to import

        try:
            config = load_config(options.config)
        except ConfigError as exc:
            if options.url is None and current is None:
                raise UnusableConfig(options.config, exc) from None
            count = len(exc.problems)
            warnings.append(
                f"{options.config}: {count} problem{'s' if count != 1 else ''} (see 'pysched "
                "validate'); the server's address and token come from "
                + ("--url" if options.url else "its running serve")
            )
    url = options.url or _connectable(
        (current.url if current and options.config else None)
        or (config.scheduler.url if config else None)
        or (current.url if current else None)
        or DEFAULT_URL
    )
    url = url.rstrip("/")
    local = (
        current if current is not None and _connectable(current.url).rstrip("/") == url else None
    )
    token = options.token
    config_url = _connectable(config.scheduler.url).rstrip("/") if config is not None else None
    if not token and config is not None and (url == config_url or local is not None):
        # the config's admin token goes only to that config's own server: never to a
        # --url elsewhere (a dev config's token must not reach prod)
        token = read_admin_token(config.scheduler.admin_token_path)
    if not token and local is not None and local.admin_token_path is not None:
        token = read_admin_token(local.admin_token_path)
    ca: Path | None = None
    if config is not None and config.scheduler.tls is not None:
        ca = config.scheduler.tls.cert
    elif local is not None:
        ca = local.ca
    return Target(url=url, token=token or None, ca=ca, config=config, warnings=tuple(warnings))


def _same_file(config: Path | None, current: Current) -> bool:
    if config is None or current.config is None:
        return False
    try:
        return config.resolve() == current.config.resolve()
    except OSError:
        return False


def _connectable(url: str) -> str:
    """A listen URL a client can connect to: a server listening on every address
    (``0.0.0.0``, ``[::]``) is reached on this host's loopback."""
    for wildcard, loopback in (("//0.0.0.0:", "//127.0.0.1:"), ("//[::]:", "//[::1]:")):
        url = url.replace(wildcard, loopback, 1)
    return url
