"""Where ``${NAME}`` values come from: the environment, then a secrets file; and masking them.

A name is looked up in the environment first and in the secrets file second. That is the order
Docker Compose, python-dotenv and Airflow's environment-over-metastore lookup use, so an operator
can override one value for one start (``DB_PASSWORD=... pysched serve``) without editing the file.
A variable that is set but empty still wins.

The secrets file holds ``NAME=VALUE`` lines::

    # comments are whole lines; blank lines are ignored
    DB_USER=etl
    export DB_PASSWORD = 'p#ss word'     # optional "export ", spaces around '=', quotes
    API_TOKEN="no $expansion, no \\escapes"

Quotes (single or double) are stripped and nothing inside them is expanded or unescaped; a value
cannot span lines; unquoted values keep everything after ``=`` except the surrounding whitespace,
``#`` included. A name set twice is an error: which one was meant cannot be known.

Values never appear in a repr, a log line or an error message. This module uses only the
standard library, so the minder process can import it cheaply.
"""

from __future__ import annotations

import os
import re
import shlex
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

from pysched.errors import Problem

__all__ = ["MIN_MASK_LENGTH", "Secrets", "SecretsFile", "load_secrets_file"]

MIN_MASK_LENGTH = 4
"""Values shorter than this are not masked by :meth:`Secrets.mask`.

Masking ``on`` or ``dev`` everywhere would garble every log line (``***ice``) and tell a reader
more than it hides. ``Template.render_masked`` still hides such values, since it masks by name.
"""

_MASK = "***"
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")  # the same rule as ${NAME} in templates.py
_LINE = re.compile(r"[ \t]*(?:export[ \t]+)?(?P<name>[^=]*?)[ \t]*=[ \t]*(?P<value>.*?)[ \t]*")


@dataclass(frozen=True, slots=True, eq=False)
class Secrets:
    """The values ``${NAME}`` can take: the environment first, then the secrets file.

    ``Secrets(file_values, environ, referenced=...)``: ``file_values`` is what
    :func:`load_secrets_file` read and ``environ`` the environment to consult (usually
    ``os.environ``); both are copied when the object is built, so later changes to
    ``os.environ`` do not leak in. ``referenced`` names the ``${NAME}``s the config uses:
    :meth:`mask` hides their values wherever they come from, as well as every value in the file.
    (The rest of the environment is not masked: ``HOME=/root`` is no secret, and hiding it
    would make logs unreadable.)

    ``repr()`` and ``str()`` show counts only, never a name's value. Two ``Secrets`` compare
    equal only when they are the same object, so no comparison ever touches a value.
    """

    file_values: Mapping[str, str] = field(default_factory=dict[str, str])
    environ: Mapping[str, str] = field(default_factory=dict[str, str])
    referenced: frozenset[str] = field(default=frozenset(), kw_only=True)
    _pattern: re.Pattern[str] | None = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "file_values", MappingProxyType(dict(self.file_values)))
        object.__setattr__(self, "environ", MappingProxyType(dict(self.environ)))
        object.__setattr__(self, "_pattern", _mask_pattern(self._masked_values()))

    def __repr__(self) -> str:
        return (
            f"Secrets(<{len(self.file_values)} from the file, {len(self.environ)} in the "
            f"environment, {len(self.referenced)} referenced; values hidden>)"
        )

    def get(self, name: str) -> str | None:
        """The value for ``name``: the environment's if set (even empty), else the file's."""
        found = self.environ.get(name)
        return found if found is not None else self.file_values.get(name)

    def same_values(self, other: Secrets) -> bool:
        """Whether ``other`` gives every name this one knows of the same value, and knows of
        no other (a reload that rotates a secret, and nothing else, must still apply)."""
        names = set(self.file_values) | self.referenced
        other_names = set(other.file_values) | other.referenced
        return names == other_names and all(self.get(n) == other.get(n) for n in names)

    def __contains__(self, name: object) -> bool:
        """Whether ``name`` has a value in the environment or the file (empty counts)."""
        return name in self.environ or name in self.file_values

    def mask(self, text: str) -> str:
        """``text`` with every secret value in it replaced by ``***``.

        The values hidden are every value in the file and the value of every ``referenced``
        name, from either source, at least :data:`MIN_MASK_LENGTH` characters long; longer ones
        are matched first, so a value that contains another is hidden whole. Each line of a
        multi-line value is hidden on its own too (logs break lines), and so is the
        ``shlex.quote`` form of a value, which is how it shows in a rendered shell command.
        """
        if self._pattern is None:
            return text
        return self._pattern.sub(_MASK, text)

    def _masked_values(self) -> set[str]:
        values = set(self.file_values.values())
        for name in self.referenced | self.file_values.keys():
            found = self.environ.get(name)
            if found is not None:
                values.add(found)
        return values


def _mask_pattern(values: Iterable[str]) -> re.Pattern[str] | None:
    forms: set[str] = set()
    for value in values:
        if len(value.strip()) >= MIN_MASK_LENGTH:
            forms.update((value, shlex.quote(value)))
            forms.update(line for line in value.splitlines() if len(line) >= MIN_MASK_LENGTH)
    if not forms:
        return None
    return re.compile("|".join(re.escape(form) for form in sorted(forms, key=len, reverse=True)))


