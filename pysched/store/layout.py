"""The files of a state dir, their names, and reading one of them line by line with every check.

::

    state_dir/
      lock                    flock'ed by the owning pysched; holds its pid
      snapshot.jsonl          header line, then the live records (replaced by rename)
      snapshot.jsonl.tmp      a snapshot being written (removed on open if a crash left it)
      journal.000004.jsonl    segments: the records committed since, in seq order
      journal.000005.jsonl
      archive/2026-09.jsonl   records retired from the live state, by month
      admin.token             ``pysched serve``'s, not the store's (``pysched.config.model``)
      tokens.json
      minder/                 ``pysched serve``'s native minder (``pysched.launch.native_minder``)

``scan_file`` is shared by ``Store.open`` (which stops at the first problem) and
``check_state_dir`` (which reports them all).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from io import BufferedReader
from pathlib import Path
from typing import Literal

from pysched.store.lines import (
    LineError,
    SnapshotHeader,
    header_from,
    read_fields,
    read_record,
    read_seq,
    record_from,
)
from pysched.store.record import Record

LOCK = "lock"
SNAPSHOT = "snapshot.jsonl"
SNAPSHOT_TMP = "snapshot.jsonl.tmp"
ARCHIVE_DIR = "archive"
STATE_FILE_MODE = 0o600
"""Mode of every file the store writes: the journal holds the config's text and operators'
notes, so only the scheduler's own user reads it (others go through the API)."""
STATE_DIR_MODE = 0o700
"""Mode of the state dir and its archive folder, when the store makes them."""
_SEGMENT = re.compile(r"journal\.(\d{6,})\.jsonl")
_MONTH = re.compile(r"\d{4}-(?:0[1-9]|1[0-2])")

Kind = Literal["journal", "snapshot", "archive"]


def segment_name(number: int) -> str:
    return f"journal.{number:06d}.jsonl"


def archive_name(month: str) -> str:
    return f"{ARCHIVE_DIR}/{month}.jsonl"


def is_month(text: str) -> bool:
    return _MONTH.fullmatch(text) is not None


def list_segments(state_dir: Path) -> dict[int, Path]:
    """Every ``journal.<n>.jsonl`` in the dir, by number, in order."""
    found: dict[int, Path] = {}
    for path in state_dir.iterdir():
        match = _SEGMENT.fullmatch(path.name)
        if match:
            found[int(match.group(1))] = path
    return dict(sorted(found.items()))


def list_archives(state_dir: Path) -> list[Path]:
    folder = state_dir / ARCHIVE_DIR
    return sorted(folder.glob("*.jsonl")) if folder.is_dir() else []


@dataclass(frozen=True, slots=True, kw_only=True)
class TornTail:
    """A last line that a crash cut short: it starts at byte ``offset`` of the file."""

    name: str
    line: int
    offset: int
    reason: str

    def __str__(self) -> str:
        return f"{self.name}:{self.line}: torn last line ({self.reason})"


@dataclass(slots=True, kw_only=True)
class FileScan:
    """What reading one file found."""

    name: str
    records: int = 0
    first_seq: int | None = None
    last_seq: int | None = None
    header: SnapshotHeader | None = None
    torn: TornTail | None = None
    problems: list[str] = field(default_factory=list[str])


class _Stop(Exception):
    """Raised inside a strict scan at the first problem; carries ``file:line: message``."""


