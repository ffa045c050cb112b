"""Building the native minder: once, checked, private, and never in the way when it cannot be."""

from __future__ import annotations

import errno
import json
import logging
import os
import platform
import re
import stat
import time
from pathlib import Path

import pytest
import trio

from pysched.launch import host
from pysched.launch import native_minder as native
from pysched.launch.local import LocalLauncher
from tests.launch.test_minder import job_for, read, require_native_minder

pytestmark = pytest.mark.usefixtures("compiler")


@pytest.fixture
def compiler() -> None:
    require_native_minder()


def test_it_is_built_once_into_a_private_folder_and_then_reused(tmp_path, caplog):
    folder = tmp_path / "cache" / "deep"
    with caplog.at_level(logging.INFO, logger=native.__name__):
        built = native.native_minder(folder)
    assert built is not None
    assert built.path.parent == folder
    assert built.path.name.startswith("pysched-minder-")
    assert (built.device, built.inode) == (built.path.stat().st_dev, built.path.stat().st_ino)
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert stat.S_IMODE(built.path.stat().st_mode) == 0o700
    assert "built the native minder" in caplog.text
    assert [p.name for p in folder.iterdir()] == [built.path.name]  # no temp file left behind
    caplog.clear()
    with caplog.at_level(logging.INFO, logger=native.__name__):
        assert native.native_minder(folder) == built  # the same file, not built again
    assert not caplog.text


@pytest.mark.parametrize("damage", ["not-a-program", "writable-by-others", "a-link"])
def test_a_build_that_cannot_be_trusted_or_run_is_made_again(tmp_path, damage):
    folder = tmp_path / "cache"
    built = native.native_minder(folder)
    assert built is not None
    if damage == "not-a-program":
        built.path.write_bytes(b"#!/bin/sh\necho pysched-minder 1\n")  # a script, not ours
    elif damage == "writable-by-others":
        built.path.chmod(0o722)
    else:  # someone else's program, linked in its place
        elsewhere = tmp_path / "elsewhere"
        built.path.rename(elsewhere)
        built.path.symlink_to(elsewhere)
    again = native.native_minder(folder)
    assert again is not None
    assert again.path == built.path and not again.path.is_symlink()
    assert stat.S_IMODE(again.path.stat().st_mode) == 0o700
    assert again.inode == again.path.stat().st_ino


def test_an_open_folder_is_refused_with_a_warning(tmp_path, caplog):
    folder = tmp_path / "shared"
    folder.mkdir()
    folder.chmod(0o777)
    with caplog.at_level(logging.WARNING, logger=native.__name__):
        assert native.native_minder(folder) is None
    assert "is not this user's alone" in caplog.text
    assert "PYSCHED_MINDER_CACHE" in caplog.text


def test_a_linked_cache_folder_is_used_as_the_folder_it_leads_to(tmp_path):
    real = tmp_path / "real"
    link = tmp_path / "link"
    link.symlink_to(real, target_is_directory=True)
    built = native.native_minder(link)
    assert built is not None
    assert built.path.parent == real  # what the host is given: the link is not read again


def test_the_host_runs_only_the_file_that_was_checked(tmp_path):
    built = native.native_minder(tmp_path / "cache")
    assert built is not None
    fd = host.open_native(str(built.path), built.device, built.inode)
    assert fd is not None
    os.close(fd)
    # replaced by another file of the same name (another inode): not used
    copy = tmp_path / "copy"
    copy.write_bytes(built.path.read_bytes())
    copy.chmod(0o700)
    copy.replace(built.path)
    assert host.open_native(str(built.path), built.device, built.inode) is None
    fresh = built.path.stat()
    assert host.open_native(str(built.path), fresh.st_dev, fresh.st_ino) is not None
    built.path.chmod(0o722)  # writable by others: not used
    assert host.open_native(str(built.path), fresh.st_dev, fresh.st_ino) is None


