"""Building the native minder: once, checked, private, and never in the way when it cannot be."""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

import pytest
import trio

from pysched.launch import native_minder as native
from pysched.launch.local import LocalLauncher
from tests.launch.test_minder import job_for, read

pytestmark = pytest.mark.usefixtures("compiler")


@pytest.fixture
def compiler() -> None:
    if native.find_compiler() is None:
        pytest.skip("no C compiler here: the native minder cannot be built")


def test_it_is_built_once_into_a_private_folder_and_then_reused(tmp_path, caplog):
    folder = tmp_path / "cache" / "deep"
    with caplog.at_level(logging.INFO, logger=native.__name__):
        built = native.native_minder(folder)
    assert built is not None
    assert built.parent == folder
    assert built.name.startswith("pysched-minder-")
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert stat.S_IMODE(built.stat().st_mode) == 0o700
    assert "built the native minder" in caplog.text
    assert [p.name for p in folder.iterdir()] == [built.name]  # no temp file left behind
    made = built.stat().st_mtime_ns
    caplog.clear()
    with caplog.at_level(logging.INFO, logger=native.__name__):
        assert native.native_minder(folder) == built
    assert built.stat().st_mtime_ns == made
    assert not caplog.text


@pytest.mark.parametrize("damage", ["not-a-program", "writable-by-others", "folder-open"])
def test_a_build_that_cannot_be_trusted_or_run_is_made_again(tmp_path, damage):
    folder = tmp_path / "cache"
    built = native.native_minder(folder)
    assert built is not None
    if damage == "not-a-program":
        built.write_bytes(b"#!/bin/sh\necho hacked\n")
        expected_mode = 0o700
    elif damage == "writable-by-others":
        built.chmod(0o722)
        expected_mode = 0o700
    else:
        folder.chmod(0o777)
        assert native.native_minder(folder) is None  # an open folder: refused, not rebuilt
        return
    assert native.native_minder(folder) == built
    assert stat.S_IMODE(built.stat().st_mode) == expected_mode
    assert native._runs(built) is None


def test_an_open_folder_is_refused_with_a_warning(tmp_path, caplog):
    folder = tmp_path / "shared"
    folder.mkdir()
    folder.chmod(0o777)
    with caplog.at_level(logging.WARNING, logger=native.__name__):
        assert native.native_minder(folder) is None
    assert "is not this user's alone" in caplog.text
    assert "PYSCHED_MINDER_CACHE" in caplog.text


def test_older_builds_are_removed(tmp_path):
    folder = tmp_path / "cache"
    folder.mkdir(mode=0o700)
    old = folder / "pysched-minder-0000000000000000"
    old.write_bytes(b"old")
    other = folder / "keep-me"
    other.write_bytes(b"")
    built = native.native_minder(folder)
    assert built is not None
    assert sorted(p.name for p in folder.iterdir()) == sorted([built.name, "keep-me"])


def test_without_a_compiler_minders_are_forked_and_it_says_so(tmp_path, monkeypatch, caplog):
    monkeypatch.delenv("CC", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with caplog.at_level(logging.INFO, logger=native.__name__):
        assert native.native_minder(tmp_path / "cache") is None
    assert "no C compiler" in caplog.text
    assert not (tmp_path / "cache").exists()


def test_a_compiler_that_fails_is_reported_with_its_words(tmp_path, monkeypatch, caplog):
    fake = tmp_path / "fake-cc"
    fake.write_text("#!/bin/sh\necho 'minder.c:1: error: no way' >&2\nexit 4\n")
    fake.chmod(0o755)
    monkeypatch.setenv("CC", f"{fake} -Wall")
    with caplog.at_level(logging.WARNING, logger=native.__name__):
        assert native.native_minder(tmp_path / "cache") is None
    assert "exited with 4: minder.c:1: error: no way" in caplog.text
    assert list((tmp_path / "cache").iterdir()) == []


def test_a_build_that_does_not_run_here_is_not_kept(tmp_path, monkeypatch, caplog):
    fake = tmp_path / "fake-cc"  # "builds" a program that fails the check
    fake.write_text(
        '#!/bin/sh\nwhile [ "$1" != -o ]; do shift; done\nprintf "#!/bin/sh\\nexit 1\\n" > "$2"\n'
    )
    fake.chmod(0o755)
    monkeypatch.setenv("CC", str(fake))
    with caplog.at_level(logging.WARNING, logger=native.__name__):
        assert native.native_minder(tmp_path / "cache") is None
    assert "does not run here" in caplog.text
    assert list((tmp_path / "cache").iterdir()) == []


def test_the_cache_folder_comes_from_the_environment_then_the_caller_then_the_user(
    tmp_path, monkeypatch
):
    monkeypatch.setenv("PYSCHED_MINDER_CACHE", str(tmp_path / "env"))
    assert native.cache_dir_for(tmp_path / "given") == tmp_path / "env"
    monkeypatch.delenv("PYSCHED_MINDER_CACHE")
    assert native.cache_dir_for(tmp_path / "given") == tmp_path / "given"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert native.cache_dir_for() == tmp_path / "xdg" / "pysched"


async def test_the_launcher_uses_it_unless_told_not_to(tmp_path, monkeypatch):
    launcher = LocalLauncher(tmp_path / "logs")
    await launcher.prepare()
    assert launcher.minder_host is not None
    assert launcher.minder_host.native is not None
    launcher.close()
    monkeypatch.setenv("PYSCHED_MINDER_NATIVE", "0")
    forking = LocalLauncher(tmp_path / "logs")
    await forking.prepare()
    assert forking.minder_host is not None
    assert forking.minder_host.native is None
    assert forking.minder_host.native_cache is None
    forking.close()


async def test_a_minder_program_removed_meanwhile_is_replaced_by_a_forked_minder(
    tmp_path, monkeypatch
):
    """The host falls back to forking when the program it was given cannot be started."""
    monkeypatch.delenv("PYSCHED_MINDER_CACHE")  # a build of its own, to remove
    folder = tmp_path / "cache"
    launcher = LocalLauncher(tmp_path / "logs", cache_dir=folder)
    await launcher.prepare()
    assert launcher.minder_host is not None
    program = launcher.minder_host.native
    assert program is not None and program.parent == folder
    program.unlink()
    job = job_for(tmp_path, ["/bin/sh", "-c", "exit 6"])
    marker = Path(str(job["started"]))
    pid, _ = await launcher.minder_host.spawn(job, marker)
    with trio.fail_after(10):
        while not Path(str(job["note"])).exists():
            await trio.sleep(0.01)
    assert read(job, "note")["exit_code"] == 6
    assert read(job, "note")["minder_pid"] == pid
    launcher.close()
    assert os.path.exists(marker)
