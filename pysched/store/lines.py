"""The line format every journal file shares: one record a line, versioned and checksummed.

A record line is compact JSON ending in a newline::

    {"v":1,"seq":42,"type":"run","data":{"id":"ice.2026-10-19.1"},"crc":"5d1e0c6a"}

``crc`` is always the last field: eight lowercase hex digits of the CRC-32 (``zlib.crc32``) of
the line's bytes *before* ``,"crc":``. A reader therefore checks a line exactly, byte for byte,
before it parses any JSON, and the writer never needs a second serialisation to checksum.

A snapshot starts with one header line of the same shape, its fields in place of seq/type/data::

    {"v":1,"snapshot":{"segment":4,"seq":1234,"records":5678},"crc":"..."}

``v`` is the format version. A reader refuses a version it does not know (naming file and
line) rather than guessing; a line with a bad checksum is refused too, unless it is the last
line of a file that may legitimately end in a half-written line (see ``LineError.torn``).
"""

from __future__ import annotations

import json
import re
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

import orjson

from pysched.store.record import Record

FORMAT_VERSION = 1
TYPE_PATTERN = re.compile(r"[a-z_]+")
_CRC_TAIL = re.compile(rb',"crc":"([0-9a-f]{8})"\}\n')
_CRC_TAIL_SIZE = len(b',"crc":"00000000"}\n')
_RECORD_KEYS = frozenset({"v", "seq", "type", "data", "crc"})
_HEADER_KEYS = frozenset({"v", "snapshot", "crc"})
_dumps = json.JSONEncoder(separators=(",", ":"), allow_nan=False).encode


class LineError(Exception):
    """Why one line cannot be read.

    ``torn`` is True when the line could be the tail of a write that a crash interrupted (no
    newline, no or a bad checksum, not JSON); a torn line is only forgiven as a file's last line.
    """

    def __init__(self, message: str, *, torn: bool) -> None:
        self.torn = torn
        super().__init__(message)


@dataclass(frozen=True, slots=True, kw_only=True)
class SnapshotHeader:
    """A snapshot's first line: replay continues from journal ``segment``; the snapshot holds
    ``records`` records and was cut when ``seq`` was the last number handed out."""

    segment: int
    seq: int
    records: int


def encode_data(data: Mapping[str, Any]) -> bytes:
    """``data`` as compact JSON (UTF-8); ``ValueError`` if it is not JSON-able.

    orjson encodes about ten times faster than the standard library, which matters as every
    change of every run is encoded; but it writes NaN and infinities as ``null`` where they
    must be refused, and it refuses some data the standard library takes (keys that are not
    strings). Its result is used only when reading it back gives ``data`` again; otherwise the
    standard library encodes (or refuses) it, so what is stored is what it always was.
    """
    plain = cast(dict[str, Any], data) if type(data) is dict else dict(data)
    try:
        encoded = orjson.dumps(plain)
    except TypeError:
        pass
    else:
        if orjson.loads(encoded) == plain:
            return encoded
    try:
        encoded = _dumps(plain).encode()
        orjson.loads(encoded)  # what the readers use: a line they refuse is never written
    except (TypeError, ValueError) as exc:
        raise ValueError(f"record data is not JSON-able: {exc}") from None
    return encoded


def check_type(kind: str) -> None:
    if not TYPE_PATTERN.fullmatch(kind):
        raise ValueError(f"record type {kind!r} must be lowercase letters and underscores")


def _seal(head: bytes) -> bytes:
    return b'%s,"crc":"%08x"}\n' % (head, zlib.crc32(head))


def encode_line(seq: int, kind: str, data_json: bytes) -> bytes:
    """One record line; ``kind`` must already be checked and ``data_json`` encoded."""
    return _seal(
        b'{"v":%d,"seq":%d,"type":"%s","data":%s' % (FORMAT_VERSION, seq, kind.encode(), data_json)
    )


def encode_record(record: Record) -> bytes:
    """A record's line as it stands (its own seq); ``ValueError`` if it cannot be stored."""
    check_type(record.type)
    if record.seq < 0:
        raise ValueError(f"record seq {record.seq} is negative")
    return encode_line(record.seq, record.type, encode_data(record.data))


