"""Reloading the config while the scheduler runs: all of the new file, or none of it.

A reload (SIGHUP, ``POST /api/v1/reload``, ``pysched reload``) reads and checks the config file
again. If it is valid, the engine applies it in one step and journals the version; if it is
not, the running config stays, every problem is logged, and a ``reload_failed`` event is
journaled and published (alerts use it). There is never a half-applied config.

A few settings cannot change under a running scheduler: the state dir and the log dir (where
the journal and the minders' files are) are refused with a problem that says to restart; the
listen address, TLS files and tokens file are accepted but take effect at the next start, and
the reload says so in its warnings.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import trio

from pysched.config import ConfigError, load_config
from pysched.config.model import Config
from pysched.engine import Engine
from pysched.errors import EngineStopped, TokenFileError

log = logging.getLogger(__name__)


class ReloadWatcher(Protocol):
    """Who hears that a reload begins and ends (systemd's notifier: ``RELOADING=1``, then
    ``READY=1`` again whether the new file was applied or refused)."""

    def reloading(self, status: str | None = None) -> object: ...

    def ready(self, status: str | None = None) -> object: ...


class TokensSource(Protocol):
    async def reload(self) -> None: ...

    async def check(self) -> None:
        """Raise ``TokenFileError`` if the tokens file cannot be read; change nothing."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class ReloadOutcome:
    applied: bool
    """True when the file was valid (whether or not it had changed)."""
    changed: bool
    sha256: str
    """The version in force after the reload."""
    problems: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class ReloadPreview:
    """What a reload would do now, found without doing it (``Reloader.preview``)."""

    valid: bool
    """False when a reload would be refused (``problems`` says why)."""
    changed: bool
    """A reload would apply a new version (or new secret values)."""
    current: str
    """The sha256 of the version in force."""
    sha256: str
    """The file's version; the one in force when a reload would be refused."""
    current_text: str
    text: str
    """The file's text, problems or not ("" when it cannot be read)."""
    problems: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()


def _changed(current: Config, new: Config) -> bool:
    """Whether applying ``new`` changes anything: another version, or new secret values (a
    rotated password applies again the same version)."""
    return new.sha256 != current.sha256 or not new.secrets.same_values(current.secrets)


def _reload_status(outcome: ReloadOutcome | None) -> str:
    """The one line ``systemctl status`` shows after a reload."""
    if outcome is None:
        return "reload failed; the running config stays"
    if not outcome.applied:
        count = len(outcome.problems)
        problems = f"{count} problem{'s' if count != 1 else ''}"
        return f"reload refused ({problems}); config {outcome.sha256[:12]} stays"
    return f"config {outcome.sha256[:12]} {'applied' if outcome.changed else 'unchanged'}"


_RESTART_ONLY = ("state_dir", "log_dir")
_AT_NEXT_START = ("listen", "tls", "tokens_file")