def test_builds_of_other_sources_are_removed_once_unused_for_a_week(tmp_path):
    folder = tmp_path / "cache"
    folder.mkdir(mode=0o700)
    old = folder / "pysched-minder-0000000000000000"
    old.write_bytes(b"old")
    week_ago = time.time() - 8 * 86400
    os.utime(old, (week_ago, week_ago))
    recent = folder / "pysched-minder-1111111111111111"  # another version, in use lately
    recent.write_bytes(b"recent")
    other = folder / "keep-me"
    other.write_bytes(b"")
    os.utime(other, (week_ago, week_ago))
    left = folder / ".pysched-minder-2222222222222222.abc.tmp"  # from a killed build
    left.write_bytes(b"half")
    os.utime(left, (week_ago, week_ago))
    under_way = folder / ".pysched-minder-3333333333333333.def.tmp"  # another build, now
    under_way.write_bytes(b"")
    headers = folder / ".pysched-minder-4444444444444444.ghi"  # a killed build's header folder
    headers.mkdir()
    (headers / "pysched_errors.h").write_text("")
    os.utime(headers, (week_ago, week_ago))
    built = native.native_minder(folder)
    assert built is not None
    names = sorted(p.name for p in folder.iterdir())
    assert names == sorted([built.path.name, recent.name, "keep-me", under_way.name])


def test_without_a_compiler_minders_are_forked_and_it_says_so(tmp_path, monkeypatch, caplog):
    monkeypatch.delenv("CC", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with caplog.at_level(logging.INFO, logger=native.__name__):
        assert native.native_minder(tmp_path / "cache") is None
    assert "no C compiler" in caplog.text
    assert not (tmp_path / "cache").exists()


def test_a_compiler_that_fails_is_reported_once_with_its_words(tmp_path, monkeypatch, caplog):
    fake = tmp_path / "fake-cc"
    fake.write_text("#!/bin/sh\necho 'minder.c:1: error: no way' >&2\nexit 4\n")
    fake.chmod(0o755)
    monkeypatch.setenv("CC", f"{fake} -Wall")
    with caplog.at_level(logging.WARNING, logger=native.__name__):
        assert native.native_minder(tmp_path / "cache") is None
    assert "exited with 4: minder.c:1: error: no way" in caplog.text
    assert list((tmp_path / "cache").iterdir()) == []
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger=native.__name__):
        assert native.native_minder(tmp_path / "cache") is None  # a host restarting, say
    assert not caplog.text  # not built, nor logged, again by this process


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
    monkeypatch.setenv("XDG_CACHE_HOME", "relative")  # the XDG spec: ignored
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert native.cache_dir_for() == tmp_path / "home" / ".cache" / "pysched"


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


def _minder_program(pid: int) -> str:
    return os.readlink(f"/proc/{pid}/exe")


def gated(tmp_path: Path, code: int = 6) -> tuple[dict[str, object], Path]:
    """A job whose command waits for its gate file to appear, then exits with ``code``: its
    minder lives until the test has looked at it."""
    gate = tmp_path / "gate"
    script = f'while [ ! -e "$GATE" ]; do sleep 0.01; done; exit {code}'
    job = job_for(tmp_path, ["/bin/sh", "-c", script])
    job["env"] = {**job["env"], "GATE": str(gate)}  # type: ignore[dict-item]
    return job, gate


async def _run(launcher: LocalLauncher, job: dict[str, object], gate: Path) -> tuple[int, str]:
    """Have the launcher's host make a minder for ``job``; its pid and program (read while the
    command waits for ``gate``), once the note says the command exited 6."""
    assert launcher.minder_host is not None
    pid, _ = await launcher.minder_host.spawn(job, Path(str(job["started"])))
    program = _minder_program(pid)
    gate.touch()
    with trio.fail_after(10):
        while not Path(str(job["note"])).exists():
            await trio.sleep(0.01)
    assert read(job, "note")["exit_code"] == 6
    assert read(job, "note")["minder_pid"] == pid
    return pid, program


async def test_the_host_keeps_its_minder_open_when_the_file_goes(tmp_path, monkeypatch):
    monkeypatch.delenv("PYSCHED_MINDER_CACHE")  # a build of its own, to remove
    launcher = LocalLauncher(tmp_path / "logs", cache_dir=tmp_path / "cache")
    await launcher.prepare()
    assert launcher.minder_host is not None
    built = launcher.minder_host.native
    assert built is not None
    _, program = await _run(launcher, *gated(tmp_path / "a"))
    assert program == str(built.path)
    built.path.unlink()
    _, program = await _run(launcher, *gated(tmp_path / "b"))
    assert program == f"{built.path} (deleted)"  # still the native minder, from the host's fd
    launcher.close()


