"""Templates in job commands, env values and cwd: ``{run_date:%Y%m%d}`` and ``${DB_PASSWORD}``.

A template is parsed once, when the config is loaded, so every mistake is found before anything
runs; rendering it for an attempt can then fail only for a secret that has no value.

The grammar, read from left to right:

==================  ============================================================================
``{name}``          a placeholder; ``name`` is one of :data:`PLACEHOLDERS`
``{name:FORMAT}``   ``run_date`` and ``scheduled_for`` only: a ``strftime`` format
``{{`` / ``}}``     a literal ``{`` / ``}``
``${NAME}``         a value from the environment or the secrets file (see ``secrets.py``);
                    ``NAME`` is letters, digits and ``_``, not starting with a digit
``$${...}``         a literal ``${...}``, kept as written up to and including the next ``}``,
                    so a shell expansion such as ``$${HOME}`` reaches the shell untouched
``$`` otherwise     a literal ``$`` (``$HOME``, ``$1`` and ``$$`` pass through unchanged; in
                    ``${{`` and ``$${{`` the ``{{`` is a literal ``{`` as everywhere else)
==================  ============================================================================

Anything else in braces is a mistake, and so is a NUL character anywhere in the text.

The errors raised here, both :class:`~pysched.errors.TemplateError` (and so ``ValueError``)::

    TemplateError
     ├── TemplateSyntaxError   parse(): the text is wrong; ``offset`` says where
     └── MissingSecretError    render(): a ${NAME} has no value (also a LookupError)

This module uses only the standard library, so the minder process can import it cheaply.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Protocol

from pysched.config.shell_quoting import (
    VALUE_VARIABLE,
    Spot,
    ends_in_name,
    is_plain,
    quote_for,
    reference_for,
    spots,
)
from pysched.errors import TemplateError

__all__ = [
    "PLACEHOLDERS",
    "MissingSecretError",
    "RunContext",
    "SecretSource",
    "Template",
    "TemplateSyntaxError",
]

PLACEHOLDERS: frozenset[str] = frozenset({"run_date", "job", "run_id", "attempt", "scheduled_for"})
"""The names a ``{placeholder}`` may use."""

_FORMATTED = frozenset({"run_date", "scheduled_for"})  # the placeholders that take a format

_MASK = "***"

# The strftime directives we accept: the ones Python documents as portable, plus the POSIX ones
# that glibc and the BSDs (macOS) agree on. ``%s`` is left out on purpose: glibc computes it in
# the host's local zone whatever the datetime's tzinfo says, so it silently gives wrong epochs.
_DIRECTIVES = frozenset("aAwdbBmyYHIpMSfzZjUWcxXGuV%" + "CDeFghnrRtTkl")

_SECRET_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_ENV_LIKE = re.compile(r"[A-Z_][A-Z0-9_]*")  # {DB_PASSWORD} was probably meant as ${DB_PASSWORD}
_PLAIN = re.compile(r"[^{}$\x00]+")


class TemplateSyntaxError(TemplateError):
    """A template's text is wrong: an unknown placeholder, a bad format, an unmatched brace.

    ``offset`` is the 0-based index into the template's text of the first character at fault:
    the ``{`` of an unknown or empty placeholder, the ``:`` of a format that is not allowed or is
    empty, the ``%`` of a bad strftime directive, the unmatched brace itself, or the ``$`` of a
    bad ``${...}``. A config loader adds it to the column where the template's text starts.
    The message never repeats the whole template, only the part at fault.
    """

    def __init__(self, message: str, *, offset: int) -> None:
        self.offset = offset
        super().__init__(message)


class MissingSecretError(TemplateError, LookupError):
    """``render()`` met a ``${NAME}`` that the secrets given to it cannot resolve.

    ``name`` is the missing name and ``offset`` the 0-based index of its ``$`` in the template's
    text. The config loader checks every name up front, so at run time this means the
    environment changed or the secrets given to ``render()`` are not the ones the config was
    checked against.
    """

    def __init__(self, name: str, *, offset: int) -> None:
        self.name = name
        self.offset = offset
        super().__init__(
            f"no value for ${{{name}}} — set {name} in the environment or the secrets file"
        )


class SecretSource(Protocol):
    """Where ``${NAME}`` values come from: a plain ``dict`` or a ``pysched.config.secrets.Secrets``.

    ``get`` returns the value, or None when the name has none.
    """

    def get(self, name: str, /) -> str | None: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class RunContext:
    """The values the placeholders take for one attempt of one run.

    ``scheduled_for`` must be timezone-aware; it renders in its own zone, so the caller decides
    whether ``{scheduled_for:%H%M}`` means UTC or the job's wall clock. ``run_date`` is the
    business day the run is for, a plain ``date``. Attempts count from 1.

    Raises ``ValueError`` (or ``TypeError``) when these rules are broken.
    """

    job: str
    run_id: str
    run_date: date
    attempt: int
    scheduled_for: datetime

    def __post_init__(self) -> None:
        if isinstance(self.run_date, datetime):  # a datetime is a date, but it renders wrongly
            raise TypeError("RunContext.run_date must be a date, not a datetime")
        if self.scheduled_for.utcoffset() is None:
            raise ValueError("RunContext.scheduled_for must be timezone-aware")
        if self.attempt < 1:
            raise ValueError(f"RunContext.attempt counts from 1, got {self.attempt}")


@dataclass(frozen=True, slots=True, kw_only=True)
class _Literal:
    text: str  # what it renders to
    source: str  # as written


@dataclass(frozen=True, slots=True, kw_only=True)
class _Placeholder:
    name: str
    format: str | None
    source: str


@dataclass(frozen=True, slots=True, kw_only=True)
class _SecretRef:
    name: str
    offset: int


_Part = _Literal | _Placeholder | _SecretRef


@dataclass(frozen=True, slots=True, kw_only=True)
class Template:
    """A command, env value or cwd with placeholders and ``${NAME}`` references, parsed.

    Build one with :meth:`parse` (or ``Template(text=...)``, which is the same); either raises
    :class:`TemplateSyntaxError` for the first mistake in ``text``. Two templates are equal when
    their texts are; templates are hashable and safe to share between tasks and threads.
    """

    text: str
    _parts: tuple[_Part, ...] = field(init=False, repr=False, compare=False)
    _spots: tuple[_Spot, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        parts = _parse(self.text)
        object.__setattr__(self, "_parts", parts)
        object.__setattr__(self, "_spots", _shell_spots(parts))

    @classmethod
    def parse(cls, text: str) -> Template:
        """Parse ``text``; raises :class:`TemplateSyntaxError` with the ``offset`` at fault."""
        return cls(text=text)

    @property
    def secret_names(self) -> frozenset[str]:
        """The names of every ``${NAME}`` in the text (not those escaped as ``$${NAME}``)."""
        return frozenset(p.name for p in self._parts if isinstance(p, _SecretRef))

    def shell_problem(self) -> TemplateSyntaxError | None:
        """Why this text cannot be a string command (a value that may not be plain sits where
        not even a reference to it is safe, see ``shell_quoting``), or None."""
        offset = 0
        values = 0
        for part in self._parts:
            if not isinstance(part, _Literal):
                where = self._spots[values][0]
                values += 1
                if isinstance(where, str) and not _always_plain(part):
                    return _unsafe(part, where, offset)
            offset += len(part.source) if not isinstance(part, _SecretRef) else len(part.name) + 3
        return None

    def render(self, ctx: RunContext, secrets: SecretSource, *, shell: bool = False) -> str:
        """The text with every placeholder and ``${NAME}`` replaced by its value.

        ``secrets`` is anything with ``get(name) -> str | None``: a ``dict`` or a ``Secrets``.

        With ``shell=False`` (list commands, env values, cwd) values are inserted as they are;
        no shell reads them. With ``shell=True`` the text is a whole string command on its own:
        each value is written into it, quoted for where it sits (``shell_quoting.quote_for``:
        bare, inside double or inside single quotes), so ``/bin/sh -c`` reads it back. That is
        for showing a command, or running it somewhere else; pysched itself runs
        :meth:`render_shell`'s form, which never writes a value that is not plain into the
        text (a reader of shell quoting can be fooled by unusual commands; an environment
        variable cannot).

        Raises :class:`MissingSecretError` for the first ``${NAME}`` that ``secrets`` cannot
        resolve, and with ``shell=True`` :class:`TemplateSyntaxError` as :meth:`render_shell`.
        """
        if shell:
            problem = self.shell_problem()
            if problem is not None:
                raise problem
        out: list[str] = []
        values = 0
        for part in self._parts:
            if isinstance(part, _Literal):
                out.append(part.text)
                continue
            value = _value(part, ctx, secrets)
            if shell:
                where, after_name = self._spots[values]
                if isinstance(where, str) and not is_plain(value):
                    raise _unsafe(part, where, 0)  # a RunContext built by hand holds anything
                if where is Spot.HEREDOC and "\n" in value:
                    raise TemplateSyntaxError(
                        "a value with a newline cannot be written into a here-document's text "
                        "(a line of it could end the document); attempts pass it through the "
                        "environment instead (render_shell)",
                        offset=0,
                    )
                value = _quoted(value, (where, after_name))
            values += 1
            out.append(value)
        return "".join(out)

    def render_shell(self, ctx: RunContext, secrets: SecretSource) -> tuple[str, dict[str, str]]:
        """A string command for ``/bin/sh -c``, and the environment variables it refers to.

        A plain value (a date, a job name: see ``shell_quoting.is_plain``) is written in
        place. Any other goes into the environment as ``PYSCHED_VALUE_<n>`` (the command's
        ``n``-th value, from 1), and the text refers to it, quoted for where it sits, so the
        program gets the value exactly and nothing in it can run: spaces, quotes, ``;``, ``|``,
        backticks, newlines or ``$(...)`` are data the shell never parses. The template's own
        text is not touched: it is the operator's shell code.

        Raises :class:`TemplateSyntaxError` when a value sits where not even that is safe
        (``shell_problem``; the config loader refuses such a command), and
        :class:`MissingSecretError` as :meth:`render` does.
        """
        problem = self.shell_problem()
        if problem is not None:
            raise problem
        where = self._spots
        values = 0
        out: list[str] = []
        env: dict[str, str] = {}
        for part in self._parts:
            if isinstance(part, _Literal):
                out.append(part.text)
                continue
            value = _value(part, ctx, secrets)
            spot, after_name = where[values]
            values += 1
            if isinstance(spot, str):  # only an always-plain placeholder gets here
                if not is_plain(value):  # a RunContext built by hand may hold anything
                    raise _unsafe(part, spot, 0)
                out.append(value)
            elif is_plain(value):
                out.append(quote_for(value, spot, after_name=after_name))
            else:
                out.append(reference_for(values, spot))
                env[VALUE_VARIABLE.format(values)] = value
        return "".join(out), env

    def render_masked(self, ctx: RunContext | None, *, shell: bool = False) -> str:
        """The text for display, with every ``${NAME}`` shown as ``***``.

        With a ``ctx`` the placeholders are rendered (and quoted when ``shell``) as
        :meth:`render` would, so the result shows what runs, minus the secrets. With ``ctx=None``
        the rest of the text is shown exactly as written, ``{run_date:%Y%m%d}``, ``{{`` and
        ``$${HOME}`` included: that is the definition. ``***`` itself is never quoted. Needs no
        secrets and never fails.
        """
        where = self._spots if shell else ()
        values = 0
        out: list[str] = []
        for part in self._parts:
            if isinstance(part, _SecretRef):
                out.append(_MASK)
            elif ctx is None:
                out.append(part.source)
            elif isinstance(part, _Literal):
                out.append(part.text)
            else:
                value = _placeholder_value(part, ctx)
                out.append(_quoted(value, where[values]) if where else value)
            values += not isinstance(part, _Literal)
        return "".join(out)


_Spot = tuple[Spot | str, bool]
"""Where a value sits in a shell command (or why it may not be there), and whether it follows
a ``$name``."""


def _shell_spots(parts: tuple[_Part, ...]) -> tuple[_Spot, ...]:
    """Where each value sits, were the text a shell command (``shell_quoting.spots``)."""
    literals = [""]
    for part in parts:
        if isinstance(part, _Literal):
            literals[-1] += part.text
        else:
            literals.append("")
    after_names = [ends_in_name(before) for before in literals[:-1]]
    return tuple(zip(spots(literals), after_names, strict=True))


def _always_plain(part: _Placeholder | _SecretRef) -> bool:
    """Whether the value is plain whatever the run (``shell_quoting.is_plain``): a placeholder
    without a format (dates, job names, run ids, attempt numbers, ISO instants), or with a
    format of directives that give letters, digits and ``+ : / - %`` only (``%Y%m%d``,
    ``%F``, ``%H:%M``), and plain text between them."""
    if not isinstance(part, _Placeholder):
        return False
    if part.format is None:
        return True
    plain_text = _PLAIN_FORMAT_TEXT.sub("", part.format)
    return (plain_text == "" or is_plain(plain_text)) and all(
        directive in _PLAIN_DIRECTIVES for directive in _FORMAT_DIRECTIVE.findall(part.format)
    )


_FORMAT_DIRECTIVE = re.compile(r"%-?(.)")
_PLAIN_FORMAT_TEXT = re.compile(r"%-?.")
_PLAIN_DIRECTIVES = frozenset("aAbBhdmyYCgGHIpMSfzZjUWuVwDFRT%")
"""strftime directives whose output is plain (letters in the C locale, digits, ``/ : + -``);
not ``%c %x %X %r`` (spaces), ``%e %k %l`` (padded with a space), ``%n %t``."""


def _quoted(value: str, spot: _Spot) -> str:
    where, after_name = spot
    return value if isinstance(where, str) else quote_for(value, where, after_name=after_name)


def _unsafe(part: _Placeholder | _SecretRef, where: str, offset: int) -> TemplateSyntaxError:
    """A value that may not be plain (a secret, a formatted placeholder) in a spot where not
    even a reference to it is safe (``shell_problem``)."""
    if isinstance(part, _SecretRef):
        shown, name = f"${{{part.name}}}", part.name
    else:
        shown, name = part.source, part.name.upper()
    return TemplateSyntaxError(
        f"{shown} sits {where}, where the shell could read its value as code or cut it short, "
        f'so pysched cannot put it there safely — set env: {{{name}: "{shown}"}} and write '
        f'"${name}" there',
        offset=offset,
    )


def _value(part: _Placeholder | _SecretRef, ctx: RunContext, secrets: SecretSource) -> str:
    if isinstance(part, _Placeholder):
        return _placeholder_value(part, ctx)
    found = secrets.get(part.name)
    if found is None:
        raise MissingSecretError(part.name, offset=part.offset)
    return found


def _placeholder_value(part: _Placeholder, ctx: RunContext) -> str:
    match part.name:
        case "run_date":
            return ctx.run_date.strftime(part.format) if part.format else ctx.run_date.isoformat()
        case "scheduled_for":
            if part.format:
                return ctx.scheduled_for.strftime(part.format)
            return ctx.scheduled_for.isoformat()
        case "job":
            return ctx.job
        case "run_id":
            return ctx.run_id
        case _:  # "attempt"; parse() lets no other name through
            return str(ctx.attempt)


def _parse(text: str) -> tuple[_Part, ...]:
    parts: list[_Part] = []
    rendered: list[str] = []  # the literal text met since the last placeholder or secret
    start = 0  # where that literal text starts in the source
    i, n = 0, len(text)

    def flush(end: int) -> None:
        if end > start:
            parts.append(_Literal(text="".join(rendered), source=text[start:end]))
        rendered.clear()

    while i < n:
        plain = _PLAIN.match(text, i)
        if plain:
            rendered.append(plain.group())
            i = plain.end()
            continue
        char = text[i]
        if char == "\x00":
            raise TemplateSyntaxError("NUL character in template", offset=i)
        if char == "{" and text.startswith("{{", i):
            rendered.append("{")
            i += 2
        elif char == "}" and text.startswith("}}", i):
            rendered.append("}")
            i += 2
        elif char == "}":
            raise TemplateSyntaxError("unmatched '}' — write '}}' for a literal '}'", offset=i)
        elif char == "{":
            end = _closing_brace(text, i)
            flush(i)
            parts.append(_placeholder(text, i, end))
            i = start = end + 1
        elif text.startswith("${", i) and not text.startswith("${{", i):
            ref = _SECRET_REF.match(text, i)
            if ref is None:
                raise _bad_secret_ref(text, i)
            flush(i)
            parts.append(_SecretRef(name=ref.group(1), offset=i))
            i = start = ref.end()
        elif text.startswith("$${", i) and not text.startswith("$${{", i):
            end = text.find("}", i + 3)
            if end == -1:
                raise TemplateSyntaxError(
                    "unclosed '$${' — a literal '${' runs to the next '}', and there is none",
                    offset=i,
                )
            rendered.append(text[i + 1 : end + 1])
            i = end + 1
        else:  # a '$' that starts nothing; in '${{' the '{{' is a literal '{' as anywhere
            rendered.append("$")
            i += 1
    flush(n)
    return tuple(parts)


def _closing_brace(text: str, i: int) -> int:
    """The index of the '}' that closes the placeholder opened at ``i``."""
    for j in range(i + 1, len(text)):
        if text[j] == "}":
            return j
        if text[j] in "{\x00":
            break
    raise TemplateSyntaxError(
        "unmatched '{' — close the placeholder with '}', or write '{{' for a literal '{'",
        offset=i,
    )


def _placeholder(text: str, i: int, end: int) -> _Placeholder:
    source = text[i : end + 1]
    name, colon, fmt = text[i + 1 : end].partition(":")
    if not name:
        raise TemplateSyntaxError(
            f"empty placeholder {_show(source)} — use one of {_known()}, "
            "or write '{{' and '}}' for literal braces",
            offset=i,
        )
    if name not in PLACEHOLDERS:
        raise TemplateSyntaxError(f"unknown placeholder {_show(source)} — {_hint(name)}", offset=i)
    colon_at = i + 1 + len(name)
    if not colon:
        return _Placeholder(name=name, format=None, source=source)
    if name not in _FORMATTED:
        raise TemplateSyntaxError(
            f"placeholder {{{name}}} takes no format (found {_show(source)}); "
            "only {run_date} and {scheduled_for} take a strftime format",
            offset=colon_at,
        )
    if not fmt:
        raise TemplateSyntaxError(
            f"empty format in {_show(source)} — drop the ':' or give a strftime format "
            "such as %Y%m%d",
            offset=colon_at,
        )
    _check_strftime(fmt, source, colon_at + 1)
    return _Placeholder(name=name, format=fmt, source=source)


def _check_strftime(fmt: str, source: str, base: int) -> None:
    """Refuse a format strftime would pass through or choke on; ``base`` is its offset."""
    j = fmt.find("%")
    while j != -1:
        k = j + 1
        if k < len(fmt) and fmt[k] == "-":  # %-d: no padding (glibc and BSD)
            k += 1
        if k >= len(fmt):
            raise TemplateSyntaxError(
                f"format in {_show(source)} ends with a lone '%' — write '%%' for a literal '%'",
                offset=base + j,
            )
        if fmt[k] not in _DIRECTIVES or (fmt[k] == "%" and k > j + 1):
            directive = fmt[j : k + 1]
            raise TemplateSyntaxError(
                f"unknown strftime directive {_show(directive)} in {_show(source)} — "
                "see the strftime table in docs/templates.md",
                offset=base + j,
            )
        j = fmt.find("%", k + 1)
    try:
        datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC).strftime(fmt)
    except (ValueError, UnicodeError):
        raise TemplateSyntaxError(
            f"strftime cannot use the format in {_show(source)}", offset=base
        ) from None


def _bad_secret_ref(text: str, i: int) -> TemplateSyntaxError:
    end = text.find("}", i + 2)
    if end == -1:
        return TemplateSyntaxError(
            "unclosed '${' — write ${NAME}, or '$${' to pass a literal '${' on", offset=i
        )
    name = text[i + 2 : end]
    if not name:
        return TemplateSyntaxError("empty name in '${}' — write ${NAME}", offset=i)
    return TemplateSyntaxError(
        f"bad name in {_show(text[i : end + 1])} — a name is letters, digits and _, not starting "
        "with a digit; for a shell expansion such as ${X:-y} write $${X:-y}",
        offset=i,
    )


def _hint(name: str) -> str:
    close = difflib.get_close_matches(name.strip().lower(), sorted(PLACEHOLDERS), n=1, cutoff=0.6)
    if close:
        return f"did you mean {{{close[0]}}}?"
    if _ENV_LIKE.fullmatch(name):
        return f"did you mean ${{{name}}}, a value from the environment or the secrets file?"
    return f"the placeholders are {_known()}; write '{{{{' and '}}}}' for literal braces"


def _known() -> str:
    return ", ".join(f"{{{name}}}" for name in sorted(PLACEHOLDERS))


def _show(fragment: str, limit: int = 40) -> str:
    """A fragment of a template fit for an error message: one line, not too long."""
    if len(fragment) > limit:
        fragment = fragment[: limit - 1] + "…"
    if not fragment.isprintable():
        fragment = "".join(c if c.isprintable() else repr(c)[1:-1] for c in fragment)
    return fragment
