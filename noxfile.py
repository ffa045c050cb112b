"""Developer sessions: ``nox -s tests lint typecheck docs bench``.

Each session uses the project's locked environment through ``uv run``, so nox adds no second
copy of the dependencies.
"""

from __future__ import annotations

from pathlib import Path

import nox

nox.options.sessions = ["tests", "lint", "typecheck", "docs"]
nox.options.default_venv_backend = "none"


@nox.session
def tests(session: nox.Session) -> None:
    session.run("uv", "run", "pytest", *session.posargs, external=True)


@nox.session
def lint(session: nox.Session) -> None:
    session.run("uv", "run", "ruff", "check", ".", external=True)
    session.run("uv", "run", "ruff", "format", "--check", ".", external=True)


@nox.session
def typecheck(session: nox.Session) -> None:
    session.run("uv", "run", "pyright", external=True)


@nox.session
def docs(session: nox.Session) -> None:
    session.run("uv", "run", "mkdocs", "build", "--strict", external=True)


FIRST_BENCHES = ("bench_machine", "bench_concurrency", "bench_latency", "bench_chain")
"""Run before the others: the machine's own steadiness first, to read the rest against; then
the benches that create files by the hundred while timed, as on ext4 without a journal each new
file costs more for about a minute after many were deleted (the other benches delete thousands
of theirs when they end; see docs/benchmarks.md)."""


def _bench_order(script: Path) -> tuple[int, str]:
    first = script.stem in FIRST_BENCHES
    return (FIRST_BENCHES.index(script.stem) if first else len(FIRST_BENCHES), script.stem)


@nox.session
def bench(session: nox.Session) -> None:
    """Run every benchmark under tests/bench; each prints its figures, the last line as JSON."""
    scripts = sorted(Path("tests/bench").glob("bench_*.py"), key=_bench_order)
    chosen = [s for s in scripts if not session.posargs or s.stem in session.posargs]
    for script in chosen:
        session.log(f"== {script.stem}")
        session.run("uv", "run", "python", str(script), external=True)
