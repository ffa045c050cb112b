"""``pysched store check`` on paths it cannot read: a clean error, never a traceback."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest

import pysched.store.check
from tests.cli.cli_fake_api import cli


def test_a_name_too_long_is_reported_as_validate_reports_it(tmp_path: Path) -> None:
    path = str(tmp_path / ("x" * 300))
    result = cli("store", "check", path)
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    reason = os.strerror(errno.ENAMETOOLONG)
    assert result.stderr.strip() == f"error: {path}: cannot read the state dir: {reason}"
    validate = cli("validate", path)
    assert validate.exit_code == 2  # a config that cannot be read is a usage mistake
    as_json = cli("store", "check", path, "--json")
    assert as_json.exit_code == 1
    assert reason in json.loads(as_json.stdout)["error"]["message"]


def test_not_a_directory_is_no_such_state_dir(tmp_path: Path) -> None:
    file = tmp_path / "file"
    file.write_text("")
    result = cli("store", "check", str(file / "state"))
    assert result.exit_code == 1, result.output
    assert "no such state dir" in result.stderr


def test_permission_denied_is_a_clean_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # root reads every folder, so the refusal is made to happen where the store lists files
    def refuse(root: Path) -> dict[int, Path]:
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(root))

    monkeypatch.setattr(pysched.store.check, "list_segments", refuse)
    result = cli("store", "check", str(tmp_path))
    assert result.exit_code == 1, result.output
    assert result.stderr.strip() == (
        f"error: {tmp_path}: cannot read the state dir: {os.strerror(errno.EACCES)}"
    )
