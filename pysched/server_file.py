"""The note a running ``pysched serve`` leaves so that local clients find it.

``serve`` writes ``$XDG_STATE_HOME/pysched/current.json`` (by default
``~/.local/state/pysched/current.json``) when it starts listening, owner-only, and removes it at
a clean stop::

    {"url": "http://127.0.0.1:8080", "config": "/abs/etl.yaml",
     "admin_token_path": "/abs/state/admin.token", "pid": 4242, "ca": null}

A file whose ``pid`` is no longer alive is ignored (a ``serve`` killed with SIGKILL leaves it).
When several servers run, the last one started owns the file, and keeps the others, newest
first, under ``"previous"`` (a list of objects of the same shape, only while there are any):
when it stops, or dies, the CLI finds the newest of them still running, rather than none. How
the CLI weighs the file against its options and the config is ``pysched.cli.discovery``'s
business.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Generator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeGuard

from pysched.launch.minder import proc_start_ticks
from pysched.tokens import write_private
from pysched.xdg import base_dir


@dataclass(frozen=True, slots=True, kw_only=True)
class Current:
    """What a running ``serve`` says about itself in ``current.json``."""

    url: str
    config: Path | None
    admin_token_path: Path | None
    pid: int
    ca: Path | None
    start: int | None = None
    """The process's start time (``/proc/<pid>/stat`` field 22), so a pid reused by another
    process is not taken for the server; None in a file written before it was kept."""

    def to_json(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "config": str(self.config) if self.config else None,
            "admin_token_path": str(self.admin_token_path) if self.admin_token_path else None,
            "pid": self.pid,
            "start": self.start,
            "ca": str(self.ca) if self.ca else None,
        }


def current_path(env: Mapping[str, str] | None = None) -> Path:
    """Where ``current.json`` lives: under ``$XDG_STATE_HOME`` when that is an absolute path
    (the XDG spec says to ignore a relative one), else under ``~/.local/state``."""
    return base_dir("XDG_STATE_HOME", ".local/state", env) / "pysched" / "current.json"


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
    pid = os.getpid() if pid is None else pid
    current = Current(
        url=url,
        config=config.resolve(),
        admin_token_path=admin_token_path.resolve(),
        pid=pid,
        ca=ca.resolve() if ca else None,
        start=proc_start_ticks(pid),
    )
    path = current_path(env)
    with _locked(path):  # servers starting and stopping together must not lose each other
        others = [c for c in _read_all(path) if c.pid != current.pid and _alive(c)]
        _write(path, [current, *others])
    return path


MAX_SERVERS = 8
"""The most servers ``current.json`` remembers (the newest and seven before it)."""


def remove_current(*, pid: int | None = None, env: Mapping[str, str] | None = None) -> None:
    """Take this server (``pid``, default this process) out of ``current.json`` at a clean
    stop. If it owns the file, the newest earlier server still running owns it next (or the
    file goes); if a later server owns it, that one stays, with this one no longer listed."""
    mine = os.getpid() if pid is None else pid
    path = current_path(env)
    if not path.exists():
        return
    with _locked(path):
        found = _read_all(path)
        if not any(c.pid == mine for c in found):
            return
        rest = [c for c in found if c.pid != mine and _alive(c)]
        if rest:
            _write(path, rest)
        else:
            path.unlink(missing_ok=True)


@contextmanager
def _locked(path: Path) -> Generator[None]:
    """Hold an exclusive lock on ``path``'s lock file (``.current.json.lock`` beside it) for a
    read and rewrite of ``path``: without it, two servers starting together could each write
    the list without the other."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path.with_name(f".{path.name}.lock"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def read_current(env: Mapping[str, str] | None = None) -> Current | None:
    """The running server of ``current.json``: the newest one whose process is alive, or None
    (no file, not one we can read, or every server it names has gone)."""
    return next(iter(read_running(env)), None)


def read_running(env: Mapping[str, str] | None = None) -> list[Current]:
    """Every server ``current.json`` names whose process is alive, newest first."""
    return [c for c in _read_all(current_path(env)) if _alive(c)]


def _write(path: Path, servers: list[Current]) -> None:
    """``servers``, newest first: the first owns the file, the rest go under ``previous``."""
    newest, *earlier = servers[:MAX_SERVERS]
    data = newest.to_json()
    if earlier:
        data["previous"] = [c.to_json() for c in earlier]
    write_private(path, (json.dumps(data, indent=2) + "\n").encode())


def _read_all(path: Path) -> list[Current]:
    """Every server the file names, newest first (alive or not); [] when it cannot be read."""
    try:
        data: Any = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return []
    newest = _current(data)
    if newest is None:
        return []
    raw: Any = data.get("previous")
    earlier = [_current(item) for item in raw] if isinstance(raw, list) else []  # pyright: ignore[reportUnknownVariableType]
    return [newest, *(c for c in earlier if c is not None)]


def _current(data: Any) -> Current | None:
    if not isinstance(data, dict):
        return None
    fields: dict[str, Any] = data  # pyright: ignore[reportUnknownVariableType]
    url, pid, start = fields.get("url"), fields.get("pid"), fields.get("start")
    if not isinstance(url, str) or not url or not _whole(pid) or not 0 < pid < 2**31:
        return None
    return Current(
        url=url,
        config=_path(fields.get("config")),
        admin_token_path=_path(fields.get("admin_token_path")),
        pid=pid,
        ca=_path(fields.get("ca")),
        start=start if _whole(start) else None,
    )


def _whole(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _path(value: Any) -> Path | None:
    return Path(value) if isinstance(value, str) and value else None


def _alive(server: Current) -> bool:
    """Whether the server's process still runs: its pid exists, is this user's (the file is,
    so another user's process there is not the server), and started when the file says."""
    try:
        os.kill(server.pid, 0)
    except (OSError, OverflowError):  # gone, or another user's
        return False
    return server.start is None or proc_start_ticks(server.pid) == server.start
