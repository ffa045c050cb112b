"""Where each value sits in a ``/bin/sh -c`` command, and how to quote it there.

A string command is the operator's shell code with values put in (``{run_date}``,
``${DB_PASSWORD}``). A value must reach the program as literal text, whatever it holds, and
how to write literal text depends on where the value sits:

==============  ===========================================  ==================================
where           example                                      the value is written
==============  ===========================================  ==================================
bare            ``load --date {run_date}``                   :func:`shlex.quote`: ``'a b'``
double quotes   ``psql -c "... where d = '{run_date}'"``     ``\\``, ``$``, backquote and ``"``
                                                             escaped with ``\\``
single quotes   ``echo '{job}'``                             as is, each ``'`` as ``'"'"'``
==============  ===========================================  ==================================

Anywhere else the shell reads the text again or ends it early, and no quoting is both safe and
faithful: inside ``$(...)``, backquotes or ``$((...))``, in a here-document, in a comment (a
newline in the value would end it), or right after a backslash. A value there is refused when the
config loads, with the way out: pass it in ``env`` and write ``"$NAME"`` in the command.

The reading follows POSIX sh at the level of quotes and the constructs above, never further:
the command is not parsed into a syntax tree, and nothing after a ``case`` inside a substitution
is trusted (its patterns end in a bare ``)``). This module uses only the standard library.
"""

from __future__ import annotations

import enum
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["Spot", "UnsafeSpot", "ends_in_name", "quote_for", "spots"]


class Spot(enum.Enum):
    """Where a value sits in a shell command."""

    BARE = "bare"
    DOUBLE = "double"
    SINGLE = "single"


@dataclass(frozen=True, slots=True)
class UnsafeSpot:
    """A value sits where it cannot be quoted safely; ``where`` says where, in words ("in a
    comment", "right after a backslash"), and ``gap`` is the index of the value (0 for the
    first)."""

    gap: int
    where: str


def quote_for(value: str, spot: Spot, *, after_name: bool = False) -> str:
    """``value`` written so that the shell reads it back exactly, at ``spot``.

    ``after_name``: the text before it ends in a shell variable (``$x``), which a value starting
    with a letter, digit or ``_`` would lengthen (``$xabc``); an empty quoted string keeps the two
    apart.
    """
    if spot is Spot.SINGLE:
        return value.replace("'", "'\"'\"'")
    guard = after_name and value[:1] in _NAME_CHARS
    if spot is Spot.BARE:
        return ("''" if guard else "") + shlex.quote(value)
    return ('""' if guard else "") + _DOUBLE_SPECIAL.sub(r"\\\g<0>", value)


def ends_in_name(text: str) -> bool:
    """Whether ``text`` ends in a shell variable written without braces, such as ``$x``."""
    return _ENDS_IN_NAME.search(text) is not None


_DOUBLE_SPECIAL = re.compile(r'[\\$`"]')
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
_ENDS_IN_NAME = re.compile(r"(?<!\\)\$[A-Za-z_][A-Za-z0-9_]*$")
_WORD_BREAK = " \t\n;&|()<>"
_DELIMITER = re.compile(r"[^ \t\n;&|()<>]+")
_CASE = re.compile(r"case(?=[ \t\n;&|()<>]|$)")


def spots(literals: Sequence[str]) -> list[Spot] | UnsafeSpot:
    """The spot of each value in a command made of ``literals`` with a value between each two
    (``len(literals) - 1`` values), or the first value that sits where it cannot be quoted."""
    reader = _Reader()
    found: list[Spot] = []
    for gap in range(len(literals) - 1):
        reader.read(literals[gap])
        spot = reader.spot()
        if isinstance(spot, str):
            return UnsafeSpot(gap, spot)
        found.append(spot)
        reader.after_value()
    return found


