"""What the service loads: nothing of the test tools, even where they are installed.

``trio.testing`` imports pytest when pytest is installed (as it is in the development
environment ``uv run`` uses), which made ``pysched serve`` load all of pytest: about 7 MB more
resident memory and a longer start, and a larger heap for the cyclic collector to walk. The
engine and the fake clock import it only inside the test helpers that need it.
"""

from __future__ import annotations

import subprocess
import sys

import pytest


def loaded_after(statement: str) -> set[str]:
    code = f"import sys\n{statement}\nprint('\\n'.join(sorted(sys.modules)))"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    return set(result.stdout.split())


def test_pytest_is_installed_here_so_the_check_below_means_something() -> None:
    assert "_pytest" in loaded_after("import trio.testing")


@pytest.mark.parametrize("module", ["pysched.service", "pysched.cli.app", "pysched.testing"])
def test_the_service_and_the_cli_do_not_load_pytest(module: str) -> None:
    loaded = loaded_after(f"import {module}")
    assert module in loaded
    assert not {"pytest", "_pytest", "trio.testing"} & loaded


def test_the_cli_loads_neither_trio_nor_the_yaml_parser_until_a_command_needs_them() -> None:
    """Every command pays for what ``pysched.cli.app`` imports: the commands that talk to a
    server need httpx and typer, not the engine, the store, trio or the YAML parser (together
    about half of the CLI's start, once)."""
    loaded = loaded_after("import pysched.cli.app")
    assert not {"trio", "ruamel.yaml", "pysched.store", "pysched.engine.core"} & loaded
    assert {"pysched.config.loader", "ruamel.yaml"} <= loaded_after(
        "import pysched.cli.app\nfrom pysched.config import load_config"
    )
