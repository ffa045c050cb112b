"""Hints for a mistyped name: the config's checks, the CLI and the API suggest the closest."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def did_you_mean(word: str, options: Iterable[str]) -> str | None:
    """A hint naming the option closest to ``word``, or None when nothing is close."""
    ordered = sorted(options)
    same = [option for option in ordered if option.casefold() == word.casefold()]
    matches = same or difflib.get_close_matches(word, ordered, n=1, cutoff=0.6)
    return f"did you mean {matches[0]!r}?" if matches else None
