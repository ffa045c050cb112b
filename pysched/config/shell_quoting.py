"""How values go into a ``/bin/sh -c`` command without ever becoming part of its code.

A string command is the operator's shell code with values put in (``{run_date}``,
``${DB_PASSWORD}``). A value must reach the program as literal text, whatever it holds. No
quoting of a value's *text* can promise that in every spot of every shell (a value inside
``"${X:-...}"``, after bash's ``>&``, in a here-string, past a line continuation: each reads
quotes its own way), so a value's text goes into the command only when it is **plain**: made
of ``A-Z a-z 0-9 _ @ % + : , . / -`` alone, which no shell reads as anything but itself (a
date, a job name, a run id). Any other value is put in the attempt's environment as
``PYSCHED_VALUE_<n>`` (``n`` counts the command's values from 1), and the command refers to it:
the shell expands a variable into data and never parses it again, so nothing in the value can
end a quote, start a substitution or a comment, or reach the next line.

The reference is written for the spot it is in, so the program gets the value exactly:

==============  ===========================================  ==================================
where           example                                      a value that is not plain becomes
==============  ===========================================  ==================================
bare            ``load --password ${PW}``                    ``"${PYSCHED_VALUE_1}"``
double quotes   ``psql -c "... where u = '${PW}'"``          ``${PYSCHED_VALUE_1}``
single quotes   ``echo '${PW}'``                             ``'"${PYSCHED_VALUE_1}"'``
==============  ===========================================  ==================================

Where even a reference is no good (a quoted here-document would not expand it; bash reads some
words twice, as arithmetic or after ``>&``, and would run what a value holds), a value that may
not be plain (a secret, a date formatted with spaces) is refused when the config loads, with
the way out (pass it in ``env`` and write ``"$NAME"``): inside backquotes, ``$((...))``,
``$[...]``, ``${...}``, ``((...))``, ``[[...]]``, a ``let`` command or an array subscript (also
through a ``$(...)`` inside one), after ``>&``, in a here-document with a quoted delimiter or
as a delimiter, in a comment, right after a backslash. Inside ``$(...)`` and in a
here-document with a bare delimiter a reference is fine. A placeholder whose value is always
plain (no format, or a format of digits and names) goes anywhere.

The reading follows POSIX sh at the level of quotes and those constructs,
never further. Should it misjudge a spot, a value still cannot run: the worst is a value split
into words, or shown as the reference's name. This module uses only the standard library.
"""

from __future__ import annotations

import enum
import re
import shlex
from collections.abc import Sequence

__all__ = [
    "VALUE_VARIABLE",
    "Spot",
    "ends_in_name",
    "is_plain",
    "quote_for",
    "reference_for",
    "spots",
]

VALUE_VARIABLE = "PYSCHED_VALUE_{}"
"""The environment variable that carries the command's ``n``-th value (from 1) when it is not
plain."""


class Spot(enum.Enum):
    """Where a value sits in a shell command."""

    BARE = "bare"
    DOUBLE = "double"
    SINGLE = "single"
    HEREDOC = "heredoc"
    """The body of a here-document whose delimiter is not quoted: ``$``, backquotes and
    backslashes are special there, quotes are not."""


_PLAIN = re.compile(r"[A-Za-z0-9_@%+:,./-]+")


def is_plain(value: str) -> bool:
    """Whether ``value`` may be written into a command as it is (see the module docstring):
    not empty, and nothing but letters, digits and ``_ @ % + : , . / -``. (``=`` is left out: a
    command's first word ``A=b`` would be an assignment.)"""
    return _PLAIN.fullmatch(value) is not None


def reference_for(number: int, spot: Spot) -> str:
    """How the command refers to its ``number``-th value (``VALUE_VARIABLE``) at ``spot``
    (its quote or brace also ends a ``$x`` just before it)."""
    name = VALUE_VARIABLE.format(number)
    if spot is Spot.BARE:
        return f'"${{{name}}}"'
    if spot is Spot.DOUBLE or spot is Spot.HEREDOC:
        return f"${{{name}}}"
    return f"'\"${{{name}}}\"'"