async def test_a_job_the_native_minder_is_not_given_still_gets_its_note(tmp_path):
    """The host forks a Python minder for it (``native_job`` says None): a note, not a
    failed start."""
    launcher = LocalLauncher(tmp_path / "logs")
    await launcher.prepare()
    assert launcher.minder_host is not None
    job = job_for(tmp_path, ["/bin/true"])
    job["env"] = {**job["env"], "ODD": "\udfff"}  # type: ignore[dict-item]
    assert host.native_job(job) is None
    await launcher.minder_host.spawn(job, Path(str(job["started"])))
    with trio.fail_after(10):
        while not Path(str(job["note"])).exists():
            await trio.sleep(0.01)
    assert str(read(job, "note")["error"]).startswith("cannot start '/bin/true'")
    launcher.close()


async def test_a_host_that_finds_another_file_forks_and_the_launcher_says_so(
    tmp_path, monkeypatch, caplog
):
    monkeypatch.delenv("PYSCHED_MINDER_CACHE")
    built = native.native_minder(tmp_path / "cache")
    assert built is not None
    swapped = native.NativeMinder(built.path, built.device, built.inode + 1)
    monkeypatch.setattr("pysched.launch.host_link.native_minder", lambda folder: swapped)
    launcher = LocalLauncher(tmp_path / "logs", cache_dir=tmp_path / "cache")
    with caplog.at_level(logging.WARNING):
        await launcher.prepare()
    assert launcher.minder_host is not None
    assert launcher.minder_host.native is None
    assert "could not open the native minder" in caplog.text
    _, program = await _run(launcher, *gated(tmp_path / "a"))
    assert "python" in os.path.basename(program)
    launcher.close()


@pytest.mark.parametrize(
    ("mode", "sticky_child_owner", "safe"),
    [
        (0o755, None, True),
        (0o775, None, False),  # a group may rename our folder away
        (0o757, None, False),
        (0o1777, "ours", True),  # /tmp: others may not rename what is ours
    ],
)
def test_a_cache_folder_under_a_folder_others_may_change_is_refused(
    tmp_path, caplog, mode, sticky_child_owner, safe
):
    above = tmp_path / "above"
    above.mkdir()
    above.chmod(mode)
    try:
        with caplog.at_level(logging.WARNING, logger=native.__name__):
            built = native.native_minder(above / "cache")
    finally:
        above.chmod(0o755)
    assert (built is not None) is safe
    if not safe:
        assert "is not safe for the native minder" in caplog.text
        assert f"others may write to {above}" in caplog.text


def test_a_read_only_cache_with_a_build_still_serves(tmp_path, monkeypatch):
    built = native.native_minder(tmp_path / "cache")
    assert built is not None

    def read_only(*args: object, **kwargs: object) -> None:
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(native.os, "utime", read_only)
    assert native.native_minder(tmp_path / "cache") == built


def test_a_cache_where_no_file_can_be_made_means_forked_minders(tmp_path, monkeypatch, caplog):
    def no_room(*args: object, **kwargs: object) -> tuple[int, str]:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(native.tempfile, "mkstemp", no_room)
    with caplog.at_level(logging.WARNING, logger=native.__name__):
        assert native.native_minder(tmp_path / "cache") is None
    assert "No space left on device" in caplog.text


def test_a_file_system_without_hard_links_takes_the_build_by_rename(tmp_path, monkeypatch):
    def no_links(source: object, target: object) -> None:
        raise PermissionError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(native.os, "link", no_links)
    built = native.native_minder(tmp_path / "cache")
    assert built is not None
    assert built.inode == built.path.stat().st_ino