class Reloader:
    """Reloads ``path`` into ``engine``; one reload at a time."""

    def __init__(
        self,
        engine: Engine,
        path: Path,
        *,
        tokens: TokensSource | None = None,
        watcher: ReloadWatcher | None = None,
    ) -> None:
        self._engine = engine
        self._path = path
        self._tokens = tokens
        self._watcher = watcher
        self._lock = trio.Lock()
        self._stopped = False
        self._started_with = engine.config.scheduler
        """The settings this server started with: ``_AT_NEXT_START`` keys are compared with
        these, not with the last reload's (back to what is live is no change)."""

    def stop(self) -> None:
        """The scheduler is stopping: reloads are refused from now on (``EngineStopped``), and
        one under way applies nothing more, nor tells systemd it is ready again."""
        self._stopped = True

    async def reload(self, *, by: str) -> ReloadOutcome:
        """Read, check and apply the config file; see the module docstring.

        Raises ``EngineStopped`` if the engine has stopped. **Cancellation:** a reload
        cancelled while the file is read changes nothing; once the engine has the new config
        it is applied whole.
        """
        self._refuse_if_stopped()
        async with self._lock:
            self._refuse_if_stopped()
            if self._watcher is not None:
                self._watcher.reloading(status=f"reloading {self._path}")
            outcome: ReloadOutcome | None = None
            try:
                outcome = await self._reload(by)
                return outcome
            finally:
                if self._watcher is not None and not self._stopped:
                    self._watcher.ready(status=_reload_status(outcome))

    def _refuse_if_stopped(self) -> None:
        if self._stopped:
            raise EngineStopped("pysched is stopping: the config is not reloaded")

    async def preview(self) -> ReloadPreview:
        """What ``reload`` would do now: the same checks, reading the config and tokens files,
        with nothing applied, journaled, published or told to systemd. Raises
        ``EngineStopped`` if the engine has stopped."""
        self._refuse_if_stopped()
        async with self._lock:  # after a reload under way, never beside it
            return await self._preview()

    async def _preview(self) -> ReloadPreview:
        current = self._engine.config
        new, problems = await self._read(apply_tokens=False)
        if new is None or problems:
            return ReloadPreview(
                valid=False,
                changed=False,
                current=current.sha256,
                sha256=current.sha256,
                current_text=current.text,
                text=new.text if new is not None else await trio.to_thread.run_sync(self._text),
                problems=tuple(problems),
            )
        return ReloadPreview(
            valid=True,
            changed=_changed(current, new),
            current=current.sha256,
            sha256=new.sha256,
            current_text=current.text,
            text=new.text,
            warnings=tuple(self._warnings(new)),
        )

    def _text(self) -> str:
        """The file's text as it is, for a preview of a file with problems ("" if unreadable)."""
        try:
            return self._path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""

    async def _read(self, *, apply_tokens: bool) -> tuple[Config | None, list[str]]:
        """The config file, checked, and the problems that would refuse it. When the file has
        none, the tokens file is read too: put in force with ``apply_tokens`` (a reload), only
        checked without (a preview)."""
        current = self._engine.config
        problems: list[str] = []
        new: Config | None = None
        try:
            new = await trio.to_thread.run_sync(load_config, self._path)
        except ConfigError as exc:
            problems = [str(problem) for problem in exc.problems]
        if new is not None:
            for key in _RESTART_ONLY:
                before = getattr(current.scheduler, key)
                after = getattr(new.scheduler, key)
                if before != after:
                    problems.append(
                        f"{self._path}: scheduler.{key} cannot change while pysched runs "
                        f"({before} -> {after}) — restart pysched to move it"
                    )
        if self._tokens is not None and not problems:
            tokens = self._tokens.reload if apply_tokens else self._tokens.check
            try:
                await tokens()
            except TokenFileError as exc:
                problems.append(str(exc))
        return new, problems

    def _warnings(self, new: Config) -> list[str]:
        warnings = [
            f"scheduler.{key} changed: it takes effect at the next start"
            for key in _AT_NEXT_START
            if getattr(self._started_with, key) != getattr(new.scheduler, key)
        ]
        return warnings + [str(warning) for warning in new.warnings]

    async def _reload(self, by: str) -> ReloadOutcome:
        engine = self._engine
        current = engine.config
        new, problems = await self._read(apply_tokens=True)
        if problems or new is None:
            for problem in problems:
                log.error("reload refused: %s", problem)
            log.error("reload refused (%d problem(s)); the running config stays", len(problems))
            await engine.reload_failed(problems, by=by)
            return ReloadOutcome(
                applied=False, changed=False, sha256=current.sha256, problems=tuple(problems)
            )
        warnings = self._warnings(new)
        for warning in warnings:
            log.warning("reload: %s", warning)
        rotated = not new.secrets.same_values(current.secrets)
        changed = _changed(current, new)
        if changed:
            self._refuse_if_stopped()  # a stop began while the file was read: apply nothing
            await engine.apply_config(new, by=by)
            secrets = " (secret values changed)" if rotated else ""
            log.info("reloaded %s: version %s%s", self._path, new.sha256[:12], secrets)
        else:
            log.info("reload: %s is unchanged (version %s)", self._path, new.sha256[:12])
        return ReloadOutcome(
            applied=True, changed=changed, sha256=new.sha256, warnings=tuple(warnings)
        )
