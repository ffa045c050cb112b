"""The note a running ``pysched serve`` leaves so that local clients find it.

``serve`` writes ``$XDG_STATE_HOME/pysched/current.json`` (by default
``~/.local/state/pysched/current.json``) when it starts listening, owner-only, and removes it at
a clean stop::

    {"url": "http://127.0.0.1:8080", "config": "/abs/etl.yaml",
     "admin_token_path": "/abs/state/admin.token", "pid": 4242, "ca": null}

A file whose ``pid`` is no longer alive is ignored (a ``serve`` killed with SIGKILL leaves it).
When several servers run, the last one started owns the file. How the CLI weighs it against
its options and the config is ``pysched.cli.discovery``'s business.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pysched.tokens import write_private


@dataclass(frozen=True, slots=True, kw_only=True)
class Current:
    """What a running ``serve`` says about itself in ``current.json``."""

    url: str
    config: Path | None
    admin_token_path: Path | None
    pid: int
    ca: Path | None

    def to_json(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "config": str(self.config) if self.config else None,
            "admin_token_path": str(self.admin_token_path) if self.admin_token_path else None,
            "pid": self.pid,
            "ca": str(self.ca) if self.ca else None,
        }


def current_path(env: Mapping[str, str] | None = None) -> Path:
    """Where ``current.json`` lives: under ``$XDG_STATE_HOME`` when that is an absolute path
    (the XDG spec says to ignore a relative one), else under ``~/.local/state``."""
    env = os.environ if env is None else env
    state_home = env.get("XDG_STATE_HOME", "")
    if state_home and Path(state_home).is_absolute():
        base = Path(state_home)
    else:
        home = env.get("HOME")
        base = (Path(home) if home else Path.home()) / ".local" / "state"
    return base / "pysched" / "current.json"


def write_current(
    *,
    url: str,
    config: Path,
    admin_token_path: Path,
    ca: Path | None = None,
    pid: int | None = None,
    env: Mapping[str, str] | None = None,
) -> Path:
    """Write ``current.json`` for the server now starting (atomically, mode 0600); returns
    its path. Paths are made absolute so a CLI in any folder can use them."""
    current = Current(
        url=url,
        config=config.resolve(),
        admin_token_path=admin_token_path.resolve(),
        pid=os.getpid() if pid is None else pid,
        ca=ca.resolve() if ca else None,
    )
    path = current_path(env)
    write_private(path, (json.dumps(current.to_json(), indent=2) + "\n").encode())
    return path


def remove_current(*, pid: int | None = None, env: Mapping[str, str] | None = None) -> None:
    """Remove ``current.json`` at a clean stop — only if it is still this server's (``pid``,
    default this process): a second server started since then owns it now."""
    path = current_path(env)
    found = _read(path)
    if found is not None and found.pid == (os.getpid() if pid is None else pid):
        path.unlink(missing_ok=True)


def read_current(env: Mapping[str, str] | None = None) -> Current | None:
    """The running server's ``current.json``, or None: no file, not one we can read, or its
    process has gone."""
    found = _read(current_path(env))
    if found is None or not _alive(found.pid):
        return None
    return found


def _read(path: Path) -> Current | None:
    try:
        data: Any = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    fields: dict[str, Any] = data  # pyright: ignore[reportUnknownVariableType]
    url, pid = fields.get("url"), fields.get("pid")
    if not isinstance(url, str) or not url or not isinstance(pid, int) or isinstance(pid, bool):
        return None
    return Current(
        url=url,
        config=_path(fields.get("config")),
        admin_token_path=_path(fields.get("admin_token_path")),
        pid=pid,
        ca=_path(fields.get("ca")),
    )


def _path(value: Any) -> Path | None:
    return Path(value) if isinstance(value, str) and value else None


def _alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it exists; it is someone else's
    except OSError:
        return False
    return True