def test_missing_folders_above_the_cache_are_made_private_whatever_the_umask(tmp_path):
    previous = os.umask(0o002)  # a per-user group: new folders group-writable by default
    try:
        built = native.native_minder(tmp_path / "a" / "b" / "cache")
    finally:
        os.umask(previous)
    assert built is not None
    for folder in (tmp_path / "a", tmp_path / "a" / "b", tmp_path / "a" / "b" / "cache"):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700


def test_a_cc_that_is_not_a_command_is_not_used(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("CC", 'gcc "')
    with caplog.at_level(logging.WARNING, logger=native.__name__):
        assert native.find_compiler() is None
    assert "$CC cannot be read as a command" in caplog.text


def test_anything_unforeseen_means_forked_minders_not_a_failed_start(tmp_path, monkeypatch, caplog):
    def broken(folder: Path, builds: object) -> None:
        raise RuntimeError("something unforeseen")

    monkeypatch.setattr(native, "_found_or_built", broken)
    with caplog.at_level(logging.WARNING, logger=native.__name__):
        assert native.native_minder(tmp_path / "cache") is None
    assert "something unforeseen" in caplog.text


def test_a_job_whose_path_has_more_entries_than_the_native_minder_reads_is_forked(tmp_path):
    job = job_for(tmp_path, ["prog"])
    job["env"] = {"PATH": ":" * host.NATIVE_MAX_ITEMS}
    assert host.native_job(job) is None


def test_where_the_c_library_cannot_be_linked_statically_the_build_is_dynamic(
    tmp_path, monkeypatch
):
    compiler = native.find_compiler()
    assert compiler is not None
    fake = tmp_path / "no-static-cc"  # refuses -static, as a C library without libc.a does
    fake.write_text(
        "#!/bin/sh\n"
        'for arg in "$@"; do [ "$arg" = -static ] && { echo "cannot find -lc" >&2; exit 1; }; '
        "done\n"
        f'exec {" ".join(compiler)} "$@"\n'
    )
    fake.chmod(0o755)
    monkeypatch.setenv("CC", str(fake))
    built = native.native_minder(tmp_path / "cache")
    assert built is not None
    assert b"ld-linux" in built.path.read_bytes() or b"ld-musl" in built.path.read_bytes()


@pytest.mark.skipif(platform.machine() != "x86_64", reason="freestanding on x86-64 only")
def test_where_it_can_the_minder_is_built_without_the_c_library(tmp_path):
    built = native.native_minder(tmp_path / "cache")
    assert built is not None
    data = built.path.read_bytes()
    assert b"glibc" not in data.lower() and b"ld-linux" not in data
    assert len(data) < 100_000  # a static C library alone is several times that


def test_where_the_compiler_cannot_build_it_freestanding_it_takes_the_c_library(
    tmp_path, monkeypatch, caplog
):
    compiler = native.find_compiler()
    assert compiler is not None
    fake = tmp_path / "hosted-only-cc"  # as on a machine the freestanding build is not for
    fake.write_text(
        "#!/bin/sh\n"
        'for arg in "$@"; do [ "$arg" = -ffreestanding ] && { echo "#error not here" >&2; '
        "exit 1; }; done\n"
        f'exec {" ".join(compiler)} "$@"\n'
    )
    fake.chmod(0o755)
    monkeypatch.setenv("CC", str(fake))
    with caplog.at_level(logging.INFO, logger=native.__name__):
        built = native.native_minder(tmp_path / "cache")
    assert built is not None
    assert b"glibc" in built.path.read_bytes().lower() or b"musl" in built.path.read_bytes()
    assert "with the C library" in caplog.text


def test_the_error_texts_are_python_s_escaped_for_a_note(monkeypatch):
    """Freestanding, the minder's error texts come from this table, put into notes as they
    are: each must read back, as C and then as JSON, as Python's ``os.strerror`` text."""
    monkeypatch.setattr(os, "strerror", lambda n: f'Fehler "{n}" \\ Größe')
    header = native.error_texts_header()
    entries = re.findall(r'"((?:[^"\\]|\\.)*)"', header)
    assert len(entries) == 256 and header.isascii()
    for number, entry in enumerate(entries):
        c_text = entry.encode().decode("unicode_escape")  # as the C compiler reads it
        assert json.loads(f'"{c_text}"') == f'Fehler "{number}" \\ Größe'
