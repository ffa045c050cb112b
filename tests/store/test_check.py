"""``check_state_dir`` and ``pysched store check``: read-only, every problem, torn tails warned."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import trio
from store_harness import rec
from typer.testing import CliRunner

from pysched.cli import app
from pysched.config.loader import parse_config
from pysched.store import Store, StoreError, check_state_dir
from pysched.store.check import inspect_state_dir
from pysched.tokens import first_admin_token

runner = CliRunner()


def _state(path: Path) -> Path:
    async def build() -> None:
        store = Store.open(path, sync=False)
        for i in range(6):
            await store.commit([rec(f"k{i}", i)])
        await store.write_snapshot(
            [rec(f"k{i}", i) for i in range(1, 6)], archived=[("2026-10", rec("k0", 0))]
        )
        for i in range(6, 9):
            await store.commit([rec(f"k{i}", i)])
        store.close()

    trio.run(build)
    return path


def test_a_good_dir(tmp_path: Path) -> None:
    state = _state(tmp_path / "state")
    assert check_state_dir(state) == []
    result = runner.invoke(app, ["store", "check", str(state)])
    assert result.exit_code == 0, result.output
    assert f"{state}: OK — 8 records to replay, 1 segment, last seq 9" in result.output
    assert "snapshot: 5 records as of seq 6; replay continues from journal.000002.jsonl" in (
        result.output
    )
    assert "archive: 1 file, 1 record" in result.output

    result = runner.invoke(app, ["store", "check", str(state), "--json"])
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    assert data["ok"] is True
    assert (data["records"], data["journal_records"], data["last_seq"]) == (8, 3, 9)
    assert data["snapshot"] == {"records": 5, "continues_from": "journal.000002.jsonl", "seq": 6}
    assert data["segments"] == ["journal.000002.jsonl"]
    assert (data["archive_files"], data["archive_records"]) == (1, 1)
    assert data["problems"] == [] and data["warnings"] == []


def test_check_works_on_a_locked_dir_and_changes_nothing(tmp_path: Path) -> None:
    state = _state(tmp_path / "state")
    store = Store.open(state)
    before = {p: p.read_bytes() for p in state.rglob("*") if p.is_file()}
    assert check_state_dir(state) == []
    assert {p: p.read_bytes() for p in state.rglob("*") if p.is_file()} == before
    store.close()


def test_a_flipped_byte_is_a_problem_with_file_and_line(tmp_path: Path) -> None:
    state = _state(tmp_path / "state")
    segment = state / "journal.000002.jsonl"
    segment.write_bytes(segment.read_bytes().replace(b'"value":7', b'"value":8'))
    snapshot = state / "snapshot.jsonl"
    snapshot.write_bytes(snapshot.read_bytes().replace(b'"value":3', b'"value":4'))
    problems = check_state_dir(state)
    assert [p.split(": ")[0] for p in problems] == [
        "snapshot.jsonl:4",
        "journal.000002.jsonl:2",
    ]
    assert all("bad checksum" in p for p in problems)
    result = runner.invoke(app, ["store", "check", str(state)])
    assert result.exit_code == 1
    assert "journal.000002.jsonl:2: bad checksum" in result.output
    assert "2 problems" in result.output
    result = runner.invoke(app, ["store", "check", str(state), "--json"])
    assert result.exit_code == 1
    assert json.loads(result.stdout)["ok"] is False
    with pytest.raises(StoreError, match=r"snapshot\.jsonl:4: bad checksum"):
        Store.open(state)


def test_every_problem_is_reported(tmp_path: Path) -> None:
    state = _state(tmp_path / "state")
    segment = state / "journal.000002.jsonl"
    lines = segment.read_bytes().splitlines(keepends=True)
    segment.write_bytes(lines[0] + b"garbage\n" + lines[2] + lines[1])
    (state / "archive" / "2026-10.jsonl").write_bytes(b'{"v":1}\n{"v":1}\n')
    problems = check_state_dir(state)
    assert problems == [
        "journal.000002.jsonl:2: no checksum at its end",
        "journal.000002.jsonl:4: seq 8 where 10 was expected "
        "(records are missing, doubled or out of order)",
        "archive/2026-10.jsonl:1: no checksum at its end",
    ]


def test_a_torn_tail_is_a_warning(tmp_path: Path) -> None:
    state = _state(tmp_path / "state")
    segment = state / "journal.000002.jsonl"
    with segment.open("ab") as file:
        file.write(b'{"v":1,"seq":10,"type":"ru')
    (state / "notes.txt").write_text("hello")
    assert check_state_dir(state) == []
    result = runner.invoke(app, ["store", "check", str(state)])
    assert result.exit_code == 0, result.output
    assert (
        "warning: journal.000002.jsonl:4: torn last line (no newline at its end): a crash "
        "interrupted its write; the next open cuts it"
    ) in result.output
    assert "warning: notes.txt:0: not a journal file; ignored" in result.output
    data = json.loads(runner.invoke(app, ["store", "check", str(state), "--json"]).stdout)
    assert data["ok"] is True
    assert len(data["warnings"]) == 2
    assert segment.read_bytes().endswith(b'"type":"ru')  # check cut nothing


def test_a_missing_dir(tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    assert check_state_dir(missing) == [f"{missing}:0: no such state dir"]
    result = runner.invoke(app, ["store", "check", str(missing)])
    assert result.exit_code == 1
    assert "no such state dir" in result.output
    result = runner.invoke(app, ["store", "check", str(missing), "--json"])
    assert result.exit_code == 1
    assert json.loads(result.stdout)["ok"] is False


def test_the_files_serve_keeps_in_the_state_dir_are_no_strangers(tmp_path: Path) -> None:
    state = _state(tmp_path / "state")
    config = "jobs: {a: {schedule: '0 9 * * *', command: 'true'}}\n"
    settings = parse_config(config, tmp_path / "pysched.yaml", {}).scheduler  # state_dir: state
    # what ``serve`` writes there: the first admin token, the tokens file, the native minder
    first_admin_token(settings.tokens_path, settings.admin_token_path)
    settings.minder_dir.mkdir()
    (settings.minder_dir / "pysched-minder-0123456789abcdef").write_bytes(b"")
    paths = (settings.tokens_path, settings.admin_token_path, settings.minder_dir)
    assert {path.parent for path in paths} == {state}
    (state / "notes.txt").write_text("hello")
    result = runner.invoke(app, ["store", "check", str(state)])
    assert result.exit_code == 0, result.output
    assert "admin.token" not in result.output and "tokens.json" not in result.output
    assert "minder" not in result.output
    assert inspect_state_dir(state).warnings == ("notes.txt:0: not a journal file; ignored",)


def test_a_damaged_archive_is_a_problem_that_does_not_stop_a_start(tmp_path: Path) -> None:
    state = _state(tmp_path / "state")
    archive = state / "archive" / "2026-10.jsonl"
    good = archive.read_bytes()
    archive.write_bytes(good.replace(b'"value":0', b'"value":5') + good)  # not a torn tail
    report = inspect_state_dir(state)
    [problem] = report.problems
    assert problem.startswith("archive/2026-10.jsonl:1: bad checksum")
    assert (report.refuses_start, report.damaged_archives) == (False, ("archive/2026-10.jsonl",))
    result = runner.invoke(app, ["store", "check", str(state)])
    assert result.exit_code == 1
    assert "archive/2026-10.jsonl:1: bad checksum" in result.output
    assert "refuse to start" not in result.output
    assert (
        f"{state}: 1 problem — archive/2026-10.jsonl is damaged at the lines above and cannot "
        "be read back; the live state is unaffected and pysched starts"
    ) in result.output
    data = json.loads(runner.invoke(app, ["store", "check", str(state), "--json"]).stdout)
    assert (data["ok"], data["refuses_start"]) == (False, False)
    assert data["damaged_archives"] == ["archive/2026-10.jsonl"]
    Store.open(state).close()  # and it does start

    # with damage in the live state as well, pysched would refuse to start
    segment = state / "journal.000002.jsonl"
    segment.write_bytes(segment.read_bytes().replace(b'"value":7', b'"value":8'))
    assert inspect_state_dir(state).refuses_start is True
    result = runner.invoke(app, ["store", "check", str(state)])
    assert result.exit_code == 1
    assert f"{state}: 2 problems — pysched would refuse to start" in result.output
