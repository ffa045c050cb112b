"""No input gives a traceback: mutated and generated YAML give a Config or a ConfigError."""

from __future__ import annotations

import io
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML

from pysched.config import Config, ConfigError, parse_config
from pysched.config.jobs import JOB_KEYS
from pysched.config.loader import CALENDAR_KEYS, SCHEDULER_KEYS, TOP_KEYS

EXAMPLE = (Path(__file__).parents[2] / "examples" / "etl.yaml").read_text()
FILE = Path("fuzz.yaml")


def check(text: str) -> None:
    try:
        result = parse_config(text, FILE, {})
    except ConfigError as error:
        assert error.problems, "a ConfigError must carry at least one problem"
        for problem in error.problems:
            assert problem.file == "fuzz.yaml", problem
            assert problem.line >= 0 and problem.col >= 0
            assert problem.message
    else:
        assert isinstance(result, Config)


@st.composite
def mutated(draw: st.DrawFn) -> str:
    lines = EXAMPLE.splitlines(keepends=True)
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["delete", "duplicate", "swap", "insert", "replace", "cut"]))
        i = draw(st.integers(0, len(lines) - 1))
        if kind == "delete" and len(lines) > 1:
            del lines[i]
        elif kind == "duplicate":
            lines.insert(i, lines[i])
        elif kind == "swap":
            j = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
        elif kind == "insert":
            lines.insert(i, draw(st.text(max_size=30)) + "\n")
        elif kind == "replace":
            line = lines[i]
            if line.strip():
                start = draw(st.integers(0, max(len(line) - 1, 0)))
                end = draw(st.integers(start, len(line)))
                piece = draw(
                    st.sampled_from(
                        [
                            "",
                            "{",
                            "}",
                            "[",
                            ":",
                            "- ",
                            "*",
                            "&a",
                            "<<: *a",
                            "0",
                            "-1",
                            "'",
                            '"',
                            "\t",
                            "{run_date",
                            "${X}",
                            "2026-13-45",
                            "MON#9",
                            "null",
                            "true",
                        ]
                    )
                )
                lines[i] = line[:start] + piece + line[end:]
        else:
            lines = lines[: i + 1]
    return "".join(lines)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_mutated_example(text: str) -> None:
    check(text)


KEYS = sorted(set(TOP_KEYS + SCHEDULER_KEYS + CALENDAR_KEYS + JOB_KEYS + ("job", "on", "date")))
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 200),
    st.floats(allow_nan=True),
    st.sampled_from(
        [
            "@daily",
            "0 2 * * *",
            "x",
            "uk",
            "GB",
            "1h",
            "previous",
            "mon-fri",
            "Europe/London",
            "echo {run_date}",
            "2026-12-25",
            "-2",
            "*/0 * * * *",
        ]
    ),
    st.text(max_size=8),
)
values = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=5), children, max_size=5),
    ),
    max_leaves=25,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.dictionaries(
        st.sampled_from(list(TOP_KEYS)),
        st.one_of(values, st.dictionaries(st.sampled_from(["a", "b", "c"]), values, max_size=3)),
        max_size=5,
    )
)
def test_generated_structures(document: dict[str, object]) -> None:
    stream = io.StringIO()
    YAML(typ="safe", pure=True).dump(document, stream)
    check(stream.getvalue())


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_arbitrary_text(text: str) -> None:
    check(text)


def test_billion_laughs_is_refused_quickly() -> None:
    lines = ['a0: &a0 ["x","x","x","x","x","x","x","x","x","x"]']
    for i in range(1, 9):
        refs = ",".join([f"*a{i - 1}"] * 10)
        lines.append(f"a{i}: &a{i} [{refs}]")
    lines.append("jobs: *a8")
    check("\n".join(lines) + "\n")
