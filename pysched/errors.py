"""The errors pysched raises, all under one root.

::

    PyschedError
     ├── ConfigError          a config file is wrong; carries every Problem (file:line:col)
     ├── CronError            a cron expression is wrong (also a ValueError)
     ├── CalendarError        a calendar cannot be built (also a ValueError)
     ├── TemplateError        a command/env/cwd template is wrong (also a ValueError)
     ├── DurationError        a duration such as ``1h30m`` is wrong (also a ValueError)
     ├── ActionError          an operator action the run's state does not allow (names it)
     ├── TransitionError      a run state change not in the table (a bug, never input)
     ├── EngineStopped        the engine has fail-stopped or closed; nothing more is accepted
     ├── StoreError           the journal cannot be opened, read or written (names file:line)
     ├── TokenFileError       the API tokens file cannot be read or written (names it)
     └── UnknownRunError      no such run or job (also a LookupError; names the id)

Later capabilities add their own branches here (the journal's ``StoreError``, the engine's
``ActionError``, lookups that also subclass ``LookupError``), so that a caller can catch
``PyschedError`` and know it has caught only what pysched meant to raise.
"""

from __future__ import annotations

from dataclasses import dataclass


class PyschedError(Exception):
    """The root of every error pysched raises on purpose."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Problem:
    """One mistake (or warning) in a config file, pinned to its place.

    ``line`` and ``col`` count from 1, as editors show them; either may be 0 when the place is
    the whole file (a file that cannot be read, say).
    """

    file: str
    line: int
    col: int
    message: str
    hint: str | None = None

    def __str__(self) -> str:
        text = f"{self.file}:{self.line}:{self.col}: {self.message}"
        if self.hint:
            text += f" — {self.hint}"
        return text


class ConfigError(PyschedError):
    """A config file has one or more problems; ``problems`` lists every one of them."""

    def __init__(self, problems: list[Problem] | tuple[Problem, ...]) -> None:
        self.problems: tuple[Problem, ...] = tuple(problems)
        count = len(self.problems)
        head = f"{count} problem{'s' if count != 1 else ''} in config"
        super().__init__("\n".join([head, *(str(p) for p in self.problems)]))


class CronError(PyschedError, ValueError):
    """A cron expression cannot be parsed, or can never fire.

    ``field`` names the field at fault (``minute``, ``hour``, ``day-of-month``, ``month``,
    ``day-of-week``) and ``token`` the text within it, when the mistake has a place.
    """

    def __init__(self, message: str, *, field: str | None = None, token: str | None = None) -> None:
        self.field = field
        self.token = token
        super().__init__(message)


class CalendarError(PyschedError, ValueError):
    """A business calendar cannot be built (an unknown country or subdivision, say)."""


class TemplateError(PyschedError, ValueError):
    """A template has an unknown placeholder, a bad format or an unmatched brace."""


class DurationError(PyschedError, ValueError):
    """A duration is not written like ``30s``, ``5m``, ``1h30m`` or ``2d``."""


class ActionError(PyschedError):
    """An operator action that the run's (or job's) current state does not allow."""

    def __init__(self, message: str, *, state: str | None = None) -> None:
        self.state = state
        super().__init__(message)


class TransitionError(PyschedError, RuntimeError):
    """A run was asked to move between two states the transition table does not connect."""


class EngineStopped(PyschedError, RuntimeError):
    """The engine has fail-stopped (``engine.error`` says why) or is closing."""


class UnknownRunError(PyschedError, LookupError):
    """No run (or job) with that id; ``id`` names it."""

    def __init__(self, id: str, what: str = "run") -> None:
        self.id = id
        super().__init__(f"no {what} {id!r}")


class StoreError(PyschedError):
    """The journal cannot be opened, read or written.

    Raised when a state dir is locked by another pysched, when a journal file is damaged (the
    message names the file and line), and by every commit once a write or fsync has failed (the
    store is fail-stop; the failing ``OSError`` is the ``__cause__``).
    """


class TokenFileError(PyschedError):
    """The tokens file (``scheduler.tokens_file``) is unreadable or malformed; names the file
    and what is wrong."""


def leaves(exc: BaseException) -> list[BaseException]:
    """The exceptions an exception group holds, however deeply nested (``exc`` itself when it
    is not a group)."""
    found: list[BaseException] = []
    pending: list[BaseException] = [exc]
    while pending:
        item = pending.pop()
        if isinstance(item, BaseExceptionGroup):
            pending.extend(item.exceptions)  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]
        else:
            found.append(item)
    return found