def encode_header(header: SnapshotHeader) -> bytes:
    return _seal(
        f'{{"v":{FORMAT_VERSION},"snapshot":{{"segment":{header.segment},'
        f'"seq":{header.seq},"records":{header.records}}}'.encode()
    )


def check_seal(raw: bytes) -> None:
    """Check a line's newline and checksum; ``LineError`` (``torn``) if either is wrong.

    The one place these reasons are worded: ``Store.open`` (which logs the torn tail it cuts)
    and ``store check`` (which warns about it) read lines by different paths, and must say the
    same thing, word for word, as docs/journal.md quotes it.
    """
    if not raw.endswith(b"\n"):
        raise LineError("no newline at its end", torn=True)
    match = _CRC_TAIL.fullmatch(raw[-_CRC_TAIL_SIZE:])
    if match is None:
        raise LineError("no checksum at its end", torn=True)
    stated = int(match.group(1), 16)
    actual = zlib.crc32(raw[:-_CRC_TAIL_SIZE])
    if stated != actual:
        raise LineError(
            f"bad checksum (the line says {stated:08x}, its content gives {actual:08x})", torn=True
        )


def read_fields(raw: bytes) -> dict[str, Any]:
    """Check a line's newline, checksum, JSON and version; return its fields."""
    check_seal(raw)
    try:
        fields = orjson.loads(raw)
    except ValueError as exc:
        raise LineError(f"not JSON although its checksum matches: {exc}", torn=False) from None
    if not isinstance(fields, dict):
        raise LineError("not a JSON object", torn=False)
    found = cast(dict[str, Any], fields)
    version = found.get("v")
    if version != FORMAT_VERSION:
        raise LineError(
            f"unknown format version {version!r} (this pysched reads version {FORMAT_VERSION}; "
            "was the file written by a newer pysched?)",
            torn=False,
        )
    return found


_HEAD = re.compile(rb'\{"v":(\d+),"seq":(\d+),"type":"([a-z_]+)","data":\{')


def read_head(raw: bytes) -> tuple[int, str]:
    """Check a record line's newline and checksum and read its seq and type, without parsing
    its JSON: the quick check ``Store.open`` makes of every line before replay parses them.

    A line whose checksum matches was written whole by the writer, which only writes valid
    JSON; replay still parses it fully and refuses anything else.
    """
    check_seal(raw)
    head = _HEAD.match(raw)
    if head is None:  # not the writer's usual shape: the full reader says exactly what is wrong
        record = record_from(read_fields(raw), min_seq=0)
        return record.seq, record.type
    if int(head.group(1)) != FORMAT_VERSION:
        raise LineError(
            f"unknown format version {int(head.group(1))} (this pysched reads version "
            f"{FORMAT_VERSION}; was the file written by a newer pysched?)",
            torn=False,
        )
    return int(head.group(2)), head.group(3).decode()


# ---- the fast way -------------------------------------------------------------------------------
# A restart checks every line twice (``Store.open``, then replay): the usual line is checked
# here with as little work as can be, and anything unusual goes the long way above, which
# raises the exact ``LineError``. A line passes here only if the long way would pass it too.

_SEALED_TAIL = b',"crc":"%08x"}\n'
_SEQ_HEAD = re.compile(rb'\{"v":%d,"seq":(\d+),"type":"([a-z_]+)","data":\{' % FORMAT_VERSION)
_SEQ_PREFIX = b'{"v":%d,"seq":' % FORMAT_VERSION + b'%d,"type":"'
_KINDS: set[str] = set()
"""Record types found well-formed (a replay meets a handful, thousands of times each)."""
_kinds_then_data: tuple[bytes, ...] = ()
"""``<type>","data":{`` for each record type a quick check found well-formed."""
_MAX_KINDS = 64
_new_record = object.__new__
# a frozen dataclass's fields, set as its own ``__init__`` does, without its keyword handling
_set_type = cast(Any, Record).type.__set__
_set_data = cast(Any, Record).data.__set__
_set_seq = cast(Any, Record).seq.__set__