@dataclass(frozen=True, slots=True, kw_only=True)
class SecretsFile:
    """What :func:`load_secrets_file` found: the values, the problems and the warnings.

    ``problems`` are errors, each a :class:`~pysched.errors.Problem` pinned to the secrets
    file's ``file:line:col`` (both 1-based; 0 when it is the whole file), ready for a
    ``ConfigError``. When there are any, ``values`` holds the lines that were good, and the
    caller should refuse the config rather than run with part of its secrets. ``warnings`` are
    about the file as a whole (its mode), as messages for the caller to pin where the config
    names the file. ``repr()`` hides the values.
    """

    values: Mapping[str, str] = field(repr=False)
    problems: tuple[Problem, ...] = ()
    warnings: tuple[str, ...] = ()


def load_secrets_file(path: Path) -> SecretsFile:
    """Read a secrets file of ``NAME=VALUE`` lines (the format is in the module docstring).

    Never raises for a bad file: a file that cannot be read is one problem at line 0, a bad
    line is a problem at its line and column, and a file that group or others may read or write
    is a warning with the ``chmod`` that fixes it. No message ever contains a value, or even the
    text of a line that did not parse (it could be a value that lost its name).

    This reads the disk: from async code, call it in a worker thread.
    """
    where = str(path)
    try:
        data = path.read_bytes()
        mode = path.stat().st_mode
    except OSError as error:
        reason = error.strerror or type(error).__name__
        problem = Problem(file=where, line=0, col=0, message=f"cannot read secrets file: {reason}")
        return SecretsFile(values={}, problems=(problem,))

    warnings: list[str] = []
    loose = stat.S_IMODE(mode) & 0o066
    if os.name == "posix" and loose:
        what = "readable" if loose & 0o044 else "writable"
        if loose & 0o044 and loose & 0o022:
            what = "readable and writable"
        message = (
            f"secrets file {where} is {what} by group or others "
            f"(mode {stat.S_IMODE(mode):04o}) — chmod 600 {shlex.quote(where)}"
        )
        warnings.append(message)

    values: dict[str, str] = {}
    first_seen: dict[str, int] = {}
    errors: list[Problem] = []
    lines = data.removeprefix(b"\xef\xbb\xbf").split(b"\n")  # a UTF-8 byte-order mark goes
    for number, chunk in enumerate(lines, start=1):
        raw = chunk.removesuffix(b"\r")
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            col = len(raw[: error.start].decode("utf-8", errors="replace")) + 1
            errors.append(Problem(file=where, line=number, col=col, message="not valid UTF-8"))
            continue
        parsed = _parse_line(line)
        if parsed is None:
            continue
        if isinstance(parsed, _LineError):
            errors.append(
                Problem(
                    file=where,
                    line=number,
                    col=parsed.col,
                    message=parsed.message,
                    hint=parsed.hint,
                )
            )
            continue
        name, value, col = parsed
        if name in first_seen:
            errors.append(
                Problem(
                    file=where,
                    line=number,
                    col=col,
                    message=f"{name} is set twice (first on line {first_seen[name]})",
                    hint="keep one of them",
                )
            )
            continue
        first_seen[name] = number
        values[name] = value
    return SecretsFile(values=values, problems=tuple(errors), warnings=tuple(warnings))


@dataclass(frozen=True, slots=True, kw_only=True)
class _LineError:
    col: int
    message: str
    hint: str | None = None


def _parse_line(line: str) -> tuple[str, str, int] | _LineError | None:
    """One line: None for a blank or comment line, else (name, value, name's column) or what
    is wrong with it."""
    stripped = line.strip()
    if not stripped or stripped.startswith("#"):
        return None
    indent = len(line) - len(line.lstrip())
    match = _LINE.fullmatch(line)
    if match is None:
        return _LineError(
            col=indent + 1,
            message="expected NAME=VALUE",
            hint="comments must start the line with '#'",
        )
    name = match.group("name")
    if not _NAME.fullmatch(name):
        return _LineError(
            col=match.start("name") + 1,
            message="bad name before '='",
            hint="a name is letters, digits and _, not starting with a digit",
        )
    value = match.group("value")
    if value[:1] in ("'", '"'):
        quote = value[0]
        at = match.start("value")
        close = value.find(quote, 1)
        if close == -1:
            return _LineError(
                col=at + 1,
                message=f"unterminated {quote} quote",
                hint="a value cannot span lines; nothing inside quotes is escaped",
            )
        if close != len(value) - 1:
            other = '"' if quote == "'" else "'"
            rest = value[close + 1 :]
            return _LineError(
                col=at + close + 2 + len(rest) - len(rest.lstrip(" \t")),
                message="unexpected text after the closing quote",
                hint=f"nothing inside quotes is escaped: to put {quote} in a value, "
                f"quote it with {other} instead",
            )
        value = value[1:close]
    return name, value, match.start("name") + 1
