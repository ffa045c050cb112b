"""Reading YAML into a tree whose every node knows its place in the file.

We compose the document with ruamel.yaml instead of constructing Python objects, because
composing keeps what construction throws away: the line and column of every key and value, and
*every* entry of a mapping, so duplicate keys can all be reported rather than the first one
aborting the load. Composing uses ruamel.yaml's libyaml-backed C parser when it is installed
(``ruamel.yaml[libyaml]``, a dependency; about 14 times faster on a 5,000-job file) and its
pure-Python round-trip composer otherwise; both give the same nodes, marks and tags. Anchors
and aliases work as YAML says; ``<<`` merge keys are applied here (keys written in the mapping
itself win over merged ones).

Scalars are typed by the tag the resolver gave them (YAML 1.2 core schema): ``yes`` is a string,
``0o17`` an octal integer, ``2026-10-19`` a ``date``.
"""

from __future__ import annotations

import datetime as dt
import math
from typing import Any, NamedTuple, TypeAlias, cast

from ruamel.yaml import YAML

try:
    from ruamel.yaml.cyaml import CSafeLoader as _CLoader
except ImportError:  # pragma: no cover - the C parser is a dependency, but optional upstream
    _CLoader = None
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.events import (
    MappingEndEvent,
    MappingStartEvent,
    SequenceEndEvent,
    SequenceStartEvent,
)
from ruamel.yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from pysched.errors import Problem

ScalarValue: TypeAlias = str | int | float | bool | dt.date | None


# The tree's value types are NamedTuples rather than the house's frozen dataclasses: a large
# config has hundreds of thousands of them, and a tuple is built several times faster.


class Place(NamedTuple):
    """Where something stands in a file: 1-based line and column."""

    file: str
    line: int
    col: int

    def problem(self, message: str, hint: str | None = None) -> Problem:
        return Problem(file=self.file, line=self.line, col=self.col, message=message, hint=hint)


class YScalar(NamedTuple):
    value: ScalarValue
    text: str
    quoted: bool
    place: Place


class YSeq(NamedTuple):
    items: tuple[YNode, ...]
    place: Place


class YMap(NamedTuple):
    """A mapping in file order; ``entries`` keeps duplicates, ``get`` sees the first of each."""

    entries: tuple[tuple[YScalar, YNode], ...]
    place: Place

    def get(self, key: str) -> YNode | None:
        for k, v in self.entries:
            if k.value == key:
                return v
        return None

    def key_node(self, key: str) -> YScalar | None:
        for k, _ in self.entries:
            if k.value == key:
                return k
        return None

    def keys(self) -> list[str]:
        return [str(k.value) for k, _ in self.entries]


YNode: TypeAlias = YScalar | YSeq | YMap


def kind_of(node: YNode) -> str:
    """Name a node's type as an operator would: 'a mapping', 'a list', 'a number', ..."""
    if isinstance(node, YMap):
        return "a mapping"
    if isinstance(node, YSeq):
        return "a list"
    value = node.value
    if value is None:
        return "empty"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, dt.date):
        return "a date"
    return "text"


class _Reader:
    def __init__(self, file: str) -> None:
        self.file = file
        self.problems: list[Problem] = []
        self.budget = _NODE_BUDGET
        self._converted: dict[int, YNode] = {}
        """Nodes already converted, by identity: an alias is the same node again, so it is
        converted once and shared, and a 'billion laughs' document stays small."""

    def place(self, node: Node) -> Place:
        mark = cast(Any, node).start_mark
        return Place(file=self.file, line=mark.line + 1, col=mark.column + 1)

    def convert(self, node: Node, depth: int = 0) -> YNode:
        done = self._converted.get(id(node))
        if done is not None:
            return done
        result = self._convert(node, depth)
        self._converted[id(node)] = result
        return result

    def _convert(self, node: Node, depth: int) -> YNode:
        self.budget -= 1
        if self.budget < 0:
            raise _TooBig
        if depth > MAX_DEPTH:
            self.problems.append(self.place(node).problem("YAML nested too deeply"))
            return YScalar(value=None, text="", quoted=False, place=self.place(node))
        if isinstance(node, MappingNode):
            return self._mapping(node, depth)
        if isinstance(node, SequenceNode):
            children = cast(list[Node], cast(Any, node).value)
            items = tuple(self.convert(child, depth + 1) for child in children)
            return YSeq(items=items, place=self.place(node))
        assert isinstance(node, ScalarNode)
        return self._scalar(node)

    def _scalar(self, node: ScalarNode) -> YScalar:
        raw = cast(Any, node)
        text = str(raw.value)
        style = cast(str | None, raw.style)
        quoted = style in ("'", '"')
        value: ScalarValue = text
        if not quoted and style not in ("|", ">"):
            value = _typed(_tag(node), text)
        return YScalar(value=value, text=text, quoted=quoted, place=self.place(node))

    def _mapping(self, node: MappingNode, depth: int) -> YMap:
        own: list[tuple[YScalar, YNode]] = []
        merged: list[tuple[YScalar, YNode]] = []
        pairs = cast(list[tuple[Node, Node]], cast(Any, node).value)
        for key_node, value_node in pairs:
            raw_key = cast(Any, key_node)
            if raw_key.value == "<<" and _tag(key_node) == "tag:yaml.org,2002:merge":
                merged.extend(self._merge_sources(value_node, depth))
                continue
            if not isinstance(key_node, ScalarNode):
                self.problems.append(
                    self.place(key_node).problem(
                        "a mapping key must be plain text, not a list or mapping"
                    )
                )
                continue
            # keys are names: kept as written (``1:`` is the key "1"), never typed
            text = str(raw_key.value)
            key = YScalar(
                value=text,
                text=text,
                quoted=raw_key.style in ("'", '"'),
                place=self.place(key_node),
            )
            own.append((key, self.convert(value_node, depth + 1)))
        written = {k.value for k, _ in own}
        extra = [(k, v) for k, v in merged if k.value not in written]
        # keep only the first merged source of each key (YAML's merge order)
        seen: set[object] = set()
        kept: list[tuple[YScalar, YNode]] = []
        for k, v in extra:
            if k.value not in seen:
                seen.add(k.value)
                kept.append((k, v))
        return YMap(entries=tuple(own + kept), place=self.place(node))

    def _merge_sources(self, node: Node, depth: int) -> list[tuple[YScalar, YNode]]:
        sources = (
            cast(list[Node], cast(Any, node).value) if isinstance(node, SequenceNode) else [node]
        )
        entries: list[tuple[YScalar, YNode]] = []
        for source in sources:
            converted = self.convert(source, depth + 1)
            if isinstance(converted, YMap):
                entries.extend(converted.entries)
            else:
                self.problems.append(converted.place.problem("'<<' must merge a mapping"))
        return entries


