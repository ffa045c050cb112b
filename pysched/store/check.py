"""Checking a state dir without opening it: every file, every line, nothing changed.

``check_state_dir`` takes no lock and cuts nothing, so it is safe on the dir of a running
scheduler. It reports every problem (what would make ``Store.open`` refuse, or an archive that
would not read back: ``Store.open`` never reads the archive, so that one does not stop a start)
and, apart, the warnings: what the next open tidies by itself (a torn last line, a leftover
temporary snapshot, segments a snapshot already covers) and files that are no part of the
journal. The files ``pysched serve`` keeps in the state dir (named in ``pysched.config.model``:
``TOKENS_FILE``, ``ADMIN_TOKEN_FILE``, ``MINDER_DIR``) are not warned about.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pysched.config.model import ADMIN_TOKEN_FILE, MINDER_DIR, TOKENS_FILE
from pysched.store.layout import (
    ARCHIVE_DIR,
    LOCK,
    SNAPSHOT,
    SNAPSHOT_TMP,
    archive_name,
    is_month,
    list_archives,
    list_segments,
    scan_file,
    segment_name,
)
from pysched.store.lines import SnapshotHeader


@dataclass(frozen=True, slots=True, kw_only=True)
class StateReport:
    """What ``inspect_state_dir`` found. ``records`` is what a replay would hand back: the
    snapshot's records plus ``journal_records``.

    ``problems`` holds them all; ``refuses_start`` says whether any of them would make
    ``Store.open`` refuse the dir, and ``damaged_archives`` names the archive files that hold
    the others (the live state does not need them, but they do not read back)."""

    state_dir: Path
    problems: tuple[str, ...]
    refuses_start: bool
    damaged_archives: tuple[str, ...]
    warnings: tuple[str, ...]
    segments: tuple[str, ...]
    journal_records: int
    snapshot: SnapshotHeader | None
    snapshot_records: int
    archive_files: int
    archive_records: int
    last_seq: int

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def records(self) -> int:
        return self.snapshot_records + self.journal_records

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "state_dir": str(self.state_dir),
            "problems": list(self.problems),
            "refuses_start": self.refuses_start,
            "damaged_archives": list(self.damaged_archives),
            "warnings": list(self.warnings),
            "records": self.records,
            "journal_records": self.journal_records,
            "segments": list(self.segments),
            "snapshot": None
            if self.snapshot is None
            else {
                "records": self.snapshot_records,
                "continues_from": segment_name(self.snapshot.segment),
                "seq": self.snapshot.seq,
            },
            "archive_files": self.archive_files,
            "archive_records": self.archive_records,
            "last_seq": self.last_seq,
        }


def check_state_dir(state_dir: str | os.PathLike[str]) -> list[str]:
    """Every problem in a state dir as ``"file:line: message"`` (line 0: the whole file); ``[]``
    if a ``Store.open`` would accept it and every archive reads back. Reads only; takes no lock.
    See ``inspect_state_dir`` for the warnings, counts, and which problems stop a start."""
    return list(inspect_state_dir(state_dir).problems)


def inspect_state_dir(state_dir: str | os.PathLike[str]) -> StateReport:
    """Read every file of a state dir (snapshot, segments, archives) and report what is wrong."""
    root = Path(state_dir)
    problems: list[str] = []
    warnings: list[str] = []
    if not root.is_dir():
        problems.append(f"{root}:0: no such state dir")
        return _report(root, problems, warnings)

    header: SnapshotHeader | None = None
    snapshot_records = 0
    if (root / SNAPSHOT).exists():
        scan = scan_file(root / SNAPSHOT, SNAPSHOT, "snapshot")
        problems += scan.problems
        header, snapshot_records = scan.header, scan.records
    if (root / SNAPSHOT_TMP).exists():
        warnings.append(
            f"{SNAPSHOT_TMP}:0: an unfinished snapshot (being written now, or left by a crash); "
            "the next open removes it"
        )

    first = header.segment if header is not None else 1
    segments = list_segments(root)
    for number in segments:
        if number < first:
            warnings.append(
                f"{segment_name(number)}:0: covered by the snapshot; the next open removes it"
            )
    kept = {number: path for number, path in segments.items() if number >= first}
    for expected, number in enumerate(kept, start=first):
        if number != expected:
            problems.append(
                f"{segment_name(expected)}:0: missing, yet {segment_name(number)} follows: "
                "replay would lose records"
            )
            break
    previous: int | None = None
    journal_records = 0
    for index, (number, path) in enumerate(kept.items()):
        name = segment_name(number)
        last = index == len(kept) - 1
        scan = scan_file(path, name, "journal", previous_seq=previous, tail_may_tear=last)
        problems += scan.problems
        journal_records += scan.records
        if previous is None and scan.first_seq is not None:
            start = header.seq + 1 if header is not None else 1
            if scan.first_seq > start:
                problems.append(
                    f"{name}:1: the journal starts at seq {scan.first_seq}, not {start}: "
                    "records are missing"
                )
        if scan.torn is not None:
            warnings.append(f"{scan.torn}: a crash interrupted its write; the next open cuts it")
        if scan.last_seq is not None:
            previous = scan.last_seq

    refuses_start = bool(problems)
    damaged_archives: list[str] = []
    archive_records = 0
    archives = list_archives(root)
    for path in archives:
        name = f"{ARCHIVE_DIR}/{path.name}"
        if not is_month(path.stem):
            warnings.append(f"{name}:0: not a month's archive (YYYY-MM.jsonl); ignored")
            continue
        scan = scan_file(path, archive_name(path.stem), "archive", tail_may_tear=True)
        problems += scan.problems
        archive_records += scan.records
        if scan.problems:
            damaged_archives.append(scan.name)
        if scan.torn is not None:
            warnings.append(f"{scan.torn}: cut before the next append to it")

    known = {LOCK, SNAPSHOT, SNAPSHOT_TMP, ARCHIVE_DIR, TOKENS_FILE, ADMIN_TOKEN_FILE, MINDER_DIR}
    known |= {p.name for p in segments.values()}
    for path in sorted(root.iterdir()):
        if path.name not in known:
            warnings.append(f"{path.name}:0: not a journal file; ignored")

    last_seq = max(previous or 0, header.seq if header is not None else 0)
    return _report(
        root,
        problems,
        warnings,
        refuses_start=refuses_start,
        damaged_archives=tuple(damaged_archives),
        segments=tuple(segment_name(n) for n in kept),
        journal_records=journal_records,
        snapshot=header,
        snapshot_records=snapshot_records,
        archive_files=len(archives),
        archive_records=archive_records,
        last_seq=last_seq,
    )


def _report(
    root: Path,
    problems: list[str],
    warnings: list[str],
    *,
    refuses_start: bool | None = None,
    damaged_archives: tuple[str, ...] = (),
    segments: tuple[str, ...] = (),
    journal_records: int = 0,
    snapshot: SnapshotHeader | None = None,
    snapshot_records: int = 0,
    archive_files: int = 0,
    archive_records: int = 0,
    last_seq: int = 0,
) -> StateReport:
    return StateReport(
        state_dir=root,
        problems=tuple(problems),
        warnings=tuple(warnings),
        refuses_start=bool(problems) if refuses_start is None else refuses_start,
        damaged_archives=damaged_archives,
        segments=segments,
        journal_records=journal_records,
        snapshot=snapshot,
        snapshot_records=snapshot_records,
        archive_files=archive_files,
        archive_records=archive_records,
        last_seq=last_seq,
    )
