"""Ctrl-C ends a CLI command with exit 130 and no traceback, whenever it comes."""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Sequence
from types import ModuleType

import pytest

import pysched.entry


class _InterruptedImport(importlib.abc.MetaPathFinder):
    """Raises KeyboardInterrupt when the CLI's app module is imported: Ctrl-C while loading."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname == "pysched.cli.app":
            raise KeyboardInterrupt
        return None


def test_ctrl_c_while_the_cli_loads_exits_130_without_a_traceback(monkeypatch, capsys):
    for name in [name for name in sys.modules if name.startswith("pysched.cli")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setattr(sys, "meta_path", [_InterruptedImport(), *sys.meta_path])
    try:
        with pytest.raises(SystemExit) as exited:
            pysched.entry.main()
    except KeyboardInterrupt:  # escaped: it would end the whole test session
        pytest.fail("Ctrl-C while loading escaped the entry point")
    assert exited.value.code == 130
    assert capsys.readouterr().err == ""


def test_ctrl_c_while_a_command_waits_for_the_server_exits_130_without_a_traceback(tmp_path):
    """A real ``pysched status`` against a server that accepts and never answers."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        server.settimeout(30)
        port = server.getsockname()[1]
        env = {**os.environ, "HOME": str(tmp_path), "XDG_STATE_HOME": str(tmp_path)}
        env = {k: v for k, v in env.items() if not k.startswith("PYSCHED_")}
        cli = subprocess.Popen(
            [sys.executable, "-m", "pysched", "--url", f"http://127.0.0.1:{port}", "status"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        try:
            connection, _ = server.accept()  # the command is running: it has connected
            with connection:
                cli.send_signal(signal.SIGINT)
                out, err = cli.communicate(timeout=30)
        finally:
            cli.kill()
            cli.wait()
    assert (cli.returncode, out, err) == (130, b"", b"")
