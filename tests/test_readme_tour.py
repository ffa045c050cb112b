"""The README's tour, as written: ``pysched serve examples/etl.yaml`` in one terminal, the CLI
with no options at all in another (it finds the server and its token by itself)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def pysched(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYSCHED_")}
    return subprocess.run(
        [sys.executable, "-m", "pysched", *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
        env=env,
    )


def wait_for(check, seconds: float = 30):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError("timed out")


def test_the_readme_tour(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    readme = (ROOT / "README.md").read_text()
    assert "uv run pysched serve examples/etl.yaml" in readme
    state_home = Path(os.environ["XDG_STATE_HOME"])
    server_log = (tmp_path / "serve.log").open("w")
    server = subprocess.Popen(
        [sys.executable, "-m", "pysched", "serve", "examples/etl.yaml", "--listen", "127.0.0.1:0"],
        cwd=tmp_path,
        stderr=server_log,
        text=True,
    )
    try:
        note = state_home / "pysched" / "current.json"
        wait_for(note.exists)
        assert oct(note.stat().st_mode & 0o777) == "0o600"
        for command in (
            "trigger extract --run-date 2026-10-16",
            "trigger fetch-rates --run-date 2026-10-16",
        ):
            assert command in readme
            done = pysched(*command.split(), cwd=tmp_path)
            assert done.returncode == 0, done.stderr
        assert "extract.2026-10-16.1" in pysched("status", cwd=tmp_path).stdout

        def settled() -> list[dict] | None:
            answer = pysched("status", "--date", "2026-10-16", "--json", cwd=tmp_path)
            runs = json.loads(answer.stdout)["runs"]
            states = {r["run_id"]: r["state"] for r in runs}
            done = states.get("load.2026-10-16.1") == "succeeded"
            return runs if done else None

        runs = wait_for(settled, 60)  # fetch-rates retries after about 10 s
        states = {r["run_id"]: r["state"] for r in runs}
        assert states["fetch-rates.2026-10-16.1"] == "succeeded"
        assert states["cleanup.2026-10-16.1"] == "skipped"

        status = pysched("status", "--date", "2026-10-16", cwd=tmp_path)
        assert "status --date 2026-10-16" in readme
        assert status.returncode == 0
        assert "fetch-rates.2026-10-16.1" in status.stdout and "succeeded" in status.stdout

        log = pysched("log", "fetch-rates.2026-10-16.1", "--attempt", "1", "--stderr", cwd=tmp_path)
        assert "log fetch-rates.2026-10-16.1 --attempt 1 --stderr" in readme
        assert log.returncode == 0
        assert log.stdout == "rates service timed out fetching rates for 2026-10-16\n"
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)
        server_log.close()
    err = (tmp_path / "serve.log").read_text()
    assert server.returncode == 0, err
    assert "listening on http://127.0.0.1:" in err
    assert not (state_home / "pysched" / "current.json").exists()
    # with no server there, the CLI says which URL it tried and exits 3
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}"
    gone = pysched("--url", url, "status", cwd=tmp_path)
    assert gone.returncode == 3
    assert url in gone.stderr