_NODE_BUDGET = 1_000_000


class _TooBig(Exception):
    """Alias expansion made the document larger than any real config (a 'billion laughs')."""


MAX_DEPTH = 100
"""The deepest nesting of mappings and sequences a config may have (a real one has under 10)."""


class _TooDeep(Exception):
    """The document nests deeper than ``MAX_DEPTH``; ``line`` and ``col`` say where (1-based)."""

    def __init__(self, line: int, col: int) -> None:
        self.line, self.col = line, col


def _check_depth(text: str) -> None:
    """Refuse a document nested deeper than ``MAX_DEPTH`` before libyaml composes it: its
    composer recurses in C once per level, and some 30,000 levels (a 60 KB file of brackets)
    overflow the C stack and kill the process, reload or not. Parsing into events keeps its
    own stack, so counting the depth from them is safe at any depth."""
    assert _CLoader is not None
    loader = cast(Any, _CLoader(text))
    depth = 0
    try:
        while loader.check_event():
            event = loader.get_event()
            if isinstance(event, MappingStartEvent | SequenceStartEvent):
                depth += 1
                if depth > MAX_DEPTH:
                    mark = cast(Any, event).start_mark
                    raise _TooDeep(int(mark.line) + 1, int(mark.column) + 1)
            elif isinstance(event, MappingEndEvent | SequenceEndEvent):
                depth -= 1
    finally:
        loader.dispose()


def _compose(text: str, *, pure: bool) -> Node | None:
    if _CLoader is None or pure:
        return cast(Node | None, cast(Any, YAML(typ="rt")).compose(text))
    _check_depth(text)
    loader = cast(Any, _CLoader(text))
    try:
        return cast(Node | None, loader.get_single_node())
    finally:
        loader.dispose()


def _tag(node: Node) -> str:
    tag: object = cast(Any, node).tag
    value: object = getattr(tag, "value", tag)
    return str(value)


def _typed(tag: str, text: str) -> ScalarValue:
    kind = tag.rsplit(":", 1)[-1]
    if kind == "str":
        return text
    try:
        if kind == "null":
            return None
        if kind == "bool":
            return text.lower() in ("true", "yes", "on")
        if kind == "int":
            cleaned = text.replace("_", "")
            try:
                return int(cleaned, 0)
            except ValueError:
                return int(cleaned, 10)
        if kind == "float":
            lowered = text.lower()
            if lowered.endswith(("inf", ".inf")):
                return -math.inf if lowered.startswith("-") else math.inf
            if lowered.endswith("nan"):
                return math.nan
            return float(text.replace("_", ""))
        if kind == "timestamp" and len(text) == 10:
            return dt.date.fromisoformat(text)
    except ValueError:
        return text
    return text


def read_yaml(text: str, file: str, *, pure: bool = False) -> tuple[YNode | None, list[Problem]]:
    """Compose ``text`` into a located tree; YAML errors come back as problems, never raised.

    An empty document gives ``None`` and no problems (the caller decides whether that is fine).
    ``pure`` forces the pure-Python composer (the tests check both agree).
    """
    reader = _Reader(file)
    try:
        root = _compose(text, pure=pure)
    except MarkedYAMLError as error:
        exc = cast(Any, error)
        mark = exc.problem_mark or exc.context_mark
        line, col = (int(mark.line) + 1, int(mark.column) + 1) if mark is not None else (0, 0)
        parts = [str(part) for part in (exc.context, exc.problem) if part]
        message = " ".join(parts) or str(error)
        return None, [Problem(file=file, line=line, col=col, message=f"YAML syntax: {message}")]
    except YAMLError as exc:
        return None, [Problem(file=file, line=0, col=0, message=f"YAML error: {exc}")]
    except RecursionError:
        return None, [Problem(file=file, line=0, col=0, message="YAML nested too deeply")]
    except _TooDeep as deep:
        message = f"YAML nested too deeply (more than {MAX_DEPTH} levels)"
        return None, [Problem(file=file, line=deep.line, col=deep.col, message=message)]
    except AssertionError:
        # the pure-Python parser (used where libyaml is missing) trips over some malformed
        # comment layouts with an internal assert: still a file it cannot read, not a crash
        message = "YAML the parser cannot read (check comments and indentation)"
        return None, [Problem(file=file, line=0, col=0, message=message)]
    if root is None or (isinstance(root, ScalarNode) and cast(Any, root).value == ""):
        return None, []  # an empty document (libyaml gives an empty scalar, pure YAML None)
    try:
        return reader.convert(root), reader.problems
    except _TooBig:
        message = f"YAML expands to more than {_NODE_BUDGET:,} nodes through aliases"
        return None, [Problem(file=file, line=0, col=0, message=message)]