def quote_for(value: str, spot: Spot, *, after_name: bool = False) -> str:
    """``value`` written so that the shell reads it back exactly, at ``spot``: for a plain
    value, the value itself; for display, the others too (quoted as a person would write them;
    what runs refers to them instead, ``reference_for``).

    ``after_name``: the text before ends in a shell variable written without braces (``$x``);
    a value starting with a letter, digit or ``_`` would lengthen it (``$xabc``), so it gets an
    empty quoted string in front.
    """
    if spot is Spot.SINGLE:
        return value.replace("'", "'\"'\"'")
    if spot is Spot.HEREDOC:
        return _HEREDOC_SPECIAL.sub(r"\\\g<0>", value)
    guard = after_name and value[:1] in _NAME_CHARS
    if spot is Spot.BARE:
        return ("''" if guard else "") + shlex.quote(value)
    return ('""' if guard else "") + _DOUBLE_SPECIAL.sub(r"\\\g<0>", value)


def ends_in_name(text: str) -> bool:
    """Whether ``text`` ends in a shell variable written without braces, such as ``$x``."""
    return _ENDS_IN_NAME.search(text) is not None


_DOUBLE_SPECIAL = re.compile(r'[\\$`"]')
_HEREDOC_SPECIAL = re.compile(r"[\\$`]")
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
_ENDS_IN_NAME = re.compile(r"(?<!\\)\$[A-Za-z_][A-Za-z0-9_]*$")
_WORD_BREAK = " \t\n;&|()<>"
_DELIMITER = re.compile(r"[^ \t\n;&|()<>]+")
_CASE = re.compile(r"case(?=[ \t\n;&|()<>]|$)")
_ARITHMETIC = re.compile(r"\(\(|\[\[(?=[ \t\n])|let(?=[ \t])")
_CLOSE_TEST = re.compile(r"\]\](?=[ \t\n;&|()<>]|$)")
_NAME_END = re.compile(r"(?:^|[^A-Za-z0-9_])[A-Za-z_][A-Za-z0-9_]*$")
_NESTED_SPOTS = {
    "[": "in an array subscript (bash reads it as arithmetic)",
    "$[": "in a $[...] expression",
    "$((": "in a $((...)) expression",
    "`": "in a backquoted substitution",
    "${": "in a ${...} expansion",
    "((": "in a ((...)) arithmetic command (bash reads its words as code)",
    "[[": "in a [[...]] test (bash reads some of its words as arithmetic)",
    "let": "in a let command (its words are arithmetic)",
}