def _known_kind(kind: str) -> bool:
    """Whether ``kind`` is a well-formed record type (remembered, for the next line)."""
    if kind in _KINDS:
        return True
    if TYPE_PATTERN.fullmatch(kind) is None:
        return False
    if len(_KINDS) < _MAX_KINDS:
        _KINDS.add(kind)
    return True


def _learn_kind(kind: bytes) -> None:
    global _kinds_then_data  # noqa: PLW0603 (a tuple, as bytes.startswith takes it)
    then_data = kind + b'","data":{'
    if then_data not in _kinds_then_data and len(_kinds_then_data) < _MAX_KINDS:
        _kinds_then_data = (*_kinds_then_data, then_data)


def read_record(raw: bytes, *, min_seq: int = 1) -> Record:
    """``record_from(read_fields(raw), min_seq=min_seq)``, the fast way."""
    if raw.endswith(_SEALED_TAIL % zlib.crc32(raw[:-_CRC_TAIL_SIZE])):
        try:
            fields = orjson.loads(raw)
        except ValueError:
            fields = None
        if type(fields) is dict and fields.keys() == _RECORD_KEYS:
            found = cast(dict[str, Any], fields)
            seq, kind, data = found["seq"], found["type"], found["data"]
            if (
                found["v"] == FORMAT_VERSION
                and type(seq) is int
                and seq >= min_seq
                and type(data) is dict
                and type(kind) is str
                and (kind in _KINDS or _known_kind(kind))
            ):
                record = _new_record(Record)
                _set_type(record, kind)
                _set_data(record, data)
                _set_seq(record, seq)
                return record
    return record_from(read_fields(raw), min_seq=min_seq)


def read_seq(raw: bytes, expected: int | None = None) -> int:
    """``read_head(raw)[0]``, the fast way: fastest when the line carries seq ``expected``."""
    if raw.endswith(_SEALED_TAIL % zlib.crc32(raw[:-_CRC_TAIL_SIZE])):
        if expected is not None and expected >= 0:
            head = _SEQ_PREFIX % expected
            if raw.startswith(head) and raw.startswith(_kinds_then_data, len(head)):
                return expected
        found = _SEQ_HEAD.match(raw)
        if found is not None:
            _learn_kind(found[2])
            return int(found[1])
    return read_head(raw)[0]


def _whole(value: object, minimum: int) -> bool:
    return type(value) is int and value >= minimum


def record_from(fields: dict[str, Any], *, min_seq: int = 1) -> Record:
    """The record a checked line holds; ``LineError`` if its fields are not a record's."""
    if fields.keys() != _RECORD_KEYS:
        raise LineError(
            f"not a record: fields {sorted(fields)}, expected {sorted(_RECORD_KEYS)}", torn=False
        )
    seq, kind, data = fields["seq"], fields["type"], fields["data"]
    if not _whole(seq, min_seq):
        raise LineError(f"bad seq {seq!r} (a whole number from {min_seq})", torn=False)
    if not (isinstance(kind, str) and TYPE_PATTERN.fullmatch(kind)):
        raise LineError(f"bad type {kind!r}", torn=False)
    if not isinstance(data, dict):
        raise LineError("data is not a JSON object", torn=False)
    return Record(type=kind, data=cast(dict[str, Any], data), seq=seq)


def header_from(fields: dict[str, Any]) -> SnapshotHeader:
    """The snapshot header a checked line holds; ``LineError`` if it is not one."""
    body = fields.get("snapshot")
    if fields.keys() != _HEADER_KEYS or not isinstance(body, dict):
        raise LineError("not a snapshot header (the first line of a snapshot)", torn=False)
    values = cast(dict[str, Any], body)
    segment, seq, records = (
        values.get("segment", 0),
        values.get("seq", -1),
        values.get("records", -1),
    )
    if not (_whole(segment, 1) and _whole(seq, 0) and _whole(records, 0)):
        raise LineError(f"bad snapshot header {values}", torn=False)
    return SnapshotHeader(segment=segment, seq=seq, records=records)
