"""The fast way of reading a line agrees with the long way, line by line, whatever the line."""

from __future__ import annotations

import zlib

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from pysched.store.lines import (
    LineError,
    encode_line,
    read_fields,
    read_head,
    read_record,
    read_seq,
    record_from,
)
from pysched.store.record import Record


def _sealed(head: bytes) -> bytes:
    return head + b',"crc":"%08x"}\n' % zlib.crc32(head)


def _long_way(raw: bytes, min_seq: int) -> Record | str:
    try:
        return record_from(read_fields(raw), min_seq=min_seq)
    except LineError as exc:
        return f"{exc} (torn={exc.torn})"


def _fast_way(raw: bytes, min_seq: int) -> Record | str:
    try:
        return read_record(raw, min_seq=min_seq)
    except LineError as exc:
        return f"{exc} (torn={exc.torn})"


def _head_long(raw: bytes) -> int | str:
    try:
        return read_head(raw)[0]
    except LineError as exc:
        return f"{exc} (torn={exc.torn})"


def _head_fast(raw: bytes, expected: int | None) -> int | str:
    try:
        return read_seq(raw, expected)
    except LineError as exc:
        return f"{exc} (torn={exc.torn})"


GOOD = encode_line(7, "run", b'{"id":"x","value":1}')
HEADS = [
    b'{"v":1,"seq":7,"type":"run","data":{"id":"x"}',
    b'{"v":1,"seq":0,"type":"runs","data":{"runs":[]}',
    b'{"v":2,"seq":7,"type":"run","data":{}',  # a newer version
    b'{"v":true,"seq":7,"type":"run","data":{}',
    b'{"v":1,"seq":-1,"type":"run","data":{}',
    b'{"v":1,"seq":7.0,"type":"run","data":{}',
    b'{"v":1,"seq":true,"type":"run","data":{}',
    b'{"v":1,"seq":07,"type":"run","data":{}',  # not JSON, yet the right shape
    b'{"v":1,"seq":7,"type":"Run","data":{}',
    b'{"v":1,"seq":7,"type":"","data":{}',
    b'{"v":1,"seq":7,"type":5,"data":{}',
    b'{"v":1,"seq":7,"type":"run","data":[]',
    b'{"v":1,"seq":7,"type":"run","data":{},"extra":1',
    b'{"v":1,"seq":7,"type":"run"',
    b'{"seq":7,"v":1,"type":"run","data":{}',  # fields in another order
    b'{"v":1,"seq":7,"type":"run","data":{"a":1}}garbage',
    b"[1,2",
    b"",
]


@pytest.mark.parametrize("head", HEADS)
@pytest.mark.parametrize("min_seq", [0, 1])
def test_odd_lines_read_the_same_both_ways(head: bytes, min_seq: int) -> None:
    for raw in (_sealed(head), _sealed(head)[:-1], _sealed(head).replace(b'"}\n', b'"} \n')):
        assert _fast_way(raw, min_seq) == _long_way(raw, min_seq)
        for expected in (None, 0, 7, 8):
            assert _head_fast(raw, expected) == _head_long(raw)


@given(
    raw=st.one_of(
        st.binary(max_size=80),
        st.builds(_sealed, st.binary(max_size=60)),
        st.builds(
            lambda cut, flip: (
                (GOOD[:cut] + bytes([GOOD[cut] ^ flip]) + GOOD[cut + 1 :])
                if cut < len(GOOD)
                else GOOD
            ),
            st.integers(0, len(GOOD)),
            st.integers(1, 255),
        ),
        st.builds(lambda cut: GOOD[:cut], st.integers(0, len(GOOD))),
    ),
    min_seq=st.integers(0, 8),
    expected=st.one_of(st.none(), st.integers(-1, 8)),
)
@example(raw=GOOD, min_seq=1, expected=7)
def test_any_line_reads_the_same_both_ways(raw: bytes, min_seq: int, expected: int | None) -> None:
    assert _fast_way(raw, min_seq) == _long_way(raw, min_seq)
    assert _head_fast(raw, expected) == _head_long(raw)


def test_the_usual_line() -> None:
    assert read_record(GOOD) == Record(type="run", data={"id": "x", "value": 1}, seq=7)
    assert read_seq(GOOD, 7) == read_seq(GOOD) == read_seq(GOOD, 3) == 7
    with pytest.raises(LineError, match="bad seq 7"):
        read_record(GOOD, min_seq=8)


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (GOOD[:-1], "no newline at its end"),
        (GOOD[:30] + b"\n", "no checksum at its end"),
        (GOOD.replace(b'"value":1', b'"value":2'), "bad checksum"),
    ],
    ids=["no_newline", "no_checksum", "bad_checksum"],
)
def test_open_and_check_word_a_torn_line_alike(raw: bytes, reason: str) -> None:
    # Store.open reads heads (read_seq), store check whole records: one wording for both
    assert _head_long(raw) == _head_fast(raw, 7) == _long_way(raw, 0)
    assert str(_long_way(raw, 0)).startswith(reason)