def spots(literals: Sequence[str]) -> list[Spot | str]:
    """Where each value sits in a command made of ``literals`` with a value between each two
    (``len(literals) - 1`` values): its ``Spot``, or, where not even a reference to it is safe
    or faithful, why, in words ("in a comment", "right after a backslash")."""
    reader = _Reader()
    found: list[Spot | str] = []
    for gap in range(len(literals) - 1):
        # a line continuation joins two lines before the shell reads anything else (inside
        # single quotes it is kept, but dropping it there changes no quote)
        reader.read(literals[gap].replace("\\\n", ""))
        found.append(reader.spot())
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
        self.heredocs: list[tuple[str, bool, bool]] = []
        """Here-documents opened on this line: (delimiter, "<<-", delimiter quoted)."""
        self.heredoc: tuple[str, bool, bool] | None = None  # inside this one's body
        self.line = ""  # the current line of a here-document's body, so far
        self.lost = ""  # why nothing from here on can be trusted
        self.pending = ""  # a "<<" at the end of a piece: the value after it is a delimiter
        self.dup = 0  # after bash's ">&": 1 before its word, 2 in it (bash expands it twice)
        self.dup_depth = 0  # how many substitutions were open at the ">&"
        self.word: str = ""  # the current word's text so far, in bare quoting (for "name[")

    def spot(self) -> Spot | str:
        if self.lost:
            return self.lost
        if self.heredoc is not None:
            if self.heredoc[2]:
                return "in a here-document with a quoted delimiter (it expands nothing)"
            return Spot.HEREDOC
        if self.pending:
            return "as a here-document's delimiter"
        if self.comment:
            return "in a comment"
        if self.escaped:
            return "right after a backslash"
        refused = [kind for kind, _ in self.nested if kind != "$("]
        if refused:  # inside $(...) is fine, unless that is itself inside one of these
            return _NESTED_SPOTS[refused[-1]]
        if self.dup:
            return "in the word after >& (bash expands it twice)"
        return self.quote

    def after_value(self) -> None:
        """A value was put in: it is part of a word (never a keyword, never "#")."""
        self.word_start = False
        if self.heredoc is not None:
            self.line += "\x00"  # a body line holding a value is never the delimiter line
        if self.pending:  # it was a here-document's delimiter: where its body ends is unknown
            self.pending = ""
            self.lost = "after a here-document whose delimiter is a value"

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
        elif char == "$" and text.startswith(("$(", "${"), i):
            return self._open(text, i)
        return i + 1

    def _bare(self, text: str, i: int) -> int:
        char = text[i]
        nested = self.nested[-1][0] if self.nested else ""
        if nested == "let" and char in ";&|\n":  # a let command ends with its command
            self.quote = self.nested.pop()[1]
            nested = self.nested[-1][0] if self.nested else ""
        if self.dup and len(self.nested) == self.dup_depth:  # not inside a $(...) of the word
            if char in _WORD_BREAK and not (self.dup == 1 and char in " \t"):
                self.dup = 0
            elif char not in " \t":
                self.dup = 2
        word_start = self.word_start
        # bash arithmetic and tests wherever a word starts (after a keyword, in a function...;
        # at worst a value that may not be plain is refused where it would have been fine)
        if word_start and (_ARITHMETIC.match(text, i) is not None):
            kind = "let" if text[i] == "l" else text[i : i + 2]
            self.nested.append((kind, self.quote))
            self.word_start = True
            self.word = ""
            return i + len(kind)
        if char == "[" and (_NAME_END.search(self.word) or self.word.endswith("(")):
            self.nested.append(("[", self.quote))  # an array subscript: bash arithmetic
            self.word = ""
            return i + 1
        # "(" is kept: "a=(" then "[" opens a subscript too (``a=([k]=v)``)
        self.word = char if char == "(" else "" if char in _WORD_BREAK else self.word + char
        if char == "#" and self.word_start:
            self.comment = True
        elif char == "'":
            self.quote = Spot.SINGLE
        elif char == '"':
            self.quote = Spot.DOUBLE
        elif char == "`":
            self.nested.append(("`", Spot.BARE))
        elif char == "$" and text.startswith(("$(", "${", "$["), i):
            return self._open(text, i)
        elif char == ">" and text.startswith(">&", i):
            self.dup = 1
            self.dup_depth = len(self.nested)
            self.word_start = True
            return i + 2
        elif (char == "}" and nested == "${") or (char == "]" and nested in ("[", "$[")):
            self.quote = self.nested.pop()[1]
        elif (nested == "((" and text.startswith("))", i)) or (
            nested == "[[" and word_start and _CLOSE_TEST.match(text, i) is not None
        ):
            self.quote = self.nested.pop()[1]
            return i + 2
        elif char == "<" and text.startswith("<<<", i):
            return i + 3  # a here-string: its word is an ordinary word
        elif char == "<" and text.startswith("<<", i):
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
        """At "$(", "$((" or "${": a substitution or expansion opens, bare quoting inside."""
        kind = "$((" if text.startswith("$((", i) else text[i : i + 2]  # "$(", "${", "$["
        self.nested.append((kind, self.quote))
        self.quote = Spot.BARE
        self.word_start = kind == "$("  # "${#x}" is x's length, not a comment
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
        self.heredocs.append((delimiter, strip_tabs, delimiter != word.group()))
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
        delimiter, strip_tabs, _ = self.heredoc
        if (line.lstrip("\t") if strip_tabs else line) == delimiter:
            self.heredoc = None
            self._newline()  # a second here-document of the same line starts now
        return end + 1