class _Reader:
    """Reads the command's literal text piece by piece, keeping the state at its end."""

    def __init__(self) -> None:
        self.quote = Spot.BARE
        self.nested: list[tuple[str, Spot]] = []  # open substitutions ("$(", "$((", "`"),
        # innermost last, each with the quoting around it
        self.escaped = False  # the last character was a backslash that escapes the next one
        self.comment = False
        self.word_start = True  # the next character starts a word (a "#" starts a comment)
        self.heredocs: list[tuple[str, bool]] = []  # delimiters (and "<<-") met on this line
        self.heredoc: tuple[str, bool] | None = None  # inside this one's body
        self.line = ""  # the current line of a here-document's body, so far
        self.lost = ""  # why nothing from here on can be trusted
        self.pending = ""  # a "<<" at the end of a piece: the value after it is a delimiter

    def spot(self) -> Spot | str:
        if self.lost:
            return self.lost
        if self.heredoc is not None:
            return "in a here-document"
        if self.pending:
            return "as a here-document's delimiter"
        if self.comment:
            return "in a comment"
        if self.escaped:
            return "right after a backslash"
        if self.nested:
            kind = self.nested[-1][0]
            return {"$(": "in a $(...) substitution", "$((": "in a $((...)) expression"}.get(
                kind, "in a backquoted substitution"
            )
        return self.quote

    def after_value(self) -> None:
        """A value was put in: it is part of a word (never a keyword, never "#")."""
        self.word_start = False

    def read(self, text: str) -> None:
        i, n = 0, len(text)
        while i < n and not self.lost:
            if self.heredoc is not None:
                i = self._heredoc_body(text, i)
            elif self.escaped:
                self.escaped = False
                self.word_start = False
                i += 1
            elif self.comment:
                if text[i] == "\n":
                    self.comment = False
                    self._newline()
                i += 1
            elif self.nested and self.nested[-1][0] == "`":
                i = self._in_backquotes(text, i)
            elif self.quote is Spot.SINGLE:
                if text[i] == "'":
                    self.quote = Spot.BARE
                i += 1
            elif text[i] == "\\":
                self.escaped = True
                i += 1
            elif self.quote is Spot.DOUBLE:
                i = self._in_double(text, i)
            else:
                i = self._bare(text, i)

    def _in_backquotes(self, text: str, i: int) -> int:
        # The substitution ends at the first backquote not escaped; nothing in it is a spot.
        if text[i] == "\\":
            self.escaped = True
        elif text[i] == "`":
            self.quote = self.nested.pop()[1]
        return i + 1

    def _in_double(self, text: str, i: int) -> int:
        char = text[i]
        if char == '"':
            self.quote = Spot.BARE
        elif char == "`":
            self.nested.append(("`", Spot.DOUBLE))
        elif char == "$" and text.startswith("$(", i):
            return self._open(text, i)
        return i + 1

    def _bare(self, text: str, i: int) -> int:
        char = text[i]
        nested = self.nested[-1][0] if self.nested else ""
        if char == "#" and self.word_start:
            self.comment = True
        elif char == "'":
            self.quote = Spot.SINGLE
        elif char == '"':
            self.quote = Spot.DOUBLE
        elif char == "`":
            self.nested.append(("`", Spot.BARE))
        elif char == "$" and text.startswith("$(", i):
            return self._open(text, i)
        elif char == "<" and text.startswith("<<", i) and not text.startswith("<<<", i):
            if nested:
                self.lost = "after a here-document inside a substitution"
                return i
            return self._heredoc_start(text, i)
        elif char == ")" and nested == "$(":
            self.quote = self.nested.pop()[1]
        elif char == ")" and nested == "$((":
            if not text.startswith("))", i):
                self.lost = "after a $((...)) expression with parentheses inside"
                return i
            self.quote = self.nested.pop()[1]
            self.word_start = False
            return i + 2
        elif char == "(" and nested == "$((":
            self.lost = "after a $((...)) expression with parentheses inside"
            return i
        elif char == "\n":
            self._newline()
            return i + 1
        elif nested and self.word_start and _CASE.match(text, i):
            self.lost = "after a 'case' inside a substitution"
            return i
        self.word_start = char in _WORD_BREAK
        return i + 1

    def _open(self, text: str, i: int) -> int:
        """At "$(" (or "$(("): a substitution opens, with bare quoting inside."""
        kind = "$((" if text.startswith("$((", i) else "$("
        self.nested.append((kind, self.quote))
        self.quote = Spot.BARE
        self.word_start = True
        return i + len(kind)

    def _heredoc_start(self, text: str, i: int) -> int:
        """At a bare "<<" outside substitutions: note the delimiter; the body starts on the
        next line."""
        j = i + 2
        strip_tabs = text.startswith("-", j)
        j += strip_tabs
        while j < len(text) and text[j] in " \t":
            j += 1
        word = _DELIMITER.match(text, j)
        if word is None:
            if j == len(text):
                self.pending = text[i:]  # the delimiter is the value that follows
            else:
                self.lost = "after a '<<' with no delimiter"
            return len(text)
        delimiter = re.sub(r"[\\'\"]", "", word.group())
        self.heredocs.append((delimiter, strip_tabs))
        self.word_start = True
        return word.end()

    def _newline(self) -> None:
        self.word_start = True
        if self.heredocs and not self.nested and self.quote is Spot.BARE:
            self.heredoc = self.heredocs.pop(0)
            self.line = ""

    def _heredoc_body(self, text: str, i: int) -> int:
        assert self.heredoc is not None
        end = text.find("\n", i)
        if end == -1:
            self.line += text[i:]
            return len(text)
        line, self.line = self.line + text[i:end], ""
        delimiter, strip_tabs = self.heredoc
        if (line.lstrip("\t") if strip_tabs else line) == delimiter:
            self.heredoc = None
            self._newline()  # a second here-document of the same line starts now
        return end + 1