def scan_file(
    path: Path,
    name: str,
    kind: Kind,
    *,
    previous_seq: int | None = None,
    tail_may_tear: bool = False,
    strict: bool = False,
    quick: bool = False,
    on_record: Callable[[Record], None] | None = None,
) -> FileScan:
    """Read and check every line of one file.

    ``journal`` lines must carry seq ``previous_seq + 1``, ``+ 2``, ... (a missing or repeated
    number means lost or doubled records); a ``snapshot`` must start with its header and hold
    exactly the number of records it announces. A line that looks torn is forgiven only as the
    file's last line and only when ``tail_may_tear``; it is then reported in ``torn``.

    With ``strict`` the scan raises ``ValueError("file:line: message")`` at the first problem;
    otherwise every problem is collected in ``problems`` and reading goes on. With ``quick``
    record lines are checked by checksum, version and seq without parsing their JSON (what
    ``Store.open`` does: replay parses each line once, afterwards).
    """
    scan = FileScan(name=name)
    expected = None if previous_seq is None else previous_seq + 1

    def problem(line: int, message: str) -> None:
        text = f"{name}:{line}: {message}"
        if strict:
            raise _Stop(text)
        scan.problems.append(text)

    journal = kind == "journal"
    min_seq = 1 if journal else 0
    try:
        try:
            with path.open("rb") as file:
                for number, raw in enumerate(file, start=1):
                    try:
                        if number == 1 and kind == "snapshot":
                            scan.header = header_from(read_fields(raw))
                            continue
                        if quick:
                            seq = read_seq(raw, expected if journal else 0)
                            if seq < min_seq:
                                raise LineError(
                                    f"bad seq {seq} (a whole number from {min_seq})", torn=False
                                )
                            record = None
                        else:
                            record = record_from(read_fields(raw), min_seq=min_seq)
                            seq = record.seq
                        if journal:
                            if expected is not None and seq != expected:
                                problem(
                                    number,
                                    f"seq {seq} where {expected} was expected "
                                    "(records are missing, doubled or out of order)",
                                )
                            expected = seq + 1
                            if scan.first_seq is None:
                                scan.first_seq = seq
                            scan.last_seq = seq
                        scan.records += 1
                        if on_record is not None and record is not None:
                            on_record(record)
                    except LineError as exc:
                        if exc.torn and tail_may_tear and _at_end(file):
                            offset = file.tell() - len(raw)
                            scan.torn = TornTail(
                                name=name, line=number, offset=offset, reason=str(exc)
                            )
                        else:
                            problem(number, str(exc))
                            expected = None  # the bad line's own seq is unknown: no second report
        except OSError as exc:
            problem(0, f"cannot be read: {exc.strerror or exc}")
        if kind == "snapshot" and not scan.problems:
            if scan.header is None:
                problem(0, "empty snapshot (no header line)")
            elif scan.header.records != scan.records:
                problem(
                    0,
                    f"the header announces {scan.header.records} records but the file holds "
                    f"{scan.records} (cut short?)",
                )
    except _Stop as stop:
        raise ValueError(str(stop)) from None
    return scan


def replay_file(
    path: Path, name: str, kind: Kind, *, tail_may_tear: bool = False
) -> Iterator[Record]:
    """The records of one already checked file, streamed; ``ValueError`` on any bad line.

    With ``tail_may_tear`` a torn last line is skipped (an archive a crash cut short, which the
    next append cuts).
    """
    min_seq = 1 if kind == "journal" else 0
    snapshot = kind == "snapshot"
    with path.open("rb") as file:
        for number, raw in enumerate(file, start=1):
            try:
                if number == 1 and snapshot:
                    read_fields(raw)  # the header: checked, and not a record
                    continue
                record = read_record(raw, min_seq=min_seq)
            except LineError as exc:
                if exc.torn and tail_may_tear and _at_end(file):
                    return
                raise ValueError(f"{name}:{number}: {exc}") from None
            yield record


def _at_end(file: BufferedReader) -> bool:
    """Whether the line just read from ``file`` was its last (a torn line is forgiven only
    there)."""
    return not file.peek(1)


def read_header(path: Path) -> SnapshotHeader:
    """A snapshot's header (its first line); ``ValueError`` naming the file if it is bad."""
    with path.open("rb") as file:
        raw = file.readline()
    try:
        return header_from(read_fields(raw))
    except LineError as exc:
        raise ValueError(f"{SNAPSHOT}:1: {exc}") from None
